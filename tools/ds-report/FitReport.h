//===- FitReport.h - Does the job fit this machine's memory? ----*- C++ -*-===//
//
// With --model and --world-size: the step's planned peak per rank
// (ds-plan-memory, from the same compile ds-train runs, up to code
// generation) against the memory a rank has here, and, when it does not
// fit, the same job re-planned with each setting that shrinks a rank's
// share: a higher ZeRO stage, activation checkpointing, tensor parallelism,
// optimizer offload to NVMe.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TOOLS_DS_REPORT_FITREPORT_H
#define DS_TOOLS_DS_REPORT_FITREPORT_H

#include "ds/Config/Config.h"
#include "ds/Driver/MemoryFit.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

struct FitAlternative {
  /// The changed keys, as a user writes them ("zero_optimization.stage 3").
  std::string setting;
  /// The changed sections, to merge into ds_config.json (RFC 7386: a null
  /// removes the key).
  nlohmann::json patch;
  /// "offload", "checkpointing", "tensor_parallel", "zero": of several of
  /// one kind, the combination takes the last (the largest).
  std::string kind;
  int64_t peakBytes = -1; ///< the largest stage's, per rank
  bool fits = false;
  std::string error; ///< why it could not be planned (then no peak)
};

struct FitReport {
  int64_t worldSize = 1;
  ds::driver::RankMemory memory;
  int64_t peakBytes = -1; ///< per rank: the largest pipeline stage's
  bool fits = true;       ///< also when the memory is unknown
  /// Only when it does not fit: each setting alone, then (when none alone
  /// fits) all of them together.
  std::vector<FitAlternative> alternatives;
};

/// Plans the job of `configPath` (resolved as `config`) and the model at
/// `modelPath` on `config.worldSize` ranks, all on this machine.
llvm::Expected<FitReport> reportFit(llvm::StringRef configPath,
                                    llvm::StringRef modelPath,
                                    const ds::config::Config &config);

/// "memory: fits: ..." or "memory: does not fit: ...; would fit with: ...".
std::string summarize(const FitReport &report);

/// The "fit" object of --json.
nlohmann::json toJson(const FitReport &report);

#endif // DS_TOOLS_DS_REPORT_FITREPORT_H
