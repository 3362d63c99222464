//===- MixedPrecision.cpp - 16-bit forward over f32 master parameters -----===//
//
// Runs on the model contract, before autodiff, so the backward follows the
// forward's precision without any pass of its own: the VJP of a 16-bit op
// is 16-bit, and the VJP of the cast that reads a parameter casts its
// cotangent back to f32. Ops are rewritten in place (operands cast, result
// types changed) rather than re-created, so every attribute and region
// stays as the importer made it.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ds {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::nn;

namespace {

struct MixedPrecisionPass : ds::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using Base::Base;

  Type low;
  /// The type a value had before its producer moved to `low`.
  DenseMap<Value, Type> original;

  /// Ops whose numerics need f32 inputs: the losses (a log-sum-exp over the
  /// vocabulary) and MoE routing (top-k over gate probabilities).
  static bool needsF32(Operation *op) {
    return isa<CrossEntropyOp, MSELossOp, MoERouteOp, MoEGateOp>(op);
  }

  /// Arithmetic on scalars only: the losses combined (the cross-entropy
  /// plus coef times each MoE layer's aux loss). One element gains nothing
  /// from 16 bits, and the loss reported and differentiated stays f32, as
  /// DeepSpeed's model code adds its f32 aux losses to its f32 loss.
  static bool isScalarArithmetic(Operation *op) {
    auto scalar = [](Type t) {
      auto ranked = dyn_cast<RankedTensorType>(t);
      return ranked && ranked.getRank() == 0;
    };
    return op->getNumResults() > 0 && !isa<LayerOp>(op) &&
           llvm::all_of(op->getOperandTypes(), scalar) &&
           llvm::all_of(op->getResultTypes(), scalar);
  }

  /// The ops of a spelled-out MoE layer that stay f32 besides routing
  /// itself: the gate's linear and softmax (DeepSpeed's gate casts its
  /// input to f32) and the load-balancing loss (MoEOp::expand's
  /// E · Σ mean(probs) · load).
  DenseSet<Operation *> routingOps;

  void keepRoutingF32(MoERouteOp route) {
    if (auto softmax = route->getOperand(0).getDefiningOp<SoftmaxOp>()) {
      routingOps.insert(softmax);
      if (Operation *logits = softmax->getOperand(0).getDefiningOp())
        if (isa<LinearOp>(logits))
          routingOps.insert(logits);
    }
    for (Operation *mul : route.getLoad().getUsers()) {
      if (!isa<MulOp>(mul))
        continue;
      routingOps.insert(mul);
      for (Value v : mul->getOperands())
        if (Operation *mean = v.getDefiningOp();
            mean && isa<ReduceMeanOp>(mean))
          routingOps.insert(mean);
      for (Operation *sum : mul->getUsers()) {
        if (!isa<ReduceSumOp>(sum))
          continue;
        routingOps.insert(sum);
        for (Operation *scaled : sum->getUsers())
          if (isa<MulOp>(scaled))
            routingOps.insert(scaled);
      }
    }
  }

  /// An all-to-all (expert parallelism's token exchange) moves whatever its
  /// operand holds: 16-bit tokens travel in 16 bits.
  void followOperand(dist::AllToAllOp op) {
    auto from = cast<RankedTensorType>(op.getInput().getType());
    auto to = cast<RankedTensorType>(op.getType());
    if (from.getElementType() == to.getElementType())
      return;
    original.try_emplace(op.getResult(), to);
    op.getResult().setType(to.clone(from.getElementType()));
  }

  Value castTo(OpBuilder &b, Location loc, Value v, Type elem) {
    ++numCasts;
    return CastOp::create(b, loc, floatTensorType(v.getType()).clone(elem), v);
  }

  /// Casts each float operand of `op` to `elem`.
  void castOperandsTo(Operation *op, Type elem) {
    OpBuilder b(op);
    for (OpOperand &use : op->getOpOperands()) {
      RankedTensorType t = floatTensorType(use.get().getType());
      if (t && t.getElementType() != elem)
        use.set(castTo(b, op->getLoc(), use.get(), elem));
    }
  }

