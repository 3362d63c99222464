//===- Config.h - The typed ds_config.json ----------------------*- C++ -*-===//
//
// One resolved view of a DeepSpeed-style ds_config.json, shared by every ds
// tool. Parsing fills every default, derives the batch triangle for a given
// world size and checks the sections against each other, so a tool that holds
// a Config never has to ask "was this set?" again. docs/config.md lists every
// key, its default and where ds differs from DeepSpeed.
//
//===----------------------------------------------------------------------===//

#ifndef DS_CONFIG_CONFIG_H
#define DS_CONFIG_CONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ds::config {

/// What the config is resolved against: the batch triangle and the
/// data-parallel size depend on how many ranks run.
struct ResolveOptions {
  int64_t worldSize = 1;
};

/// zero_optimization. Sizes are element counts, as in DeepSpeed.
/// Where ZeRO-Offload keeps a state (DeepSpeed's offload_optimizer /
/// offload_param "device"). On a CPU host every state already lives in host
/// memory and the optimizer already runs as libdsrt's CPU kernel, so "cpu"
/// trains exactly as "none"; "nvme" keeps the optimizer's moments in files
/// under nvmePath between steps (docs/offload.md).
enum class OffloadDevice { None, Cpu, Nvme };

struct OffloadConfig {
  OffloadDevice device = OffloadDevice::None;
  /// Page-locked host buffers for the copies to and from a GPU.
  bool pinMemory = false;
  /// NVMe: the directory of the state files (one folder per rank inside).
  std::string nvmePath;
  /// NVMe: staging buffers, and elements per buffer (one chunk of the
  /// update's state). Smaller than DeepSpeed's parameter-offload 1e8: the
  /// staging is memory the swap adds back, 2 x 4 x 4 MiB by default.
  int64_t bufferCount = 4;
  int64_t bufferSize = 1048576;
  bool enabled() const { return device != OffloadDevice::None; }
};

/// aio: the NVMe swap's I/O (read only with an NVMe offload). io_uring
/// takes block_size as the largest request and queue_depth as the ring's
/// size and the requests in flight; thread_count and overlap_events, which
/// size and schedule libaio's submitting threads, have nothing to act on.
struct AioConfig {
  int64_t blockSize = 1048576;
  int64_t queueDepth = 8;
  int64_t threadCount = 1;
  bool singleSubmit = false;
  bool overlapEvents = true;
};

struct ZeroConfig {
  int64_t stage = 0;
  OffloadConfig offloadOptimizer, offloadParam;
  bool contiguousGradients = true;
  bool reduceScatter = true;
  int64_t reduceBucketSize = 500000000;
  bool allgatherPartitions = true;
  int64_t allgatherBucketSize = 500000000;
  /// DeepSpeed's default depends on the stage: true for 3, false otherwise.
  bool overlapComm = false;
  int64_t prefetchBucketSize = 50000000;
  int64_t paramPersistenceThreshold = 100000;
  int64_t maxLiveParameters = 1000000000;
  int64_t maxReuseDistance = 1000000000;
};

/// compile: DeepSpeed's DeepCompile section. ds is a compiler either way;
/// `deepcompile` turns on its communication schedule (ds-schedule-comm).
struct CompileConfig {
  bool deepcompile = false;
  /// debug_log: the schedule prints its plan while compiling.
  bool debugLog = false;
};

/// kernels: ds's own section (DeepSpeed has no such key). Past these sizes
/// attention and the LM head's loss are lowered in blocks, so the step's
/// workspace grows linearly in the sequence and not with the vocabulary.
struct KernelsConfig {
  /// Keys per block of the online-softmax attention (0: never blocked).
  int64_t attentionBlockSize = 256;
  /// Attention over more keys than this is blocked.
  int64_t attentionBlockThreshold = 1024;
  /// Rows of logits per chunk of the fused LM head and cross-entropy.
  int64_t lossChunkRows = 256;
  /// The LM head and loss are fused when the logits would hold more
  /// elements than this (0: always).
  int64_t lossChunkThreshold = int64_t(1) << 25;
};

