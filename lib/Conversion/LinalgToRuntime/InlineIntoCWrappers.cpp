//===- InlineIntoCWrappers.cpp - The ds-inline-into-c-wrappers pass -------===//
//
// The wrappers FuncToLLVM emits are one block: descriptor loads, the call,
// the return. The function's body moves to the call; when the wrapper was
// its only caller, nothing is left to compile twice.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"
#include "ds/Support/CInterface.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/InliningUtils.h"

namespace mlir::ds {
#define GEN_PASS_DEF_INLINEINTOCWRAPPERS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;

namespace {

struct InlineIntoCWrappersPass
    : ds::impl::InlineIntoCWrappersBase<InlineIntoCWrappersPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    LLVM::registerInlinerInterface(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    InlinerInterface interface(&getContext());
    // Moved, not cloned: the function is erased right after.
    auto move = [](OpBuilder &, Region *src, Block *inlineBlock,
                   Block *postInsertBlock, IRMapping &, bool) {
      inlineBlock->getParent()->getBlocks().splice(
          postInsertBlock->getIterator(), src->getBlocks());
    };
    SmallVector<LLVM::LLVMFuncOp> wrappers;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn.getName().starts_with(ds::kCWrapperPrefix) && !fn.isExternal())
        wrappers.push_back(fn);
    for (LLVM::LLVMFuncOp wrapper : wrappers) {
      auto callee = symbols.lookup<LLVM::LLVMFuncOp>(
          wrapper.getName().drop_front(ds::kCWrapperPrefix.size()));
      if (!callee || callee.isExternal() || callee.getNoInline())
        continue;
      // Only the wrapper may call it: another caller would need the body
      // too.
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(callee, module);
      if (!uses || !llvm::hasSingleElement(*uses))
        continue;
      auto call = dyn_cast<LLVM::CallOp>(uses->begin()->getUser());
      if (!call || call->getParentOp() != wrapper)
        continue;
      if (failed(inlineCall(interface, move, call,
                            cast<CallableOpInterface>(callee.getOperation()),
                            &callee.getBody(),
                            /*shouldCloneInlinedRegion=*/false)))
        continue;
      call.erase();
      callee.erase();
      forwardRebuiltDescriptors(wrapper);
      sinkDescriptorLoads(wrapper);
      ++numInlined;
    }
  }

  // The body rebuilds every memref argument's descriptor from its fields
  // (FuncToLLVM: poison, then one insertvalue per field) and reads back
  // one or two of them. Those reads are forwarded to the fields and the
  // rebuilt descriptors erased, so that only the fields the body reads are
  // loaded below. Left to the canonicalizer after this pass, a load per
  // field was made and erased again with its descriptor: ~80000 ops of a
  // 24-layer step's glue, a fifth of the MLIR time at 96 layers.
  static void forwardRebuiltDescriptors(LLVM::LLVMFuncOp wrapper) {
    wrapper.walk([](LLVM::ExtractValueOp extract) {
      ArrayRef<int64_t> position = extract.getPosition();
      Value container = extract.getContainer();
      while (auto insert = container.getDefiningOp<LLVM::InsertValueOp>()) {
        ArrayRef<int64_t> inserted = insert.getPosition();
        if (inserted == position) {
          extract.replaceAllUsesWith(insert.getValue());
          return;
        }
        // A position inside the read one, or around it: the field is not
        // one value here.
        size_t common = std::min(inserted.size(), position.size());
        if (inserted.take_front(common) == position.take_front(common))
          return;
        container = insert.getContainer();
      }
    });
    // Users come after their operands in the body's straight-line blocks,
    // so one backward sweep erases whole descriptor chains.
    for (Block &block : llvm::reverse(wrapper.getBody()))
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isa<LLVM::ExtractValueOp, LLVM::InsertValueOp, LLVM::PoisonOp,
                LLVM::UndefOp>(op) &&
            op.use_empty())
          op.erase();
  }

  // The wrapper loads every descriptor first; held in registers through
  // the whole body, thousands of pointers would each be spilled. Each field
  // the body reads is loaded on its own where it is first used, so it lives
  // briefly (a reload of an argument slot is cheap), and no aggregate load
  // is left (LLVM's fast instruction selection has none, and the step's
  // code is compiled without optimization: lib/Execution/Lowering.cpp).
  // The descriptors are the caller's and the body never writes them.
  static void sinkDescriptorLoads(LLVM::LLVMFuncOp wrapper) {
    // Positions are numbered once: asking the block after every move
    // (isBeforeInBlock) renumbers it each time, quadratic in the step's
    // size.
    llvm::DenseMap<Operation *, int64_t> position;
    int64_t next = 0;
    wrapper.walk([&](Operation *op) { position[op] = next++; });
    // The first user of `v` if all of its users are in one block.
    auto firstUser = [&](Value v) -> Operation * {
      Operation *first = nullptr;
      for (Operation *user : v.getUsers()) {
        if (first && user->getBlock() != first->getBlock())
          return nullptr;
        if (!first || position[user] < position[first])
          first = user;
      }
      return first;
    };
    Block &entry = wrapper.getBody().front();
    Type ptrType = LLVM::LLVMPointerType::get(wrapper.getContext());
    for (auto load : llvm::make_early_inc_range(entry.getOps<LLVM::LoadOp>())) {
      if (!isa<BlockArgument>(load.getAddr()) ||
          !isa<LLVM::LLVMStructType>(load.getType()) ||
          llvm::any_of(load->getUsers(), [](Operation *user) {
            return !isa<LLVM::ExtractValueOp>(user);
          }))
        continue;
      for (Operation *user : llvm::make_early_inc_range(load->getUsers())) {
        auto field = cast<LLVM::ExtractValueOp>(user);
        // Fields the body does not read (most: shapes are static) go.
        if (field->use_empty()) {
          field.erase();
          continue;
        }
        Operation *first = firstUser(field);
        OpBuilder b(first ? first : field.getOperation());
        SmallVector<LLVM::GEPArg> indices = {0};
        for (int64_t i : field.getPosition())
          indices.push_back(static_cast<int32_t>(i));
        Value address = LLVM::GEPOp::create(
            b, field.getLoc(), ptrType, load.getType(), load.getAddr(), indices,
            LLVM::GEPNoWrapFlags::inbounds);
        Value value =
            LLVM::LoadOp::create(b, field.getLoc(), field.getType(), address);
        field.replaceAllUsesWith(value);
        field.erase();
      }
      load.erase();
    }
  }
};

} // namespace
