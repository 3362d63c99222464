//===- TrainToLinalg.cpp - The ds-lower-train-to-linalg pass --------------===//
//
// Runs the dstrain -> linalg patterns to a fixed point, then names every
// dstrain op left over except the checkpoint ops, which the runtime lowering
// turns into dsrt calls, and (with optimizer-kernels) the updates libdsrt's
// kernels serve, which bufferize to dstrain.apply: a half-lowered step never
// reaches bufferization silently.
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
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_LOWERTRAINTOLINALG
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

void mlir::ds::populateTrainToLinalgPatterns(RewritePatternSet &patterns,
                                             bool optimizerKernels) {
  traintolinalg::populateOptimizerPatterns(patterns, optimizerKernels);
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

bool isKernelUpdate(Operation *op) {
  return isa<train::AdamOp, train::LambOp, train::SGDOp>(op) &&
         isServedByOptimizerKernels(op);
}

/// Sinks the kernel updates of `block` next to each other, right before the
/// first op that uses one of their results, when all their operands are
/// ready by then (always, in a step: clipping needs every gradient before
/// any update). They are pure, so this only reorders; bufferization then
/// emits them side by side and ds-lower-optimizer-to-runtime can make them
/// one dsrt_*_multi call. ZeRO-1/2 interleave the updates with the next
/// parameter's dsdist.shard, whose fresh buffer would otherwise end each
/// group.
void clusterKernelUpdates(Block &block) {
  SmallVector<Operation *> updates;
  for (Operation &op : block)
    if (isKernelUpdate(&op))
      updates.push_back(&op);
  if (updates.size() < 2)
    return;
  llvm::SmallPtrSet<Operation *, 16> isUpdate(updates.begin(), updates.end());
  Operation *lastDef = nullptr, *firstUse = nullptr;
  for (Operation *u : updates) {
    for (Value operand : u->getOperands()) {
      Operation *def = operand.getDefiningOp();
      def = def ? block.findAncestorOpInBlock(*def) : nullptr;
      if (def && !isUpdate.contains(def) &&
          (!lastDef || lastDef->isBeforeInBlock(def)))
        lastDef = def;
    }
    for (Operation *user : u->getUsers()) {
      Operation *at = block.findAncestorOpInBlock(*user);
      if (at && !isUpdate.contains(at) &&
          (!firstUse || at->isBeforeInBlock(firstUse)))
        firstUse = at;
    }
  }
  if (!firstUse || (lastDef && !lastDef->isBeforeInBlock(firstUse)))
    return;
  for (Operation *u : updates)
    u->moveBefore(firstUse);
}

struct LowerTrainToLinalgPass
    : ds::impl::LowerTrainToLinalgBase<LowerTrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateTrainToLinalgPatterns(patterns, optimizerKernels);
    // Only dstrain ops are this pass's business; regions stay as they are.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);

    if (optimizerKernels)
      getOperation()->walk([](Block *block) { clusterKernelUpdates(*block); });

    bool failed = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<train::TrainDialect>(op->getDialect()) ||
          isa<train::CheckpointSaveOp, train::CheckpointLoadOp>(op))
        return;
      if (optimizerKernels && isKernelUpdate(op))
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
