//===- StaticCopies.cpp - The ds-static-copies pass -----------------------===//
//
// A copy between buffers whose type fixes shape and offset needs neither
// descriptor's metadata: only the two aligned pointers and a constant
// byte count (none when two arguments are one buffer).
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::ds {
#define GEN_PASS_DEF_STATICCOPIES
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// Bytes of a buffer of `type` if its shape and layout are fixed by the type
/// (static identity layout, whole-byte elements), else nothing.
std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  return type.getNumElements() * (element.getIntOrFloatBitWidth() / 8);
}

/// Whether `v` is a function argument or a view of one.
bool isArgument(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    v = view.getViewSource();
  }
  return isa<FunctionOpInterface>(
      cast<BlockArgument>(v).getOwner()->getParentOp());
}

struct StaticCopiesPass : ds::impl::StaticCopiesBase<StaticCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      auto source = dyn_cast<MemRefType>(copy.getSource().getType());
      auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (!source || !target || source != target)
        continue;
      std::optional<int64_t> bytes = staticBytes(source);
      if (!bytes)
        continue;
      OpBuilder b(copy);
      Location loc = copy.getLoc();
      auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
      auto pointer = [&](Value memref) -> Value {
        Value address =
            memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
        Value asInt =
            arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
        return LLVM::IntToPtrOp::create(b, loc, ptrType, asInt);
      };
      Value from = pointer(copy.getSource());
      Value to = pointer(copy.getTarget());
      Value size = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                            b.getI64IntegerAttr(*bytes));
      // Two arguments may be one buffer at run time: the state store binds
      // an updated state's result to its argument. That copy is skipped,
      // since it changes nothing and the buffer may be no memory at all (an
      // NVMe-swapped moment's key, docs/offload.md).
      if (isArgument(copy.getSource()) && isArgument(copy.getTarget())) {
        Value same =
            LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, from, to);
        Value none = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                              b.getI64IntegerAttr(0));
        size = LLVM::SelectOp::create(b, loc, same, none, size);
      }
      LLVM::MemcpyOp::create(b, loc, to, from, size, /*isVolatile=*/false);
      copy.erase();
      ++numCopies;
    }
  }
};

} // namespace
