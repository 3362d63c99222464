//===- Utils.cpp - Builders shared by the dsnn lowering patterns ----------===//
#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;

namespace mlir::ds::nntolinalg {

Type getComputeType(Type elemType) {
  auto ft = dyn_cast<FloatType>(elemType);
  if (ft && ft.getWidth() < 32)
    return Float32Type::get(elemType.getContext());
  return elemType;
}

Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  auto fromF = dyn_cast<FloatType>(from);
  auto toF = dyn_cast<FloatType>(to);
  if (from == to || !fromF || !toF)
    return v;
  if (fromF.getWidth() < toF.getWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  if (fromF.getWidth() > toF.getWidth())
    return arith::TruncFOp::create(b, loc, to, v);
  // Same width, different format (bf16 <-> f16): go through f32.
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, to, wide);
}

Value floatConst(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elemType) {
  return tensor::EmptyOp::create(b, loc, shape, elemType);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elemType, double value) {
  Value init = emptyTensor(b, loc, shape, elemType);
  Value cst = floatConst(b, loc, elemType, value);
  return linalg::FillOp::create(b, loc, ValueRange{cst}, ValueRange{init})
      .getResult(0);
}

AffineMap identityMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

AffineMap dropDimsMap(MLIRContext *ctx, unsigned rank,
                      ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, static_cast<int64_t>(d)))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> loopShape,
                       ArrayRef<int64_t> operandShape) {
  unsigned n = loopShape.size(), r = operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < r; ++i) {
    unsigned d = n - r + i;
    if (operandShape[i] == 1 && loopShape[d] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(n, 0, exprs, ctx);
}

SmallVector<Value> buildGeneric(OpBuilder &b, Location loc,
                                ArrayRef<int64_t> loopShape, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps, ValueRange inits,
                                ArrayRef<AffineMap> initMaps,
                                ArrayRef<int64_t> reducedDims, BodyFn body) {
  SmallVector<AffineMap> maps(inputMaps);
  llvm::append_range(maps, initMaps);
  SmallVector<utils::IteratorType> iterators(loopShape.size(),
                                             utils::IteratorType::parallel);
  for (int64_t d : reducedDims)
    iterators[d] = utils::IteratorType::reduction;
  SmallVector<Type> resultTypes;
  for (Value init : inits)
    resultTypes.push_back(init.getType());
  auto op = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> computeArgs;
        for (Value a : args)
          computeArgs.push_back(
              convertScalar(nb, nloc, a, getComputeType(a.getType())));
        SmallVector<Value> results = body(nb, nloc, computeArgs);
        SmallVector<Value> yielded;
        for (auto [r, init] : llvm::zip_equal(results, inits))
          yielded.push_back(
              convertScalar(nb, nloc, r, tensorType(init).getElementType()));
        linalg::YieldOp::create(nb, nloc, yielded);
      });
  return SmallVector<Value>(op.getResults());
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx, shape, tensorType(in).getShape()));
  Value init = emptyTensor(b, loc, shape, resultType.getElementType());
  return buildGeneric(b, loc, shape, inputs, maps, init,
                      identityMap(ctx, shape.size()), {}, body)
      .front();
}

SmallVector<int64_t> dropDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> out;
  for (auto [i, s] : llvm::enumerate(shape))
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      out.push_back(s);
  return out;
}

SmallVector<Value> buildReduction(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> loopShape,
                                  ValueRange inputs,
                                  ArrayRef<AffineMap> inputMaps,
                                  ArrayRef<int64_t> reducedDims, Type accType,
                                  ArrayRef<double> initValues, BodyFn body) {
  SmallVector<int64_t> accShape = dropDims(loopShape, reducedDims);
  AffineMap accMap = dropDimsMap(b.getContext(), loopShape.size(), reducedDims);
  SmallVector<Value> inits;
  SmallVector<AffineMap> initMaps;
  for (double v : initValues) {
    inits.push_back(filledTensor(b, loc, accShape, accType, v));
    initMaps.push_back(accMap);
  }
  return buildGeneric(b, loc, loopShape, inputs, inputMaps, inits, initMaps,
                      reducedDims, body);
}

