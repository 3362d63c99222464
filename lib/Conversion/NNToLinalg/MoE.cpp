//===- MoE.cpp - dsnn.moe and its routing ops
//------------------------------===//
//
// dsnn.moe lowers by expanding into its routing (MoEOp::expand), whose ops
// lower here:
//
// - moe_route: the top-k choice is data-parallel (an expert's rank among its
//   token's probabilities is a count, then the k best are picked by rank;
//   after the first choice the rank counts the gate's logits, as DeepSpeed's
//   top2gating);
//   handing out capacity slots is sequential by nature (choice by choice,
//   token by token), so it is an scf.for carrying the per-expert counts.
// - moe_gate / moe_gate_grad: generics reading the chosen probabilities
//   with tensor.extract, plus the per-token normalization.
// - moe_gather: a generic reading each kept choice's slot (tensor.extract).
// - moe_dispatch: an scf.for over the choices writing each kept token's row
//   into its slot (extract_slice / insert_slice, in place once bufferized),
//   as embedding_grad does: an output indexed by data is not an affine map.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

Value i64Zeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value init = emptyTensor(b, loc, shape, b.getI64Type());
  return linalg::FillOp::create(b, loc, ValueRange{i64Const(b, loc, 0)},
                                ValueRange{init})
      .getResult(0);
}

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

/// The machine epsilon of `type` (torch.finfo(dtype).eps).
double machineEpsilon(Type type) {
  auto ft = cast<FloatType>(type);
  return std::ldexp(1.0, 1 - static_cast<int>(llvm::APFloat::semanticsPrecision(
                                 ft.getFloatSemantics())));
}

/// In a generic over (n, self, other): whether expert `other`, scored
/// `theirs`, ranks before expert `self`, scored `mine`: a greater score, or
/// an equal one at a lower index (torch.argmax's first maximum).
Value ranksBefore(OpBuilder &b, Location l, Value mine, Value theirs) {
  Value self = linalg::IndexOp::create(b, l, 1);
  Value other = linalg::IndexOp::create(b, l, 2);
  Value greater =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, theirs, mine);
  Value equal =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, theirs, mine);
  Value lower =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, other, self);
  return arith::OrIOp::create(b, l, greater,
                              arith::AndIOp::create(b, l, equal, lower));
}

struct ExpandMoE : OpRewritePattern<nn::MoEOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoEOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op) ||
        !cast<RankedTensorType>(
             op.getExperts().front().getArgument(0).getType())
             .hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    op.expand(rewriter);
    return success();
  }
};

