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

#include <cstdint>

namespace mlir::ds {

/// Choices of the lowering (the options of ds-lower-nn-to-linalg).
struct NNToLinalgOptions {
  /// Keys per block of the online-softmax attention; 0 never blocks.
  int64_t attentionBlockSize = 256;
  /// Attention over more keys than this is blocked.
  int64_t attentionBlockThreshold = 1024;
};

/// Adds the patterns lowering every dsnn op except `moe` (and dropout with
/// p > 0), including inlining `dsnn.layer` bodies.
void populateNNToLinalgPatterns(RewritePatternSet &patterns,
                                const NNToLinalgOptions &options = {});

} // namespace mlir::ds

#endif // DS_CONVERSION_NNTOLINALG_H
