//===- PipelineSplit.cpp - One pipeline stage of the model contract ------===//
//
// Each top-level op of @forward gets a stage: a layer its layer's stage, an
// op outside layers the stage of the layer after it (the last stage after
// the last layer). Stage order follows block order, so values only flow to
// the same or a later stage; what flows to the next stage becomes a pipe
// output there and a pipe input here.
//
//===----------------------------------------------------------------------===//
#include "ds/Config/Config.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::ds {
#define GEN_PASS_DEF_PIPELINESPLIT
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

struct PipelineSplitPass
    : mlir::ds::impl::PipelineSplitBase<PipelineSplitPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stages < 1 || stage < 0 || stage >= stages || virtualStages < 1) {
      module.emitError() << "ds-pipeline-split: stage "
                         << static_cast<int64_t>(stage) << " is not one of the "
                         << static_cast<int64_t>(stages)
                         << " stages (virtual-stages "
                         << static_cast<int64_t>(virtualStages)
                         << "); use 0 <= stage < stages, virtual-stages >= 1";
      return signalPassFailure();
    }
    if (stages == 1)
      return;
    auto forward = module.lookupSymbol<func::FuncOp>(entry);
    if (!forward || forward.isExternal()) {
      module.emitError() << "ds-pipeline-split: no func.func @" << entry
                         << " with a body (the model contract)";
      return signalPassFailure();
    }
    if (failed(split(module, forward)))
      return signalPassFailure();
  }

  LogicalResult split(ModuleOp module, func::FuncOp forward);
  /// The model chunk of each top-level op of `forward` (the terminator
  /// included); a chunk is a stage unless the schedule is interleaved.
  FailureOr<DenseMap<Operation *, int64_t>> assignChunks(func::FuncOp forward);
  /// Builds the function of model chunk `chunk` named `name` before
  /// `forward`.
  LogicalResult buildChunk(func::FuncOp forward,
                           DenseMap<Operation *, int64_t> &chunkOf,
                           int64_t chunk, StringRef name);

  int64_t numChunks() const { return stages * virtualStages; }
  /// What the diagnostics call a part: a stage, or a chunk when interleaved.
  StringRef unit() const { return virtualStages > 1 ? "chunk" : "stage"; }

  /// The partition, as DeepSpeed's boundary list and each stage's layers.
  std::string partitionText;
};

} // namespace

FailureOr<DenseMap<Operation *, int64_t>>
PipelineSplitPass::assignChunks(func::FuncOp forward) {
  ::ds::config::PipelineConfig config;
  config.stages = stages;
  if (virtualStages > 1) {
    config.schedule = ::ds::config::PipelineSchedule::Interleaved;
    config.virtualStages = virtualStages;
  }
  if (llvm::Error err = ::ds::config::parsePartitionMethod(partition, config))
    return forward.emitError() << "ds-pipeline-split: partition: "
                               << llvm::toString(std::move(err));
  auto layers = pipeline::collectLayers(forward);
  if (!layers)
    return forward.emitError() << llvm::toString(layers.takeError());
  auto parts = pipeline::partitionLayers(*layers, config);
  if (!parts)
    return forward.emitError() << llvm::toString(parts.takeError());
  llvm::raw_string_ostream text(partitionText);
  text << "ds-pipeline-split: " << static_cast<std::string>(partition)
       << " over " << static_cast<int64_t>(stages) << " stages";
  if (virtualStages > 1)
    text << " x " << static_cast<int64_t>(virtualStages) << " virtual stages";
  text << ", parts ["
       << llvm::join(llvm::map_range(
                         *parts, [](int64_t p) { return std::to_string(p); }),
                     ", ")
       << "]";
  for (int64_t c = 0; c < numChunks(); ++c) {
    if (virtualStages > 1)
      text << "; chunk " << c << " (stage " << c % stages << "):";
    else
      text << "; stage " << c << ":";
    for (int64_t l = (*parts)[c]; l < (*parts)[c + 1]; ++l)
      text << " " << (*layers)[l].name;
  }
  auto chunkOfLayer = [&](int64_t index) {
    int64_t c = 0;
    while (index >= (*parts)[c + 1])
      ++c;
    return c;
  };

  DenseMap<Operation *, int64_t> chunkOf;
  SmallVector<Operation *> pending;
  int64_t layerIndex = 0;
  for (Operation &op : forward.getBody().front()) {
    if (!isa<nn::LayerOp>(op)) {
      pending.push_back(&op);
      continue;
    }
    int64_t c = chunkOfLayer(layerIndex++);
    for (Operation *before : pending)
      chunkOf[before] = c;
    pending.clear();
    chunkOf[&op] = c;
    if (c % stages == stage)
      ++numLayers;
  }
  // The head (when collectLayers made one) is the last layer: its ops and
  // the loss run in the last chunk.
  for (Operation *after : pending)
    chunkOf[after] = numChunks() - 1;
  if (stage == stages - 1 && layerIndex < static_cast<int64_t>(layers->size()))
    ++numLayers;
  return chunkOf;
}

