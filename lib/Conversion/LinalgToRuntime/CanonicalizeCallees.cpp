//===- CanonicalizeCallees.cpp - The ds-canonicalize-callees pass ---------===//
//
// The canonicalizer's patterns and configuration, applied function by
// function, skipping the entry points' C wrappers (the step's glue).
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"
#include "ds/Support/CInterface.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ds {
#define GEN_PASS_DEF_CANONICALIZECALLEES
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct CanonicalizeCalleesPass
    : ds::impl::CanonicalizeCalleesBase<CanonicalizeCalleesPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *ctx) override {
    // What the canonicalizer pass collects.
    RewritePatternSet owning(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(owning);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(owning, ctx);
    patterns = FrozenRewritePatternSet(std::move(owning));
    return success();
  }

  void runOnOperation() override {
    // The canonicalizer pass's defaults.
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true).setRegionSimplificationLevel(
        GreedySimplifyRegionLevel::Normal);
    for (auto fn : getOperation().getOps<LLVM::LLVMFuncOp>())
      if (!fn.isExternal() && !fn.getName().starts_with(ds::kCWrapperPrefix))
        (void)applyPatternsGreedily(fn, patterns, config);
  }

  FrozenRewritePatternSet patterns;
};

} // namespace
