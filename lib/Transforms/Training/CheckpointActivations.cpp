//===- CheckpointActivations.cpp - Recompute layers in the backward -------===//
//
// Activation checkpointing as a rewrite of the gradient function: blocks of
// `interval` forward layers are copied in front of their first backward
// layer, and everything from there on reads the copy. The forward layers'
// extra results (the saved activations) are then dead once produced, so
// what crosses from the forward to the backward is each block's input.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ds {
#define GEN_PASS_DEF_CHECKPOINTACTIVATIONS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using nn::LayerOp;

namespace {

struct Counts {
  int64_t blocks = 0, layers = 0, dropped = 0;
};

/// Copies `block` (consecutive forward layers of one function body) right
/// before the first backward layer of any of them, and points every use
/// from there on at the copy.
void recomputeBlock(ArrayRef<LayerOp> block,
                    const llvm::StringMap<LayerOp> &backwards, Counts &counts) {
  Operation *first = nullptr;
  for (LayerOp layer : block) {
    auto it = backwards.find((layer.getLayerName() + kBackwardSuffix).str());
    if (it != backwards.end() && (!first || it->second->isBeforeInBlock(first)))
      first = it->second;
  }
  // No backward reads this block: nothing is saved for it.
  if (!first)
    return;

  // The function's results stay the forward's: a stage's output (or a
  // loss computed in a layer) read from the copy would pull the copy into
  // the forward when ds-pipeline-schedule cuts the function.
  Block &body = *first->getBlock();
  auto fromFirst = [&](OpOperand &use) {
    Operation *top = body.findAncestorOpInBlock(*use.getOwner());
    return top != body.getTerminator() &&
           (top == first || first->isBeforeInBlock(top));
  };
  OpBuilder b(first);
  IRMapping copies;
  for (LayerOp layer : block) {
    // The attribute makes the copy differ from the forward layer for CSE.
    b.clone(*layer, copies)->setAttr(kRecomputeAttrName, b.getUnitAttr());
    ++counts.layers;
  }
  for (LayerOp layer : block)
    for (OpResult result : layer->getResults()) {
      bool wasRead = !result.use_empty();
      result.replaceUsesWithIf(copies.lookup(result), fromFirst);
      // Read before, by nothing now: only the backward read it (saved).
      if (wasRead && result.use_empty())
        ++counts.dropped;
    }
  ++counts.blocks;
}

void checkpoint(func::FuncOp fn, int64_t interval, Counts &counts) {
  SmallVector<LayerOp> forwards;
  llvm::StringMap<LayerOp> backwards;
  for (Operation &op : fn.getBody().front()) {
    auto layer = dyn_cast<LayerOp>(op);
    if (!layer)
      continue;
    // Checkpointed once already: another copy would recompute nothing new.
    if (layer->hasAttr(kRecomputeAttrName))
      return;
    if (layer->hasAttr(kBackwardAttrName))
      backwards[layer.getLayerName()] = layer;
    else
      forwards.push_back(layer);
  }
  if (backwards.empty())
    return;
  for (size_t start = 0; start < forwards.size(); start += interval)
    recomputeBlock(
        ArrayRef<LayerOp>(forwards).slice(
            start, std::min<size_t>(interval, forwards.size() - start)),
        backwards, counts);
}

struct CheckpointActivationsPass
    : ds::impl::CheckpointActivationsBase<CheckpointActivationsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (interval < 0) {
      getOperation().emitError()
          << "ds-checkpoint-activations: interval "
          << static_cast<int64_t>(interval)
          << " is negative; use 0 (off) or the number of layers per block";
      return signalPassFailure();
    }
    if (interval == 0)
      return;
    Counts counts;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        checkpoint(fn, interval, counts);
    numBlocks = counts.blocks;
    numLayers = counts.layers;
    numDropped = counts.dropped;
  }
};

} // namespace
