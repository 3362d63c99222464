//===- PipelineSchedule.cpp - A stage's schedule as its @train_step -------===//
//
// The schedule is compiled, not interpreted: the step is the stage's
// instruction stream unrolled, one call per forward or backward, so the
// bufferizer sees every micro-batch's saved values and their lifetimes, and
// a reader sees the order in which this rank talks to its neighbours.
//
//===----------------------------------------------------------------------===//
#include "ds/Config/Config.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistDialect.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PIPELINESCHEDULE
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using dist::PipeInstrKind;

namespace {

inline constexpr StringLiteral kPipeAxis = "pp";

/// Where an argument of @stage_forward or @stage_backward comes from: an
/// argument of @forward_backward, or a value the forward saved.
struct Source {
  bool residual;
  unsigned index;
};

/// @forward_backward cut into the forward of one micro-batch and its
/// backward.
struct GradientSplit {
  func::FuncOp forward, backward;
  SmallVector<Source> forwardArgs, backwardArgs;
  unsigned numOutputs = 0, numResiduals = 0;
};

/// Builds a private function from `ops` (top-level ops of `from`'s block, in
/// order) with the given arguments (values of `from`) and results.
func::FuncOp buildPart(OpBuilder &b, func::FuncOp from, StringRef name,
                       ArrayRef<Operation *> ops, ArrayRef<Value> args,
                       ArrayRef<Value> results) {
  auto fn =
      func::FuncOp::create(b, from.getLoc(), name,
                           b.getFunctionType(ValueRange(args).getTypes(),
                                             ValueRange(results).getTypes()));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  IRMapping mapping;
  for (auto [old, arg] : llvm::zip(args, entry->getArguments()))
    mapping.map(old, arg);
  OpBuilder body = OpBuilder::atBlockEnd(entry);
  for (Operation *op : ops)
    body.clone(*op, mapping);
  SmallVector<Value> mapped;
  for (Value v : results)
    mapped.push_back(mapping.lookup(v));
  func::ReturnOp::create(body, from.getLoc(), mapped);
  return fn;
}

/// The forward is what the first `numOutputs` results need; the rest is the
/// backward. Values of the forward the backward reads are the residuals
/// (constants are copied instead).
GradientSplit splitGradient(func::FuncOp fb, unsigned numOutputs) {
  Block &body = fb.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::SetVector<Operation *> needed =
      pipeline::forwardSlice(body, ret.getOperands().take_front(numOutputs));

  SmallVector<Operation *> forwardOps, backwardOps;
  for (Operation &op : body.without_terminator())
    (needed.contains(&op) ? forwardOps : backwardOps).push_back(&op);

  // Arguments and residuals, in order of first use.
  auto argsOf = [&](ArrayRef<Operation *> ops, ValueRange extra,
                    llvm::SetVector<Value> &args,
                    llvm::SetVector<Value> *residuals,
                    SmallVector<Operation *> &copies) {
    DenseSet<Operation *> own(ops.begin(), ops.end());
    auto use = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def) {
        args.insert(v);
        return;
      }
      Operation *top = body.findAncestorOpInBlock(*def);
      if (own.contains(top))
        return;
      if (pipeline::isCopyable(top)) {
        if (own.insert(top).second)
          copies.push_back(top);
        return;
      }
      residuals->insert(v);
    };
    for (Operation *op : ops)
      for (Value v : pipeline::usedFromAbove(op))
        use(v);
    for (Value v : extra)
      use(v);
  };
  llvm::SetVector<Value> forwardArgs, backwardArgs, residuals;
  SmallVector<Operation *> forwardCopies, backwardCopies;
  argsOf(forwardOps, ret.getOperands().take_front(numOutputs), forwardArgs,
         nullptr, forwardCopies);
  argsOf(backwardOps, ret.getOperands().drop_front(numOutputs), backwardArgs,
         &residuals, backwardCopies);
  backwardCopies.append(backwardOps.begin(), backwardOps.end());

  GradientSplit split;
  split.numOutputs = numOutputs;
  split.numResiduals = residuals.size();
  OpBuilder b(fb);
  SmallVector<Value> forwardResults(ret.getOperands().take_front(numOutputs));
  llvm::append_range(forwardResults, residuals);
  split.forward = buildPart(b, fb, "stage_forward", forwardOps,
                            forwardArgs.getArrayRef(), forwardResults);
  SmallVector<Value> backwardInputs(backwardArgs.begin(), backwardArgs.end());
  llvm::append_range(backwardInputs, residuals);
  split.backward =
      buildPart(b, fb, "stage_backward", backwardCopies, backwardInputs,
                SmallVector<Value>(ret.getOperands().drop_front(numOutputs)));
  for (Value v : forwardArgs)
    split.forwardArgs.push_back({false, cast<BlockArgument>(v).getArgNumber()});
  for (Value v : backwardArgs)
    split.backwardArgs.push_back(
        {false, cast<BlockArgument>(v).getArgNumber()});
  for (unsigned r = 0; r < residuals.size(); ++r)
    split.backwardArgs.push_back({true, r});
  return split;
}

