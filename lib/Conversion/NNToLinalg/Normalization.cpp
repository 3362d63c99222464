//===- Normalization.cpp - layer_norm, rms_norm and their gradients -------===//
//
// Statistics are reduced over the last dim into small per-row tensors
// (mean and 1/σ), recomputed in the backward op rather than kept from the
// forward: two cheap passes over a row instead of a live activation.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

/// Maps over the input's iteration space: the input itself, a per-row
/// statistic (last dim dropped) and a per-channel parameter (last dim only).
struct NormMaps {
  AffineMap id, row, channel;
  NormMaps(MLIRContext *ctx, unsigned rank)
      : id(identityMap(ctx, rank)),
        row(dropDimsMap(ctx, rank, {static_cast<int64_t>(rank) - 1})),
        channel(AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx))) {}
};

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}

/// Row mean and 1/sqrt(var + eps) (biased variance), in the compute type.
std::pair<Value, Value> layerNormStats(OpBuilder &b, Location loc, Value x,
                                       double eps) {
  auto type = tensorType(x);
  ArrayRef<int64_t> shape = type.getShape();
  unsigned rank = shape.size();
  int64_t last = rank - 1;
  Type ct = getComputeType(type.getElementType());
  NormMaps m(b.getContext(), rank);
  double invC = 1.0 / shape.back();

  Value sum = buildReduction(b, loc, shape, x, m.id, {last}, ct, {0.0},
                             [](OpBuilder &b, Location loc,
                                ValueRange a) -> SmallVector<Value> {
                               return {add(b, loc, a[0], a[1])};
                             })
                  .front();
  SmallVector<int64_t> rowShape(shape.drop_back());
  Value mean = buildElementwise(
      b, loc, RankedTensorType::get(rowShape, ct), sum,
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        return {mul(b, loc, a[0], floatConst(b, loc, ct, invC))};
      });
  Value sq =
      buildReduction(
          b, loc, shape, ValueRange{x, mean}, {m.id, m.row}, {last}, ct, {0.0},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            Value d = sub(b, loc, a[0], a[1]);
            return {add(b, loc, mul(b, loc, d, d), a[2])};
          })
          .front();
  Value rstd = buildElementwise(
      b, loc, RankedTensorType::get(rowShape, ct), sq,
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        Value var = mul(b, loc, a[0], floatConst(b, loc, ct, invC));
        return {math::RsqrtOp::create(
            b, loc, add(b, loc, var, floatConst(b, loc, ct, eps)))};
      });
  return {mean, rstd};
}

/// 1/sqrt(mean(x²) + eps) per row, in the compute type.
Value rmsNormStat(OpBuilder &b, Location loc, Value x, double eps) {
  auto type = tensorType(x);
  ArrayRef<int64_t> shape = type.getShape();
  unsigned rank = shape.size();
  Type ct = getComputeType(type.getElementType());
  NormMaps m(b.getContext(), rank);
  double invC = 1.0 / shape.back();
  Value sq =
      buildReduction(
          b, loc, shape, x, m.id, {int64_t(rank) - 1}, ct, {0.0},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            return {add(b, loc, mul(b, loc, a[0], a[0]), a[1])};
          })
          .front();
  return buildElementwise(
      b, loc, RankedTensorType::get(shape.drop_back(), ct), sq,
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        Value ms = mul(b, loc, a[0], floatConst(b, loc, ct, invC));
        return {math::RsqrtOp::create(
            b, loc, add(b, loc, ms, floatConst(b, loc, ct, eps)))};
      });
}

struct LayerNormLowering : OpRewritePattern<nn::LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    NormMaps m(rewriter.getContext(), type.getRank());
    auto [mean, rstd] = layerNormStats(rewriter, loc, op.getInput(),
                                       op.getEpsilon().convertToDouble());
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    Value y =
        buildGeneric(
            rewriter, loc, type.getShape(),
            ValueRange{op.getInput(), mean, rstd, op.getWeight(), op.getBias()},
            {m.id, m.row, m.row, m.channel, m.channel}, init, m.id, {},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value xhat = mul(b, loc, sub(b, loc, a[0], a[1]), a[2]);
              return {add(b, loc, mul(b, loc, xhat, a[3]), a[4])};
            })
            .front();
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct RMSNormLowering : OpRewritePattern<nn::RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    NormMaps m(rewriter.getContext(), type.getRank());
    Value rstd = rmsNormStat(rewriter, loc, op.getInput(),
                             op.getEpsilon().convertToDouble());
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    Value y =
        buildGeneric(
            rewriter, loc, type.getShape(),
            ValueRange{op.getInput(), rstd, op.getWeight()},
            {m.id, m.row, m.channel}, init, m.id, {},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              return {mul(b, loc, mul(b, loc, a[0], a[1]), a[2])};
            })
            .front();
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// Leading dims, the ones dweight/dbias sum over.
SmallVector<int64_t> leadingDims(unsigned rank) {
  SmallVector<int64_t> dims;
  for (unsigned d = 0; d + 1 < rank; ++d)
    dims.push_back(d);
  return dims;
}

