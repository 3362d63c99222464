//===- Elementwise.cpp - Activations, arithmetic and their gradients ------===//
//
// Each op is one linalg.generic whose body is the scalar formula; operands
// broadcast NumPy-style through the indexing maps, never by materializing a
// broadcast copy.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

// Scalar helpers in the compute type of `like`.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type type;
  Value c(double v) { return floatConst(b, loc, type, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }
  Value erf(Value x) { return math::ErfOp::create(b, loc, x); }
  Value sigmoid(Value x) {
    return div(c(1.0), add(c(1.0), exp(arith::NegFOp::create(b, loc, x))));
  }
};

constexpr double kSqrt2OverPi = 0.7978845608028654; // √(2/π)
constexpr double kInvSqrt2 = 0.7071067811865476;    // 1/√2
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1/√(2π)
constexpr double kGeluCubic = 0.044715;

Value gelu(Scalar s, Value x, nn::GeluApproximation approx) {
  Value half = s.mul(s.c(0.5), x);
  if (approx == nn::GeluApproximation::tanh) {
    Value x3 = s.mul(s.mul(x, x), x);
    Value inner =
        s.mul(s.c(kSqrt2OverPi), s.add(x, s.mul(s.c(kGeluCubic), x3)));
    return s.mul(half, s.add(s.c(1.0), s.tanh(inner)));
  }
  return s.mul(half, s.add(s.c(1.0), s.erf(s.mul(x, s.c(kInvSqrt2)))));
}

Value geluDerivative(Scalar s, Value x, nn::GeluApproximation approx) {
  if (approx == nn::GeluApproximation::tanh) {
    // d/dx ½x(1+t) = ½(1+t) + ½x(1−t²)·√(2/π)(1 + 3·0.044715x²)
    Value x2 = s.mul(x, x);
    Value inner = s.mul(s.c(kSqrt2OverPi),
                        s.add(x, s.mul(s.c(kGeluCubic), s.mul(x2, x))));
    Value t = s.tanh(inner);
    Value dInner = s.mul(s.c(kSqrt2OverPi),
                         s.add(s.c(1.0), s.mul(s.c(3.0 * kGeluCubic), x2)));
    Value left = s.mul(s.c(0.5), s.add(s.c(1.0), t));
    Value right =
        s.mul(s.mul(s.c(0.5), x), s.mul(s.sub(s.c(1.0), s.mul(t, t)), dInner));
    return s.add(left, right);
  }
  // Φ(x) + x·φ(x)
  Value cdf = s.mul(s.c(0.5), s.add(s.c(1.0), s.erf(s.mul(x, s.c(kInvSqrt2)))));
  Value pdf = s.mul(s.c(kInvSqrt2Pi), s.exp(s.mul(s.c(-0.5), s.mul(x, x))));
  return s.add(cdf, s.mul(x, pdf));
}

