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

#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {

/// Adds the patterns lowering every dstrain op except checkpoint_save and
/// checkpoint_load.
void populateTrainToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::ds

#endif // DS_CONVERSION_TRAINTOLINALG_H