/// With g = dy·w and x̂ = (x − mean)·rstd:
///   dx = rstd · (g − mean(g) − x̂ · mean(g·x̂)),
///   dw = Σ_rows dy·x̂,  db = Σ_rows dy.
struct LayerNormGradLowering : OpRewritePattern<nn::LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    ArrayRef<int64_t> shape = type.getShape();
    unsigned rank = shape.size();
    int64_t last = rank - 1;
    Type ct = getComputeType(type.getElementType());
    NormMaps m(rewriter.getContext(), rank);
    double invC = 1.0 / shape.back();
    Value x = op.getInput(), w = op.getWeight(), dy = op.getGrad();
    auto [mean, rstd] =
        layerNormStats(rewriter, loc, x, op.getEpsilon().convertToDouble());

    // Row sums of g and g·x̂.
    SmallVector<Value> sums = buildReduction(
        rewriter, loc, shape, ValueRange{x, dy, w, mean, rstd},
        {m.id, m.id, m.channel, m.row, m.row}, {last}, ct, {0.0, 0.0},
        [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          Value g = mul(b, loc, a[1], a[2]);
          Value xhat = mul(b, loc, sub(b, loc, a[0], a[3]), a[4]);
          return {add(b, loc, g, a[5]),
                  add(b, loc, mul(b, loc, g, xhat), a[6])};
        });
    Value init = emptyTensor(rewriter, loc, shape, type.getElementType());
    Value dx =
        buildGeneric(
            rewriter, loc, shape,
            ValueRange{x, dy, w, mean, rstd, sums[0], sums[1]},
            {m.id, m.id, m.channel, m.row, m.row, m.row, m.row}, init, m.id, {},
            [&](OpBuilder &b, Location loc,
                ValueRange a) -> SmallVector<Value> {
              Value c = floatConst(b, loc, ct, invC);
              Value g = mul(b, loc, a[1], a[2]);
              Value xhat = mul(b, loc, sub(b, loc, a[0], a[3]), a[4]);
              Value t = sub(b, loc, g, mul(b, loc, a[5], c));
              t = sub(b, loc, t, mul(b, loc, xhat, mul(b, loc, a[6], c)));
              return {mul(b, loc, a[4], t)};
            })
            .front();

    SmallVector<Value> params = buildReduction(
        rewriter, loc, shape, ValueRange{x, dy, mean, rstd},
        {m.id, m.id, m.row, m.row}, leadingDims(rank), ct, {0.0, 0.0},
        [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          Value xhat = mul(b, loc, sub(b, loc, a[0], a[2]), a[3]);
          return {add(b, loc, mul(b, loc, a[1], xhat), a[4]),
                  add(b, loc, a[1], a[5])};
        });
    Type wt = tensorType(w).getElementType();
    rewriter.replaceOp(op, {dx, castElements(rewriter, loc, params[0], wt),
                            castElements(rewriter, loc, params[1], wt)});
    return success();
  }
};

/// With g = dy·w and x̂ = x·rstd:
///   dx = rstd · (g − x̂ · mean(g·x̂)),  dw = Σ_rows dy·x̂.
struct RMSNormGradLowering : OpRewritePattern<nn::RMSNormGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::RMSNormGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    ArrayRef<int64_t> shape = type.getShape();
    unsigned rank = shape.size();
    int64_t last = rank - 1;
    Type ct = getComputeType(type.getElementType());
    NormMaps m(rewriter.getContext(), rank);
    double invC = 1.0 / shape.back();
    Value x = op.getInput(), w = op.getWeight(), dy = op.getGrad();
    Value rstd =
        rmsNormStat(rewriter, loc, x, op.getEpsilon().convertToDouble());

    Value sum =
        buildReduction(
            rewriter, loc, shape, ValueRange{x, dy, w, rstd},
            {m.id, m.id, m.channel, m.row}, {last}, ct, {0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value g = mul(b, loc, a[1], a[2]);
              Value xhat = mul(b, loc, a[0], a[3]);
              return {add(b, loc, mul(b, loc, g, xhat), a[4])};
            })
            .front();
    Value init = emptyTensor(rewriter, loc, shape, type.getElementType());
    Value dx =
        buildGeneric(
            rewriter, loc, shape, ValueRange{x, dy, w, rstd, sum},
            {m.id, m.id, m.channel, m.row, m.row}, init, m.id, {},
            [&](OpBuilder &b, Location loc,
                ValueRange a) -> SmallVector<Value> {
              Value g = mul(b, loc, a[1], a[2]);
              Value xhat = mul(b, loc, a[0], a[3]);
              Value s = mul(b, loc, a[4], floatConst(b, loc, ct, invC));
              return {mul(b, loc, a[3], sub(b, loc, g, mul(b, loc, xhat, s)))};
            })
            .front();
    Value dw =
        buildReduction(
            rewriter, loc, shape, ValueRange{x, dy, rstd}, {m.id, m.id, m.row},
            leadingDims(rank), ct, {0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value xhat = mul(b, loc, a[0], a[2]);
              return {add(b, loc, mul(b, loc, a[1], xhat), a[3])};
            })
            .front();
    rewriter.replaceOp(op, {dx, castElements(rewriter, loc, dw,
                                             tensorType(w).getElementType())});
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateNormalizationPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, RMSNormLowering, LayerNormGradLowering,
               RMSNormGradLowering>(patterns.getContext());
}
