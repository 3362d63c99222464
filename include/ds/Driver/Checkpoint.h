//===- Checkpoint.h - Sharded checkpoints of the training state -*- C++ -*-===//
//
// A checkpoint is a directory per save, DIR/global_step<N>/, holding one
// shard file per rank (rank<R>.safetensors: the slices of parameters and
// optimizer state that rank owns) and a manifest.json that rank 0 writes
// once every shard is on disk: the run (step, seed, data order, config,
// model hash, world layout) and, per tensor, its dtype, global shape and
// where each slice lives (rank, file, byte offset, length, xxh3 checksum).
// Pipeline stages hold different tensors; the manifest names each once, a
// tensor several stages hold (a tied weight) from the lowest of them.
// DIR/latest names the newest complete tag. docs/checkpoints.md has the
// format and the commit protocol.
//
// Nothing here depends on the compiler: ds-train hands over flat buffers,
// ds-ckpt reads the same files.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_CHECKPOINT_H
#define DS_DRIVER_CHECKPOINT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ds::driver {

/// One tensor of the training state as this rank holds it.
struct CkptTensor {
  std::string name;           ///< "h.0.attn.weight", "h.0.attn.weight.exp_avg"
  std::string kind;           ///< "param" or "state"
  std::string dtype;          ///< safetensors spelling: "F32", "BF16", ...
  std::vector<int64_t> shape; ///< the whole tensor's shape
  void *data = nullptr;
  /// Sharded (a ZeRO chunk, an expert-parallel slice, or a chunk of that):
  /// this rank holds elements [first, first + count) of the flattened
  /// tensor at `data`, and writes them only if `writes`, so that ranks
  /// holding the same elements (a tp or sp group, the ranks with the same
  /// experts) write them once. The caller places them: a chunk's index is
  /// the rank's dp index, not its rank. Unset: the rank holds the whole
  /// tensor, as every rank does.
  struct Held {
    int64_t first = 0, count = 0;
    bool writes = false;
  };
  std::optional<Held> held;
  int64_t numElements() const;
};

/// What a checkpoint records about the run besides the tensors: enough to
/// continue it exactly (the sample order and dropout masks are functions of
/// step, seed, data order and global batch; the LR schedule of the step).
struct CkptRunInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  /// --seed as given (the synthetic token stream draws from it).
  std::optional<uint64_t> seedOption;
  std::string dataOrder; ///< "shuffled" | "sequential"
  int64_t globalBatch = 0;
  int worldSize = 1;
  int64_t dpSize = 1;
  int64_t epSize = 1; ///< moe.ep_size: ranks the experts are spread over
  int64_t stages = 1; ///< pipeline stages
  int64_t zeroStage = 0;
  std::string configJson; ///< the resolved ds_config
  std::string modelPath;
  std::string modelHash; ///< xxh3 of the model file, hex
};

std::string ckptTagForStep(int64_t step);

/// Where a saving rank sits. The ranks that run one program (a pipeline
/// stage's data-parallel group; every rank without a pipeline) split its
/// sharded tensors by `programRank` and spread its whole ones among
/// themselves; the program's stage is `rank / programSize`.
struct CkptPlace {
  int rank = 0, worldSize = 1;
  int programRank = 0, programSize = 1;
  int stage() const { return rank / programSize; }
};

/// Saves the training state of this rank; collective over the world
/// (every rank calls save()/finish() at the same steps). In async mode a
/// save returns at once; a background thread writes the shard from the
/// buffers while the next step runs (see beforeStep), and the next save (or
/// finish) waits for it and commits it: every rank reports its shard
/// complete, rank 0 writes the manifest, then `latest`.
class CheckpointSaver {
public:
  /// Checks DIR is usable now, so a bad --save fails before training.
  static llvm::Expected<std::unique_ptr<CheckpointSaver>>
  create(llvm::StringRef dir, bool async, const CkptPlace &place);
  ~CheckpointSaver();

  /// Fails if a save this run plans (every `interval` steps after
  /// firstStep, and at lastStep) would overwrite a committed checkpoint, so
  /// the run stops before it trains rather than at that save.
  llvm::Error checkPlannedSaves(int64_t firstStep, int64_t lastStep,
                                int64_t interval) const;

  /// Starts a save (async) or writes and commits it; commits the previous
  /// one first if commitPrevious() has not.
  llvm::Error save(const CkptRunInfo &run, llvm::ArrayRef<CkptTensor> tensors);
  /// Waits for the previous save's write and commits it (collective). Its
  /// failure leaves the saver ready for the next save.
  llvm::Error commitPrevious();
  /// Waits for the save in flight and commits it.
  llvm::Error finish();

