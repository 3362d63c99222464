//===- SplitInitTensors.cpp - The ds-split-init-tensors pass --------------===//
//
// One-shot bufferization allocates a `tensor.empty` where it stands and
// writes the ops it initializes into that one buffer when it can. CSE
// merges the step's empties of one type, and the zero fills of them, into
// the first: the logits of the last micro-batch then start from the buffer
// of the first micro-batch's, which lives from one to the other (with a
// copy to keep the zeros). One init per use, just before its user, keeps
// each buffer's life to its own value's.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::ds {
#define GEN_PASS_DEF_SPLITINITTENSORS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// A fill of an empty tensor: a fresh tensor of one value.
bool isFreshFill(Operation *op) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureTensorSemantics() &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

struct SplitInitTensorsPass
    : ds::impl::SplitInitTensorsBase<SplitInitTensorsPass> {
  using Base::Base;

  /// Gives every use of `op`'s result but the first in program order a
  /// copy of `op` (and of the empty it fills) just before the user; moves
  /// `op` before its first user. Valid because every operand dominates
  /// `op`, which dominates every user.
  void split(Operation *op) {
    Block *home = op->getBlock();
    SmallVector<std::pair<Operation *, OpOperand *>> uses;
    for (OpOperand &use : op->getUses())
      if (Operation *at = home->findAncestorOpInBlock(*use.getOwner()))
        uses.push_back({at, &use});
    if (uses.size() != llvm::range_size(op->getUses()))
      return;
    llvm::stable_sort(uses, [](auto &x, auto &y) {
      return x.first != y.first && x.first->isBeforeInBlock(y.first);
    });
    for (auto [at, use] : llvm::drop_begin(uses)) {
      OpBuilder b(use->getOwner());
      IRMapping map;
      if (isFreshFill(op)) {
        Operation *empty =
            cast<linalg::FillOp>(op).getOutputs()[0].getDefiningOp();
        map.map(empty->getResult(0), b.clone(*empty)->getResult(0));
      }
      use->set(b.clone(*op, map)->getResult(0));
      ++numSplit;
    }
    if (uses.empty())
      return;
    op->moveBefore(uses.front().first);
    if (isFreshFill(op)) {
      Operation *empty =
          cast<linalg::FillOp>(op).getOutputs()[0].getDefiningOp();
      if (empty->hasOneUse() && empty->getBlock() == home)
        empty->moveBefore(op);
    }
  }

  void runOnOperation() override {
    SmallVector<Operation *> fills, empties;
    getOperation().walk([&](Operation *op) {
      if (isFreshFill(op))
        fills.push_back(op);
      else if (isa<tensor::EmptyOp>(op))
        empties.push_back(op);
    });
    // Fills first: a fill's copies bring their own empties, and what is
    // left of an empty's uses after that is its own.
    for (Operation *fill : fills)
      split(fill);
    for (Operation *empty : empties)
      split(empty);
  }
};

} // namespace
