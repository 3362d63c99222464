//===- SplitEntryBlocks.cpp - The ds-split-entry-blocks pass --------------===//
//
// A function's arguments become LLVM descriptors at the top of its entry
// block; with the body in a block of its own, that conversion does not
// reorder the body once per argument.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_SPLITENTRYBLOCKS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct SplitEntryBlocksPass
    : ds::impl::SplitEntryBlocksBase<SplitEntryBlocksPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn.getNumArguments() == 0)
        continue;
      Block &entry = fn.getBody().front();
      Block *body = entry.splitBlock(entry.begin());
      OpBuilder b = OpBuilder::atBlockEnd(&entry);
      cf::BranchOp::create(b, fn.getLoc(), body);
      ++numSplit;
    }
  }
};

} // namespace
