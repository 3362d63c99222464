//===- Attention.cpp - attention and attention_grad -----------------------===//
//
// softmax(Q·Kᵀ·scale + mask)·V as batch matmuls around one masked, scaled
// softmax; leading dims fold into a single batch dim. The gradient
// recomputes the probabilities (memory over FLOPs, as the op's contract
// says) and needs four more batch matmuls.
//
// Past a key length (ds-lower-nn-to-linalg's attention-block-threshold) the
// [B, Tq, Tk] matrices are what the workspace holds, so both lower instead
// as FlashAttention-2 does, in blocks of queries and keys: per query block
// an scf.for over key blocks carries the running row max m, row sum l and
// the unnormalized output, rescaled by exp(m_old - m_new) per block; the
// gradient loops over key blocks and, inside, query blocks, recomputing
// each block's probabilities from the logsumexp m + log l. Causal loops
// leave out the blocks above the diagonal. Every temporary is
// [B, block, block] or per-row, so memory grows linearly in T.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

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

/// Q·Kᵀ·scale, [B, Tq', Tk'] in the compute type, for the queries from
/// `qStart` and keys from `kStart` on (null: from 0), masked at their
/// absolute positions when causal.
Value attentionLogits(OpBuilder &b, Location loc, Value q, Value k,
                      Value qStart, Value kStart, bool causal, double scale) {
  Value s = buildMatmul(b, loc, q, k, /*transposeA=*/false,
                        /*transposeB=*/true);
  auto type = tensorType(s);
  Type ct = type.getElementType();
  return buildElementwise(
      b, loc, type, s,
      [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
        Value scaled =
            arith::MulFOp::create(b, loc, a[0], floatConst(b, loc, ct, scale));
        if (!causal)
          return {scaled};
        Value i = linalg::IndexOp::create(b, loc, 1);
        Value j = linalg::IndexOp::create(b, loc, 2);
        if (qStart)
          i = arith::AddIOp::create(b, loc, i, qStart);
        if (kStart)
          j = arith::AddIOp::create(b, loc, j, kStart);
        Value future =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j, i);
        return {arith::SelectOp::create(
            b, loc, future, floatConst(b, loc, ct, -INFINITY), scaled)};
      });
}

/// P = softmax(Q·Kᵀ·scale, masked above the diagonal when causal), [B, Tq,
/// Tk] in the compute type.
Value attentionProbs(OpBuilder &b, Location loc, Value q, Value k, bool causal,
                     double scale) {
  Value logits = attentionLogits(b, loc, q, k, Value(), Value(), causal, scale);
  return buildSoftmax(b, loc, logits, 2, /*log=*/false);
}

/// Offsets, sizes and strides of rows [start, start + size) of dim 1 of
/// a tensor of `shape` ([B, T] or [B, T, D]).
struct Rows {
  SmallVector<OpFoldResult> offsets, sizes, strides;

  Rows(OpBuilder &b, ArrayRef<int64_t> shape, Value start, int64_t size)
      : strides(shape.size(), b.getIndexAttr(1)) {
    for (auto [d, n] : llvm::enumerate(shape)) {
      offsets.push_back(d == 1 ? getAsOpFoldResult(start) : b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(d == 1 ? size : n));
    }
  }
};

/// Rows [start, start + size) of dim 1 of `v`.
Value rowsOf(OpBuilder &b, Location loc, Value v, Value start, int64_t size) {
  auto type = tensorType(v);
  SmallVector<int64_t> shape(type.getShape());
  shape[1] = size;
  Rows r(b, type.getShape(), start, size);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, r.offsets,
      r.sizes, r.strides);
}

/// `block` written over rows [start, start + size) of dim 1 of `dest`.
Value insertRows(OpBuilder &b, Location loc, Value block, Value dest,
                 Value start) {
  Rows r(b, tensorType(dest).getShape(), start,
         tensorType(block).getDimSize(1));
  return tensor::InsertSliceOp::create(b, loc, block, dest, r.offsets, r.sizes,
                                       r.strides);
}

