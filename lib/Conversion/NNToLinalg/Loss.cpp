//===- Loss.cpp - cross_entropy, its gradient and mse_loss ----------------===//
//
// Cross-entropy works on [N, V] rows: log Σ exp(x − max) + max − x[target]
// never exponentiates a large logit. Rows whose target is ignore_index add
// nothing to the sum nor to the count the mean divides by; all ignored gives
// 0/0 = NaN, as PyTorch does.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

/// Logits (or inputs) [..., V] as [N, V] and targets as [N].
std::pair<Value, Value> flattenRows(OpBuilder &b, Location loc, Value logits,
                                    Value targets) {
  ArrayRef<int64_t> shape = tensorType(logits).getShape();
  int64_t n = numElements(shape.drop_back());
  return {reshapeTo(b, loc, logits, {n, shape.back()}),
          reshapeTo(b, loc, targets, {n})};
}

/// Σ exp(x − max) of [N, V] logits and their [N] row max, in the compute
/// type.
Value rowSumExp(OpBuilder &b, Location loc, Value logits, Value max) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(logits);
  AffineMap id = identityMap(ctx, 2), row = dropDimsMap(ctx, 2, {1});
  return buildReduction(
             b, loc, type.getShape(), ValueRange{logits, max}, {id, row}, {1},
             getComputeType(type.getElementType()), {0.0},
             [](OpBuilder &b, Location loc,
                ValueRange a) -> SmallVector<Value> {
               Value e = math::ExpOp::create(
                   b, loc, arith::SubFOp::create(b, loc, a[0], a[1]));
               return {arith::AddFOp::create(b, loc, e, a[2])};
             })
      .front();
}

/// Row max and Σ exp(x − max) of [N, V] logits, both [N] in the compute type.
std::pair<Value, Value> rowMaxAndSumExp(OpBuilder &b, Location loc,
                                        Value logits) {
  auto type = tensorType(logits);
  Type ct = getComputeType(type.getElementType());
  Value max =
      buildReduction(
          b, loc, type.getShape(), logits, identityMap(b.getContext(), 2), {1},
          ct, {-INFINITY},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            return {arith::MaximumFOp::create(b, loc, a[0], a[1])};
          })
          .front();
  return {max, rowSumExp(b, loc, logits, max)};
}

/// A per-position statistic of [..] rows as [N].
Value flatStat(OpBuilder &b, Location loc, Value v) {
  return reshapeTo(b, loc, v, {numElements(tensorType(v).getShape())});
}

/// The row max and Σ exp(x − max): the operands' when a vocabulary-parallel
/// op carries the whole rows' ones, else computed from the [N, V] logits.
std::pair<Value, Value> rowStats(OpBuilder &b, Location loc, Value logits,
                                 Value max, Value sumExp) {
  if (!max)
    return rowMaxAndSumExp(b, loc, logits);
  return {flatStat(b, loc, max), flatStat(b, loc, sumExp)};
}

/// target != ignore_index.
Value isCounted(OpBuilder &b, Location loc, Value target, int64_t ignore) {
  Value ig = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(target.getType(), ignore));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, target, ig);
}

Value selectOrZero(OpBuilder &b, Location loc, Value cond, Value v) {
  return arith::SelectOp::create(b, loc, cond, v,
                                 floatConst(b, loc, v.getType(), 0.0));
}

/// Applies `fn` to two rank-0 tensors, producing a rank-0 tensor of
/// `elemType`.
Value scalarTensorOp(OpBuilder &b, Location loc, ValueRange ins, Type elemType,
                     BodyFn fn) {
  AffineMap scalar = AffineMap::get(0, 0, b.getContext());
  SmallVector<AffineMap> maps(ins.size(), scalar);
  Value init = emptyTensor(b, loc, {}, elemType);
  return buildGeneric(b, loc, {}, ins, maps, init, scalar, {}, fn).front();
}

