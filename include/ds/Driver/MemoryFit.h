//===- MemoryFit.h - Does the step fit this machine's memory? ---*- C++ -*-===//
//
// Before code generation ds-train compares the step's planned per-rank peak
// (ds-plan-memory, in the manifest) with the memory a rank has here, and
// refuses a step that cannot fit with the numbers and the config keys that
// would shrink it: never an OOM kill in step 1.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_MEMORYFIT_H
#define DS_DRIVER_MEMORYFIT_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace ds::driver {

struct RankMemory {
  int64_t bytes = -1; ///< for one rank; -1: unknown (no check)
  std::string source; ///< where the number came from, for the message
  int64_t ranksHere = 1;
};

/// What one of `ranksHere` ranks on this machine may use: DS_MEMORY_BYTES
/// if set (per rank), else MemAvailable, capped by the cgroup's memory.max,
/// shared by the ranks here.
RankMemory memoryPerRank(int64_t ranksHere);

/// What a rank of `manifest`'s step holds in memory at its peak: the
/// planned peak, less the Adam moments an NVMe offload keeps in files.
/// -1 when the step has no plan.
int64_t residentPeakBytes(const StepManifest &manifest,
                          const ::ds::config::Config &config);

/// An error naming the planned peak, the memory and the knobs that apply
/// when `manifest`'s planned peak exceeds `memory`; success otherwise or
/// when either is unknown.
llvm::Error checkStepFits(const StepManifest &manifest,
                          const ::ds::config::Config &config,
                          const RankMemory &memory);

} // namespace ds::driver

#endif // DS_DRIVER_MEMORYFIT_H