Value buildMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                  bool transposeA, bool transposeB) {
  ArrayRef<int64_t> a = tensorType(lhs).getShape();
  ArrayRef<int64_t> bs = tensorType(rhs).getShape();
  bool batched = a.size() == 3;
  unsigned o = batched ? 1 : 0;
  int64_t m = transposeA ? a[o + 1] : a[o];
  int64_t n = transposeB ? bs[o] : bs[o + 1];
  SmallVector<int64_t> shape;
  if (batched)
    shape.push_back(a[0]);
  shape.append({m, n});
  Type accType = getComputeType(tensorType(lhs).getElementType());
  // 16-bit operands are widened first: the products and sums are then
  // exactly those of a 16-bit-input, f32-accumulate matmul unit, and the
  // contraction stays f32, which the BLAS lowering calls sgemm for.
  lhs = castElements(b, loc, lhs, accType);
  rhs = castElements(b, loc, rhs, accType);
  Value acc = filledTensor(b, loc, shape, accType, 0.0);
  // Owning storage: a TypeRange/ValueRange over a braced list would dangle.
  SmallVector<Type> resultTypes{acc.getType()};
  SmallVector<Value> ins{lhs, rhs}, outs{acc};

  if (!batched) {
    if (transposeA && transposeB) {
      // No named form for AᵀBᵀ; the maps say it.
      MLIRContext *ctx = b.getContext();
      AffineExpr dm, dn, dk;
      bindDims(ctx, dm, dn, dk);
      auto op = linalg::MatmulOp::create(b, loc, resultTypes, ins, outs);
      op.setIndexingMapsAttr(
          b.getAffineMapArrayAttr({AffineMap::get(3, 0, {dk, dm}, ctx),
                                   AffineMap::get(3, 0, {dn, dk}, ctx),
                                   AffineMap::get(3, 0, {dm, dn}, ctx)}));
      return op.getResult(0);
    }
    if (transposeA)
      return linalg::MatmulTransposeAOp::create(b, loc, resultTypes, ins, outs)
          .getResult(0);
    if (transposeB)
      return linalg::MatmulTransposeBOp::create(b, loc, resultTypes, ins, outs)
          .getResult(0);
    return linalg::MatmulOp::create(b, loc, resultTypes, ins, outs)
        .getResult(0);
  }
  if (transposeA && transposeB) {
    MLIRContext *ctx = b.getContext();
    AffineExpr db, dm, dn, dk;
    bindDims(ctx, db, dm, dn, dk);
    auto op = linalg::BatchMatmulOp::create(b, loc, resultTypes, ins, outs);
    op.setIndexingMapsAttr(
        b.getAffineMapArrayAttr({AffineMap::get(4, 0, {db, dk, dm}, ctx),
                                 AffineMap::get(4, 0, {db, dn, dk}, ctx),
                                 AffineMap::get(4, 0, {db, dm, dn}, ctx)}));
    return op.getResult(0);
  }
  if (transposeA)
    return linalg::BatchMatmulTransposeAOp::create(b, loc, resultTypes, ins,
                                                   outs)
        .getResult(0);
  if (transposeB)
    return linalg::BatchMatmulTransposeBOp::create(b, loc, resultTypes, ins,
                                                   outs)
        .getResult(0);
  return linalg::BatchMatmulOp::create(b, loc, resultTypes, ins, outs)
      .getResult(0);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto srcType = tensorType(v);
  ArrayRef<int64_t> src = srcType.getShape();
  if (src == shape)
    return v;
  auto dstType = RankedTensorType::get(shape, srcType.getElementType());
  if (shape.empty())
    return tensor::CollapseShapeOp::create(b, loc, dstType, v,
                                           ArrayRef<ReassociationIndices>{});
  if (src.empty())
    return tensor::ExpandShapeOp::create(b, loc, dstType, v,
                                         ArrayRef<ReassociationIndices>{});
  if (src.size() > shape.size())
    if (auto re = getReassociationIndicesForCollapse(src, shape))
      return tensor::CollapseShapeOp::create(b, loc, dstType, v, *re);
  if (src.size() < shape.size())
    if (auto re = getReassociationIndicesForCollapse(shape, src))
      return tensor::ExpandShapeOp::create(b, loc, dstType, v, *re);
  // No single reassociation: flatten, then unflatten.
  SmallVector<int64_t> flat{numElements(src)};
  Value mid = reshapeTo(b, loc, v, flat);
  return reshapeTo(b, loc, mid, shape);
}

