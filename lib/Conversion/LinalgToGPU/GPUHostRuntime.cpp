//===- GPUHostRuntime.cpp - The ds-gpu-host-runtime pass ------------------===//
//
// The CPU lowering's host code, made a GPU step's: its runtime calls go to
// their device forms, its allocations become managed memory, and a host
// access waits for the asynchronous work (GEMMs, the optimizer) before it.
// Done on the LLVM dialect, after everything that emits calls (the
// workspace allocation included), so no call escapes the redirection.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_GPUHOSTRUNTIME
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

/// Same signature on both sides.
const llvm::StringMap<StringRef> &renamed() {
  static const llvm::StringMap<StringRef> map = {
      {"dsrt_sgemm", "dsrt_cuda_sgemm"},
      {"dsrt_sgemm_strided_batched", "dsrt_cuda_sgemm_strided_batched"},
      {"dsrt_workspace_alloc", "dsrt_cuda_workspace_alloc"},
      {"dsrt_workspace_free", "dsrt_cuda_workspace_free"},
      {"malloc", "dsrt_cuda_managed_alloc"},
      {"free", "dsrt_cuda_managed_free"},
  };
  return map;
}

/// Fused CPU optimizer kernels with no device form yet.
bool isHostOnlyKernel(StringRef callee) {
  return callee.starts_with("dsrt_") &&
         (callee.ends_with("_multi") || callee == "dsrt_adam" ||
          callee == "dsrt_sgd" || callee == "dsrt_lamb") &&
         callee != "dsrt_adam_multi";
}

/// Calls that neither start device work nor touch device memory.
bool isHostOnlyBookkeeping(StringRef callee) {
  return callee.starts_with("dsrt_trace_") || callee == "dsrt_check" ||
         callee == "dsrt_cuda_host_sync";
}

LLVM::LLVMFuncOp declare(OpBuilder &b, ModuleOp module, StringRef name,
                         LLVM::LLVMFunctionType type) {
  OpBuilder::InsertionGuard guard(b);
  return *LLVM::lookupOrCreateFn(b, module, name, type.getParams(),
                                 type.getReturnType());
}

struct GPUHostRuntimePass : ds::impl::GPUHostRuntimeBase<GPUHostRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    if (failed(redirectCalls(b, module)))
      return signalPassFailure();
    insertHostSyncs(b, module);
  }

  LogicalResult redirectCalls(OpBuilder &b, ModuleOp module) {
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    SmallVector<LLVM::CallOp> calls;
    module.walk([&](LLVM::CallOp call) {
      if (call.getCallee() && !call->getParentOfType<gpu::GPUModuleOp>())
        calls.push_back(call);
    });
    for (LLVM::CallOp call : calls) {
      StringRef callee = *call.getCallee();
      if (isHostOnlyKernel(callee))
        return call.emitError()
               << "the GPU target has no device kernel for " << callee
               << " yet: train with Adam or AdamW (\"optimizer\": {\"type\": "
                  "\"AdamW\"}), or compile for --target cpu";
      auto old = module.lookupSymbol<LLVM::LLVMFuncOp>(callee);
      if (!old)
        continue;
      auto it = renamed().find(callee);
      if (it != renamed().end()) {
        declare(b, module, it->second, old.getFunctionType());
        call.setCallee(it->second);
        ++numRedirected;
        continue;
      }
      if (callee == "dsrt_adam_multi") {
        // The same arguments and a stream: null is the legacy default
        // stream, ordered with the blocking ds stream.
        SmallVector<Type> params(old.getFunctionType().getParams());
        params.push_back(ptr);
        auto type = LLVM::LLVMFunctionType::get(
            old.getFunctionType().getReturnType(), params);
        LLVM::LLVMFuncOp fn = declare(b, module, "dsrt_cuda_adam_multi", type);
        b.setInsertionPoint(call);
        SmallVector<Value> args(call.getArgOperands());
        args.push_back(LLVM::ZeroOp::create(b, call.getLoc(), ptr));
        auto replacement = LLVM::CallOp::create(b, call.getLoc(), fn, args);
        call.replaceAllUsesWith(replacement.getResults());
        call.erase();
        ++numRedirected;
      }
    }
    // Declarations nothing calls any more.
    for (auto fn :
         llvm::make_early_inc_range(module.getOps<LLVM::LLVMFuncOp>()))
      if (fn.isExternal() &&
          (renamed().count(fn.getName()) ||
           fn.getName() == "dsrt_adam_multi") &&
          fn.getSymbolUses(module)->empty())
        fn.erase();
    return success();
  }

  /// Before the first host load or store after anything asynchronous (a
  /// call, a block boundary, a region) one dsrt_cuda_host_sync.
  void insertHostSyncs(OpBuilder &b, ModuleOp module) {
    auto type =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()), {});
    LLVM::LLVMFuncOp sync;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      if (fn.isExternal())
        continue;
      for (Block &block : fn.getBody()) {
        bool pending = true;
        for (Operation &op : block) {
          if (auto call = dyn_cast<LLVM::CallOp>(op)) {
            if (!call.getCallee() || !isHostOnlyBookkeeping(*call.getCallee()))
              pending = true;
            continue;
          }
          // A launch returns after synchronizing the ds stream, which
          // holds every earlier GEMM and update too.
          if (isa<gpu::LaunchFuncOp>(op)) {
            pending = false;
            continue;
          }
          if (op.getNumRegions() > 0) {
            pending = true;
            continue;
          }
          if (!pending || !isa<LLVM::LoadOp, LLVM::StoreOp>(op))
            continue;
          // Stack slots (descriptors, pointer arrays) are never device
          // memory.
          Value address = isa<LLVM::LoadOp>(op)
                              ? cast<LLVM::LoadOp>(op).getAddr()
                              : cast<LLVM::StoreOp>(op).getAddr();
          if (address.getDefiningOp<LLVM::AllocaOp>() ||
              address.getDefiningOp<LLVM::AddressOfOp>())
            continue;
          if (!sync)
            sync = declare(b, module, "dsrt_cuda_host_sync", type);
          b.setInsertionPoint(&op);
          LLVM::CallOp::create(b, op.getLoc(), sync, ValueRange{});
          ++numSyncs;
          pending = false;
        }
      }
    }
  }
};

} // namespace
