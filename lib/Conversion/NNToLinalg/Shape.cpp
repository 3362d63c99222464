//===- Shape.cpp - reshape, transpose, split, concat, reductions ----------===//
//
// Reshapes stay metadata (collapse/expand_shape); split and concat are
// slices of one buffer, so after bufferization a split is a view and a
// concat writes its inputs in place.
//
//===----------------------------------------------------------------------===//
#include "Utils.h"

#include "ds/Support/ShapeCheck.h"
#include "dsnn/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nntolinalg;

namespace {

struct ReshapeLowering : OpRewritePattern<nn::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), op.getInput(),
                                     op.getType().getShape()));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<nn::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    auto type = op.getType();
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(),
                             type.getElementType());
    // Same convention as dsnn: result dim i is input dim permutation[i].
    auto t = linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(),
                                         init, op.getPermutation());
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct SplitLowering : OpRewritePattern<nn::SplitOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::SplitOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    auto inType = tensorType(op.getInput());
    int64_t rank = inType.getRank();
    int64_t dim = *normalizeDim(op.getDim(), rank);
    SmallVector<Value> pieces;
    int64_t offset = 0;
    for (Value r : op.getResults()) {
      auto type = tensorType(r);
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes;
      for (int64_t s : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(s));
      offsets[dim] = rewriter.getIndexAttr(offset);
      offset += type.getDimSize(dim);
      pieces.push_back(tensor::ExtractSliceOp::create(
          rewriter, op.getLoc(), type, op.getInput(), offsets, sizes, strides));
    }
    rewriter.replaceOp(op, pieces);
    return success();
  }
};

struct ConcatLowering : OpRewritePattern<nn::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::ConcatOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    auto type = op.getType();
    int64_t rank = type.getRank();
    int64_t dim = *normalizeDim(op.getDim(), rank);
    Value acc = emptyTensor(rewriter, op.getLoc(), type.getShape(),
                            type.getElementType());
    int64_t offset = 0;
    for (Value in : op.getInputs()) {
      auto inType = tensorType(in);
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes;
      for (int64_t s : inType.getShape())
        sizes.push_back(rewriter.getIndexAttr(s));
      offsets[dim] = rewriter.getIndexAttr(offset);
      offset += inType.getDimSize(dim);
      acc = tensor::InsertSliceOp::create(rewriter, op.getLoc(), in, acc,
                                          offsets, sizes, strides);
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

enum class Reduction { Sum, Mean, Max };

template <typename OpTy, Reduction Kind>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto inType = tensorType(op.getInput());
    ArrayRef<int64_t> shape = inType.getShape();
    int64_t rank = inType.getRank();
    SmallVector<int64_t> dims;
    int64_t count = 1;
    for (int64_t d : op.getDims()) {
      dims.push_back(*normalizeDim(d, rank));
      count *= shape[dims.back()];
    }
    llvm::sort(dims);
    Type ct = getComputeType(inType.getElementType());
    constexpr bool Mean = Kind == Reduction::Mean;
    Value sum =
        buildReduction(
            rewriter, loc, shape, op.getInput(),
            identityMap(rewriter.getContext(), rank), dims, ct,
            {Kind == Reduction::Max ? -INFINITY : 0.0},
            [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
              if (Kind == Reduction::Max)
                return {arith::MaximumFOp::create(b, loc, a[0], a[1])};
              return {arith::AddFOp::create(b, loc, a[0], a[1])};
            })
            .front();
    auto resultType = cast<RankedTensorType>(op.getType());
    auto reducedType = RankedTensorType::get(dropDims(shape, dims),
                                             resultType.getElementType());
    Value result = sum;
    if (Mean || reducedType != sum.getType())
      result = buildElementwise(
          rewriter, loc, reducedType, sum,
          [&](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            if (!Mean)
              return {a[0]};
            return {arith::MulFOp::create(b, loc, a[0],
                                          floatConst(b, loc, ct, 1.0 / count))};
          });
    // keep_dims: the reduced dims come back as 1s.
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, result, resultType.getShape()));
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, SplitLowering,
               ConcatLowering, ReduceLowering<nn::ReduceSumOp, Reduction::Sum>,
               ReduceLowering<nn::ReduceMeanOp, Reduction::Mean>,
               ReduceLowering<nn::ReduceMaxOp, Reduction::Max>>(
      patterns.getContext());
}
