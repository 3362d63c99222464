//===- Softmax.cpp - softmax, log_softmax and their gradients -------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

template <typename OpTy, bool Log>
struct SoftmaxLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    // moe_route ranks its later choices by this softmax's input (MoE.cpp).
    if (llvm::any_of(op->getUsers(), llvm::IsaPred<nn::MoERouteOp>))
      return rewriter.notifyMatchFailure(op, "a moe_route reads its logits");
    rewriter.replaceOp(op, buildSoftmax(rewriter, op.getLoc(), op.getInput(),
                                        op.getNormalizedDim(), Log));
    return success();
  }
};

/// softmax:     dx = y · (dy − Σ dy·y)
/// log_softmax: dx = dy − exp(y) · Σ dy
template <typename OpTy, bool Log>
struct SoftmaxGradLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> shape = type.getShape();
    unsigned rank = shape.size();
    // The I64Attr getter is unsigned; read it as the signed dim it is.
    int64_t dim = static_cast<int64_t>(op.getDim());
    if (dim < 0)
      dim += rank;
    Type ct = getComputeType(type.getElementType());
    AffineMap id = identityMap(ctx, rank);
    AffineMap row = dropDimsMap(ctx, rank, {dim});

    Value sum =
        buildReduction(
            rewriter, loc, shape, ValueRange{op.getOutput(), op.getGrad()},
            {id, id}, {dim}, ct, {0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              Value term =
                  Log ? a[1] : arith::MulFOp::create(b, loc, a[0], a[1]);
              return {arith::AddFOp::create(b, loc, term, a[2])};
            })
            .front();
    Value init = emptyTensor(rewriter, loc, shape, type.getElementType());
    Value dx =
        buildGeneric(
            rewriter, loc, shape, ValueRange{op.getOutput(), op.getGrad(), sum},
            {id, id, row}, init, id, {},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              if (Log) {
                Value p = math::ExpOp::create(b, loc, a[0]);
                return {arith::SubFOp::create(
                    b, loc, a[1], arith::MulFOp::create(b, loc, p, a[2]))};
              }
              Value d = arith::SubFOp::create(b, loc, a[1], a[2]);
              return {arith::MulFOp::create(b, loc, a[0], d)};
            })
            .front();
    rewriter.replaceOp(op, dx);
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateSoftmaxPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering<nn::SoftmaxOp, false>,
               SoftmaxLowering<nn::LogSoftmaxOp, true>,
               SoftmaxGradLowering<nn::SoftmaxGradOp, false>,
               SoftmaxGradLowering<nn::LogSoftmaxGradOp, true>>(
      patterns.getContext());
}