/// What one micro-batch has in flight on this stage.
struct MicroBatch {
  SmallVector<Value> batch, inputs, outputs, residuals, outputGrads, inputGrads;
};

/// Emits @train_step's body, one instruction at a time.
class StreamEmitter {
public:
  StreamEmitter(OpBuilder &b, Location loc, func::FuncOp fb,
                const GradientSplit &split, int64_t stage, int64_t stages,
                int64_t microBatches)
      : b(b), loc(loc), fb(fb), split(split), stage(stage), stages(stages),
        mbs(microBatches) {}

  /// The step's arguments: parameters, step state (the fp16 loss scale),
  /// the step counter (dropout), batch.
  ValueRange params, state, batch;
  Value step;
  /// @forward_backward's argument layout.
  unsigned numParams = 0, numState = 0, numInputs = 0, numBatch = 0,
           numGrads = 0;
  int64_t keyArg = -1;

  void emit(const pipeline::Instr &instr);
  /// Sums of the parameter gradients and of the losses, in micro-batch
  /// order (as ds-accumulate-grads adds them).
  SmallVector<Value> gradSums;
  Value lossSum;

private:
  Value key(int64_t mb);
  SmallVector<Value> operands(ArrayRef<Source> sources, MicroBatch &m,
                              int64_t mb);
  Value add(Value sum, Value v) {
    if (!sum && mbs.size() == 1)
      return v;
    if (!sum)
      sum = arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(v.getType())));
    return nn::AddOp::create(b, loc, v.getType(), sum, v);
  }

  OpBuilder &b;
  Location loc;
  func::FuncOp fb;
  const GradientSplit &split;
  int64_t stage, stages;
  std::vector<MicroBatch> mbs;
};

Value StreamEmitter::key(int64_t mb) {
  // What ds-accumulate-grads passes, so dropout draws the same masks.
  return microBatchKey(b, loc, step, mbs.size(), b.getIndexAttr(mb));
}

SmallVector<Value> StreamEmitter::operands(ArrayRef<Source> sources,
                                           MicroBatch &m, int64_t mb) {
  SmallVector<Value> values;
  for (Source src : sources) {
    if (src.residual) {
      values.push_back(m.residuals[src.index]);
      continue;
    }
    unsigned i = src.index;
    if (i < numParams) {
      values.push_back(params[i]);
      continue;
    }
    if ((i -= numParams) < numState) {
      values.push_back(state[i]);
      continue;
    }
    if ((i -= numState) < numInputs)
      values.push_back(m.inputs[i]);
    else if ((i -= numInputs) < numBatch)
      values.push_back(m.batch[i]);
    else if (static_cast<int64_t>(src.index) == keyArg)
      values.push_back(key(mb));
    else
      values.push_back(m.outputGrads[i - numBatch]);
  }
  return values;
}

