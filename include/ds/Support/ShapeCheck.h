//===- ShapeCheck.h - Shape helpers shared by ds verifiers -------*- C++
//-*-===//
//
// Verifiers in every ds dialect print shapes the same way and treat dynamic
// dims the same way; these helpers keep that in one place.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_SHAPECHECK_H
#define DS_SUPPORT_SHAPECHECK_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace mlir::ds {

/// True when two dims can be equal at run time (either is dynamic or both
/// are the same static size).
inline bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// True when the shapes have the same rank and compatible dims.
bool shapesCompatible(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// "[2, 8, ?]" for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// NumPy broadcast of two shapes, or nullopt when some pair of dims is
/// neither equal nor 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Shortest round-trip form of a number for diagnostics: "0.02", "-1", "1e-05".
std::string formatNumber(double value);

/// Normalizes a possibly negative dim index; nullopt when out of range.
std::optional<int64_t> normalizeDim(int64_t dim, int64_t rank);

} // namespace mlir::ds

#endif // DS_SUPPORT_SHAPECHECK_H
