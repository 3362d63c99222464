//===- Stacking.cpp - Per-layer values stacked along a leading dim --------===//
#include "Stacking.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace {

/// Offsets [index, 0, ...], sizes [1, shape...], strides 1: one layer's
/// slice, rank-reduced to the layer's type.
void sliceParams(OpBuilder &b, Value index, RankedTensorType type,
                 SmallVector<OpFoldResult> &offsets,
                 SmallVector<OpFoldResult> &sizes,
                 SmallVector<OpFoldResult> &strides) {
  offsets.assign(1, index);
  sizes.assign(1, b.getIndexAttr(1));
  strides.assign(type.getRank() + 1, b.getIndexAttr(1));
  for (int64_t d : type.getShape()) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(d));
  }
}

} // namespace

namespace mlir::ds::nntolinalg {

RankedTensorType stackedType(Type layerType, unsigned k) {
  auto type = cast<RankedTensorType>(layerType);
  SmallVector<int64_t> shape{static_cast<int64_t>(k)};
  llvm::append_range(shape, type.getShape());
  return RankedTensorType::get(shape, type.getElementType());
}

Value extractLayer(OpBuilder &b, Location loc, Value stacked, Value index,
                   Type layerType) {
  auto type = cast<RankedTensorType>(layerType);
  SmallVector<OpFoldResult> offsets, sizes, strides;
  sliceParams(b, index, type, offsets, sizes, strides);
  return tensor::ExtractSliceOp::create(b, loc, type, stacked, offsets, sizes,
                                        strides);
}

Value insertLayer(OpBuilder &b, Location loc, Value value, Value stacked,
                  Value index) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  sliceParams(b, index, type, offsets, sizes, strides);
  return tensor::InsertSliceOp::create(b, loc, value, stacked, offsets, sizes,
                                       strides);
}

} // namespace mlir::ds::nntolinalg
