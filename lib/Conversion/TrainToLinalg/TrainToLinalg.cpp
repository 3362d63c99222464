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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
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

Value skipOf(Operation *op) {
  if (auto adam = dyn_cast<train::AdamOp>(op))
    return adam.getSkip();
  if (auto lamb = dyn_cast<train::LambOp>(op))
    return lamb.getSkip();
  if (auto sgd = dyn_cast<train::SGDOp>(op))
    return sgd.getSkip();
  return {};
}

/// The values an update returns when it is skipped: its inputs.
SmallVector<Value> unchanged(Operation *op) {
  if (auto sgd = dyn_cast<train::SGDOp>(op))
    return {sgd.getParam(), sgd.getMomentumBuffer()};
  return {op->getOperand(0), op->getOperand(2), op->getOperand(3)};
}

/// Puts the updates of `block` that share a `skip` flag into one
/// `scf.if %skip { inputs } else { updates }`, so a skipped step costs
/// nothing and the updates stay side by side for one dsrt_*_multi call.
/// The if goes where the last update was; an update whose result is used
/// before that keeps its own if.
void wrapSkippableUpdates(Block &block) {
  llvm::MapVector<Value, SmallVector<Operation *>> bySkip;
  for (Operation &op : block)
    if (Value skip = skipOf(&op))
      bySkip[skip].push_back(&op);
  for (auto &[skip, ops] : bySkip) {
    SmallVector<SmallVector<Operation *>> groups;
    Operation *last = ops.back();
    SmallVector<Operation *> together;
    for (Operation *op : ops) {
      bool usedEarly = llvm::any_of(op->getUsers(), [&](Operation *user) {
        Operation *at = block.findAncestorOpInBlock(*user);
        return at && at != last && at->isBeforeInBlock(last) &&
               !llvm::is_contained(ops, at);
      });
      if (usedEarly)
        groups.push_back({op});
      else
        together.push_back(op);
    }
    if (!together.empty())
      groups.push_back(together);
    for (ArrayRef<Operation *> group : groups) {
      Operation *at = group.back();
      OpBuilder b(at);
      Location loc = at->getLoc();
      SmallVector<Type> types;
      SmallVector<Value> inputs;
      for (Operation *op : group) {
        llvm::append_range(types, op->getResultTypes());
        llvm::append_range(inputs, unchanged(op));
      }
      Value flag = tensor::ExtractOp::create(b, loc, skip, ValueRange{});
      auto ifOp = scf::IfOp::create(b, loc, types, flag, /*withElse=*/true);
      b.setInsertionPointToEnd(ifOp.thenBlock());
      scf::YieldOp::create(b, loc, inputs);
      SmallVector<Value> results;
      unsigned next = 0;
      for (Operation *op : group) {
        op->moveBefore(ifOp.elseBlock(), ifOp.elseBlock()->end());
        op->eraseOperand(op->getNumOperands() - 1);
        for (Value r : op->getResults()) {
          r.replaceAllUsesExcept(ifOp.getResult(next++), ifOp);
          results.push_back(r);
        }
      }
      b.setInsertionPointToEnd(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, results);
    }
  }
}

struct LowerTrainToLinalgPass
    : ds::impl::LowerTrainToLinalgBase<LowerTrainToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      wrapSkippableUpdates(*block);

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
