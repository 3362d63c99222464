//===- Trainer.h - Compile a model + config and run training ----*- C++ -*-===//
//
// What ds-train does, as a library: get @train_step from a StepSource (the
// JIT: import the model, build the step with the training pipeline, lower
// and JIT it; or a ds-compile artifact), then run steps with planned
// buffers (parameters and optimizer state double-buffered, no allocation per
// step), feeding the sample order of Data.h and reporting metrics. No MLIR
// here: ds-runner links it with artifacts as the only source.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_TRAINER_H
#define DS_DRIVER_TRAINER_H

#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/Data.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace ds::driver {

struct TrainOptions {
  std::string modelPath;  ///< .json spec, .mlir model contract or .pt
  std::optional<int64_t> seqLen; ///< --seq-len (StepRequest::seqLen)
  std::string configPath; ///< ds_config.json
  std::string dataPath;   ///< .txt / .bin; empty with `synthetic`
  bool synthetic = false;
  int64_t steps = 0;
  std::string metricsPath;      ///< JSONL, one line per step
  std::optional<uint64_t> seed; ///< overrides the model's init seed
  std::string initFrom;         ///< safetensors with initial parameters
  /// --param-map: where initFrom holds each parameter (ParamMap.h).
  std::string paramMap;
  /// Draw the parameters from the model's init attributes even when the
  /// model file holds values (a .pt starts from its own weights otherwise).
  bool freshInit = false;
  DataOrder order = DataOrder::Shuffled;
  /// --batch NAME=tokens|targets: what token data feeds each named batch
  /// argument (docs/data.md lists the names bound without it).
  std::map<std::string, std::string> batchRoles;
  /// --eval-data: held-out tokens; the eval loss every evalInterval steps
  /// (0: every steps_per_print).
  std::string evalDataPath;
  int64_t evalInterval = 0;
  std::string saveWeights; ///< safetensors of the final parameters
  std::string dumpIRDir;   ///< writes each phase's IR here
  /// --comm-profile: measured collective times for the schedule's cost
  /// model (ds-report --comm-profile); empty: its defaults.
  std::string commProfile;
  /// --target: "cpu", or the GPU chip ("sm_90") the step is compiled for.
  std::string target = "cpu";
  bool quiet = false; ///< no progress lines
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
  /// --on-save-error: a failed save (full disk, read-only filesystem) ends
  /// the run, or is reported and training goes on. The save at the last
  /// step always fails the run: nothing comes after it.
  bool continueOnSaveError = false;
  /// Resume from loadDir's `latest` (or loadTag): --steps is the step the
  /// continued run ends at.
  std::string loadDir;
  std::string loadTag;
  /// Run this ds-compile artifact instead of compiling (Artifact.h).
  std::string compiledDir;
  /// --trace: the run's timeline as a Chrome trace (Timeline.h).
  std::string tracePath;
  /// --profile: time per kind of kernel, written here (StepProfile.h).
  std::string profilePath;
};

/// Where the step comes from: compiled here, or an artifact. The world
/// size check runs as soon as communication is up, before the config is
/// resolved against it.
struct StepSource {
  StepProvider provide;
  std::function<llvm::Error(int64_t worldSize)> checkWorldSize;
  /// Writes the weights held by `path` (a .pt model or state_dict) as
  /// safetensors into `out`; unset where PyTorch files cannot be read.
  std::function<llvm::Error(llvm::StringRef path, llvm::StringRef out)>
      exportTorchWeights;
};

/// Runs the whole job; progress goes to `log`. Any problem with the inputs
/// comes back as one error message.
llvm::Error runTraining(const TrainOptions &options, const StepSource &source,
                        llvm::raw_ostream &log);

/// ds-train's and ds-runner's command line (one set of flags), parsed with
/// llvm::cl: the options, or an error naming the bad flag.
llvm::Expected<TrainOptions> parseTrainCommandLine(int argc, char **argv,
                                                   llvm::StringRef overview);

/// The whole of ds-train's and ds-runner's main: parse the command line,
/// take the step from `sourceFor(options)`, train; errors as one line.
int trainMain(
    int argc, char **argv, llvm::StringRef overview,
    const std::function<llvm::Expected<StepSource>(const TrainOptions &)>
        &sourceFor);

} // namespace ds::driver

#endif // DS_DRIVER_TRAINER_H
