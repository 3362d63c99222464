//===- TrainOps.cpp - dstrain op verifiers and folders --------------------===//
#include "dstrain/TrainOps.h"
#include "ds/Support/ShapeCheck.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::train;

//===----------------------------------------------------------------------===//
// Hyper-parameter ranges (PyTorch's checks)
//===----------------------------------------------------------------------===//

static LogicalResult verifyBeta(Operation *op, StringRef name, double v) {
  if (!(v >= 0 && v < 1))
    return op->emitOpError()
           << name << " is " << formatHyperParam(v) << " but must be in [0, 1)";
  return success();
}

static LogicalResult verifyPositive(Operation *op, StringRef name, double v) {
  if (!(v > 0))
    return op->emitOpError()
           << name << " is " << formatHyperParam(v) << " but must be > 0";
  return success();
}

static LogicalResult verifyNonNegative(Operation *op, StringRef name,
                                       double v) {
  if (!(v >= 0))
    return op->emitOpError()
           << name << " is " << formatHyperParam(v) << " but must be >= 0";
  return success();
}

static LogicalResult verifyAtLeast(Operation *op, StringRef name, int64_t v,
                                   int64_t min) {
  if (v < min)
    return op->emitOpError()
           << name << " is " << v << " but must be >= " << min;
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Master weights and state are f32; the grad may arrive in a 16-bit type
/// (the all-reduced fp16/bf16 gradient) and is widened by the update.
static LogicalResult verifyParamAndGrad(Operation *op, Value param,
                                        Value grad) {
  auto p = cast<RankedTensorType>(param.getType());
  auto g = cast<RankedTensorType>(grad.getType());
  if (!p.getElementType().isF32())
    return op->emitOpError()
           << "param element type " << p.getElementType()
           << " must be f32: optimizers update f32 master weights and state";
  Type ge = g.getElementType();
  if (!ge.isF32() && !ge.isBF16() && !ge.isF16())
    return op->emitOpError()
           << "grad element type " << ge << " must be f32, bf16 or f16";
  if (!shapesCompatible(g.getShape(), p.getShape()))
    return op->emitOpError()
           << "grad shape " << formatShape(g.getShape())
           << " does not match param shape " << formatShape(p.getShape());
  return success();
}

static LogicalResult verifyAdamLike(Operation *op, Value param, Value grad,
                                    double beta1, double beta2, double eps,
                                    double weightDecay) {
  return failure(failed(verifyParamAndGrad(op, param, grad)) ||
                 failed(verifyBeta(op, "beta1", beta1)) ||
                 failed(verifyBeta(op, "beta2", beta2)) ||
                 failed(verifyPositive(op, "eps", eps)) ||
                 failed(verifyNonNegative(op, "weight_decay", weightDecay)));
}

LogicalResult AdamOp::verify() {
  return verifyAdamLike(
      *this, getParam(), getGrad(), getBeta1().convertToDouble(),
      getBeta2().convertToDouble(), getEps().convertToDouble(),
      getWeightDecay().convertToDouble());
}

LogicalResult LambOp::verify() {
  if (failed(verifyAdamLike(
          *this, getParam(), getGrad(), getBeta1().convertToDouble(),
          getBeta2().convertToDouble(), getEps().convertToDouble(),
          getWeightDecay().convertToDouble())))
    return failure();
  double lo = getMinCoeff().convertToDouble(),
         hi = getMaxCoeff().convertToDouble();
  if (!(lo >= 0 && lo <= hi))
    return emitOpError() << "trust-ratio bounds need 0 <= min_coeff <= "
                            "max_coeff, got min_coeff = "
                         << formatHyperParam(lo)
                         << " and max_coeff = " << formatHyperParam(hi);
  return success();
}

LogicalResult SGDOp::verify() {
  double momentum = getMomentum().convertToDouble(),
         dampening = getDampening().convertToDouble();
  if (failed(verifyParamAndGrad(*this, getParam(), getGrad())) ||
      failed(verifyNonNegative(*this, "momentum", momentum)) ||
      failed(verifyNonNegative(*this, "weight_decay",
                               getWeightDecay().convertToDouble())))
    return failure();
  if (getNesterov() && (momentum <= 0 || dampening != 0))
    return emitOpError() << "nesterov needs momentum > 0 and dampening 0, "
                            "got momentum = "
                         << formatHyperParam(momentum)
                         << " and dampening = " << formatHyperParam(dampening);
  return success();
}

/// The buffer form: the state count the optimizer keeps, f32 param and
/// state of one shape, a grad of that shape.
LogicalResult ApplyOp::verify() {
  StringRef opt = getOptimizer();
  size_t states = opt == "sgd" ? 1 : 2;
  if (opt != "adam" && opt != "lamb" && opt != "sgd")
    return emitOpError() << "optimizer is \"" << opt
                         << "\" but must be \"adam\", \"lamb\" or \"sgd\"";
  if (getState().size() != states)
    return emitOpError() << "\"" << opt << "\" keeps " << states
                         << " state buffer(s), got " << getState().size();
  auto p = cast<MemRefType>(getParam().getType());
  auto g = cast<MemRefType>(getGrad().getType());
  if (!p.getElementType().isF32())
    return emitOpError() << "param must be f32, got " << p.getElementType();
  if (p.getShape() != g.getShape())
    return emitOpError() << "grad shape differs from the param's";
  for (Value s : getState()) {
    auto st = cast<MemRefType>(s.getType());
    if (st.getShape() != p.getShape() || !st.getElementType().isF32())
      return emitOpError() << "state buffers must be f32 of the param's shape";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Loss scaling, norms, clipping
//===----------------------------------------------------------------------===//

// A global_norm's result (and `init`) type: tensor<f32> unless printed
// after `->`, which only a chain of f64 running sums needs.
static ParseResult
parseSquaresType(OpAsmParser &parser, Type &result, Type &init,
                 std::optional<OpAsmParser::UnresolvedOperand> initOperand) {
  Type type = RankedTensorType::get({}, parser.getBuilder().getF32Type());
  if (succeeded(parser.parseOptionalArrow()) && parser.parseType(type))
    return failure();
  result = type;
  if (initOperand)
    init = type;
  return success();
}

static void printSquaresType(OpAsmPrinter &printer, Operation *, Type result,
                             Type, Value) {
  if (!cast<RankedTensorType>(result).getElementType().isF32())
    printer << " -> " << result;
}

static LogicalResult verifyNonEmpty(Operation *op, ValueRange values) {
  if (values.empty())
    return op->emitOpError("needs at least one tensor");
  return success();
}

LogicalResult HasOverflowOp::verify() {
  return verifyNonEmpty(*this, getInputs());
}

LogicalResult GlobalNormOp::verify() {
  if (getInit() && !getSquared())
    return emitOpError("takes `init` only with `squared`: a running sum of "
                       "squares continues another sum of squares");
  if (getInit() && getInit().getType() != getType())
    return emitOpError("continues `init` of type ")
           << getInit().getType() << " into a result of type " << getType()
           << "; a running sum keeps its type";
  if (!getSquared() && !getType().getElementType().isF32())
    return emitOpError("returns the norm as tensor<f32>; only a `squared` "
                       "running sum may be f64");
  return verifyNonEmpty(*this, getInputs());
}

LogicalResult ClipGradNormOp::verify() {
  return failure(failed(verifyNonEmpty(*this, getGrads())) ||
                 failed(verifyPositive(*this, "max_norm",
                                       getMaxNorm().convertToDouble())));
}

LogicalResult LossScaleUpdateOp::verify() {
  if (failed(verifyAtLeast(*this, "scale_window", getScaleWindow(), 1)) ||
      failed(verifyAtLeast(*this, "hysteresis", getHysteresis(), 1)) ||
      failed(
          verifyPositive(*this, "min_scale", getMinScale().convertToDouble())))
    return failure();
  double factor = getScaleFactor().convertToDouble();
  if (!(factor > 1))
    return emitOpError() << "scale_factor is " << formatHyperParam(factor)
                         << " but must be > 1";
  if (std::optional<APFloat> scale = getStaticScale())
    return verifyPositive(*this, "static_scale", scale->convertToDouble());
  return success();
}

//===----------------------------------------------------------------------===//
// LRScheduleOp
//===----------------------------------------------------------------------===//

/// DeepSpeed's warmup fraction at `step` < `n`.
static double warmupGamma(int64_t step, int64_t n, WarmupType type) {
  if (type == WarmupType::log)
    return std::log(static_cast<double>(step + 1)) /
           std::log(static_cast<double>(n));
  return static_cast<double>(step) / static_cast<double>(n);
}

std::optional<double> LRScheduleOp::evaluate(int64_t step) {
  // Before the first step DeepSpeed's schedules disagree between versions.
  if (step < 0)
    return std::nullopt;
  Attribute schedule = getSchedule();
  if (auto w = dyn_cast<WarmupLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    double lo = w.getMinLr().convertToDouble(),
           hi = w.getMaxLr().convertToDouble();
    double gamma = step < n ? warmupGamma(step, n, w.getWarmupType()) : 1.0;
    return lo + (hi - lo) * gamma;
  }
  if (auto w = dyn_cast<WarmupDecayLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    int64_t total = w.getTotalNumSteps();
    double lo = w.getMinLr().convertToDouble(),
           hi = w.getMaxLr().convertToDouble();
    double gamma =
        step < n
            ? warmupGamma(step, n, w.getWarmupType())
            : std::max(0.0, static_cast<double>(total - step) /
                                std::max(1.0, static_cast<double>(total - n)));
    return lo + (hi - lo) * gamma;
  }
  if (auto w = dyn_cast<WarmupCosineLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    double ratio;
    if (step < n) {
      double lo = w.getWarmupMinRatio().convertToDouble();
      ratio = lo + warmupGamma(step, n, w.getWarmupType()) * (1.0 - lo);
    } else {
      double k = static_cast<double>(step - n + 1);
      double total = static_cast<double>(w.getTotalNumSteps() - n);
      double lo = w.getCosMinRatio().convertToDouble();
      ratio = (1 + std::cos(llvm::numbers::pi * k / total)) / 2;
      ratio = std::max(0.0, lo + (1.0 - lo) * ratio);
    }
    return w.getBaseLr().convertToDouble() * ratio;
  }
  // OneCycle's formulas changed between DeepSpeed versions; it is lowered,
  // not folded.
  return std::nullopt;
}

OpFoldResult LRScheduleOp::fold(FoldAdaptor adaptor) {
  auto step = dyn_cast_or_null<DenseIntElementsAttr>(adaptor.getStep());
  if (!step)
    return {};
  std::optional<double> lr =
      evaluate((*step.getValues<APInt>().begin()).getSExtValue());
  if (!lr)
    return {};
  return DenseElementsAttr::get(getLr().getType(),
                                ArrayRef<float>(static_cast<float>(*lr)));
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

static LogicalResult verifyCheckpoint(Operation *op, ArrayAttr names,
                                      StringRef tag, size_t numTensors,
                                      StringRef what) {
  if (tag.empty())
    return op->emitOpError("tag must not be empty; it names the checkpoint");
  if (names.size() != numTensors)
    return op->emitOpError()
           << "has " << numTensors << " " << what << " but " << names.size()
           << " names; give one name per tensor";
  llvm::SmallSet<StringRef, 8> seen;
  for (auto [i, a] : llvm::enumerate(names)) {
    StringRef name = cast<StringAttr>(a).getValue();
    if (name.empty())
      return op->emitOpError() << "name " << i << " is empty";
    if (!seen.insert(name).second)
      return op->emitOpError() << "name \"" << name << "\" appears twice";
  }
  return success();
}

LogicalResult CheckpointSaveOp::verify() {
  return verifyCheckpoint(*this, getNames(), getTag(), getTensors().size(),
                          "tensors");
}

LogicalResult CheckpointLoadOp::verify() {
  return verifyCheckpoint(*this, getNames(), getTag(), getTensors().size(),
                          "results");
}

#define GET_OP_CLASSES
#include "dstrain/TrainOps.cpp.inc"
