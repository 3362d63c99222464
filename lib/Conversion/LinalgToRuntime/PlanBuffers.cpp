//===- PlanBuffers.cpp - static temporaries -> one arena per function -----===//
//
// Every static memref.alloc in a function's entry block or in the body of an
// scf.for (nested in scf.for only, at any depth) whose buffer (and every
// view of it) stays where it was made gets a byte offset in one private
// memref.global, allocated once with the loaded code; buffers whose live
// ranges do not overlap share bytes. Greedy first fit and best fit in
// three orders (largest, longest-lived, largest bytes x lifetime first),
// the smallest arena kept: simple, and on a 0.35B GPT's step every
// function's arena but one is exactly the most bytes live at once (the
// report prints both).
//
// Live ranges are intervals in one pre-order numbering of the function. A
// buffer lives from its alloc to the end of the outermost op of its own
// block that holds a use of it, so a buffer used inside a loop is live for
// the whole loop, and one made in a loop body lives within one iteration.
// Two buffers of different blocks are never live at once unless one's block
// is nested in an op inside the other's range: the intervals say exactly
// that.
//
// A buffer made in a loop body and yielded to the next iteration (the
// micro-batch loop's gradient accumulators: acc' = acc + g in a fresh
// buffer) is read in iteration k+1 while iteration k+1 makes its own. It
// gets two slots used alternately, chosen by the parity of the iteration
// number: iteration k writes slot k mod 2 and reads the other, which holds
// iteration k-1's value. Only when that value dies within iteration k (the
// iteration argument is not yielded again) and the loop's result is not
// carried further out; both slots live from the loop to the last use of
// its result. Rewriting the accumulation in place would save the second
// slot but needs to prove each writer reads every element before writing
// it; alternating slots leave the computation, and so the numbers, as they
// were.
//
// First, a private function's result made in a buffer of its own and
// copied into its out-param at the end is made in the out-param
// (foldOutParamCopies): no arena bytes for it.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PLANBUFFERS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

// A byte range of the arena with its live range.
struct Slot {
  int64_t bytes = 0;          // rounded up to the alignment
  int64_t start = 0, end = 0; // live range, in pre-order op positions
  int64_t offset = 0;
};

struct Buffer {
  memref::AllocOp alloc;
  SmallVector<memref::DeallocOp> deallocs;
  // Indices into the slot list: one, or two when the buffer is carried to
  // the next iteration of its loop (slot[0] for even iterations).
  SmallVector<unsigned, 2> slots;
};

// Byte size of a static memref, or nullopt when the element size is not
// known at this level (index) or the layout is not the identity.
std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace())
    return std::nullopt;
  Type elt = type.getElementType();
  if (!elt.isIntOrFloat())
    return std::nullopt;
  int64_t eltBytes = (elt.getIntOrFloatBitWidth() + 7) / 8;
  return type.getNumElements() * eltBytes;
}

// Pre-order position of every op, and the last position inside it.
struct Numbering {
  DenseMap<Operation *, int64_t> first, last;
  int64_t next = 0;

  void number(Operation *op) {
    first[op] = next++;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &nested : block)
          number(&nested);
    last[op] = next - 1;
  }
};

// Where the aliases of one buffer go, seen from the block that made it.
struct Uses {
  int64_t last = 0; // last position of an op of the block holding a use
  SmallVector<memref::DeallocOp> deallocs;
  SmallVector<unsigned> carried; // operands of the block's scf.yield reached
};

