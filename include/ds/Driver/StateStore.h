//===- StateStore.h - Parameters and optimizer state of a run ---*- C++ -*-===//
//
// The model states @train_step reads and writes: every parameter and state
// argument held once, the step writing its next value over the current one
// (its result buffer is its argument's: the step reads an argument only
// before it writes the matching result, see docs/architecture.md). The
// arguments the step takes stacked (StepManifest::argStacks) are held back
// to back in layer order, so the call passes each group without a copy. Initial
// values come from the seed, from --init-from safetensors or from a
// checkpoint; the final parameters can be gathered into --save-weights.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_STATESTORE_H
#define DS_DRIVER_STATESTORE_H

#include "ds/Driver/Checkpoint.h"
#include "ds/Driver/CompiledStep.h"
#include "ds/Driver/ParamMap.h"
#include "ds/Driver/StateSwap.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace ds::driver {

/// This rank's part of every parameter and optimizer state from `ckpt`,
/// whatever world size and ZeRO stage wrote it, as bytes per argument
/// (empty for arguments that are not model states).
llvm::Expected<std::vector<std::vector<char>>>
readCheckpointState(const CheckpointReader &ckpt, const StepManifest &manifest,
                    int rank);

class StateStore {
public:
  /// Zeroed buffers for every model-state argument of `manifest`; with a
  /// `swap`, the arguments it holds are its keys instead (files, not
  /// memory: StateSwap.h).
  StateStore(const StepManifest &manifest, int rank,
             const StateSwap *swap = nullptr);

  /// First values: parameters drawn from `seed` (or read from `initFrom`
  /// when given, found there through `map`), states from their init values.
  /// Errors name the file `shownAs` (the file a temporary was made from).
  llvm::Error initialize(uint64_t seed, llvm::StringRef initFrom,
                         const ParamMap &map = {},
                         llvm::StringRef shownAs = "");
  /// Overwrites the arguments `restored` holds bytes for.
  llvm::Error restore(const std::vector<std::vector<char>> &restored);

  /// Puts the current values into `args` and, at the results that update
  /// them, the same buffers into `results`: the step updates in place.
  void bind(std::vector<Tensor> &args, std::vector<Tensor> &results) const;

  /// The current value of argument `arg` (a model state): for a swapped
  /// one, its key, which no memory backs.
  const Tensor &current(size_t arg) const { return currentValues[arg]; }
  /// Whether argument `arg` lives in a file of the NVMe swap.
  bool swapped(size_t arg) const { return swap && swap->key(arg); }
  /// Every model state over its current buffer, for a checkpoint. A
  /// tensor-parallel piece (and its optimizer state, or a ZeRO chunk of
  /// either) is gathered into its whole tensor first, which one rank in
  /// turn keeps and writes: every rank must call this.
  llvm::Expected<std::vector<CkptTensor>> checkpointTensors() const;
  /// Writes the parameters of the whole model (gathered from every rank and
  /// pipeline stage; each rank must call this) to `path` on rank 0.
  llvm::Error saveWeights(llvm::StringRef path, const CkptPlace &place) const;

  /// Parameters of the whole model.
  int64_t parameterCount() const;
  /// Model-state bytes resident on this rank between steps, gradients
  /// included as the step boundary leaves them.
  int64_t residentBytes(int64_t dpSize, int64_t zeroStage) const;

private:
  llvm::Error drawInitialValues(uint64_t seed, bool parameters);
  llvm::Error loadInitialWeights(llvm::StringRef file, const ParamMap &map,
                                 llvm::StringRef shownAs);

  const StepManifest &manifest;
  int rank;
  const StateSwap *swap;
  std::vector<Tensor> currentValues; ///< per argument
  /// The whole tensors of the last checkpoint's tensor-parallel pieces
  /// that this rank writes, and its swapped states read from their files,
  /// alive until the next one (an asynchronous save copies them later).
  mutable std::vector<Tensor> wholePieces;
  /// The buffers of stacked groups (StepManifest::argStacks), each
  /// contiguous in layer order: the group's tensors above borrow them.
  std::vector<Tensor> stackBuffers;
};

} // namespace ds::driver

#endif // DS_DRIVER_STATESTORE_H
