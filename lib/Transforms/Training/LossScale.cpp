//===- LossScale.cpp - fp16 dynamic loss scaling of a training step -------===//
//
// The scaler is part of the step, not of ds-train: its state is step-wide
// state like the optimizer's (threaded from step to step, checkpointed,
// never special-cased by the driver), and the skip is a flag on the
// updates, so ds-zero shards and reduces a scaled step like any other.
//
//===----------------------------------------------------------------------===//
#include "ds/Support/ShapeCheck.h"
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Pipeline.h"
#include "ds/Transforms/Training.h"
#include "dsdist/DistOps.h"
#include "dsnn/NNOps.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

namespace mlir::ds {
#define GEN_PASS_DEF_LOSSSCALE
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

/// Whether the gradients of any rank over `axes` overflowed, where each
/// holds part of the model (a pipeline stage's, a tensor-parallel piece):
/// every one skips the same steps and keeps the same scale.
Value anyPart(OpBuilder &b, Location loc, Value overflow,
              ArrayRef<StringRef> axes) {
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  Value asFloat = arith::UIToFPOp::create(b, loc, f32, overflow);
  Value any =
      dist::AllReduceOp::create(b, loc, f32, asFloat, b.getStrArrayAttr(axes),
                                dist::ReductionKind::max);
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(f32, b.getF32FloatAttr(0.0f)));
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, any, zero);
}

struct LossScalePass : mlir::ds::impl::LossScaleBase<LossScalePass> {
  using Base::Base;

  LogicalResult fail(Operation *at, const Twine &msg) {
    at->emitError() << "ds-loss-scale: " << msg;
    signalPassFailure();
    return failure();
  }