/// Σ over rows of -log softmax(logits)[target] and the count of rows, for
/// the rows whose target is not `ignore`: two rank-0 compute-type tensors.
/// `picked` (vocabulary-parallel: the target logits summed over the
/// pieces) replaces the lookup in `logits` when given.
SmallVector<Value> lossAndCount(OpBuilder &b, Location loc, Value logits,
                                Value targets, Value max, Value sumExp,
                                Value picked, int64_t ignore) {
  Type ct = tensorType(max).getElementType();
  int64_t n = tensorType(targets).getDimSize(0);
  AffineMap id = identityMap(b.getContext(), 1);
  SmallVector<Value> ins{targets, max, sumExp};
  if (picked)
    ins.push_back(picked);
  size_t acc = ins.size();
  return buildReduction(
      b, loc, {n}, ins, SmallVector<AffineMap>(acc, id), {0}, ct, {0.0, 0.0},
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        Value valid = isCounted(b, loc, a[0], ignore);
        Value x;
        if (picked) {
          x = a[3];
        } else {
          // An ignored row reads column 0 so the load stays in bounds.
          Value zero = arith::ConstantOp::create(
              b, loc, b.getIntegerAttr(a[0].getType(), 0));
          Value col = arith::IndexCastOp::create(
              b, loc, b.getIndexType(),
              arith::SelectOp::create(b, loc, valid, a[0], zero));
          Value row = linalg::IndexOp::create(b, loc, 0);
          x = convertScalar(
              b, loc,
              tensor::ExtractOp::create(b, loc, logits, ValueRange{row, col}),
              ct);
        }
        Value lse = arith::AddFOp::create(
            b, loc, math::LogOp::create(b, loc, a[2]), a[1]);
        Value loss = arith::SubFOp::create(b, loc, lse, x);
        Value one = floatConst(b, loc, ct, 1.0);
        return {arith::AddFOp::create(b, loc, a[acc],
                                      selectOrZero(b, loc, valid, loss)),
                arith::AddFOp::create(b, loc, a[acc + 1],
                                      selectOrZero(b, loc, valid, one))};
      });
}

/// The number of rows whose target is not `ignore`, a rank-0 tensor.
Value countedRows(OpBuilder &b, Location loc, Value targets, Type ct,
                  int64_t ignore) {
  return buildReduction(b, loc, tensorType(targets).getShape(), targets,
                        identityMap(b.getContext(), 1), {0}, ct, {0.0},
                        [&](OpBuilder &b, Location loc,
                            ValueRange a) -> SmallVector<Value> {
                          Value valid = isCounted(b, loc, a[0], ignore);
                          Value one = floatConst(b, loc, ct, 1.0);
                          return {arith::AddFOp::create(
                              b, loc, a[1], selectOrZero(b, loc, valid, one))};
                        })
      .front();
}

/// dlogits = dloss · (softmax(logits) − onehot(target)) / count for [N, V]
/// logits (columns from `offset` on, when given), 0 on ignored rows, in
/// `elemType`.
Value crossEntropyGradRows(OpBuilder &b, Location loc, Value logits,
                           Value targets, Value max, Value sumExp, Value grad,
                           Value count, Value offset, int64_t ignore,
                           Type elemType) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = tensorType(logits).getShape();
  Type ct = tensorType(max).getElementType();
  AffineMap id = identityMap(ctx, 2), row = dropDimsMap(ctx, 2, {1});
  AffineMap scalar = AffineMap::get(2, 0, ctx);
  return buildGeneric(
             b, loc, shape,
             ValueRange{logits, targets, max, sumExp, grad, count},
             {id, row, row, row, scalar, scalar},
             emptyTensor(b, loc, shape, elemType), id, {},
             [&](OpBuilder &b, Location loc,
                 ValueRange a) -> SmallVector<Value> {
               Value p = arith::DivFOp::create(
                   b, loc,
                   math::ExpOp::create(
                       b, loc, arith::SubFOp::create(b, loc, a[0], a[2])),
                   a[3]);
               Value col = arith::IndexCastOp::create(
                   b, loc, a[1].getType(), linalg::IndexOp::create(b, loc, 1));
               // A piece's column c is the vocabulary's offset + c.
               if (offset)
                 col = arith::AddIOp::create(
                     b, loc, col,
                     offset.getType() == col.getType()
                         ? offset
                         : arith::TruncIOp::create(b, loc, col.getType(),
                                                   offset));
               Value hit = arith::CmpIOp::create(
                   b, loc, arith::CmpIPredicate::eq, col, a[1]);
               Value onehot =
                   selectOrZero(b, loc, hit, floatConst(b, loc, ct, 1.0));
               Value scale = arith::DivFOp::create(b, loc, a[4], a[5]);
               Value g = arith::MulFOp::create(
                   b, loc, scale, arith::SubFOp::create(b, loc, p, onehot));
               return {
                   selectOrZero(b, loc, isCounted(b, loc, a[1], ignore), g)};
             })
      .front();
}

struct CrossEntropyLowering : OpRewritePattern<nn::CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    int64_t ignore = op.getIgnoreIndexAttr().getInt();
    auto [logits, targets] =
        flattenRows(rewriter, loc, op.getLogits(), op.getTargets());
    auto [max, sumExp] =
        rowStats(rewriter, loc, logits, op.getMax(), op.getSumExp());
    Value picked;
    if (op.getPicked())
      picked = flatStat(rewriter, loc, op.getPicked());
    SmallVector<Value> totals =
        lossAndCount(rewriter, loc, logits, targets, max, sumExp, picked, ignore);
    Value mean = scalarTensorOp(
        rewriter, loc, totals, op.getType().getElementType(),
        [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          return {arith::DivFOp::create(b, loc, a[0], a[1])};
        });
    rewriter.replaceOp(op, mean);
    return success();
  }
};