// Follows every alias of `root` within `home`; fails if one escapes (is
// returned, yielded out of a region other than as a loop's next iteration
// argument, captured as a raw pointer, or used by an op we cannot see
// through). Reaching `home`'s own scf.yield (a loop carry) fails unless
// `allowCarry`. Aliases through a loop (its iteration argument, its result)
// may be the buffer or not depending on the trip count: a dealloc of one of
// those fails rather than being dropped.
LogicalResult traceUses(Value root, Block &home, const Numbering &num,
                        bool allowCarry, Uses &uses) {
  SmallVector<std::pair<Value, bool>> worklist = {{root, true}};
  DenseSet<Value> seen;
  uses.last = root.getDefiningOp() ? num.first.lookup(root.getDefiningOp())
                                   : num.first.lookup(&home.front());
  while (!worklist.empty()) {
    auto [v, direct] = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      // Deallocations go away with the allocation: not a use.
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (!direct || dealloc->getBlock() != &home)
          return failure();
        uses.deallocs.push_back(dealloc);
        continue;
      }
      Operation *top = home.findAncestorOpInBlock(*user);
      if (!top)
        return failure();
      uses.last = std::max(uses.last, num.last.lookup(top));
      if (auto yield = dyn_cast<scf::YieldOp>(user)) {
        auto loop = dyn_cast<scf::ForOp>(yield->getParentOp());
        if (!loop)
          return failure();
        unsigned i = use.getOperandNumber();
        if (yield->getBlock() == &home) {
          if (!allowCarry)
            return failure();
          uses.carried.push_back(i);
          continue;
        }
        // A loop nested in `home`: the value comes back as the next
        // iteration's argument and as the loop's result.
        worklist.push_back({loop.getRegionIterArgs()[i], false});
        worklist.push_back({loop->getResult(i), false});
        continue;
      }
      if (auto loop = dyn_cast<scf::ForOp>(user)) {
        if (use.getOperandNumber() < loop.getNumControlOperands())
          return failure();
        unsigned i = use.getOperandNumber() - loop.getNumControlOperands();
        worklist.push_back({loop.getRegionIterArgs()[i], false});
        // With no iterations the result is the initial value.
        worklist.push_back({loop->getResult(i), false});
        continue;
      }
      if (isa<func::ReturnOp, memref::ExtractAlignedPointerAsIndexOp>(user) ||
          isa<RegionBranchTerminatorOpInterface>(user) ||
          isa<BranchOpInterface>(user))
        return failure();
      // Any other region op handing out memrefs may hand out this one.
      if (user->getNumRegions() > 0 && !isa<ViewLikeOpInterface>(user) &&
          llvm::any_of(user->getResults(), [](Value r) {
            return isa<BaseMemRefType>(r.getType());
          }))
        return failure();
      // Any memref result of a user may alias the buffer (views, casts,
      // calls that return an argument): follow it.
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType()))
          worklist.push_back({r, direct});
    }
  }
  return success();
}

int64_t roundUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// The byte ranges of the placed slots live with `s`, sorted.
SmallVector<std::pair<int64_t, int64_t>> busyRanges(ArrayRef<Slot *> placed,
                                                    const Slot &s) {
  SmallVector<std::pair<int64_t, int64_t>> busy;
  for (Slot *p : placed)
    if (p->start <= s.end && s.start <= p->end)
      busy.push_back({p->offset, p->offset + p->bytes});
  llvm::sort(busy);
  return busy;
}

// First fit in `order`: each slot goes to the lowest offset that does not
// overlap a placed slot whose live range overlaps its own. Returns the
// arena's size.
int64_t firstFit(ArrayRef<Slot *> order) {
  SmallVector<Slot *> placed;
  int64_t total = 0;
  for (Slot *s : order) {
    SmallVector<std::pair<int64_t, int64_t>> busy = busyRanges(placed, *s);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + s->bytes <= lo)
        break;
      offset = std::max(offset, hi);
    }
    s->offset = offset;
    total = std::max(total, offset + s->bytes);
    placed.push_back(s);
  }
  return total;
}

// Best fit in `order`: each slot goes to the smallest gap between placed
// slots live with it that holds it (the lowest such gap on a tie), or above
// them all. Fills the holes first fit leaves under a long-lived buffer.
int64_t bestFit(ArrayRef<Slot *> order) {
  SmallVector<Slot *> placed;
  int64_t total = 0;
  for (Slot *s : order) {
    SmallVector<std::pair<int64_t, int64_t>> busy = busyRanges(placed, *s);
    int64_t at = 0, best = -1, bestGap = 0, top = 0;
    for (auto [lo, hi] : busy) {
      if (lo - at >= s->bytes && (best < 0 || lo - at < bestGap)) {
        best = at;
        bestGap = lo - at;
      }
      at = std::max(at, hi);
      top = std::max(top, hi);
    }
    s->offset = best >= 0 ? best : top;
    total = std::max(total, s->offset + s->bytes);
    placed.push_back(s);
  }
  return total;
}