struct RouteLowering : OpRewritePattern<nn::MoERouteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoERouteOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto probsType = op.getProbs().getType();
    int64_t n = probsType.getDimSize(0), e = probsType.getDimSize(1);
    int64_t k = op.getKAttr().getInt(),
            capacity = op.getCapacityAttr().getInt();
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    auto map3 = [&](ArrayRef<AffineExpr> exprs) {
      return AffineMap::get(3, 0, exprs, ctx);
    };

    // rank[n, e] = #{e' : p[n, e'] > p[n, e], or equal with e' < e}.
    Value rank =
        buildGeneric(
            rewriter, loc, {n, e, e}, {op.getProbs(), op.getProbs()},
            {map3({d0, d1}), map3({d0, d2})}, i64Zeros(rewriter, loc, {n, e}),
            {map3({d0, d1})}, {2},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value one = arith::ExtUIOp::create(b, l, b.getI64Type(),
                                                 ranksBefore(b, l, a[0], a[1]));
              return {arith::AddIOp::create(b, l, a[2], one)};
            })
            .front();

    // DeepSpeed's top2gating takes the first choice by argmax of the
    // probabilities but the second by argmax of the logits with the first
    // masked: logits an ulp apart can round to one f32 probability, and the
    // greater logit then wins, not the lower index. So when `probs` is a
    // softmax (SoftmaxLowering waits for this op), the choices after the
    // first are ranked by its logits:
    // rank[n, e] = 0 for the first choice, else 1 + #{e' not first :
    // l[n, e'] > l[n, e], or equal with e' < e}.
    auto softmax = op.getProbs().getDefiningOp<nn::SoftmaxOp>();
    if (k >= 2 && softmax) {
      Value logits = softmax.getInput();
      rank =
          buildGeneric(
              rewriter, loc, {n, e, e}, {rank, rank, logits, logits},
              {map3({d0, d1}), map3({d0, d2}), map3({d0, d1}), map3({d0, d2})},
              i64Zeros(rewriter, loc, {n, e}), {map3({d0, d1})}, {2},
              [&](OpBuilder &b, Location l,
                  ValueRange a) -> SmallVector<Value> {
                Value zero = i64Const(b, l, 0), one = i64Const(b, l, 1);
                Value selfFirst = arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::eq, a[0], zero);
                Value otherFirst = arith::CmpIOp::create(
                    b, l, arith::CmpIPredicate::eq, a[1], zero);
                Value before = ranksBefore(b, l, a[2], a[3]);
                Value count = arith::SelectOp::create(
                    b, l, otherFirst, one,
                    arith::ExtUIOp::create(b, l, b.getI64Type(), before));
                Value add =
                    arith::SelectOp::create(b, l, selfFirst, zero, count);
                return {arith::AddIOp::create(b, l, a[4], add)};
              })
              .front();
    }

    // experts[n, j] = the e whose rank is j.
    Value experts =
        buildGeneric(
            rewriter, loc, {n, k, e}, rank, map3({d0, d2}),
            i64Zeros(rewriter, loc, {n, k}), map3({d0, d1}), {2},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value j = arith::IndexCastOp::create(
                  b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 1));
              Value expert = arith::IndexCastOp::create(
                  b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 2));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                a[0], j);
              Value add =
                  arith::SelectOp::create(b, l, hit, expert, i64Const(b, l, 0));
              return {arith::AddIOp::create(b, l, a[1], add)};
            })
            .front();

    // Slots: choice-major (q = j·N + n), a running count per expert.
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, k * n);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value tokens = arith::ConstantIndexOp::create(rewriter, loc, n);
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step,
        ValueRange{i64Zeros(rewriter, loc, {e}),
                   i64Zeros(rewriter, loc, {n, k})},
        [&](OpBuilder &b, Location l, Value q, ValueRange iter) {
          Value j = arith::DivUIOp::create(b, l, q, tokens);
          Value t = arith::RemUIOp::create(b, l, q, tokens);
          Value expert = toIndex(
              b, l, tensor::ExtractOp::create(b, l, experts, ValueRange{t, j}));
          Value count =
              tensor::ExtractOp::create(b, l, iter[0], ValueRange{expert});
          Value fits = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                             count, i64Const(b, l, capacity));
          Value slot =
              arith::SelectOp::create(b, l, fits, count, i64Const(b, l, -1));
          Value counts = tensor::InsertOp::create(
              b, l, arith::AddIOp::create(b, l, count, i64Const(b, l, 1)),
              iter[0], ValueRange{expert});
          Value slots =
              tensor::InsertOp::create(b, l, slot, iter[1], ValueRange{t, j});
          scf::YieldOp::create(b, l, ValueRange{counts, slots});
        });

    // load[e] = #{n : experts[n, 0] = e} / N.
    Type et = probsType.getElementType();
    Type ct = getComputeType(et);
    AffineMap first =
        AffineMap::get(2, 0, {d0, getAffineConstantExpr(0, ctx)}, ctx);
    Value counts =
        buildReduction(
            rewriter, loc, {n, e}, experts, first, {0}, ct, {0.0},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value expert = arith::IndexCastOp::create(
                  b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 1));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                a[0], expert);
              Value one =
                  arith::SelectOp::create(b, l, hit, floatConst(b, l, ct, 1.0),
                                          floatConst(b, l, ct, 0.0));
              return {arith::AddFOp::create(b, l, a[1], one)};
            })
            .front();
    Value load = buildElementwise(
        rewriter, loc, op.getLoad().getType(), counts,
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          return {arith::DivFOp::create(b, l, a[0],
                                        floatConst(b, l, ct, double(n)))};
        });
    rewriter.replaceOp(op, {experts, loop.getResult(1), load});
    // The softmax waited for this op (SoftmaxLowering): revisit it.
    if (softmax)
      rewriter.modifyOpInPlace(softmax, [] {});
    return success();
  }
};

/// g[n, j] = probs[n, experts[n, j]] for kept choices, else 0 (compute
/// type), and with `normalize` the clamped row sums S' = max(Σ_j g, eps).
struct Gates {
  Value g, clamped, sum;
};