/// The scalar formula of each op, given its operands in the compute type.
Value scalarFor(nn::GeluOp op, Scalar s, ValueRange a) {
  return gelu(s, a[0], op.getApproximate());
}
Value scalarFor(nn::ReluOp, Scalar s, ValueRange a) {
  return arith::MaximumFOp::create(s.b, s.loc, a[0], s.c(0.0));
}
Value scalarFor(nn::SiluOp, Scalar s, ValueRange a) {
  return s.mul(a[0], s.sigmoid(a[0]));
}
Value scalarFor(nn::TanhOp, Scalar s, ValueRange a) { return s.tanh(a[0]); }
Value scalarFor(nn::ExpOp, Scalar s, ValueRange a) { return s.exp(a[0]); }
Value scalarFor(nn::NegOp, Scalar s, ValueRange a) {
  return arith::NegFOp::create(s.b, s.loc, a[0]);
}
Value scalarFor(nn::RsqrtOp, Scalar s, ValueRange a) {
  return math::RsqrtOp::create(s.b, s.loc, a[0]);
}
Value scalarFor(nn::AddOp, Scalar s, ValueRange a) { return s.add(a[0], a[1]); }
Value scalarFor(nn::SubOp, Scalar s, ValueRange a) { return s.sub(a[0], a[1]); }
Value scalarFor(nn::MulOp, Scalar s, ValueRange a) { return s.mul(a[0], a[1]); }
Value scalarFor(nn::DivOp, Scalar s, ValueRange a) { return s.div(a[0], a[1]); }
Value scalarFor(nn::GeluGradOp op, Scalar s, ValueRange a) {
  return s.mul(a[1], geluDerivative(s, a[0], op.getApproximate()));
}
Value scalarFor(nn::ReluGradOp, Scalar s, ValueRange a) {
  Value pos = arith::CmpFOp::create(s.b, s.loc, arith::CmpFPredicate::OGT, a[0],
                                    s.c(0.0));
  return arith::SelectOp::create(s.b, s.loc, pos, a[1], s.c(0.0));
}
Value scalarFor(nn::SiluGradOp, Scalar s, ValueRange a) {
  // silu' = σ(x)·(1 + x·(1 − σ(x)))
  Value sig = s.sigmoid(a[0]);
  Value d = s.mul(sig, s.add(s.c(1.0), s.mul(a[0], s.sub(s.c(1.0), sig))));
  return s.mul(a[1], d);
}

template <typename OpTy> struct ElementwiseLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    auto resultType = cast<RankedTensorType>(op.getType());
    Type ct = getComputeType(resultType.getElementType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          return {scalarFor(op, Scalar{b, loc, ct}, a)};
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CastLowering : OpRewritePattern<nn::CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::CastOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    rewriter.replaceOp(op, castElements(rewriter, op.getLoc(), op.getInput(),
                                        op.getType().getElementType()));
    return success();
  }
};

/// eq/ne in the operands' own type (float: ordered equal / unordered
/// not-equal, as PyTorch's == and != treat NaN), into an i1 mask.
struct CompareLowering : OpRewritePattern<nn::CompareOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::CompareOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    bool eq = op.getPredicate() == nn::ComparePredicate::eq;
    Value result = buildElementwise(
        rewriter, op.getLoc(), op.getType(), op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          if (isa<FloatType>(a[0].getType()))
            return {arith::CmpFOp::create(b, loc,
                                          eq ? arith::CmpFPredicate::OEQ
                                             : arith::CmpFPredicate::UNE,
                                          a[0], a[1])};
          return {arith::CmpIOp::create(
              b, loc, eq ? arith::CmpIPredicate::eq : arith::CmpIPredicate::ne,
              a[0], a[1])};
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SelectLowering : OpRewritePattern<nn::SelectOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::SelectOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Value result = buildElementwise(
        rewriter, op.getLoc(), op.getType(), op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          return {arith::SelectOp::create(b, loc, a[0], a[1], a[2])};
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Only the backward differs from the identity.
struct GradScaleLowering : OpRewritePattern<nn::GradScaleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::GradScaleOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateElementwisePatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<ElementwiseLowering<nn::GeluOp>, ElementwiseLowering<nn::ReluOp>,
           ElementwiseLowering<nn::SiluOp>, ElementwiseLowering<nn::TanhOp>,
           ElementwiseLowering<nn::ExpOp>, ElementwiseLowering<nn::NegOp>,
           ElementwiseLowering<nn::RsqrtOp>, ElementwiseLowering<nn::AddOp>,
           ElementwiseLowering<nn::SubOp>, ElementwiseLowering<nn::MulOp>,
           ElementwiseLowering<nn::DivOp>, ElementwiseLowering<nn::GeluGradOp>,
           ElementwiseLowering<nn::ReluGradOp>,
           ElementwiseLowering<nn::SiluGradOp>, CastLowering, GradScaleLowering,
           CompareLowering, SelectLowering>(patterns.getContext());
}
