//===- SplitInitTensors.cpp - The ds-split-init-tensors pass --------------===//
//
// One-shot bufferization allocates a `tensor.empty` where it stands and
// writes the ops it initializes into that one buffer when it can. CSE
// merges the step's empties of one type, and the zero fills of them, into
// the first: the logits of the last micro-batch then start from the buffer
// of the first micro-batch's, which lives from one to the other (with a
// copy to keep the zeros). A fill per use, and an empty per stretch of
// uses with no layer call between them, each just before its first user,
// keep each buffer's life to its values'. Within a stretch, and for an
// accumulation into what an earlier stretch wrote, sharing is kept:
// bufferization writes one value over the dead one, as tight as it gets.
//
//===----------------------------------------------------------------------===//
#include "CodeCalls.h"
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::ds {
#define GEN_PASS_DEF_SPLITINITTENSORS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// The empty tensor `op` fills, if it is a fill of one (a fresh tensor of
/// one value).
tensor::EmptyOp filledEmpty(Operation *op) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  if (!fill || !fill.hasPureTensorSemantics())
    return {};
  return fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

struct SplitInitTensorsPass
    : ds::impl::SplitInitTensorsBase<SplitInitTensorsPass> {
  using Base::Base;

  /// Calls of defined functions (CodeCalls.h) in `block` before each of
  /// its ops, counting calls nested in an op's regions.
  const DenseMap<Operation *, unsigned> &callsBefore(Block *block) {
    auto [it, fresh] = calls.try_emplace(block);
    if (fresh) {
      unsigned n = 0;
      for (Operation &op : *block) {
        it->second[&op] = n;
        if (ds::runsDefinedFunction(&op))
          ++n;
      }
    }
    return it->second;
  }

  /// The tensor whose buffer `v` is written into: through each
  /// destination-passing op to its init.
  static Value destination(Value v) {
    while (auto dps = v.getDefiningOp<DestinationStyleOpInterface>()) {
      OpOperand *init = dps.getTiedOpOperand(cast<OpResult>(v));
      if (!init)
        break;
      v = init->get();
    }
    return v;
  }

  /// The one of `inits` whose buffer `user` reads a value written into
  /// (and can overwrite it in place: an accumulation into a gradient made
  /// earlier), if any.
  static Value readInit(Operation *user, ArrayRef<Value> inits) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(user);
    if (!dps)
      return {};
    for (Value in : dps.getDpsInputs())
      if (llvm::is_contained(inits, destination(in)))
        return destination(in);
    return {};
  }

  /// Gives `op`'s uses, in program order, a copy of `op` (and of the empty
  /// it fills) just before the first user of each group; `op` itself moves
  /// before the first. A fill's uses are each a group; an empty's uses
  /// with no call between them share one, as bufferization then writes
  /// one value after another into its buffer, packed as tight as it gets,
  /// and so does a use that reads what was written there.
  /// Valid because every operand dominates `op`, which dominates every
  /// user.
  void split(Operation *op) {
    Block *home = op->getBlock();
    SmallVector<std::pair<Operation *, OpOperand *>> uses;
    for (OpOperand &use : op->getUses())
      if (Operation *at = home->findAncestorOpInBlock(*use.getOwner()))
        uses.push_back({at, &use});
    if (uses.empty() || uses.size() != llvm::range_size(op->getUses()))
      return;
    llvm::stable_sort(uses, [](auto &x, auto &y) {
      return x.first != y.first && x.first->isBeforeInBlock(y.first);
    });
    tensor::EmptyOp filled = filledEmpty(op);
    bool fill = static_cast<bool>(filled);
    const DenseMap<Operation *, unsigned> &before = callsBefore(home);
    SmallVector<Value> inits = {op->getResult(0)};
    Value current = inits.front();
    for (auto [k, entry] : llvm::enumerate(uses)) {
      auto [at, use] = entry;
      if (k > 0) {
        Value read = fill ? Value() : readInit(use->getOwner(), inits);
        if (read) {
          current = read;
        } else if (fill ||
                   before.lookup(at) != before.lookup(uses[k - 1].first)) {
          // Before the user's op in this block: a use nested in a loop
          // counts at the loop, and the copy dominates what follows.
          OpBuilder b(at);
          IRMapping map;
          if (fill)
            map.map(filled.getResult(),
                    b.clone(*filled.getOperation())->getResult(0));
          current = b.clone(*op, map)->getResult(0);
          inits.push_back(current);
          ++numSplit;
        }
      }
      use->set(current);
    }
    op->moveBefore(uses.front().first);
    if (fill && filled->hasOneUse() && filled->getBlock() == home)
      filled->moveBefore(op);
  }

  void runOnOperation() override {
    SmallVector<Operation *> fills, empties;
    getOperation().walk([&](Operation *op) {
      if (filledEmpty(op))
        fills.push_back(op);
      else if (isa<tensor::EmptyOp>(op))
        empties.push_back(op);
    });
    // Fills first: a fill's copies bring their own empties, and what is
    // left of an empty's uses after that is its own. The fills moved, so
    // the calls before each op are counted after them (splitting empties
    // moves and adds no call, nor any op that uses an empty).
    for (Operation *fill : fills)
      split(fill);
    calls.clear();
    for (Operation *empty : empties)
      split(empty);
    calls.clear();
  }

  DenseMap<Block *, DenseMap<Operation *, unsigned>> calls;
};

} // namespace
