//===- Training.h - Autodiff and the step contract ---------------*- C++
//-*-===//
//
// What the training passes share: the VJP registration, the gradient
// function builder, and the attribute names of the step contract
// (docs/architecture.md), so producers and the verifier spell them alike.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TRANSFORMS_TRAINING_H
#define DS_TRANSFORMS_TRAINING_H

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/LLVM.h"

namespace mlir::ds {

/// Attaches DifferentiableOpInterface to the forward dsnn ops (external
/// models, lib/Transforms/Training/VJPs.cpp).
void registerDifferentiableOpInterfaceExternalModels(DialectRegistry &registry);

/// What buildForwardBackward emitted, for pass statistics and remarks.
struct AutodiffStats {
  int64_t vjps = 0;
  int64_t backwardLayers = 0;
};

/// Builds, next to `forward` (a model-contract function), the function
/// `name`(same arguments) -> (loss, one gradient per parameter). Reports
/// errors at the offending op and returns failure.
FailureOr<func::FuncOp> buildForwardBackward(func::FuncOp forward,
                                             StringRef name,
                                             AutodiffStats *stats = nullptr);

/// Unit attribute on a `dsnn.layer` that holds the backward of the layer of
/// the same type whose name is this one's minus the ".backward" suffix.
inline constexpr StringLiteral kBackwardAttrName = "backward";
inline constexpr StringLiteral kBackwardSuffix = ".backward";
/// Unit attribute on a copy of a forward `dsnn.layer` that the backward
/// runs again (ds-checkpoint-activations) instead of reading saved values.
inline constexpr StringLiteral kRecomputeAttrName = "recompute";

/// Unit attribute on the last argument of a gradient function whose model
/// has dropout: `tensor<i64>`, the counter of the call's random masks
/// (@train_step passes step · micro-batches + micro-batch index).
inline constexpr StringLiteral kRngKeyAttrName = "dsnn.rng_key";

/// @train_step argument attributes: `{param = "<name>", kind = "<kind>"}` on
/// optimizer state, unit on the 1-based step counter.
inline constexpr StringLiteral kStateAttrName = "dstrain.state";
inline constexpr StringLiteral kStepAttrName = "dstrain.step";
/// Result attribute naming a metric of the step (`"moe/<layer>/exp_counts"`):
/// results after grad_norm (and after the gradients of @forward_backward)
/// that only report, never update anything.
inline constexpr StringLiteral kMetricAttrName = "dstrain.metric";
/// @train_step function attribute: the micro-batches per step, which is the
/// leading dim of every batch argument.
inline constexpr StringLiteral kAccumStepsAttrName =
    "dstrain.gradient_accumulation_steps";

/// The leading arguments of `fn` that carry `dsnn.param`: the parameters.
inline unsigned numLeadingParams(func::FuncOp fn) {
  unsigned n = 0;
  while (n < fn.getNumArguments() &&
         fn.getArgAttrOfType<nn::ParamAttr>(n, nn::kParamAttrName))
    ++n;
  return n;
}

/// The qualified name of parameter argument `index` of `fn`.
inline StringRef paramName(func::FuncOp fn, unsigned index) {
  return fn.getArgAttrOfType<nn::ParamAttr>(index, nn::kParamAttrName)
      .getName();
}

/// `type` as a ranked tensor of floats, or null: what differentiation and
/// mixed precision act on.
inline RankedTensorType floatTensorType(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && isa<FloatType>(t.getElementType()) ? t : RankedTensorType();
}

/// Replaces `layer` by a copy that also yields `values` (defined in its
/// body) as its last results; uses of the old results move to the copy.
nn::LayerOp yieldMore(nn::LayerOp layer, ArrayRef<Value> values);

/// A 0-d float tensor constant (`arith.constant dense<v> : tensor<T>`),
/// which dsnn's broadcasting ops apply elementwise.
Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                     double value);

/// Micro-batch `index` of a batch argument `[micro-batches, ...]`: the
/// slice without the leading dim.
Value microBatchSlice(OpBuilder &b, Location loc, Value full,
                      OpFoldResult index);

/// The dropout key of micro-batch `index`: step · steps + index, one per
/// call of the gradient function, never reused.
Value microBatchKey(OpBuilder &b, Location loc, Value step, int64_t steps,
                    OpFoldResult index);

/// The mean over `steps` micro-batches of each sum: DeepSpeed scales each
/// micro-batch's loss by 1/steps (one multiply per value).
SmallVector<Value> microBatchMean(OpBuilder &b, Location loc, ValueRange sums,
                                  int64_t steps);

} // namespace mlir::ds

#endif // DS_TRANSFORMS_TRAINING_H