/// fp16 mixed precision with (by default dynamic) loss scaling.
struct Fp16Config {
  bool enabled = false;
  /// 0 selects dynamic loss scaling; any other value is a static scale.
  double lossScale = 0;
  int64_t initialScalePower = 16;
  int64_t lossScaleWindow = 1000;
  int64_t hysteresis = 2;
  bool consecutiveHysteresis = false;
  double minLossScale = 1;
};

/// csv_monitor: one CSV file per metric under output_path/job_name.
struct CsvMonitorConfig {
  bool enabled = false;
  std::string outputPath;
  std::string jobName = "DeepSpeedJobName";
};

struct Bf16Config {
  bool enabled = false;
};

enum class OptimizerType { Adam, AdamW, Lamb, SGD };

/// The optimizer and its parameters. One flat struct: each type reads the
/// fields DeepSpeed gives it and toJson prints only those.
struct OptimizerConfig {
  OptimizerType type = OptimizerType::Adam;
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weightDecay = 0;
  bool biasCorrection = true;
  /// Adam: decoupled weight decay (AdamW) unless set false. Always true for
  /// AdamW.
  bool adamWMode = true;
  // Lamb: bounds of the trust ratio.
  double maxCoeff = 10.0;
  double minCoeff = 0.01;
  // SGD.
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
};

enum class SchedulerType {
  None,
  WarmupLR,
  WarmupDecayLR,
  WarmupCosineLR,
  OneCycle
};

enum class WarmupType { Log, Linear };

struct SchedulerConfig {
  SchedulerType type = SchedulerType::None;
  // WarmupLR / WarmupDecayLR.
  double warmupMinLr = 0;
  /// Defaults to the optimizer's lr.
  double warmupMaxLr = 1e-3;
  int64_t warmupNumSteps = 1000;
  WarmupType warmupType = WarmupType::Log;
  /// WarmupDecayLR and WarmupCosineLR; required there.
  int64_t totalNumSteps = 0;
  // WarmupCosineLR.
  double warmupMinRatio = 0;
  double cosMinRatio = 0.0001;
  // OneCycle. cycle_min_lr and cycle_max_lr are required.
  double cycleMinLr = 0;
  double cycleMaxLr = 0;
  double decayLrRate = 0;
  int64_t cycleFirstStepSize = 2000;
  /// Defaults to cycleFirstStepSize.
  int64_t cycleSecondStepSize = 2000;
  int64_t cycleFirstStairCount = 0;
  /// Defaults to cycleFirstStairCount.
  int64_t cycleSecondStairCount = 0;
  int64_t decayStepSize = 0;
  bool cycleMomentum = true;
  double cycleMinMom = 0.8;
  double cycleMaxMom = 0.9;
  double decayMomRate = 0;
};

/// How layers are cut into stages: DeepSpeed's three methods, and "flops"
/// (the compiler's per-layer FLOP count, minimizing the slowest stage).
enum class PartitionMethod { Parameters, Uniform, Type, Flops };

/// The order in which a stage runs its micro-batches' forwards and backwards.
enum class PipelineSchedule { OneFOneB, GPipe, Interleaved };

struct PipelineConfig {
  int64_t stages = 1;
  PartitionMethod partitionMethod = PartitionMethod::Parameters;
  /// The regex of "type:REGEX", as DeepSpeed uses it: lower-cased with the
  /// rest of the method string, cut at a second colon, and matched
  /// case-insensitively anywhere in the layer type; empty otherwise.
  std::string partitionTypeRegex;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// Model chunks per stage; above 1 only with the interleaved schedule.
  int64_t virtualStages = 1;
  int64_t activationCheckpointInterval = 0;
  /// Micro-batches per step; always gradient_accumulation_steps.
  int64_t microBatches = 1;
};

struct MoEConfig {
  /// True when the config has a "moe" section.
  bool enabled = false;
  int64_t numExperts = 1;
  int64_t epSize = 1;
  int64_t k = 1;
  double capacityFactor = 1.0;
  double evalCapacityFactor = 1.0;
  int64_t minCapacity = 4;
  bool dropTokens = true;
  double auxLossCoef = 0.01;
};

