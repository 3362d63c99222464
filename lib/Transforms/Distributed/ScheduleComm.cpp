//===- ScheduleComm.cpp - Start collectives early, wait late --------------===//
//
// Gradient reduction buckets first move into the function that makes the
// gradients (under gradient accumulation, into a copy of it that runs the
// last micro-batch after the loop). Then it works on one block at a time
// (each function's top level). First, runs of
// adjacent all-gathers (those ds-zero emits before one op) fuse into one
// when the cost model predicts it pays. Then positions are indices into the
// block's ops, a start is placed "before op k", and a gather's buffer is
// live from its start to its end (the release of its result, else the last
// use). Starts rise in the original order of their collectives, so ranks
// issue them alike.
//
//===----------------------------------------------------------------------===//
#include "SinkReductions.h"
#include "ds/Transforms/CommCostModel.h"
#include "ds/Transforms/CommPrediction.h"
#include "ds/Transforms/Passes.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/FormatVariadic.h"

#include <unistd.h>

namespace mlir::ds {
#define GEN_PASS_DEF_SCHEDULECOMM
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

/// One collective made asynchronous, in block positions.
struct Async {
  Operation *start;
  Operation *wait;
  int64_t elements; // of the delivered buffer
  int64_t bytes;    // of the delivered (all-gather) or reduced buffer
  bool gather;      // counts against the parameter budgets
  size_t earliest;  // its operand exists before op `earliest`
  size_t startAt;   // the start goes before op `startAt`
  size_t waitAt;    // the wait's position
  size_t end;       // last position its buffer is live
  /// Pure ops that compute the start's operand from block arguments (a
  /// cast of a shard, the packing of a fused gather): they rise with it.
  SmallVector<Operation *> carried;
};

Operation *topLevel(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

/// The start form of a blocking collective: same operands and attributes,
/// a handle delivering its result.
Operation *startFormOf(Operation *op, OpBuilder &b) {
  StringRef name;
  if (isa<dist::AllGatherOp>(op))
    name = dist::AllGatherStartOp::getOperationName();
  else if (isa<dist::ReduceScatterOp>(op))
    name = dist::ReduceScatterStartOp::getOperationName();
  else
    name = dist::AllReduceStartOp::getOperationName();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  OperationState state(op->getLoc(), name);
  state.addOperands(op->getOperands());
  state.addAttributes(op->getAttrs());
  state.addTypes(dist::HandleType::get(op->getContext(), type));
  return b.create(state);
}

/// Views ds-zero puts between a gather and its users: they carry the
/// gathered buffer's life.
bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(op);
}

/// A pure op computed from arguments of `block` only (a cast of a shard).
bool isArgumentOnly(Operation *op, Block &block) {
  return isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
         llvm::all_of(op->getOperands(), [&](Value v) {
           return isa<BlockArgument>(v) && v.getParentBlock() == &block;
         });
}

/// The casts and reshapes of `block` that compute `v` from block arguments
/// alone, in block order; nullopt when `v` needs anything else. Only data
/// movement: compute never rises with a start.
std::optional<SmallVector<Operation *>> pureSlice(Value v, Block &block) {
  SmallVector<Operation *> slice;
  SmallVector<Value> work = {v};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(cur)) {
      if (arg.getParentBlock() != &block)
        return std::nullopt;
      continue;
    }
    Operation *def = cur.getDefiningOp();
    if (def->getBlock() != &block ||
        !isa<nn::CastOp, tensor::ConcatOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::ExtractSliceOp>(def))
      return std::nullopt;
    if (!seen.insert(def).second)
      continue;
    slice.push_back(def);
    llvm::append_range(work, def->getOperands());
  }
  llvm::sort(slice,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return slice;
}

