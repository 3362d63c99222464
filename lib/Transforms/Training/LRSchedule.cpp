//===- LRSchedule.cpp - The learning-rate schedule of a training step
//------===//
//
// The rate is computed from the step argument inside @train_step, so a
// resumed run (step = N) gets the same rate as an uninterrupted one without
// ds-train knowing any schedule.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Passes.h"
#include "ds/Transforms/Training.h"
#include "dstrain/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

#include <charconv>
#include <cstdlib>

namespace mlir::ds {
#define GEN_PASS_DEF_LRSCHEDULE
#include "ds/Transforms/Passes.h.inc"
} // namespace mlir::ds

using namespace mlir;
using namespace mlir::ds;

namespace {

struct LRSchedulePass : ds::impl::LRScheduleBase<LRSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string kind = StringRef(type).lower();
    if (kind == "none")
      return;
    // Option mistakes first: they are what the user has to fix.
    if (!llvm::is_contained(
            {"warmuplr", "warmupdecaylr", "warmupcosinelr", "onecycle"},
            kind)) {
      module.emitError()
          << "ds-lr-schedule: type \"" << type
          << "\" is not supported; use none, WarmupLR, WarmupDecayLR, "
             "WarmupCosineLR or OneCycle";
      return signalPassFailure();
    }
    if (!train::symbolizeWarmupType(StringRef(warmupType).lower())) {
      module.emitError() << "ds-lr-schedule: warmup-type \"" << warmupType
                         << "\" is not log or linear";
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ds-lr-schedule: no func.func @" << entry
                         << " with a body; run ds-optimizer first";
      return signalPassFailure();
    }
    std::optional<unsigned> stepIndex;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kStepAttrName))
        stepIndex = i;
    auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    if (!stepIndex || ret.getNumOperands() < 3) {
      fn.emitError() << "ds-lr-schedule: @" << entry
                     << " has no step argument {" << kStepAttrName
                     << "}; run ds-optimizer first";
      return signalPassFailure();
    }
    // The contract's lr result is second to last.
    Value lr = ret.getOperand(ret.getNumOperands() - 2);
    FloatAttr baseLr;
    DenseElementsAttr dense;
    if (matchPattern(lr, m_Constant(&dense)) && dense.isSplat())
      baseLr = dyn_cast<FloatAttr>(dense.getSplatValue<Attribute>());
    if (!baseLr) {
      fn.emitError() << "ds-lr-schedule: @" << entry
                     << "'s learning rate is not the optimizer's constant; "
                        "is a schedule already applied?";
      return signalPassFailure();
    }

    FailureOr<Attribute> schedule = buildSchedule(kind, intendedValue(baseLr));
    if (failed(schedule))
      return signalPassFailure();

    OpBuilder b(&fn.getBody().front(), fn.getBody().front().begin());
    Location loc = lr.getLoc();
    Value step = fn.getArgument(*stepIndex);
    Value one = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(cast<ShapedType>(step.getType()),
                               ArrayRef<Attribute>{b.getI64IntegerAttr(1)}));
    Value iteration = arith::SubIOp::create(b, loc, step, one);
    Value scheduled = train::LRScheduleOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()), iteration,
        *schedule);
    lr.replaceAllUsesWith(scheduled);
    if (Operation *def = lr.getDefiningOp(); def && def->use_empty())
      def->erase();
  }

  /// The decimal the user wrote for an f32 constant (1e-3, not
  /// 0.0010000000474974513): the shortest form that reads back as the same
  /// float, since schedules compute in double as DeepSpeed does.
  static double intendedValue(FloatAttr value) {
    if (!value.getType().isF32())
      return value.getValueAsDouble();
    char buffer[64];
    auto [end, ec] =
        std::to_chars(buffer, buffer + sizeof(buffer),
                      static_cast<float>(value.getValueAsDouble()));
    return ec == std::errc()
               ? std::strtod(std::string(buffer, end).c_str(), nullptr)
               : value.getValueAsDouble();
  }

  FailureOr<Attribute> buildSchedule(StringRef kind, double baseLr) {
    MLIRContext *ctx = &getContext();
    auto error = [&]() { return getOperation().emitError(); };
    auto warmup = train::symbolizeWarmupType(StringRef(warmupType).lower());
    auto f = [](double v) { return llvm::APFloat(v); };
    auto optional = [](int64_t v) {
      return v < 0 ? std::nullopt : std::optional<int64_t>(v);
    };
    // The attributes' verifiers check the ranges and say what is wrong.
    auto checked = [&](auto attr, auto... args) -> FailureOr<Attribute> {
      using AttrTy = decltype(attr);
      auto built = AttrTy::getChecked(error, ctx, args...);
      if (!built)
        return failure();
      return Attribute(built);
    };
    if (kind == "warmuplr")
      return checked(train::WarmupLRAttr(), f(warmupMinLr), f(warmupMaxLr),
                     static_cast<int64_t>(warmupNumSteps), *warmup);
    if (kind == "warmupdecaylr")
      return checked(train::WarmupDecayLRAttr(),
                     static_cast<int64_t>(totalNumSteps), f(warmupMinLr),
                     f(warmupMaxLr), static_cast<int64_t>(warmupNumSteps),
                     *warmup);
    if (kind == "warmupcosinelr")
      return checked(train::WarmupCosineLRAttr(),
                     static_cast<int64_t>(totalNumSteps), f(baseLr),
                     f(warmupMinRatio), static_cast<int64_t>(warmupNumSteps),
                     f(cosMinRatio), *warmup);
    if (kind == "onecycle")
      return checked(train::OneCycleAttr(), f(cycleMinLr), f(cycleMaxLr),
                     f(decayLrRate), static_cast<int64_t>(cycleFirstStepSize),
                     optional(cycleSecondStepSize),
                     static_cast<int64_t>(cycleFirstStairCount),
                     optional(cycleSecondStairCount),
                     static_cast<int64_t>(decayStepSize));
    llvm_unreachable("schedule type checked in runOnOperation");
  }
};

} // namespace
