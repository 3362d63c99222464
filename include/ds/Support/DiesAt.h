//===- DiesAt.h - Nothing reads a value after an op -------------*- C++ -*-===//
//
// The one predicate behind writing a result over its operand: ds-elementwise-
// in-place rewrites an elementwise op to write over an input that dies
// there, and ds-plan-memory counts that op's result in the input's bytes.
// Both ask this function, so the plan follows the rewrite by construction.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_DIESAT_H
#define DS_SUPPORT_DIESAT_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace mlir::ds {

/// Whether `op` is the last reader of `v`: `op` takes it as exactly one
/// operand, and every other use is in an op before `op` in `op`'s block
/// (a use nested in a region counts at its ancestor there).
inline bool diesAt(mlir::Value v, mlir::Operation *op) {
  unsigned inOp = 0;
  for (mlir::OpOperand &use : v.getUses()) {
    if (use.getOwner() == op) {
      ++inOp;
      continue;
    }
    mlir::Operation *at = op->getBlock()->findAncestorOpInBlock(*use.getOwner());
    if (!at || !at->isBeforeInBlock(op))
      return false;
  }
  return inOp == 1;
}

} // namespace mlir::ds

#endif // DS_SUPPORT_DIESAT_H
