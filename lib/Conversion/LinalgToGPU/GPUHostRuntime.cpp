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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
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

  /// What an op does to "asynchronous work may be pending".
  enum class Effect { None, Async, Synced };
  static Effect effectOf(Operation &op) {
    if (auto call = dyn_cast<LLVM::CallOp>(op))
      return call.getCallee() && isHostOnlyBookkeeping(*call.getCallee())
                 ? Effect::None
                 : Effect::Async;
    // A launch returns after synchronizing the ds stream, which holds every
    // earlier GEMM and update too.
    if (isa<gpu::LaunchFuncOp>(op))
      return Effect::Synced;
    return op.getNumRegions() > 0 ? Effect::Async : Effect::None;
  }

  /// A host load or store of memory the device may use: stack slots
  /// (descriptors, pointer arrays) and globals never are.
  static bool isHostAccess(Operation &op) {
    Value address;
    if (auto load = dyn_cast<LLVM::LoadOp>(op))
      address = load.getAddr();
    else if (auto store = dyn_cast<LLVM::StoreOp>(op))
      address = store.getAddr();
    else
      return false;
    return !address.getDefiningOp<LLVM::AllocaOp>() &&
           !address.getDefiningOp<LLVM::AddressOfOp>();
  }

  /// A collective or point-to-point call: its backend (MPI on managed
  /// memory, or NCCL on a stream of its own) reads the buffers with no
  /// order on the ds stream, so it waits for the work before it, as a host
  /// access does.
  static bool isCollective(Operation &op) {
    auto call = dyn_cast<LLVM::CallOp>(op);
    if (!call || !call.getCallee() || !call.getCallee()->starts_with("dsrt_"))
      return false;
    StringRef callee = *call.getCallee();
    return llvm::any_of(ArrayRef<StringRef>{"all_gather", "all_reduce",
                                            "reduce_scatter", "all_to_all",
                                            "broadcast", "send", "recv"},
                        [&](StringRef kind) { return callee.contains(kind); });
  }

  /// One dsrt_cuda_host_sync before each host access that asynchronous work
  /// may precede, placed where that work is issued rather than where it is
  /// read: a host loop reading device memory after a GEMM syncs once before
  /// the loop, not once per iteration.
  void insertHostSyncs(OpBuilder &b, ModuleOp module) {
    auto type =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()), {});
    LLVM::LLVMFuncOp sync;
    auto insertBefore = [&](Operation *op) {
      if (!sync)
        sync = declare(b, module, "dsrt_cuda_host_sync", type);
      b.setInsertionPoint(op);
      LLVM::CallOp::create(b, op->getLoc(), sync, ValueRange{});
      ++numSyncs;
    };
    enum class Exit { Transparent, Pending, Clear };
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      if (fn.isExternal())
        continue;
      // Within each block: a sync after local asynchronous work; what the
      // block needs from its predecessors and what it leaves to successors.
      llvm::DenseMap<Block *, Operation *> exposed; // first access, no effect
      llvm::DenseMap<Block *, Exit> exit;
      for (Block &block : fn.getBody()) {
        Exit state = Exit::Transparent;
        for (Operation &op : block) {
          if (isHostAccess(op) || isCollective(op)) {
            if (state == Exit::Transparent) {
              exposed.try_emplace(&block, &op);
              state = Exit::Clear; // cleared by whatever the preds place
            } else if (state == Exit::Pending) {
              insertBefore(&op);
              state = Exit::Clear;
            }
          }
          Effect effect = effectOf(op);
          if (effect == Effect::Async)
            state = Exit::Pending;
          else if (effect == Effect::Synced)
            state = Exit::Clear;
        }
        exit[&block] = state;
      }
      // Blocks whose first access follows nothing of their own: sync where
      // the pending work was issued. `entry` counts as pending (the caller's
      // work), syncing at the top of the function.
      Block *entry = &fn.getBody().front();
      auto pendingIn = [&](Block *block) {
        // May asynchronous work reach the top of `block`?
        llvm::SmallPtrSet<Block *, 16> seen;
        SmallVector<Block *> work = {block};
        while (!work.empty()) {
          Block *b = work.pop_back_val();
          if (!seen.insert(b).second)
            continue;
          if (b == entry)
            return true;
          for (Block *pred : b->getPredecessors()) {
            Exit e = exit[pred];
            if (e == Exit::Pending)
              return true;
            if (e == Exit::Transparent)
              work.push_back(pred);
          }
        }
        return false;
      };
      for (Block &block : fn.getBody()) {
        auto it = exposed.find(&block);
        if (it == exposed.end() || !pendingIn(&block))
          continue;
        if (&block == entry) {
          insertBefore(it->second);
          continue;
        }
        // Walk back through blocks that pass the state on; place a sync at
        // the end of each that leaves work pending (or at the top of the
        // function if the entry is reached).
        llvm::SmallPtrSet<Block *, 16> seen;
        SmallVector<Block *> work(block.getPredecessors().begin(),
                                  block.getPredecessors().end());
        while (!work.empty()) {
          Block *pred = work.pop_back_val();
          if (!seen.insert(pred).second)
            continue;
          Exit &e = exit[pred];
          if (e == Exit::Pending) {
            insertBefore(pred->getTerminator());
            e = Exit::Clear;
          } else if (e == Exit::Transparent) {
            if (pred == entry) {
              insertBefore(pred->getTerminator());
              e = Exit::Clear;
            } else {
              work.append(pred->getPredecessors().begin(),
                          pred->getPredecessors().end());
            }
          }
        }
      }
    }
  }
};

} // namespace