/// 90% of this rank's share of the machine's memory, as DeepCompile
/// budgets 90% of the device's: the physical memory over the ranks mpirun
/// started on this host. Not the memory free right now: every rank of a
/// host must compile the same schedule.
int64_t defaultMemoryBudget() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return std::numeric_limits<int64_t>::max();
  double ranks = 1;
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    ranks = std::max(1.0, std::atof(local));
  return static_cast<int64_t>(0.9 * static_cast<double>(pages) *
                              static_cast<double>(page) / ranks);
}

/// The block argument a gather's input comes from, through a cast.
Value gatheredArgument(dist::AllGatherOp g) {
  Value v = g.getInput();
  if (auto castOp = v.getDefiningOp<nn::CastOp>())
    v = castOp.getInput();
  return isa<BlockArgument>(v) ? v : Value();
}

/// The releases of `v` and of its views.
SmallVector<Operation *> releasesOf(Value v) {
  SmallVector<Operation *> out;
  SmallVector<Value> work = {v};
  while (!work.empty())
    for (Operation *user : work.pop_back_val().getUsers()) {
      if (isa<dist::ReleaseOp>(user))
        out.push_back(user);
      else if (isView(user))
        work.push_back(user->getResult(0));
    }
  return out;
}

/// Seconds as microseconds with one decimal.
std::string micros(double seconds) {
  return llvm::formatv("{0:f1}", seconds * 1e6).str();
}

class ScheduleCommPass
    : public mlir::ds::impl::ScheduleCommBase<ScheduleCommPass> {
public:
  using ScheduleCommBase::ScheduleCommBase;
  void runOnOperation() override;

private:
  /// Fuses runs of adjacent all-gathers of `block`.
  void fuseGathers(Block &block);
  /// Keeps forward gathers alive for the backward where the budgets allow;
  /// returns how many.
  int64_t unshard(Block &block);
  /// Whether `unshard` may keep any forward gather for the backward.
  bool keepsForwardGathers() const {
    return selectiveUnshard || maxReuseDistance > 0;
  }
  /// The most gathered bytes and elements live at once in `block`.
  std::pair<int64_t, int64_t> peakGathered(Block &block);
  /// Replaces `run` (gathers of 1-d chunks, same group and type) by one
  /// all-gather of the chunks packed as rows.
  void fuseRun(ArrayRef<dist::AllGatherOp> run, Block &block);
  void scheduleBlock(Block &block);
  /// Last position the value (or a view of it) is used or released.
  size_t lastUse(Value v, Block &block,
                 const DenseMap<Operation *, size_t> &pos);
  /// Sum of budgeted elements (bytes) live / in flight before op k.
  int64_t liveAt(ArrayRef<Async> done, size_t k, bool bytes = false) const;
  int64_t inFlightAt(ArrayRef<Async> done, size_t k) const;
  /// Waits for the oldest gradient reductions before a newer one starts
  /// while more than reduce-bucket-size elements would be in flight.
  void boundReductions(Block &block);
  void emitPlan(Block &block, ArrayRef<Async> placed,
                ArrayRef<Operation *> ops);
  /// Parameters `unshard` kept gathered, per block (for the plan).
  DenseMap<Block *, int64_t> kept;

  CommCostModel model;
  dist::GridAttr grid;
  int64_t budgetBytes = 0;
};

