//===- NNToLinalg.h - dsnn to linalg on tensors ------------------*- C++
//-*-===//
//
// The compute half of the lowering phase: every dsnn op becomes linalg,
// tensor, arith, math (and scf for scatter-adds) on tensors. Products come
// out as linalg.matmul / linalg.batch_matmul so the next level can hand them
// to BLAS; everything else is linalg.generic for vectorization.
//
//===----------------------------------------------------------------------===//
#ifndef DS_CONVERSION_NNTOLINALG_H
#define DS_CONVERSION_NNTOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {

/// Adds the patterns lowering every dsnn op except `moe` (and dropout with
/// p > 0), including inlining `dsnn.layer` bodies.
void populateNNToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::ds

#endif // DS_CONVERSION_NNTOLINALG_H
