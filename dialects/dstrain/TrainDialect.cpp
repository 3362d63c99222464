//===- TrainDialect.cpp - dstrain dialect and attributes ------------------===//
#include "dstrain/TrainDialect.h"
#include "dstrain/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ds::train;

#include "dstrain/TrainDialect.cpp.inc"
#include "dstrain/TrainEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dstrain/TrainAttrs.cpp.inc"

void TrainDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dstrain/TrainAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dstrain/TrainOps.cpp.inc"
      >();
}

Operation *TrainDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || typed.getType() != type)
    return nullptr;
  return arith::ConstantOp::create(builder, loc, type, typed);
}

//===----------------------------------------------------------------------===//
// Learning-rate schedule attributes
//===----------------------------------------------------------------------===//

using EmitErrorFn = function_ref<InFlightDiagnostic()>;

static LogicalResult verifyLRRange(EmitErrorFn emitError, StringRef attr,
                                   StringRef loName, double lo,
                                   StringRef hiName, double hi) {
  if (!(lo >= 0 && lo <= hi))
    return emitError() << "#dstrain." << attr << ": needs 0 <= " << loName
                       << " <= " << hiName << ", got " << loName << " = "
                       << formatHyperParam(lo) << " and " << hiName << " = "
                       << formatHyperParam(hi);
  return success();
}

static LogicalResult verifyAtLeast(EmitErrorFn emitError, StringRef attr,
                                   StringRef name, int64_t value, int64_t min) {
  if (value < min)
    return emitError() << "#dstrain." << attr << ": " << name << " is " << value
                       << " but must be >= " << min;
  return success();
}

// DeepSpeed warms up over max(2, warmup_num_steps) steps.
static int64_t warmupLength(int64_t warmupNumSteps) {
  return std::max<int64_t>(2, warmupNumSteps);
}

static LogicalResult verifyDecayLength(EmitErrorFn emitError, StringRef attr,
                                       int64_t total, int64_t warmup) {
  if (total <= warmupLength(warmup))
    return emitError() << "#dstrain." << attr << ": total_num_steps is "
                       << total
                       << " but must exceed the warmup, max(2, "
                          "warmup_num_steps) = "
                       << warmupLength(warmup);
  return success();
}

static LogicalResult verifyRatio(EmitErrorFn emitError, StringRef attr,
                                 StringRef name, double value) {
  if (!(value >= 0 && value <= 1))
    return emitError() << "#dstrain." << attr << ": " << name << " is "
                       << formatHyperParam(value) << " but must be in [0, 1]";
  return success();
}

LogicalResult WarmupLRAttr::verify(EmitErrorFn emitError, APFloat minLr,
                                   APFloat maxLr, int64_t warmupNumSteps,
                                   WarmupType) {
  return failure(failed(verifyLRRange(emitError, "warmup_lr", "min_lr",
                                      minLr.convertToDouble(), "max_lr",
                                      maxLr.convertToDouble())) ||
                 failed(verifyAtLeast(emitError, "warmup_lr",
                                      "warmup_num_steps", warmupNumSteps, 1)));
}

LogicalResult WarmupDecayLRAttr::verify(EmitErrorFn emitError,
                                        int64_t totalNumSteps, APFloat minLr,
                                        APFloat maxLr, int64_t warmupNumSteps,
                                        WarmupType) {
  return failure(failed(verifyLRRange(emitError, "warmup_decay_lr", "min_lr",
                                      minLr.convertToDouble(), "max_lr",
                                      maxLr.convertToDouble())) ||
                 failed(verifyAtLeast(emitError, "warmup_decay_lr",
                                      "warmup_num_steps", warmupNumSteps, 1)) ||
                 failed(verifyDecayLength(emitError, "warmup_decay_lr",
                                          totalNumSteps, warmupNumSteps)));
}

LogicalResult WarmupCosineLRAttr::verify(EmitErrorFn emitError,
                                         int64_t totalNumSteps, APFloat baseLr,
                                         APFloat warmupMinRatio,
                                         int64_t warmupNumSteps,
                                         APFloat cosMinRatio, WarmupType) {
  StringRef attr = "warmup_cosine_lr";
  if (!(baseLr.convertToDouble() >= 0))
    return emitError() << "#dstrain." << attr << ": base_lr is "
                       << formatHyperParam(baseLr.convertToDouble())
                       << " but must be >= 0";
  return failure(failed(verifyRatio(emitError, attr, "warmup_min_ratio",
                                    warmupMinRatio.convertToDouble())) ||
                 failed(verifyRatio(emitError, attr, "cos_min_ratio",
                                    cosMinRatio.convertToDouble())) ||
                 failed(verifyAtLeast(emitError, attr, "warmup_num_steps",
                                      warmupNumSteps, 1)) ||
                 failed(verifyDecayLength(emitError, attr, totalNumSteps,
                                          warmupNumSteps)));
}

LogicalResult OneCycleAttr::verify(EmitErrorFn emitError, APFloat cycleMinLr,
                                   APFloat cycleMaxLr, APFloat decayLrRate,
                                   int64_t firstStepSize,
                                   std::optional<int64_t> secondStepSize,
                                   int64_t firstStairCount,
                                   std::optional<int64_t> secondStairCount,
                                   int64_t decayStepSize) {
  StringRef attr = "one_cycle";
  if (failed(verifyLRRange(emitError, attr, "cycle_min_lr",
                           cycleMinLr.convertToDouble(), "cycle_max_lr",
                           cycleMaxLr.convertToDouble())))
    return failure();
  if (!(decayLrRate.convertToDouble() >= 0))
    return emitError() << "#dstrain." << attr << ": decay_lr_rate is "
                       << formatHyperParam(decayLrRate.convertToDouble())
                       << " but must be >= 0";
  return failure(
      failed(verifyAtLeast(emitError, attr, "cycle_first_step_size",
                           firstStepSize, 1)) ||
      failed(verifyAtLeast(emitError, attr, "cycle_second_step_size",
                           secondStepSize.value_or(firstStepSize), 1)) ||
      failed(verifyAtLeast(emitError, attr, "cycle_first_stair_count",
                           firstStairCount, 0)) ||
      failed(verifyAtLeast(emitError, attr, "cycle_second_stair_count",
                           secondStairCount.value_or(firstStairCount), 0)) ||
      failed(
          verifyAtLeast(emitError, attr, "decay_step_size", decayStepSize, 0)));
}
