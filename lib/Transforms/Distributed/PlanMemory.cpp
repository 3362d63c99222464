//===- PlanMemory.cpp - Per-rank memory of the step -----------------------===//
//
// Reads the sizes off the types the step contract already has: parameters
// and optimizer state are arguments (whole or chunks, dsdist.sharding), and
// the gradient a rank keeps at the step boundary is the operand of its
// optimizer update, traced back through clipping to before a dsdist.shard
// (stage 1 keeps the whole all-reduced gradient and only updates a chunk).
// Activations are what a micro-batch's forward leaves for its backward,
// times the micro-batches whose backward is pending at once, plus the
// largest block a checkpointed backward recomputes. The peak of a step call
// (MemoryPlan.h) follows every buffer the step's code makes from its op to
// its last use, as bufferization and ds-plan-buffers will place it.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/DiesAt.h"
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/MemoryPlan.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

#include <functional>
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

//===----------------------------------------------------------------------===//
// The peak of one step call (MemoryPlan.h)
//===----------------------------------------------------------------------===//

bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// Whether a slice is one contiguous run of its source (its outer dims 1,
/// then the rest whole): a view. Others are copied before a reshape.
bool contiguousSlice(tensor::ExtractSliceOp slice) {
  ArrayRef<int64_t> src = slice.getSourceType().getShape();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  if (!slice.hasUnitStride() || llvm::any_of(sizes, ShapedType::isDynamic))
    return false;
  size_t d = 0;
  while (d < sizes.size() && sizes[d] == 1)
    ++d;
  for (size_t k = d + 1; k < sizes.size(); ++k)
    if (sizes[k] != src[k])
      return false;
  return true;
}

/// The buffers of one block, simulated op by op: each made at an op and
/// live to the op of this block that holds its last use (of it or of a
/// view of it; to the end when the terminator reads it).
class BlockPeak {
public:
  enum Kind { Plain, Gathered, InFlight };
  struct Buffer {
    int64_t bytes;
    Kind kind;
    unsigned def, last;
    /// The op that makes it (for the peak's account).
    Operation *origin = nullptr;
    /// A started collective's result: in flight until its wait, then
    /// `waitedKind` (a gathered parameter, or plain).
    unsigned waited = ~0u;
    Kind waitedKind = Plain;
    Kind kindAt(unsigned at) const { return at < waited ? kind : waitedKind; }
  };
  struct Outer {
    int64_t total = 0, gathered = 0, inFlight = 0;
    /// The buffers behind `total` (only those of enclosing blocks).
    std::vector<std::pair<int64_t, Operation *>> items;
    void add(int64_t bytes, Kind kind) {
      total += bytes;
      gathered += kind == Gathered ? bytes : 0;
      inFlight += kind == InFlight ? bytes : 0;
    }
    void add(const Outer &o) {
      total += o.total;
      gathered += o.gathered;
      inFlight += o.inFlight;
    }
  };

  /// What the simulations of one step share.
  struct Step {
    ModuleOp module;
    PeakMemoryPlan &plan;
    /// Static call sites per callee: ds-inline-glue inlines a function
    /// called once; one called more often keeps an arena of its own.
    llvm::StringMap<unsigned> callSites;
    /// The peak of each function with an arena of its own.
    llvm::StringMap<int64_t> arenas;
  };

  /// `timeline`: whether these buffers share the step's arena (their peak
  /// is the plan's), or are a function's with an arena of its own.
  BlockPeak(Step &step, bool timeline)
      : module(step.module), plan(step.plan), step(step), timeline(timeline) {}

