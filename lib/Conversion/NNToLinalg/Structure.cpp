//===- Structure.cpp - layer, dropout -------------------------------------===//
//
// A dsnn.layer only names a block for partitioning and checkpointing; once
// lowering starts those passes are done, so its body is inlined. Dropout
// lowers only in its identity form: a random mask needs the step's RNG
// state, which the runtime does not provide yet.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

struct InlineLayer : OpRewritePattern<nn::LayerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LayerOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    auto yield = cast<nn::YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&body, op);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DropoutLowering : OpRewritePattern<nn::DropoutOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::DropoutOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getP().isZero())
      return rewriter.notifyMatchFailure(op, "p > 0 needs an RNG stream");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateStructurePatterns(
    RewritePatternSet &patterns) {
  patterns.add<InlineLayer, DropoutLowering>(patterns.getContext());
}
