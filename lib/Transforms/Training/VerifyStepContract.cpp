//===- VerifyStepContract.cpp - Check the training step contract
//-----------===//
//
// ds-train calls @train_step knowing only this contract (which argument is
// what, by attribute and position), and distribution passes rewrite it
// relying on the same; this pass is where that promise is checked, one
// diagnostic per violation.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::ds {
#define GEN_PASS_DEF_VERIFYSTEPCONTRACT
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

constexpr StringLiteral kKnownKinds[] = {"exp_avg", "exp_avg_sq",
                                         "momentum_buffer", "master"};
/// State of the whole step rather than of one parameter (the fp16 loss
/// scaler's), after the per-parameter state.
constexpr StringLiteral kStepWideKinds[] = {
    "loss_scale", "loss_scale_good_steps", "loss_scale_hysteresis",
    "skipped_steps"};

/// The results at the end of `fn` named by `dstrain.metric` (reports such
/// as the routing counts, after everything the contract fixes).
unsigned numTrailingMetrics(func::FuncOp fn, unsigned numResults) {
  unsigned n = 0;
  while (n < numResults &&
         fn.getResultAttr(numResults - 1 - n, kMetricAttrName))
    ++n;
  return n;
}

struct VerifyStepContractPass
    : ds::impl::VerifyStepContractBase<VerifyStepContractPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "step contract: no func.func @" << entry
                         << " with a body; the training passes build it (or "
                            "pass entry=NAME)";
      return signalPassFailure();
    }
    bool ok = checkStep(fn);
    ok &= checkBody(fn);
    if (auto grad = module.lookupSymbol<func::FuncOp>(gradientEntry))
      ok &= checkGradient(grad);
    if (!ok)
      signalPassFailure();
  }

  /// The type an argument stands for: its own, or for a chunk of a
  /// sharded tensor (dsdist.sharding) the whole tensor's.
  static Type logicalType(func::FuncOp fn, unsigned i) {
    Type local = fn.getArgumentTypes()[i];
    auto sharding = fn.getArgAttrOfType<dist::ShardingAttr>(
        i, dist::DistDialect::kShardingAttrName);
    if (!sharding)
      return local;
    return RankedTensorType::get(
        sharding.getShape(), cast<RankedTensorType>(local).getElementType());
  }

  /// `master` is the f32 form of the 16-bit `param` (same shape).
  static bool isMasterOf(Type master, Type param) {
    auto m = dyn_cast<RankedTensorType>(master);
    auto p = dyn_cast<RankedTensorType>(param);
    return m && p && m.getShape() == p.getShape() &&
           m.getElementType().isF32() &&
           p.getElementType().getIntOrFloatBitWidth() == 16;
  }

  static bool isF32Scalar(Type type) {
    auto t = dyn_cast<RankedTensorType>(type);
    return t && t.getRank() == 0 && t.getElementType().isF32();
  }

  bool checkStep(func::FuncOp fn) {
    bool ok = true;
    auto fail = [&]() -> InFlightDiagnostic {
      ok = false;
      return fn.emitError() << "step contract: ";
    };
    unsigned numArgs = fn.getNumArguments();
    unsigned numParams = numLeadingParams(fn);
    if (numParams == 0)
      fail() << "@" << fn.getName()
             << " has no parameters: its leading arguments must carry "
                "dsnn.param";

    llvm::StringMap<unsigned> params;
    for (unsigned i = 0; i < numParams; ++i) {
      StringRef name = paramName(fn, i);
      if (!params.try_emplace(name, i).second)
        fail() << "parameter \"" << name << "\" (argument #" << i
               << ") repeats argument #" << params[name];
    }

    // Optimizer state, grouped per parameter in parameter order.
    unsigned i = numParams;
    SmallVector<SmallVector<StringRef>> kindsOf(numParams);
    bool stepWide = false;
    for (; i < numArgs; ++i) {
      auto state = fn.getArgAttrOfType<DictionaryAttr>(i, kStateAttrName);
      if (!state) {
        if (fn.getArgAttr(i, kStateAttrName))
          fail() << "argument #" << i << ": " << kStateAttrName
                 << " must be a dictionary {param = \"...\", kind = \"...\"}";
        break;
      }
      if (fn.getArgAttr(i, nn::kParamAttrName))
        fail() << "argument #" << i << " (parameter \"" << paramName(fn, i)
               << "\") comes after the optimizer state; parameters come "
                  "first";
      auto param = state.getAs<StringAttr>("param");
      auto kind = state.getAs<StringAttr>("kind");
      if (!param && kind &&
          llvm::is_contained(kStepWideKinds, kind.getValue())) {
        auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
        bool isScale = kind.getValue() == "loss_scale";
        if (!t || t.getRank() != 0 ||
            (isScale ? !t.getElementType().isF32()
                     : !t.getElementType().isSignlessInteger(64)))
          fail() << "argument #" << i << ": step-wide state \""
                 << kind.getValue() << "\" has type "
                 << fn.getArgumentTypes()[i] << " but must be "
                 << (isScale ? "tensor<f32>" : "tensor<i64>");
        stepWide = true;
        continue;
      }
      if (stepWide)
        fail() << "argument #" << i
               << ": per-parameter state after the step-wide state; it "
                  "comes first";
      if (!param || !kind) {
        fail() << "argument #" << i << ": " << kStateAttrName
               << " needs string entries \"param\" and \"kind\" (or a "
                  "step-wide kind: loss_scale, loss_scale_good_steps, "
                  "loss_scale_hysteresis, skipped_steps)";
        continue;
      }
      if (!llvm::is_contained(kKnownKinds, kind.getValue()))
        fail() << "argument #" << i << ": state kind \"" << kind.getValue()
               << "\" is not one of exp_avg, exp_avg_sq, momentum_buffer, "
                  "master";
      auto it = params.find(param.getValue());
      if (it == params.end()) {
        fail() << "argument #" << i << ": state of unknown parameter \""
               << param.getValue() << "\"";
        continue;
      }
      // A 16-bit parameter (mixed precision) has f32 state, its master
      // copy included.
      if (logicalType(fn, i) != logicalType(fn, it->second) &&
          !isMasterOf(logicalType(fn, i), logicalType(fn, it->second)))
        fail() << "argument #" << i << ": " << kind.getValue() << " of \""
               << param.getValue() << "\" stands for " << logicalType(fn, i)
               << " but the parameter is " << logicalType(fn, it->second);
      kindsOf[it->second].push_back(kind.getValue());
    }
    unsigned numState = i - numParams;
    for (unsigned p = 0; p < numParams; ++p)
      if (kindsOf[p] != kindsOf.front())
        fail() << "parameter \"" << paramName(fn, p) << "\" has state ["
               << llvm::join(kindsOf[p], ", ") << "] but \"" << paramName(fn, 0)
               << "\" has [" << llvm::join(kindsOf.front(), ", ")
               << "]; every parameter has the same kinds";

    // The step counter.
    if (i >= numArgs || !fn.getArgAttr(i, kStepAttrName)) {
      fail() << "argument #" << i << " must be the step, tensor<i64> {"
             << kStepAttrName << "}, right after the optimizer state";
      return false;
    }
    auto stepType = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (!stepType || stepType.getRank() != 0 ||
        !stepType.getElementType().isSignlessInteger(64))
      fail() << "the step (argument #" << i << ") has type "
             << fn.getArgumentTypes()[i] << " but must be tensor<i64>";
    unsigned firstBatch = i + 1;

    // The batch: every argument leads with the micro-batch count.
    auto steps = fn->getAttrOfType<IntegerAttr>(kAccumStepsAttrName);
    if (!steps || steps.getInt() < 1)
      fail() << "@" << fn.getName() << " needs the attribute "
             << kAccumStepsAttrName << " = N : i64 (N >= 1)";
    for (unsigned b = firstBatch; b < numArgs; ++b) {
      if (fn.getArgAttr(b, nn::kParamAttrName) ||
          fn.getArgAttr(b, kStateAttrName) || fn.getArgAttr(b, kStepAttrName))
        fail() << "argument #" << b
               << " is a parameter, state or step after the batch began at "
                  "argument #"
               << firstBatch;
      auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[b]);
      if (steps && (!t || t.getRank() < 1 || t.getDimSize(0) != steps.getInt()))
        fail() << "batch argument #" << b << " has type "
               << fn.getArgumentTypes()[b] << " but must lead with "
               << kAccumStepsAttrName << " = " << steps.getInt();
    }

    // Results: new params, new state, loss, lr, grad_norm, then metrics.
    FunctionType type = fn.getFunctionType();
    unsigned expected =
        numParams + numState + 3 + numTrailingMetrics(fn, type.getNumResults());
    if (type.getNumResults() != expected) {
      fail() << "@" << fn.getName() << " returns " << type.getNumResults()
             << " values but must return " << expected << " (" << numParams
             << " new params, " << numState
             << " new state tensors, loss, lr, grad_norm)";
      return ok;
    }
    for (unsigned r = 0; r < numParams + numState; ++r)
      if (type.getResult(r) != type.getInput(r))
        fail() << "result #" << r << " has type " << type.getResult(r)
               << " but must be the new value of argument #" << r << " ("
               << type.getInput(r) << ")";
    StringRef names[] = {"loss", "lr", "grad_norm"};
    for (unsigned k = 0; k < 3; ++k)
      if (!isF32Scalar(type.getResult(numParams + numState + k)))
        fail() << "result #" << numParams + numState + k << " (" << names[k]
               << ") has type " << type.getResult(numParams + numState + k)
               << " but must be tensor<f32>";
    return ok;
  }

  bool checkBody(func::FuncOp fn) {
    bool ok = true;
    fn.getBody().walk([&](Operation *op) {
      StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
      if (isa<func::CallOp, func::ReturnOp>(op) ||
          llvm::is_contained(
              {"dsnn", "dstrain", "dsdist", "arith", "math", "tensor", "scf"},
              ns))
        return;
      op->emitError() << "step contract: '" << op->getName()
                      << "' is not allowed in @" << fn.getName()
                      << "; the body uses only dsnn, dstrain, dsdist, arith, "
                         "math, tensor, scf and func.call/return";
      ok = false;
    });
    return ok;
  }

  bool checkGradient(func::FuncOp grad) {
    unsigned numParams = numLeadingParams(grad);
    FunctionType type = grad.getFunctionType();
    unsigned numMetrics = numTrailingMetrics(grad, type.getNumResults());
    bool ok = type.getNumResults() == numParams + 1 + numMetrics &&
              type.getNumResults() > 0 && isF32Scalar(type.getResult(0));
    // A 16-bit parameter's gradient may be f32 (accumulated in f32).
    for (unsigned i = 0; ok && i < numParams; ++i)
      ok = type.getResult(i + 1) == logicalType(grad, i) ||
           isMasterOf(type.getResult(i + 1), logicalType(grad, i));
    if (!ok)
      grad.emitError() << "step contract: @" << grad.getName()
                       << " must return (loss : tensor<f32>, one gradient "
                          "per parameter, of its type), i.e. "
                       << numParams + 1 + numMetrics << " values; it returns "
                       << type.getNumResults();
    return ok;
  }
};

} // namespace
