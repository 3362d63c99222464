//===- WorkspacesAtLoad.cpp - The ds-workspaces-at-load pass --------------===//
//
// Each arena global of ds-plan-buffers becomes a pointer the loaded code
// sets from one dsrt_workspace_alloc in __ds_workspaces_init: static
// storage is reached PC-relative, which the small code model limits to
// 2 GiB, and a GPU target puts the same workspace in device memory.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"
#include "ds/Support/CInterface.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::ds {
#define GEN_PASS_DEF_WORKSPACESATLOAD
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct Arena {
  std::string name;
  int64_t bytes = 0;
  int64_t offset = 0; ///< in the one allocation
};

int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

LLVM::LLVMFuncOp declare(OpBuilder &b, ModuleOp module, StringRef name,
                         LLVM::LLVMFunctionType type) {
  if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return fn;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
}

struct WorkspacesAtLoadPass
    : ds::impl::WorkspacesAtLoadBase<WorkspacesAtLoadPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);

    std::vector<Arena> arenas;
    int64_t total = 0;
    for (auto global :
         llvm::make_early_inc_range(module.getOps<LLVM::GlobalOp>())) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (!global.getSymName().starts_with(ds::kArenaPrefix) || !array)
        continue;
      Arena arena;
      arena.name = global.getSymName().str();
      arena.bytes = static_cast<int64_t>(array.getNumElements()) *
                    std::max<int64_t>(
                        1, array.getElementType().getIntOrFloatBitWidth() / 8);
      int64_t align = std::max<int64_t>(global.getAlignment().value_or(64), 1);
      arena.offset = roundUp(total, align);
      total = arena.offset + arena.bytes;
      // The pointer, null until __ds_workspaces_init sets it.
      OpBuilder b(global);
      auto slot = LLVM::GlobalOp::create(
          b, global.getLoc(), ptr, /*isConstant=*/false,
          LLVM::Linkage::Internal, arena.name, Attribute(), /*alignment=*/8);
      slot->setAttr(ds::kWorkspaceBytesAttr, b.getI64IntegerAttr(arena.bytes));
      Block *init = b.createBlock(&slot.getInitializerRegion());
      b.setInsertionPointToStart(init);
      LLVM::ReturnOp::create(
          b, global.getLoc(),
          LLVM::ZeroOp::create(b, global.getLoc(), ptr).getResult());
      global.erase();
      arenas.push_back(std::move(arena));
    }
    if (arenas.empty())
      return;

    llvm::StringSet<> names;
    for (const Arena &arena : arenas)
      names.insert(arena.name);
    module.walk([&](LLVM::AddressOfOp addr) {
      if (!names.contains(addr.getGlobalName()))
        return;
      OpBuilder b(addr->getContext());
      b.setInsertionPointAfter(addr);
      auto base = LLVM::LoadOp::create(b, addr.getLoc(), ptr, addr.getResult(),
                                       /*alignment=*/8);
      addr.getResult().replaceAllUsesExcept(base.getResult(), base);
    });

    OpBuilder b(ctx);
    Location loc = module.getLoc();
    auto alloc = declare(b, module, "dsrt_workspace_alloc",
                         LLVM::LLVMFunctionType::get(ptr, {i64}));
    auto release = declare(
        b, module, "dsrt_workspace_free",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, i64}));
    b.setInsertionPointToEnd(module.getBody());
    auto constant = [&](int64_t v) -> Value {
      return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    auto slotOf = [&](const Arena &arena) -> Value {
      return LLVM::AddressOfOp::create(b, loc, ptr, arena.name);
    };

    // i64 __ds_workspaces_init(): the bytes, or -1.
    auto initFn =
        LLVM::LLVMFuncOp::create(b, loc, ds::kWorkspacesInitSymbol,
                                 LLVM::LLVMFunctionType::get(i64, {}));
    {
      Block *entry = initFn.addEntryBlock(b);
      Block *failed = b.createBlock(&initFn.getBody());
      Block *ok = b.createBlock(&initFn.getBody());
      b.setInsertionPointToEnd(entry);
      Value base =
          LLVM::CallOp::create(b, loc, alloc, ValueRange{constant(total)})
              .getResult();
      Value null = LLVM::ZeroOp::create(b, loc, ptr);
      Value isNull =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, base, null);
      LLVM::CondBrOp::create(b, loc, isNull, failed, ok);
      b.setInsertionPointToEnd(failed);
      LLVM::ReturnOp::create(b, loc, constant(-1));
      b.setInsertionPointToEnd(ok);
      for (const Arena &arena : arenas) {
        Value at = base;
        if (arena.offset != 0)
          at = LLVM::GEPOp::create(b, loc, ptr, b.getI8Type(), base,
                                   ValueRange{constant(arena.offset)});
        LLVM::StoreOp::create(b, loc, at, slotOf(arena), /*alignment=*/8);
      }
      LLVM::ReturnOp::create(b, loc, constant(total));
    }

    // void __ds_workspaces_release(): the first arena is at offset 0.
    b.setInsertionPointToEnd(module.getBody());
    auto releaseFn = LLVM::LLVMFuncOp::create(
        b, loc, ds::kWorkspacesReleaseSymbol,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}));
    {
      b.setInsertionPointToEnd(releaseFn.addEntryBlock(b));
      Value base = LLVM::LoadOp::create(b, loc, ptr, slotOf(arenas.front()),
                                        /*alignment=*/8);
      LLVM::CallOp::create(b, loc, release, ValueRange{base, constant(total)});
      Value null = LLVM::ZeroOp::create(b, loc, ptr);
      for (const Arena &arena : arenas)
        LLVM::StoreOp::create(b, loc, null, slotOf(arena), /*alignment=*/8);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
    numArenas += arenas.size();
    numWorkspaceBytes += total;
  }
};

} // namespace