Value castElements(OpBuilder &b, Location loc, Value v, Type elemType) {
  auto type = tensorType(v);
  if (type.getElementType() == elemType)
    return v;
  return buildElementwise(
      b, loc, RankedTensorType::get(type.getShape(), elemType), v,
      [](OpBuilder &, Location, ValueRange args) -> SmallVector<Value> {
        return {args[0]};
      });
}

Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t dim, bool log) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(x);
  ArrayRef<int64_t> shape = type.getShape();
  unsigned rank = shape.size();
  Type ct = getComputeType(type.getElementType());
  AffineMap id = identityMap(ctx, rank);
  AffineMap row = dropDimsMap(ctx, rank, {dim});

  // Subtracting the row max keeps exp in range.
  Value max =
      buildReduction(
          b, loc, shape, x, id, {dim}, ct, {-INFINITY},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            return {arith::MaximumFOp::create(b, loc, a[0], a[1])};
          })
          .front();
  Value sum =
      buildReduction(
          b, loc, shape, ValueRange{x, max}, {id, row}, {dim}, ct, {0.0},
          [](OpBuilder &b, Location loc, ValueRange a) -> SmallVector<Value> {
            Value d = arith::SubFOp::create(b, loc, a[0], a[1]);
            Value e = math::ExpOp::create(b, loc, d);
            return {arith::AddFOp::create(b, loc, e, a[2])};
          })
          .front();
  Value init = emptyTensor(b, loc, shape, type.getElementType());
  return buildGeneric(b, loc, shape, ValueRange{x, max, sum}, {id, row, row},
                      init, id, {},
                      [&](OpBuilder &b, Location loc,
                          ValueRange a) -> SmallVector<Value> {
                        Value d = arith::SubFOp::create(b, loc, a[0], a[1]);
                        if (log) {
                          Value ls = math::LogOp::create(b, loc, a[2]);
                          return {arith::SubFOp::create(b, loc, d, ls)};
                        }
                        Value e = math::ExpOp::create(b, loc, d);
                        return {arith::DivFOp::create(b, loc, e, a[2])};
                      })
      .front();
}

bool hasStaticShapes(Operation *op) {
  auto isStatic = [](Type t) {
    auto st = dyn_cast<ShapedType>(t);
    return !st || st.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

Value vocabOffset(OpBuilder &b, Location loc, Value offset) {
  if (!offset)
    return {};
  SmallVector<Value> zeros(tensorType(offset).getRank(),
                           arith::ConstantIndexOp::create(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, offset, zeros);
}

std::pair<Value, Value> pieceRow(OpBuilder &b, Location loc, Value id,
                                 Value offset, int64_t rows) {
  Type t = offset.getType();
  if (id.getType() != t)
    id = arith::ExtSIOp::create(b, loc, t, id);
  Value local = arith::SubIOp::create(b, loc, id, offset);
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, 0));
  Value end = arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, rows));
  Value inside = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, local, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, local, end));
  Value row = arith::SelectOp::create(b, loc, inside, local, zero);
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), row), inside};
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Value addInto(OpBuilder &b, Location loc, Value x, Value acc) {
  auto type = tensorType(acc);
  AffineMap id = identityMap(b.getContext(), type.getRank());
  return buildGeneric(b, loc, type.getShape(), x, id, acc, id, {},
                      [](OpBuilder &b, Location loc,
                         ValueRange a) -> SmallVector<Value> {
                        return {arith::AddFOp::create(b, loc, a[1], a[0])};
                      })
      .front();
}

SmallVector<Value> forEachBlock(OpBuilder &b, Location loc, OpFoldResult begin,
                                OpFoldResult end, int64_t blockSize,
                                int64_t rest, ValueRange inits, BlockFn body) {
  SmallVector<Value> carried(inits);
  std::optional<int64_t> lo = getConstantIntValue(begin);
  std::optional<int64_t> hi = getConstantIntValue(end);
  auto value = [&](OpFoldResult v) -> Value {
    if (auto c = getConstantIntValue(v))
      return arith::ConstantIndexOp::create(b, loc, *c);
    return cast<Value>(v);
  };
  if (!lo || !hi || *lo < *hi) {
    Value step = arith::ConstantIndexOp::create(b, loc, blockSize);
    auto loop = scf::ForOp::create(
        b, loc, value(begin), value(end), step, carried,
        [&](OpBuilder &nb, Location nloc, Value start, ValueRange iter) {
          scf::YieldOp::create(nb, nloc,
                               body(nb, nloc, start, blockSize, iter));
        });
    carried.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (rest > 0)
    carried = body(b, loc, value(end), rest, carried);
  return carried;
}

SmallVector<Value> forEachBlock(OpBuilder &b, Location loc, int64_t t,
                                int64_t blockSize, ValueRange inits,
                                BlockFn body) {
  int64_t whole = t / blockSize * blockSize;
  return forEachBlock(b, loc, b.getIndexAttr(0), b.getIndexAttr(whole),
                      blockSize, t - whole, inits, body);
}

} // namespace mlir::ds::nntolinalg
