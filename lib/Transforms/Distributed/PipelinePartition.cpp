//===- PipelinePartition.cpp - Cutting the layer list into stages --------===//
//
// The layer list is what a DeepSpeed PipelineModule is given: the model
// contract's top-level `dsnn.layer`s in order, and the head after them. The
// partitions reproduce DeepSpeed's boundaries for the same per-layer weights,
// including the quirks of its balanced partition (it minimizes the spread
// max - min, not the heaviest part), so a DeepSpeed user gets the stages they
// know; "flops" is ds's own and minimizes the slowest stage.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Pipeline.h"

#include "ds/Config/Config.h"
#include "dsnn/NNOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Regex.h"

#include <limits>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::pipeline;

llvm::SetVector<Value> mlir::ds::pipeline::usedFromAbove(Operation *op) {
  llvm::SetVector<Value> used;
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      Operation *owner = v.getDefiningOp();
      if (!owner)
        owner = cast<BlockArgument>(v).getOwner()->getParentOp();
      if (owner != op && !op->isProperAncestor(owner))
        used.insert(v);
    }
  });
  return used;
}

bool mlir::ds::pipeline::isCopyable(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 && isPure(op);
}

bool mlir::ds::pipeline::countsInStageNorm(ModuleOp module, func::FuncOp fn,
                                           unsigned param) {
  auto info = module->getAttrOfType<DictionaryAttr>(kPipelineAttrName);
  if (!info)
    return true;
  auto shared = info.getAs<DictionaryAttr>("shared");
  auto attr = fn.getArgAttrOfType<nn::ParamAttr>(param, nn::kParamAttrName);
  if (!attr || !shared)
    return true;
  auto holders =
      dyn_cast_or_null<DenseI64ArrayAttr>(shared.get(attr.getName()));
  return !holders || holders[0] == info.getAs<IntegerAttr>("stage").getInt();
}

Value mlir::ds::pipeline::normSquares(OpBuilder &b, Location loc,
                                      ModuleOp module, func::FuncOp fn,
                                      ArrayRef<Value> grads) {
  auto grid =
      module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
  bool tensorParallel = grid && grid.getAxisSize("tp").value_or(1) > 1;
  SmallVector<Value> pieces, whole;
  for (auto [i, g] : llvm::enumerate(grads))
    if (countsInStageNorm(module, fn, i))
      (tensorParallel &&
               fn.getArgAttr(i, dist::DistDialect::kTensorParallelAttrName)
           ? pieces
           : whole)
          .push_back(g);
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  Value sum;
  if (!pieces.empty())
    sum = dist::AllReduceOp::create(
        b, loc, scalar,
        train::GlobalNormOp::create(b, loc, scalar, pieces, b.getUnitAttr(),
                                    /*init=*/Value()),
        b.getStrArrayAttr({"tp"}), dist::ReductionKind::sum);
  if (!whole.empty())
    sum = train::GlobalNormOp::create(b, loc, scalar, whole, b.getUnitAttr(),
                                      sum);
  if (!sum)
    sum = arith::ConstantOp::create(b, loc,
                                    cast<TypedAttr>(b.getZeroAttr(scalar)));
  return sum;
}

llvm::SetVector<Operation *>
mlir::ds::pipeline::forwardSlice(Block &block, ValueRange outputs) {
  llvm::SetVector<Operation *> needed;
  SmallVector<Operation *> work;
  auto need = [&](Value v) {
    if (Operation *def = v.getDefiningOp())
      if (Operation *top = block.findAncestorOpInBlock(*def);
          needed.insert(top))
        work.push_back(top);
  };
  for (Value v : outputs)
    need(v);
  while (!work.empty())
    for (Value v : usedFromAbove(work.pop_back_val()))
      need(v);
  return needed;
}

llvm::SetVector<Value> mlir::ds::pipeline::savedValues(Block &block,
                                                       ValueRange outputs) {
  llvm::SetVector<Operation *> forward = forwardSlice(block, outputs);
  llvm::SetVector<Value> saved;
  for (Operation &op : block.without_terminator()) {
    if (forward.contains(&op))
      continue;
    for (Value v : usedFromAbove(&op))
      if (Operation *def = v.getDefiningOp())
        if (Operation *top = block.findAncestorOpInBlock(*def);
            forward.contains(top) && !isCopyable(top))
          saved.insert(v);
  }
  return saved;
}

static int64_t numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 0;
}

/// Forward FLOPs of one op: contractions count a multiply and an add per
/// term, everything else one operation per result element.
static int64_t flopsOf(Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  int64_t out = numElements(op->getResult(0).getType());
  auto lastDim = [](Value v) -> int64_t {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.getRank() > 0 ? t.getShape().back() : 1;
  };
  if (auto linear = dyn_cast<nn::LinearOp>(op))
    return 2 * out * lastDim(linear.getInput());
  if (isa<nn::MatmulOp, nn::BatchMatmulOp>(op))
    return 2 * out * lastDim(op->getOperand(0));
  if (auto attention = dyn_cast<nn::AttentionOp>(op)) {
    // Q·Kᵀ: [..., Tq, Tk] terms of length D; P·V: [..., Tq, Dv] of length Tk.
    auto key = cast<RankedTensorType>(attention.getKey().getType());
    int64_t tk = key.getRank() >= 2 ? key.getShape()[key.getRank() - 2] : 1;
    int64_t scores = out / lastDim(attention.getResult()) * tk;
    return 2 * scores * lastDim(attention.getQuery()) + 2 * out * tk;
  }
  return out;
}