/// dlogits = dloss · (softmax(logits) − onehot(target)) / count, 0 on
/// ignored rows.
struct CrossEntropyGradLowering : OpRewritePattern<nn::CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    int64_t ignore = op.getIgnoreIndexAttr().getInt();
    auto [logits, targets] =
        flattenRows(rewriter, loc, op.getLogits(), op.getTargets());
    auto [max, sumExp] =
        rowStats(rewriter, loc, logits, op.getMax(), op.getSumExp());
    Type ct = tensorType(max).getElementType();
    Value offset = vocabOffset(rewriter, loc, op.getOffset());
    Value count = countedRows(rewriter, loc, targets, ct, ignore);
    Value d = crossEntropyGradRows(rewriter, loc, logits, targets, max, sumExp,
                                   op.getGrad(), count, offset, ignore,
                                   tensorType(logits).getElementType());
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, d, op.getType().getShape()));
    return success();
  }
};

/// Σ exp(x − max) over a vocabulary piece's columns, and the target's
/// logit where the piece holds it (else 0).
struct CrossEntropyPartsLowering : OpRewritePattern<nn::CrossEntropyPartsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::CrossEntropyPartsOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto [logits, targets] =
        flattenRows(rewriter, loc, op.getLogits(), op.getTargets());
    auto type = tensorType(logits);
    Type ct = getComputeType(type.getElementType());
    Value max = flatStat(rewriter, loc, op.getMax());
    Value sum = rowSumExp(rewriter, loc, logits, max);
    Value offset = vocabOffset(rewriter, loc, op.getOffset());
    auto flat = RankedTensorType::get({type.getDimSize(0)}, ct);
    Value picked = buildElementwise(
        rewriter, loc, flat, targets,
        [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          auto [col, inside] =
              pieceRow(b, loc, a[0], offset, type.getDimSize(1));
          Value r = linalg::IndexOp::create(b, loc, 0);
          Value x = convertScalar(
              b, loc,
              tensor::ExtractOp::create(b, loc, logits, ValueRange{r, col}),
              ct);
          return {selectOrZero(b, loc, inside, x)};
        });
    auto shapeOf = [](Value v) { return tensorType(v).getShape(); };
    rewriter.replaceOp(
        op,
        {reshapeTo(rewriter, loc,
                   castElements(rewriter, loc, sum,
                                tensorType(op.getSumExp()).getElementType()),
                   shapeOf(op.getSumExp())),
         reshapeTo(rewriter, loc,
                   castElements(rewriter, loc, picked,
                                tensorType(op.getPicked()).getElementType()),
                   shapeOf(op.getPicked()))});
    return success();
  }
};

/// Rows [start, start + size) of a rank-1 or rank-2 tensor.
Value chunkRows(OpBuilder &b, Location loc, Value v, Value start,
                int64_t size) {
  auto type = tensorType(v);
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = size;
  SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0)),
      sizes, strides(shape.size(), b.getIndexAttr(1));
  offsets[0] = start;
  for (int64_t d : shape)
    sizes.push_back(b.getIndexAttr(d));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, offsets,
      sizes, strides);
}

/// A chunk's logits x·Wᵀ, [rows, V], rounded to x's element type as
/// dsnn.linear's result is (a no-op in f32).
Value chunkLogits(OpBuilder &b, Location loc, Value x, Value w) {
  return castElements(
      b, loc,
      buildMatmul(b, loc, x, w, /*transposeA=*/false, /*transposeB=*/true),
      tensorType(x).getElementType());
}

/// The mean over the chunks: each chunk's loss and count are added to the
/// carried totals, then one division.
struct LinearCrossEntropyLowering
    : OpRewritePattern<nn::LinearCrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LinearCrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    int64_t ignore = op.getIgnoreIndexAttr().getInt();
    auto [x, targets] =
        flattenRows(rewriter, loc, op.getInput(), op.getTargets());
    Type ct = getComputeType(tensorType(x).getElementType());
    int64_t n = tensorType(x).getDimSize(0);
    SmallVector<Value> zeros{filledTensor(rewriter, loc, {}, ct, 0.0),
                             filledTensor(rewriter, loc, {}, ct, 0.0)};
    SmallVector<Value> totals = forEachBlock(
        rewriter, loc, n, op.getChunk(), zeros,
        [&](OpBuilder &b, Location loc, Value start, int64_t size,
            ValueRange carried) -> SmallVector<Value> {
          Value logits = chunkLogits(b, loc, chunkRows(b, loc, x, start, size),
                                     op.getWeight());
          auto [max, sumExp] = rowMaxAndSumExp(b, loc, logits);
          SmallVector<Value> part =
              lossAndCount(b, loc, logits, chunkRows(b, loc, targets, start, size),
                           max, sumExp, Value(), ignore);
          return {addInto(b, loc, part[0], carried[0]),
                  addInto(b, loc, part[1], carried[1])};
        });
    rewriter.replaceOp(
        op, scalarTensorOp(rewriter, loc, totals, op.getType().getElementType(),
                           [](OpBuilder &b, Location loc,
                              ValueRange a) -> SmallVector<Value> {
                             return {arith::DivFOp::create(b, loc, a[0], a[1])};
                           }));
    return success();
  }
};

