//===- NNAttrs.td - dsnn attributes and enums --------------*- tablegen -*-===//
#ifndef DSNN_ATTRS
#define DSNN_ATTRS

include "dsnn/NNBase.td"

def NN_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
  I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"ones", 1>,
  I32EnumAttrCase<"normal", 2>, I32EnumAttrCase<"uniform", 3>
]> {
  let cppNamespace = "::mlir::ds::nn";
  let genSpecializedAttr = 0;
}

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU form: exact (erf) or the tanh approximation", [
  I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>
]> {
  let cppNamespace = "::mlir::ds::nn";
}

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "elementwise comparison", [
  I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>
]> {
  let cppNamespace = "::mlir::ds::nn";
}

// A double stored as APFloat (hashable), written as a plain float literal.
class NN_F64Parameter<string desc, string default>
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double v;
    if (::mlir::failed($_parser.parseFloat(v)))
      return ::mlir::failure();
    return ::llvm::APFloat(v);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
  let defaultValue = "::llvm::APFloat(" # default # ")";
}

def NN_ParamAttr : NN_Attr<"Param", "param"> {
  let summary = "Marks a function argument as a trainable parameter";
  let description = [{
    Attached to `@forward` arguments as `dsnn.param`. `name` is the qualified
    parameter name (e.g. `h.0.attn.c_attn.weight`) used by checkpoints and
    by pipeline partitioning; `init` with `std` (normal: standard deviation;
    uniform: half-width) says how to initialize it; parameters sharing a
    `tied` group are one tensor (e.g. token embedding and LM head) whose
    gradients are summed; `expert` is the expert index of a MoE parameter.

      %wte: tensor<50x16xf32> {dsnn.param = #dsnn.param<name = "wte.weight",
                                init = normal, std = 0.02, tied = "wte">}
  }];
  let parameters = (ins
    StringRefParameter<"qualified parameter name">:$name,
    EnumParameter<NN_InitKind>:$init,
    NN_F64Parameter<"init scale", "0.0">:$std,
    OptionalParameter<"::mlir::StringAttr", "tied group">:$tied,
    OptionalParameter<"std::optional<int64_t>", "expert index">:$expert
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // DSNN_ATTRS