void StreamEmitter::emit(const pipeline::Instr &instr) {
  if (!instr.microBatch)
    return; // reduce_tied_grads, reduce_grads, optimizer_step: see below
  int64_t mb = *instr.microBatch;
  MicroBatch &m = mbs[mb];
  switch (instr.kind) {
  case PipeInstrKind::load_micro_batch:
    for (Value full : batch)
      m.batch.push_back(microBatchSlice(b, loc, full, b.getIndexAttr(mb)));
    break;
  case PipeInstrKind::recv_activation:
    for (unsigned i = 0; i < numInputs; ++i)
      m.inputs.push_back(dist::RecvOp::create(
          b, loc, fb.getArgumentTypes()[numParams + numState + i], kPipeAxis,
          -1));
    break;
  case PipeInstrKind::forward: {
    auto call = func::CallOp::create(b, loc, split.forward,
                                     operands(split.forwardArgs, m, mb));
    ValueRange results = call.getResults();
    m.outputs.assign(results.begin(), results.begin() + split.numOutputs);
    m.residuals.assign(results.begin() + split.numOutputs, results.end());
    if (stage == stages - 1)
      lossSum = add(lossSum, m.outputs.front());
    break;
  }
  case PipeInstrKind::send_activation:
    for (Value v : m.outputs)
      dist::SendOp::create(b, loc, v, kPipeAxis, 1);
    break;
  case PipeInstrKind::recv_grad:
    for (Value v : m.outputs)
      m.outputGrads.push_back(
          dist::RecvOp::create(b, loc, v.getType(), kPipeAxis, 1));
    break;
  case PipeInstrKind::backward: {
    auto call = func::CallOp::create(b, loc, split.backward,
                                     operands(split.backwardArgs, m, mb));
    ValueRange grads = call.getResults();
    if (gradSums.empty())
      gradSums.resize(numGrads);
    for (unsigned i = 0; i < numGrads; ++i)
      gradSums[i] = add(gradSums[i], grads[i]);
    m.inputGrads.assign(grads.begin() + numGrads, grads.end());
    break;
  }
  case PipeInstrKind::send_grad:
    for (Value v : m.inputGrads)
      dist::SendOp::create(b, loc, v, kPipeAxis, -1);
    break;
  default:
    llvm_unreachable("not a per-micro-batch instruction");
  }
}

/// ReduceTiedGrads: a parameter stages a < b both read gets g_a + g_b on
/// both, added in that order, so the two copies stay bitwise equal. The
/// lower stage sends first and the higher receives first, so the blocking
/// pair cannot deadlock.
LogicalResult reduceSharedGrads(OpBuilder &b, Location loc, func::FuncOp step,
                                DictionaryAttr shared, int64_t stage,
                                SmallVector<Value> &grads) {
  for (NamedAttribute entry : shared) {
    auto stages = dyn_cast<DenseI64ArrayAttr>(entry.getValue());
    if (!stages || stages.size() != 2)
      return step.emitError()
             << "ds-pipeline-schedule: shared parameter " << entry.getName()
             << " must name two stages, as "
                "ds-pipeline-split records it";
    int64_t lo = stages[0], hi = stages[1];
    if (stage != lo && stage != hi)
      continue;
    std::optional<unsigned> index;
    for (unsigned i = 0; i < grads.size(); ++i)
      if (auto param =
              step.getArgAttrOfType<nn::ParamAttr>(i, nn::kParamAttrName);
          param && param.getName() == entry.getName().getValue())
        index = i;
    if (!index)
      return step.emitError()
             << "ds-pipeline-schedule: shared parameter " << entry.getName()
             << " is not an argument of this stage";
    Value mine = grads[*index];
    int64_t offset = hi - lo;
    Value theirs;
    if (stage == lo) {
      dist::SendOp::create(b, loc, mine, kPipeAxis, offset);
      theirs = dist::RecvOp::create(b, loc, mine.getType(), kPipeAxis, offset);
      grads[*index] = nn::AddOp::create(b, loc, mine.getType(), mine, theirs);
    } else {
      theirs = dist::RecvOp::create(b, loc, mine.getType(), kPipeAxis, -offset);
      dist::SendOp::create(b, loc, mine, kPipeAxis, -offset);
      grads[*index] = nn::AddOp::create(b, loc, mine.getType(), theirs, mine);
    }
  }
  return success();
}

