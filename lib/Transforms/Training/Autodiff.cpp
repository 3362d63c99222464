//===- Autodiff.cpp - Reverse-mode autodiff of the model contract
//----------===//
//
// Builds @forward_backward from @forward: the forward ops, then each op's VJP
// in reverse program order. Only values that depend on a parameter
// ("varied") get cotangents, so batch inputs and constants cost nothing.
// A `dsnn.layer` gets its backward in its own `dsnn.layer "<name>.backward"`
// right where the reverse sweep reaches it; the forward activations that
// backward reads become extra results of the forward layer (the saved
// activations), which keeps each layer a self-contained unit that pipeline
// splitting and activation checkpointing can move or recompute.
//
//===----------------------------------------------------------------------===//
#include "ds/Import/Import.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ds {
#define GEN_PASS_DEF_AUTODIFF
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nn;

namespace {

bool isFloatTensor(Value v) { return bool(floatTensorType(v.getType())); }

/// Values defined outside `layer` that its body reads, in order of first use.
llvm::SetVector<Value> capturedValues(LayerOp layer) {
  llvm::SetVector<Value> captured;
  Region &body = layer.getBody();
  body.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!body.isAncestor(v.getParentRegion()))
        captured.insert(v);
  });
  return captured;
}

class ReverseSweep {
public:
  explicit ReverseSweep(OpBuilder &builder) : b(builder) {}

  /// Marks every float value that depends on one of `roots`.
  void computeVaried(ArrayRef<Value> roots, Block &block) {
    varied.insert(roots.begin(), roots.end());
    markVaried(block);
  }

  /// Appends the VJPs of `block`'s ops, last op first, at the builder's
  /// insertion point; `grads` holds the seeds and receives the cotangents.
  LogicalResult differentiate(Block &block, DenseMap<Value, Value> &grads) {
    // The VJPs go into this block too (before its terminator): walk a
    // snapshot of the forward ops, or the walk would reach them.
    SmallVector<Operation *> forwardOps;
    for (Operation &op : block.without_terminator())
      forwardOps.push_back(&op);
    for (Operation *opPtr : llvm::reverse(forwardOps)) {
      Operation &op = *opPtr;
      SmallVector<Value> resultGrads;
      for (Value r : op.getResults())
        resultGrads.push_back(grads.lookup(r));
      if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
        continue;
      if (auto layer = dyn_cast<LayerOp>(op)) {
        if (failed(differentiateLayer(layer, resultGrads, grads)))
          return failure();
        continue;
      }
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return varied.contains(v); }))
        continue;
      auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
      if (!differentiable)
        return op.emitOpError()
               << "is not differentiable: it has no DifferentiableOpInterface "
                  "(no VJP), yet a parameter's gradient flows through it";
      SmallVector<Value> operandGrads;
      if (failed(differentiable.buildVJP(b, resultGrads, operandGrads)))
        return failure();
      if (operandGrads.size() != op.getNumOperands())
        return op.emitOpError()
               << "VJP returned " << operandGrads.size() << " cotangents for "
               << op.getNumOperands() << " operands";
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        Value g = operandGrads[i];
        if (!g || !varied.contains(operand) ||
            !differentiable.isOperandDifferentiable(i))
          continue;
        if (g.getType() != operand.getType())
          return op.emitOpError()
                 << "VJP produced a cotangent of type " << g.getType()
                 << " for operand #" << i << " of type " << operand.getType();
        accumulate(grads, operand, g);
      }
      ++numVJPs;
    }
    return success();
  }

  /// Adds `g` to the cotangent of `v` (a value used several times gets the
  /// sum, e.g. a tied embedding).
  void accumulate(DenseMap<Value, Value> &grads, Value v, Value g) {
    Value &slot = grads[v];
    slot = slot ? AddOp::create(b, g.getLoc(), v.getType(), slot, g) : g;
  }

  bool isVaried(Value v) const { return varied.contains(v); }

  int64_t numVJPs = 0;
  int64_t numLayers = 0;