/// Parameters that more than one stage reads (a tied embedding and LM
/// head), as `{name = array<i64: stages>}`; their gradients are summed
/// between those stages. More than two is refused for now.
static FailureOr<DictionaryAttr>
sharedParams(func::FuncOp forward, DenseMap<Operation *, int64_t> &chunkOf,
             int64_t stages) {
  Block &body = forward.getBody().front();
  Builder b(forward.getContext());
  SmallVector<NamedAttribute> shared;
  for (BlockArgument arg : forward.getArguments()) {
    auto param = forward.getArgAttrOfType<nn::ParamAttr>(arg.getArgNumber(),
                                                         nn::kParamAttrName);
    if (!param)
      continue;
    llvm::SmallSetVector<int64_t, 4> readers;
    for (Operation *user : arg.getUsers())
      readers.insert(chunkOf[body.findAncestorOpInBlock(*user)] % stages);
    if (readers.size() < 2)
      continue;
    SmallVector<int64_t> sorted(readers.begin(), readers.end());
    llvm::sort(sorted);
    if (sorted.size() > 2)
      return forward.emitError()
             << "ds-pipeline-split: parameter \"" << param.getName()
             << "\" is read by " << sorted.size()
             << " stages; ds keeps a weight in sync between two stages "
                "(a tied embedding and LM head) at most";
    shared.push_back(
        b.getNamedAttr(param.getName(), b.getDenseI64ArrayAttr(sorted)));
  }
  return b.getDictionaryAttr(shared);
}

LogicalResult PipelineSplitPass::split(ModuleOp module, func::FuncOp forward) {
  auto chunkOf = assignChunks(forward);
  if (failed(chunkOf))
    return failure();
  FailureOr<DictionaryAttr> shared = sharedParams(forward, *chunkOf, stages);
  if (failed(shared))
    return failure();
  std::string name = forward.getName().str();
  for (int64_t j = 0; j < virtualStages; ++j) {
    std::string chunkName =
        virtualStages > 1 ? name + "_chunk" + std::to_string(j) : name;
    if (failed(buildChunk(forward, *chunkOf, j * stages + stage, chunkName)))
      return failure();
  }
  Location loc = forward.getLoc();
  forward.erase();

  // The partition every stage agrees on, as ds-report prints it.
  // On the location only: the op would be printed after the remark.
  mlir::emitRemark(loc, partitionText);
  Builder b(module.getContext());
  SmallVector<NamedAttribute> info = {
      b.getNamedAttr("stage", b.getI64IntegerAttr(stage)),
      b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
      b.getNamedAttr("shared", *shared)};
  if (virtualStages > 1)
    info.push_back(
        b.getNamedAttr("virtual_stages", b.getI64IntegerAttr(virtualStages)));
  module->setAttr(pipeline::kPipelineAttrName, b.getDictionaryAttr(info));
  return success();
}

/// The values that cross from chunk `chunk - 1` into `chunk`: made by an
/// earlier chunk and read by this one or a later one. A value read further
/// on than the next chunk (an MoE layer's aux loss, which the last chunk
/// adds to the loss; a skip connection) is relayed: each chunk between
/// receives it and passes it on as it is, since chunks exchange values with
/// their neighbours only. The body's order, so a chunk's outputs and the
/// next chunk's inputs pair up by position.
static SmallVector<Value> crossing(Block &body,
                                   DenseMap<Operation *, int64_t> &chunkOf,
                                   int64_t chunk) {
  llvm::MapVector<Value, int64_t> lastReader;
  for (Operation &op : body) {
    int64_t to = chunkOf[&op];
    for (Value v : pipeline::usedFromAbove(&op)) {
      Operation *def = v.getDefiningOp();
      if (!def || pipeline::isCopyable(def) || chunkOf[def] >= to)
        continue;
      int64_t &reader = lastReader[v];
      reader = std::max(reader, to);
    }
  }
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  SmallVector<Value> values;
  for (auto [v, to] : lastReader)
    if (chunkOf[v.getDefiningOp()] < chunk && chunk <= to)
      values.push_back(v);
  llvm::sort(values, [&](Value a, Value b) {
    auto key = [&](Value v) {
      return std::make_pair(position[v.getDefiningOp()],
                            cast<OpResult>(v).getResultNumber());
    };
    return key(a) < key(b);
  });
  return values;
}

