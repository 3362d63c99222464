//===- FoldResultCopies.cpp - The ds-fold-result-copies pass --------------===//
//
// buffer-results-to-out-params writes a result into its out-param in place
// only when the returned buffer is an allocation the function makes; a
// value a call returned (a layer function's out-param the caller allocated)
// is copied into the out-param at the return instead. A pipeline stage's
// forward returns every activation its layers saved that way: each one
// held twice, in the stage's arena and in the caller's buffer, and copied.
// When nothing uses the buffer after the copy and nothing else touches the
// out-param, the buffer is the out-param.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ds {
#define GEN_PASS_DEF_FOLDRESULTCOPIES
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// Whether every use of `buffer` and of its views is an op of `block`
/// before `end` (or nested in one), and none makes it escape (returned,
/// yielded, or captured as a value).
bool usedOnlyBefore(Value buffer, Block &block, Operation *end) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == end)
        continue;
      Operation *at = block.findAncestorOpInBlock(*user);
      if (!at || !at->isBeforeInBlock(end) ||
          user->hasTrait<OpTrait::IsTerminator>())
        return false;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v)
        worklist.append(user->result_begin(), user->result_end());
      else if (isa<memref::CastOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  return true;
}

struct FoldResultCopiesPass
    : ds::impl::FoldResultCopiesBase<FoldResultCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    Block &entry = fn.getBody().front();
    SmallVector<memref::CopyOp> copies(entry.getOps<memref::CopyOp>());
    for (memref::CopyOp copy : copies) {
      auto out = dyn_cast<BlockArgument>(copy.getTarget());
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      if (!out || out.getOwner() != &entry || !out.hasOneUse() || !alloc ||
          alloc->getBlock() != &entry || alloc.getType() != out.getType() ||
          !usedOnlyBefore(alloc, entry, copy))
        continue;
      copy.erase();
      alloc.getResult().replaceAllUsesWith(out);
      alloc.erase();
      ++numFolded;
    }
  }
};

} // namespace
