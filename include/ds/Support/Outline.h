//===- Outline.h - ops into functions shared by equal bodies ----*- C++ -*-===//
//
// Compile once what repeats: a range of ops becomes a private function and
// a call, and ranges with the same body (ops, types, attributes, and the
// order in which they read values from outside) share one function. Used
// for layers (ds-outline-layers) and for the per-parameter loops of a step
// (ds-outline-kernels), so code size grows with the number of distinct
// computations rather than with model depth.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_OUTLINE_H
#define DS_SUPPORT_OUTLINE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::ds {

class FunctionOutliner {
public:
  /// `countAttr` on each function counts the ranges it serves.
  FunctionOutliner(ModuleOp module, llvm::StringRef countAttr);

  /// Inserts at `b`'s insertion point a call of a private function
  /// computing `results` from the values `ops` (consecutive ops of one
  /// block) read from outside, which become the call's operands in order of
  /// first use; constants are cloned in. A new function is named `baseName`
  /// (then `baseName_1`, ...), gets `attrs` and is `noinline`. The caller
  /// replaces uses of `results` by the call's and erases `ops`.
  func::CallOp outline(OpBuilder &b, llvm::ArrayRef<Operation *> ops,
                       ValueRange results, llvm::StringRef baseName,
                       llvm::ArrayRef<NamedAttribute> attrs = {});

  /// The same, for a caller that has `key` = bodyKey(ops, results, attrs)
  /// already: a range whose body has a function builds nothing.
  func::CallOp outline(OpBuilder &b, llvm::ArrayRef<Operation *> ops,
                       ValueRange results, llvm::StringRef key,
                       llvm::StringRef baseName,
                       llvm::ArrayRef<NamedAttribute> attrs = {});

  /// What `outline` compares: equal keys, one function.
  static std::string bodyKey(llvm::ArrayRef<Operation *> ops,
                             ValueRange results,
                             llvm::ArrayRef<NamedAttribute> attrs = {});

private:
  SymbolTable symbols_;
  std::string countAttr_;
  llvm::StringMap<func::FuncOp> byBody_;
};

} // namespace mlir::ds

#endif // DS_SUPPORT_OUTLINE_H
