//===- Optimizer.cpp - The optimizer update of a training step
//-------------===//
//
// Turns @train_step into a pure function of (params, optimizer state, step,
// batch): the state is an argument and a result rather than hidden in the
// runtime, so ZeRO can shard it like any other value and ds-train only
// threads it from one step to the next.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_OPTIMIZER
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

enum class Kind { Adam, AdamW, Lamb, SGD };

std::optional<Kind> parseKind(StringRef type) {
  return llvm::StringSwitch<std::optional<Kind>>(type.lower())
      .Case("adam", Kind::Adam)
      .Case("adamw", Kind::AdamW)
      .Case("lamb", Kind::Lamb)
      .Case("sgd", Kind::SGD)
      .Default(std::nullopt);
}

struct OptimizerPass : ds::impl::OptimizerBase<OptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Kind> kind = parseKind(type);
    if (!kind) {
      module.emitError() << "ds-optimizer: type \"" << type
                         << "\" is not supported; use Adam, AdamW, Lamb or "
                            "SGD";
      return signalPassFailure();
    }
    if (!betas.empty() && betas.size() != 2) {
      module.emitError() << "ds-optimizer: betas has " << betas.size()
                         << " values but needs two (beta1,beta2)";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ds-optimizer: no func.func @" << entry
                         << " with a body; run ds-accumulate-grads and "
                            "ds-clip-grads first";
      return signalPassFailure();
    }
    unsigned numParams = numLeadingParams(fn);
    auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    bool shapeOk = numParams > 0 && ret.getNumOperands() == numParams + 2;
    for (unsigned i = 0; shapeOk && i < numParams; ++i)
      shapeOk = ret.getOperand(i + 1).getType() == fn.getArgumentTypes()[i];
    unsigned numSteps = 0;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      numSteps += fn.getArgAttr(i, kStepAttrName) ? 1 : 0;
    shapeOk &= numSteps <= 1;
    if (!shapeOk) {
      fn.emitError() << "ds-optimizer: @" << entry << " returns "
                     << ret.getNumOperands() << " values but must return "
                     << "(loss, " << numParams
                     << " gradients, grad_norm) and at most one step argument "
                        "(ds-accumulate-grads adds it for dropout), as "
                        "ds-clip-grads leaves it";
      return signalPassFailure();
    }
    update(fn, ret, numParams, *kind);
  }

  void update(func::FuncOp fn, func::ReturnOp ret, unsigned numParams,
              Kind kind) {
    MLIRContext *ctx = fn.getContext();
    OpBuilder b(ctx);
    SmallVector<StringRef> kinds =
        kind == Kind::SGD ? SmallVector<StringRef>{"momentum_buffer"}
                          : SmallVector<StringRef>{"exp_avg", "exp_avg_sq"};

    // State after the parameters, then the step, all before the batch.
    SmallVector<unsigned> indices;
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs;
    for (unsigned p = 0; p < numParams; ++p)
      for (StringRef k : kinds) {
        auto state = b.getDictionaryAttr(
            {b.getNamedAttr("param", b.getStringAttr(paramName(fn, p))),
             b.getNamedAttr("kind", b.getStringAttr(k))});
        indices.push_back(numParams);
        types.push_back(fn.getArgumentTypes()[p]);
        attrs.push_back(
            b.getDictionaryAttr(b.getNamedAttr(kStateAttrName, state)));
        locs.push_back(fn.getArgument(p).getLoc());
      }
    // Step-wide state (the loss scale) stays between the per-parameter
    // state and the step.
    unsigned numGlobal = 0;
    while (numParams + numGlobal < fn.getNumArguments() &&
           fn.getArgAttr(numParams + numGlobal, kStateAttrName))
      ++numGlobal;
    // A step argument that is already there (dropout's masks need it in the
    // micro-batch loop) moves to its place after the state.
    std::optional<unsigned> oldStep;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kStepAttrName))
        oldStep = i;
    auto stepType = RankedTensorType::get({}, b.getI64Type());
    indices.push_back(numParams + numGlobal);
    types.push_back(stepType);
    attrs.push_back(
        b.getDictionaryAttr(b.getNamedAttr(kStepAttrName, b.getUnitAttr())));
    locs.push_back(fn.getLoc());
    if (failed(fn.insertArguments(indices, types, attrs, locs))) {
      fn.emitError("ds-optimizer: could not add the state arguments");
      return signalPassFailure();
    }
    numStateTensors = numParams * kinds.size();
    unsigned newStep = numParams + numParams * kinds.size() + numGlobal;
    if (oldStep) {
      unsigned old =
          *oldStep >= numParams ? *oldStep + indices.size() : *oldStep;
      fn.getArgument(old).replaceAllUsesWith(fn.getArgument(newStep));
      if (failed(fn.eraseArgument(old))) {
        fn.emitError("ds-optimizer: could not move the step argument");
        return signalPassFailure();
      }
    }

    Block &entryBlock = fn.getBody().front();
    unsigned numState = numParams * kinds.size();
    ValueRange params = entryBlock.getArguments().take_front(numParams);
    ValueRange states = entryBlock.getArguments().slice(numParams, numState);
    Value step = entryBlock.getArgument(numParams + numState + numGlobal);

    b.setInsertionPointToStart(&entryBlock);
    Location loc = ret.getLoc();
    Value lrValue = scalarConstant(b, loc, b.getF32Type(), lr);

    b.setInsertionPoint(ret);
    double beta1 = betas.empty() ? 0.9 : betas[0];
    double beta2 = betas.empty() ? 0.999 : betas[1];
    auto f64 = [](double v) { return llvm::APFloat(v); };
    SmallVector<Value> newParams, newStates;
    for (unsigned p = 0; p < numParams; ++p) {
      Value param = params[p], grad = ret.getOperand(p + 1);
      Type type = param.getType();
      Operation *op;
      switch (kind) {
      case Kind::Adam:
      case Kind::AdamW:
        op = train::AdamOp::create(
            b, loc, type, type, type, param, grad, states[2 * p],
            states[2 * p + 1], step, lrValue, /*skip=*/Value(), f64(beta1),
            f64(beta2), f64(eps), f64(weightDecay),
            kind == Kind::AdamW || adamWMode, biasCorrection);
        break;
      case Kind::Lamb:
        op = train::LambOp::create(
            b, loc, type, type, type, param, grad, states[2 * p],
            states[2 * p + 1], step, lrValue, /*skip=*/Value(), f64(beta1),
            f64(beta2), f64(eps), f64(weightDecay), biasCorrection,
            f64(maxCoeff), f64(minCoeff));
        break;
      case Kind::SGD:
        op =
            train::SGDOp::create(b, loc, type, type, param, grad, states[p],
                                 step, lrValue, /*skip=*/Value(), f64(momentum),
                                 f64(dampening), nesterov, f64(weightDecay));
        break;
      }
      newParams.push_back(op->getResult(0));
      newStates.append(std::next(op->result_begin()), op->result_end());
    }

    SmallVector<Value> results(newParams);
    llvm::append_range(results, newStates);
    results.append({ret.getOperand(0), lrValue, ret.getOperands().back()});
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  }
};

} // namespace
