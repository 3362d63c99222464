//===- ScheduleComm.cpp - Start collectives early, wait late --------------===//
//
// Works on one block at a time (each function's top level): positions are
// indices into the block's ops as ds-zero left them, a start is placed
// "before op k", and a gather's buffer is live from its start to its end
// (the release of its result, else the last use). Starts rise in the
// original order of their collectives, so ranks issue them alike.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "dsdist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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
  bool gather;      // counts against the parameter budgets
  size_t earliest;  // its operand exists before op `earliest`
  size_t startAt;   // the start goes before op `startAt`
  size_t waitAt;    // the wait's position
  size_t end;       // last position its buffer is live
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

class ScheduleCommPass
    : public mlir::ds::impl::ScheduleCommBase<ScheduleCommPass> {
public:
  using ScheduleCommBase::ScheduleCommBase;
  void runOnOperation() override;

private:
  void scheduleBlock(Block &block);
  /// Last position the value (or a view of it) is used or released.
  size_t lastUse(Value v, Block &block,
                 const DenseMap<Operation *, size_t> &pos);
  /// Sum of budgeted elements live / in flight before op k.
  int64_t liveAt(ArrayRef<Async> done, size_t k) const;
  int64_t inFlightAt(ArrayRef<Async> done, size_t k) const;
};

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

int64_t ScheduleCommPass::liveAt(ArrayRef<Async> done, size_t k) const {
  int64_t sum = 0;
  for (const Async &a : done)
    if (a.gather && a.startAt <= k && k <= a.end)
      sum += a.elements;
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
    asyncs.push_back({start, wait, type.getNumElements(),
                      isa<dist::AllGatherStartOp>(start), 0, 0, 0, 0});
    ++numAsync;
  }

  // Positions of the block as it stands, starts excluded (they move).
  SmallVector<Operation *> ops;
  DenseMap<Operation *, size_t> pos;
  DenseSet<Operation *> starts;
  for (Async &a : asyncs)
    starts.insert(a.start);
  for (Operation &op : block)
    if (!starts.contains(&op)) {
      pos[&op] = ops.size();
      ops.push_back(&op);
    }

  SmallVector<Async> placed;
  size_t previousStart = 0;
  for (Async &a : asyncs) {
    a.waitAt = pos.lookup(a.wait);
    a.end = std::max(a.waitAt, lastUse(a.wait->getResult(0), block, pos));
    Value input = a.start->getOperand(0);
    Operation *def = input.getDefiningOp();
    // A cast of a shard argument (mixed precision) rises with its start.
    bool carryDef =
        def && def->getBlock() == &block && def->hasOneUse() &&
        isMemoryEffectFree(def) &&
        llvm::all_of(def->getOperands(), [&](Value v) {
          return isa<BlockArgument>(v) && v.getParentBlock() == &block;
        });
    a.earliest = def && !carryDef ? pos.lookup(topLevel(def, block)) + 1 : 0;
    a.earliest = std::max(a.earliest, previousStart);
    a.startAt = a.waitAt;
    // Rise while the budgets hold at the op the start would pass.
    int64_t ownGather = a.gather ? a.elements : 0;
    if (ownGather <= maxLiveParameters && ownGather <= prefetchBucketSize)
      while (a.startAt > a.earliest) {
        size_t k = a.startAt - 1;
        if (liveAt(placed, k) + ownGather > maxLiveParameters ||
            inFlightAt(placed, k) + ownGather > prefetchBucketSize)
          break;
        a.startAt = k;
      }
    previousStart = a.startAt;
    a.start->moveBefore(ops[a.startAt]);
    if (carryDef)
      def->moveBefore(a.start);
    if (a.startAt < a.waitAt)
      ++numHoisted;
    placed.push_back(a);
  }
}

void ScheduleCommPass::runOnOperation() {
  if (maxLiveParameters < 0 || prefetchBucketSize < 0) {
    getOperation().emitError()
        << "ds-schedule-comm: max-live-parameters and prefetch-bucket-size "
           "must be >= 0 (elements)";
    return signalPassFailure();
  }
  for (auto fn : getOperation().getOps<func::FuncOp>())
    if (!fn.isExternal())
      scheduleBlock(fn.getBody().front());
}

} // namespace
