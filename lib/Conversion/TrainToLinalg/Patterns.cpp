//===- Patterns.cpp - Shared pieces of the dstrain lowering ---------------===//
#include "Patterns.h"

#include "../NNToLinalg/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::ds::nntolinalg;

namespace mlir::ds::traintolinalg {

Value extractScalar(OpBuilder &b, Location loc, Value tensor) {
  return tensor::ExtractOp::create(b, loc, tensor, ValueRange{});
}

Value scalarTensor(OpBuilder &b, Location loc, Value scalar) {
  auto type = RankedTensorType::get({}, scalar.getType());
  return tensor::FromElementsOp::create(b, loc, type, scalar);
}

Value freshAccumulator(OpBuilder &b, Location loc, Value acc) {
  return scalarTensor(b, loc, extractScalar(b, loc, acc));
}

Value stepAsF64(OpBuilder &b, Location loc, Value stepTensor) {
  return arith::SIToFPOp::create(b, loc, b.getF64Type(),
                                 extractScalar(b, loc, stepTensor));
}

Value powConst(OpBuilder &b, Location loc, double base, Value exponent) {
  return math::PowFOp::create(b, loc, floatConst(b, loc, b.getF64Type(), base),
                              exponent);
}

Value sumOfSquares(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                   Type elemType) {
  MLIRContext *ctx = b.getContext();
  Type f64 = b.getF64Type();
  if (!elemType)
    elemType = b.getF32Type();
  // One accumulator runs through every gradient of the model, hundreds of
  // millions of terms: summed in f32 it drifts from the exact norm by 1e-4
  // relative at 0.77B parameters, so it is f64 (still a fixed order).
  Value acc =
      init ? scalarTensor(b, loc,
                          convertScalar(b, loc, extractScalar(b, loc, init), f64))
           : filledTensor(b, loc, {}, f64, 0.0);
  for (auto [i, in] : llvm::enumerate(inputs)) {
    ArrayRef<int64_t> shape = tensorType(in).getShape();
    unsigned rank = shape.size();
    auto all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    if (i > 0)
      acc = freshAccumulator(b, loc, acc);
    acc = buildGeneric(b, loc, shape, in, identityMap(ctx, rank), acc,
                       AffineMap::get(rank, 0, ctx), all,
                       [&](OpBuilder &b, Location loc,
                           ValueRange a) -> SmallVector<Value> {
                         Value x = convertScalar(b, loc, a[0], f64);
                         Value sq = arith::MulFOp::create(b, loc, x, x);
                         return {arith::AddFOp::create(b, loc, a[1], sq)};
                       })
              .front();
  }
  return scalarTensor(
      b, loc, convertScalar(b, loc, extractScalar(b, loc, acc), elemType));
}

} // namespace mlir::ds::traintolinalg
