//===- StepLoop.h - Run the steps, measure and report them ------*- C++ -*-===//
//
// The training loop: per step, feed the batch, call the compiled step,
// swap the model states, refuse divergence and hopeless fp16 overflow, let
// the checkpointer save, and report: a JSONL metrics line per step (step
// time, tokens/s, comm_ms, peak RSS, ...) and a progress line every
// steps_per_print on rank 0.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_STEPLOOP_H
#define DS_DRIVER_STEPLOOP_H

#include "ds/Config/Config.h"
#include "ds/Driver/Checkpointer.h"
#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/CsvMonitor.h"
#include "ds/Driver/DataFeeder.h"
#include "ds/Driver/Metrics.h"
#include "ds/Driver/RoutingMonitor.h"
#include "ds/Driver/StateStore.h"
#include "ds/Driver/StepProfile.h"
#include "ds/Driver/Trainer.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace ds::driver {

class Evaluator;

class StepLoop {
public:
  /// Opens the metrics file (rank r > 0 writes NAME.rank<r>.EXT next to
  /// the one given); the arguments must outlive the loop.
  static llvm::Expected<StepLoop> create(const StepManifest &manifest,
                                         const TrainOptions &options,
                                         const ::ds::config::Config &config,
                                         int rank);

  /// Rank 0's line about the run, unless --quiet. `origin`: where the
  /// step came from (CompiledStep::origin).
  void printSummary(const StateStore &store, const DataFeeder &feeder,
                    double compileSeconds, llvm::StringRef origin,
                    llvm::raw_ostream &log) const;
  /// Runs from the checkpointer's first step to --steps.
  llvm::Error run(StepFunction &step, StateStore &store, DataFeeder &feeder,
                  Checkpointer &checkpointer, uint64_t seed,
                  llvm::raw_ostream &log, Evaluator *evaluator = nullptr);

  /// The resident set size before the model states were allocated: the
  /// base of `rss_growth_bytes`.
  void setRssBaseline(int64_t bytes) { rssBaseline = bytes; }

  /// Whether this rank prints progress.
  bool talks() const { return talk; }

private:
  /// What one step reported.
  struct StepReport {
    float loss = 0, lr = 0, gradNorm = 0;
    double stepMs = 0, commMs = 0, bubbleMs = 0, tokensPerS = 0;
    /// wall_clock_breakdown: the phases libdsrt timed (ds-phase-timers).
    double forwardMs = 0, backwardMs = 0, reductionMs = 0, optimizerMs = 0;
    /// libdsrt's count of the bytes held at most during the step, and the
    /// resident set's growth over the baseline after it.
    int64_t peakTrackedBytes = 0, rssGrowthBytes = 0;
    bool skipped = false;
    std::optional<double> evalLoss;
  };
  StepLoop(const StepManifest &manifest, const TrainOptions &options,
           const ::ds::config::Config &config, int rank, MetricsWriter metrics,
           CsvMonitor csv);
  llvm::Error checkStep(int64_t step, const StepReport &report,
                        float scaleBefore, int64_t hysteresisBefore) const;
  llvm::Error report(int64_t s, const StepReport &report,
                     const StateStore &store, int64_t modelStateBytes,
                     llvm::raw_ostream &log);
  /// DeepSpeed's monitor events of the step, in csv_monitor's names.
  llvm::Error writeCsv(int64_t s, const StepReport &report,
                       const StateStore &store);
  /// Whether the step times its phases (wall_clock_breakdown, no pipeline).
  bool timesPhases() const;

  const StepManifest *manifest;
  const TrainOptions *options;
  const ::ds::config::Config *config;
  int rank;
  bool talk;
  MetricsWriter metrics;
  CsvMonitor csv;
  /// The fp16 loss scaler's state, when the step has one: reported, and a
  /// skipped step's non-finite loss is the overflow it skipped, not
  /// divergence.
  std::optional<size_t> scaleArg, skippedArg, hysteresisArg;
  /// The MoE layers' routing results, when the step has any.
  RoutingMonitor routing;
  /// This rank's pipeline stage, when the step is one.
  std::optional<int64_t> stage;
  int64_t rssBaseline = 0;
  /// The resident set before the first step less the step's own tensors:
  /// the process's part of the planned resident set.
  int64_t processBytes = 0;
  /// --profile: the kernels' times, summed over the steps.
  std::optional<StepProfile> profile;
};

} // namespace ds::driver

#endif // DS_DRIVER_STEPLOOP_H