struct PipelineSchedulePass
    : mlir::ds::impl::PipelineScheduleBase<PipelineSchedulePass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult build(ModuleOp module, func::FuncOp fb, int64_t stage,
                      int64_t stages, DictionaryAttr shared);
};

} // namespace

void PipelineSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto info =
      module->getAttrOfType<DictionaryAttr>(pipeline::kPipelineAttrName);
  auto stageAttr = info ? info.getAs<IntegerAttr>("stage") : IntegerAttr();
  auto stagesAttr = info ? info.getAs<IntegerAttr>("stages") : IntegerAttr();
  if (!stageAttr || !stagesAttr) {
    module.emitError() << "ds-pipeline-schedule: the module has no "
                       << pipeline::kPipelineAttrName
                       << " = {stage, stages}; run ds-pipeline-split first";
    return signalPassFailure();
  }
  auto fb = module.lookupSymbol<func::FuncOp>(entry);
  if (!fb || fb.isExternal()) {
    module.emitError() << "ds-pipeline-schedule: no func.func @" << entry
                       << " with a body; run ds-autodiff first";
    return signalPassFailure();
  }
  if (module.lookupSymbol(result)) {
    fb.emitError() << "ds-pipeline-schedule: @" << result << " already exists";
    return signalPassFailure();
  }
  auto shared = info.getAs<DictionaryAttr>("shared");
  if (failed(build(module, fb, stageAttr.getInt(), stagesAttr.getInt(),
                   shared ? shared : DictionaryAttr::get(&getContext()))))
    return signalPassFailure();
}