void ScheduleCommPass::fuseRun(ArrayRef<dist::AllGatherOp> run, Block &block) {
  dist::AllGatherOp first = run.front();
  int64_t n = groupSizeOf(first, grid);
  auto elt = cast<RankedTensorType>(first.getType()).getElementType();
  // Each chunk's own pure inputs (a cast of its shard) move up to the run.
  for (dist::AllGatherOp g : run.drop_front())
    if (Operation *def = g.getInput().getDefiningOp();
        def && def->getBlock() == &block && first->isBeforeInBlock(def))
      def->moveBefore(first);
  OpBuilder b(first);
  Location loc = first.getLoc();
  SmallVector<Value> rows;
  SmallVector<int64_t> offsets;
  int64_t total = 0;
  for (dist::AllGatherOp g : run) {
    int64_t c = cast<RankedTensorType>(g.getInput().getType()).getDimSize(0);
    rows.push_back(tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1, c}, elt), g.getInput(),
        ArrayRef<ReassociationIndices>{{0, 1}}));
    offsets.push_back(total);
    total += c;
  }
  Value packed = tensor::ConcatOp::create(b, loc, 1, rows);
  auto fused = dist::AllGatherOp::create(
      b, loc, RankedTensorType::get({n, total}, elt), packed, first.getAxes(),
      b.getI64IntegerAttr(0));
  if (Attribute phase = first->getAttr("phase"))
    fused->setAttr("phase", phase);
  for (auto [k, constG] : llvm::enumerate(run)) {
    dist::AllGatherOp g = constG;
    int64_t c = cast<RankedTensorType>(g.getInput().getType()).getDimSize(0);
    Value mine = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({n, c}, elt), fused, ValueRange{},
        ValueRange{}, ValueRange{}, b.getDenseI64ArrayAttr({0, offsets[k]}),
        b.getDenseI64ArrayAttr({n, c}), b.getDenseI64ArrayAttr({1, 1}));
    Value flat = tensor::CollapseShapeOp::create(
        b, loc, g.getType(), mine, ArrayRef<ReassociationIndices>{{0, 1}});
    g.getResult().replaceAllUsesWith(flat);
  }
  // After the loop: the builder inserts before the first of them.
  for (dist::AllGatherOp g : run)
    g->erase();
  numFused += run.size() - 1;
}

void ScheduleCommPass::fuseGathers(Block &block) {
  SmallVector<dist::AllGatherOp> run;
  int64_t runBytes = 0;
  auto flush = [&] {
    if (run.size() > 1)
      fuseRun(run, block);
    run.clear();
    runBytes = 0;
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto g = dyn_cast<dist::AllGatherOp>(op);
    if (!g) {
      // Only a gather's views and the casts of the next gathers' shards
      // may sit between the gathers of a run.
      if (!isView(&op) && !isArgumentOnly(&op, block))
        flush();
      continue;
    }
    auto in = cast<RankedTensorType>(g.getInput().getType());
    Value input = g.getInput();
    bool ready =
        isa<BlockArgument>(input) ||
        (input.getDefiningOp() && isArgumentOnly(input.getDefiningOp(), block));
    bool fits = ready && in.getRank() == 1 && g.getDim() == 0;
    int64_t n = groupSizeOf(g, grid);
    int64_t bytes = bytesOf(g.getType());
    if (fits && !run.empty()) {
      dist::AllGatherOp head = run.front();
      auto kind = CollectiveKind::AllGather;
      double fusedTime = model.seconds(kind, runBytes + bytes, n);
      double longer = std::max(model.seconds(kind, runBytes, n),
                               model.seconds(kind, bytes, n));
      fits =
          head.getAxes() == g.getAxes() &&
          in.getElementType() == head.getInput().getType().getElementType() &&
          head->getAttr("phase") == g->getAttr("phase") &&
          runBytes + bytes < fuseBytes && fusedTime < kFuseGain * longer;
    }
    if (!fits)
      flush();
    if (ready && in.getRank() == 1 && g.getDim() == 0) {
      run.push_back(g);
      runBytes += bytes;
    }
  }
  flush();
}

std::pair<int64_t, int64_t> ScheduleCommPass::peakGathered(Block &block) {
  DenseMap<Operation *, size_t> pos;
  SmallVector<Operation *> ops;
  for (Operation &op : block) {
    pos[&op] = ops.size();
    ops.push_back(&op);
  }
  // +bytes where a gather starts, -bytes after its buffer's last use.
  SmallVector<std::pair<int64_t, int64_t>> delta(ops.size() + 1, {0, 0});
  for (auto g : block.getOps<dist::AllGatherOp>()) {
    size_t from = pos.lookup(g), to = std::max(from, lastUse(g, block, pos));
    int64_t bytes = bytesOf(g.getType()),
            elements = g.getType().getNumElements();
    delta[from].first += bytes;
    delta[from].second += elements;
    delta[to + 1].first -= bytes;
    delta[to + 1].second -= elements;
  }
  std::pair<int64_t, int64_t> live{0, 0}, peak{0, 0};
  for (auto [bytes, elements] : delta) {
    live.first += bytes;
    live.second += elements;
    peak.first = std::max(peak.first, live.first);
    peak.second = std::max(peak.second, live.second);
  }
  return peak;
}