// The most bytes live at once: no packing needs less.
int64_t mostLive(ArrayRef<Slot> slots) {
  SmallVector<std::pair<int64_t, int64_t>> events; // (time, +-bytes)
  for (const Slot &s : slots) {
    events.push_back({s.start, s.bytes});
    events.push_back({s.end + 1, -s.bytes});
  }
  llvm::sort(events, [](auto x, auto y) {
    return x.first != y.first ? x.first < y.first : x.second < y.second;
  });
  int64_t live = 0, most = 0;
  for (auto [t, delta] : events) {
    live += delta;
    most = std::max(most, live);
  }
  return most;
}

int64_t assignOffsets(MutableArrayRef<Slot> slots, bool reuse) {
  SmallVector<Slot *> order;
  for (Slot &s : slots)
    order.push_back(&s);
  if (!reuse) {
    int64_t total = 0;
    for (Slot *s : order) {
      s->offset = total;
      total += s->bytes;
    }
    return total;
  }
  // Largest first packs big buffers tightly; longest-lived first keeps
  // the buffers that span the step (gradients, kept parameters) out of the
  // way of the short ones. Neither wins everywhere: each order is tried and
  // the smallest arena kept.
  auto bySize = [](Slot *x, Slot *y) {
    return x->bytes != y->bytes ? x->bytes > y->bytes : x->start < y->start;
  };
  auto byLife = [](Slot *x, Slot *y) {
    int64_t lx = x->end - x->start, ly = y->end - y->start;
    return lx != ly ? lx > ly : x->bytes > y->bytes;
  };
  auto byArea = [](Slot *x, Slot *y) {
    int64_t ax = x->bytes * (x->end - x->start + 1),
            ay = y->bytes * (y->end - y->start + 1);
    return ax != ay ? ax > ay : x->start < y->start;
  };
  int64_t best = -1;
  SmallVector<int64_t> offsets(slots.size());
  for (auto less : {+bySize, +byLife, +byArea})
    for (auto fit : {firstFit, bestFit}) {
      llvm::stable_sort(order, less);
      int64_t total = fit(order);
      if (best >= 0 && total >= best)
        continue;
      best = total;
      for (auto [k, s] : llvm::enumerate(slots))
        offsets[k] = s.offset;
    }
  for (auto [k, s] : llvm::enumerate(slots))
    s.offset = offsets[k];
  return best;
}

// i1: the loop is in an even iteration ((iv - lb) / step is even). Built at
// the start of the body.
Value evenIteration(scf::ForOp loop) {
  OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
  Location loc = loop.getLoc();
  Value iv = loop.getInductionVar();
  Type type = iv.getType();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getIntegerAttr(type, v)));
  };
  Value n = arith::SubIOp::create(b, loc, iv, loop.getLowerBound());
  n = arith::DivUIOp::create(b, loc, n, loop.getStep());
  Value bit = arith::AndIOp::create(b, loc, n, constant(1));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bit,
                               constant(0));
}