  /// Gives `op` back the operand types it was built with.
  void restoreOperands(Operation *op) {
    OpBuilder b(op);
    for (OpOperand &use : op->getOpOperands()) {
      auto it = original.find(use.get());
      if (it != original.end() && it->second != use.get().getType())
        use.set(castTo(b, op->getLoc(), use.get(),
                       cast<RankedTensorType>(it->second).getElementType()));
    }
  }

  void lowerResults(Operation *op) {
    for (Value r : op->getResults())
      if (RankedTensorType t = floatTensorType(r.getType());
          t && t.getElementType() != low) {
        original.try_emplace(r, t);
        r.setType(t.clone(low));
      }
  }

  void convertBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto exchange = dyn_cast<dist::AllToAllOp>(op)) {
        followOperand(exchange);
        continue;
      }
      // Any other collective reads the types it was built for: so
      // ds-sequence-parallel's copy_to_group stays on the f32 parameter,
      // the cast follows it, and its VJP sums f32 gradients over sp.
      if (!isa<NNDialect>(op.getDialect()) || needsF32(&op) ||
          routingOps.contains(&op) || isScalarArithmetic(&op)) {
        restoreOperands(&op);
        continue;
      }
      if (isa<CastOp, GradScaleOp>(op))
        continue;
      if (auto layer = dyn_cast<LayerOp>(op)) {
        convertBlock(layer.getBody().front());
        auto yield = cast<YieldOp>(layer.getBody().front().getTerminator());
        for (auto [result, value] :
             llvm::zip(layer.getResults(), yield.getValues()))
          if (result.getType() != value.getType()) {
            original.try_emplace(result, result.getType());
            result.setType(value.getType());
          }
        continue;
      }
      castOperandsTo(&op, low);
      lowerResults(&op);
      ++numLowOps;
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(&getContext());
    if (dtype == "bf16")
      low = builder.getBF16Type();
    else if (dtype == "f16" || dtype == "fp16")
      low = builder.getF16Type();
    else {
      module.emitError() << "ds-mixed-precision: dtype \"" << dtype
                         << "\" is not a 16-bit float; use bf16 or f16";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ds-mixed-precision: no func.func @" << entry
                         << " with a body (the model contract)";
      return signalPassFailure();
    }
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() != 1 ||
        !floatTensorType(ret.getOperand(0).getType())) {
      fn.emitError() << "ds-mixed-precision: @" << entry
                     << " must return one float loss (the model contract)";
      return signalPassFailure();
    }
    // A MoE layer is spelled out (as ds-autodiff would) so that its
    // routing stays f32 while the dispatched tokens, the experts and the
    // combine run in 16 bits, as DeepSpeed runs its experts. With expert
    // parallelism ds-moe-expert-parallel has already spelled it out.
    SmallVector<MoEOp> moes;
    fn.walk([&](MoEOp op) { moes.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (MoEOp op : moes)
      op.expand(rewriter);
    fn.walk([&](MoERouteOp route) { keepRoutingF32(route); });
    convertBlock(body);

    if (!lossScale)
      return;
    // The scale is read-only state of the step, right after the parameters;
    // ds-loss-scale gives it its initial value and its update.
    unsigned index = numLeadingParams(fn);
    auto scalar = RankedTensorType::get({}, builder.getF32Type());
    auto state = builder.getDictionaryAttr(
        builder.getNamedAttr("kind", builder.getStringAttr("loss_scale")));
    if (failed(fn.insertArgument(index, scalar,
                                 builder.getDictionaryAttr(builder.getNamedAttr(
                                     kStateAttrName, state)),
                                 fn.getLoc()))) {
      fn.emitError("ds-mixed-precision: cannot add the loss-scale argument");
      return signalPassFailure();
    }
    OpBuilder b(ret);
    Value loss = ret.getOperand(0);
    ret->setOperand(0, GradScaleOp::create(b, ret.getLoc(), loss.getType(),
                                           loss, fn.getArgument(index)));
  }
};

} // namespace