Gates buildGates(OpBuilder &rewriter, Location loc, Value probs, Value experts,
                 Value slots, bool normalize) {
  MLIRContext *ctx = rewriter.getContext();
  auto choices = tensorType(experts);
  int64_t n = choices.getDimSize(0), k = choices.getDimSize(1);
  Type et = tensorType(probs).getElementType();
  Type ct = getComputeType(et);
  AffineMap id2 = identityMap(ctx, 2);
  Gates gates;
  gates.g =
      buildGeneric(
          rewriter, loc, {n, k}, {experts, slots}, {id2, id2},
          emptyTensor(rewriter, loc, {n, k}, ct), id2, {},
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            Value t = linalg::IndexOp::create(b, l, 0);
            Value p = convertScalar(
                b, l,
                tensor::ExtractOp::create(b, l, probs,
                                          ValueRange{t, toIndex(b, l, a[0])}),
                ct);
            Value kept = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                               a[1], i64Const(b, l, 0));
            return {arith::SelectOp::create(b, l, kept, p,
                                            floatConst(b, l, ct, 0.0))};
          })
          .front();
  if (!normalize)
    return gates;
  gates.sum =
      buildReduction(
          rewriter, loc, {n, k}, gates.g, id2, {1}, ct, {0.0},
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, l, a[0], a[1])};
          })
          .front();
  double eps = machineEpsilon(et);
  gates.clamped = buildElementwise(
      rewriter, loc, RankedTensorType::get({n}, ct), gates.sum,
      [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
        return {
            arith::MaximumFOp::create(b, l, a[0], floatConst(b, l, ct, eps))};
      });
  return gates;
}

struct GateLowering : OpRewritePattern<nn::MoEGateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoEGateOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    Gates gates = buildGates(rewriter, loc, op.getProbs(), op.getExperts(),
                             op.getSlots(), op.getNormalize());
    auto type = op.getType();
    if (!op.getNormalize()) {
      rewriter.replaceOp(
          op, castElements(rewriter, loc, gates.g, type.getElementType()));
      return success();
    }
    Value denom =
        reshapeTo(rewriter, loc, gates.clamped, {type.getDimSize(0), 1});
    rewriter.replaceOp(
        op, buildElementwise(rewriter, loc, type, {gates.g, denom},
                             [](OpBuilder &b, Location l,
                                ValueRange a) -> SmallVector<Value> {
                               return {arith::DivFOp::create(b, l, a[0], a[1])};
                             }));
    return success();
  }
};

struct GateGradLowering : OpRewritePattern<nn::MoEGateGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoEGateGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto choices = tensorType(op.getExperts());
    int64_t n = choices.getDimSize(0), k = choices.getDimSize(1);
    int64_t e = op.getType().getDimSize(1);
    Type et = op.getType().getElementType();
    Type ct = getComputeType(et);
    AffineMap id2 = identityMap(ctx, 2);

    // dg_j = grad_j / S' − [S >= eps] · Σ_i grad_i·g_i / S'².
    Value dg = castElements(rewriter, loc, op.getGrad(), ct);
    if (op.getNormalize()) {
      Gates gates = buildGates(rewriter, loc, op.getProbs(), op.getExperts(),
                               op.getSlots(), true);
      Value dot =
          buildReduction(
              rewriter, loc, {n, k}, {dg, gates.g}, {id2, id2}, {1}, ct, {0.0},
              [](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
                Value m = arith::MulFOp::create(b, l, a[0], a[1]);
                return {arith::AddFOp::create(b, l, a[2], m)};
              })
              .front();
      double eps = machineEpsilon(et);
      AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
      dg = buildGeneric(
               rewriter, loc, {n, k}, {dg, gates.sum, gates.clamped, dot},
               {id2, row, row, row}, emptyTensor(rewriter, loc, {n, k}, ct),
               id2, {},
               [&](OpBuilder &b, Location l,
                   ValueRange a) -> SmallVector<Value> {
                 Value direct = arith::DivFOp::create(b, l, a[0], a[2]);
                 Value sq = arith::MulFOp::create(b, l, a[2], a[2]);
                 Value through = arith::DivFOp::create(b, l, a[3], sq);
                 Value open =
                     arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE,
                                           a[1], floatConst(b, l, ct, eps));
                 through = arith::SelectOp::create(b, l, open, through,
                                                   floatConst(b, l, ct, 0.0));
                 return {arith::SubFOp::create(b, l, direct, through)};
               })
               .front();
    }

    // result[n, e] = Σ over kept choices j with experts[n, j] = e of dg_j.
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    AffineMap choice = AffineMap::get(3, 0, {d0, d2}, ctx);
    Value result =
        buildReduction(
            rewriter, loc, {n, e, k}, {op.getExperts(), op.getSlots(), dg},
            {choice, choice, choice}, {2}, ct, {0.0},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value expert = arith::IndexCastOp::create(
                  b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 1));
              Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                a[0], expert);
              Value kept = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::sge, a[1], i64Const(b, l, 0));
              Value both = arith::AndIOp::create(b, l, hit, kept);
              Value add = arith::SelectOp::create(b, l, both, a[2],
                                                  floatConst(b, l, ct, 0.0));
              return {arith::AddFOp::create(b, l, a[3], add)};
            })
            .front();
    rewriter.replaceOp(op, castElements(rewriter, loc, result, et));
    return success();
  }
};

