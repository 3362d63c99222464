//===- MoERoutingMetrics.cpp - Per-expert token counts as step results ----===//
//
// DeepSpeed's MoE forward returns exp_counts so users can see routing
// collapse. Here the routing is in the compiled step, so the step returns
// it: each forward dsnn.moe_route of @forward_backward yields its per-expert
// choice counts and dropped choices (and the layer's aux loss) as extra
// results, @train_step sums them over its micro-batches and over the
// data-parallel group, and returns them after grad_norm, each named by
// `dstrain.metric`.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"

#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_MOEROUTINGMETRICS
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using nn::LayerOp;
using nn::MoERouteOp;

namespace {

/// One metric result: its name, its value in @forward_backward and how the
/// step combines it over micro-batches and ranks (a sum, or a mean).
struct Metric {
  std::string name;
  Value value;
  bool mean = false;
};

/// The aux loss a dsnn.moe expansion derives from `route`'s load:
/// E · reduce_sum(mean_probs · load) (MoEOp::expand).
Value auxLossOf(MoERouteOp route) {
  for (Operation *mul : route.getLoad().getUsers()) {
    if (!isa<nn::MulOp>(mul))
      continue;
    for (Operation *sum : mul->getUsers()) {
      if (!isa<nn::ReduceSumOp>(sum))
        continue;
      for (Operation *scaled : sum->getUsers())
        if (isa<nn::MulOp>(scaled))
          return scaled->getResult(0);
    }
  }
  return Value();
}

/// `inner` (defined in the body of `layer`) as a result of the layer,
/// adding it to the yield when it is not there yet. `layer` is replaced by
/// a copy with more results when needed.
SmallVector<Value> yieldOut(LayerOp &layer, ArrayRef<Value> inner) {
  auto yield = cast<nn::YieldOp>(layer.getBody().front().getTerminator());
  SmallVector<Value> missing;
  for (Value v : inner)
    if (!llvm::is_contained(yield.getValues(), v) &&
        !llvm::is_contained(missing, v))
      missing.push_back(v);
  if (!missing.empty()) {
    layer = yieldMore(layer, missing);
    yield = cast<nn::YieldOp>(layer.getBody().front().getTerminator());
  }
  SmallVector<Value> outer;
  for (Value v : inner) {
    auto at = llvm::find(yield.getValues(), v) - yield.getValues().begin();
    outer.push_back(layer.getResult(at));
  }
  return outer;
}

/// counts[e] = #{(n, j) : experts[n, j] = e}, and the number of choices
/// with slot -1 (dropped), both f32: one pass over the N·k choices.
std::pair<Value, Value> countChoices(OpBuilder &b, Location loc, Value experts,
                                     Value slots, int64_t numExperts) {
  auto choices = cast<RankedTensorType>(experts.getType());
  int64_t k = choices.getDimSize(1);
  Type f32 = b.getF32Type();
  auto countsType = RankedTensorType::get({numExperts}, f32);
  auto scalarType = RankedTensorType::get({}, f32);
  Value counts = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(countsType, b.getF32FloatAttr(0)));
  Value dropped = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(scalarType, b.getF32FloatAttr(0)));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value kIdx = arith::ConstantIndexOp::create(b, loc, k);
  Value total =
      arith::ConstantIndexOp::create(b, loc, choices.getDimSize(0) * k);
  auto loop = scf::ForOp::create(
      b, loc, zero, total, one, ValueRange{counts, dropped},
      [&](OpBuilder &nb, Location l, Value i, ValueRange acc) {
        Value n = arith::DivUIOp::create(nb, l, i, kIdx);
        Value j = arith::RemUIOp::create(nb, l, i, kIdx);
        Value e = tensor::ExtractOp::create(nb, l, experts, ValueRange{n, j});
        Value s = tensor::ExtractOp::create(nb, l, slots, ValueRange{n, j});
        Value ei = arith::IndexCastOp::create(nb, l, nb.getIndexType(), e);
        Value oneF = arith::ConstantFloatOp::create(nb, l, cast<FloatType>(f32),
                                                    APFloat(1.0f));
        Value zeroF = arith::ConstantFloatOp::create(
            nb, l, cast<FloatType>(f32), APFloat(0.0f));
        Value c = tensor::ExtractOp::create(nb, l, acc[0], ValueRange{ei});
        Value nextCounts = tensor::InsertOp::create(
            nb, l, arith::AddFOp::create(nb, l, c, oneF), acc[0],
            ValueRange{ei});
        Value zeroI = arith::ConstantIntOp::create(nb, l, 0, 64);
        Value isDropped =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, s, zeroI);
        Value d = tensor::ExtractOp::create(nb, l, acc[1], ValueRange{});
        Value add = arith::SelectOp::create(nb, l, isDropped, oneF, zeroF);
        Value nextDropped = tensor::FromElementsOp::create(
            nb, l, scalarType,
            ValueRange{arith::AddFOp::create(nb, l, d, add)});
        scf::YieldOp::create(nb, l, ValueRange{nextCounts, nextDropped});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

struct MoERoutingMetricsPass
    : mlir::ds::impl::MoERoutingMetricsBase<MoERoutingMetricsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>(gradientEntry);
    auto step = module.lookupSymbol<func::FuncOp>(entry);
    // A pipelined step routes on several stages; not reported there yet.
    if (!grad || grad.isExternal() || !step || step.isExternal() ||
        module->getAttr(pipeline::kPipelineAttrName))
      return;
    FailureOr<SmallVector<Metric>> metrics = routeMetrics(grad);
    if (failed(metrics))
      return signalPassFailure();
    if (metrics->empty())
      return;
    numLayers = metrics->size() / 3;
    SmallVector<Value> values;
    for (const Metric &m : *metrics)
      values.push_back(m.value);
    appendResults(grad, values, *metrics);
    if (failed(threadThroughStep(module, step, grad, *metrics)))
      return signalPassFailure();
  }

  /// The forward routes of `grad` (not the backward's recomputed copies),
  /// each as three metrics: counts, dropped, aux loss.
  FailureOr<SmallVector<Metric>> routeMetrics(func::FuncOp grad) {
    SmallVector<MoERouteOp> routes;
    grad.walk([&](MoERouteOp route) {
      auto layer = route->getParentOfType<LayerOp>();
      if (!layer || (!layer->hasAttr(kBackwardAttrName) &&
                     !layer->hasAttr(kRecomputeAttrName)))
        routes.push_back(route);
    });
    SmallVector<Metric> metrics;
    llvm::StringMap<unsigned> seen;
    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    for (auto [index, route] : llvm::enumerate(routes)) {
      Value aux = auxLossOf(route);
      if (!aux) {
        route.emitError() << "ds-moe-routing-metrics: no aux loss derived "
                             "from this route's load (MoEOp::expand builds "
                             "it); was the expansion rewritten?";
        return failure();
      }
      SmallVector<Value> outer = {route.getExperts(), route.getSlots(), aux};
      std::string name = "moe" + std::to_string(index);
      auto layer = route->getParentOfType<LayerOp>();
      if (layer && route->getBlock() == &layer.getBody().front() &&
          aux.getParentBlock() == route->getBlock()) {
        name = layer.getLayerName().str();
        outer = yieldOut(layer, outer);
      } else if (layer) {
        route.emitError() << "ds-moe-routing-metrics: the route is nested "
                             "deeper than the body of layer \""
                          << layer.getLayerName() << "\"";
        return failure();
      }
      if (unsigned n = seen[name]++)
        name += "#" + std::to_string(n);
      OpBuilder b(ret);
      Location loc = route.getLoc();
      int64_t e = route.getLoad().getType().getDimSize(0);
      auto [counts, dropped] = countChoices(b, loc, outer[0], outer[1], e);
      Value auxF32 = outer[2];
      auto auxType = cast<RankedTensorType>(auxF32.getType());
      if (!auxType.getElementType().isF32())
        auxF32 =
            nn::CastOp::create(b, loc, auxType.clone(b.getF32Type()), auxF32);
      std::string prefix = "moe/" + name + "/";
      metrics.push_back({prefix + "exp_counts", counts});
      metrics.push_back({prefix + "dropped", dropped});
      metrics.push_back({prefix + "aux_loss", auxF32, /*mean=*/true});
    }
    return metrics;
  }

  static void appendResults(func::FuncOp fn, ValueRange values,
                            ArrayRef<Metric> metrics) {
    auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    unsigned first = ret.getNumOperands();
    ret->insertOperands(first, values);
    Builder b(fn.getContext());
    for (auto [i, m] : llvm::enumerate(metrics))
      // Inserting at the end of the results cannot fail.
      (void)fn.insertResult(first + i, values[i].getType(),
                            b.getDictionaryAttr(b.getNamedAttr(
                                kMetricAttrName, b.getStringAttr(m.name))));
  }

  /// Calls `grad` with its new results from `step`, sums them through the
  /// micro-batch loop, means the aux losses, reduces over the grid and
  /// returns them after grad_norm.
  LogicalResult threadThroughStep(ModuleOp module, func::FuncOp step,
                                  func::FuncOp grad, ArrayRef<Metric> metrics) {
    SmallVector<func::CallOp> calls;
    step.walk([&](func::CallOp call) {
      if (call.getCallee() == grad.getName())
        calls.push_back(call);
    });
    if (calls.size() != 1)
      return step.emitError()
             << "ds-moe-routing-metrics: @" << step.getName() << " calls @"
             << grad.getName() << " " << calls.size()
             << " times; expected once (ds-accumulate-grads)";
    func::CallOp call = calls.front();
    unsigned numOld = call.getNumResults();
    OpBuilder b(call);
    auto wider =
        func::CallOp::create(b, call.getLoc(), grad, call.getOperands());
    call.replaceAllUsesWith(wider.getResults().take_front(numOld));
    call.erase();

    SmallVector<Value> values(wider.getResults().drop_front(numOld));
    Operation *at = wider;
    IRRewriter rewriter(step.getContext());
    while (auto loop = dyn_cast<scf::ForOp>(at->getParentOp())) {
      rewriter.setInsertionPoint(loop);
      SmallVector<Value> zeros;
      for (Value v : values)
        zeros.push_back(arith::ConstantOp::create(
            rewriter, loop.getLoc(),
            cast<TypedAttr>(rewriter.getZeroAttr(v.getType()))));
      auto widened = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
          rewriter, zeros, /*replaceInitOperandUsesInLoop=*/false,
          [&](OpBuilder &yb, Location l, ArrayRef<BlockArgument> sums) {
            SmallVector<Value> next;
            for (auto [sum, v] : llvm::zip(sums, values))
              next.push_back(nn::AddOp::create(yb, l, v.getType(), sum, v));
            return next;
          }));
      values.assign(widened.getResults().take_back(values.size()).begin(),
                    widened.getResults().take_back(values.size()).end());
      at = widened;
    }
    if (at->getParentOp() != step)
      return at->emitError()
             << "ds-moe-routing-metrics: the call of @" << grad.getName()
             << " is nested in something other than "
                "scf.for loops";

    auto ret = cast<func::ReturnOp>(step.getBody().back().getTerminator());
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    int64_t microBatches = 1;
    if (auto attr = step->getAttrOfType<IntegerAttr>(kAccumStepsAttrName))
      microBatches = attr.getInt();
    ArrayAttr axes;
    if (auto grid = module->getAttrOfType<dist::GridAttr>(
            dist::DistDialect::kGridAttrName)) {
      // Not over tp: the ranks of a tensor-parallel group route the same
      // tokens.
      int64_t size = 1;
      SmallVector<StringRef> names;
      for (auto [axis, s] : llvm::zip(grid.getAxes(), grid.getSizes()))
        if (axis.getValue() != "tp") {
          names.push_back(axis.getValue());
          size *= s;
        }
      if (size > 1)
        axes = b.getStrArrayAttr(names);
    }
    for (auto [i, m] : llvm::enumerate(metrics)) {
      Value &v = values[i];
      if (m.mean && microBatches > 1)
        v = microBatchMean(b, loc, v, microBatches).front();
      if (axes)
        v = dist::AllReduceOp::create(
            b, loc, v.getType(), v, axes,
            dist::ReductionKindAttr::get(b.getContext(),
                                         m.mean ? dist::ReductionKind::avg
                                                : dist::ReductionKind::sum));
    }
    appendResults(step, values, metrics);
    return success();
  }
};

} // namespace
