//===- LRScheduleFormula.h - DeepSpeed LR schedules, once -------*- C++ -*-===//
//
// The rate of every dstrain LR schedule at a step, written once over an
// arithmetic "domain": `DoubleDomain` evaluates it in C++ (what a folder
// needs for a constant step), the lowering's domain emits the same
// operations as arith/math ops for a step known only at run time. Both
// evaluate both sides of every select, so a formula must stay finite on
// the side not taken for any step >= 0.
//
// A domain provides `Num`, `Bool`, `cst(double)`, `add`, `sub`, `mul`,
// `div`, `max`, `min`, `log`, `cos`, `floor`, `lt`, `le` and
// `select(Bool, Num, Num)`.
//
// The formulas are DeepSpeed's deepspeed.runtime.lr_schedules, which compute
// in Python floats (double); `step` is the scheduler's last_batch_iteration.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_CONVERSION_TRAINTOLINALG_LRSCHEDULEFORMULA_H
#define DS_LIB_CONVERSION_TRAINTOLINALG_LRSCHEDULEFORMULA_H

#include "dstrain/TrainOps.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace mlir::ds::traintolinalg {

/// The warmup fraction at `step` < `n`: log(step + 1) / log(n) or step / n.
template <typename D>
typename D::Num warmupGamma(D &d, typename D::Num step, int64_t n,
                            train::WarmupType type) {
  auto nf = static_cast<double>(n);
  if (type == train::WarmupType::log)
    return d.mul(d.cst(1.0 / std::log(nf)), d.log(d.add(step, d.cst(1.0))));
  return d.div(step, d.cst(nf));
}

/// The rate of `schedule` at `step`; nullopt for an attribute that is not a
/// schedule.
template <typename D>
std::optional<typename D::Num> lrScheduleFormula(D &d, Attribute schedule,
                                                 typename D::Num step) {
  using Num = typename D::Num;
  if (auto w = dyn_cast<train::WarmupLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    double lo = w.getMinLr().convertToDouble(),
           hi = w.getMaxLr().convertToDouble();
    Num gamma =
        d.select(d.lt(step, d.cst(n)),
                 warmupGamma(d, step, n, w.getWarmupType()), d.cst(1.0));
    return d.add(d.cst(lo), d.mul(d.cst(hi - lo), gamma));
  }
  if (auto w = dyn_cast<train::WarmupDecayLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    auto total = static_cast<double>(w.getTotalNumSteps());
    double lo = w.getMinLr().convertToDouble(),
           hi = w.getMaxLr().convertToDouble();
    double span = std::max(1.0, total - static_cast<double>(n));
    Num decay =
        d.max(d.cst(0.0), d.div(d.sub(d.cst(total), step), d.cst(span)));
    Num gamma = d.select(d.lt(step, d.cst(n)),
                         warmupGamma(d, step, n, w.getWarmupType()), decay);
    return d.add(d.cst(lo), d.mul(d.cst(hi - lo), gamma));
  }
  if (auto w = dyn_cast<train::WarmupCosineLRAttr>(schedule)) {
    int64_t n = std::max<int64_t>(2, w.getWarmupNumSteps());
    double warmLo = w.getWarmupMinRatio().convertToDouble();
    Num warm =
        d.add(d.cst(warmLo), d.mul(warmupGamma(d, step, n, w.getWarmupType()),
                                   d.cst(1.0 - warmLo)));
    // k = step - n + 1 of K = total - n cosine steps.
    double cosLo = w.getCosMinRatio().convertToDouble();
    auto span = static_cast<double>(w.getTotalNumSteps() - n);
    Num k = d.sub(step, d.cst(static_cast<double>(n - 1)));
    Num c = d.div(
        d.add(d.cst(1.0),
              d.cos(d.div(d.mul(d.cst(llvm::numbers::pi), k), d.cst(span)))),
        d.cst(2.0));
    Num cosine =
        d.max(d.cst(0.0), d.add(d.cst(cosLo), d.mul(d.cst(1.0 - cosLo), c)));
    Num ratio = d.select(d.lt(step, d.cst(n)), warm, cosine);
    return d.mul(d.cst(w.getBaseLr().convertToDouble()), ratio);
  }
  if (auto w = dyn_cast<train::OneCycleAttr>(schedule)) {
    double lo = w.getCycleMinLr().convertToDouble(),
           hi = w.getCycleMaxLr().convertToDouble();
    auto first = static_cast<double>(w.getCycleFirstStepSize());
    double second = w.getCycleSecondStepSize()
                        ? static_cast<double>(*w.getCycleSecondStepSize())
                        : first;
    double total = first + second, stepRatio = first / total;
    // In the cycle: x is the position in the current cycle, scale rises to
    // 1 over the first part and falls back over the second.
    Num iter = d.add(step, d.cst(1.0));
    Num pos = d.div(iter, d.cst(total));
    Num x = d.sub(d.add(d.cst(1.0), pos), d.floor(d.add(d.cst(1.0), pos)));
    Num scale = d.select(d.le(x, d.cst(stepRatio)), d.div(x, d.cst(stepRatio)),
                         d.div(d.sub(x, d.cst(1.0)), d.cst(stepRatio - 1.0)));
    Num cycle = d.add(d.cst(lo), d.mul(d.cst(hi - lo), scale));
    // After it: cycle_min_lr / (1 + decay_lr_rate · k / decay_step_size)
    // with k = step - total + 1; no decay when either is 0.
    double rate = w.getDecayLrRate().convertToDouble();
    int64_t every = w.getDecayStepSize();
    Num after = d.cst(lo);
    if (rate != 0 && every != 0) {
      Num k = d.sub(step, d.cst(total - 1.0));
      Num interval = d.div(k, d.cst(static_cast<double>(every)));
      after = d.div(d.cst(lo), d.add(d.cst(1.0), d.mul(d.cst(rate), interval)));
    }
    return d.select(d.lt(step, d.cst(total)), cycle, after);
  }
  return std::nullopt;
}

/// Plain doubles: the formulas evaluated in C++.
struct DoubleDomain {
  using Num = double;
  using Bool = bool;
  Num cst(double v) { return v; }
  Num add(Num x, Num y) { return x + y; }
  Num sub(Num x, Num y) { return x - y; }
  Num mul(Num x, Num y) { return x * y; }
  Num div(Num x, Num y) { return x / y; }
  Num max(Num x, Num y) { return std::max(x, y); }
  Num min(Num x, Num y) { return std::min(x, y); }
  Num log(Num x) { return std::log(x); }
  Num cos(Num x) { return std::cos(x); }
  Num floor(Num x) { return std::floor(x); }
  Bool lt(Num x, Num y) { return x < y; }
  Bool le(Num x, Num y) { return x <= y; }
  Num select(Bool c, Num x, Num y) { return c ? x : y; }
};

/// The rate at a constant `step` (>= 0; nullopt before the first step,
/// where DeepSpeed's schedules disagree between versions).
inline std::optional<double> evaluateLRSchedule(Attribute schedule,
                                                int64_t step) {
  if (step < 0)
    return std::nullopt;
  DoubleDomain d;
  return lrScheduleFormula(d, schedule, static_cast<double>(step));
}

} // namespace mlir::ds::traintolinalg

#endif // DS_LIB_CONVERSION_TRAINTOLINALG_LRSCHEDULEFORMULA_H
