//===- PlanBuffers.cpp - static temporaries -> one arena per function -----===//
//
// Every static memref.alloc in a function's entry block whose buffer (and
// every view of it) stays inside the function gets a byte offset in one
// private memref.global, allocated once with the loaded code; buffers whose
// live ranges do not overlap share bytes. Greedy first-fit, largest first:
// simple, and within a few percent of optimal on straight-line step code.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PLANBUFFERS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;          // rounded up to the alignment
  int64_t start = 0, end = 0; // live range, in entry-block op positions
  int64_t offset = 0;
  SmallVector<memref::DeallocOp> deallocs;
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

// Follows every alias of `alloc`'s buffer; returns false if one escapes the
// function (returned, yielded, captured as a raw pointer or used by an op
// we cannot see through). On success `last` is the entry-block position of
// the last use of any alias.
bool traceLiveRange(memref::AllocOp alloc, Block &entry,
                    const DenseMap<Operation *, int64_t> &position,
                    int64_t &last,
                    SmallVectorImpl<memref::DeallocOp> &deallocs) {
  SmallVector<Value> worklist = {alloc.getResult()};
  DenseSet<Value> seen;
  last = position.lookup(alloc);
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (dealloc->getBlock() != &entry)
          return false;
        deallocs.push_back(dealloc);
        continue;
      }
      if (isa<func::ReturnOp, memref::ExtractAlignedPointerAsIndexOp>(user) ||
          isa<RegionBranchTerminatorOpInterface>(user) ||
          isa<BranchOpInterface>(user))
        return false;
      // A region op taking the buffer as an iteration argument may hand it
      // back out: not planned.
      if (user->getNumRegions() > 0 && !isa<ViewLikeOpInterface>(user) &&
          llvm::any_of(user->getResults(), [](Value r) {
            return isa<BaseMemRefType>(r.getType());
          }))
        return false;
      // Any memref result of a user may alias the buffer (views, casts,
      // calls that return an argument): follow it.
      for (Value r : user->getResults())
        if (isa<BaseMemRefType>(r.getType()))
          worklist.push_back(r);
      Operation *top = entry.findAncestorOpInBlock(*user);
      if (!top)
        return false;
      last = std::max(last, position.lookup(top));
    }
  }
  return true;
}

int64_t roundUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// First fit, largest first: each buffer goes to the lowest offset that does
// not overlap a placed buffer whose live range overlaps its own.
int64_t assignOffsets(MutableArrayRef<Buffer> buffers, bool reuse) {
  SmallVector<Buffer *> order;
  for (Buffer &b : buffers)
    order.push_back(&b);
  if (!reuse) {
    int64_t total = 0;
    for (Buffer *b : order) {
      b->offset = total;
      total += b->bytes;
    }
    return total;
  }
  llvm::stable_sort(order, [](Buffer *x, Buffer *y) {
    return x->bytes != y->bytes ? x->bytes > y->bytes : x->start < y->start;
  });
  SmallVector<Buffer *> placed;
  int64_t total = 0;
  for (Buffer *b : order) {
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (Buffer *p : placed)
      if (p->start <= b->end && b->start <= p->end)
        busy.push_back({p->offset, p->offset + p->bytes});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + b->bytes <= lo)
        break;
      offset = std::max(offset, hi);
    }
    b->offset = offset;
    total = std::max(total, offset + b->bytes);
    placed.push_back(b);
  }
  return total;
}

struct PlanBuffersPass : public ds::impl::PlanBuffersBase<PlanBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      getOperation().emitError() << "ds-plan-buffers: alignment " << alignment
                                 << " is not a power of two";
      return signalPassFailure();
    }
    SymbolTable symbols(getOperation());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        planFunction(fn, symbols);
  }

  void planFunction(func::FuncOp fn, SymbolTable &symbols) {
    Block &entry = fn.getBody().front();
    DenseMap<Operation *, int64_t> position;
    int64_t i = 0;
    for (Operation &op : entry)
      position[&op] = i++;

    SmallVector<Buffer> buffers;
    for (auto alloc : entry.getOps<memref::AllocOp>()) {
      std::optional<int64_t> bytes = staticBytes(alloc.getType());
      Buffer b;
      if (!bytes || !alloc.getDynamicSizes().empty() ||
          !alloc.getSymbolOperands().empty() ||
          !traceLiveRange(alloc, entry, position, b.end, b.deallocs)) {
        ++numKept;
        continue;
      }
      b.alloc = alloc;
      b.bytes = roundUp(std::max<int64_t>(*bytes, 1), alignment);
      b.start = position.lookup(alloc);
      buffers.push_back(std::move(b));
    }
    if (buffers.empty())
      return;

    int64_t unplanned = 0;
    for (Buffer &b : buffers)
      unplanned += b.bytes;
    int64_t total = assignOffsets(buffers, reuse);

    MLIRContext *ctx = fn.getContext();
    auto arenaType = MemRefType::get({total}, IntegerType::get(ctx, 8));
    OpBuilder mb(ctx);
    mb.setInsertionPoint(fn);
    auto global = memref::GlobalOp::create(
        mb, fn.getLoc(), ("__ds_arena_" + fn.getName()).str(),
        mb.getStringAttr("private"), arenaType,
        /*initial_value=*/mb.getUnitAttr(),
        /*constant=*/false, mb.getI64IntegerAttr(alignment));
    symbols.insert(global); // renames on a clash

    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    Value arena = memref::GetGlobalOp::create(b, fn.getLoc(), arenaType,
                                              global.getSymName());
    for (Buffer &buf : buffers) {
      b.setInsertionPoint(buf.alloc);
      Value offset =
          arith::ConstantIndexOp::create(b, buf.alloc.getLoc(), buf.offset);
      Value view =
          memref::ViewOp::create(b, buf.alloc.getLoc(), buf.alloc.getType(),
                                 arena, offset, ValueRange{});
      buf.alloc.getResult().replaceAllUsesWith(view);
      for (memref::DeallocOp d : buf.deallocs)
        d.erase();
      buf.alloc.erase();
      ++numPlanned;
    }
    fn->setAttr(ds::kWorkspaceBytesAttr, b.getI64IntegerAttr(total));
    fn->setAttr(ds::kWorkspaceUnplannedBytesAttr,
                b.getI64IntegerAttr(unplanned));
    if (report)
      emitRemark(fn.getLoc())
          << "ds-plan-buffers: @" << fn.getName() << ": " << buffers.size()
          << " buffer(s) in a " << total << "-byte arena (" << unplanned
          << " bytes without reuse)";
  }
};

} // namespace
