//===- Embedding.cpp - embedding (gather) and embedding_grad (scatter-add) ===//
//
// The gather is a linalg.generic that reads the table with tensor.extract
// at the row its index names. The scatter-add cannot be a linalg.generic
// (an output indexed by data is not an affine map), so it is an scf.for over
// positions that adds each gradient row into its table row through an
// extract_slice/insert_slice pair on the loop-carried table: one-shot
// bufferization turns that pair into an in-place update of one buffer.
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

struct EmbeddingLowering : OpRewritePattern<nn::EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    unsigned rank = type.getRank();
    Value table = op.getTable();
    int64_t rows = tensorType(table).getDimSize(0);
    Value offset = vocabOffset(rewriter, loc, op.getOffset());
    AffineMap indexMap =
        dropDimsMap(rewriter.getContext(), rank, {int64_t(rank) - 1});
    Value init =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    Value y =
        buildGeneric(
            rewriter, loc, type.getShape(), op.getIndices(), indexMap, init,
            identityMap(rewriter.getContext(), rank), {},
            [&](OpBuilder &b, Location loc,
                ValueRange a) -> SmallVector<Value> {
              if (!offset) {
                Value row =
                    arith::IndexCastOp::create(b, loc, b.getIndexType(), a[0]);
                Value col = linalg::IndexOp::create(b, loc, rank - 1);
                return {tensor::ExtractOp::create(b, loc, table,
                                                  ValueRange{row, col})};
              }
              auto [row, inside] = pieceRow(b, loc, a[0], offset, rows);
              Value col = linalg::IndexOp::create(b, loc, rank - 1);
              Value x = tensor::ExtractOp::create(b, loc, table,
                                                  ValueRange{row, col});
              return {arith::SelectOp::create(
                  b, loc, inside, x, floatConst(b, loc, x.getType(), 0.0))};
            })
            .front();
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct EmbeddingGradLowering : OpRewritePattern<nn::EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticShapes(op))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t c = type.getDimSize(1);
    int64_t positions = numElements(tensorType(op.getIndices()).getShape());
    Type ct = getComputeType(type.getElementType());
    Value indices = reshapeTo(rewriter, loc, op.getIndices(), {positions});
    Value grad = reshapeTo(rewriter, loc, op.getGrad(), {positions, c});
    Value table = filledTensor(rewriter, loc, type.getShape(), ct, 0.0);
    Value offset = vocabOffset(rewriter, loc, op.getOffset());

    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, positions);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto rowType = RankedTensorType::get({1, c}, ct);
    auto gradRowType =
        RankedTensorType::get({1, c}, tensorType(grad).getElementType());
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{table},
        [&](OpBuilder &b, Location loc, Value p, ValueRange iter) {
          Value id = tensor::ExtractOp::create(b, loc, indices, p);
          // A piece's row; outside it the row is kept as it is.
          Value v, inside;
          if (offset)
            std::tie(v, inside) =
                pieceRow(b, loc, id, offset, type.getDimSize(0));
          else
            v = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
          SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), b.getIndexAttr(c)};
          SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
          Value gradRow = tensor::ExtractSliceOp::create(
              b, loc, gradRowType, grad,
              ArrayRef<OpFoldResult>{p, b.getIndexAttr(0)}, sizes, strides);
          SmallVector<OpFoldResult> at{v, b.getIndexAttr(0)};
          Value tableRow = tensor::ExtractSliceOp::create(
              b, loc, rowType, iter[0], at, sizes, strides);
          AffineMap id2 = identityMap(b.getContext(), 2);
          // Accumulate into the table row itself (outs), not a copy.
          Value sum =
              buildGeneric(
                  b, loc, {1, c}, gradRow, id2, tableRow, id2, {},
                  [&](OpBuilder &b, Location loc,
                      ValueRange a) -> SmallVector<Value> {
                    Value sum = arith::AddFOp::create(b, loc, a[0], a[1]);
                    if (!inside)
                      return {sum};
                    return {arith::SelectOp::create(b, loc, inside, sum, a[1])};
                  })
                  .front();
          Value updated = tensor::InsertSliceOp::create(b, loc, sum, iter[0],
                                                        at, sizes, strides);
          scf::YieldOp::create(b, loc, updated);
        });
    rewriter.replaceOp(op, castElements(rewriter, loc, loop.getResult(0),
                                        type.getElementType()));
    return success();
  }
};

} // namespace

void mlir::ds::nntolinalg::populateEmbeddingPatterns(
    RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, EmbeddingGradLowering>(patterns.getContext());
}
