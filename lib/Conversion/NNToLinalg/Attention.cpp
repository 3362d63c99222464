//===- Attention.cpp - attention and attention_grad -----------------------===//
//
// softmax(Q·Kᵀ·scale + mask)·V as batch matmuls around one masked, scaled
// softmax; leading dims fold into a single batch dim. The gradient
// recomputes the probabilities (memory over FLOPs, as the op's contract
// says) and needs four more batch matmuls.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

/// [..., T, D] -> [prod(...), T, D].
Value foldBatch(OpBuilder &b, Location loc, Value v) {
  ArrayRef<int64_t> s = tensorType(v).getShape();
  size_t r = s.size();
  return reshapeTo(b, loc, v,
                   {numElements(s.drop_back(2)), s[r - 2], s[r - 1]});
}

double scaleOf(std::optional<APFloat> scale, Value query) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(double(tensorType(query).getShape().back()));
}

/// P = softmax(Q·Kᵀ·scale, masked above the diagonal when causal), [B, Tq,
/// Tk] in the compute type.
Value attentionProbs(OpBuilder &b, Location loc, Value q, Value k, bool causal,
                     double scale) {
  Value s = buildMatmul(b, loc, q, k, /*transposeA=*/false,
                        /*transposeB=*/true);
  auto type = tensorType(s);
  Type ct = type.getElementType();
  Value logits = buildElementwise(
      b, loc, type, s,
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        Value scaled =
            arith::MulFOp::create(b, loc, a[0], floatConst(b, loc, ct, scale));
        if (!causal)
          return {scaled};
        Value i = linalg::IndexOp::create(b, loc, 1);
        Value j = linalg::IndexOp::create(b, loc, 2);
        Value future =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j, i);
        return {arith::SelectOp::create(
            b, loc, future, floatConst(b, loc, ct, -INFINITY), scaled)};
      });
  return buildSoftmax(b, loc, logits, 2, /*log=*/false);
}

struct AttentionLowering : OpRewritePattern<nn::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    Value q = foldBatch(rewriter, loc, op.getQuery());
    Value k = foldBatch(rewriter, loc, op.getKey());
    Value v = foldBatch(rewriter, loc, op.getValue());
    Value p = attentionProbs(rewriter, loc, q, k, op.getCausal(),
                             scaleOf(op.getScale(), op.getQuery()));
    Value o = buildMatmul(rewriter, loc, p, v, false, false);
    o = castElements(rewriter, loc, o, type.getElementType());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, o, type.getShape()));
    return success();
  }
};

/// With P the probabilities and dO the output cotangent:
///   dV = Pᵀ·dO,  dP = dO·Vᵀ,  dS = P·(dP − Σ_j dP·P)·scale,
///   dQ = dS·K,   dK = dSᵀ·Q.
/// Masked entries have P = 0, so dS is 0 there without a second mask.
struct AttentionGradLowering : OpRewritePattern<nn::AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    double scale = scaleOf(op.getScale(), op.getQuery());
    Value q = foldBatch(rewriter, loc, op.getQuery());
    Value k = foldBatch(rewriter, loc, op.getKey());
    Value v = foldBatch(rewriter, loc, op.getValue());
    Value dO = foldBatch(rewriter, loc, op.getGrad());
    Value p = attentionProbs(rewriter, loc, q, k, op.getCausal(), scale);

    Value dv = buildMatmul(rewriter, loc, p, dO, true, false);
    Value dp = buildMatmul(rewriter, loc, dO, v, false, true);
    auto pType = tensorType(p);
    Type ct = pType.getElementType();
    AffineMap id = identityMap(ctx, 3);
    AffineMap row = dropDimsMap(ctx, 3, {2});
    Value rowSum =
        buildReduction(
            rewriter, loc, pType.getShape(), ValueRange{dp, p}, {id, id}, {2},
            ct, {0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value t = arith::MulFOp::create(b, loc, a[0], a[1]);
              return {arith::AddFOp::create(b, loc, t, a[2])};
            })
            .front();
    Value init = emptyTensor(rewriter, loc, pType.getShape(), ct);
    Value ds =
        buildGeneric(rewriter, loc, pType.getShape(), ValueRange{p, dp, rowSum},
                     {id, id, row}, init, id, {},
                     [&](OpBuilder &b, Location loc,
                         ValueRange a) -> SmallVector<Value> {
                       Value d = arith::SubFOp::create(b, loc, a[1], a[2]);
                       Value g = arith::MulFOp::create(b, loc, a[0], d);
                       return {arith::MulFOp::create(
                           b, loc, g, floatConst(b, loc, ct, scale))};
                     })
            .front();
    Value dq = buildMatmul(rewriter, loc, ds, k, false, false);
    Value dk = buildMatmul(rewriter, loc, ds, q, true, false);

    SmallVector<Value> grads{dq, dk, dv};
    SmallVector<Value> likes{op.getQuery(), op.getKey(), op.getValue()};
    SmallVector<Value> results;
    for (auto [grad, like] : llvm::zip_equal(grads, likes)) {
      auto type = tensorType(like);
      Value g = castElements(rewriter, loc, grad, type.getElementType());
      results.push_back(reshapeTo(rewriter, loc, g, type.getShape()));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext());
}