namespace {
/// Accumulates one pipeline layer from the ops that belong to it.
struct LayerBuilder {
  Layer layer;
  llvm::DenseSet<unsigned> params;

  void add(Operation *op) {
    op->walk([&](Operation *inner) {
      layer.flops += flopsOf(inner);
      for (Value operand : inner->getOperands()) {
        auto arg = dyn_cast<BlockArgument>(operand);
        if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
          continue;
        auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
        if (fn.getArgAttr(arg.getArgNumber(), nn::kParamAttrName) &&
            params.insert(arg.getArgNumber()).second)
          layer.params += numElements(arg.getType());
      }
    });
  }
  void finish() {
    layer.paramArgs.assign(params.begin(), params.end());
    llvm::sort(layer.paramArgs);
  }
};
} // namespace

llvm::Expected<std::vector<Layer>>
mlir::ds::pipeline::collectLayers(func::FuncOp forward) {
  std::vector<Layer> layers;
  // Ops outside every layer run with the layer that follows them; those
  // after the last layer are the head.
  LayerBuilder pending;
  for (Operation &op : forward.getBody().front()) {
    auto layer = dyn_cast<nn::LayerOp>(op);
    if (!layer) {
      if (!op.hasTrait<OpTrait::IsTerminator>())
        pending.add(&op);
      continue;
    }
    LayerBuilder builder = std::move(pending);
    pending = LayerBuilder();
    builder.layer.name = layer.getLayerName().str();
    builder.layer.type = layer.getLayerType().str();
    builder.add(layer);
    builder.finish();
    layers.push_back(std::move(builder.layer));
  }
  if (layers.empty())
    return llvm::createStringError(
        "@" + forward.getSymName().str() +
        " has no top-level dsnn.layer to cut into pipeline stages; a "
        "pipeline needs the model's layers (a spec model has them, a "
        "TorchScript model gets one per submodule)");
  if (!pending.params.empty()) {
    pending.finish();
    pending.layer.name = kHeadLayerName.str();
    pending.layer.type = kHeadLayerType.str();
    layers.push_back(std::move(pending.layer));
  } else {
    // The loss alone is not a layer (DeepSpeed's loss_fn): it runs on the
    // last stage.
    layers.back().flops += pending.layer.flops;
  }
  return layers;
}

std::vector<int64_t> mlir::ds::pipeline::stageParams(func::FuncOp forward,
                                                     ArrayRef<Layer> layers,
                                                     ArrayRef<int64_t> parts) {
  std::vector<int64_t> counts;
  for (size_t s = 0; s + 1 < parts.size(); ++s) {
    llvm::DenseSet<unsigned> held;
    int64_t count = 0;
    for (int64_t l = parts[s]; l < parts[s + 1]; ++l)
      for (unsigned arg : layers[l].paramArgs)
        if (held.insert(arg).second)
          count += numElements(forward.getArgument(arg).getType());
    counts.push_back(count);
  }
  return counts;
}

std::vector<int64_t> mlir::ds::pipeline::partitionUniform(int64_t numItems,
                                                          int64_t numParts) {
  std::vector<int64_t> parts(numParts + 1);
  if (numItems <= numParts) {
    for (int64_t p = 0; p <= numParts; ++p)
      parts[p] = std::min(p, numItems);
    return parts;
  }
  int64_t chunk = numItems / numParts, residual = numItems % numParts;
  for (int64_t p = 0; p <= numParts; ++p)
    parts[p] = p * chunk + std::min(p, residual);
  return parts;
}