/// dS = P·(dP − r)·scale, r one value per row ([B, Tq] against [B, Tq, n]).
Value scoreGrad(OpBuilder &b, Location loc, Value p, Value dp, Value r,
                double scale) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(p);
  Type ct = type.getElementType();
  AffineMap id = identityMap(ctx, 3);
  return buildGeneric(b, loc, type.getShape(), ValueRange{p, dp, r},
                      {id, id, dropDimsMap(ctx, 3, {2})},
                      emptyTensor(b, loc, type.getShape(), ct), id, {},
                      [&](OpBuilder &b, Location loc,
                          ValueRange a) -> SmallVector<Value> {
                        Value d = arith::SubFOp::create(b, loc, a[1], a[2]);
                        Value g = arith::MulFOp::create(b, loc, a[0], d);
                        return {arith::MulFOp::create(
                            b, loc, g, floatConst(b, loc, ct, scale))};
                      })
      .front();
}

/// exp(x − r) for x [B, Tq, n] and r one value per row, [B, Tq].
Value expMinusRow(OpBuilder &b, Location loc, Value x, Value r) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(x);
  AffineMap id = identityMap(ctx, 3);
  return buildGeneric(
             b, loc, type.getShape(), ValueRange{x, r},
             {id, dropDimsMap(ctx, 3, {2})},
             emptyTensor(b, loc, type.getShape(), type.getElementType()), id,
             {},
             [](OpBuilder &b, Location loc,
                ValueRange a) -> SmallVector<Value> {
               Value d = arith::SubFOp::create(b, loc, a[0], a[1]);
               return {math::ExpOp::create(b, loc, d)};
             })
      .front();
}

/// The online softmax of one query block (rows from `qStart`) over the key
/// blocks of [0, keyEnd) and then `keyRest` more keys: the row max m and
/// row sum l of exp(logits - m), [B, Tq'], and the unnormalized output
/// Σ_j exp(logits_j - m)·V_j, [B, Tq', Dv]. Operands in the compute type.
struct OnlineSoftmax {
  Value max, sum, out;
};

OnlineSoftmax onlineSoftmax(OpBuilder &b, Location loc, Value q, Value k,
                            Value v, Value qStart, OpFoldResult keyEnd,
                            int64_t keyRest, bool causal, double scale,
                            int64_t blockSize) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> qs = tensorType(q).getShape();
  ArrayRef<int64_t> vs = tensorType(v).getShape();
  Type ct = tensorType(q).getElementType();
  int64_t batch = qs[0], tq = qs[1], dv = vs[2];
  Value max0 = filledTensor(b, loc, {batch, tq}, ct, -INFINITY);
  Value sum0 = filledTensor(b, loc, {batch, tq}, ct, 0.0);
  Value out0 = filledTensor(b, loc, {batch, tq, dv}, ct, 0.0);
  AffineMap id2 = identityMap(ctx, 2), id3 = identityMap(ctx, 3);
  AffineMap row = dropDimsMap(ctx, 3, {2});

  SmallVector<Value> r = forEachBlock(
      b, loc, b.getIndexAttr(0), keyEnd, blockSize, keyRest,
      ValueRange{max0, sum0, out0},
      [&](OpBuilder &b, Location loc, Value start, int64_t size,
          ValueRange c) -> SmallVector<Value> {
        Value m = c[0], l = c[1], o = c[2];
        SmallVector<int64_t> shape{batch, tq, size};
        Value s = attentionLogits(b, loc, q, rowsOf(b, loc, k, start, size),
                                  qStart, start, causal, scale);
        Value blockMax =
            buildReduction(b, loc, shape, s, id3, {2}, ct, {-INFINITY},
                           [](OpBuilder &b, Location loc,
                              ValueRange a) -> SmallVector<Value> {
                             return {
                                 arith::MaximumFOp::create(b, loc, a[0], a[1])};
                           })
                .front();
        // m is -inf before the first block and stays finite after it (a
        // causal row always sees key 0), so alpha is exp(-inf) = 0 there.
        Value mNew = buildElementwise(
            b, loc, tensorType(m), ValueRange{m, blockMax},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              return {arith::MaximumFOp::create(b, loc, a[0], a[1])};
            });
        Value alpha = buildElementwise(
            b, loc, tensorType(m), ValueRange{m, mNew},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value d = arith::SubFOp::create(b, loc, a[0], a[1]);
              return {math::ExpOp::create(b, loc, d)};
            });
        Value p = expMinusRow(b, loc, s, mNew);
        // l·alpha, then the block's sum into it; outs are the carried
        // tensors so that bufferization updates them in place.
        Value lScaled =
            buildGeneric(b, loc, {batch, tq}, alpha, id2, l, id2, {},
                         [](OpBuilder &b, Location loc,
                            ValueRange a) -> SmallVector<Value> {
                           return {arith::MulFOp::create(b, loc, a[1], a[0])};
                         })
                .front();
        Value lNew =
            buildGeneric(b, loc, shape, p, id3, lScaled, row, {2},
                         [](OpBuilder &b, Location loc,
                            ValueRange a) -> SmallVector<Value> {
                           return {arith::AddFOp::create(b, loc, a[0], a[1])};
                         })
                .front();
        Value pv = buildMatmul(b, loc, p, rowsOf(b, loc, v, start, size), false,
                               false);
        Value oNew =
            buildGeneric(b, loc, {batch, tq, dv}, ValueRange{pv, alpha},
                         {id3, row}, o, id3, {},
                         [](OpBuilder &b, Location loc,
                            ValueRange a) -> SmallVector<Value> {
                           Value t = arith::MulFOp::create(b, loc, a[2], a[1]);
                           return {arith::AddFOp::create(b, loc, t, a[0])};
                         })
                .front();
        return {mNew, lNew, oNew};
      });
  return {r[0], r[1], r[2]};
}

