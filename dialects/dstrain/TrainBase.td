//===- TrainBase.td - dstrain dialect definition -----------*- tablegen -*-===//
#ifndef DSTRAIN_BASE
#define DSTRAIN_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Train_Dialect : Dialect {
  let name = "dstrain";
  let cppNamespace = "::mlir::ds::train";
  let summary = "Training: optimizer updates, loss scaling, clipping, LR, checkpoints";
  let description = [{
    `dstrain` makes the parts of a training step that DeepSpeed's engine runs
    behind `engine.step()` explicit in the *step contract*: fused optimizer
    updates, the dynamic loss scaler, gradient clipping, the learning-rate
    schedule and checkpoint I/O. Ops are value-semantic: they take the state
    as tensors and return the new state, so the step is a pure function of
    its inputs until lowering assigns buffers.

    Optimizer ops work over flat (rank-1, possibly ZeRO-sharded) buffers or
    any tensors of equal shape: parameters and optimizer state are f32
    master copies, gradients may be f32, bf16 or f16.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

class Train_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Train_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // DSTRAIN_BASE