struct TensorParallelConfig {
  int64_t autotpSize = 1;
  /// Megatron sequence parallelism: layer norms, dropout and residual adds
  /// on 1/autotpSize of the sequence.
  bool sequenceParallel = false;
};

/// A fully resolved ds_config.json.
struct Config {
  // The batch triangle, always all three resolved:
  // trainBatchSize = microBatchPerGpu * gradAccumSteps * dpSize.
  int64_t trainBatchSize = 0;
  int64_t trainMicroBatchSizePerGpu = 0;
  int64_t gradientAccumulationSteps = 1;
  int64_t worldSize = 1;
  /// worldSize / (pipeline stages * tensor-parallel size * sequence-parallel
  /// size).
  int64_t dpSize = 1;
  /// sequence_parallel_size: DeepSpeed-Ulysses' group, inside dp and
  /// outside tp.
  int64_t sequenceParallelSize = 1;
  /// The ranks of one pipeline stage, consecutive (the grid puts pp
  /// outermost): dp x tp x sp.
  int64_t stageRanks() const {
    return dpSize * tensorParallel.autotpSize * sequenceParallelSize;
  }

  /// DeepSpeed's default since 0.19.3; 0 turns clipping off.
  double gradientClipping = 1.0;
  /// Divide gradients by the data-parallel size before the reduction instead
  /// of after it.
  bool prescaleGradients = false;
  /// Without prescaling: divide by this before the reduction and by
  /// dp_size / factor after it (1: all of the division after).
  double gradientPredivideFactor = 1.0;
  int64_t stepsPerPrint = 10;
  bool wallClockBreakdown = false;
  /// csv_monitor: DeepSpeed's CSV files. Not in toJson: where metrics go
  /// does not change the compiled step.
  CsvMonitorConfig csvMonitor;

  ZeroConfig zero;
  Fp16Config fp16;
  Bf16Config bf16;
  OptimizerConfig optimizer;
  /// False when the config has no optimizer section (Adam defaults apply).
  bool optimizerGiven = false;
  SchedulerConfig scheduler;
  PipelineConfig pipeline;
  MoEConfig moe;
  TensorParallelConfig tensorParallel;
  CompileConfig compile;
  KernelsConfig kernels;
  AioConfig aio;

  /// Key paths that were accepted but do not change training (monitoring,
  /// profiling, switched-off features), sorted.
  std::vector<std::string> ignoredKeys;
};

/// Parses and resolves ds_config.json text. Never throws: every problem comes
/// back as one error whose message names the key path, e.g.
/// `zero_optimization.stgae: unknown key; did you mean "stage"?`.
llvm::Expected<Config> parseConfig(llvm::StringRef jsonText,
                                   const ResolveOptions &options);

/// Reads the file at `path` and parses it; a missing or unreadable file is an
/// error naming the path.
llvm::Expected<Config> loadConfig(llvm::StringRef path,
                                  const ResolveOptions &options);

/// The file at `path` as JSON, read as loadConfig reads it (hjson comments
/// and trailing commas allowed) but not resolved: for a caller that
/// changes a key and resolves the text again with parseConfig.
llvm::Expected<nlohmann::json> readConfigJson(llvm::StringRef path);

/// The resolved config as JSON: every default filled in, the derived batch
/// values, world_size, dp_size and ignored_keys.
nlohmann::json toJson(const Config &config);

/// A few human-readable lines (what ds-report prints without --json).
std::string summarize(const Config &config);

llvm::StringRef stringifyOptimizerType(OptimizerType type);
llvm::StringRef stringifySchedulerType(SchedulerType type);
llvm::StringRef stringifyWarmupType(WarmupType type);
/// Sets `pipeline`'s partition method from a `partition_method` string;
/// the error names what is wrong (without the key path).
llvm::Error parsePartitionMethod(llvm::StringRef method,
                                 PipelineConfig &pipeline);
/// "parameters", "uniform", "flops" or "type:REGEX".
std::string stringifyPartitionMethod(const PipelineConfig &pipeline);
/// "1f1b", "gpipe" or "interleaved".
llvm::StringRef stringifyPipelineSchedule(PipelineSchedule schedule);

} // namespace ds::config

#endif // DS_CONFIG_CONFIG_H