  LogicalResult checkOptions(ModuleOp module) {
    if (staticScale < 0 || !std::isfinite(staticScale))
      return fail(module, "static-scale (fp16.loss_scale) is " +
                              formatNumber(staticScale) +
                              " but must be 0 (dynamic) or a positive scale");
    if (initialScalePower < 0 || initialScalePower > 127)
      return fail(module, "initial-scale-power (fp16.initial_scale_power) "
                          "is " +
                              Twine(initialScalePower) +
                              " but 2^power must be an f32 in [1, 2^127]");
    if (scaleWindow < 1)
      return fail(module, "scale-window (fp16.loss_scale_window) is " +
                              Twine(scaleWindow) + " but must be >= 1");
    if (hysteresis < 1)
      return fail(module, "hysteresis (fp16.hysteresis) is " +
                              Twine(hysteresis) + " but must be >= 1");
    if (!(minScale > 0))
      return fail(module, "min-scale (fp16.min_loss_scale) is " +
                              formatNumber(minScale) + " but must be > 0");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(checkOptions(module)))
      return;
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal())
      return (void)fail(module, "no func.func @" + entry +
                                    " with a body; run the training passes "
                                    "first");

    std::optional<unsigned> scaleIdx, stepIdx;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      if (auto state = fn.getArgAttrOfType<DictionaryAttr>(i, kStateAttrName))
        if (auto kind = state.getAs<StringAttr>("kind");
            kind && kind.getValue() == "loss_scale" && !state.get("param"))
          scaleIdx = i;
      if (fn.getArgAttr(i, kStepAttrName))
        stepIdx = i;
    }
    if (!scaleIdx)
      return (void)fail(fn, "@" + entry +
                                " takes no loss scale; run "
                                "ds-mixed-precision{loss-scale=1} on the "
                                "model contract first");
    if (!stepIdx)
      return (void)fail(fn, "@" + entry +
                                " has no step argument; run ds-optimizer "
                                "first");
    Block &entryBlock = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(entryBlock.getTerminator());
    unsigned numResults = ret.getNumOperands();
    Operation *normOp = numResults >= 3
                            ? ret.getOperand(numResults - 1).getDefiningOp()
                            : nullptr;
    // A pipeline stage's norm is its share summed over the stages
    // (ds-clip-grads); unclipped, its gradients are what the updates read.
    bool pipelined = bool(module->getAttr(pipeline::kPipelineAttrName));
    // So is a tensor-parallel rank's: its pieces' squares summed over tp.
    auto grid =
        module->getAttrOfType<dist::GridAttr>(dist::DistDialect::kGridAttrName);
    bool tensorParallel = grid && grid.getAxisSize("tp").value_or(1) > 1;
    bool partialNorm = pipelined || tensorParallel;
    SmallVector<Value> grads;
    if (auto clip = dyn_cast_or_null<train::ClipGradNormOp>(normOp))
      llvm::append_range(grads, clip.getGrads());
    else if (auto norm = dyn_cast_or_null<train::GlobalNormOp>(normOp))
      llvm::append_range(grads, norm.getInputs());
    else if (partialNorm && normOp)
      fn.walk([&](Operation *op) {
        if (isa<train::AdamOp, train::LambOp, train::SGDOp>(op))
          grads.push_back(op->getOperand(1));
      });
    if (grads.empty())
      return (void)fail(fn, "@" + entry +
                                " must return the gradient norm of "
                                "dstrain.clip_grad_norm or dstrain.global_norm "
                                "(ds-clip-grads) last");
    if (*scaleIdx != numResults - 3)
      return (void)fail(fn, "the loss scale (argument #" + Twine(*scaleIdx) +
                                ") must come before the step, with the "
                                "step-wide state");

    // The scaler's state, after the scale.
    OpBuilder b(ctx);
    Type f32 = b.getF32Type(), i64 = b.getI64Type();
    auto scalar = [](Type t) { return RankedTensorType::get({}, t); };
    auto stateAttrs = [&](StringRef kind, Attribute init) {
      return b.getDictionaryAttr(b.getNamedAttr(
          kStateAttrName,
          b.getDictionaryAttr({b.getNamedAttr("kind", b.getStringAttr(kind)),
                               b.getNamedAttr("init", init)})));
    };
    double initial = staticScale > 0
                         ? static_cast<double>(staticScale)
                         : std::ldexp(1.0, static_cast<int>(initialScalePower));
    fn.setArgAttrs(*scaleIdx,
                   stateAttrs("loss_scale", b.getF64FloatAttr(initial)));
    SmallVector<unsigned> at(3, *scaleIdx + 1);
    SmallVector<Type> types(3, scalar(i64));
    SmallVector<DictionaryAttr> attrs = {
        stateAttrs("loss_scale_good_steps", b.getI64IntegerAttr(0)),
        stateAttrs("loss_scale_hysteresis", b.getI64IntegerAttr(hysteresis)),
        stateAttrs("skipped_steps", b.getI64IntegerAttr(0))};
    SmallVector<Location> locs(3, fn.getLoc());
    if (failed(fn.insertArguments(at, types, attrs, locs)))
      return (void)fail(fn, "cannot add the loss scaler's state arguments");
    Value scale = fn.getArgument(*scaleIdx);
    Value good = fn.getArgument(*scaleIdx + 1);
    Value left = fn.getArgument(*scaleIdx + 2);
    Value skipped = fn.getArgument(*scaleIdx + 3);
    Value step = fn.getArgument(*stepIdx + 3);

    // Unscaled gradients into the norm (and so into clipping and the
    // optimizer); inf and nan survive the multiply, so the overflow check
    // can read them too.
    // In a pipeline stage the norm's partial sums read the gradients before
    // the norm op, so each is unscaled where it is defined.
    Location loc = normOp->getLoc();
    if (partialNorm)
      b.setInsertionPointToStart(&entryBlock);
    else
      b.setInsertionPoint(normOp);
    Value one = scalarConstant(b, loc, f32, 1.0);
    Value inverse = nn::DivOp::create(b, loc, scalar(f32), one, scale);
    SmallVector<Value> scaled(grads), unscaled;
    DenseMap<Value, Value> done; // a gradient value may repeat (zeros)
    for (Value g : scaled) {
      if (Value u = done.lookup(g)) {
        unscaled.push_back(u);
        continue;
      }
      if (partialNorm)
        b.setInsertionPointAfterValue(g);
      auto type = cast<RankedTensorType>(g.getType());
      Value factor = inverse;
      if (type.getElementType() != f32)
        factor =
            nn::CastOp::create(b, loc, scalar(type.getElementType()), inverse);
      auto mul = nn::MulOp::create(b, loc, type, g, factor);
      unscaled.push_back(mul);
      done[g] = mul;
      // Without clipping the updates read the gradients directly.
      g.replaceAllUsesExcept(mul, mul);
    }
    if (partialNorm)
      b.setInsertionPoint(normOp);
    Value overflow =
        train::HasOverflowOp::create(b, loc, scalar(b.getI1Type()), unscaled);
    // Not sp: ds-sequence-parallel sums each gradient over sp in the
    // backward, so the ranks of an sp group check the same gradients.
    SmallVector<StringRef> parts;
    if (pipelined)
      parts.push_back("pp");
    if (tensorParallel)
      parts.push_back("tp");
    if (!parts.empty())
      overflow = anyPart(b, loc, overflow, parts);

    // Updates are skipped on overflow, and count only applied steps.
    b.setInsertionPointToStart(&entryBlock);
    Value applied = arith::SubIOp::create(b, fn.getLoc(), step, skipped);
    for (OpOperand &use : llvm::make_early_inc_range(step.getUses())) {
      Operation *user = use.getOwner();
      bool feedsSchedule = isa<arith::SubIOp>(user) &&
                           user != applied.getDefiningOp() &&
                           llvm::any_of(user->getUsers(), [](Operation *u) {
                             return isa<train::LRScheduleOp>(u);
                           });
      if (isa<train::AdamOp, train::LambOp, train::SGDOp>(user) ||
          feedsSchedule)
        use.set(applied);
    }
    unsigned numUpdates = 0;
    fn.walk([&](Operation *op) {
      if (auto adam = dyn_cast<train::AdamOp>(op))
        adam.getSkipMutable().assign(overflow);
      else if (auto lamb = dyn_cast<train::LambOp>(op))
        lamb.getSkipMutable().assign(overflow);
      else if (auto sgd = dyn_cast<train::SGDOp>(op))
        sgd.getSkipMutable().assign(overflow);
      else
        return;
      ++numUpdates;
    });
    if (numUpdates == 0)
      return (void)fail(fn, "@" + entry +
                                " has no optimizer update to skip; run "
                                "ds-optimizer first");

    // The next scale, and the count of skipped steps.
    b.setInsertionPoint(ret);
    loc = ret.getLoc();
    SmallVector<NamedAttribute> scalerAttrs = {
        b.getNamedAttr("scale_window", b.getI64IntegerAttr(scaleWindow)),
        b.getNamedAttr("hysteresis", b.getI64IntegerAttr(hysteresis)),
        b.getNamedAttr("min_scale", b.getF64FloatAttr(minScale)),
        b.getNamedAttr("consecutive_hysteresis",
                       b.getBoolAttr(consecutiveHysteresis))};
    if (staticScale > 0)
      scalerAttrs.push_back(
          b.getNamedAttr("static_scale", b.getF64FloatAttr(staticScale)));
    auto update = train::LossScaleUpdateOp::create(
        b, loc,
        TypeRange{scalar(f32), scalar(i64), scalar(i64), scalar(b.getI1Type())},
        ValueRange{scale, good, left, overflow}, scalerAttrs);
    Value count = arith::ExtUIOp::create(b, loc, scalar(i64), overflow);
    Value newSkipped = arith::AddIOp::create(b, loc, skipped, count);

    SmallVector<Value> results(ret.getOperands());
    results.insert(results.begin() + *scaleIdx,
                   {update.getNewScale(), update.getNewGoodSteps(),
                    update.getNewHysteresisLeft(), newSkipped});
    func::ReturnOp::create(b, loc, results);
    ret.erase();
    fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  }
};

} // namespace