// Bufferization leaves a private function's result that a loop makes in a
// buffer of its own, copied into the out-param at the end: a GPT's
// embedding gradient, 206 MB per rank at 0.35B, held in the layer's arena
// for the whole run, which ds-plan-memory (rightly) does not expect. The
// buffer becomes the out-param itself, as buffer-results-to-out-params'
// hoisting does for a buffer returned directly, and on the condition that
// makes that hoisting sound: the out-param aliases nothing the function
// reads. Checked here at every call: the caller passes a buffer it
// allocated, and passes it once.
void foldOutParamCopies(ModuleOp module) {
  llvm::StringMap<SmallVector<func::CallOp>> calls;
  module.walk([&](func::CallOp call) {
    calls[call.getCallee()].push_back(call);
  });
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto sites = calls.find(fn.getName());
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(fn, module);
    // A public function's out-params are its caller's (train_step's are
    // its own arguments); a private one referenced other than by calls
    // has callers not seen here.
    if (fn.isExternal() || fn.isPublic() || sites == calls.end() || !uses ||
        llvm::range_size(*uses) != sites->second.size())
      continue;
    Block &entry = fn.getBody().front();
    for (auto copy :
         llvm::make_early_inc_range(entry.getOps<memref::CopyOp>())) {
      auto out = dyn_cast<BlockArgument>(copy.getTarget());
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      if (!out || out.getOwner() != &entry || !out.hasOneUse() || !alloc ||
          alloc->getBlock() != &entry || alloc.getType() != out.getType())
        continue;
      // The copy is the last use of the buffer and of every view of it.
      bool usedAfter = false;
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty() && !usedAfter)
        for (Operation *user : worklist.pop_back_val().getUsers()) {
          Operation *at = entry.findAncestorOpInBlock(*user);
          usedAfter |= user != copy && (!at || copy->isBeforeInBlock(at));
          for (Value r : user->getResults())
            if (isa<BaseMemRefType>(r.getType()))
              worklist.push_back(r);
        }
      if (usedAfter)
        continue;
      unsigned i = out.getArgNumber();
      if (!llvm::all_of(sites->second, [&](func::CallOp call) {
            Value passed = call.getOperand(i);
            return passed.getDefiningOp<memref::AllocOp>() &&
                   llvm::count(call.getOperands(), passed) == 1;
          }))
        continue;
      alloc.getResult().replaceAllUsesWith(out);
      copy.erase();
      alloc.erase();
    }
  }
}