private:
  void markVaried(Block &block) {
    for (Operation &op : block) {
      bool any = llvm::any_of(op.getOperands(),
                              [&](Value v) { return varied.contains(v); });
      // Region arguments (an expert region's tokens) follow the operands.
      for (Region &region : op.getRegions())
        for (Block &inner : region) {
          if (any)
            for (BlockArgument arg : inner.getArguments())
              if (isFloatTensor(arg))
                varied.insert(arg);
          markVaried(inner);
        }
      if (auto layer = dyn_cast<LayerOp>(op)) {
        auto yield = cast<YieldOp>(layer.getBody().front().getTerminator());
        for (auto [result, value] :
             llvm::zip(layer.getResults(), yield.getValues()))
          if (varied.contains(value) && isFloatTensor(result))
            varied.insert(result);
        continue;
      }
      if (op.getNumRegions())
        any |= llvm::any_of(capturedOf(op),
                            [&](Value v) { return varied.contains(v); });
      if (any)
        for (Value r : op.getResults())
          if (isFloatTensor(r))
            varied.insert(r);
    }
  }

  static SmallVector<Value> capturedOf(Operation &op) {
    SmallVector<Value> out;
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (!op.isAncestor(v.getParentRegion()->getParentOp()))
          out.push_back(v);
    });
    return out;
  }

  /// Emits `dsnn.layer "<name>.backward"`: its body is the reverse sweep of
  /// the forward layer's body, its results the cotangents of the varied
  /// values the forward layer reads from above.
  LogicalResult differentiateLayer(LayerOp layer, ArrayRef<Value> resultGrads,
                                   DenseMap<Value, Value> &outer) {
    Block &body = layer.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    OpBuilder::InsertPoint outerPoint = b.saveInsertionPoint();
    auto backwardBody = std::make_unique<Block>();
    b.setInsertionPointToEnd(backwardBody.get());

    DenseMap<Value, Value> inner;
    for (auto [value, g] : llvm::zip(yield.getValues(), resultGrads))
      if (g && varied.contains(value))
        accumulate(inner, value, g);
    if (failed(differentiate(body, inner)))
      return failure();

    SmallVector<Value> targets, cotangents;
    for (Value v : capturedValues(layer))
      if (Value g = inner.lookup(v); g && varied.contains(v)) {
        targets.push_back(v);
        cotangents.push_back(g);
      }
    YieldOp::create(b, layer.getLoc(), cotangents);

    b.restoreInsertionPoint(outerPoint);
    auto backward = LayerOp::create(
        b, layer.getLoc(), ValueRange(cotangents).getTypes(),
        (layer.getLayerName() + kBackwardSuffix).str(), layer.getLayerType());
    backward->setAttr(kBackwardAttrName, b.getUnitAttr());
    backward.getBody().push_back(backwardBody.release());
    for (auto [target, g] : llvm::zip(targets, backward.getResults()))
      accumulate(outer, target, g);
    ++numLayers;
    return success();
  }

  OpBuilder &b;
  DenseSet<Value> varied;
};

} // namespace

/// Values computed inside a forward layer and read by its backward (or any
/// later op) leave the layer as extra results: the saved activations.
/// Innermost layers go first, so an outer layer exports what an inner one
/// already exported to it.
/// A cast of a value from outside the layer (a parameter's 16-bit copy in
/// mixed precision) is recomputed where the backward reads it rather than
/// saved: it costs one elementwise pass, and a saved copy would keep every
/// layer's 16-bit weights alive from forward to backward (under ZeRO-3, the
/// gathered weights the backward gathers again anyway).
static void recomputeOuterCasts(LayerOp layer) {
  Block &body = layer.getBody().front();
  for (Operation &op : body.without_terminator()) {
    auto cast = dyn_cast<CastOp>(op);
    if (!cast ||
        layer->isAncestor(cast.getInput().getParentBlock()->getParentOp()))
      continue;
    for (OpOperand &use : llvm::make_early_inc_range(cast->getUses())) {
      Operation *user = use.getOwner();
      if (layer->isAncestor(user))
        continue;
      OpBuilder b(user);
      use.set(b.clone(*cast)->getResult(0));
    }
  }
}

static LogicalResult exportSavedActivations(func::FuncOp fn) {
  SmallVector<LayerOp> layers;
  fn.walk([&](LayerOp layer) {
    if (!layer->hasAttr(kBackwardAttrName))
      layers.push_back(layer);
  });
  for (LayerOp layer : layers) {
    recomputeOuterCasts(layer);
    Block &body = layer.getBody().front();
    llvm::SetVector<Value> escaping;
    for (Operation &op : body.without_terminator())
      for (Value r : op.getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              return !layer->isAncestor(user);
            }))
          escaping.insert(r);
    // Anything defined deeper than the body (not a layer) cannot be yielded.
    bool nested = false;
    layer.getBody().walk([&](Operation *op) {
      if (op->getBlock() == &body)
        return;
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!layer->isAncestor(user)) {
            op->emitOpError()
                << "is read by the backward pass but is nested "
                   "in a region of layer \""
                << layer.getLayerName() << "\"; autodiff cannot save it";
            nested = true;
          }
    });
    if (nested)
      return failure();
    if (escaping.empty())
      continue;

    unsigned first = layer.getNumResults();
    LayerOp exported = yieldMore(layer, escaping.getArrayRef());
    for (auto [i, saved] : llvm::enumerate(escaping))
      Value(saved).replaceUsesWithIf(
          exported.getResult(first + i), [&](OpOperand &use) {
            return !exported->isAncestor(use.getOwner());
          });
  }
  return success();
}

