//===- PromoteAccumulators.cpp - reduction accumulators into iter_args ----===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PROMOTEACCUMULATORS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

// The one load/store pair of `loop` on the same loop-invariant element, if
// the store is the loop's only write and nothing else in it reads that
// memref.
std::optional<std::pair<memref::LoadOp, memref::StoreOp>>
findAccumulator(scf::ForOp loop) {
  memref::StoreOp store;
  bool bad = false;
  loop.getBody()->walk([&](Operation *op) {
    if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store || s->getBlock() != loop.getBody())
        bad = true;
      store = s;
      return;
    }
    if (isa<memref::LoadOp>(op) || isPure(op) || isa<scf::YieldOp>(op) ||
        op->hasTrait<OpTrait::IsTerminator>() || isa<scf::ForOp>(op) ||
        isa<scf::IfOp>(op))
      return;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects || effects.hasEffect<MemoryEffects::Write>() ||
        effects.hasEffect<MemoryEffects::Free>())
      bad = true;
  });
  if (bad || !store)
    return std::nullopt;
  Value mem = store.getMemRef();
  auto invariant = [&](Value v) {
    return !loop->isAncestor(v.getParentRegion()->getParentOp()) &&
           v.getParentRegion() != &loop.getRegion();
  };
  if (!invariant(mem) || !llvm::all_of(store.getIndices(), invariant))
    return std::nullopt;
  memref::LoadOp load;
  bool otherUse = false;
  loop.getBody()->walk([&](memref::LoadOp l) {
    if (l.getMemRef() != mem)
      return;
    if (!load && l->getBlock() == loop.getBody() &&
        l.getIndices() == store.getIndices() && l->isBeforeInBlock(store))
      load = l;
    else
      otherUse = true;
  });
  // Any other use of the memref inside the loop (a view, a call) is unknown.
  for (OpOperand &use : mem.getUses()) {
    Operation *user = use.getOwner();
    if (user != load && user != store && loop->isAncestor(user))
      otherUse = true;
  }
  if (!load || otherUse)
    return std::nullopt;
  return std::make_pair(load, store);
}

struct PromoteAccumulatorsPass
    : public ds::impl::PromoteAccumulatorsBase<PromoteAccumulatorsPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    // Innermost first (post-order walk), so an outer reduction loop sees the
    // inner one already rewritten.
    for (scf::ForOp loop : loops) {
      while (true) {
        auto acc = findAccumulator(loop);
        if (!acc)
          break;
        auto [load, store] = *acc;
        OpBuilder b(loop);
        auto init = memref::LoadOp::create(b, load.getLoc(), load.getMemRef(),
                                           load.getIndices());
        SmallVector<Value> inits(loop.getInitArgs());
        inits.push_back(init);
        auto newLoop =
            scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                               loop.getUpperBound(), loop.getStep(), inits);
        Block *body = newLoop.getBody();
        body->getOperations().splice(body->begin(),
                                     loop.getBody()->getOperations());
        loop.getInductionVar().replaceAllUsesWith(newLoop.getInductionVar());
        for (auto [oldArg, newArg] :
             llvm::zip(loop.getRegionIterArgs(), newLoop.getRegionIterArgs()))
          oldArg.replaceAllUsesWith(newArg);
        Value carried = newLoop.getRegionIterArgs().back();
        load.getResult().replaceAllUsesWith(carried);
        load.erase();
        auto yield = cast<scf::YieldOp>(body->getTerminator());
        SmallVector<Value> yielded(yield.getOperands());
        yielded.push_back(store.getValueToStore());
        OpBuilder yb(yield);
        scf::YieldOp::create(yb, yield.getLoc(), yielded);
        yield.erase();
        OpBuilder after(newLoop->getContext());
        after.setInsertionPointAfter(newLoop);
        memref::StoreOp::create(after, store.getLoc(),
                                newLoop.getResults().back(), store.getMemRef(),
                                store.getIndices());
        store.erase();
        for (auto [oldRes, newRes] :
             llvm::zip(loop.getResults(), newLoop.getResults()))
          oldRes.replaceAllUsesWith(newRes);
        loop.erase();
        loop = newLoop;
      }
    }
  }
};

} // namespace