struct PlanBuffersPass : public ds::impl::PlanBuffersBase<PlanBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      getOperation().emitError() << "ds-plan-buffers: alignment " << alignment
                                 << " is not a power of two";
      return signalPassFailure();
    }
    foldOutParamCopies(getOperation());
    SymbolTable symbols(getOperation());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        planFunction(fn, symbols);
  }

  // The blocks whose allocations are planned: the entry block and the body
  // of every scf.for nested only in scf.for (not in a parallel loop, whose
  // iterations would share the arena, nor in unstructured control flow).
  static SmallVector<Block *> homeBlocks(func::FuncOp fn) {
    SmallVector<Block *> homes = {&fn.getBody().front()};
    fn.walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      Operation *outer = loop;
      while (outer->getParentOp() != fn) {
        outer = outer->getParentOp();
        if (!isa<scf::ForOp>(outer))
          return;
      }
      if (outer->getBlock() == homes.front())
        homes.push_back(loop.getBody());
    });
    return homes;
  }

  // Plans `alloc` made in `home`, adding its slot(s); false if it stays a
  // heap allocation.
  bool planAlloc(memref::AllocOp alloc, Block &home, const Numbering &num,
                 SmallVectorImpl<Slot> &slots, Buffer &buf) {
    std::optional<int64_t> size = staticBytes(alloc.getType());
    if (!size || !alloc.getDynamicSizes().empty() ||
        !alloc.getSymbolOperands().empty() ||
        alloc.getAlignment().value_or(1) > static_cast<uint64_t>(alignment))
      return false;
    Uses uses;
    if (failed(traceUses(alloc, home, num, /*allowCarry=*/true, uses)))
      return false;
    Slot slot;
    slot.bytes = roundUp(std::max<int64_t>(*size, 1), alignment);
    slot.start = num.first.lookup(alloc);
    slot.end = uses.last;
    if (!uses.carried.empty()) {
      // Carried to the next iteration: its previous value (the iteration
      // argument) must die within the iteration, and the loop's result
      // must stay in the loop's block.
      auto loop = cast<scf::ForOp>(home.getParentOp());
      slot.start = num.first.lookup(loop);
      slot.end = num.last.lookup(loop);
      for (unsigned i : uses.carried) {
        Uses previous, after;
        if (failed(traceUses(loop.getRegionIterArgs()[i], home, num,
                             /*allowCarry=*/false, previous)) ||
            failed(traceUses(loop->getResult(i), *loop->getBlock(), num,
                             /*allowCarry=*/false, after)) ||
            !previous.deallocs.empty() || !after.deallocs.empty())
          return false;
        slot.end = std::max(slot.end, after.last);
      }
    }
    buf.alloc = alloc;
    buf.deallocs = std::move(uses.deallocs);
    buf.slots.push_back(slots.size());
    slots.push_back(slot);
    if (!uses.carried.empty()) {
      buf.slots.push_back(slots.size());
      slots.push_back(slot);
    }
    return true;
  }

  void planFunction(func::FuncOp fn, SymbolTable &symbols) {
    Numbering num;
    num.number(fn);

    SmallVector<Slot> slots;
    SmallVector<Buffer> buffers;
    DenseSet<Operation *> planned;
    for (Block *home : homeBlocks(fn))
      for (auto alloc : home->getOps<memref::AllocOp>()) {
        Buffer buf;
        if (!planAlloc(alloc, *home, num, slots, buf))
          continue;
        planned.insert(alloc);
        buffers.push_back(std::move(buf));
      }
    fn.walk([&](memref::AllocOp alloc) {
      if (!planned.contains(alloc))
        ++numKept;
    });
    if (buffers.empty())
      return;

    int64_t unplanned = 0;
    for (Slot &s : slots)
      unplanned += s.bytes;
    int64_t total = assignOffsets(slots, reuse);

    MLIRContext *ctx = fn.getContext();
    auto arenaType = MemRefType::get({total}, IntegerType::get(ctx, 8));
    OpBuilder mb(ctx);
    mb.setInsertionPoint(fn);
    auto global = memref::GlobalOp::create(
        mb, fn.getLoc(), (ds::kArenaPrefix + fn.getName()).str(),
        mb.getStringAttr("private"), arenaType,
        /*initial_value=*/mb.getUnitAttr(),
        /*constant=*/false, mb.getI64IntegerAttr(alignment));
    symbols.insert(global); // renames on a clash

    OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
    Value arena = memref::GetGlobalOp::create(b, fn.getLoc(), arenaType,
                                              global.getSymName());
    DenseMap<Operation *, Value> even; // per loop with carried buffers
    int64_t numCarried = 0;
    for (Buffer &buf : buffers) {
      Location loc = buf.alloc.getLoc();
      Value offset;
      if (buf.slots.size() == 2) {
        auto loop = cast<scf::ForOp>(buf.alloc->getParentOp());
        Value &isEven = even[loop];
        if (!isEven)
          isEven = evenIteration(loop);
        b.setInsertionPoint(buf.alloc);
        offset = arith::SelectOp::create(
            b, loc, isEven,
            arith::ConstantIndexOp::create(b, loc, slots[buf.slots[0]].offset),
            arith::ConstantIndexOp::create(b, loc, slots[buf.slots[1]].offset));
        ++numCarried;
      } else {
        b.setInsertionPoint(buf.alloc);
        offset =
            arith::ConstantIndexOp::create(b, loc, slots[buf.slots[0]].offset);
      }
      Value view = memref::ViewOp::create(b, loc, buf.alloc.getType(), arena,
                                          offset, ValueRange{});
      buf.alloc.getResult().replaceAllUsesWith(view);
      for (memref::DeallocOp d : buf.deallocs)
        d.erase();
      buf.alloc.erase();
      ++numPlanned;
    }
    numDoubleBuffered += numCarried;
    fn->setAttr(ds::kWorkspaceBytesAttr, b.getI64IntegerAttr(total));
    fn->setAttr(ds::kWorkspaceUnplannedBytesAttr,
                b.getI64IntegerAttr(unplanned));
    if (report) {
      InFlightDiagnostic remark = emitRemark(fn.getLoc());
      remark << "ds-plan-buffers: @" << fn.getName() << ": " << buffers.size()
             << " buffer(s) in a " << total << "-byte arena (" << unplanned
             << " bytes without reuse, " << mostLive(slots)
             << " live at most at once)";
      if (numCarried)
        remark << "; " << numCarried
               << " carried across loop iterations in two slots each";
    }
  }
};

} // namespace