/// Attention by query blocks, each an online softmax over key blocks, never
/// materializing [B, Tq, Tk]: the output [B, Tq, Dv] and, when asked, the
/// logsumexp m + log l [B, Tq], in the compute type. A causal query block
/// stops at its diagonal block: the key blocks after it are all masked.
std::pair<Value, Value> blockedAttention(OpBuilder &b, Location loc, Value q,
                                         Value k, Value v, bool causal,
                                         double scale, int64_t blockSize,
                                         bool withLogSumExp) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> qs = tensorType(q).getShape();
  int64_t batch = qs[0], tq = qs[1], tk = tensorType(k).getDimSize(1);
  int64_t dv = tensorType(v).getDimSize(2);
  int64_t wholeKeys = tk / blockSize * blockSize;
  Type ct = tensorType(q).getElementType();
  SmallVector<Value> inits{emptyTensor(b, loc, {batch, tq, dv}, ct)};
  if (withLogSumExp)
    inits.push_back(emptyTensor(b, loc, {batch, tq}, ct));
  SmallVector<Value> r = forEachBlock(
      b, loc, tq, blockSize, inits,
      [&](OpBuilder &b, Location loc, Value start, int64_t size,
          ValueRange c) -> SmallVector<Value> {
        // Causal needs Tq = Tk: a whole query block's keys end with its own
        // block; the last, shorter one sees every key.
        OpFoldResult keyEnd = b.getIndexAttr(wholeKeys);
        int64_t keyRest = tk - wholeKeys;
        if (causal && size == blockSize) {
          keyEnd = arith::AddIOp::create(
                       b, loc, start,
                       arith::ConstantIndexOp::create(b, loc, blockSize))
                       .getResult();
          keyRest = 0;
        }
        OnlineSoftmax f =
            onlineSoftmax(b, loc, rowsOf(b, loc, q, start, size), k, v, start,
                          keyEnd, keyRest, causal, scale, blockSize);
        AffineMap id = identityMap(ctx, 3);
        Value o =
            buildGeneric(b, loc, {batch, size, dv}, ValueRange{f.out, f.sum},
                         {id, dropDimsMap(ctx, 3, {2})},
                         emptyTensor(b, loc, {batch, size, dv}, ct), id, {},
                         [](OpBuilder &b, Location loc,
                            ValueRange a) -> SmallVector<Value> {
                           return {arith::DivFOp::create(b, loc, a[0], a[1])};
                         })
                .front();
        SmallVector<Value> next{insertRows(b, loc, o, c[0], start)};
        if (withLogSumExp) {
          Value lse = buildElementwise(
              b, loc, tensorType(f.max), ValueRange{f.max, f.sum},
              [](OpBuilder &b, Location loc,
                 ValueRange a) -> SmallVector<Value> {
                return {arith::AddFOp::create(
                    b, loc, a[0], math::LogOp::create(b, loc, a[1]))};
              });
          next.push_back(insertRows(b, loc, lse, c[1], start));
        }
        return next;
      });
  return {r[0], withLogSumExp ? r[1] : Value()};
}

