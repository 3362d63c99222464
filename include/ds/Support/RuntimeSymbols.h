//===- RuntimeSymbols.h - libdsrt declarations and C strings ----*- C++ -*-===//
//
// What the passes that insert libdsrt calls before the LLVM conversion share
// (ds-outline-layers' timeline marks, ds-profile-spans' kernel timers): a
// private declaration of a dsrt_* function, made once per module, and a
// constant C string a call can pass by address.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_RUNTIMESYMBOLS_H
#define DS_SUPPORT_RUNTIMESYMBOLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir::ds {

/// The module's private declaration of `name`, added at its top if absent.
inline func::FuncOp declareRuntimeFunction(ModuleOp module,
                                           SymbolTable &symbols, StringRef name,
                                           FunctionType type) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  symbols.insert(fn);
  return fn;
}

/// A new internal constant holding `text` and a terminating NUL, named
/// `prefix` (the symbol table renames: prefix_0, prefix_1, ...).
inline LLVM::GlobalOp createCString(ModuleOp module, SymbolTable &symbols,
                                    StringRef text, StringRef prefix) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  std::string bytes = text.str();
  bytes.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  auto g = LLVM::GlobalOp::create(b, module.getLoc(), type,
                                  /*isConstant=*/true, LLVM::Linkage::Internal,
                                  prefix, b.getStringAttr(bytes));
  symbols.insert(g);
  return g;
}

} // namespace mlir::ds

#endif // DS_SUPPORT_RUNTIMESYMBOLS_H
