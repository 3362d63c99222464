//===- MemoryFit.cpp - Does the step fit this machine's memory? -----------===//
#include "ds/Driver/MemoryFit.h"
#include "ds/Driver/StateSwap.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdlib>

using namespace ds::driver;

namespace {

/// MemAvailable from /proc/meminfo, in bytes; -1 where unreadable.
int64_t memAvailable() {
  auto file = llvm::MemoryBuffer::getFileAsStream("/proc/meminfo");
  if (!file)
    return -1;
  llvm::SmallVector<llvm::StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("MemAvailable:"))
      continue;
    int64_t kib = 0;
    if (!line.trim().split(' ').first.getAsInteger(10, kib))
      return kib * 1024;
  }
  return -1;
}

/// The cgroup v2 limit of this process's group; -1 when there is none.
int64_t cgroupLimit() {
  auto file = llvm::MemoryBuffer::getFileAsStream("/sys/fs/cgroup/memory.max");
  if (!file)
    return -1;
  int64_t bytes = 0;
  if ((*file)->getBuffer().trim().getAsInteger(10, bytes))
    return -1; // "max"
  return bytes;
}

std::string gib(int64_t bytes) {
  if (bytes < (int64_t(1) << 30))
    return llvm::formatv("{0:F1} MiB", double(bytes) / double(1 << 20)).str();
  return llvm::formatv("{0:F2} GiB", double(bytes) / double(1 << 30)).str();
}

} // namespace

RankMemory ds::driver::memoryPerRank(int64_t ranksHere) {
  RankMemory memory;
  memory.ranksHere = std::max<int64_t>(1, ranksHere);
  if (const char *forced = std::getenv("DS_MEMORY_BYTES")) {
    long long bytes = 0;
    if (!llvm::StringRef(forced).getAsInteger(10, bytes) && bytes > 0) {
      memory.bytes = bytes;
      memory.source = "DS_MEMORY_BYTES";
    }
    return memory;
  }
  int64_t available = memAvailable();
  int64_t limit = cgroupLimit();
  memory.source = "MemAvailable";
  if (limit > 0 && (available < 0 || limit < available)) {
    available = limit;
    memory.source = "the cgroup's memory.max";
  }
  if (available > 0)
    memory.bytes = available / memory.ranksHere;
  return memory;
}

int64_t ds::driver::residentPeakBytes(const StepManifest &manifest,
                                      const ::ds::config::Config &config) {
  if (manifest.plannedPeakBytes < 0)
    return -1;
  int64_t peak = manifest.plannedPeakBytes;
  const config::OffloadConfig &offload = config.zero.offloadOptimizer;
  if (offload.device != config::OffloadDevice::Nvme)
    return peak;
  // The NVMe swap keeps the Adam moments out of memory and streams them
  // through its staging instead (runtime/offload/swap.c): buffer_count
  // slots, no more than an update has chunks, each two chunks of at most
  // buffer_size elements, none larger than the moments of one kind.
  int64_t swapped = 0;
  for (size_t i = 0; i < manifest.args.size(); ++i)
    if (StateSwap::swaps(manifest, i))
      swapped += numElements(manifest.args[i].shape);
  int64_t perKind = swapped / 2, chunk = std::max<int64_t>(1, offload.bufferSize);
  int64_t slots =
      std::min(offload.bufferCount, (perKind + chunk - 1) / chunk);
  return peak - 4 * swapped + 2 * slots * std::min(chunk, perKind) * 4;
}

llvm::Error ds::driver::checkStepFits(const StepManifest &manifest,
                                      const ::ds::config::Config &config,
                                      const RankMemory &memory) {
  int64_t peak = residentPeakBytes(manifest, config);
  if (peak < 0 || memory.bytes < 0 || peak <= memory.bytes)
    return llvm::Error::success();
  std::vector<std::string> knobs;
  if (config.zero.stage < 3)
    knobs.push_back(llvm::formatv("zero_optimization.stage 3 (now {0}): "
                                  "parameters, gradients and optimizer "
                                  "states sharded over the data-parallel "
                                  "ranks (now {1})",
                                  config.zero.stage, config.dpSize)
                        .str());
  else
    knobs.push_back(llvm::formatv("more data-parallel ranks (now {0}) over "
                                  "which ZeRO-3 shards the model states",
                                  config.dpSize)
                        .str());
  // Where ds-schedule-comm overlaps communication, two more budgets of
  // DeepSpeed's shape what one rank holds at once.
  bool scheduled = (config.zero.overlapComm || config.compile.deepcompile) &&
                   config.dpSize > 1;
  if (scheduled && config.zero.stage == 3)
    knobs.push_back(llvm::formatv("a smaller "
                                  "zero_optimization.stage3_max_live_"
                                  "parameters (now {0}: the gathered "
                                  "parameters held at once)",
                                  config.zero.maxLiveParameters)
                        .str());
  if (scheduled && config.zero.stage >= 2)
    knobs.push_back(llvm::formatv("a smaller zero_optimization.reduce_bucket_"
                                  "size (now {0}: the whole gradients "
                                  "reductions in flight hold)",
                                  config.zero.reduceBucketSize)
                        .str());
  if (config.trainMicroBatchSizePerGpu > 1)
    knobs.push_back(llvm::formatv("a smaller train_micro_batch_size_per_gpu "
                                  "(now {0}; gradient_accumulation_steps "
                                  "keeps the batch)",
                                  config.trainMicroBatchSizePerGpu)
                        .str());
  if (config.pipeline.activationCheckpointInterval == 0)
    knobs.push_back("pipeline.activation_checkpoint_interval 1 (each "
                    "layer's activations recomputed in the backward)");
  knobs.push_back(llvm::formatv("more pipeline stages (pipeline.stages, now "
                                "{0})",
                                config.pipeline.stages)
                      .str());
  std::string shared =
      // DS_MEMORY_BYTES is a rank's memory already.
      memory.ranksHere > 1 && memory.source != "DS_MEMORY_BYTES"
          ? llvm::formatv(" shared by {0} ranks", memory.ranksHere).str()
          : std::string();
  return llvm::createStringError(llvm::formatv(
      "the step needs {0} per rank (ds-plan-memory's planned peak) but a "
      "rank here has {1} ({2}{3}); to fit: {4}; or a machine with more "
      "memory (DS_MEMORY_BYTES=N sets a rank's memory if {2} is wrong); "
      "ds-report --config C --model M --world-size {5} plans the job with "
      "each",
      gib(manifest.plannedPeakBytes), gib(memory.bytes), memory.source, shared,
      llvm::join(knobs, "; "), config.worldSize));
}
