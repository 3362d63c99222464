//===- TrainToLinalg.cpp - The ds-lower-train-to-linalg pass --------------===//
//
// Runs the dstrain -> linalg patterns to a fixed point, then names every
// dstrain op left over except the checkpoint ops, which the runtime lowering
// turns into dsrt calls: a half-lowered step never reaches bufferization
// silently.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "ds/Conversion/TrainToLinalg.h"
#include "ds/Transforms/Passes.h"
#include "dstrain/TrainDialect.h"
#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWERTRAINTOLINALG
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

void mlir::ds::populateTrainToLinalgPatterns(RewritePatternSet &patterns) {
  traintolinalg::populateOptimizerPatterns(patterns);
  traintolinalg::populateNormPatterns(patterns);
  traintolinalg::populateLRSchedulePatterns(patterns);
  traintolinalg::populateLossScalePatterns(patterns);
}

namespace {

bool hasDynamicShape(Operation *op) {
  auto dynamic = [](Type t) {
    auto st = dyn_cast<ShapedType>(t);
    return st && !st.hasStaticShape();
  };
  return llvm::any_of(op->getOperandTypes(), dynamic) ||
         llvm::any_of(op->getResultTypes(), dynamic);
}

struct LowerTrainToLinalgPass
    : ds::impl::LowerTrainToLinalgBase<LowerTrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateTrainToLinalgPatterns(patterns);
    // Only dstrain ops are this pass's business; regions stay as they are.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);

    bool failed = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<train::TrainDialect>(op->getDialect()) ||
          isa<train::CheckpointSaveOp, train::CheckpointLoadOp>(op))
        return;
      InFlightDiagnostic diag = op->emitError() << "'" << op->getName() << "' ";
      if (hasDynamicShape(op))
        diag << "has a dynamic shape; ds-lower-train-to-linalg lowers static "
                "shapes only";
      else
        diag << "has no lowering to linalg";
      failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
