//===- CodeCalls.h - Whether an op runs a function of the step ---*- C++
//-*-===//
//
// A call of a function defined in the module (a layer, a pipeline stage's
// chunk) runs a whole arena's worth of work: the tensor-level rewrites that
// trade a buffer's life for fewer loops or allocations (fusion, sharing an
// empty tensor) stop at one. Calls of declarations (libdsrt's trace
// markers) run none.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_LINALGTORUNTIME_CODECALLS_H
#define DS_LIB_CONVERSION_LINALGTORUNTIME_CODECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ds {

/// Whether `op`, or an op nested in it, calls a function with a body.
inline bool runsDefinedFunction(Operation *op) {
  return op
      ->walk([](func::CallOp call) {
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        return callee && !callee.isExternal() ? WalkResult::interrupt()
                                              : WalkResult::advance();
      })
      .wasInterrupted();
}

} // namespace mlir::ds

#endif // DS_LIB_CONVERSION_LINALGTORUNTIME_CODECALLS_H