  /// Simulates `block` under `outer` bytes live around it, records the
  /// peaks in the plan, and returns this block's own peak. `owned`: whether
  /// the terminator's operands are this block's buffers (else the
  /// caller's: the entry's results, a layer's out-params).
  int64_t run(Block &block, Outer outer, bool owned) {
    SmallVector<Buffer> buffers;
    DenseMap<Value, unsigned> root;
    DenseMap<Operation *, unsigned> pos;
    unsigned n = 0;
    for (Operation &op : block)
      pos[&op] = n++;
    auto make = [&](Value v, int64_t bytes, Kind kind, unsigned at) {
      root[v] = buffers.size();
      buffers.push_back({bytes, kind, at, at, v.getDefiningOp()});
    };
    // Each tensor result of `op` a buffer of its own; their bytes.
    auto makeResults = [&](Operation &op, unsigned at) {
      int64_t bytes = 0;
      for (Value r : op.getResults())
        if (isTensor(r)) {
          make(r, bytesOf(r.getType()), Plain, at);
          bytes += bytesOf(r.getType());
        }
      return bytes;
    };
    auto alias = [&](Value v, Value of) {
      auto it = root.find(of);
      if (it != root.end())
        root[v] = it->second;
    };
    // Buffers made at each op, and the extra peak of nested code there.
    SmallVector<int64_t> extra(n, 0);
    // Nested blocks are simulated once every use in this one is seen: what
    // is live around them includes what is used after them.
    SmallVector<std::function<void()>> nested;
    auto inlined = [&](unsigned at, Block &body, int64_t results) {
      nested.push_back([&, at, body = &body, results] {
        Outer around = liveAt(buffers, at, outer, false);
        extra[at] = std::max<int64_t>(0, run(*body, around, true) - results);
      });
    };
    for (Operation &op : block) {
      unsigned at = pos[&op];
      if (isa<tensor::ExpandShapeOp, tensor::CastOp>(op)) {
        alias(op.getResult(0), op.getOperand(0));
      } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        alias(slice.getResult(), slice.getSource());
      } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
        auto slice = collapse.getSrc().getDefiningOp<tensor::ExtractSliceOp>();
        if (slice && !contiguousSlice(slice))
          make(collapse.getResult(), bytesOf(collapse.getType()), Plain, at);
        else
          alias(collapse.getResult(), collapse.getSrc());
      } else if (isa<arith::ConstantOp>(op)) {
        // Constants are data of the code, not buffers.
      } else if (auto wait = dyn_cast<dist::WaitOp>(op)) {
        if (wait.getResult()) {
          alias(wait.getResult(), wait.getHandle());
          if (auto it = root.find(wait.getHandle()); it != root.end()) {
            buffers[it->second].waited = at;
            if (isa<dist::AllGatherStartOp>(wait.getHandle().getDefiningOp()))
              buffers[it->second].waitedKind = Gathered;
          }
        }
      } else if (isa<dist::AllGatherStartOp, dist::ReduceScatterStartOp,
                     dist::AllReduceStartOp, dist::AllToAllStartOp>(op)) {
        // A snapshot of the operand to send from, and the result.
        Value handle = op.getResult(0);
        snapshotOf[handle] = buffers.size();
        buffers.push_back(
            {bytesOf(op.getOperand(0).getType()), InFlight, at, at, &op});
        make(handle,
             bytesOf(cast<dist::HandleType>(handle.getType()).getPayload()),
             InFlight, at);
      } else if (auto gather = dyn_cast<dist::AllGatherOp>(op)) {
        make(gather.getResult(), bytesOf(gather.getType()), Gathered, at);
      } else if (isa<dist::AllReduceOp>(op)) {
        // In place on its operand's buffer.
        alias(op.getResult(0), op.getOperand(0));
      } else if (isa<train::ClipGradNormOp, nn::AddOp, nn::SubOp, nn::MulOp,
                     nn::DivOp>(op)) {
        // Each result written over an operand that dies here, if one does.
        for (OpResult r : op.getResults()) {
          if (Value dying = dyingOperand(r, root))
            alias(r, dying);
          else if (isTensor(r))
            make(r, bytesOf(r.getType()), Plain, at);
        }
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        int64_t results = makeResults(op, at);
        if (callee && !callee.isExternal()) {
          if (step.callSites.lookup(callee.getName()) == 1 &&
              callee.getBody().hasOneBlock() &&
              !callee->hasAttr("dsnn.layer_count")) {
            // Inlined: the call's results are the body's own returns,
            // made where it makes them.
            inlined(at, callee.getBody().front(), results);
          } else {
            int64_t inside = BlockPeak(step, false)
                                 .run(callee.getBody().front(), Outer(), false);
            int64_t &peak = step.arenas["@" + callee.getName().str()];
            peak = std::max(peak, inside);
          }
        }
      } else if (auto layer = dyn_cast<nn::LayerOp>(op)) {
        for (Value r : layer.getResults())
          if (isTensor(r))
            make(r, bytesOf(r.getType()), Plain, at);
        // Outlined into a function with an arena of its own: one per
        // layer type and signature, shared by the layers that have it.
        std::string key;
        llvm::raw_string_ostream os(key);
        os << layer.getLayerType();
        for (Type t : layer.getResultTypes())
          os << ' ' << t;
        int64_t inside =
            BlockPeak(step, false).run(layer.getBody().front(), Outer(), false);
        int64_t &peak = step.arenas[key];
        peak = std::max(peak, inside);
      } else if (auto loop = dyn_cast<scf::ForOp>(op);
                 loop && isSingleTrip(loop)) {
        // The canonicalizer replaces a loop of one iteration by its body
        // (a micro-batch loop when the last micro-batch is peeled): the
        // body reads the initial values where they are, and its yields
        // are the results.
        inlined(at, *loop.getBody(), makeResults(op, at));
      } else if (loop) {
        // ds-plan-buffers gives a value the body makes and yields two
        // slots, live for the whole loop: iteration k writes one and reads
        // the other. A result is one of them; the body's yields are the
        // slot it writes, counted here rather than in the body.
        makeResults(op, at);
        auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
        for (auto [r, next] : llvm::zip(loop.getResults(), yield.getOperands()))
          if (isTensor(r) && next.getParentBlock() == loop.getBody())
            buffers.push_back({bytesOf(r.getType()), Plain, at, at, &op});
        // An initial value the loop cannot write (an argument) is copied
        // into a buffer of its own first, which the first iteration reads:
        // live for the whole loop. A constant (the gradient accumulators'
        // zeros) is copied into the slot the first iteration reads, one of
        // the two above: libdsrt measures two accumulators' bytes per
        // micro-batch loop, not three (GPT-tiny, ZeRO-0, with and without
        // activation checkpointing: the step's measured peak grows by two
        // gradients' bytes from 1 micro-batch to 2).
        for (Value init : loop.getInitArgs())
          if (isTensor(init) && !root.count(init) &&
              !init.getDefiningOp<arith::ConstantOp>())
            buffers.push_back({bytesOf(init.getType()), Plain, at, at, &op});
        nested.push_back([&, at, body = loop.getBody()] {
          extra[at] = run(*body, liveAt(buffers, at, outer, true), false);
        });
      } else if (!op.hasTrait<OpTrait::IsTerminator>()) {
        for (Value r : op.getResults())
          if (isTensor(r))
            make(r, bytesOf(r.getType()), Plain, at);
      }
      // Uses end live ranges: at this op, or at the end for a terminator.
      unsigned last = op.hasTrait<OpTrait::IsTerminator>() ? n : at;
      auto use = [&](Value v) {
        auto it = root.find(v);
        if (it != root.end())
          buffers[it->second].last = std::max(buffers[it->second].last, last);
      };
      for (Value v : op.getOperands()) {
        use(v);
        if (auto wait = dyn_cast<dist::WaitOp>(op))
          if (auto it = snapshotOf.find(v); it != snapshotOf.end())
            buffers[it->second].last = at;
      }
      op.walk([&](Operation *inner) {
        if (inner != &op)
          for (Value v : inner->getOperands())
            use(v);
      });
      if (op.hasTrait<OpTrait::IsTerminator>() && !owned)
        for (Value v : op.getOperands())
          if (auto it = root.find(v); it != root.end())
            buffers[it->second].bytes = 0;
    }
    for (auto &simulate : nested)
      simulate();
    // One sweep: each buffer adds its bytes where it starts to live (or
    // changes kind) and takes them back after.
    SmallVector<Outer> delta(n + 1);
    auto range = [&](unsigned from, unsigned to, int64_t bytes, Kind kind) {
      to = std::min(to, n - 1);
      if (from > to)
        return;
      delta[from].add(bytes, kind);
      delta[to + 1].add(-bytes, kind);
    };
    for (const Buffer &b : buffers) {
      range(b.def, std::min(b.last, b.waited - 1), b.bytes, b.kind);
      if (b.waited != ~0u)
        range(std::max(b.def, b.waited), b.last, b.bytes, b.waitedKind);
    }
    int64_t peak = 0;
    Outer live;
    for (unsigned at = 0; at < n; ++at) {
      live.add(delta[at]);
      int64_t here = live.total + extra[at];
      peak = std::max(peak, here);
      if (!timeline)
        continue;
      plan.gatheredPeak =
          std::max(plan.gatheredPeak, outer.gathered + live.gathered);
      plan.inFlightPeak =
          std::max(plan.inFlightPeak, outer.inFlight + live.inFlight);
      if (outer.total + here > plan.transient) {
        plan.transient = outer.total + here;
        plan.gatheredAtPeak = outer.gathered + live.gathered;
        plan.inFlightAtPeak = outer.inFlight + live.inFlight;
        plan.atPeak = liveAt(buffers, at, outer, true).items;
        // A nested block's peak here is recorded by its own simulation.
      }
    }
    return peak;
  }

