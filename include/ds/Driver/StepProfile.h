//===- StepProfile.h - ds-train --profile: where time goes -----*- C++ -*-===//
//
// A step compiled with profiling (ds-profile-spans) times each kernel in
// libdsrt (dsrt_profile_*). This sums those times over the steps, next to
// the step's own time, and writes per class of kernel (gemm, elementwise,
// reduction, copy, fill, collective, optimizer) and per kernel the time a
// step, its share of the step, GFLOP/s and GB/s; what no kernel covers is
// reported as unattributed. docs/performance.md, "Where the time goes".
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_STEPPROFILE_H
#define DS_DRIVER_STEPPROFILE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <string>

namespace ds::driver {

class StepProfile {
public:
  /// Around each call of the compiled step. The first step of a run warms
  /// caches and pages in buffers: when more follow, it is not counted.
  void beforeStep(int64_t step, int64_t firstStep);
  /// `phases`: the step times its phases (wall_clock_breakdown).
  void afterStep(bool phases);
  /// Writes the JSON to `path` and the table to `table`.
  llvm::Error write(const std::string &path, llvm::raw_ostream &table) const;

private:
  int64_t steps = 0, warmup = 0;
  double since = 0, stepSeconds = 0, commSeconds = 0;
  bool phasesTimed = false;
  std::array<double, 4> phaseSeconds{}; ///< forward ... optimizer
};

} // namespace ds::driver

#endif // DS_DRIVER_STEPPROFILE_H