namespace {
/// A (items + 1) x (parts + 1) table of the partition dynamic programs, with
/// the split point each entry chose, and the boundaries read back from it.
template <typename T> struct PartitionTable {
  PartitionTable(int64_t n, int64_t m, T fill)
      : n(n), m(m), value((n + 1) * (m + 1), fill), position(value.size()) {}
  T &operator()(int64_t i, int64_t j) { return value[i * (m + 1) + j]; }
  int64_t &split(int64_t i, int64_t j) { return position[i * (m + 1) + j]; }
  std::vector<int64_t> boundaries() {
    std::vector<int64_t> parts = {n};
    for (int64_t j = m; j >= 1; --j)
      parts.push_back(split(parts.back(), j));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  int64_t n, m;
  std::vector<T> value;
  std::vector<int64_t> position;
};

template <typename T> std::vector<T> prefixSums(ArrayRef<int64_t> weights) {
  std::vector<T> prefix(weights.size() + 1, T(0));
  for (size_t i = 0; i < weights.size(); ++i)
    prefix[i + 1] = prefix[i] + static_cast<T>(weights[i]);
  return prefix;
}
} // namespace

std::vector<int64_t>
mlir::ds::pipeline::partitionBalanced(ArrayRef<int64_t> weights,
                                      int64_t numParts) {
  int64_t n = weights.size(), m = numParts;
  if (n <= m)
    return partitionUniform(n, m);

  // DeepSpeed's table in doubles, infinities included: an unreachable state
  // (k items in j - 1 parts with k < j - 1) has max = inf, so its cost is
  // inf, and `>=` lets it claim a state no finite cost has reached yet.
  const double inf = std::numeric_limits<double>::infinity();
  PartitionTable<double> dpCost(n, m, inf), dpMax(n, m, inf), dpMin(n, m, inf);
  std::vector<double> prefix = prefixSums<double>(weights);

  dpMax(0, 0) = 0;
  dpCost(0, 0) = 0;
  for (int64_t i = 1; i <= n; ++i) {
    for (int64_t j = 1; j <= std::min(i, m); ++j) {
      for (int64_t k = 0; k < i; ++k) {
        double part = prefix[i] - prefix[k];
        double maxSum = std::max(dpMax(k, j - 1), part);
        double minSum = std::min(dpMin(k, j - 1), part);
        double cost = maxSum - minSum;
        if (dpCost(i, j) >= cost) {
          dpCost(i, j) = cost;
          dpMax(i, j) = maxSum;
          dpMin(i, j) = minSum;
          dpCost.split(i, j) = k;
        }
      }
    }
  }
  return dpCost.boundaries();
}

std::vector<int64_t>
mlir::ds::pipeline::partitionMinMax(ArrayRef<int64_t> weights,
                                    int64_t numParts) {
  int64_t n = weights.size(), m = numParts;
  if (n <= m)
    return partitionUniform(n, m);
  const int64_t inf = std::numeric_limits<int64_t>::max();
  // best(i, j): the lightest heaviest part of items [0, i) in j parts.
  PartitionTable<int64_t> best(n, m, inf);
  std::vector<int64_t> prefix = prefixSums<int64_t>(weights);
  best(0, 0) = 0;
  for (int64_t j = 1; j <= m; ++j) {
    for (int64_t i = j; i <= n - (m - j); ++i) {
      for (int64_t k = j - 1; k < i; ++k) {
        if (best(k, j - 1) == inf)
          continue;
        int64_t heaviest = std::max(best(k, j - 1), prefix[i] - prefix[k]);
        if (heaviest < best(i, j)) {
          best(i, j) = heaviest;
          best.split(i, j) = k;
        }
      }
    }
  }
  return best.boundaries();
}

llvm::Expected<std::vector<int64_t>> mlir::ds::pipeline::partitionLayers(
    ArrayRef<Layer> layers, const ::ds::config::PipelineConfig &config) {
  using ::ds::config::PartitionMethod;
  using ::ds::config::PipelineSchedule;
  int64_t numParts = config.stages;
  bool interleaved = config.schedule == PipelineSchedule::Interleaved;
  if (interleaved)
    numParts *= config.virtualStages;
  int64_t numLayers = layers.size();
  if (numParts > numLayers) {
    std::string parts =
        interleaved ? std::to_string(config.stages) + " stages x " +
                          std::to_string(config.virtualStages) +
                          " virtual stages (= " + std::to_string(numParts) +
                          " model chunks)"
                    : std::to_string(numParts) + " stages";
    return llvm::createStringError(
        "pipeline: " + parts + " but the model has only " +
        std::to_string(numLayers) +
        " layers to cut; every stage needs at least one layer, so use at "
        "most " +
        std::to_string(numLayers) + (interleaved ? " chunks" : " stages"));
  }

  switch (config.partitionMethod) {
  case PartitionMethod::Uniform:
    return partitionUniform(numLayers, numParts);
  case PartitionMethod::Parameters: {
    std::vector<int64_t> weights;
    for (const Layer &layer : layers)
      weights.push_back(layer.params);
    return partitionBalanced(weights, numParts);
  }
  case PartitionMethod::Type: {
    llvm::Regex regex(config.partitionTypeRegex, llvm::Regex::IgnoreCase);
    std::vector<int64_t> weights;
    bool any = false;
    for (const Layer &layer : layers) {
      weights.push_back(regex.match(layer.type) ? 1 : 0);
      any |= weights.back() != 0;
    }
    if (!any) {
      std::string types;
      for (const Layer &layer : layers)
        if (!StringRef(types).contains("\"" + layer.type + "\""))
          types += (types.empty() ? "\"" : ", \"") + layer.type + "\"";
      return llvm::createStringError(
          "pipeline.partition_method \"type:" + config.partitionTypeRegex +
          "\" matches no layer type; the model's layer types are " + types);
    }
    return partitionBalanced(weights, numParts);
  }
  case PartitionMethod::Flops: {
    std::vector<int64_t> weights;
    for (const Layer &layer : layers)
      weights.push_back(layer.flops);
    return partitionMinMax(weights, numParts);
  }
  }
  llvm_unreachable("unknown partition method");
}