struct GatherLowering : OpRewritePattern<nn::MoEGatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoEGatherOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = op.getType();
    Type et = type.getElementType();
    Value y = op.getInput();
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    AffineMap choice = AffineMap::get(3, 0, {d0, d1}, ctx);
    Value out =
        buildGeneric(
            rewriter, loc, type.getShape(), {op.getExperts(), op.getSlots()},
            {choice, choice}, emptyTensor(rewriter, loc, type.getShape(), et),
            identityMap(ctx, 3), {},
            [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
              Value kept = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::sge, a[1], i64Const(b, l, 0));
              Value slot =
                  arith::SelectOp::create(b, l, kept, a[1], i64Const(b, l, 0));
              Value col = linalg::IndexOp::create(b, l, 2);
              Value v = tensor::ExtractOp::create(
                  b, l, y,
                  ValueRange{toIndex(b, l, a[0]), toIndex(b, l, slot), col});
              Type vt = getComputeType(et);
              return {arith::SelectOp::create(b, l, kept,
                                              convertScalar(b, l, v, vt),
                                              floatConst(b, l, vt, 0.0))};
            })
            .front();
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct DispatchLowering : OpRewritePattern<nn::MoEDispatchOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MoEDispatchOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    auto in = op.getInput().getType();
    auto choices = tensorType(op.getExperts());
    int64_t n = choices.getDimSize(0), k = choices.getDimSize(1);
    int64_t c = type.getDimSize(2);
    bool perChoice = in.getRank() == 3;
    // Rows: one per token, or one per choice (q = n·k + j).
    Value rows =
        reshapeTo(rewriter, loc, op.getInput(), {perChoice ? n * k : n, c});
    Value init = filledTensor(rewriter, loc, type.getShape(),
                              type.getElementType(), 0.0);
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, n * k);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value kIndex = arith::ConstantIndexOp::create(rewriter, loc, k);
    auto rowType = RankedTensorType::get({c}, type.getElementType());
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{init},
        [&](OpBuilder &b, Location l, Value q, ValueRange iter) {
          Value t = arith::DivUIOp::create(b, l, q, kIndex);
          Value j = arith::RemUIOp::create(b, l, q, kIndex);
          Value expert = tensor::ExtractOp::create(b, l, op.getExperts(),
                                                   ValueRange{t, j});
          Value slot =
              tensor::ExtractOp::create(b, l, op.getSlots(), ValueRange{t, j});
          Value kept = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                             slot, i64Const(b, l, 0));
          auto branch = scf::IfOp::create(
              b, l, kept,
              [&](OpBuilder &tb, Location tl) {
                SmallVector<OpFoldResult> one(2, tb.getIndexAttr(1));
                Value row = tensor::ExtractSliceOp::create(
                    tb, tl, rowType, rows,
                    ArrayRef<OpFoldResult>{perChoice ? q : t,
                                           tb.getIndexAttr(0)},
                    ArrayRef<OpFoldResult>{tb.getIndexAttr(1),
                                           tb.getIndexAttr(c)},
                    one);
                Value updated = tensor::InsertSliceOp::create(
                    tb, tl, row, iter[0],
                    ArrayRef<OpFoldResult>{toIndex(tb, tl, expert),
                                           toIndex(tb, tl, slot),
                                           tb.getIndexAttr(0)},
                    ArrayRef<OpFoldResult>{tb.getIndexAttr(1),
                                           tb.getIndexAttr(1),
                                           tb.getIndexAttr(c)},
                    SmallVector<OpFoldResult>(3, tb.getIndexAttr(1)));
                scf::YieldOp::create(tb, tl, updated);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, iter[0]);
              });
          scf::YieldOp::create(b, l, branch.getResults());
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateMoEPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandMoE, RouteLowering, GateLowering, GateGradLowering,
               GatherLowering, DispatchLowering>(patterns.getContext());
}