/// Where the memory budget has headroom over the peak of gathered bytes, a
/// parameter's forward gather stays live to its last use in the backward
/// and the backward's gather goes. Which ones: with selective-unshard,
/// DeepCompile's selective gather, greedy, most predicted all-gather time
/// per byte first (the start-up of a small gather dominates its time);
/// else DeepSpeed's stage3_max_reuse_distance, those whose backward gather
/// comes within max-reuse-distance elements of parameters gathered after
/// the forward one, the nearest first. Each kept buffer is counted as if it
/// were live at the peak, and its elements against max-live-parameters too.
int64_t ScheduleCommPass::unshard(Block &block) {
  struct Candidate {
    dist::AllGatherOp forward, backward;
    double secondsPerByte;
    int64_t reuseDistance;
  };
  // Elements of the parameters gathered before each parameter gather.
  DenseMap<Operation *, int64_t> gatheredBefore;
  int64_t gathered = 0;
  for (auto g : block.getOps<dist::AllGatherOp>())
    if (gatheredArgument(g)) {
      gatheredBefore[g] = gathered;
      gathered += g.getType().getNumElements();
    }
  DenseMap<std::pair<Value, Type>, dist::AllGatherOp> forward;
  SmallVector<Candidate> candidates;
  auto phaseOf = [](Operation *op) {
    auto phase = op->getAttrOfType<StringAttr>("phase");
    return phase ? phase.getValue() : StringRef();
  };
  for (auto g : block.getOps<dist::AllGatherOp>()) {
    Value arg = gatheredArgument(g);
    if (!arg)
      continue;
    std::pair<Value, Type> key{arg, g.getType()};
    if (phaseOf(g) == "forward")
      forward.try_emplace(key, g);
    else if (phaseOf(g) == "backward" && forward.count(key)) {
      int64_t bytes = bytesOf(g.getType());
      double t =
          model.seconds(CollectiveKind::AllGather, bytes, groupSizeOf(g, grid));
      dist::AllGatherOp f = forward.lookup(key);
      int64_t between = gatheredBefore.lookup(g) - gatheredBefore.lookup(f) -
                        f.getType().getNumElements();
      candidates.push_back({f, g, t / double(bytes), between});
      forward.erase(key);
    }
  }
  if (selectiveUnshard) {
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      return a.secondsPerByte > b.secondsPerByte;
    });
  } else {
    llvm::erase_if(candidates, [&](const Candidate &c) {
      return c.reuseDistance > maxReuseDistance;
    });
    llvm::stable_sort(candidates, [](const Candidate &a, const Candidate &b) {
      return a.reuseDistance < b.reuseDistance;
    });
  }
  if (candidates.empty())
    return 0;
  auto [peakBytes, peakElements] = peakGathered(block);
  int64_t count = 0;
  for (Candidate &c : candidates) {
    int64_t bytes = bytesOf(c.forward.getType());
    int64_t elements = c.forward.getType().getNumElements();
    if (peakBytes + bytes > budgetBytes ||
        peakElements + elements > maxLiveParameters)
      continue;
    peakBytes += bytes;
    peakElements += elements;
    for (Operation *release : releasesOf(c.forward.getResult()))
      release->erase();
    Operation *input = c.backward.getInput().getDefiningOp();
    c.backward.getResult().replaceAllUsesWith(c.forward.getResult());
    c.backward->erase();
    if (input && input->use_empty())
      input->erase();
    ++numUnsharded;
    ++count;
  }
  return count;
}

