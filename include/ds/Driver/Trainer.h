//===- Trainer.h - Compile a model + config and run training ----*- C++ -*-===//
//
// What ds-train does, as a library: import the model, build @train_step with
// the training pipeline, lower and JIT it, then run steps with planned
// buffers (parameters and optimizer state double-buffered, no allocation per
// step), feeding the sample order of Data.h and reporting metrics.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_TRAINER_H
#define DS_DRIVER_TRAINER_H

#include "ds/Driver/Data.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ds::driver {

struct TrainOptions {
  std::string modelPath;  ///< .json spec, .mlir model contract or .pt
  std::string configPath; ///< ds_config.json
  std::string dataPath;   ///< .txt / .bin; empty with `synthetic`
  bool synthetic = false;
  int64_t steps = 0;
  std::string metricsPath;      ///< JSONL, one line per step
  std::optional<uint64_t> seed; ///< overrides the model's init seed
  std::string initFrom;         ///< safetensors with initial parameters
  DataOrder order = DataOrder::Shuffled;
  std::string saveWeights; ///< safetensors of the final parameters
  std::string dumpIRDir;   ///< writes each phase's IR here
  bool quiet = false;      ///< no progress lines
  /// Communication backend: "self", "mpi", "nccl"; empty = automatic.
  std::string backend;
  /// Reductions summed in rank order (bitwise reproducible across ZeRO
  /// stages and group sizes' algorithms; slower).
  bool deterministic = false;
  /// Checkpoints (docs/checkpoints.md): saved into saveDir every
  /// saveInterval steps (0: only at the end) and at the end of the run,
  /// written by a background thread unless saveSync.
  std::string saveDir;
  int64_t saveInterval = 0;
  bool saveSync = false;
  /// Resume from loadDir's `latest` (or loadTag): --steps is the step the
  /// continued run ends at.
  std::string loadDir;
  std::string loadTag;
};

/// Runs the whole job; progress goes to `log`. Any problem with the inputs
/// comes back as one error message.
llvm::Error runTraining(const TrainOptions &options, llvm::raw_ostream &log);

} // namespace ds::driver

#endif // DS_DRIVER_TRAINER_H
