//===- InternalizeFunctions.cpp - The ds-internalize-functions pass -------===//
//
// The LLVM dialect keeps `sym_visibility = "private"` from func.func but
// translates it to external linkage; only the linkage tells LLVM that
// every caller is in the module.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ds {
#define GEN_PASS_DEF_INTERNALIZEFUNCTIONS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct InternalizeFunctionsPass
    : ds::impl::InternalizeFunctionsBase<InternalizeFunctionsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (fn.isExternal() || !fn.isPrivate() ||
          fn.getLinkage() != LLVM::Linkage::External)
        continue;
      fn.setLinkage(LLVM::Linkage::Internal);
      ++numInternalized;
    }
  }
};

} // namespace
