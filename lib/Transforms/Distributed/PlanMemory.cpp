//===- PlanMemory.cpp - Per-rank model-state memory of the step -----------===//
//
// Reads the sizes off the types the step contract already has: parameters
// and optimizer state are arguments (whole or chunks, dsdist.sharding), and
// the gradient a rank keeps at the step boundary is the operand of its
// optimizer update, traced back through clipping to before a dsdist.shard
// (stage 1 keeps the whole all-reduced gradient and only updates a chunk).
// Activations are what a micro-batch's forward leaves for its backward,
// times the micro-batches whose backward is pending at once, plus the
// largest block a checkpointed backward recomputes.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <utility>

namespace mlir::ds {
#define GEN_PASS_DEF_PLANMEMORY
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

int64_t bytesOf(Type type) {
  auto t = cast<RankedTensorType>(type);
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

/// The gradient buffer behind an optimizer's gradient operand.
int64_t gradientBytes(Value grad) {
  if (auto clip = grad.getDefiningOp<train::ClipGradNormOp>())
    grad = clip.getGrads()[cast<OpResult>(grad).getResultNumber()];
  if (auto shard = grad.getDefiningOp<dist::ShardOp>())
    return bytesOf(shard.getInput().getType());
  return bytesOf(grad.getType());
}

/// Activation memory of one rank, in bytes.
struct Activations {
  int64_t saved = 0, inFlight = 0, recomputed = 0;
  int64_t total() const { return saved * inFlight + recomputed; }
};

/// The largest run of consecutive `recompute` layers (one checkpointed
/// block), counting the results something reads.
int64_t recomputePeak(func::FuncOp fn) {
  int64_t peak = 0, block = 0;
  for (Operation &op : fn.getBody().front()) {
    if (!op.hasAttr(kRecomputeAttrName)) {
      block = 0;
      continue;
    }
    for (Value r : op.getResults())
      if (!r.use_empty())
        block += bytesOf(r.getType());
    peak = std::max(peak, block);
  }
  return peak;
}

/// A one-program step runs @forward_backward once per micro-batch, one at a
/// time; a pipeline stage's step calls @stage_forward and @stage_backward
/// in its schedule's order, holding each micro-batch's saved values (and
/// the activation it received) from one to the other.
std::optional<Activations> activations(ModuleOp module, func::FuncOp step) {
  Activations a;
  auto stageForward = module.lookupSymbol<func::FuncOp>("stage_forward");
  auto stageBackward = module.lookupSymbol<func::FuncOp>("stage_backward");
  if (stageForward && stageBackward && !stageBackward.isExternal()) {
    auto isForward = [&](Operation *op) {
      auto call = dyn_cast_or_null<func::CallOp>(op);
      return call && call.getCallee() == stageForward.getName();
    };
    int64_t pending = 0;
    bool counted = false;
    for (Operation &op : step.getBody().front()) {
      if (isForward(&op)) {
        a.inFlight = std::max(a.inFlight, ++pending);
        continue;
      }
      auto call = dyn_cast<func::CallOp>(op);
      if (!call || call.getCallee() != stageBackward.getName())
        continue;
      --pending;
      // Every micro-batch saves values of the same types: count the first.
      if (!std::exchange(counted, true))
        for (Value v : call.getOperands())
          if (isForward(v.getDefiningOp()) ||
              (!isa<BlockArgument>(v) && llvm::any_of(v.getUsers(), isForward)))
            a.saved += bytesOf(v.getType());
    }
    a.recomputed = recomputePeak(stageBackward);
    return a;
  }
  auto fb = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fb || fb.isExternal() || fb.getNumResults() == 0)
    return std::nullopt;
  Block &body = fb.getBody().front();
  for (Value v : pipeline::savedValues(
           body, body.getTerminator()->getOperands().take_front(1)))
    a.saved += bytesOf(v.getType());
  a.inFlight = 1;
  a.recomputed = recomputePeak(fb);
  return a;
}

struct PlanMemoryPass : mlir::ds::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ds-plan-memory: no func.func @" << entry
                         << " with a body; run the training pipeline first";
      return signalPassFailure();
    }
    int64_t params = 0, state = 0, grads = 0, numel = 0;
    bool paramsSharded = false, stateSharded = false;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      Type type = fn.getArgumentTypes()[i];
      bool sharded = static_cast<bool>(
          fn.getArgAttr(i, dist::DistDialect::kShardingAttrName));
      if (fn.getArgAttr(i, nn::kParamAttrName)) {
        params += bytesOf(type);
        paramsSharded |= sharded;
        auto sharding = fn.getArgAttrOfType<dist::ShardingAttr>(
            i, dist::DistDialect::kShardingAttrName);
        numel += sharding ? sharding.getNumElements()
                          : cast<RankedTensorType>(type).getNumElements();
      } else if (fn.getArgAttr(i, kStateAttrName)) {
        state += bytesOf(type);
        stateSharded |= sharded;
      }
    }
    fn.walk([&](Operation *op) {
      if (isa<train::AdamOp, train::SGDOp, train::LambOp>(op))
        grads += gradientBytes(op->getOperand(1));
    });
    // Chunked gradients (stage >= 2) hold less than the whole fp32 model.
    bool gradsChunked = grads < 4 * numel;

    int64_t n = 1;
    if (auto grid = module->getAttrOfType<dist::GridAttr>(
            dist::DistDialect::kGridAttrName))
      n = grid.getAxisSize("dp").value_or(1) *
          grid.getAxisSize("ep").value_or(1);
    int stage = paramsSharded ? 3 : gradsChunked ? 2 : stateSharded ? 1 : 0;
    // The ZeRO paper's fp32 model states, Ψ parameters over N ranks; with
    // 16-bit parameters (mixed precision at ZeRO-1/2) the replicated part
    // is 2Ψ and the f32 master joins the sharded state.
    double psi = double(numel);
    bool low = !paramsSharded && numel > 0 && params < 4 * numel;
    double formula[] = {16 * psi, 8 * psi + 8 * psi / n, 4 * psi + 12 * psi / n,
                        16 * psi / n};
    if (low) {
      formula[1] = 6 * psi + 12 * psi / n;
      formula[2] = 2 * psi + 16 * psi / n;
    }
    int64_t total = params + grads + state;
    fn.emitRemark() << "ds-plan-memory: per rank (dp = " << n << ", ZeRO stage "
                    << stage << "): parameters " << params << " B, gradients "
                    << grads << " B, optimizer state " << state
                    << " B; model states " << total << " B (ZeRO formula for "
                    << numel << " parameters: " << formatNumber(formula[stage])
                    << " B)";
    fn->setAttr("ds.model_state_bytes",
                IntegerAttr::get(IntegerType::get(&getContext(), 64), total));
    if (std::optional<Activations> a = activations(module, fn)) {
      fn.emitRemark() << "ds-plan-memory: activations per rank: " << a->saved
                      << " B saved per micro-batch x " << a->inFlight
                      << " in flight + " << a->recomputed
                      << " B recomputed = " << a->total() << " B";
      fn->setAttr(
          "ds.activation_bytes",
          IntegerAttr::get(IntegerType::get(&getContext(), 64), a->total()));
    }
  }
};

} // namespace
