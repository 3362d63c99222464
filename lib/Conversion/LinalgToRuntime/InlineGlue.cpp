//===- InlineGlue.cpp - The ds-inline-glue pass ---------------------------===//
//
// @train_step's one call of @forward_backward passes every parameter and
// returns every gradient; bufferization is quadratic in a call's arity and
// the lowered call passes every descriptor field. Both are glue, so the
// callee's body moves into the caller.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ds {
#define GEN_PASS_DEF_INLINEGLUE
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct InlineGluePass : ds::impl::InlineGlueBase<InlineGluePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Calls per callee, counted once over the module.
    llvm::DenseMap<Operation *, SmallVector<func::CallOp, 1>> calls;
    SymbolTableCollection symbols;
    module.walk([&](func::CallOp call) {
      if (Operation *callee = call.resolveCallableInTable(&symbols))
        calls[callee].push_back(call);
    });
    SmallVector<std::pair<func::CallOp, func::FuncOp>> inline_;
    for (auto fn : module.getOps<func::FuncOp>()) {
      auto it = calls.find(fn);
      if (it == calls.end() || it->second.size() != 1 || fn.isExternal() ||
          fn->hasAttr("dsnn.layer_count") || !fn.getBody().hasOneBlock())
        continue;
      // Only the call uses the symbol.
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(fn, module);
      if (!uses || std::distance(uses->begin(), uses->end()) != 1)
        continue;
      inline_.emplace_back(it->second.front(), fn);
    }
    for (auto [call, fn] : inline_) {
      if (call->getParentOfType<func::FuncOp>() == fn)
        continue; // recursive
      Block &body = fn.getBody().front();
      auto ret = cast<func::ReturnOp>(body.getTerminator());
      if (fn.isPrivate()) {
        // Its only use goes: move the body (~100k ops at 96 layers) rather
        // than copy it and erase the original.
        for (auto [arg, operand] :
             llvm::zip_equal(body.getArguments(), call.getOperands()))
          arg.replaceAllUsesWith(operand);
        call->getBlock()->getOperations().splice(
            call->getIterator(), body.getOperations(), body.begin(),
            ret->getIterator());
        call.replaceAllUsesWith(ret.getOperands());
        call.erase();
        fn.erase();
      } else {
        // A public function stays for other callers (ds-train's entry
        // points drop it later, unused).
        IRMapping map;
        map.map(fn.getArguments(), call.getOperands());
        OpBuilder b(call);
        for (Operation &op : body.without_terminator())
          b.clone(op, map);
        for (auto [result, value] :
             llvm::zip_equal(call.getResults(), ret.getOperands()))
          result.replaceAllUsesWith(map.lookupOrDefault(value));
        call.erase();
      }
      ++numInlined;
    }
  }
};

} // namespace
