//===- NNBase.td - dsnn dialect definition -----------------*- tablegen -*-===//
#ifndef DSNN_BASE
#define DSNN_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def NN_Dialect : Dialect {
  let name = "dsnn";
  let cppNamespace = "::mlir::ds::nn";
  let summary = "The model graph: differentiable tensor ops, layers and parameters";
  let description = [{
    `dsnn` is the level a model arrives at after import (the *model contract*):
    one `func.func @forward` whose arguments are the parameters (each marked
    with a `#dsnn.param` attribute) followed by the batch, and whose single
    result is the scalar loss. Ops are value-semantic and work on ranked
    tensors; blocks of the model are `dsnn.layer` regions carrying a name and
    a type string, which is what pipeline partitioning (`type:REGEX`) and
    activation checkpointing act on.

    Weights use the `nn.Linear` layout `[out, in]`. Binary elementwise ops
    broadcast like NumPy.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

class NN_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<NN_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // DSNN_BASE
