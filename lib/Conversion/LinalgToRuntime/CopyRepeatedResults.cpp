//===- CopyRepeatedResults.cpp - The ds-copy-repeated-results pass --------===//
//
// buffer-results-to-out-params gives each result its own out-param and
// replaces a returned static allocation by it: a buffer returned twice
// would be replaced (and erased) twice. A copy per repeat keeps every
// returned buffer distinct.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_COPYREPEATEDRESULTS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// A new identity-layout buffer of `value`'s shape holding its contents.
Value copyBuffer(OpBuilder &b, Location loc, Value value) {
  auto type = cast<MemRefType>(value.getType());
  SmallVector<Value> dynamicSizes;
  for (auto [dim, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamicSizes.push_back(memref::DimOp::create(b, loc, value, dim));
  Value copy = memref::AllocOp::create(b, loc, type, dynamicSizes);
  memref::CopyOp::create(b, loc, value, copy);
  return copy;
}

struct CopyRepeatedResultsPass
    : ds::impl::CopyRepeatedResultsBase<CopyRepeatedResultsPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::ReturnOp ret) {
      llvm::SmallDenseSet<Value> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<MemRefType>(value.getType());
        if (!type || !type.getLayout().isIdentity() ||
            seen.insert(value).second)
          continue;
        operand.set(copyBuffer(b, ret.getLoc(), value));
        ++numCopies;
      }
    });
  }
};

} // namespace
