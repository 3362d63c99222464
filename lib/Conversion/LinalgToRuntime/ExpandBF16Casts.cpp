//===- ExpandBF16Casts.cpp - bf16 conversions as integer arithmetic -------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ds {
#define GEN_PASS_DEF_EXPANDBF16CASTS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct ExpandBF16CastsPass
    : public ds::impl::ExpandBF16CastsBase<ExpandBF16CastsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
