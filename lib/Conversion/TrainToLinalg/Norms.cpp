//===- Norms.cpp - global_norm, clip_grad_norm and has_overflow -----------===//
//
// All three read every gradient once into a 0-d accumulator (f64 for the
// norms) threaded from one tensor's reduction to the next, so there is no
// per-tensor partial to combine (PyTorch takes the norm of the per-tensor
// norms; the sum of all squares is the same number up to rounding).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "../NNToLinalg/Utils.h"

#include "dstrain/TrainOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;
using namespace mlir::ds::traintolinalg;

namespace {

bool allStatic(ValueRange values) {
  return llvm::all_of(values.getTypes(), [](Type t) {
    return cast<RankedTensorType>(t).hasStaticShape();
  });
}

/// sqrt of the f32 sum of squares, as a scalar.
Value globalNorm(OpBuilder &b, Location loc, ValueRange inputs) {
  Value sum = extractScalar(b, loc, sumOfSquares(b, loc, inputs));
  return math::SqrtOp::create(b, loc, sum);
}

struct GlobalNormLowering : OpRewritePattern<train::GlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(train::GlobalNormOp op,
                                PatternRewriter &rewriter) const override {
    if (!allStatic(op.getInputs()))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    Value result =
        op.getSquared()
            ? extractScalar(rewriter, loc,
                            sumOfSquares(rewriter, loc, op.getInputs(),
                                         op.getInit(),
                                         op.getType().getElementType()))
            : globalNorm(rewriter, loc, op.getInputs());
    rewriter.replaceOp(op, scalarTensor(rewriter, loc, result));
    return success();
  }
};

struct ClipGradNormLowering : OpRewritePattern<train::ClipGradNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(train::ClipGradNormOp op,
                                PatternRewriter &rewriter) const override {
    if (!allStatic(op.getGrads()))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type f32 = rewriter.getF32Type();
    Value norm = op.getNormIn() ? extractScalar(rewriter, loc, op.getNormIn())
                                : globalNorm(rewriter, loc, op.getGrads());

    // min(1, max_norm / (norm + 1e-6)): multiplying by 1 leaves a gradient
    // that needs no clipping as it is, without a branch.
    Value denom = arith::AddFOp::create(rewriter, loc, norm,
                                        floatConst(rewriter, loc, f32, 1e-6));
    Value coef = arith::DivFOp::create(
        rewriter, loc,
        floatConst(rewriter, loc, f32, op.getMaxNorm().convertToDouble()),
        denom);
    coef = arith::MinimumFOp::create(rewriter, loc, coef,
                                     floatConst(rewriter, loc, f32, 1.0));

    SmallVector<Value> results;
    for (Value g : op.getGrads()) {
      auto type = tensorType(g);
      AffineMap id = identityMap(ctx, type.getRank());
      // The gradient is its own init, so bufferization can scale it in place.
      results.push_back(
          buildGeneric(rewriter, loc, type.getShape(), {}, {}, g, id, {},
                       [&](OpBuilder &b, Location loc,
                           ValueRange a) -> SmallVector<Value> {
                         Value c = convertScalar(b, loc, coef, a[0].getType());
                         return {arith::MulFOp::create(b, loc, a[0], c)};
                       })
              .front());
    }
    results.push_back(scalarTensor(rewriter, loc, norm));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct HasOverflowLowering : OpRewritePattern<train::HasOverflowOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(train::HasOverflowOp op,
                                PatternRewriter &rewriter) const override {
    if (!allStatic(op.getInputs()))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value falseVal =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(false));
    Value acc =
        linalg::FillOp::create(
            rewriter, loc, ValueRange{falseVal},
            ValueRange{emptyTensor(rewriter, loc, {}, rewriter.getI1Type())})
            .getResult(0);
    for (auto [i, in] : llvm::enumerate(op.getInputs())) {
      ArrayRef<int64_t> shape = tensorType(in).getShape();
      unsigned rank = shape.size();
      auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      if (i > 0)
        acc = freshAccumulator(rewriter, loc, acc);
      acc = buildGeneric(rewriter, loc, shape, in, identityMap(ctx, rank), acc,
                         AffineMap::get(rank, 0, ctx), all,
                         [&](OpBuilder &b, Location loc,
                             ValueRange a) -> SmallVector<Value> {
                           // |x| == inf or unordered (nan): not finite.
                           Value abs = math::AbsFOp::create(b, loc, a[0]);
                           Value inf =
                               floatConst(b, loc, abs.getType(), INFINITY);
                           Value bad = arith::CmpFOp::create(
                               b, loc, arith::CmpFPredicate::UEQ, abs, inf);
                           return {arith::OrIOp::create(b, loc, a[1], bad)};
                         })
                .front();
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

} // namespace

void mlir::ds::traintolinalg::populateNormPatterns(
    RewritePatternSet &patterns) {
  patterns.add<GlobalNormLowering, ClipGradNormLowering, HasOverflowLowering>(
      patterns.getContext());
}
