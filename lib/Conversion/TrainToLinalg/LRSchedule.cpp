//===- LRSchedule.cpp - lr_schedule ---------------------------------------===//
//
// The schedule's formula (LRScheduleFormula.h) emitted as f64 arith/math on
// the extracted step, then rounded to the f32 rate, as DeepSpeed computes
// the rate in Python floats and hands it to an f32 optimizer. Constants of
// the attribute fold into the formula's literals; a constant step the
// folder does not take (OneCycle) is evaluated by the same formula in C++.
//
//===----------------------------------------------------------------------===//
#include "LRScheduleFormula.h"
#include "Patterns.h"

#include "../NNToLinalg/Utils.h"

#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::traintolinalg;

namespace {

/// The formula as f64 arith and math ops.
struct ArithDomain {
  using Num = Value;
  using Bool = Value;
  OpBuilder &b;
  Location loc;

  Num cst(double v) {
    return nntolinalg::floatConst(b, loc, b.getF64Type(), v);
  }
  Num add(Num x, Num y) { return arith::AddFOp::create(b, loc, x, y); }
  Num sub(Num x, Num y) { return arith::SubFOp::create(b, loc, x, y); }
  Num mul(Num x, Num y) { return arith::MulFOp::create(b, loc, x, y); }
  Num div(Num x, Num y) { return arith::DivFOp::create(b, loc, x, y); }
  Num max(Num x, Num y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Num min(Num x, Num y) { return arith::MinimumFOp::create(b, loc, x, y); }
  Num log(Num x) { return math::LogOp::create(b, loc, x); }
  Num cos(Num x) { return math::CosOp::create(b, loc, x); }
  Num floor(Num x) { return math::FloorOp::create(b, loc, x); }
  Bool lt(Num x, Num y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  Bool le(Num x, Num y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, x, y);
  }
  Num select(Bool c, Num x, Num y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
};

struct LRScheduleLowering : OpRewritePattern<train::LRScheduleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(train::LRScheduleOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<train::WarmupLRAttr, train::WarmupDecayLRAttr,
             train::WarmupCosineLRAttr, train::OneCycleAttr>(op.getSchedule()))
      return rewriter.notifyMatchFailure(op, "unknown schedule");
    Location loc = op.getLoc();
    auto lrType = RankedTensorType::get({}, rewriter.getF32Type());
    // A constant step the folder left alone (OneCycle): evaluate in C++.
    DenseIntElementsAttr step;
    if (matchPattern(op.getStep(), m_Constant(&step)))
      if (std::optional<double> lr = evaluateLRSchedule(
              op.getSchedule(),
              (*step.getValues<APInt>().begin()).getSExtValue())) {
        rewriter.replaceOpWithNewOp<arith::ConstantOp>(
            op, DenseElementsAttr::get(
                    lrType, ArrayRef<float>(static_cast<float>(*lr))));
        return success();
      }
    ArithDomain d{rewriter, loc};
    std::optional<Value> lr = lrScheduleFormula(
        d, op.getSchedule(), stepAsF64(rewriter, loc, op.getStep()));
    Value lr32 =
        arith::TruncFOp::create(rewriter, loc, rewriter.getF32Type(), *lr);
    rewriter.replaceOp(op, scalarTensor(rewriter, loc, lr32));
    return success();
  }
};

} // namespace

void mlir::ds::traintolinalg::populateLRSchedulePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LRScheduleLowering>(patterns.getContext());
}