private:
  static bool isSingleTrip(scf::ForOp loop) {
    std::optional<APInt> trips = loop.getStaticTripCount();
    return trips && trips->isOne();
  }

  /// The operand result `r` of an elementwise op is written over
  /// (ds-elementwise-in-place; a clipped gradient over the gradient): one
  /// of the result's type, made by an op, that dies at the op.
  static Value dyingOperand(OpResult r, const DenseMap<Value, unsigned> &root) {
    Operation &op = *r.getOwner();
    SmallVector<Value> candidates;
    if (auto clip = dyn_cast<train::ClipGradNormOp>(op)) {
      if (r.getResultNumber() < clip.getGrads().size())
        candidates.push_back(clip.getGrads()[r.getResultNumber()]);
    } else if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op)) {
      candidates.append(op.operand_begin(), op.operand_end());
    }
    for (Value v : candidates) {
      auto it = root.find(v);
      if (v.getType() == r.getType() && it != root.end() && v.getDefiningOp() &&
          mlir::ds::diesAt(v, &op))
        return v;
    }
    return {};
  }

  /// `outer` and the buffers live at `at`; with `madeThere`, those made by
  /// the op at `at` too.
  static Outer liveAt(ArrayRef<Buffer> buffers, unsigned at, Outer outer,
                      bool madeThere) {
    for (const Buffer &b : buffers)
      if ((b.def < at || (madeThere && b.def == at)) && at <= b.last) {
        outer.add(b.bytes, b.kindAt(at));
        if (b.bytes)
          outer.items.push_back({b.bytes, b.origin});
      }
    return outer;
  }

  ModuleOp module;
  PeakMemoryPlan &plan;
  Step &step;
  bool timeline;
  DenseMap<Value, unsigned> snapshotOf;
};

} // namespace

