//===- VerifyModelContract.cpp - Check the import output contract
//----------===//
//
// Every importer (JSON spec, TorchScript, MLIR text) must produce the same
// shape of module so the training passes can rely on it; this pass is where
// that promise is checked, with one diagnostic per violation.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ds {
#define GEN_PASS_DEF_VERIFYMODELCONTRACT
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {
struct VerifyModelContractPass
    : ds::impl::VerifyModelContractBase<VerifyModelContractPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "model contract: no func.func @" << entry
                         << " with a body; the importer must produce it (or "
                            "pass entry=NAME)";
      return signalPassFailure();
    }
    bool ok = checkSignature(fn);
    ok &= checkBody(fn);
    if (!ok)
      return signalPassFailure();
    numParams = params;
    numParamElements = paramElements;
    numLayers = layers;
    // Statistics are compiled out of release LLVM builds; the remark is how
    // a user sees the model size.
    if (summary)
      emitRemark(fn.getLoc())
          << "model contract: " << params << " parameters, " << paramElements
          << " elements, " << layers << " layers";
  }

  int64_t params = 0, paramElements = 0, layers = 0;

  bool checkSignature(func::FuncOp fn) {
    bool ok = true;
    llvm::StringMap<unsigned> byName;
    llvm::StringMap<std::pair<unsigned, Type>> tiedType;
    std::optional<unsigned> firstBatch;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      Type type = fn.getArgument(i).getType();
      auto param = fn.getArgAttrOfType<nn::ParamAttr>(i, nn::kParamAttrName);
      if (!param) {
        if (fn.getArgAttr(i, nn::kParamAttrName)) {
          fn.emitError() << "model contract: argument #" << i
                         << " has a dsnn.param attribute that is not a "
                            "#dsnn.param<...>";
          ok = false;
        }
        if (!firstBatch)
          firstBatch = i;
        continue;
      }
      if (firstBatch) {
        fn.emitError() << "model contract: argument #" << i << " (parameter \""
                       << param.getName() << "\") comes after batch argument #"
                       << *firstBatch << "; parameters come first";
        ok = false;
      }
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !isa<FloatType>(tensor.getElementType()) ||
          !tensor.hasStaticShape()) {
        fn.emitError() << "model contract: parameter \"" << param.getName()
                       << "\" has type " << type
                       << "; parameters are statically shaped float tensors";
        ok = false;
      } else {
        ++params;
        paramElements += tensor.getNumElements();
      }
      auto [it, inserted] = byName.try_emplace(param.getName(), i);
      if (!inserted) {
        fn.emitError() << "model contract: parameter name \"" << param.getName()
                       << "\" is used by arguments #" << it->second << " and #"
                       << i;
        ok = false;
      }
      if (StringAttr tied = param.getTied()) {
        auto [t, first] = tiedType.try_emplace(tied.getValue(), i, type);
        if (!first && t->second.second != type) {
          fn.emitError() << "model contract: tied group \"" << tied.getValue()
                         << "\" mixes types " << t->second.second
                         << " (argument #" << t->second.first << ") and "
                         << type << " (argument #" << i << ")";
          ok = false;
        }
      }
    }
    auto results = fn.getFunctionType().getResults();
    auto loss = results.size() == 1
                    ? dyn_cast<RankedTensorType>(results.front())
                    : RankedTensorType();
    if (!loss || loss.getRank() != 0 ||
        !isa<FloatType>(loss.getElementType())) {
      fn.emitError() << "model contract: @" << fn.getSymName()
                     << " must return exactly one scalar float loss "
                        "(tensor<f32>), got ("
                     << results << ")";
      ok = false;
    }
    return ok;
  }

  bool checkBody(func::FuncOp fn) {
    bool ok = true;
    fn.walk([&](Operation *op) {
      if (op == fn.getOperation())
        return;
      if (op->getDialect() &&
          isa<nn::NNDialect, arith::ArithDialect, tensor::TensorDialect>(
              op->getDialect())) {
        if (isa<nn::LayerOp>(op))
          ++layers;
        return;
      }
      if (isa<func::ReturnOp>(op))
        return;
      op->emitError() << "model contract: '" << op->getName()
                      << "' is not allowed in a model; use dsnn, arith, "
                         "tensor ops and func.return";
      ok = false;
    });
    // Expert parameters only make sense inside their MoE layer, where
    // expert parallelism can slice them.
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      auto param = fn.getArgAttrOfType<nn::ParamAttr>(i, nn::kParamAttrName);
      if (!param || !param.getExpert())
        continue;
      for (OpOperand &use : fn.getArgument(i).getUses()) {
        auto moe = dyn_cast<nn::MoEOp>(use.getOwner());
        if (moe && use.getOperandNumber() >= 2)
          continue;
        use.getOwner()->emitError()
            << "model contract: expert parameter \"" << param.getName()
            << "\" is used outside the expert_params of a dsnn.moe";
        ok = false;
      }
    }
    return ok;
  }
};
} // namespace
