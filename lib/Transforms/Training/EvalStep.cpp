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
// returns 0.0 (the driver takes the last stage's loss). An interleaved
// stage's chunks (@forward_chunk<j>) are chained into one such function.
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
#include "mlir/IR/IRMapping.h"

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

/// An interleaved stage holds several model chunks (`@forward_chunk<j>`,
/// global chunk j * stages + stage). Its eval forward chains them for one
/// micro-batch, as the model's forward visits them: each chunk after the
/// model's first receives its pipe inputs from the stage before on the
/// ring, each before the model's last sends its pipe outputs to the stage
/// after. The arguments are the union of the chunks', each parameter,
/// state or batch argument once. A stage without the model's last chunk
/// returns 0: the driver takes the last stage's loss.
FailureOr<func::FuncOp> chainChunks(ModuleOp module,
                                    MutableArrayRef<func::FuncOp> chunks,
                                    StringRef name) {
  auto info =
      module->getAttrOfType<DictionaryAttr>(pipeline::kPipelineAttrName);
  auto stageAttr = info ? info.getAs<IntegerAttr>("stage") : IntegerAttr();
  auto stagesAttr = info ? info.getAs<IntegerAttr>("stages") : IntegerAttr();
  if (!stageAttr || !stagesAttr)
    return module.emitError() << "ds-eval-step: @" << chunks.front().getName()
                              << " without the module's dsdist.pipeline "
                                 "stage and stages (ds-pipeline-split)";
  int64_t stage = stageAttr.getInt(), stages = stagesAttr.getInt();
  int64_t last = stages * static_cast<int64_t>(chunks.size()) - 1;
  MLIRContext *ctx = module.getContext();
  Location loc = chunks.front().getLoc();
  auto lossType = RankedTensorType::get({}, Float32Type::get(ctx));

  // The union of the chunks' arguments other than pipe inputs.
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Type> types;
  SmallVector<SmallVector<int>> position(chunks.size());
  for (auto [j, chunk] : llvm::enumerate(chunks))
    for (unsigned i = 0; i < chunk.getNumArguments(); ++i) {
      DictionaryAttr a = chunk.getArgAttrDict(i);
      if (chunk.getArgAttr(i, pipeline::kPipeInputAttrName)) {
        position[j].push_back(-1);
        continue;
      }
      auto *it = a ? llvm::find(attrs, a) : attrs.end();
      if (it == attrs.end()) {
        attrs.push_back(a);
        types.push_back(chunk.getArgumentTypes()[i]);
        it = attrs.end() - 1;
      }
      position[j].push_back(it - attrs.begin());
    }

  OpBuilder b(ctx);
  b.setInsertionPointAfter(chunks.back());
  auto eval = func::FuncOp::create(b, loc, name,
                                   FunctionType::get(ctx, types, lossType));
  for (auto [i, a] : llvm::enumerate(attrs))
    if (a)
      eval.setArgAttrs(i, a);
  Block *entry = eval.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value loss;
  for (auto [j, chunk] : llvm::enumerate(chunks)) {
    int64_t global = static_cast<int64_t>(j) * stages + stage;
    IRMapping mapping;
    // Pipe inputs in their order, as the sender returns them.
    SmallVector<std::pair<int64_t, unsigned>> inputs;
    for (unsigned i = 0; i < chunk.getNumArguments(); ++i)
      if (position[j][i] < 0)
        inputs.push_back(
            {chunk
                 .getArgAttrOfType<IntegerAttr>(i, pipeline::kPipeInputAttrName)
                 .getInt(),
             i});
      else
        mapping.map(chunk.getArgument(i), entry->getArgument(position[j][i]));
    llvm::sort(inputs);
    for (auto [index, i] : inputs)
      mapping.map(chunk.getArgument(i),
                  dist::RecvOp::create(b, loc, chunk.getArgumentTypes()[i],
                                       kPipeAxis, -1));
    Block &body = chunk.getBody().front();
    for (Operation &op : body.without_terminator())
      b.clone(op, mapping);
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (global == last) {
      loss = mapping.lookup(ret.getOperand(0));
      continue;
    }
    for (Value v : ret.getOperands())
      dist::SendOp::create(b, loc, mapping.lookup(v), kPipeAxis, 1);
  }
  if (!loss)
    loss = arith::ConstantOp::create(b, loc, lossType,
                                     DenseElementsAttr::get(lossType, 0.0f));
  else if (loss.getType() != lossType)
    eval.setFunctionType(FunctionType::get(ctx, types, loss.getType()));
  func::ReturnOp::create(b, loc, loss);
  return eval;
}

struct EvalStepPass : mlir::ds::impl::EvalStepBase<EvalStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(entry);
    // An interleaved stage's chunks (ds-pipeline-split).
    SmallVector<func::FuncOp> chunks;
    while (auto chunk = module.lookupSymbol<func::FuncOp>(
               (entry + "_chunk" + Twine(chunks.size())).str()))
      chunks.push_back(chunk);
    if (!forward && !chunks.empty())
      forward = chunks.front();
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
    SmallVector<func::FuncOp> pieces =
        chunks.empty() ? SmallVector<func::FuncOp>{forward} : chunks;
    WalkResult capacity = WalkResult::advance();
    for (func::FuncOp piece : pieces) {
      if (capacity.wasInterrupted())
        break;
      capacity = piece.walk([&](nn::MoEOp op) {
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
    }
    if (capacity.wasInterrupted())
      return signalPassFailure();

    OpBuilder b(module.getContext());
    func::FuncOp eval;
    if (chunks.size() > 1) {
      FailureOr<func::FuncOp> chained = chainChunks(module, chunks, result);
      if (failed(chained))
        return signalPassFailure();
      eval = *chained;
    } else {
      b.setInsertionPointAfter(forward);
      eval = cast<func::FuncOp>(b.clone(*forward));
      eval.setName(result);
    }
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
    if (chunks.size() <= 1)
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
