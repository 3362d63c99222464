//===- Checkpointer.h - --save, --save-interval and --load of a run -*- C++
//-*-===//
//
// The checkpoint side of a run (the format and protocol are Checkpoint.h's):
// opens --load's checkpoint and checks it can continue this run, reads this
// rank's state from it, saves at the planned steps (in the background
// unless --save-sync) and waits for the last save at the end.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_CHECKPOINTER_H
#define DS_DRIVER_CHECKPOINTER_H

#include "ds/Config/Config.h"
#include "ds/Driver/Checkpoint.h"
#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/Metrics.h"
#include "ds/Driver/StateStore.h"
#include "ds/Driver/Trainer.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <vector>

namespace ds::driver {

class Checkpointer {
public:
  /// Opens --load's checkpoint (checking it can continue this run) and
  /// --save's directory; `options` and `config` must outlive it.
  static llvm::Expected<Checkpointer> open(const TrainOptions &options,
                                           const ::ds::config::Config &config,
                                           const CkptPlace &place);

  /// --seed, or the seed the resumed run was given.
  std::optional<uint64_t> seedOption() const { return seed; }
  /// The resumed checkpoint, if any.
  const CheckpointReader *resume() const {
    return resumed ? &*resumed : nullptr;
  }
  /// The step the run continues from (0 without --load).
  int64_t firstStep() const { return resumed ? resumed->run().step : 0; }

  /// This rank's parameters and state from --load (empty without it),
  /// once every rank has read its part; `seed` is this run's.
  llvm::Expected<std::vector<std::vector<char>>>
  readState(const StepManifest &manifest, uint64_t seed) const;

  /// Before step `step` (1-based) writes the buffers a save still reads.
  void beforeStep(int64_t step, MetricsWriter &metrics);
  /// After step `step` (1-based): saves `store` when it is due.
  llvm::Error afterStep(int64_t step, uint64_t seed, const StateStore &store,
                        MetricsWriter &metrics);
  /// Waits for the last save and says where it went.
  llvm::Error finish(bool talk, llvm::raw_ostream &log);
  /// Ends a save in flight (on an early return, before the buffers go).
  void abandon();

private:
  Checkpointer(const TrainOptions &options, const ::ds::config::Config &config,
               const CkptPlace &place)
      : options(&options), config(&config), place(place), seed(options.seed) {}
  llvm::Error openLoad();
  /// A failed save: returned under --on-save-error stop (or when `last`),
  /// reported and dropped under continue.
  llvm::Error tolerate(llvm::Error err, bool last);

  const TrainOptions *options;
  const ::ds::config::Config *config;
  CkptPlace place;
  std::optional<uint64_t> seed;
  std::optional<CheckpointReader> resumed;
  std::unique_ptr<CheckpointSaver> saver;
  int failedSaves = 0;
};

} // namespace ds::driver

#endif // DS_DRIVER_CHECKPOINTER_H
