//===- FuseElementwise.cpp - fusion that never touches contractions -------===//
//
// Upstream's elementwise fusion, controlled: a producer is fused into a
// consumer only when the consumer reads each element of it exactly once
// (a permutation indexing map), and no reshape propagation, so named
// matmuls stay matmuls for the BLAS rewrite.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ds {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

bool fuseIfReadOnce(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer || linalg::isaContractionOpInterface(consumer))
    return false;
  return consumer.getMatchingIndexingMap(fused).isPermutation();
}

struct FuseElementwisePass
    : public ds::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fuseIfReadOnce);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
