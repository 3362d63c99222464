//===- ApproximateMath.cpp - vectorizable exp/log/tanh/erf
//-----------------===//
//
// MLIR's polynomial approximations (arith only) in place of libm calls, so
// the loops around them vectorize.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <set>
#include <string>

namespace mlir::ds {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct ApproximateMathPass
    : public ds::impl::ApproximateMathBase<ApproximateMathPass> {
  using Base::Base;
  void runOnOperation() override {
    std::set<std::string> names(ops.begin(), ops.end());
    if (names.empty())
      names = {"exp", "expm1", "log", "log1p", "log2", "tanh", "erf"};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [&](StringRef op) {
      op.consume_front("math.");
      return names.count(op.str()) > 0;
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