/// The gradient by key blocks from the forward's logsumexp L: for each key
/// block, over the query blocks that see it (causal: from its diagonal
/// block on), P = exp(logits − L), dV_blk += Pᵀ·dO, dP = dO·V_blkᵀ,
/// dS = P·(dP − D)·scale with D = Σ dO·O once per row, dQ += dS·K_blk,
/// dK_blk += dSᵀ·Q. Operands and results in the compute type.
std::tuple<Value, Value, Value>
blockedAttentionGrad(OpBuilder &b, Location loc, Value q, Value k, Value v,
                     Value dO, bool causal, double scale, int64_t blockSize) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> qs = tensorType(q).getShape();
  ArrayRef<int64_t> ks = tensorType(k).getShape();
  ArrayRef<int64_t> vs = tensorType(v).getShape();
  Type ct = tensorType(q).getElementType();
  int64_t batch = qs[0], tq = qs[1], d = qs[2], dv = vs[2];
  int64_t wholeQueries = tq / blockSize * blockSize;
  AffineMap id3 = identityMap(ctx, 3);

  auto [out, lse] = blockedAttention(b, loc, q, k, v, causal, scale, blockSize,
                                     /*withLogSumExp=*/true);
  // D = Σ_d dO·O: Σ_j dP·P without the [Tq, Tk] terms.
  Value delta =
      buildReduction(
          b, loc, {batch, tq, dv}, ValueRange{dO, out}, {id3, id3}, {2}, ct,
          {0.0},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            Value t = arith::MulFOp::create(b, loc, a[0], a[1]);
            return {arith::AddFOp::create(b, loc, t, a[2])};
          })
          .front();

  Value dq0 = filledTensor(b, loc, {batch, tq, d}, ct, 0.0);
  Value dk0 = emptyTensor(b, loc, ks, ct);
  Value dv0 = emptyTensor(b, loc, vs, ct);
  SmallVector<Value> r = forEachBlock(
      b, loc, ks[1], blockSize, ValueRange{dq0, dk0, dv0},
      [&](OpBuilder &b, Location loc, Value kStart, int64_t kSize,
          ValueRange c) -> SmallVector<Value> {
        Value kBlock = rowsOf(b, loc, k, kStart, kSize);
        Value vBlock = rowsOf(b, loc, v, kStart, kSize);
        Value dkBlock0 = filledTensor(b, loc, {batch, kSize, d}, ct, 0.0);
        Value dvBlock0 = filledTensor(b, loc, {batch, kSize, dv}, ct, 0.0);
        // Causal (Tq = Tk): queries before the key block see none of it.
        OpFoldResult qBegin =
            causal ? getAsOpFoldResult(kStart) : b.getIndexAttr(0);
        SmallVector<Value> inner = forEachBlock(
            b, loc, qBegin, b.getIndexAttr(wholeQueries), blockSize,
            tq - wholeQueries, ValueRange{c[0], dkBlock0, dvBlock0},
            [&](OpBuilder &b, Location loc, Value qStart, int64_t qSize,
                ValueRange ci) -> SmallVector<Value> {
              Value qBlock = rowsOf(b, loc, q, qStart, qSize);
              Value dOBlock = rowsOf(b, loc, dO, qStart, qSize);
              Value s = attentionLogits(b, loc, qBlock, kBlock, qStart, kStart,
                                        causal, scale);
              Value p =
                  expMinusRow(b, loc, s, rowsOf(b, loc, lse, qStart, qSize));
              Value dvBlock = addInto(
                  b, loc, buildMatmul(b, loc, p, dOBlock, true, false), ci[2]);
              Value dp = buildMatmul(b, loc, dOBlock, vBlock, false, true);
              Value ds = scoreGrad(b, loc, p, dp,
                                   rowsOf(b, loc, delta, qStart, qSize), scale);
              Value dqRows =
                  addInto(b, loc, buildMatmul(b, loc, ds, kBlock, false, false),
                          rowsOf(b, loc, ci[0], qStart, qSize));
              Value dkBlock = addInto(
                  b, loc, buildMatmul(b, loc, ds, qBlock, true, false), ci[1]);
              return {insertRows(b, loc, dqRows, ci[0], qStart), dkBlock,
                      dvBlock};
            });
        return {inner[0], insertRows(b, loc, inner[1], c[1], kStart),
                insertRows(b, loc, inner[2], c[2], kStart)};
      });
  return {r[0], r[1], r[2]};
}

