//===- OutlineLayers.cpp - The ds-outline-layers pass ---------------------===//
//
// One function per distinct layer body, called once per layer: compile time
// then grows with the number of distinct layers, not with depth.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/Outline.h"
#include "ds/Transforms/Passes.h"
#include "dsnn/NNOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::ds {
#define GEN_PASS_DEF_OUTLINELAYERS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

/// layer_<type>[_backward], made a C identifier (LLVM and the artifact
/// loader see these names).
std::string baseName(nn::LayerOp layer) {
  std::string name = "layer_";
  for (char c : layer.getLayerType())
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (layer->hasAttr("backward"))
    name += "_backward";
  return name;
}

struct OutlineLayersPass : ds::impl::OutlineLayersBase<OutlineLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    FunctionOutliner outliner(getOperation(), "dsnn.layer_count");
    // Inner layers first, so an outer body holds calls when it is compared.
    SmallVector<nn::LayerOp> layers;
    getOperation().walk<WalkOrder::PostOrder>(
        [&](nn::LayerOp layer) { layers.push_back(layer); });
    for (nn::LayerOp layer : layers) {
      Block &body = layer.getBody().front();
      SmallVector<Operation *> ops;
      for (Operation &op : body.without_terminator())
        ops.push_back(&op);
      if (ops.empty()) // nothing to compile: the yielded values are outside
        continue;
      OpBuilder b(layer);
      NamedAttribute type(b.getStringAttr("dsnn.layer_type"),
                          layer.getLayerTypeAttr());
      func::CallOp call = outliner.outline(
          b, ops, body.getTerminator()->getOperands(), baseName(layer), {type});
      layer.replaceAllUsesWith(call.getResults());
      layer.erase();
    }
  }
};

} // namespace