LogicalResult PipelineSchedulePass::build(ModuleOp module, func::FuncOp fb,
                                          int64_t stage, int64_t stages,
                                          DictionaryAttr shared) {
  MLIRContext *ctx = module.getContext();
  Location loc = fb.getLoc();
  ::ds::config::PipelineConfig config;
  config.stages = stages;
  config.microBatches = microBatches;
  if (schedule == "1f1b")
    config.schedule = ::ds::config::PipelineSchedule::OneFOneB;
  else if (schedule == "gpipe")
    config.schedule = ::ds::config::PipelineSchedule::GPipe;
  else
    return module.emitError() << "ds-pipeline-schedule: schedule \"" << schedule
                              << "\" is not built; use 1f1b or gpipe";
  if (microBatches < 1 || dpSize < 1)
    return module.emitError()
           << "ds-pipeline-schedule: micro-batches "
           << static_cast<int64_t>(microBatches) << " and dp-size "
           << static_cast<int64_t>(dpSize) << " must be >= 1";
  auto streams = pipeline::buildSchedule(config);
  if (!streams)
    return module.emitError() << llvm::toString(streams.takeError());

  // The stream must pass the schedule verifier before it becomes code.
  {
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    Operation *op = pipeline::buildScheduleOp(b, loc, config, *streams);
    LogicalResult ok = mlir::verify(op);
    op->erase();
    if (failed(ok))
      return failure();
  }

  // @forward_backward's layout: params, step state, pipe inputs, batch,
  // output gradients, the dropout key; results: outputs, param grads, input
  // grads.
  unsigned numParams = numLeadingParams(fb), numState = 0, numInputs = 0,
           numBatch = 0, numOutputGrads = 0;
  int64_t keyArg = -1;
  for (unsigned i = numParams; i < fb.getNumArguments(); ++i) {
    if (fb.getArgAttr(i, kStateAttrName))
      ++numState;
    else if (fb.getArgAttr(i, pipeline::kPipeInputAttrName))
      ++numInputs;
    else if (fb.getArgAttr(i, pipeline::kPipeGradAttrName))
      ++numOutputGrads;
    else if (fb.getArgAttr(i, kRngKeyAttrName))
      keyArg = i;
    else
      ++numBatch;
  }
  bool last = stage == stages - 1;
  unsigned numOutputs = last ? 1 : numOutputGrads;
  if (fb.getNumResults() != numOutputs + numParams + numInputs)
    return fb.emitError() << "ds-pipeline-schedule: @" << entry
                          << " must return the stage's outputs, then one "
                             "gradient per parameter and pipe input "
                             "(ds-autodiff of a split stage)";
  GradientSplit split = splitGradient(fb, numOutputs);
  numResiduals = split.numResiduals;

  // @train_step: (params, step state, [step], batch with a micro-batch
  // dim) -> (loss, param grads), as ds-accumulate-grads builds it.
  OpBuilder b(ctx);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < numParams + numState; ++i) {
    argTypes.push_back(fb.getArgumentTypes()[i]);
    argAttrs.push_back(fb.getArgAttrDict(i));
  }
  if (keyArg >= 0) {
    argTypes.push_back(RankedTensorType::get({}, b.getI64Type()));
    argAttrs.push_back(
        b.getDictionaryAttr(b.getNamedAttr(kStepAttrName, b.getUnitAttr())));
  }
  for (unsigned i = 0; i < numBatch; ++i) {
    unsigned arg = numParams + numState + numInputs + i;
    auto type = cast<RankedTensorType>(fb.getArgumentTypes()[arg]);
    SmallVector<int64_t> shape = {microBatches};
    llvm::append_range(shape, type.getShape());
    argTypes.push_back(type.clone(shape));
    argAttrs.push_back(fb.getArgAttrDict(arg));
  }
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  SmallVector<Type> resultTypes = {lossType};
  llvm::append_range(resultTypes, fb.getArgumentTypes().take_front(numParams));
  b.setInsertionPointAfter(fb);
  auto step = func::FuncOp::create(
      b, loc, result, FunctionType::get(ctx, argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step->setAttr(kAccumStepsAttrName, b.getI64IntegerAttr(microBatches));
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);

  StreamEmitter emitter(b, loc, fb, split, stage, stages, microBatches);
  emitter.params = body->getArguments().take_front(numParams);
  emitter.state = body->getArguments().slice(numParams, numState);
  if (keyArg >= 0)
    emitter.step = body->getArgument(numParams + numState);
  emitter.batch = body->getArguments().take_back(numBatch);
  emitter.numParams = numParams;
  emitter.numState = numState;
  emitter.numInputs = numInputs;
  emitter.numBatch = numBatch;
  emitter.numGrads = numParams;
  emitter.keyArg = keyArg;
  for (const pipeline::Step &s : (*streams)[stage])
    for (const pipeline::Instr &instr : s) {
      emitter.emit(instr);
      ++numInstrs;
    }

  SmallVector<Value> grads = emitter.gradSums;
  if (failed(reduceSharedGrads(b, loc, step, shared, stage, grads)))
    return failure();
  Value loss = emitter.lossSum;
  if (!last)
    loss = arith::ConstantOp::create(b, loc,
                                     cast<TypedAttr>(b.getZeroAttr(lossType)));
  // The mean: DeepSpeed scales each micro-batch's loss by 1/steps.
  SmallVector<Value> results = {loss};
  llvm::append_range(results, grads);
  if (microBatches > 1)
    results = microBatchMean(b, loc, results, microBatches);
  // Every rank reports the last stage's loss.
  results[0] = dist::BroadcastOp::create(
      b, loc, results[0].getType(), results[0], b.getStrArrayAttr({kPipeAxis}),
      static_cast<uint64_t>(stages - 1));
  func::ReturnOp::create(b, loc, results);

  module->setAttr(dist::DistDialect::kGridAttrName,
                  dist::GridAttr::get(ctx,
                                      {StringAttr::get(ctx, kPipeAxis),
                                       StringAttr::get(ctx, "dp")},
                                      {stages, dpSize}));
  fb.erase();
  return success();
}
