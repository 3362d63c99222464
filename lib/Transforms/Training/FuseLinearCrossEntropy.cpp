//===- FuseLinearCrossEntropy.cpp - LM head and loss in row chunks --------===//
//
// The LM head's logits are the largest tensor of a language model's step
// (batch × sequence × vocabulary), kept for the backward and matched by
// their gradient. Fused with the cross-entropy into one op, the lowering
// makes and drops them a chunk of rows at a time.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"

#include "dsnn/NNOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_FUSELINEARCROSSENTROPY
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

struct FuseLinearCrossEntropyPass
    : mlir::ds::impl::FuseLinearCrossEntropyBase<FuseLinearCrossEntropyPass> {
  using FuseLinearCrossEntropyBase::FuseLinearCrossEntropyBase;

  void runOnOperation() override {
    if (chunk < 1) {
      getOperation().emitError()
          << "ds-fuse-linear-cross-entropy: chunk is "
          << static_cast<int64_t>(chunk)
          << "; give a positive number of rows";
      return signalPassFailure();
    }
    SmallVector<nn::CrossEntropyOp> losses;
    getOperation().walk([&](nn::CrossEntropyOp op) { losses.push_back(op); });
    for (nn::CrossEntropyOp op : losses) {
      // The vocabulary-parallel form reads statistics summed over ranks.
      if (op.getMax())
        continue;
      // Mixed precision widens 16-bit logits for the loss; the fused op
      // rounds each chunk to the head's type the same way.
      Value logitsIn = op.getLogits();
      auto widen = logitsIn.getDefiningOp<nn::CastOp>();
      if (widen) {
        if (!widen->hasOneUse())
          continue;
        logitsIn = widen.getInput();
      }
      auto linear = logitsIn.getDefiningOp<nn::LinearOp>();
      if (!linear || linear.getBias() || !linear->hasOneUse())
        continue;
      auto logits = cast<RankedTensorType>(linear.getType());
      if (!logits.hasStaticShape() || logits.getNumElements() <= minLogits)
        continue;
      OpBuilder b(op);
      Value loss = nn::LinearCrossEntropyOp::create(
          b, op.getLoc(), op.getType(), linear.getInput(), linear.getWeight(),
          op.getTargets(), b.getI64IntegerAttr(chunk),
          op.getIgnoreIndexAttr());
      op.replaceAllUsesWith(loss);
      op.erase();
      if (widen)
        widen.erase();
      linear.erase();
    }
  }
};

} // namespace
