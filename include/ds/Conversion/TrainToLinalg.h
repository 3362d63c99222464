//===- TrainToLinalg.h - dstrain to linalg on tensors -----------*- C++ -*-===//
//
// The training half of the compute lowering: optimizer updates, norms,
// clipping, the loss scaler and LR schedules become linalg, tensor, arith and
// math on tensors, next to what ds-lower-nn-to-linalg makes of the model.
// Checkpoint ops are left for the runtime lowering.
//
//===----------------------------------------------------------------------===//
#ifndef DS_CONVERSION_TRAINTOLINALG_H
#define DS_CONVERSION_TRAINTOLINALG_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {

/// Adds the patterns lowering every dstrain op except checkpoint_save and
/// checkpoint_load. With `optimizerKernels`, the updates
/// `isServedByOptimizerKernels` accepts are left alone: bufferization makes
/// them `dstrain.apply` and ds-lower-optimizer-to-runtime calls libdsrt's
/// fused kernels for them.
void populateTrainToLinalgPatterns(RewritePatternSet &patterns,
                                   bool optimizerKernels = false);

/// Whether an optimizer update (dstrain.adam, lamb, sgd; nothing else) has
/// what libdsrt's CPU kernels take: static f32 param and state, an f32, f16
/// or bf16 grad of the same shape.
inline bool isServedByOptimizerKernels(Operation *op) {
  if (op->getNumOperands() < 3)
    return false;
  auto param = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto grad = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  if (!param || !grad || !param.hasStaticShape() ||
      param.getShape() != grad.getShape() || !param.getElementType().isF32())
    return false;
  Type g = grad.getElementType();
  return g.isF32() || g.isF16() || g.isBF16();
}

} // namespace mlir::ds

#endif // DS_CONVERSION_TRAINTOLINALG_H
