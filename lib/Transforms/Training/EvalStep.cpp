//===- EvalStep.cpp - The model's forward as eval_batch runs it -----------===//
//
// A copy of @forward taken inside the training pipeline, after the passes
// that change how the forward computes (mixed precision, expert
// parallelism) and before ds-zero, so that ds-zero gives it the parameters
// in the layout the step holds them. Only what exists for training alone
// is taken out of the copy.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {
#define GEN_PASS_DEF_EVALSTEP
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

struct EvalStepPass : ds::impl::EvalStepBase<EvalStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(entry);
    if (!forward || forward.isExternal()) {
      module.emitError() << "ds-eval-step: no func.func @" << entry
                         << " with a body (the model contract)";
      return signalPassFailure();
    }
    if (module.lookupSymbol(result)) {
      module.emitError() << "ds-eval-step: @" << result
                         << " already exists; pick another name (option "
                            "result=NAME) or remove it";
      return signalPassFailure();
    }
    if (forward.getNumResults() != 1) {
      forward.emitError() << "ds-eval-step: @" << entry
                          << " must return one loss (the model contract)";
      return signalPassFailure();
    }
    WalkResult capacity = forward.walk([&](nn::MoEOp op) {
      if (op.getEvalCapacityFactor() == op.getCapacityFactor())
        return WalkResult::advance();
      op.emitError() << "ds-eval-step: eval_capacity_factor "
                     << op.getEvalCapacityFactor().convertToDouble()
                     << " differs from capacity_factor "
                     << op.getCapacityFactor().convertToDouble()
                     << ", which the expert region's types are built for; "
                        "evaluate with equal factors";
      return WalkResult::interrupt();
    });
    if (capacity.wasInterrupted())
      return signalPassFailure();

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(forward);
    auto eval = cast<func::FuncOp>(b.clone(*forward));
    eval.setName(result);
    eval.walk([&](nn::DropoutOp op) {
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
      ++numDropouts;
    });
    // The loss scale only seeds the backward.
    eval.walk([](nn::GradScaleOp op) {
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
    });
    for (unsigned i = eval.getNumArguments(); i-- > 0;) {
      auto state = eval.getArgAttrOfType<DictionaryAttr>(i, kStateAttrName);
      auto kind = state ? state.getAs<StringAttr>("kind") : StringAttr();
      if (kind && kind.getValue() == "loss_scale" &&
          eval.getArgument(i).use_empty())
        (void)eval.eraseArgument(i);
    }
    // The driver reads the loss as f32, however the model computes it.
    auto ret = cast<func::ReturnOp>(eval.getBody().front().getTerminator());
    auto lossType = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
    if (lossType && !lossType.getElementType().isF32() &&
        isa<FloatType>(lossType.getElementType())) {
      b.setInsertionPoint(ret);
      ret->setOperand(0, nn::CastOp::create(b, ret.getLoc(),
                                            lossType.clone(b.getF32Type()),
                                            ret.getOperand(0)));
      eval.setFunctionType(FunctionType::get(
          &getContext(), eval.getArgumentTypes(), ret.getOperandTypes()));
    }
  }
};

} // namespace
