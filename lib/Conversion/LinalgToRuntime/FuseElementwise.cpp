//===- FuseElementwise.cpp - fusion that never touches contractions -------===//
//
// Upstream's elementwise fusion, controlled: a producer is fused into a
// consumer only when the consumer reads each element of it exactly once
// (a permutation indexing map), and no reshape propagation, so named
// matmuls stay matmuls for the BLAS rewrite. Nor across a call of a layer
// or stage function, which would keep the producer's inputs alive through
// it.
//
//===----------------------------------------------------------------------===//

#include "CodeCalls.h"
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
  if (!consumer.getMatchingIndexingMap(fused).isPermutation())
    return false;
  // Fused, the producer's inputs live until the consumer: not across a
  // layer's run (the micro-batches' gradients of a pipeline schedule would
  // all wait for one sum at the end instead of being added as they come).
  if (producer->getBlock() == consumer->getBlock())
    for (Operation *op = producer->getNextNode(); op != consumer.getOperation();
         op = op->getNextNode())
      if (ds::runsDefinedFunction(op))
        return false;
  return true;
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
