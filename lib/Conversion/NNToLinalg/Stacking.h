//===- Stacking.h - Per-layer values stacked along a leading dim -*- C++
//-*-===//
//
// ds-stack-layers and ds-stack-arguments keep K per-layer values of one type
// as one tensor<K x ...>, layer k at index k; these build the stacked type
// and one layer's slice of it.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_NNTOLINALG_STACKING_H
#define DS_LIB_CONVERSION_NNTOLINALG_STACKING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::ds::nntolinalg {

/// `layerType` (a static ranked tensor) with a leading dimension of `k`.
RankedTensorType stackedType(Type layerType, unsigned k);

/// Layer `index`'s slice of `stacked`, rank-reduced to `layerType`.
Value extractLayer(OpBuilder &b, Location loc, Value stacked, Value index,
                   Type layerType);

/// `stacked` with layer `index`'s slice replaced by `value`.
Value insertLayer(OpBuilder &b, Location loc, Value value, Value stacked,
                  Value index);

} // namespace mlir::ds::nntolinalg

#endif // DS_LIB_CONVERSION_NNTOLINALG_STACKING_H
