//===- LossScale.cpp - loss_scale_update ----------------------------------===//
//
// DeepSpeed's DynamicLossScaler.update_scale as selects on scalars: both
// outcomes of the step (overflow or clean) are computed and the overflow
// flag picks one, so the state machine is branch-free IR. DeepSpeed counts
// iterations since the last overflow; `good_steps` is that count, and the
// scale grows when it reaches a multiple of scale_window.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "../NNToLinalg/Utils.h"

#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::traintolinalg;

namespace {

struct LossScaleUpdateLowering : OpRewritePattern<train::LossScaleUpdateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(train::LossScaleUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    auto i64 = [&](int64_t v) {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    auto f32c = [&](double v) {
      return nntolinalg::floatConst(b, loc, f32, v);
    };
    auto select = [&](Value c, Value x, Value y) -> Value {
      return arith::SelectOp::create(b, loc, c, x, y);
    };

    // A static scaler only reports the overflow; its state stays.
    if (std::optional<APFloat> fixed = op.getStaticScale()) {
      Value scale = scalarTensor(b, loc, f32c(fixed->convertToDouble()));
      rewriter.replaceOp(op, {scale, op.getGoodSteps(), op.getHysteresisLeft(),
                              op.getOverflow()});
      return success();
    }

    Value scale = extractScalar(b, loc, op.getScale());
    Value good = extractScalar(b, loc, op.getGoodSteps());
    Value left = extractScalar(b, loc, op.getHysteresisLeft());
    Value overflow = extractScalar(b, loc, op.getOverflow());
    int64_t hysteresis = op.getHysteresis();
    double factor = op.getScaleFactor().convertToDouble();

    // Overflow: once hysteresis is used up the scale drops (not below
    // min_scale), otherwise one more overflow is tolerated.
    Value exhausted =
        hysteresis == 1
            ? Value(arith::ConstantOp::create(b, loc, b.getBoolAttr(true)))
            : Value(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                          left, i64(1)));
    Value lowered = arith::MaximumFOp::create(
        b, loc, arith::DivFOp::create(b, loc, scale, f32c(factor)),
        f32c(op.getMinScale().convertToDouble()));
    Value overflowScale = select(exhausted, lowered, scale);
    Value overflowLeft =
        select(exhausted, left, arith::SubIOp::create(b, loc, left, i64(1)));

    // Clean: every scale_window-th clean step since the last overflow grows
    // the scale and refills the hysteresis (every clean step refills it
    // with consecutive_hysteresis).
    Value cleanGood = arith::AddIOp::create(b, loc, good, i64(1));
    Value grow = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemSIOp::create(b, loc, cleanGood, i64(op.getScaleWindow())),
        i64(0));
    Value cleanScale =
        select(grow, arith::MulFOp::create(b, loc, scale, f32c(factor)), scale);
    Value refill =
        op.getConsecutiveHysteresis()
            ? Value(arith::ConstantOp::create(b, loc, b.getBoolAttr(true)))
            : grow;
    Value cleanLeft = select(refill, i64(hysteresis), left);

    Value newScale = select(overflow, overflowScale, cleanScale);
    Value newGood = select(overflow, i64(0), cleanGood);
    Value newLeft = select(overflow, overflowLeft, cleanLeft);
    rewriter.replaceOp(op, {scalarTensor(b, loc, newScale),
                            scalarTensor(b, loc, newGood),
                            scalarTensor(b, loc, newLeft), op.getOverflow()});
    return success();
  }
};

} // namespace

void mlir::ds::traintolinalg::populateLossScalePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LossScaleUpdateLowering>(patterns.getContext());
}