/// When to lower by key blocks: the pass's attention-block-* options.
struct Blocking {
  int64_t blockSize = 0, threshold = 0;

  bool applies(Value key) const {
    return blockSize > 0 &&
           tensorType(key).getShape().drop_back().back() > threshold;
  }
};

/// `v` in the compute type.
Value widened(OpBuilder &b, Location loc, Value v) {
  return castElements(b, loc, v,
                      getComputeType(tensorType(v).getElementType()));
}

struct AttentionLowering : OpRewritePattern<nn::AttentionOp> {
  AttentionLowering(MLIRContext *ctx, Blocking blocking)
      : OpRewritePattern(ctx), blocking(blocking) {}
  Blocking blocking;

  LogicalResult matchAndRewrite(nn::AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    Value q = foldBatch(rewriter, loc, op.getQuery());
    Value k = foldBatch(rewriter, loc, op.getKey());
    Value v = foldBatch(rewriter, loc, op.getValue());
    double scale = scaleOf(op.getScale(), op.getQuery());
    Value o;
    if (blocking.applies(op.getKey())) {
      // Widened once, not per block.
      o = blockedAttention(rewriter, loc, widened(rewriter, loc, q),
                           widened(rewriter, loc, k), widened(rewriter, loc, v),
                           op.getCausal(), scale, blocking.blockSize,
                           /*withLogSumExp=*/false)
              .first;
    } else {
      Value p = attentionProbs(rewriter, loc, q, k, op.getCausal(), scale);
      o = buildMatmul(rewriter, loc, p, v, false, false);
    }
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
  AttentionGradLowering(MLIRContext *ctx, Blocking blocking)
      : OpRewritePattern(ctx), blocking(blocking) {}
  Blocking blocking;

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
    if (blocking.applies(op.getKey())) {
      auto [dq, dk, dv] = blockedAttentionGrad(
          rewriter, loc, widened(rewriter, loc, q), widened(rewriter, loc, k),
          widened(rewriter, loc, v), widened(rewriter, loc, dO), op.getCausal(),
          scale, blocking.blockSize);
      replaceWithGrads(rewriter, op, {dq, dk, dv});
      return success();
    }
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
    Value ds = scoreGrad(rewriter, loc, p, dp, rowSum, scale);
    Value dq = buildMatmul(rewriter, loc, ds, k, false, false);
    Value dk = buildMatmul(rewriter, loc, ds, q, true, false);
    replaceWithGrads(rewriter, op, {dq, dk, dv});
    return success();
  }

  /// Replaces `op` by the folded compute-type gradients, cast and reshaped
  /// back to the operands' types.
  static void replaceWithGrads(PatternRewriter &rewriter,
                               nn::AttentionGradOp op, ArrayRef<Value> grads) {
    Location loc = op.getLoc();
    SmallVector<Value> likes{op.getQuery(), op.getKey(), op.getValue()};
    SmallVector<Value> results;
    for (auto [grad, like] : llvm::zip_equal(grads, likes)) {
      auto type = tensorType(like);
      Value g = castElements(rewriter, loc, grad, type.getElementType());
      results.push_back(reshapeTo(rewriter, loc, g, type.getShape()));
    }
    rewriter.replaceOp(op, results);
  }
};

} // namespace

void mlir::ds::nntolinalg::populateAttentionPatterns(
    RewritePatternSet &patterns, int64_t blockSize, int64_t threshold) {
  Blocking blocking{blockSize, threshold};
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext(),
                                                         blocking);
}