size_t ScheduleCommPass::lastUse(Value v, Block &block,
                                 const DenseMap<Operation *, size_t> &pos) {
  size_t last = 0;
  SmallVector<Value> work = {v};
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    for (Operation *user : cur.getUsers()) {
      Operation *top = topLevel(user, block);
      if (!top)
        continue;
      if (top->hasTrait<OpTrait::IsTerminator>())
        return pos.lookup(top);
      last = std::max(last, pos.lookup(top));
      if (user == top && isView(user))
        work.push_back(user->getResult(0));
    }
  }
  return last;
}

int64_t ScheduleCommPass::liveAt(ArrayRef<Async> done, size_t k,
                                 bool bytes) const {
  int64_t sum = 0;
  for (const Async &a : done)
    if (a.gather && a.startAt <= k && k <= a.end)
      sum += bytes ? a.bytes : a.elements;
  return sum;
}

int64_t ScheduleCommPass::inFlightAt(ArrayRef<Async> done, size_t k) const {
  int64_t sum = 0;
  for (const Async &a : done)
    if (a.gather && a.startAt <= k && k < a.waitAt)
      sum += a.elements;
  return sum;
}

void ScheduleCommPass::scheduleBlock(Block &block) {
  SmallVector<Operation *> blocking;
  for (Operation &op : block) {
    if (isa<dist::AllGatherOp>(op) ||
        (overlapReduce && isa<dist::ReduceScatterOp, dist::AllReduceOp>(op)))
      blocking.push_back(&op);
  }
  if (blocking.empty())
    return;

  // Each collective becomes a start and a wait in its place; the wait then
  // sinks to just before the first op that reads the result.
  SmallVector<Async> asyncs;
  DenseSet<Operation *> claimed;
  for (Operation *op : blocking) {
    OpBuilder b(op);
    Operation *start = startFormOf(op, b);
    auto wait = dist::WaitOp::create(
        b, op->getLoc(), op->getResult(0).getType(), start->getResult(0));
    op->getResult(0).replaceAllUsesWith(wait.getResult());
    op->erase();
    Operation *first = nullptr;
    for (Operation *user : wait->getUsers()) {
      Operation *top = topLevel(user, block);
      if (top && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    if (first && wait->getNextNode() != first)
      wait->moveBefore(first);
    auto type = cast<RankedTensorType>(wait.getResult().getType());
    Async a{start,
            wait,
            type.getNumElements(),
            costBytes(start),
            isa<dist::AllGatherStartOp>(start),
            0,
            0,
            0,
            0,
            {}};
    // What computes the operand from arguments alone rises with the start
    // (once: an op two starts share rises with the first).
    if (auto slice = pureSlice(start->getOperand(0), block))
      for (Operation *op : *slice)
        if (claimed.insert(op).second)
          a.carried.push_back(op);
    asyncs.push_back(std::move(a));
    ++numAsync;
  }

  // Positions of the block as it stands, starts and what rises with them
  // excluded (they move).
  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> pos;
  DenseSet<Operation *> moving;
  for (Async &a : asyncs) {
    moving.insert(a.start);
    moving.insert(a.carried.begin(), a.carried.end());
  }
  for (Operation &op : block)
    if (!moving.contains(&op)) {
      pos[&op] = ops.size();
      ops.push_back(&op);
    }

  // Gathers first, then reductions, each kind keeping its own order: a
  // reduction started after a layer's backward must not hold back the
  // gathers of the layers after it, which the runtime then posts ahead of
  // it (it posts a group's collectives in the order started).
  SmallVector<Async *> order;
  for (bool gathers : {true, false})
    for (Async &a : asyncs)
      if (a.gather == gathers)
        order.push_back(&a);
  SmallVector<Async> placed;
  size_t previousStart = 0;
  bool previousGather = true;
  for (Async *ap : order) {
    Async &a = *ap;
    if (a.gather != previousGather)
      previousStart = 0;
    previousGather = a.gather;
    a.waitAt = pos.lookup(a.wait);
    a.end = std::max(a.waitAt, lastUse(a.wait->getResult(0), block, pos));
    Operation *def = a.start->getOperand(0).getDefiningOp();
    a.earliest = def && !pureSlice(a.start->getOperand(0), block)
                     ? pos.lookup(topLevel(def, block)) + 1
                     : 0;
    a.earliest = std::max(a.earliest, previousStart);
    a.startAt = a.waitAt;
    // Rise while the budgets hold at the op the start would pass.
    int64_t ownGather = a.gather ? a.elements : 0;
    int64_t ownBytes = a.gather ? a.bytes : 0;
    if (ownGather <= maxLiveParameters && ownGather <= prefetchBucketSize &&
        ownBytes <= budgetBytes)
      while (a.startAt > a.earliest) {
        size_t k = a.startAt - 1;
        if (liveAt(placed, k) + ownGather > maxLiveParameters ||
            inFlightAt(placed, k) + ownGather > prefetchBucketSize ||
            liveAt(placed, k, /*bytes=*/true) + ownBytes > budgetBytes)
          break;
        a.startAt = k;
      }
    previousStart = a.startAt;
    a.start->moveBefore(ops[a.startAt]);
    for (Operation *op : a.carried)
      op->moveBefore(a.start);
    if (a.startAt < a.waitAt)
      ++numHoisted;
    placed.push_back(std::move(a));
  }
  if (printPlan)
    emitPlan(block, placed, ops);
}

void ScheduleCommPass::boundReductions(Block &block) {
  // A reduction's operand (the bucket of whole gradients) lives until its
  // wait; waited at the function's end, every bucket of the backward would
  // be live at once, a whole gradient of the model. DeepSpeed reduces
  // through buffers of reduce_bucket_size elements; so here a start waits
  // first for the oldest reductions still in flight while the elements in
  // flight would pass that size. Only waits move: the sums are the same.
  struct Flying {
    Operation *wait;
    int64_t elements;
  };
  SmallVector<Flying> inFlight;
  int64_t flying = 0;
  // The block's order before any wait moves: a moved wait is then not
  // visited again.
  SmallVector<Operation *> order;
  for (Operation &op : block)
    order.push_back(&op);
  for (Operation *opPtr : order) {
    Operation &op = *opPtr;
    if (isa<dist::WaitOp>(op)) {
      auto it = llvm::find_if(inFlight,
                              [&](const Flying &f) { return f.wait == &op; });
      if (it != inFlight.end()) {
        flying -= it->elements;
        inFlight.erase(it);
      }
      continue;
    }
    if (!isa<dist::ReduceScatterStartOp, dist::AllReduceStartOp>(op))
      continue;
    Operation *wait = nullptr;
    for (Operation *user : op.getResult(0).getUsers())
      if (isa<dist::WaitOp>(user) && user->getBlock() == &block)
        wait = user;
    if (!wait)
      continue;
    int64_t elements =
        cast<RankedTensorType>(op.getOperand(0).getType()).getNumElements();
    while (!inFlight.empty() && flying + elements > reduceBucketSize) {
      inFlight.front().wait->moveBefore(&op);
      flying -= inFlight.front().elements;
      inFlight.erase(inFlight.begin());
      ++numBounded;
    }
    inFlight.push_back({wait, elements});
    flying += elements;
  }
}

/// One remark per collective and one per function: where the start and
/// the wait are, the predicted communication and the compute between them
/// that hides it, and the most gathered bytes live at once.
void ScheduleCommPass::emitPlan(Block &block, ArrayRef<Async> placed,
                                ArrayRef<Operation *> ops) {
  // Where a start or wait sits, named by the next op that is neither
  // communication nor a view of a gathered buffer.
  auto at = [&](size_t k) {
    while (k < ops.size() &&
           (isa<dist::DistDialect>(ops[k]->getDialect()) || isView(ops[k])))
      ++k;
    if (k == ops.size())
      return std::string("the end");
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "op " << k << " (" << ops[k]->getName();
    if (auto layer = dyn_cast<nn::LayerOp>(ops[k]))
      os << " \"" << layer.getLayerName() << "\"";
    os << ")";
    return s;
  };
  double commTotal = 0, hiddenTotal = 0;
  for (const Async &a : placed) {
    int64_t n = groupSizeOf(a.start, grid);
    double comm = model.seconds(kindOf(a.start), a.bytes, n);
    double flops = 0;
    for (size_t k = a.startAt; k < a.waitAt; ++k)
      flops += flopsOf(ops[k]);
    double compute = flops / kPlanFlopsPerSecond;
    double hidden = std::min(comm, compute);
    commTotal += comm;
    hiddenTotal += hidden;
    a.start->emitRemark() << "ds-schedule-comm: "
                          << collectiveKindName(kindOf(a.start)) << " of "
                          << a.bytes << " B on " << n
                          << " ranks: starts before " << at(a.startAt)
                          << ", waited before " << at(a.waitAt)
                          << "; predicted " << micros(comm)
                          << " us, overlapping " << micros(compute)
                          << " us of compute (" << static_cast<int64_t>(flops)
                          << " flop)";
  }
  int64_t peak = 0;
  for (size_t k = 0; k < ops.size(); ++k)
    peak = std::max(peak, liveAt(placed, k, /*bytes=*/true));
  InFlightDiagnostic remark = block.getParentOp()->emitRemark();
  remark << "ds-schedule-comm: " << placed.size() << " collectives, predicted "
         << micros(commTotal) << " us of communication, " << micros(hiddenTotal)
         << " us of it hidden by compute; peak live gathered parameters "
         << peak << " B";
  if (keepsForwardGathers())
    remark << "; " << kept.lookup(&block)
           << " parameters kept gathered from the forward to the backward";
}

void ScheduleCommPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (maxLiveParameters < 0 || prefetchBucketSize < 0 || maxReuseDistance < 0 ||
      reduceBucketSize < 0 || fuseBytes < 0 || memoryBudget < 0) {
    module.emitError()
        << "ds-schedule-comm: max-live-parameters, prefetch-bucket-size, "
           "max-reuse-distance, reduce-bucket-size (elements), fuse-bytes "
           "and memory-budget (bytes) must be >= 0";
    return signalPassFailure();
  }
  if (!commProfile.empty()) {
    llvm::Expected<CommCostModel> loaded =
        CommCostModel::fromProfile(commProfile);
    if (!loaded) {
      module.emitError() << "ds-schedule-comm: comm-profile "
                         << llvm::toString(loaded.takeError());
      return signalPassFailure();
    }
    model = *loaded;
  }
  grid =
      module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
  budgetBytes = memoryBudget ? memoryBudget : defaultMemoryBudget();
  kept.clear();
  if (overlapReduce) {
    SmallVector<scf::ForOp> loops;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        llvm::append_range(loops, fn.getBody().front().getOps<scf::ForOp>());
    for (scf::ForOp loop : loops)
      numPeeled += peelLastMicroBatch(loop, module);
    SmallVector<Operation *> buckets;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        for (Operation &op : fn.getBody().front())
          if (isa<dist::ReduceScatterOp, dist::AllReduceOp>(op))
            buckets.push_back(&op);
    for (Operation *red : buckets)
      numSunk += sinkReduction(red, module, model, grid);
  }
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    if (keepsForwardGathers())
      kept[&fn.getBody().front()] = unshard(fn.getBody().front());
    if (fuseBytes > 0)
      fuseGathers(fn.getBody().front());
    scheduleBlock(fn.getBody().front());
    if (overlapReduce)
      boundReductions(fn.getBody().front());
  }
}

} // namespace