  /// Call before running (1-based) step `step`: an async save of step N
  /// reads the model-state buffers, which step N+1 updates in place, so
  /// step N+1 waits here until the shard's bytes are hashed and handed to
  /// the kernel. Returns the seconds waited.
  double beforeStep(int64_t step);

  /// Waits for a write in flight and drops it (error paths: the buffers it
  /// reads are about to go).
  void abandon();

  /// Of the last save() call: seconds the caller was held (waiting for and
  /// committing the previous save, copying, or the whole write when sync).
  double lastStallSeconds() const { return stallS; }
  /// Seconds the most recently committed shard write took (0 if none yet).
  double lastWriteSeconds() const { return writeS; }
  int64_t lastBytes() const { return bytes; }

  struct Pending;
  struct CommitFiles;

private:
  CheckpointSaver() = default;
  llvm::Error commit(bool deferWrite);

  std::string dir;
  bool async = true;
  CkptPlace place;
  std::unique_ptr<Pending> pending;
  std::unique_ptr<CommitFiles> deferred;
  double commitS = 0; // commitPrevious() time, counted in the next stall
  double stallS = 0, writeS = 0;
  int64_t bytes = 0;
};

/// One slice of a tensor in a checkpoint.
struct CkptSlice {
  int rank = 0;
  std::string file;                ///< relative to the tag directory
  uint64_t offset = 0, length = 0; ///< bytes within the file
  int64_t first = 0, count = 0;    ///< elements of the flattened tensor
  uint64_t xxh3 = 0;
};

struct CkptTensorInfo {
  std::string name, kind, dtype;
  std::vector<int64_t> shape;
  std::vector<CkptSlice> slices;
  /// The same tensor as later pipeline stages hold it (a tied weight):
  /// checked by verify, never read.
  std::vector<CkptSlice> copies;
  int64_t numElements() const;
  unsigned elementBytes() const;
};

struct CkptFileInfo {
  std::string name;
  int rank = 0, stage = 0;
  uint64_t size = 0;
  uint64_t headerXxh3 = 0;
};

/// A complete checkpoint as its manifest describes it.
class CheckpointReader {
public:
  /// tag empty: the one `DIR/latest` names.
  static llvm::Expected<CheckpointReader> open(llvm::StringRef dir,
                                               llvm::StringRef tag = "");

  const CkptRunInfo &run() const { return runInfo; }
  llvm::StringRef tag() const { return tagName; }
  llvm::StringRef tagDir() const { return tagPath; }
  llvm::ArrayRef<CkptTensorInfo> tensors() const { return infos; }
  llvm::ArrayRef<CkptFileInfo> files() const { return fileInfos; }
  const CkptTensorInfo *find(llvm::StringRef name) const;
  std::string dsVersion;

  /// Elements [first, first + count) of the flattened tensor into `out`,
  /// from whichever slices hold them; every slice read is checksummed.
  llvm::Error read(const CkptTensorInfo &tensor, int64_t first, int64_t count,
                   void *out) const;

  /// Checks every file: size, header and every slice's checksum, and that
  /// the copies of a tensor several stages hold are equal. Reports all
  /// problems, one line each, naming the file and the tensor.
  llvm::Error verify() const;

private:
  std::string dirPath, tagName, tagPath;
  CkptRunInfo runInfo;
  std::vector<CkptTensorInfo> infos;
  std::vector<CkptFileInfo> fileInfos;
};

/// The tags in DIR (global_step<N> directories) in step order, whether each
/// is complete (has a manifest), and the tag `latest` names ("" if none).
struct CkptDirListing {
  struct Entry {
    std::string tag;
    int64_t step;
    bool complete;
  };
  std::vector<Entry> tags;
  std::string latest;
};
llvm::Expected<CkptDirListing> listCheckpoints(llvm::StringRef dir);

/// Streams the parameters (and with `withState` the optimizer state too) of
/// a checkpoint into one safetensors file, one tensor in memory at a time.
/// toF32 converts 16-bit floats to F32. Returns the largest buffer held.
llvm::Expected<int64_t> exportSafeTensors(const CheckpointReader &ckpt,
                                          llvm::StringRef out, bool toF32,
                                          bool withState);

/// Test hook: DS_CKPT_CRASH_AT=<point> makes a saving process SIGKILL
/// itself at that point of the commit protocol (see docs/checkpoints.md).
void ckptCrashPoint(llvm::StringRef point);

} // namespace ds::driver

#endif // DS_DRIVER_CHECKPOINT_H
