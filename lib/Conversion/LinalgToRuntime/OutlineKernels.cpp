//===- OutlineKernels.cpp - The ds-outline-kernels pass -------------------===//
//
// The per-parameter loops of a step (accumulate, mean, norm, clip) repeat
// for every layer's parameters of one shape; as shared functions they are
// compiled once. In a layer function only ops that occur at least twice
// move (a call saves nothing for a loop nest that exists once); outside
// one, in the step's glue, every op moves: the glue is compiled without
// optimization (lib/Execution/Lowering.cpp), its loops are not.
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/Passes.h"
#include "ds/Support/Outline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::ds {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "ds/Conversion/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

struct OutlineKernelsPass : ds::impl::OutlineKernelsBase<OutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<Operation *, std::string>> ops;
    llvm::StringMap<int64_t> occurrences;
    module.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() ||
          op->getParentOfType<linalg::LinalgOp>())
        return;
      std::string key = FunctionOutliner::bodyKey({op}, ValueRange{});
      ++occurrences[key];
      ops.emplace_back(op, std::move(key));
    });
    FunctionOutliner outliner(module, "ds.kernel_count");
    llvm::StringMap<std::string> names;
    for (auto &[op, key] : ops) {
      auto fn = op->getParentOfType<FunctionOpInterface>();
      bool inLayer = fn && fn->hasAttr("dsnn.layer_count");
      if (occurrences[key] < 2 && inLayer)
        continue;
      auto [it, added] = names.try_emplace(key, "");
      if (added)
        it->second = "kernel_" + std::to_string(names.size() - 1);
      OpBuilder b(op);
      outliner.outline(b, {op}, ValueRange{}, key, it->second);
      op->erase();
    }
  }
};

} // namespace