LogicalResult
PipelineSplitPass::buildChunk(func::FuncOp forward,
                              DenseMap<Operation *, int64_t> &chunkOf,
                              int64_t chunk, StringRef name) {
  Block &body = forward.getBody().front();
  bool last = chunk == numChunks() - 1;
  // What this stage computes: its own ops and the copyable ones it reads.
  llvm::SetVector<Operation *> kept;
  for (Operation &op : body)
    if (chunkOf[&op] == chunk)
      kept.insert(&op);
  SmallVector<Value> inputs = crossing(body, chunkOf, chunk);
  for (Operation &op : body)
    if (!kept.contains(&op) && pipeline::isCopyable(&op) &&
        llvm::any_of(op.getUsers(), [&](Operation *user) {
          Operation *top = body.findAncestorOpInBlock(*user);
          return top && kept.contains(top);
        }))
      kept.insert(&op);

  // What the next stage reads of ours, or passes on.
  SmallVector<Value> outputs =
      last ? SmallVector<Value>() : crossing(body, chunkOf, chunk + 1);
  if (!last && outputs.empty())
    return forward.emitError()
           << "ds-pipeline-split: " << unit() << " " << chunk
           << " computes nothing the next " << unit() << " reads";

  // The stage's signature: the parameters it reads, the step's state (the
  // fp16 loss scale, which every stage's scaler keeps, read or not), its
  // pipe inputs, then its batch arguments.
  llvm::SetVector<Value> usedArgs;
  for (Operation *op : kept)
    for (Value v : pipeline::usedFromAbove(op))
      if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == &body)
        usedArgs.insert(v);
  OpBuilder b(forward);
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> oldArgs;
  enum class Kind { Param, State, Batch };
  auto kindOf = [&](BlockArgument arg) {
    if (forward.getArgAttr(arg.getArgNumber(), nn::kParamAttrName))
      return Kind::Param;
    if (forward.getArgAttr(arg.getArgNumber(), kStateAttrName))
      return Kind::State;
    return Kind::Batch;
  };
  auto addArgs = [&](Kind kind) {
    for (BlockArgument arg : forward.getArguments()) {
      if (kindOf(arg) != kind ||
          (kind != Kind::State && !usedArgs.contains(arg)))
        continue;
      argTypes.push_back(arg.getType());
      argAttrs.push_back(forward.getArgAttrDict(arg.getArgNumber()));
      oldArgs.push_back(arg);
      if (kind == Kind::Param)
        ++numParams;
    }
  };
  addArgs(Kind::Param);
  addArgs(Kind::State);
  for (auto [i, v] : llvm::enumerate(inputs)) {
    argTypes.push_back(v.getType());
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(pipeline::kPipeInputAttrName, b.getI64IntegerAttr(i))));
    oldArgs.push_back(v);
  }
  numInputs += inputs.size();
  addArgs(Kind::Batch);

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results =
      last ? SmallVector<Value>(ret.getOperands()) : outputs;
  numOutputs += last ? 0 : outputs.size();
  auto fn = func::FuncOp::create(
      b, forward.getLoc(), name,
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  fn.setAllArgAttrs(argAttrs);
  if (!last)
    for (unsigned i = 0; i < results.size(); ++i)
      fn.setResultAttr(i, pipeline::kPipeOutputAttrName,
                       b.getI64IntegerAttr(i));
  Block *entryBlock = fn.addEntryBlock();
  IRMapping mapping;
  for (auto [old, arg] : llvm::zip(oldArgs, entryBlock->getArguments()))
    mapping.map(old, arg);
  b.setInsertionPointToStart(entryBlock);
  for (Operation &op : body)
    if (kept.contains(&op) && &op != ret.getOperation())
      b.clone(op, mapping);
  SmallVector<Value> mapped;
  for (Value v : results)
    mapped.push_back(mapping.lookup(v));
  func::ReturnOp::create(b, ret.getLoc(), mapped);
  return success();
}
