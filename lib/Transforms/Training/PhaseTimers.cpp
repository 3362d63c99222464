//===- PhaseTimers.cpp - Mark the phases of the step for libdsrt's timers -===//
//
// wall_clock_breakdown asks for forward, backward, reduction and optimizer
// times, but the step is one compiled function: timing it from outside gives
// only the total. The marks are calls that survive every later pass (an
// external function with unknown effects), so the time between two of them
// is what the compiled code spends there.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/CommPrediction.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "dstrain/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PHASETIMERS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

// dsrt_phase in runtime/include/dsrt/dsrt.h.
enum Phase : int32_t {
  None = 0,
  Forward = 1,
  Backward = 2,
  Reduction = 3,
  Optimizer = 4
};

constexpr llvm::StringLiteral kBeginPhase = "dsrt_phase_begin";

func::FuncOp declareBeginPhase(ModuleOp module) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(kBeginPhase))
    return fn;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = b.getFunctionType({b.getI32Type()}, {});
  auto fn = func::FuncOp::create(b, module.getLoc(), kBeginPhase, type);
  fn.setPrivate();
  return fn;
}

void mark(OpBuilder &b, Location loc, func::FuncOp callee, Phase phase) {
  Value id = arith::ConstantIntOp::create(b, loc, phase, 32);
  func::CallOp::create(b, loc, callee, ValueRange{id});
}

/// Calls @name, or ds-schedule-comm's copy of it for the last micro-batch.
bool callsFunction(Operation *op, StringRef name) {
  return op
      ->walk([&](func::CallOp call) {
        StringRef callee = call.getCallee();
        return callee == name || (callee.consume_front(name) &&
                                  callee == kLastMicroBatchSuffix)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

bool holdsTrainOp(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isa<train::TrainDialect>(inner->getDialect())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Forward from the entry, backward from just after the loss.
LogicalResult markGradientFunction(func::FuncOp fn, func::FuncOp begin) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return fn.emitError("ds-phase-timers: @")
           << fn.getName() << " returns no loss";
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  mark(b, fn.getLoc(), begin, Forward);
  Value loss = ret.getOperand(0);
  if (Operation *def = loss.getDefiningOp())
    b.setInsertionPointAfter(def);
  mark(b, fn.getLoc(), begin, Backward);
  return success();
}

/// Reduction after the micro-batches, optimizer from the first dstrain op
/// after them, nothing charged from the return on.
LogicalResult markStep(func::FuncOp fn, StringRef gradientName,
                       func::FuncOp begin) {
  Block &body = fn.getBody().front();
  Operation *lastMicroBatch = nullptr;
  for (Operation &op : body.without_terminator())
    if (callsFunction(&op, gradientName))
      lastMicroBatch = &op;
  if (!lastMicroBatch)
    return fn.emitError("ds-phase-timers: @")
           << fn.getName() << " does not call @" << gradientName;
  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(lastMicroBatch);
  mark(b, fn.getLoc(), begin, Reduction);
  for (Operation *op = lastMicroBatch->getNextNode(); op != nullptr;
       op = op->getNextNode())
    if (holdsTrainOp(op)) {
      b.setInsertionPoint(op);
      mark(b, fn.getLoc(), begin, Optimizer);
      break;
    }
  b.setInsertionPoint(body.getTerminator());
  mark(b, fn.getLoc(), begin, None);
  return success();
}

struct PhaseTimersPass : mlir::ds::impl::PhaseTimersBase<PhaseTimersPass> {
  using PhaseTimersBase::PhaseTimersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->getAttr(pipeline::kPipelineAttrName))
      return;
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    auto gradient = module.lookupSymbol<func::FuncOp>(gradientEntry);
    if (!step || step.isExternal() || !gradient || gradient.isExternal()) {
      module.emitError("ds-phase-timers: needs @")
          << entry << " and @" << gradientEntry
          << " (run it after the training passes)";
      return signalPassFailure();
    }
    func::FuncOp begin = declareBeginPhase(module);
    auto last = module.lookupSymbol<func::FuncOp>(
        (gradientEntry + kLastMicroBatchSuffix).str());
    if (failed(markGradientFunction(gradient, begin)) ||
        (last && !last.isExternal() &&
         failed(markGradientFunction(last, begin))) ||
        failed(markStep(step, gradientEntry, begin)))
      signalPassFailure();
  }
};

} // namespace