LayerOp mlir::ds::yieldMore(LayerOp layer, ArrayRef<Value> values) {
  SmallVector<Type> types(layer.getResultTypes());
  for (Value v : values)
    types.push_back(v.getType());
  OpBuilder b(layer);
  auto wider =
      LayerOp::create(b, layer.getLoc(), types, layer.getLayerNameAttr(),
                      layer.getLayerTypeAttr());
  wider->setDiscardableAttrs(layer->getDiscardableAttrDictionary());
  wider.getBody().takeBody(layer.getBody());
  auto yield = cast<YieldOp>(wider.getBody().front().getTerminator());
  unsigned first = yield->getNumOperands();
  yield->insertOperands(first, values);
  layer.replaceAllUsesWith(wider.getResults().take_front(first));
  layer.erase();
  return wider;
}

/// Spells every dsnn.moe out as its routing (MoEOp::expand): the VJPs are
/// those of the routing ops, and the gradient function shows the dispatch
/// and gather that expert parallelism wraps in all-to-alls.
static void expandMoEs(func::FuncOp fn) {
  SmallVector<MoEOp> moes;
  fn.walk([&](MoEOp op) { moes.push_back(op); });
  IRRewriter rewriter(fn.getContext());
  for (MoEOp op : moes)
    op.expand(rewriter);
}

/// Gives every dropout with p > 0 its random stream: the new last argument
/// `%key: tensor<i64> {dsnn.rng_key}` (the caller's counter, one per call),
/// the module's `dsnn.init_seed`, and its ordinal among the dropouts as
/// `stream`. The backward's dropouts reuse all three, so they recompute the
/// forward's masks.
static void keyDropouts(func::FuncOp fn) {
  SmallVector<DropoutOp> dropouts;
  fn.walk([&](DropoutOp op) {
    if (!op.getP().isZero() && !op.getKey())
      dropouts.push_back(op);
  });
  if (dropouts.empty())
    return;
  OpBuilder b(fn.getContext());
  int64_t seed = 0;
  if (auto module = fn->getParentOfType<ModuleOp>())
    if (auto attr =
            module->getAttrOfType<IntegerAttr>(importer::kInitSeedAttrName))
      seed = attr.getInt();
  unsigned index = fn.getNumArguments();
  (void)fn.insertArgument(
      index, RankedTensorType::get({}, b.getI64Type()),
      b.getDictionaryAttr(b.getNamedAttr(kRngKeyAttrName, b.getUnitAttr())),
      fn.getLoc());
  Value key = fn.getArgument(index);
  for (auto [stream, op] : llvm::enumerate(dropouts)) {
    op.getKeyMutable().assign(key);
    op.setSeed(seed);
    op.setStream(stream);
  }
}

