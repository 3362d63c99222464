//===- DataFeeder.h - The batch arguments of every step ---------*- C++ -*-===//
//
// Fills @train_step's batch arguments and step counter before each step:
// token windows or rows of per-sample .npy files in the sample order of
// docs/data.md (this rank's contiguous block of the global batch,
// micro-batch by micro-batch), or fixed synthetic batches drawn once from
// the seed.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_DATAFEEDER_H
#define DS_DRIVER_DATAFEEDER_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/Data.h"
#include "ds/Driver/Trainer.h"

#include <map>
#include <optional>
#include <vector>

namespace ds::driver {

class DataFeeder {
public:
  /// Reads --data (nothing with --synthetic), so a bad file fails before
  /// the compile.
  static llvm::Expected<DataFeeder> open(const TrainOptions &options);

  /// Checks the step's batch arguments against the config and the data,
  /// and settles the sequence length; with --synthetic, makes the token
  /// stream from `seedOption`.
  llvm::Error plan(const StepManifest &manifest,
                   const ::ds::config::Config &config,
                   std::optional<uint64_t> seedOption);
  /// Allocates the batch buffers of `manifest` and draws the fixed
  /// synthetic ones; `manifest` must outlive the feeder.
  llvm::Error initialize(const StepManifest &manifest, uint64_t seed, int rank);

  /// Puts the batch buffers into `args` at the manifest's positions.
  void bind(std::vector<Tensor> &args) const;
  /// Writes the step counter and the batches of 0-based step `step`: token
  /// windows, and the rows of per-sample .npy files.
  llvm::Error fill(int64_t step);

  /// Tokens per sample (0 for a model without a sequence dim).
  int64_t seqLen() const { return sequence; }

  /// What token data feeds batch argument `p`: "input_ids", "targets", or
  /// its own name (nothing).
  std::string roleOf(const ArgSpec &p) const;

private:
  DataFeeder() = default;
  std::optional<size_t> findRole(const StepManifest &m,
                                 llvm::StringRef role) const;
  /// The .npy file whose rows feed batch argument `p` (--batch NAME=FILE
  /// or --data DIR's NAME.npy), or "".
  std::string fileOf(const ArgSpec &p) const;
  /// Maps the per-sample files of the step's batch arguments.
  llvm::Error openSamples(const StepManifest &manifest);

  std::map<std::string, std::string> roles; ///< --batch
  std::string sampleDir;                    ///< --data DIR
  std::map<size_t, SampleArray> arrays;     ///< per batch argument index

  const StepManifest *manifest = nullptr;
  std::optional<TokenData> data;
  std::string dataPath;
  bool synthetic = false;
  DataOrder order = DataOrder::Shuffled;
  int64_t micro = 0, gas = 0, globalBatch = 0, sequence = 0;
  uint64_t seed = 0;
  int rank = 0;
  std::vector<Tensor> buffers;  ///< per argument; null for model states
  std::vector<int64_t> scratch; ///< targets nobody reads
};

} // namespace ds::driver

#endif // DS_DRIVER_DATAFEEDER_H
