//===- DistTypes.td - dsdist types -------------------------*- tablegen -*-===//
#ifndef DSDIST_TYPES
#define DSDIST_TYPES

include "dsdist/DistBase.td"

def Dist_HandleType : Dist_Type<"Handle", "handle"> {
  let summary = "An in-flight asynchronous communication";
  let description = [{
    Returned by the `*_start` ops and consumed by `dsdist.wait`. The
    parameter is the tensor the communication delivers; a send delivers
    nothing and its handle has no parameter.

      !dsdist.handle<tensor<128x256xf32>>   // all_gather_start, recv_start, ...
      !dsdist.handle                        // send_start
  }];
  let parameters = (ins
    OptionalParameter<"::mlir::RankedTensorType", "delivered tensor">:$payload);
  let assemblyFormat = "(`<` $payload^ `>`)?";
  let builders = [
    TypeBuilder<(ins), [{ return $_get($_ctxt, ::mlir::RankedTensorType()); }]>,
  ];
}

// Constraints on handles. Their C++ type is plain Type so that op formats
// print the full `!dsdist.handle<...>` rather than the dialect-stripped form.
def Dist_AnyHandle : Type<
    CPred<"::llvm::isa<::mlir::ds::dist::HandleType>($_self)">,
    "handle", "::mlir::Type">;
def Dist_TensorHandle : Type<
    CPred<"::llvm::isa<::mlir::ds::dist::HandleType>($_self) && "
          "::llvm::cast<::mlir::ds::dist::HandleType>($_self).getPayload()">,
    "handle delivering a tensor", "::mlir::Type">;
def Dist_SendHandle : Type<
    CPred<"::llvm::isa<::mlir::ds::dist::HandleType>($_self) && "
          "!::llvm::cast<::mlir::ds::dist::HandleType>($_self).getPayload()">,
    "payload-less handle", "::mlir::Type">,
  BuildableType<"::mlir::ds::dist::HandleType::get($_builder.getContext())">;

#endif // DSDIST_TYPES
