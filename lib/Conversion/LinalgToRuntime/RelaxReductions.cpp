//===- RelaxReductions.cpp - reassoc on max/min reduction combiners -----===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::ds {
#define GEN_PASS_DEF_RELAXREDUCTIONS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct RelaxReductionsPass
    : public ds::impl::RelaxReductionsBase<RelaxReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() == 0 || op->getNumRegions() == 0 ||
          op->getRegion(0).empty())
        return;
      Block *body = op.getBlock();
      for (OpOperand &init : op.getDpsInitsMutable()) {
        BlockArgument acc = op.getMatchingBlockArgument(&init);
        for (Operation *user : acc.getUsers()) {
          // Only where the order cannot change the result: sums and
          // products get a fixed order from ds-fixed-order-reductions.
          if (!isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
                   arith::MinNumFOp>(user))
            continue;
          auto fm = dyn_cast<arith::ArithFastMathInterface>(user);
          if (!fm || user->getBlock() != body)
            continue;
          arith::FastMathFlags flags = fm.getFastMathFlagsAttr().getValue();
          user->setAttr(
              fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(
                  op.getContext(), flags | arith::FastMathFlags::reassoc));
        }
      }
    });
  }
};

} // namespace
