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
GradientSplit splitGradient(func::FuncOp fb, unsigned numOutputs,
                            StringRef suffix) {
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
  split.forward = buildPart(b, fb, ("stage_forward" + suffix).str(), forwardOps,
                            forwardArgs.getArrayRef(), forwardResults);
  SmallVector<Value> backwardInputs(backwardArgs.begin(), backwardArgs.end());
  llvm::append_range(backwardInputs, residuals);
  split.backward = buildPart(
      b, fb, ("stage_backward" + suffix).str(), backwardCopies, backwardInputs,
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

/// One model chunk of the stage (the whole stage unless interleaved): its
/// gradient function, cut in two, and where @forward_backward's arguments
/// (params, step state, pipe inputs, batch, output gradients, the dropout
/// key) come from in @train_step.
struct Chunk {
  /// Mutable: FuncOp's accessors are not const.
  mutable func::FuncOp fb;
  GradientSplit split;
  /// The model's first / last chunk: no pipe inputs / the loss.
  bool first = false, last = false;
  unsigned numParams = 0, numState = 0, numInputs = 0, numBatch = 0,
           numOutputGrads = 0;
  int64_t keyArg = -1;
  /// @train_step's parameter and batch argument of each of ours.
  SmallVector<unsigned> stepParam, stepBatch;
};

/// What one micro-batch has in flight in one chunk of this stage.
struct MicroBatch {
  SmallVector<Value> batch, inputs, outputs, residuals, outputGrads, inputGrads;
};

/// Emits @train_step's body, one instruction at a time.
class StreamEmitter {
public:
  StreamEmitter(OpBuilder &b, Location loc, ArrayRef<Chunk> chunks,
                int64_t microBatches, unsigned numGrads)
      : b(b), loc(loc), chunks(chunks), numMicroBatches(microBatches),
        mbs(chunks.size() * microBatches), gradSums(numGrads) {}

  /// The step's arguments: parameters, step state (the fp16 loss scale),
  /// the step counter (dropout), batch.
  ValueRange params, state, batch;
  Value step;

  void emit(const pipeline::Instr &instr);
  /// Sums of the parameter gradients and of the losses, in micro-batch
  /// order (as ds-accumulate-grads adds them).
  SmallVector<Value> gradSums;
  Value lossSum;

private:
  Value key(int64_t mb);
  SmallVector<Value> operands(const Chunk &c, ArrayRef<Source> sources,
                              MicroBatch &m, int64_t mb);
  Value add(Value sum, Value v) {
    if (!sum && numMicroBatches == 1 && chunks.size() == 1)
      return v;
    if (!sum)
      sum = arith::ConstantOp::create(
          b, loc, cast<TypedAttr>(b.getZeroAttr(v.getType())));
    return nn::AddOp::create(b, loc, v.getType(), sum, v);
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<Chunk> chunks;
  int64_t numMicroBatches;
  std::vector<MicroBatch> mbs;
};

Value StreamEmitter::key(int64_t mb) {
  // What ds-accumulate-grads passes, so dropout draws the same masks.
  return microBatchKey(b, loc, step, numMicroBatches, b.getIndexAttr(mb));
}

SmallVector<Value> StreamEmitter::operands(const Chunk &c,
                                           ArrayRef<Source> sources,
                                           MicroBatch &m, int64_t mb) {
  SmallVector<Value> values;
  for (Source src : sources) {
    if (src.residual) {
      values.push_back(m.residuals[src.index]);
      continue;
    }
    unsigned i = src.index;
    if (i < c.numParams) {
      values.push_back(params[c.stepParam[i]]);
      continue;
    }
    if ((i -= c.numParams) < c.numState) {
      values.push_back(state[i]);
      continue;
    }
    if ((i -= c.numState) < c.numInputs)
      values.push_back(m.inputs[i]);
    else if ((i -= c.numInputs) < c.numBatch)
      values.push_back(m.batch[i]);
    else if (static_cast<int64_t>(src.index) == c.keyArg)
      values.push_back(key(mb));
    else
      values.push_back(m.outputGrads[i - c.numBatch]);
  }
  return values;
}

void StreamEmitter::emit(const pipeline::Instr &instr) {
  if (!instr.microBatch)
    return; // reduce_tied_grads, reduce_grads, optimizer_step: see below
  int64_t mb = *instr.microBatch, j = instr.chunk.value_or(0);
  const Chunk &c = chunks[j];
  MicroBatch &m = mbs[j * numMicroBatches + mb];
  switch (instr.kind) {
  case PipeInstrKind::load_micro_batch:
    for (unsigned arg : c.stepBatch)
      m.batch.push_back(
          microBatchSlice(b, loc, batch[arg], b.getIndexAttr(mb)));
    break;
  case PipeInstrKind::recv_activation:
    for (unsigned i = 0; i < c.numInputs; ++i)
      m.inputs.push_back(dist::RecvOp::create(
          b, loc, c.fb.getArgumentTypes()[c.numParams + c.numState + i],
          kPipeAxis, -1));
    break;
  case PipeInstrKind::forward: {
    auto call = func::CallOp::create(b, loc, c.split.forward,
                                     operands(c, c.split.forwardArgs, m, mb));
    ValueRange results = call.getResults();
    m.outputs.assign(results.begin(), results.begin() + c.split.numOutputs);
    m.residuals.assign(results.begin() + c.split.numOutputs, results.end());
    if (c.last)
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
    auto call = func::CallOp::create(b, loc, c.split.backward,
                                     operands(c, c.split.backwardArgs, m, mb));
    ValueRange grads = call.getResults();
    for (unsigned i = 0; i < c.numParams; ++i)
      gradSums[c.stepParam[i]] = add(gradSums[c.stepParam[i]], grads[i]);
    m.inputGrads.assign(grads.begin() + c.numParams, grads.end());
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
  /// Reads chunk `j`'s gradient function's layout and cuts it in two.
  FailureOr<Chunk> prepareChunk(func::FuncOp fb, int64_t j, int64_t stage,
                                int64_t stages, int64_t numChunks);
  LogicalResult build(ModuleOp module, ArrayRef<func::FuncOp> fbs,
                      int64_t stage, int64_t stages, DictionaryAttr shared);
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
  auto chunksAttr = info.getAs<IntegerAttr>("virtual_stages");
  int64_t numChunks = chunksAttr ? chunksAttr.getInt() : 1;
  if ((schedule == "interleaved") != (numChunks > 1)) {
    module.emitError() << "ds-pipeline-schedule: schedule \"" << schedule
                       << "\" on a module split into " << numChunks
                       << " model chunk(s) per stage; the interleaved schedule "
                          "and only it needs ds-pipeline-split with "
                          "virtual-stages >= 2";
    return signalPassFailure();
  }
  SmallVector<func::FuncOp> fbs;
  for (int64_t j = 0; j < numChunks; ++j) {
    std::string name = entry;
    if (numChunks > 1)
      name += "_chunk" + std::to_string(j);
    auto fb = module.lookupSymbol<func::FuncOp>(name);
    if (!fb || fb.isExternal()) {
      module.emitError() << "ds-pipeline-schedule: no func.func @" << name
                         << " with a body; run ds-autodiff first";
      return signalPassFailure();
    }
    fbs.push_back(fb);
  }
  if (module.lookupSymbol(result)) {
    fbs.front().emitError()
        << "ds-pipeline-schedule: @" << result << " already exists";
    return signalPassFailure();
  }
  auto shared = info.getAs<DictionaryAttr>("shared");
  if (failed(build(module, fbs, stageAttr.getInt(), stagesAttr.getInt(),
                   shared ? shared : DictionaryAttr::get(&getContext()))))
    return signalPassFailure();
}

FailureOr<Chunk> PipelineSchedulePass::prepareChunk(func::FuncOp fb, int64_t j,
                                                    int64_t stage,
                                                    int64_t stages,
                                                    int64_t numChunks) {
  Chunk c;
  c.fb = fb;
  int64_t model = j * stages + stage;
  c.first = model == 0;
  c.last = model == stages * numChunks - 1;
  c.numParams = numLeadingParams(fb);
  for (unsigned i = c.numParams; i < fb.getNumArguments(); ++i) {
    if (fb.getArgAttr(i, kStateAttrName))
      ++c.numState;
    else if (fb.getArgAttr(i, pipeline::kPipeInputAttrName))
      ++c.numInputs;
    else if (fb.getArgAttr(i, pipeline::kPipeGradAttrName))
      ++c.numOutputGrads;
    else if (fb.getArgAttr(i, kRngKeyAttrName))
      c.keyArg = i;
    else
      ++c.numBatch;
  }
  unsigned numOutputs = c.last ? 1 : c.numOutputGrads;
  if (fb.getNumResults() != numOutputs + c.numParams + c.numInputs)
    return fb.emitError() << "ds-pipeline-schedule: @" << fb.getName()
                          << " must return the stage's outputs, then one "
                             "gradient per parameter and pipe input "
                             "(ds-autodiff of a split stage)";
  c.split = splitGradient(fb, numOutputs,
                          numChunks > 1 ? "_chunk" + std::to_string(j) : "");
  numResiduals += c.split.numResiduals;
  return c;
}

/// The name of a batch argument (ds-import's dsnn.batch).
static constexpr StringLiteral kBatchAttr = "dsnn.batch";

/// The position of `attrs` in `seen`, appended when new: the step's
/// arguments are the union of its chunks', each parameter or batch argument
/// once.
static unsigned stepArg(SmallVector<DictionaryAttr> &seen, DictionaryAttr attrs,
                        Type type, SmallVector<Type> &types) {
  auto *it = llvm::find(seen, attrs);
  if (it != seen.end())
    return it - seen.begin();
  seen.push_back(attrs);
  types.push_back(type);
  return seen.size() - 1;
}

LogicalResult PipelineSchedulePass::build(ModuleOp module,
                                          ArrayRef<func::FuncOp> fbs,
                                          int64_t stage, int64_t stages,
                                          DictionaryAttr shared) {
  MLIRContext *ctx = module.getContext();
  Location loc = func::FuncOp(fbs.front()).getLoc();
  int64_t numChunks = fbs.size();
  ::ds::config::PipelineConfig config;
  config.stages = stages;
  config.microBatches = microBatches;
  if (schedule == "1f1b")
    config.schedule = ::ds::config::PipelineSchedule::OneFOneB;
  else if (schedule == "gpipe")
    config.schedule = ::ds::config::PipelineSchedule::GPipe;
  else if (schedule == "interleaved")
    config.schedule = ::ds::config::PipelineSchedule::Interleaved;
  else
    return module.emitError()
           << "ds-pipeline-schedule: schedule \"" << schedule
           << "\" is not built; use 1f1b, gpipe or interleaved";
  config.virtualStages = numChunks;
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

  std::vector<Chunk> chunks;
  for (auto [j, fb] : llvm::enumerate(fbs)) {
    FailureOr<Chunk> c = prepareChunk(fb, j, stage, stages, numChunks);
    if (failed(c))
      return failure();
    chunks.push_back(std::move(*c));
  }

  // @train_step: (params, step state, [step], batch with a micro-batch
  // dim) -> (loss, param grads), as ds-accumulate-grads builds it; the
  // parameters and batch arguments of all chunks, each once.
  OpBuilder b(ctx);
  SmallVector<DictionaryAttr> paramAttrs, batchAttrs;
  SmallVector<Type> paramTypes, batchTypes;
  for (Chunk &c : chunks) {
    for (unsigned i = 0; i < c.numParams; ++i)
      c.stepParam.push_back(stepArg(paramAttrs, c.fb.getArgAttrDict(i),
                                    c.fb.getArgumentTypes()[i], paramTypes));
    for (unsigned i = 0; i < c.numBatch; ++i) {
      unsigned arg = c.numParams + c.numState + c.numInputs + i;
      auto type = cast<RankedTensorType>(c.fb.getArgumentTypes()[arg]);
      SmallVector<int64_t> shape = {microBatches};
      llvm::append_range(shape, type.getShape());
      // A batch argument named by dsnn.batch is the same one in every
      // chunk of the stage; an unnamed one (a hand-written contract's) is
      // its chunk's own, and two of them are never one argument.
      DictionaryAttr attrs = c.fb.getArgAttrDict(arg);
      if (!attrs || !attrs.get(kBatchAttr)) {
        if (chunks.size() > 1)
          return c.fb.emitError()
                 << "ds-pipeline-schedule: batch argument " << i
                 << " of an interleaved chunk has no dsnn.batch name, so "
                    "the chunks of a stage cannot share it; name the batch "
                    "arguments (dsnn.batch = \"...\") or use one chunk per "
                    "stage";
        c.stepBatch.push_back(batchAttrs.size());
        batchAttrs.push_back(attrs);
        batchTypes.push_back(type.clone(shape));
        continue;
      }
      c.stepBatch.push_back(
          stepArg(batchAttrs, attrs, type.clone(shape), batchTypes));
    }
  }
  const Chunk &front = chunks.front();
  bool hasKey =
      llvm::any_of(chunks, [](const Chunk &c) { return c.keyArg >= 0; });
  SmallVector<Type> argTypes(paramTypes);
  SmallVector<DictionaryAttr> argAttrs(paramAttrs);
  for (unsigned i = 0; i < front.numState; ++i) {
    argTypes.push_back(front.fb.getArgumentTypes()[front.numParams + i]);
    argAttrs.push_back(front.fb.getArgAttrDict(front.numParams + i));
  }
  if (hasKey) {
    argTypes.push_back(RankedTensorType::get({}, b.getI64Type()));
    argAttrs.push_back(
        b.getDictionaryAttr(b.getNamedAttr(kStepAttrName, b.getUnitAttr())));
  }
  llvm::append_range(argTypes, batchTypes);
  llvm::append_range(argAttrs, batchAttrs);
  unsigned numParams = paramTypes.size();
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  SmallVector<Type> resultTypes = {lossType};
  llvm::append_range(resultTypes, paramTypes);
  b.setInsertionPointAfter(fbs.back());
  auto step = func::FuncOp::create(
      b, loc, result, FunctionType::get(ctx, argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step->setAttr(kAccumStepsAttrName, b.getI64IntegerAttr(microBatches));
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);

  StreamEmitter emitter(b, loc, chunks, microBatches, numParams);
  emitter.params = body->getArguments().take_front(numParams);
  emitter.state = body->getArguments().slice(numParams, front.numState);
  if (hasKey)
    emitter.step = body->getArgument(numParams + front.numState);
  emitter.batch = body->getArguments().take_back(batchTypes.size());
  for (const pipeline::Step &s : (*streams)[stage])
    for (const pipeline::Instr &instr : s) {
      emitter.emit(instr);
      ++numInstrs;
    }

  SmallVector<Value> grads = emitter.gradSums;
  if (failed(reduceSharedGrads(b, loc, step, shared, stage, grads)))
    return failure();
  bool last = stage == stages - 1;
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

  // pp outermost, before the stage's grid when an earlier pass set one
  // (dp x tp, dp x ep, dp x ep x tp): a rank sends to the rank of the next
  // stage with its own place in the stage, and the stage's groups (its
  // expert-parallel groups too) are its own ranks.
  SmallVector<StringAttr> axes = {StringAttr::get(ctx, kPipeAxis)};
  SmallVector<int64_t> sizes = {stages};
  if (auto grid = module->getAttrOfType<dist::GridAttr>(
          dist::DistDialect::kGridAttrName)) {
    llvm::append_range(axes, grid.getAxes());
    llvm::append_range(sizes, grid.getSizes());
  } else {
    axes.push_back(StringAttr::get(ctx, "dp"));
    sizes.push_back(dpSize);
  }
  module->setAttr(dist::DistDialect::kGridAttrName,
                  dist::GridAttr::get(ctx, axes, sizes));
  for (func::FuncOp fb : fbs)
    fb.erase();
  return success();
}
