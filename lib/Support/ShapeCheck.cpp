//===- ShapeCheck.cpp - Shape helpers shared by ds verifiers
//---------------===//
#include "ds/Support/ShapeCheck.h"

#include "llvm/Support/raw_ostream.h"
#include <charconv>

using namespace mlir;

bool ds::shapesCompatible(llvm::ArrayRef<int64_t> a,
                          llvm::ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (!dimsCompatible(x, y))
      return false;
  return true;
}

std::string ds::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

std::optional<llvm::SmallVector<int64_t>>
ds::broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (dimsCompatible(x, y))
      out[i] = ShapedType::isDynamic(x) ? y : x;
    else
      return std::nullopt;
  }
  return out;
}

std::string ds::formatNumber(double value) {
  // Shortest form that reads back to the same double: 20, 0.001, 1e-08.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(value);
}

std::optional<int64_t> ds::normalizeDim(int64_t dim, int64_t rank) {
  if (dim < -rank || dim >= rank)
    return std::nullopt;
  return dim < 0 ? dim + rank : dim;
}
