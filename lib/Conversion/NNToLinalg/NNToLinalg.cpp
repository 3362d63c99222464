//===- NNToLinalg.cpp - The ds-lower-nn-to-linalg pass --------------------===//
//
// Runs the dsnn -> linalg patterns to a fixed point, then names every dsnn
// op left over, with the reason when one is known: a partially lowered
// module is never silently handed to bufferization.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "ds/Conversion/NNToLinalg.h"
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Passes.h"
#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWERNNTOLINALG
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

void mlir::ds::populateNNToLinalgPatterns(RewritePatternSet &patterns,
                                          const NNToLinalgOptions &options) {
  nntolinalg::populateStructurePatterns(patterns);
  nntolinalg::populateElementwisePatterns(patterns);
  nntolinalg::populateMatmulPatterns(patterns);
  nntolinalg::populateShapePatterns(patterns);
  nntolinalg::populateNormalizationPatterns(patterns);
  nntolinalg::populateSoftmaxPatterns(patterns);
  nntolinalg::populateAttentionPatterns(patterns, options.attentionBlockSize,
                                        options.attentionBlockThreshold);
  nntolinalg::populateLossPatterns(patterns);
  nntolinalg::populateEmbeddingPatterns(patterns);
  nntolinalg::populateMoEPatterns(patterns);
}

namespace {

/// Why `op` is still there, for the error.
void explain(Operation *op, InFlightDiagnostic &diag) {
  if (!nntolinalg::hasStaticShapes(op)) {
    diag << "has a dynamic shape; ds-lower-nn-to-linalg lowers static "
            "shapes only";
    return;
  }
  diag << "has no lowering to linalg";
}

struct LowerNNToLinalgPass
    : ds::impl::LowerNNToLinalgBase<LowerNNToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    if (attentionBlockSize < 0) {
      getOperation().emitError()
          << "ds-lower-nn-to-linalg: attention-block-size is "
          << static_cast<int64_t>(attentionBlockSize)
          << " but must be 0 (never block) or positive";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    NNToLinalgOptions options;
    options.attentionBlockSize = attentionBlockSize;
    options.attentionBlockThreshold = attentionBlockThreshold;
    populateNNToLinalgPatterns(patterns, options);
    // Regions are left as they are: only dsnn ops are this pass's business.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);

    bool failed = false;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa<nn::NNDialect>(op->getDialect()))
        return WalkResult::advance();
      InFlightDiagnostic diag = op->emitError() << "'" << op->getName() << "' ";
      explain(op, diag);
      failed = true;
      // Ops inside an unlowered moe are reported with it.
      return isa<nn::MoEOp>(op) ? WalkResult::skip() : WalkResult::advance();
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