std::optional<PeakMemoryPlan> mlir::ds::planPeakMemory(ModuleOp module,
                                                       StringRef entry,
                                                       StringRef evalEntry) {
  auto fn = module.lookupSymbol<func::FuncOp>(entry);
  if (!fn || fn.isExternal())
    return std::nullopt;
  PeakMemoryPlan plan;
  // The step's first results are the next values of its model states, in
  // argument order, written over the arguments' own buffers (the run side
  // binds each to its argument): held once.
  unsigned updated = 0;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    Type t = fn.getArgumentTypes()[i];
    if (isa<RankedTensorType>(t))
      plan.held += bytesOf(t);
    if (fn.getArgAttr(i, nn::kParamAttrName) ||
        fn.getArgAttr(i, kStateAttrName))
      ++updated;
  }
  for (auto [r, t] : llvm::enumerate(fn.getResultTypes()))
    if (isa<RankedTensorType>(t) && r >= updated)
      plan.held += bytesOf(t);
  BlockPeak::Step step{module, plan, {}, {}};
  module.walk([&](func::CallOp call) { ++step.callSites[call.getCallee()]; });
  BlockPeak(step, true).run(fn.getBody().front(), BlockPeak::Outer(), false);
  // With an eval set, the eval step's buffers are an arena of their own,
  // held from its first call on (its arguments are the step's).
  auto eval = module.lookupSymbol<func::FuncOp>(evalEntry);
  if (eval && !eval.isExternal()) {
    int64_t inside =
        BlockPeak(step, false)
            .run(eval.getBody().front(), BlockPeak::Outer(), false);
    int64_t &peak = step.arenas["@" + evalEntry.str()];
    peak = std::max(peak, inside);
  }
  for (const auto &entry : step.arenas)
    plan.functions += entry.getValue();
  return plan;
}

namespace {

struct PlanMemoryPass : mlir::ds::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  /// The `explain` largest ops' buffers at the transient peak.
  void explainPeak(func::FuncOp fn, const PeakMemoryPlan &p) {
    llvm::MapVector<Operation *, int64_t> byOp;
    for (auto [bytes, op] : p.atPeak)
      byOp[op] += bytes;
    auto ranked = byOp.takeVector();
    llvm::stable_sort(ranked,
                      [](auto &a, auto &b) { return a.second > b.second; });
    InFlightDiagnostic remark = fn.emitRemark()
                                << "ds-plan-memory: the step buffers at the "
                                   "peak, largest first:";
    for (auto &[op, bytes] : llvm::ArrayRef(ranked).take_front(explain)) {
      remark << "\n  " << bytes << " B ";
      if (op)
        remark << op->getName() << " at " << op->getLoc();
      else
        remark << "(a block argument's copy)";
    }
  }

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
    if (std::optional<PeakMemoryPlan> p =
            planPeakMemory(module, entry, evalEntry)) {
      fn.emitRemark() << "ds-plan-memory: peak per rank " << p->total()
                      << " B = arguments and results " << p->held
                      << " B + step buffers " << p->transient
                      << " B (gathered parameters " << p->gatheredAtPeak
                      << " B, in flight " << p->inFlightAtPeak
                      << " B of it) + other functions' buffers " << p->functions
                      << " B; gathered parameters at most " << p->gatheredPeak
                      << " B, in flight at most " << p->inFlightPeak << " B";
      fn->setAttr(
          "ds.planned_peak_bytes",
          IntegerAttr::get(IntegerType::get(&getContext(), 64), p->total()));
      if (explain)
        explainPeak(fn, *p);
    }
  }
};

} // namespace
