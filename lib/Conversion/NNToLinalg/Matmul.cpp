//===- Matmul.cpp - linear, matmul and batch_matmul
//------------------------===//
//
// Every product becomes a named linalg.matmul / linalg.batch_matmul on
// row-major operands into a zero-filled accumulator, so the BLAS rewrite
// below has exactly one form to match (see buildMatmul). Leading dims are
// folded into M (linear) or into the single batch dim (batch_matmul) by
// reshapes, which are free on contiguous tensors.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

struct LinearLowering : OpRewritePattern<nn::LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> in = tensorType(op.getInput()).getShape();
    int64_t k = in.back();
    int64_t m = numElements(in.drop_back());
    int64_t n = tensorType(op.getWeight()).getDimSize(0);

    // y = x·Wᵀ with W in [out, in] layout: the weight is B transposed.
    Value x = reshapeTo(rewriter, loc, op.getInput(), {m, k});
    Value acc = buildMatmul(rewriter, loc, x, op.getWeight(),
                            /*transposeA=*/false, /*transposeB=*/true);
    auto flatType = RankedTensorType::get({m, n}, resultType.getElementType());
    Value y;
    if (Value bias = op.getBias()) {
      y = buildElementwise(
          rewriter, loc, flatType, ValueRange{acc, bias},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, loc, a[0], a[1])};
          });
    } else {
      y = castElements(rewriter, loc, acc, resultType.getElementType());
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, resultType.getShape()));
    return success();
  }
};

struct MatmulLowering : OpRewritePattern<nn::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Value acc = buildMatmul(rewriter, op.getLoc(), op.getLhs(), op.getRhs(),
                            op.getTransposeA(), op.getTransposeB());
    rewriter.replaceOp(op, castElements(rewriter, op.getLoc(), acc,
                                        op.getType().getElementType()));
    return success();
  }
};

/// [..., X, Y] -> [prod(...), X, Y].
Value foldBatchDims(OpBuilder &b, Location loc, Value v) {
  ArrayRef<int64_t> s = tensorType(v).getShape();
  size_t r = s.size();
  return reshapeTo(b, loc, v,
                   {numElements(s.drop_back(2)), s[r - 2], s[r - 1]});
}

struct BatchMatmulLowering : OpRewritePattern<nn::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    Value acc =
        buildMatmul(rewriter, loc, foldBatchDims(rewriter, loc, op.getLhs()),
                    foldBatchDims(rewriter, loc, op.getRhs()),
                    op.getTransposeA(), op.getTransposeB());
    Value y = castElements(rewriter, loc, acc, resultType.getElementType());
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, y, resultType.getShape()));
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearLowering, MatmulLowering, BatchMatmulLowering>(
      patterns.getContext());
}
