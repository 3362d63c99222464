//===- Evaluator.h - The eval loss every --eval-interval steps --*- C++ -*-===//
//
// DeepSpeed's eval_batch: the loss of one global batch of held-out data,
// forward only (no gradients, no dropout), from the parameters the step
// just wrote. Eval k (0-based) reads batch k of --eval-data (a token
// corpus, or a directory of per-sample NAME.npy files) in the sequential
// order of docs/data.md; each rank evaluates its share of the
// batch micro-batch by micro-batch and the data-parallel ranks average.
// With a pipeline every stage streams each micro-batch through its chunk
// and the last stage's loss is every rank's.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_EVALUATOR_H
#define DS_DRIVER_EVALUATOR_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/Data.h"
#include "ds/Driver/Trainer.h"

#include <map>
#include <memory>
#include <optional>

namespace ds::driver {

class DataFeeder;
class StateStore;

class Evaluator {
public:
  /// Reads --eval-data; null without it.
  static llvm::Expected<std::unique_ptr<Evaluator>>
  open(const TrainOptions &options, const ::ds::config::Config &config);

  /// Checks @eval_step's arguments against the step's parameters and the
  /// eval data; allocates the batch buffers.
  llvm::Error plan(const StepManifest &manifest, const DataFeeder &feeder,
                   int rank);
  /// Whether the eval runs after 1-based step `step`.
  bool due(int64_t step) const { return step % interval == 0; }
  /// The mean eval loss over the data-parallel group (every rank calls it).
  llvm::Expected<double> run(StepFunction &step, const StateStore &store);

private:
  Evaluator() = default;

  /// Per-sample data: one NAME.npy per batch argument in the directory
  /// `path`, batch argument i filled from arrays[i].
  llvm::Error openSamples(size_t i, const ArgSpec &a);
  /// This rank's micro-batch of samples starting at `first` of the batch.
  void fillSamples(int64_t first);
  /// The mean of ranks first .. count - 1's `mean`s, on every rank (each
  /// of the first `count` ranks of the world calls it).
  llvm::Expected<double> meanOfRanks(double mean, int64_t count,
                                     int64_t first) const;

  TokenData data;
  bool sampleDir = false;
  std::map<size_t, SampleArray> arrays;
  std::string path;
  int64_t interval = 1, micro = 0, gas = 0, globalBatch = 0, stageRanks = 1;
  int64_t stages = 1;
  int64_t sequence = 0, evals = 0;
  int rank = 0;
  /// @eval_step's arguments, then (a pipeline stage that feeds only one
  /// of input_ids and targets) a scratch window for the other.
  std::vector<Tensor> args;
  size_t numArgs = 0;
  /// Per @eval_step argument: the step argument holding that parameter.
  std::vector<std::optional<size_t>> params;
  std::optional<size_t> inputsAt, targetsAt;
};

} // namespace ds::driver

#endif // DS_DRIVER_EVALUATOR_H