FailureOr<func::FuncOp> mlir::ds::buildForwardBackward(func::FuncOp forward,
                                                       StringRef name,
                                                       AutodiffStats *stats) {
  // A pipeline stage other than the last returns the activations it sends
  // on instead of the loss; their cotangents come in as arguments.
  bool stageOutputs =
      !forward.isExternal() && forward.getNumResults() > 0 &&
      llvm::all_of(llvm::seq(forward.getNumResults()), [&](unsigned i) {
        return forward.getResultAttr(i, pipeline::kPipeOutputAttrName);
      });
  if (forward.isExternal() ||
      (!stageOutputs &&
       (forward.getNumResults() != 1 ||
        !isa<RankedTensorType>(forward.getResultTypes()[0]) ||
        cast<RankedTensorType>(forward.getResultTypes()[0]).getRank() != 0 ||
        !isFloatTensor(
            forward.getBody().front().getTerminator()->getOperand(0)))))
    return forward.emitError()
           << "autodiff: @" << forward.getName()
           << " must have a body and return one scalar float loss (the model "
              "contract; run ds-verify-model-contract), or a pipeline "
              "stage's activations (ds-pipeline-split)";
  auto module = forward->getParentOfType<ModuleOp>();
  // A declaration (a test harness or driver calling the gradient function
  // before it exists) is replaced by the definition.
  auto declared = module.lookupSymbol<func::FuncOp>(name);
  if ((declared && !declared.isExternal()) ||
      (!declared && module.lookupSymbol(name)))
    return forward.emitError() << "autodiff: @" << name
                               << " already exists; pick another name "
                                  "(option result=NAME) or remove it";

  OpBuilder moduleBuilder(forward->getContext());
  moduleBuilder.setInsertionPointAfter(forward);
  auto fn = cast<func::FuncOp>(moduleBuilder.clone(*forward));
  fn.setName(name);
  expandMoEs(fn);
  SmallVector<BlockArgument> seeds;
  if (stageOutputs) {
    for (unsigned i = 0; i < forward.getNumResults(); ++i) {
      unsigned index = fn.getNumArguments();
      (void)fn.insertArgument(
          index, forward.getResultTypes()[i],
          moduleBuilder.getDictionaryAttr(moduleBuilder.getNamedAttr(
              pipeline::kPipeGradAttrName, moduleBuilder.getI64IntegerAttr(i))),
          fn.getLoc());
      seeds.push_back(fn.getArgument(index));
    }
    // The gradient function's results are all new; none is sent as is.
    fn->removeAttr(fn.getResAttrsAttrName());
  }
  keyDropouts(fn);

  // Parameters get gradients, and so do a stage's pipe inputs: their
  // cotangents go back to the previous stage.
  SmallVector<Value> params;
  for (BlockArgument arg : fn.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), kParamAttrName) ||
        fn.getArgAttr(arg.getArgNumber(), pipeline::kPipeInputAttrName))
      params.push_back(arg);

  Block &entry = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder b(ret);
  ReverseSweep sweep(b);
  sweep.computeVaried(params, entry);

  DenseMap<Value, Value> grads;
  if (stageOutputs) {
    for (auto [output, seed] : llvm::zip(ret.getOperands(), seeds))
      sweep.accumulate(grads, output, seed);
  } else {
    Value loss = ret.getOperand(0);
    auto lossType = cast<RankedTensorType>(loss.getType());
    auto one = DenseElementsAttr::get(
        lossType,
        ArrayRef<Attribute>{FloatAttr::get(lossType.getElementType(), 1.0)});
    grads[loss] = arith::ConstantOp::create(b, loss.getLoc(), one);
  }
  if (failed(sweep.differentiate(entry, grads))) {
    fn.erase();
    return failure();
  }

  // A parameter that does not reach the loss gets zeros, so every
  // parameter has its gradient at a fixed result position.
  SmallVector<Value> results(ret.getOperands());
  for (Value p : params) {
    Value g = grads.lookup(p);
    if (!g)
      g = arith::ConstantOp::create(
          b, p.getLoc(), cast<TypedAttr>(b.getZeroAttr(p.getType())));
    results.push_back(g);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  if (declared) {
    if (declared.getFunctionType() != fn.getFunctionType()) {
      InFlightDiagnostic diag = declared.emitError()
                                << "autodiff: the declaration of @" << name
                                << " has type " << declared.getFunctionType()
                                << " but the gradient function is "
                                << fn.getFunctionType();
      fn.erase();
      return diag;
    }
    declared.erase();
  }

  if (failed(exportSavedActivations(fn))) {
    fn.erase();
    return failure();
  }
  // VJPs emit cotangents for every operand; drop those nobody needed.
  IRRewriter rewriter(fn.getContext());
  (void)runRegionDCE(rewriter, fn.getBody());
  if (stats) {
    stats->vjps = sweep.numVJPs;
    stats->backwardLayers = sweep.numLayers;
  }
  return fn;
}

namespace {
struct AutodiffPass : mlir::ds::impl::AutodiffBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(entry);
    if (!forward) {
      module.emitError() << "autodiff: no func.func @" << entry
                         << " (the model contract; pass entry=NAME)";
      return signalPassFailure();
    }
    AutodiffStats stats;
    auto built = buildForwardBackward(forward, result, &stats);
    if (failed(built))
      return signalPassFailure();
    // Its VJP is in the backward now; forward, it is the identity.
    for (func::FuncOp fn : {forward, *built})
      fn.walk([](dist::CopyToGroupOp op) {
        op.replaceAllUsesWith(op.getInput());
        op.erase();
      });
    numVJPs = stats.vjps;
    numBackwardLayers = stats.backwardLayers;
  }
};
} // namespace