/// Per chunk: the logits again, dlogits = dloss · (softmax − onehot) /
/// count (0 on ignored rows), its rows of dinput = dlogits·W, and dW +=
/// dlogitsᵀ·x in the compute type, cast once at the end.
struct LinearCrossEntropyGradLowering
    : OpRewritePattern<nn::LinearCrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LinearCrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    int64_t ignore = op.getIgnoreIndexAttr().getInt();
    auto [x, targets] =
        flattenRows(rewriter, loc, op.getInput(), op.getTargets());
    auto xType = tensorType(x);
    Type et = xType.getElementType(), ct = getComputeType(et);
    int64_t n = xType.getDimSize(0);
    ArrayRef<int64_t> wShape = tensorType(op.getWeight()).getShape();

    Value count = countedRows(rewriter, loc, targets, ct, ignore);
    Value dx0 = emptyTensor(rewriter, loc, xType.getShape(), et);
    Value dw0 = filledTensor(rewriter, loc, wShape, ct, 0.0);

    SmallVector<Value> grads = forEachBlock(
        rewriter, loc, n, op.getChunk(), ValueRange{dx0, dw0},
        [&](OpBuilder &b, Location loc, Value start, int64_t size,
            ValueRange carried) -> SmallVector<Value> {
          Value xc = chunkRows(b, loc, x, start, size);
          Value tc = chunkRows(b, loc, targets, start, size);
          Value logits = chunkLogits(b, loc, xc, op.getWeight());
          auto [max, sumExp] = rowMaxAndSumExp(b, loc, logits);
          Value dl = crossEntropyGradRows(b, loc, logits, tc, max, sumExp,
                                          op.getGrad(), count, Value(), ignore,
                                          et);
          Value dxc = castElements(
              b, loc,
              buildMatmul(b, loc, dl, op.getWeight(), /*transposeA=*/false,
                          /*transposeB=*/false),
              et);
          SmallVector<OpFoldResult> offsets{start, b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes{b.getIndexAttr(size),
                                          b.getIndexAttr(xType.getDimSize(1))};
          SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
          Value dx = tensor::InsertSliceOp::create(b, loc, dxc, carried[0],
                                                   offsets, sizes, strides);
          Value dwc = buildMatmul(b, loc, dl, xc, /*transposeA=*/true,
                                  /*transposeB=*/false);
          return {dx, addInto(b, loc, dwc, carried[1])};
        });
    rewriter.replaceOp(
        op, {reshapeTo(rewriter, loc, grads[0],
                       tensorType(op.getInput()).getShape()),
             castElements(rewriter, loc, grads[1], et)});
    return success();
  }
};

struct MSELossLowering : OpRewritePattern<nn::MSELossOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MSELossOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = tensorType(op.getInput());
    ArrayRef<int64_t> shape = type.getShape();
    Type ct = getComputeType(type.getElementType());
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    AffineMap id = identityMap(rewriter.getContext(), shape.size());
    Value sum =
        buildReduction(
            rewriter, loc, shape, ValueRange{op.getInput(), op.getTarget()},
            {id, id}, all, ct, {0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value d = arith::SubFOp::create(b, loc, a[0], a[1]);
              return {arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, d, d), a[2])};
            })
            .front();
    double inv = 1.0 / numElements(shape);
    Value mean = scalarTensorOp(
        rewriter, loc, sum, op.getType().getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
          return {
              arith::MulFOp::create(b, loc, a[0], floatConst(b, loc, ct, inv))};
        });
    rewriter.replaceOp(op, mean);
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateLossPatterns(RewritePatternSet &patterns) {
  patterns.add<CrossEntropyLowering, CrossEntropyGradLowering,
               CrossEntropyPartsLowering, LinearCrossEntropyLowering,
               LinearCrossEntropyGradLowering, MSELossLowering>(
      patterns.getContext());
}
