//===- EvalStep.cpp - The model's forward as eval_batch runs it -----------===//
//
// A copy of @forward taken inside the training pipeline, after the passes
// that change how the forward computes (mixed precision, expert
// parallelism) and before ds-zero, so that ds-zero gives it the parameters
// in the layout the step holds them. Only what exists for training alone
// is taken out of the copy. On a pipeline stage (after ds-pipeline-split)
// the copy streams one micro-batch: each dsdist.pipe_input argument
// becomes a dsdist.recv from "pp" offset -1, each dsdist.pipe_output
// result a dsdist.send to "pp" offset 1, and a stage without the loss
// returns 0.0 (the driver takes the last stage's loss).
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

inline constexpr StringLiteral kPipeAxis = "pp";

/// A pipeline stage's eval forward streams one micro-batch: what the
/// stage before sends (pipe inputs, in their order) is received first,
/// what this stage sends on (pipe outputs) is sent last, in the order the
/// training schedule uses. A stage without the loss returns 0: the driver
/// takes the last stage's.
void streamThroughStages(func::FuncOp eval) {
  Block &entry = eval.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = eval.getLoc();
  SmallVector<std::pair<int64_t, unsigned>> inputs;
  for (unsigned i = 0; i < eval.getNumArguments(); ++i)
    if (auto at =
            eval.getArgAttrOfType<IntegerAttr>(i, pipeline::kPipeInputAttrName))
      inputs.push_back({at.getInt(), i});
  llvm::sort(inputs);
  for (auto [index, arg] : inputs)
    eval.getArgument(arg).replaceAllUsesWith(dist::RecvOp::create(
        b, loc, eval.getArgument(arg).getType(), kPipeAxis, -1));
  for (auto it = inputs.rbegin(); it != inputs.rend(); ++it)
    (void)eval.eraseArgument(it->second);

  if (eval.getNumResults() == 0 ||
      !eval.getResultAttr(0, pipeline::kPipeOutputAttrName))
    return;
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  b.setInsertionPoint(ret);
  for (Value v : ret.getOperands())
    dist::SendOp::create(b, loc, v, kPipeAxis, 1);
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  Value zero = arith::ConstantOp::create(
      b, loc, lossType, DenseElementsAttr::get(lossType, 0.0f));
  func::ReturnOp::create(b, ret.getLoc(), zero);
  ret.erase();
  eval.setFunctionType(
      FunctionType::get(eval.getContext(), eval.getArgumentTypes(), lossType));
  eval.removeResAttrsAttr();
}

struct EvalStepPass : mlir::ds::impl::EvalStepBase<EvalStepPass> {
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
    // A pipeline stage's @forward (ds-pipeline-split) returns what it sends
    // on instead of the loss, except on the last stage.
    unsigned numPipeOutputs = 0;
    for (unsigned r = 0; r < forward.getNumResults(); ++r)
      numPipeOutputs +=
          bool(forward.getResultAttr(r, pipeline::kPipeOutputAttrName));
    if (numPipeOutputs ? numPipeOutputs != forward.getNumResults()
                       : forward.getNumResults() != 1) {
      forward.emitError() << "ds-eval-step: @" << entry
                          << " must return one loss (the model contract), or "
                             "only what a pipeline stage sends on";
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
    streamThroughStages(eval);
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
