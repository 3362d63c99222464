//===- Config.cpp - Parse and resolve ds_config.json ----------------------===//
//
// Reading is strict where DeepSpeed is lenient: an unknown key, a wrong type
// or a value out of range is an error naming the key path, because a silently
// ignored typo in a training config costs a whole run. Internally errors are
// thrown as ConfigError and turned into llvm::Error at the API boundary, which
// keeps each check a single line.
//
//===----------------------------------------------------------------------===//

#include "ds/Config/Config.h"
#include "ds/Support/StrictJson.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

using json = nlohmann::json;
using llvm::StringRef;

namespace ds::config {
namespace {

struct ConfigError {
  std::string message;
  /// The problem is an "auto" placeholder (see failAuto).
  bool isAuto = false;
};

[[noreturn]] void fail(const std::string &message) {
  throw ConfigError{message};
}

std::string keyPath(StringRef path, StringRef key) {
  if (path.empty())
    return key.str();
  return (path + "." + key).str();
}

std::string describe(const json &value) { return support::describeJson(value); }

/// Shortest round-trip spelling of a number, as JSON prints it.
std::string num(double v) { return json(v).dump(); }
std::string num(int64_t v) { return std::to_string(v); }

/// Range bounds read better without a trailing ".0".
std::string bound(double v) {
  if (v == std::trunc(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<int64_t>(v));
  return num(v);
}
std::string bound(int64_t v) { return num(v); }

std::optional<std::string> closest(StringRef key,
                                   llvm::ArrayRef<StringRef> candidates) {
  return support::closestKey(key, candidates);
}

[[noreturn]] void failUnknownKey(const std::string &path, StringRef key,
                                 llvm::ArrayRef<StringRef> candidates) {
  std::string message = path + ": unknown key";
  if (auto guess = closest(key, candidates))
    message += "; did you mean \"" + *guess + "\"?";
  fail(message);
}

/// A DeepSpeed key ds does not implement. Accepted only when its value leaves
/// the feature off.
struct Unsupported {
  StringRef key;
  StringRef what;
  /// A value that also means "off" besides false/null/{} and
  /// {"enabled": false}/{"device": "none"}; null when there is none.
  json offValue = nullptr;
};

bool isOff(const json &value, const json &offValue) {
  if (value.is_null() || value == false || value == json::object())
    return true;
  if (!offValue.is_null() && value == offValue)
    return true;
  if (value.is_object()) {
    auto enabled = value.find("enabled");
    if (enabled != value.end() && *enabled == false)
      return true;
    auto device = value.find("device");
    if (device != value.end() && *device == "none")
      return true;
  }
  return false;
}

/// The keys one JSON object may hold.
struct KeySet {
  /// Keys ds reads.
  std::vector<StringRef> known;
  /// DeepSpeed keys that do not change training; recorded in ignored_keys.
  std::vector<StringRef> ignored;
  std::vector<Unsupported> unsupported;
  /// DeepSpeed keys that belong in another section: key, where DeepSpeed
  /// reads it.
  std::vector<std::pair<StringRef, StringRef>> misplaced = {};
};

/// Reads one JSON object (a section) with its key path for messages.
class Section {
public:
  Section(const json &object, std::string path,
          std::vector<std::string> &ignoredKeys)
      : object(object), path(std::move(path)), ignoredKeys(ignoredKeys) {}

  const std::string &getPath() const { return path; }
  std::string pathOf(StringRef key) const { return keyPath(path, key); }
  bool has(StringRef key) const { return object.contains(key.str()); }
  const json &at(StringRef key) const { return object.at(key.str()); }

  /// Rejects unknown and unsupported keys, records ignored ones.
  /// `owner` and `foreign` serve typed params (optimizer, scheduler): a key
  /// that another type takes gets a message listing this type's keys.
  void checkKeys(const KeySet &keys, StringRef owner = "",
                 llvm::ArrayRef<StringRef> foreign = {}) const {
    for (auto it = object.begin(); it != object.end(); ++it) {
      StringRef key = it.key();
      if (llvm::is_contained(keys.known, key))
        continue;
      if (llvm::is_contained(keys.ignored, key)) {
        ignoredKeys.push_back(pathOf(key));
        continue;
      }
      auto unsupported = llvm::find_if(
          keys.unsupported, [&](const Unsupported &u) { return u.key == key; });
      if (unsupported != keys.unsupported.end()) {
        if (isOff(it.value(), unsupported->offValue)) {
          ignoredKeys.push_back(pathOf(key));
          continue;
        }
        fail(pathOf(key) + ": ds does not support " + unsupported->what.str() +
             "; remove the key or switch it off");
      }
      auto misplaced = llvm::find_if(
          keys.misplaced, [&](const auto &m) { return m.first == key; });
      if (misplaced != keys.misplaced.end())
        fail(pathOf(key) + ": unknown key here; DeepSpeed reads it as " +
             misplaced->second.str());
      if (llvm::is_contained(foreign, key))
        fail(pathOf(key) + ": " + owner.str() + " has no parameter \"" +
             key.str() + "\"; its parameters are " +
             llvm::join(keys.known, ", "));
      std::vector<StringRef> candidates = keys.known;
      llvm::append_range(candidates, keys.ignored);
      failUnknownKey(pathOf(key), key, candidates);
    }
  }

  /// The sub-object at `key`, or nullopt when absent.
  std::optional<Section> section(StringRef key) const {
    if (!has(key))
      return std::nullopt;
    const json &value = at(key);
    if (!value.is_object())
      failType(pathOf(key), "an object", value);
    return Section(value, pathOf(key), ignoredKeys);
  }

  std::optional<int64_t> getInt(StringRef key) const {
    if (!has(key))
      return std::nullopt;
    return toInt(pathOf(key), at(key));
  }
  std::optional<double> getNumber(StringRef key) const {
    if (!has(key))
      return std::nullopt;
    return toNumber(pathOf(key), at(key));
  }
  std::optional<bool> getBool(StringRef key) const {
    if (!has(key))
      return std::nullopt;
    const json &value = at(key);
    if (!value.is_boolean())
      failType(pathOf(key), "a boolean", value);
    return value.get<bool>();
  }
  std::optional<std::string> getString(StringRef key) const {
    if (!has(key))
      return std::nullopt;
    const json &value = at(key);
    if (!value.is_string())
      failType(pathOf(key), "a string", value);
    return value.get<std::string>();
  }

  void read(StringRef key, int64_t &out) const {
    if (auto v = getInt(key))
      out = *v;
  }
  void read(StringRef key, double &out) const {
    if (auto v = getNumber(key))
      out = *v;
  }
  void read(StringRef key, bool &out) const {
    if (auto v = getBool(key))
      out = *v;
  }

  static int64_t toInt(const std::string &path, const json &value) {
    if (value.is_number_integer()) {
      if (value.is_number_unsigned() &&
          value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(path + ": " + value.dump() + " does not fit in 64 bits");
      return value.get<int64_t>();
    }
    // DeepSpeed configs write sizes as 5e8; a float with no fraction is fine.
    if (value.is_number_float()) {
      double d = value.get<double>();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18)
        return static_cast<int64_t>(d);
    }
    failType(path, "an integer", value);
  }

  static double toNumber(const std::string &path, const json &value) {
    if (value.is_number())
      return value.get<double>();
    failType(path, "a number", value);
  }

  [[noreturn]] static void failType(const std::string &path, StringRef expected,
                                    const json &value) {
    failAuto(path, expected, value);
    fail(path + ": expected " + expected.str() + ", got " + describe(value));
  }

  /// The Hugging Face Trainer fills "auto" in before DeepSpeed sees it; ds
  /// has no trainer to do that.
  static void failAuto(const std::string &path, StringRef expected,
                       const json &value) {
    if (value == "auto")
      throw ConfigError{path +
                            ": \"auto\" is filled in by the Hugging Face "
                            "Trainer, not by ds; write " +
                            expected.str() + " here",
                        /*isAuto=*/true};
  }

private:
  const json &object;
  std::string path;
  std::vector<std::string> &ignoredKeys;
};

//===----------------------------------------------------------------------===//
// Range checks
//===----------------------------------------------------------------------===//

template <typename T>
void requireAtLeast(const std::string &path, T value, T min) {
  if (value < min)
    fail(path + ": must be >= " + bound(min) + ", got " + num(value));
}

template <typename T>
void requireInRange(const std::string &path, T value, T min, T max) {
  if (value < min || value > max)
    fail(path + ": must be in [" + bound(min) + ", " + bound(max) + "], got " +
         num(value));
}

void requirePositive(const std::string &path, double value) {
  if (!(value > 0))
    fail(path + ": must be > 0, got " + num(value));
}

/// [0, 1): a moving-average coefficient of exactly 1 never forgets.
void requireUnitOpen(const std::string &path, double value) {
  if (value < 0 || value >= 1)
    fail(path + ": must be in [0, 1), got " + num(value));
}

int64_t mulChecked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail("batch sizes overflow 64 bits: " + num(a) + " x " + num(b));
  return r;
}

//===----------------------------------------------------------------------===//
// Sections
//===----------------------------------------------------------------------===//

void readCsvMonitor(const Section &s, CsvMonitorConfig &csv) {
  static const KeySet keys = {{"enabled", "output_path", "job_name"}, {}, {}};
  s.checkKeys(keys);
  s.read("enabled", csv.enabled);
  if (auto v = s.getString("output_path"))
    csv.outputPath = *v;
  if (auto v = s.getString("job_name"))
    csv.jobName = *v;
  if (csv.jobName.empty())
    fail(s.pathOf("job_name") + ": must not be empty (it names the folder "
                                "under output_path that holds the files)");
}

/// DeepSpeed's other monitors are off unless "enabled" is true; ds writes
/// only csv_monitor's files.
void refuseOtherMonitors(const Section &top) {
  static const std::pair<StringRef, StringRef> monitors[] = {
      {"tensorboard", "TensorBoard"},
      {"wandb", "Weights & Biases"},
      {"comet", "Comet"}};
  for (auto [key, name] : monitors)
    if (top.has(key) && top.at(key).is_object())
      if (top.section(key)->getBool("enabled").value_or(false))
        fail(key.str() + ": ds does not support the " + name.str() +
             " monitor; use csv_monitor (DeepSpeed's CSV files) or --metrics "
             "(JSONL) instead, or set " +
             key.str() + ".enabled to false");
}

const KeySet &topLevelKeys() {
  static const KeySet keys = {
      {"train_batch_size", "train_micro_batch_size_per_gpu",
       "gradient_accumulation_steps", "gradient_clipping", "steps_per_print",
       "wall_clock_breakdown", "zero_optimization", "fp16", "bf16", "bfloat16",
       "optimizer", "scheduler", "pipeline", "moe", "tensor_parallel",
       "prescale_gradients", "gradient_predivide_factor",
       "gradient_allreduce_op", "allgather_size", "csv_monitor", "compile",
       "sequence_parallel_size", "kernels", "aio",
       // Read only to check its keys (readActivationCheckpointing).
       "activation_checkpointing"},
      // Monitoring, profiling, logging and checkpoint-file options: they
      // change what is reported or how files are written, never the math.
      // tensorboard, wandb and comet only while not enabled
      // (refuseOtherMonitors).
      {"tensorboard", "wandb", "comet", "monitor_config", "comms_logger",
       "flops_profiler", "zero_allow_untested_optimizer",
       "zero_force_ds_cpu_optimizer", "memory_breakdown", "dump_state",
       "timers", "autotuning", "checkpoint", "dataloader_drop_last",
       "vocabulary_size", "use_node_local_storage"},
      {{"amp", "Apex AMP (use fp16 or bf16)"},
       {"sparse_gradients", "sparse (CSR) gradients"},
       {"disable_allgather", "disable_allgather"},
       // ds reduces gradients in fp32 (they are f32 by then, even in mixed
       // precision) and accumulates them in fp32: asking for exactly that
       // is fine.
       {"fp32_allreduce", "fp32_allreduce", true},
       {"communication_data_type",
        "a 16-bit communication data type (ds communicates gradients in "
        "fp32)",
        "fp32"},
       {"seq_parallel_communication_data_type",
        "a separate sequence-parallel communication data type"},
       {"data_types",
        "a 16-bit gradient-accumulation data type (ds accumulates in fp32)",
        json{{"grad_accum_dtype", "fp32"}}},
       {"sparse_attention", "sparse attention"},
       {"curriculum_learning", "curriculum learning"},
       {"data_efficiency", "data efficiency (curriculum, data routing)"},
       {"compression_training", "compression training"},
       {"elasticity", "elastic training"},
       {"quantize_training", "quantized training"},
       {"progressive_layer_drop", "progressive layer drop"},
       {"eigenvalue", "eigenvalue computation"},
       {"hybrid_engine", "the hybrid (RLHF) engine"},
       {"nebula", "Nebula checkpointing"},
       {"weight_quantization", "weight quantization"},
       {"torch_autocast", "torch autocast"}},
      {{"zenflow", "zero_optimization.zenflow"}}};
  return keys;
}

/// One of offload_optimizer / offload_param (DeepSpeed's
/// DeepSpeedZeroOffloadOptimizerConfig / ...ParamConfig).
OffloadConfig readOffloadSection(const Section &s, bool optimizer) {
  // The NVMe tier's knobs say nothing when the device is the CPU, as in
  // DeepSpeed; with "nvme" ds reads the ones it acts on.
  bool nvme = s.has("device") && s.at("device") == "nvme";
  KeySet keys = {{"device", "pin_memory"},
                 {"max_in_cpu", "pipeline", "pipeline_read", "pipeline_write",
                  "fast_init"},
                 {}};
  for (StringRef key : {"nvme_path", "buffer_count", "buffer_size"})
    (nvme ? keys.known : keys.ignored).push_back(key);
  if (optimizer)
    keys.known.push_back("ratio");
  s.checkKeys(keys);
  OffloadConfig offload;
  if (s.has("device")) {
    const json &d = s.at("device");
    if (!d.is_string() || (d != "none" && d != "cpu" && d != "nvme"))
      fail(s.pathOf("device") + ": expected \"none\", \"cpu\" or \"nvme\", "
                                "got " +
           d.dump());
    if (d == "nvme" && !optimizer)
      fail(s.pathOf("device") +
           ": ds does not support parameter offload to NVMe (ZeRO-Infinity) "
           "yet; use \"cpu\" (the parameters stay in host memory) or "
           "\"none\"; offload_optimizer takes \"nvme\"");
    if (d == "cpu")
      offload.device = OffloadDevice::Cpu;
    if (d == "nvme")
      offload.device = OffloadDevice::Nvme;
  }
  s.read("pin_memory", offload.pinMemory);
  if (nvme) {
    auto path = s.getString("nvme_path");
    if (!path || path->empty())
      fail(s.pathOf("nvme_path") +
           ": \"device\": \"nvme\" needs the directory the optimizer "
           "state is written to; set nvme_path");
    offload.nvmePath = *path;
    // The defaults are in range: checking them too costs nothing.
    offload.bufferCount =
        s.getInt("buffer_count").value_or(offload.bufferCount);
    requireInRange<int64_t>(s.pathOf("buffer_count"), offload.bufferCount, 2,
                            64);
    offload.bufferSize = s.getInt("buffer_size").value_or(offload.bufferSize);
    requireAtLeast<int64_t>(s.pathOf("buffer_size"), offload.bufferSize, 1);
  }
  if (optimizer && s.has("ratio")) {
    double ratio = s.at("ratio").is_number() ? s.at("ratio").get<double>() : -1;
    if (ratio != 1.0)
      fail(s.pathOf("ratio") + ": partial offload (ratio " +
           s.at("ratio").dump() +
           ") keeps part of the optimizer on the GPU; ds offloads all of it, "
           "so remove ratio or set it to 1.0");
  }
  return offload;
}

/// aio (DeepSpeed's AIO config), the NVMe swap's I/O.
void readAio(const Section &s, AioConfig &aio) {
  static const KeySet keys = {{"block_size", "queue_depth", "thread_count",
                               "intra_op_parallelism", "single_submit",
                               "overlap_events"},
                              {},
                              {{"use_gds", "GPUDirect Storage"}}};
  s.checkKeys(keys);
  if (auto v = s.getInt("block_size")) {
    if (*v < 4096 || *v % 4096)
      fail(s.pathOf("block_size") + ": " + num(*v) +
           " is not a positive multiple of 4096 bytes (the alignment of "
           "direct I/O); use e.g. 1048576");
    aio.blockSize = *v;
  }
  if (auto v = s.getInt("queue_depth")) {
    requireInRange<int64_t>(s.pathOf("queue_depth"), *v, 1, 4096);
    aio.queueDepth = *v;
  }
  for (StringRef key : {"thread_count", "intra_op_parallelism"})
    if (auto v = s.getInt(key)) {
      requireAtLeast<int64_t>(s.pathOf(key), *v, 1);
      aio.threadCount = *v;
    }
  s.read("single_submit", aio.singleSubmit);
  s.read("overlap_events", aio.overlapEvents);
}

/// offload_optimizer / offload_param, and DeepSpeed's older booleans for
/// the same (cpu_offload, cpu_offload_param, cpu_offload_use_pin_memory).
void readOffload(const Section &s, ZeroConfig &zero) {
  // null leaves the feature off, as in DeepSpeed.
  auto section = [&](StringRef key) -> std::optional<Section> {
    if (s.has(key) && s.at(key).is_null())
      return std::nullopt;
    return s.section(key);
  };
  if (auto o = section("offload_optimizer"))
    zero.offloadOptimizer = readOffloadSection(*o, /*optimizer=*/true);
  if (auto o = section("offload_param"))
    zero.offloadParam = readOffloadSection(*o, /*optimizer=*/false);
  bool pin = false;
  s.read("cpu_offload_use_pin_memory", pin);
  auto legacy = [&](StringRef key, StringRef modern, OffloadConfig &out) {
    bool on = false;
    s.read(key, on);
    if (!on)
      return;
    if (s.has(modern))
      fail(s.pathOf(key) + ": same setting as " + s.pathOf(modern) +
           "; give only one");
    out.device = OffloadDevice::Cpu;
    out.pinMemory = pin;
  };
  legacy("cpu_offload", "offload_optimizer", zero.offloadOptimizer);
  legacy("cpu_offload_param", "offload_param", zero.offloadParam);
}

void readZero(const Section &s, ZeroConfig &zero) {
  static const KeySet keys = {
      {"stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size",
       "allgather_partitions", "allgather_bucket_size", "overlap_comm",
       "stage3_prefetch_bucket_size", "prefetch_bucket_size",
       "stage3_param_persistence_threshold", "param_persistence_threshold",
       "stage3_max_live_parameters", "max_live_parameters",
       "stage3_max_reuse_distance", "max_reuse_distance", "offload_optimizer",
       "offload_param", "cpu_offload", "cpu_offload_param",
       "cpu_offload_use_pin_memory"},
      // Performance and checkpoint-format knobs: same training math.
      {"load_from_fp32_weights", "elastic_checkpoint", "sub_group_size",
       "ignore_unused_parameters", "round_robin_gradients",
       "stage3_gather_16bit_weights_on_model_save",
       "gather_16bit_weights_on_model_save",
       "stage3_gather_fp16_weights_on_model_save", "memory_efficient_linear",
       "use_multi_rank_bucket_allreduce", "log_trace_cache_warnings",
       "model_persistence_threshold", "stage3_model_persistence_threshold",
       // All-reduce of zero-padded chunks or all-gather: the same values.
       "stage3_use_all_reduce_for_fetch_params",
       "use_all_reduce_for_fetch_params", "stage3_allgather_sequential",
       "allgather_sequential", "stage3_module_granularity_threshold",
       "module_granularity_threshold", "leaf_module", "override_module_apply",
       "pipeline_loading_checkpoint", "save_muon_momentum_buffer_in_memory",
       "enable_sanity_checks"},
      {{"zero_hpz_partition_size", "hierarchical partitioning (ZeRO++ hpZ)", 1},
       {"zero_quantized_weights", "quantized weights (ZeRO++ qwZ)"},
       {"zero_quantized_nontrainable_weights", "quantized weights"},
       {"zero_quantized_gradients", "quantized gradients (ZeRO++ qgZ)"},
       {"mics_shard_size", "MiCS sharding", -1},
       {"mics_hierarchical_params_gather", "MiCS hierarchical gather"},
       {"legacy_stage1", "the legacy stage 1 implementation"},
       {"zenflow", "ZenFlow (stall-free offloaded optimizer steps)"},
       {"zeropp_loco_param", "LoCo error feedback (ZeRO++ qgZ)"}}};
  s.checkKeys(keys);

  if (auto stage = s.getInt("stage")) {
    requireInRange<int64_t>(s.pathOf("stage"), *stage, 0, 3);
    zero.stage = *stage;
  }
  s.read("contiguous_gradients", zero.contiguousGradients);
  s.read("reduce_scatter", zero.reduceScatter);
  s.read("allgather_partitions", zero.allgatherPartitions);
  // DeepSpeed turns overlap on by default only where it pays: stage 3.
  zero.overlapComm = zero.stage == 3;
  s.read("overlap_comm", zero.overlapComm);

  auto readSize = [&](StringRef key, int64_t &out) {
    if (auto v = s.getInt(key)) {
      requireAtLeast<int64_t>(s.pathOf(key), *v, 0);
      out = *v;
    }
  };
  readSize("reduce_bucket_size", zero.reduceBucketSize);
  readSize("allgather_bucket_size", zero.allgatherBucketSize);

  // DeepSpeed accepts the stage-3 names with and without the prefix.
  auto readStage3 = [&](StringRef name, int64_t &out) {
    std::string prefixed = ("stage3_" + name).str();
    if (s.has(prefixed) && s.has(name))
      fail(s.pathOf(name) + ": same setting as " + prefixed +
           "; give only one");
    readSize(prefixed, out);
    readSize(name, out);
  };
  readStage3("prefetch_bucket_size", zero.prefetchBucketSize);
  readStage3("param_persistence_threshold", zero.paramPersistenceThreshold);
  readStage3("max_live_parameters", zero.maxLiveParameters);
  readStage3("max_reuse_distance", zero.maxReuseDistance);
  readOffload(s, zero);
}

/// DeepSpeed's compile section (deepspeed/compile/config.py). ds compiles
/// every run; what DeepCompile adds on top is its communication schedule,
/// which `deepcompile` turns on. Its offloading and activation passes are
/// refused while on.
void readCompile(const Section &s, CompileConfig &compile) {
  static const KeySet keys = {
      {"deepcompile", "debug_log"},
      // How PyTorch inputs are kept and when a graph's buffers double up:
      // nothing ds compiles reads them.
      {"keep_int_input_tensors", "keep_all_input_tensors", "double_buffer",
       "free_activation_threshold", "offload_activation_pin_memory"},
      {{"free_activation", "freeing activations eagerly (free_activation)"},
       {"offload_activation", "activation offload (offload_activation)"},
       {"offload_opt_states", "optimizer-state offload (offload_opt_states)"},
       {"offload_parameters", "parameter offload (offload_parameters)"},
       {"symmetric_memory", "symmetric memory (symmetric_memory)"},
       {"sync_before_reduce", "synchronizing around collectives"},
       {"sync_after_reduce", "synchronizing around collectives"},
       {"sync_before_allgather", "synchronizing around collectives"},
       {"sync_after_allgather", "synchronizing around collectives"},
       {"passes", "DeepCompile's compiler passes (autosp, autotp, z1, z3)",
        json::array()}}};
  s.checkKeys(keys);
  s.read("deepcompile", compile.deepcompile);
  s.read("debug_log", compile.debugLog);
}

void readFp16(const Section &s, Fp16Config &fp16) {
  static const KeySet keys = {
      {"enabled", "loss_scale", "initial_scale_power", "loss_scale_window",
       "hysteresis", "consecutive_hysteresis", "min_loss_scale"},
      {},
      {{"auto_cast", "fp16 auto_cast"},
       {"fp16_master_weights_and_grads", "fp16 master weights and grads"}}};
  s.checkKeys(keys);
  s.read("enabled", fp16.enabled);
  if (auto v = s.getNumber("loss_scale")) {
    requireAtLeast<double>(s.pathOf("loss_scale"), *v, 0);
    fp16.lossScale = *v;
  }
  if (auto v = s.getInt("initial_scale_power")) {
    // 2^127 is the largest power of two a float holds.
    requireInRange<int64_t>(s.pathOf("initial_scale_power"), *v, 0, 127);
    fp16.initialScalePower = *v;
  }
  if (auto v = s.getInt("loss_scale_window")) {
    requireAtLeast<int64_t>(s.pathOf("loss_scale_window"), *v, 1);
    fp16.lossScaleWindow = *v;
  }
  if (auto v = s.getInt("hysteresis")) {
    requireAtLeast<int64_t>(s.pathOf("hysteresis"), *v, 1);
    fp16.hysteresis = *v;
  }
  s.read("consecutive_hysteresis", fp16.consecutiveHysteresis);
  if (auto v = s.getNumber("min_loss_scale")) {
    requirePositive(s.pathOf("min_loss_scale"), *v);
    fp16.minLossScale = *v;
  }
}

void readBf16(const Section &s, Bf16Config &bf16) {
  static const KeySet keys = {
      {"enabled", "check_grad_overflow"},
      // When the 16-bit gradient is added to the f32 one (during the backward
      // or after it), not what is added: ds adds each micro-batch's in f32.
      {"immediate_grad_update"},
      {{"bf16_master_weights_and_grads",
        "bf16 master weights and gradients (ds keeps both in f32)"},
       {"bf16_optimizer_states",
        "bf16 optimizer states (ds keeps them in f32)"}}};
  s.checkKeys(keys);
  s.read("enabled", bf16.enabled);
  // DeepSpeed's ZeRO optimizer skips a bf16 step whose gradients are not
  // finite; ds does not, and stops when the loss diverges. Either value is
  // accepted so that DeepSpeed's default (true) reads.
  (void)s.getBool("check_grad_overflow");
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

struct OptimizerKind {
  StringRef name;
  OptimizerType type;
  std::vector<StringRef> params;
};

const std::vector<OptimizerKind> &optimizerKinds() {
  static const std::vector<OptimizerKind> kinds = {
      {"Adam",
       OptimizerType::Adam,
       {"lr", "betas", "eps", "weight_decay", "bias_correction",
        "adam_w_mode"}},
      {"AdamW",
       OptimizerType::AdamW,
       {"lr", "betas", "eps", "weight_decay", "bias_correction",
        "adam_w_mode"}},
      {"Lamb",
       OptimizerType::Lamb,
       {"lr", "betas", "eps", "weight_decay", "bias_correction", "max_coeff",
        "min_coeff"}},
      {"SGD",
       OptimizerType::SGD,
       {"lr", "momentum", "dampening", "weight_decay", "nesterov"}}};
  return kinds;
}

void readOptimizer(const Section &s, OptimizerConfig &opt) {
  static const KeySet sectionKeys = {{"type", "params"}, {"legacy_fusion"}, {}};
  s.checkKeys(sectionKeys);

  auto typeName = s.getString("type");
  if (!typeName)
    fail(s.pathOf("type") + ": missing; one of Adam, AdamW, Lamb, SGD");
  // DeepSpeed matches optimizer names case-insensitively.
  const OptimizerKind *kind = nullptr;
  for (const OptimizerKind &k : optimizerKinds())
    if (StringRef(*typeName).equals_insensitive(k.name))
      kind = &k;
  if (!kind) {
    static const StringRef deepSpeedOnly[] = {
        "OneBitAdam", "ZeroOneAdam", "OneBitLamb", "Adagrad",  "Lion",
        "MuAdam",     "MuAdamW",     "MuSGD",      "Muon",     "CPUAdam",
        "FusedAdam",  "CPUAdagrad",  "CPULion",    "FusedLion"};
    for (StringRef name : deepSpeedOnly)
      if (StringRef(*typeName).equals_insensitive(name))
        fail(s.pathOf("type") + ": ds does not support the \"" + *typeName +
             "\" optimizer; use Adam, AdamW, Lamb or SGD");
    std::vector<StringRef> names;
    for (const OptimizerKind &k : optimizerKinds())
      names.push_back(k.name);
    std::string message =
        s.pathOf("type") + ": unknown optimizer \"" + *typeName + "\"";
    if (auto guess = closest(*typeName, names))
      message += "; did you mean \"" + *guess + "\"?";
    else
      message += "; one of Adam, AdamW, Lamb, SGD";
    fail(message);
  }
  opt = OptimizerConfig();
  opt.type = kind->type;

  auto params = s.section("params");
  if (!params)
    return;

  KeySet keys{kind->params, {}, {}};
  if (kind->type == OptimizerType::Adam || kind->type == OptimizerType::AdamW) {
    // Which Adam implementation runs is ds's choice, not the config's.
    keys.ignored = {"torch_adam", "fused", "adamw_mode"};
    keys.unsupported = {{"amsgrad", "AMSGrad"}};
  } else if (kind->type == OptimizerType::Lamb) {
    keys.unsupported = {{"amsgrad", "AMSGrad"}};
  }
  // A parameter of another optimizer gets a message listing this one's.
  std::vector<StringRef> foreign;
  for (const OptimizerKind &k : optimizerKinds())
    llvm::append_range(foreign, k.params);
  params->checkKeys(keys, kind->name, foreign);

  if (auto lr = params->getNumber("lr")) {
    requireAtLeast<double>(params->pathOf("lr"), *lr, 0);
    opt.lr = *lr;
  }
  if (params->has("betas")) {
    const json &betas = params->at("betas");
    std::string path = params->pathOf("betas");
    if (!betas.is_array() || betas.size() != 2)
      Section::failType(path, "an array of 2 numbers", betas);
    for (size_t i = 0; i < 2; ++i) {
      std::string itemPath = path + "[" + std::to_string(i) + "]";
      opt.betas[i] = Section::toNumber(itemPath, betas[i]);
      requireUnitOpen(itemPath, opt.betas[i]);
    }
  }
  if (auto eps = params->getNumber("eps")) {
    requireAtLeast<double>(params->pathOf("eps"), *eps, 0);
    opt.eps = *eps;
  }
  if (auto wd = params->getNumber("weight_decay")) {
    requireAtLeast<double>(params->pathOf("weight_decay"), *wd, 0);
    opt.weightDecay = *wd;
  }
  params->read("bias_correction", opt.biasCorrection);
  params->read("adam_w_mode", opt.adamWMode);
  if (kind->type == OptimizerType::AdamW && !opt.adamWMode)
    fail(params->pathOf("adam_w_mode") +
         ": AdamW always decouples weight decay; use type Adam for L2 "
         "weight decay");

  if (kind->type == OptimizerType::Lamb) {
    params->read("max_coeff", opt.maxCoeff);
    params->read("min_coeff", opt.minCoeff);
    requireAtLeast<double>(params->pathOf("min_coeff"), opt.minCoeff, 0);
    if (opt.maxCoeff < opt.minCoeff)
      fail(params->pathOf("max_coeff") + ": " + num(opt.maxCoeff) +
           " is below min_coeff " + num(opt.minCoeff));
  }
  if (kind->type == OptimizerType::SGD) {
    params->read("momentum", opt.momentum);
    requireAtLeast<double>(params->pathOf("momentum"), opt.momentum, 0);
    params->read("dampening", opt.dampening);
    params->read("nesterov", opt.nesterov);
    // Nesterov needs a momentum and no dampening, as in torch.optim.SGD.
    if (opt.nesterov && (opt.momentum <= 0 || opt.dampening != 0))
      fail(params->pathOf("nesterov") +
           ": Nesterov momentum needs momentum > 0 and dampening 0, got "
           "momentum " +
           num(opt.momentum) + " and dampening " + num(opt.dampening));
  }
}

//===----------------------------------------------------------------------===//
// Scheduler
//===----------------------------------------------------------------------===//

struct SchedulerKind {
  StringRef name;
  SchedulerType type;
  std::vector<StringRef> params;
};

const std::vector<SchedulerKind> &schedulerKinds() {
  static const std::vector<SchedulerKind> kinds = {
      {"WarmupLR",
       SchedulerType::WarmupLR,
       {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type"}},
      {"WarmupDecayLR",
       SchedulerType::WarmupDecayLR,
       {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type",
        "total_num_steps"}},
      {"WarmupCosineLR",
       SchedulerType::WarmupCosineLR,
       {"total_num_steps", "warmup_min_ratio", "warmup_num_steps",
        "cos_min_ratio", "warmup_type"}},
      {"OneCycle",
       SchedulerType::OneCycle,
       {"cycle_min_lr", "cycle_max_lr", "decay_lr_rate",
        "cycle_first_step_size", "cycle_second_step_size",
        "cycle_first_stair_count", "cycle_second_stair_count",
        "decay_step_size", "cycle_momentum", "cycle_min_mom", "cycle_max_mom",
        "decay_mom_rate"}}};
  return kinds;
}

void readScheduler(const Section &s, const OptimizerConfig &opt,
                   SchedulerConfig &sched) {
  static const KeySet sectionKeys = {{"type", "params"}, {}, {}};
  s.checkKeys(sectionKeys);

  auto typeName = s.getString("type");
  if (!typeName)
    fail(s.pathOf("type") +
         ": missing; one of WarmupLR, WarmupDecayLR, WarmupCosineLR, "
         "OneCycle");
  const SchedulerKind *kind = nullptr;
  for (const SchedulerKind &k : schedulerKinds())
    if (StringRef(*typeName).equals_insensitive(k.name))
      kind = &k;
  if (!kind) {
    if (StringRef(*typeName).equals_insensitive("LRRangeTest"))
      fail(s.pathOf("type") +
           ": ds does not support the LRRangeTest schedule; use WarmupLR, "
           "WarmupDecayLR, WarmupCosineLR or OneCycle");
    std::vector<StringRef> names;
    for (const SchedulerKind &k : schedulerKinds())
      names.push_back(k.name);
    std::string message =
        s.pathOf("type") + ": unknown scheduler \"" + *typeName + "\"";
    if (auto guess = closest(*typeName, names))
      message += "; did you mean \"" + *guess + "\"?";
    else
      message += "; one of WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle";
    fail(message);
  }
  sched = SchedulerConfig();
  sched.type = kind->type;
  // ds warms up to the optimizer's lr unless told otherwise.
  sched.warmupMaxLr = opt.lr;

  json empty = json::object();
  std::optional<Section> given = s.section("params");
  std::vector<std::string> unused;
  Section params = given ? *given : Section(empty, s.pathOf("params"), unused);
  std::vector<StringRef> foreign;
  for (const SchedulerKind &k : schedulerKinds())
    llvm::append_range(foreign, k.params);
  params.checkKeys(KeySet{kind->params, {}, {}}, kind->name, foreign);

  auto readNonNegative = [&](StringRef key, auto &out) {
    params.read(key, out);
    using T = std::decay_t<decltype(out)>;
    requireAtLeast<T>(params.pathOf(key), out, T(0));
  };
  auto readRatio = [&](StringRef key, double &out) {
    params.read(key, out);
    requireInRange<double>(params.pathOf(key), out, 0, 1);
  };
  auto required = [&](StringRef key) {
    if (!params.has(key))
      fail(params.pathOf(key) + ": required by " + kind->name.str());
  };
  auto readWarmupType = [&] {
    if (auto v = params.getString("warmup_type")) {
      if (*v == "log")
        sched.warmupType = WarmupType::Log;
      else if (*v == "linear")
        sched.warmupType = WarmupType::Linear;
      else
        fail(params.pathOf("warmup_type") +
             ": must be \"log\" or "
             "\"linear\", got \"" +
             *v + "\"");
    }
  };

  switch (kind->type) {
  case SchedulerType::WarmupLR:
  case SchedulerType::WarmupDecayLR:
    readNonNegative("warmup_min_lr", sched.warmupMinLr);
    readNonNegative("warmup_max_lr", sched.warmupMaxLr);
    readNonNegative("warmup_num_steps", sched.warmupNumSteps);
    readWarmupType();
    if (sched.warmupMinLr > sched.warmupMaxLr)
      fail(params.pathOf("warmup_min_lr") + ": " + num(sched.warmupMinLr) +
           " is above warmup_max_lr " + num(sched.warmupMaxLr));
    if (kind->type == SchedulerType::WarmupDecayLR) {
      required("total_num_steps");
      params.read("total_num_steps", sched.totalNumSteps);
      requireAtLeast<int64_t>(params.pathOf("total_num_steps"),
                              sched.totalNumSteps, sched.warmupNumSteps);
    }
    break;
  case SchedulerType::WarmupCosineLR:
    required("total_num_steps");
    readNonNegative("warmup_num_steps", sched.warmupNumSteps);
    params.read("total_num_steps", sched.totalNumSteps);
    requireAtLeast<int64_t>(params.pathOf("total_num_steps"),
                            sched.totalNumSteps, sched.warmupNumSteps);
    readRatio("warmup_min_ratio", sched.warmupMinRatio);
    readRatio("cos_min_ratio", sched.cosMinRatio);
    readWarmupType();
    break;
  case SchedulerType::OneCycle: {
    required("cycle_min_lr");
    required("cycle_max_lr");
    readNonNegative("cycle_min_lr", sched.cycleMinLr);
    readNonNegative("cycle_max_lr", sched.cycleMaxLr);
    if (sched.cycleMinLr > sched.cycleMaxLr)
      fail(params.pathOf("cycle_min_lr") + ": " + num(sched.cycleMinLr) +
           " is above cycle_max_lr " + num(sched.cycleMaxLr));
    readNonNegative("decay_lr_rate", sched.decayLrRate);
    params.read("cycle_first_step_size", sched.cycleFirstStepSize);
    requireAtLeast<int64_t>(params.pathOf("cycle_first_step_size"),
                            sched.cycleFirstStepSize, 1);
    // The second half mirrors the first unless given.
    sched.cycleSecondStepSize = sched.cycleFirstStepSize;
    params.read("cycle_second_step_size", sched.cycleSecondStepSize);
    requireAtLeast<int64_t>(params.pathOf("cycle_second_step_size"),
                            sched.cycleSecondStepSize, 1);
    readNonNegative("cycle_first_stair_count", sched.cycleFirstStairCount);
    sched.cycleSecondStairCount = sched.cycleFirstStairCount;
    readNonNegative("cycle_second_stair_count", sched.cycleSecondStairCount);
    readNonNegative("decay_step_size", sched.decayStepSize);
    params.read("cycle_momentum", sched.cycleMomentum);
    readRatio("cycle_min_mom", sched.cycleMinMom);
    readRatio("cycle_max_mom", sched.cycleMaxMom);
    if (sched.cycleMinMom > sched.cycleMaxMom)
      fail(params.pathOf("cycle_min_mom") + ": " + num(sched.cycleMinMom) +
           " is above cycle_max_mom " + num(sched.cycleMaxMom));
    readNonNegative("decay_mom_rate", sched.decayMomRate);
    break;
  }
  case SchedulerType::None:
    break;
  }
}

//===----------------------------------------------------------------------===//
// Parallelism sections
//===----------------------------------------------------------------------===//

void readPartitionMethod(const Section &s, StringRef method,
                         PipelineConfig &pipe) {
  if (llvm::Error err = parsePartitionMethod(method, pipe))
    fail(s.pathOf("partition_method") + ": " + llvm::toString(std::move(err)));
}

void readPipeline(const Section &s, PipelineConfig &pipe,
                  std::optional<int64_t> &microBatches) {
  static const KeySet keys = {
      {"stages", "partition_method", "schedule", "virtual_stages",
       "activation_checkpoint_interval", "micro_batches"},
      // Communication layout choices of DeepSpeed's pipeline engine.
      {"seed_layers", "pipe_partitioned", "grad_partitioned"},
      {}};
  s.checkKeys(keys);
  if (auto v = s.getInt("stages")) {
    requireAtLeast<int64_t>(s.pathOf("stages"), *v, 1);
    pipe.stages = *v;
  }
  if (auto v = s.getString("partition_method"))
    readPartitionMethod(s, *v, pipe);
  if (auto v = s.getString("schedule")) {
    StringRef schedule = *v;
    if (schedule == "1f1b")
      pipe.schedule = PipelineSchedule::OneFOneB;
    else if (schedule == "gpipe")
      pipe.schedule = PipelineSchedule::GPipe;
    else if (schedule == "interleaved")
      pipe.schedule = PipelineSchedule::Interleaved;
    else
      fail(s.pathOf("schedule") +
           ": must be \"1f1b\", \"gpipe\" or \"interleaved\", got \"" + *v +
           "\"");
  }
  if (auto v = s.getInt("virtual_stages")) {
    requireAtLeast<int64_t>(s.pathOf("virtual_stages"), *v, 1);
    pipe.virtualStages = *v;
  }
  if (pipe.schedule == PipelineSchedule::Interleaved) {
    if (pipe.virtualStages < 2)
      fail(s.pathOf("virtual_stages") + ": " + num(pipe.virtualStages) +
           ", but the interleaved schedule runs at least 2 model chunks per "
           "stage; set virtual_stages to 2 or more");
  } else if (pipe.virtualStages != 1) {
    fail(s.pathOf("virtual_stages") + ": " + num(pipe.virtualStages) +
         " needs \"schedule\": \"interleaved\"; the " +
         stringifyPipelineSchedule(pipe.schedule).str() +
         " schedule runs one model chunk per stage");
  }
  if (auto v = s.getInt("activation_checkpoint_interval")) {
    if (*v < 0)
      fail(s.pathOf("activation_checkpoint_interval") + ": " + num(*v) +
           " is negative; use 0 (off) or K >= 1 to recompute each block of K "
           "layers in its backward");
    pipe.activationCheckpointInterval = *v;
  }
  if (auto v = s.getInt("micro_batches")) {
    requireAtLeast<int64_t>(s.pathOf("micro_batches"), *v, 1);
    microBatches = *v;
  }
}

void readKernels(const Section &s, KernelsConfig &k) {
  static const KeySet keys = {{"attention_block_size",
                               "attention_block_threshold", "loss_chunk_rows",
                               "loss_chunk_threshold"},
                              {},
                              {}};
  s.checkKeys(keys);
  s.read("attention_block_size", k.attentionBlockSize);
  requireAtLeast<int64_t>(s.pathOf("attention_block_size"),
                          k.attentionBlockSize, 0);
  s.read("attention_block_threshold", k.attentionBlockThreshold);
  requireAtLeast<int64_t>(s.pathOf("attention_block_threshold"),
                          k.attentionBlockThreshold, 0);
  s.read("loss_chunk_rows", k.lossChunkRows);
  requireAtLeast<int64_t>(s.pathOf("loss_chunk_rows"), k.lossChunkRows, 1);
  s.read("loss_chunk_threshold", k.lossChunkThreshold);
  requireAtLeast<int64_t>(s.pathOf("loss_chunk_threshold"),
                          k.lossChunkThreshold, 0);
}

void readMoE(const Section &s, MoEConfig &moe) {
  static const KeySet keys = {
      {"num_experts", "ep_size", "k", "capacity_factor", "eval_capacity_factor",
       "min_capacity", "drop_tokens", "aux_loss_coef"},
      {},
      {{"use_residual", "residual MoE"},
       {"noisy_gate_policy", "noisy gating"},
       {"use_tutel", "Tutel"},
       {"enable_expert_tensor_parallelism", "expert tensor parallelism"}}};
  s.checkKeys(keys);
  moe.enabled = true;
  if (!s.has("num_experts"))
    fail(s.pathOf("num_experts") + ": required when a moe section is given");
  moe.numExperts = *s.getInt("num_experts");
  requireAtLeast<int64_t>(s.pathOf("num_experts"), moe.numExperts, 1);
  s.read("ep_size", moe.epSize);
  requireAtLeast<int64_t>(s.pathOf("ep_size"), moe.epSize, 1);
  s.read("k", moe.k);
  requireAtLeast<int64_t>(s.pathOf("k"), moe.k, 1);
  if (moe.k > moe.numExperts)
    fail(s.pathOf("k") + ": " + num(moe.k) + " exceeds num_experts " +
         num(moe.numExperts) +
         "; a token picks k distinct experts, so lower k or add experts");
  s.read("capacity_factor", moe.capacityFactor);
  requirePositive(s.pathOf("capacity_factor"), moe.capacityFactor);
  s.read("eval_capacity_factor", moe.evalCapacityFactor);
  requirePositive(s.pathOf("eval_capacity_factor"), moe.evalCapacityFactor);
  s.read("min_capacity", moe.minCapacity);
  requireAtLeast<int64_t>(s.pathOf("min_capacity"), moe.minCapacity, 0);
  s.read("drop_tokens", moe.dropTokens);
  s.read("aux_loss_coef", moe.auxLossCoef);
  requireAtLeast<double>(s.pathOf("aux_loss_coef"), moe.auxLossCoef, 0);
  if (moe.numExperts % moe.epSize != 0)
    fail(s.pathOf("ep_size") + ": " + num(moe.epSize) +
         " does not divide num_experts " + num(moe.numExperts) +
         "; every expert-parallel rank holds the same number of experts");
}

/// DeepSpeed's section configures the checkpoint() calls a model script
/// makes; ds inserts the recomputation itself (pipeline.
/// activation_checkpoint_interval), so the section's keys have nothing left
/// to choose: partitioning over a tensor-parallel group ds does not have,
/// where checkpoints live (ds trains on the host already, in buffers it
/// plans), synchronization and profiling. They are checked and ignored.
void readActivationCheckpointing(const Section &s) {
  static const KeySet keys = {{},
                              {"partition_activations", "cpu_checkpointing",
                               "contiguous_memory_optimization",
                               "number_checkpoints",
                               "synchronize_checkpoint_boundary", "profile"},
                              {}};
  s.checkKeys(keys);
  for (StringRef key : {"partition_activations", "cpu_checkpointing",
                        "contiguous_memory_optimization",
                        "synchronize_checkpoint_boundary", "profile"})
    (void)s.getBool(key);
  if (s.has("number_checkpoints") && !s.at("number_checkpoints").is_null())
    requireAtLeast<int64_t>(s.pathOf("number_checkpoints"),
                            *s.getInt("number_checkpoints"), 1);
}

void readTensorParallel(const Section &s, TensorParallelConfig &tp) {
  static const KeySet keys = {
      // Megatron's sequence parallelism (its --sequence-parallel).
      {"autotp_size", "sequence_parallel"},
      // Overlap and where checkpoints load: the same math.
      {"tp_overlap_comm", "keep_module_on_host"},
      // ds partitions its own model spec; DeepSpeed's rules name PyTorch
      // modules.
      {{"partition_config", "custom AutoTP partitioning rules"},
       {"preset_model", "AutoTP model presets"}}};
  s.checkKeys(keys);
  if (auto v = s.getInt("autotp_size")) {
    requireAtLeast<int64_t>(s.pathOf("autotp_size"), *v, 0);
    // DeepSpeed writes 0 for "no tensor parallelism"; that is a size of 1.
    tp.autotpSize = std::max<int64_t>(*v, 1);
  }
  if (auto v = s.getBool("sequence_parallel"))
    tp.sequenceParallel = *v;
}

/// Fails with "`what` with `why`" for the first combination that holds:
/// refused rather than run, as a wrong composition would train silently
/// different numbers.
void refuseCombinations(const std::string &what,
                        llvm::ArrayRef<std::pair<bool, std::string>> refused) {
  for (const auto &[when, why] : refused)
    if (when)
      fail(what + " with " + why);
}

/// Megatron sequence parallelism keeps the activations between blocks on
/// sequence shards, which must not reach a stage boundary or the experts'
/// routing.
void checkMegatronSequenceParallel(const Config &c) {
  refuseCombinations(
      "tensor_parallel.sequence_parallel",
      {{c.pipeline.stages > 1,
        "pipeline.stages " + num(c.pipeline.stages) +
            ": the stages would exchange sequence shards, which ds does not "
            "place yet; use sequence_parallel false or one stage"},
       {c.moe.enabled, "a moe section: the experts' routing reads the whole "
                       "sequence; use sequence_parallel false or a dense "
                       "model"}});
}

/// The combinations Ulysses sequence parallelism does not compose with yet.
void checkSequenceParallel(const Config &c, int64_t s) {
  const std::pair<bool, std::string> refused[] = {
      {c.tensorParallel.autotpSize > 1,
       "tensor_parallel.autotp_size " + num(c.tensorParallel.autotpSize) +
           ": sequence and tensor parallelism would both cut the attention "
           "heads, which ds does not compose yet; use one of the two"},
      {c.pipeline.stages > 1,
       "pipeline.stages " + num(c.pipeline.stages) +
           ": sequence parallelism inside a pipeline stage is not supported "
           "yet (the stages would exchange sequence shards); use "
           "sequence_parallel_size 1 or one stage"},
      {c.moe.enabled, "a moe section: the experts' token routing is not "
                      "placed on sequence shards yet; use "
                      "sequence_parallel_size 1 or a dense model"}};
  refuseCombinations("sequence_parallel_size " + num(s), refused);
}

//===----------------------------------------------------------------------===//
// The batch triangle
//===----------------------------------------------------------------------===//

/// train_batch_size = micro x accumulation x dp. Any two give the third; one
/// alone means no accumulation, as in DeepSpeed. Unlike DeepSpeed, a
/// derivation that does not come out even is an error rather than a floor.
void resolveBatch(Config &c, std::optional<int64_t> train,
                  std::optional<int64_t> micro, std::optional<int64_t> accum) {
  int64_t dp = c.dpSize;
  if (train && micro && accum) {
    int64_t product = mulChecked(mulChecked(*micro, *accum), dp);
    if (product != *train)
      fail("train_batch_size " + num(*train) +
           " != train_micro_batch_size_per_gpu " + num(*micro) +
           " x gradient_accumulation_steps " + num(*accum) +
           " x data-parallel size " + num(dp) + " (= " + num(product) +
           "); fix one of the three or the world size");
  } else if (train && micro) {
    int64_t perStep = mulChecked(*micro, dp);
    if (*train % perStep != 0)
      fail("train_batch_size " + num(*train) +
           " is not a multiple of train_micro_batch_size_per_gpu " +
           num(*micro) + " x data-parallel size " + num(dp) +
           " (= " + num(perStep) +
           "), so gradient_accumulation_steps would not be an "
           "integer");
    accum = *train / perStep;
  } else if (train && accum) {
    int64_t perMicro = mulChecked(*accum, dp);
    if (*train % perMicro != 0)
      fail("train_batch_size " + num(*train) +
           " is not a multiple of gradient_accumulation_steps " + num(*accum) +
           " x data-parallel size " + num(dp) + " (= " + num(perMicro) +
           "), so train_micro_batch_size_per_gpu would not "
           "be an integer");
    micro = *train / perMicro;
  } else if (micro && accum) {
    train = mulChecked(mulChecked(*micro, *accum), dp);
  } else if (train) {
    accum = 1;
    if (*train % dp != 0)
      fail("train_batch_size " + num(*train) +
           " is not a multiple of the data-parallel size " + num(dp) +
           ", so train_micro_batch_size_per_gpu would not be an integer");
    micro = *train / dp;
  } else if (micro) {
    accum = 1;
    train = mulChecked(*micro, dp);
  } else {
    fail(std::string(accum ? "gradient_accumulation_steps alone does not "
                             "fix the batch; "
                           : "no batch size given; ") +
         "set train_batch_size or train_micro_batch_size_per_gpu (ds derives "
         "the rest from train_batch_size = train_micro_batch_size_per_gpu x "
         "gradient_accumulation_steps x data-parallel size)");
  }
  c.trainBatchSize = *train;
  c.trainMicroBatchSizePerGpu = *micro;
  c.gradientAccumulationSteps = *accum;
}

//===----------------------------------------------------------------------===//
// Whole config
//===----------------------------------------------------------------------===//

/// Rejects duplicate keys, which nlohmann would silently resolve to the last.
class DuplicateKeyCheck {
public:
  bool operator()(int, json::parse_event_t event, json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      frames.push_back(
          {childPath(), event == json::parse_event_t::array_start, 0, {}, {}});
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      frames.pop_back();
      finishValue();
      break;
    case json::parse_event_t::key: {
      Frame &frame = frames.back();
      std::string key = parsed.get<std::string>();
      if (!frame.keys.insert(key).second)
        fail(keyPath(frame.path, key) + ": key given twice");
      frame.lastKey = key;
      break;
    }
    case json::parse_event_t::value:
      finishValue();
      break;
    }
    return true;
  }

private:
  struct Frame {
    std::string path;
    bool isArray;
    size_t index;
    std::string lastKey;
    std::set<std::string> keys;
  };

  std::string childPath() const {
    if (frames.empty())
      return "";
    const Frame &parent = frames.back();
    if (parent.isArray)
      return parent.path + "[" + std::to_string(parent.index) + "]";
    return keyPath(parent.path, parent.lastKey);
  }

  void finishValue() {
    if (!frames.empty() && frames.back().isArray)
      ++frames.back().index;
  }

  std::vector<Frame> frames;
};

/// DeepSpeed reads its config with hjson; of hjson's additions ds takes the
/// ones real configs use: `//`, `#` and `/* */` comments and a comma before
/// `}` or `]`. They become spaces (newlines stay), so the JSON parser's line
/// and column still point into the file as written. nlohmann::json 3.11.2
/// (Debian 12) can skip `//` and `/* */` comments itself but knows neither
/// `#` nor trailing commas, so all of it happens here.
std::string stripHjsonExtras(StringRef text) {
  std::string out = text.str();
  size_t n = out.size();
  // The last comma outside strings and comments, while only blanks and
  // comments followed it.
  std::optional<size_t> pendingComma;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k)
      if (out[k] != '\n')
        out[k] = ' ';
  };
  for (size_t i = 0; i < n;) {
    char ch = out[i];
    if (ch == '"') {
      pendingComma.reset();
      for (++i; i < n && out[i] != '"'; ++i)
        if (out[i] == '\\')
          ++i;
      ++i;
      continue;
    }
    if (ch == '#' || (ch == '/' && i + 1 < n && out[i + 1] == '/')) {
      size_t end = out.find('\n', i);
      end = end == std::string::npos ? n : end;
      blank(i, end);
      i = end;
      continue;
    }
    if (ch == '/' && i + 1 < n && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      // An unterminated comment is left for the parser to report.
      if (end == std::string::npos)
        break;
      blank(i, end + 2);
      i = end + 2;
      continue;
    }
    if (ch == ',') {
      pendingComma = i;
    } else if (ch == '}' || ch == ']') {
      if (pendingComma)
        out[*pendingComma] = ' ';
      pendingComma.reset();
    } else if (!llvm::isSpace(ch)) {
      pendingComma.reset();
    }
    ++i;
  }
  return out;
}

json parseJson(StringRef text) {
  std::string plain = stripHjsonExtras(text);
  try {
    return json::parse(plain.begin(), plain.end(), DuplicateKeyCheck());
  } catch (const json::parse_error &e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    StringRef what = e.what();
    size_t at = what.find("at line");
    if (at != StringRef::npos)
      fail("malformed JSON " + what.drop_front(at).str());
    fail("malformed JSON: " + what.str());
  }
}

/// The path of the first "auto" placeholder in `value`, if any.
std::optional<std::string> findAuto(const json &value,
                                    const std::string &path) {
  if (value == "auto")
    return path;
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      if (auto found = findAuto(it.value(), keyPath(path, it.key())))
        return found;
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      if (auto found = findAuto(value[i], path + "[" + std::to_string(i) + "]"))
        return found;
  }
  return std::nullopt;
}

Config resolveObject(const json &root, const ResolveOptions &options);

/// A typed read names what to write instead of "auto"; an "auto" that no
/// typed read reached (a string, an ignored section) still gets the same
/// explanation rather than an unrelated error.
Config resolve(StringRef text, const ResolveOptions &options) {
  json root = parseJson(text);
  std::optional<Config> c;
  try {
    c = resolveObject(root, options);
  } catch (const ConfigError &e) {
    if (e.isAuto || !findAuto(root, ""))
      throw;
  }
  if (auto path = findAuto(root, ""))
    fail(*path + ": \"auto\" is filled in by the Hugging Face Trainer, not by "
                 "ds; write the value here");
  return std::move(*c);
}

Config resolveObject(const json &root, const ResolveOptions &options) {
  if (!root.is_object())
    Section::failType("ds_config.json", "an object at the top level", root);

  Config c;
  std::vector<std::string> ignored;
  Section top(root, "", ignored);
  top.checkKeys(topLevelKeys());

  if (options.worldSize < 1)
    fail("world size must be >= 1, got " + num(options.worldSize));
  c.worldSize = options.worldSize;

  auto batchValue = [&](StringRef key) -> std::optional<int64_t> {
    auto v = top.getInt(key);
    if (v)
      requireAtLeast<int64_t>(key.str(), *v, 1);
    return v;
  };
  std::optional<int64_t> train = batchValue("train_batch_size");
  std::optional<int64_t> micro = batchValue("train_micro_batch_size_per_gpu");
  std::optional<int64_t> accum = batchValue("gradient_accumulation_steps");

  if (auto v = top.getNumber("gradient_clipping")) {
    requireAtLeast<double>("gradient_clipping", *v, 0);
    c.gradientClipping = *v;
  }
  if (auto v = top.getInt("steps_per_print")) {
    requireAtLeast<int64_t>("steps_per_print", *v, 1);
    c.stepsPerPrint = *v;
  }
  top.read("wall_clock_breakdown", c.wallClockBreakdown);
  if (auto s = top.section("csv_monitor"))
    readCsvMonitor(*s, c.csvMonitor);
  refuseOtherMonitors(top);

  bool zeroShorthand =
      top.has("zero_optimization") && top.at("zero_optimization").is_boolean();
  if (top.has("zero_optimization") && !zeroShorthand &&
      !top.at("zero_optimization").is_object())
    Section::failType("zero_optimization", "an object (or true/false)",
                      top.at("zero_optimization"));
  if (zeroShorthand) {
    // DeepSpeed's old form: true is stage 1, false stage 0, and the
    // all-gather bucket comes from the top-level allgather_size.
    c.zero.stage = top.at("zero_optimization").get<bool>() ? 1 : 0;
    if (auto v = top.getInt("allgather_size")) {
      requireAtLeast<int64_t>("allgather_size", *v, 0);
      c.zero.allgatherBucketSize = *v;
    }
  } else if (auto s = top.section("zero_optimization")) {
    readZero(*s, c.zero);
  }
  if (top.has("allgather_size") && !zeroShorthand)
    fail("allgather_size: DeepSpeed reads it only with \"zero_optimization\": "
         "true; write zero_optimization.allgather_bucket_size instead");

  top.read("prescale_gradients", c.prescaleGradients);
  if (auto v = top.getNumber("gradient_predivide_factor")) {
    requirePositive("gradient_predivide_factor", *v);
    c.gradientPredivideFactor = *v;
  }
  if (c.prescaleGradients && c.gradientPredivideFactor != 1.0)
    fail("gradient_predivide_factor: " + num(c.gradientPredivideFactor) +
         " has no effect with prescale_gradients true (DeepSpeed ignores "
         "it); remove one of the two");
  if (auto op = top.getString("gradient_allreduce_op")) {
    // DeepSpeed lower-cases the name.
    std::string name = llvm::StringRef(*op).lower();
    if (name == "sum")
      fail("gradient_allreduce_op: ds does not support summed gradients; "
           "remove the key or write \"mean\"");
    if (name != "mean")
      fail("gradient_allreduce_op: must be \"mean\" or \"sum\", got \"" + *op +
           "\"");
  }
  if (auto s = top.section("compile"))
    readCompile(*s, c.compile);
  if (auto s = top.section("fp16"))
    readFp16(*s, c.fp16);
  if (top.has("bf16") && top.has("bfloat16"))
    fail("bfloat16: same section as bf16; give only one");
  if (auto s = top.section("bf16"))
    readBf16(*s, c.bf16);
  if (auto s = top.section("bfloat16"))
    readBf16(*s, c.bf16);
  if (auto s = top.section("optimizer")) {
    readOptimizer(*s, c.optimizer);
    c.optimizerGiven = true;
  }
  if (auto s = top.section("scheduler"))
    readScheduler(*s, c.optimizer, c.scheduler);
  std::optional<int64_t> microBatches;
  if (auto s = top.section("pipeline"))
    readPipeline(*s, c.pipeline, microBatches);
  if (auto s = top.section("tensor_parallel"))
    readTensorParallel(*s, c.tensorParallel);
  if (auto v = top.getInt("sequence_parallel_size")) {
    requireAtLeast<int64_t>("sequence_parallel_size", *v, 1);
    c.sequenceParallelSize = *v;
  }
  if (auto s = top.section("moe"))
    readMoE(*s, c.moe);
  if (auto s = top.section("kernels"))
    readKernels(*s, c.kernels);
  if (auto s = top.section("activation_checkpointing"))
    readActivationCheckpointing(*s);
  if (auto s = top.section("aio")) {
    readAio(*s, c.aio);
    // Only the NVMe swap does I/O.
    if (c.zero.offloadOptimizer.device != OffloadDevice::Nvme)
      ignored.push_back("aio");
  }

  // Checks across sections.
  if (c.zero.offloadOptimizer.enabled() && c.zero.stage == 0)
    fail("zero_optimization.offload_optimizer with ZeRO stage 0: ZeRO-Offload "
         "moves the partitioned optimizer state; set zero_optimization.stage "
         "to 1, 2 or 3");
  if (c.zero.offloadParam.enabled() && c.zero.stage != 3)
    fail("zero_optimization.offload_param with ZeRO stage " +
         num(c.zero.stage) +
         ": only ZeRO-3 partitions parameters; set zero_optimization.stage "
         "to 3 or remove offload_param");
  if (c.zero.offloadOptimizer.enabled() &&
      c.optimizer.type != OptimizerType::Adam &&
      c.optimizer.type != OptimizerType::AdamW)
    fail(std::string("zero_optimization.offload_optimizer with optimizer ") +
         (c.optimizer.type == OptimizerType::Lamb ? "Lamb" : "SGD") +
         ": DeepSpeed's ZeRO-Offload runs its CPU Adam, and refuses other "
         "optimizers; use Adam or AdamW, or remove offload_optimizer");
  // fp16's overflow check skips the update with an scf.if whose branches
  // yield the untouched state or an updated copy of it, so the step would
  // read and copy the moments in memory.
  if (c.zero.offloadOptimizer.device == OffloadDevice::Nvme && c.fp16.enabled)
    fail("zero_optimization.offload_optimizer.device \"nvme\" with "
         "fp16.enabled: ds's fp16 step skips an overflowing update on a copy "
         "of the optimizer state, which NVMe offload keeps out of memory; "
         "use bf16 or fp32, or offload to \"cpu\"");
  if (c.fp16.enabled && c.bf16.enabled)
    fail("fp16.enabled and bf16.enabled are both true; enable at most one");

  // Megatron's and DeepSpeed's grid: TP innermost, then SP, DP and PP.
  int64_t modelParallel =
      mulChecked(mulChecked(c.pipeline.stages, c.tensorParallel.autotpSize),
                 c.sequenceParallelSize);
  if (c.worldSize % modelParallel != 0)
    fail("world size " + num(c.worldSize) +
         " is not divisible by pipeline.stages " + num(c.pipeline.stages) +
         " x tensor_parallel.autotp_size " + num(c.tensorParallel.autotpSize) +
         (c.sequenceParallelSize > 1
              ? " x sequence_parallel_size " + num(c.sequenceParallelSize)
              : std::string()) +
         " (= " + num(modelParallel) + ")");
  c.dpSize = c.worldSize / modelParallel;

  resolveBatch(c, train, micro, accum);

  // One pipeline micro-batch per accumulation step, as DeepSpeed's pipeline
  // engine does.
  c.pipeline.microBatches = c.gradientAccumulationSteps;
  if (microBatches && *microBatches != c.gradientAccumulationSteps)
    fail("pipeline.micro_batches " + num(*microBatches) +
         " != gradient_accumulation_steps " + num(c.gradientAccumulationSteps) +
         "; a pipeline runs one micro-batch per accumulation step, so leave "
         "micro_batches out or make them equal");
  if (c.pipeline.schedule == PipelineSchedule::Interleaved) {
    if (c.pipeline.stages < 2)
      fail("pipeline.schedule \"interleaved\" with pipeline.stages " +
           num(c.pipeline.stages) +
           ": interleaving passes model chunks between stages; use 2 or more "
           "stages");
    if (c.pipeline.microBatches % c.pipeline.stages != 0)
      fail(
          "pipeline.schedule \"interleaved\": " + num(c.pipeline.microBatches) +
          " micro-batches (gradient_accumulation_steps) is not a multiple of "
          "pipeline.stages " +
          num(c.pipeline.stages) +
          "; the interleaved schedule runs micro-batches in groups of one "
          "per stage, so use a multiple of " +
          num(c.pipeline.stages));
  }

  if (c.moe.enabled && c.dpSize % c.moe.epSize != 0)
    fail("moe.ep_size " + num(c.moe.epSize) +
         " does not divide the data-parallel size " + num(c.dpSize) +
         "; expert-parallel groups are carved out of the data-parallel ranks");
  if (c.sequenceParallelSize > 1)
    checkSequenceParallel(c, c.sequenceParallelSize);
  if (c.tensorParallel.sequenceParallel && c.tensorParallel.autotpSize > 1)
    checkMegatronSequenceParallel(c);

  llvm::sort(ignored);
  c.ignoredKeys = std::move(ignored);
  return c;
}

} // namespace

/// The regex of a "type:REGEX" partition method the way DeepSpeed's
/// PipelineModule reads it: the whole method string lower-cased, then the
/// text between the first and a second colon (`method.split(':')[1]`).
static std::string typeRegexOf(StringRef method) {
  std::string lowered = method.lower();
  return StringRef(lowered).drop_front(5).split(':').first.str();
}

llvm::Error parsePartitionMethod(StringRef method, PipelineConfig &pipe) {
  auto error = [](const std::string &text) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
  };
  // DeepSpeed lower-cases the method name, the regex included.
  if (method.equals_insensitive("parameters")) {
    pipe.partitionMethod = PartitionMethod::Parameters;
  } else if (method.equals_insensitive("uniform")) {
    pipe.partitionMethod = PartitionMethod::Uniform;
  } else if (method.equals_insensitive("flops")) {
    pipe.partitionMethod = PartitionMethod::Flops;
  } else if (method.size() >= 5 &&
             method.take_front(5).equals_insensitive("type:")) {
    std::string regex = typeRegexOf(method);
    if (regex.empty())
      return error("\"type:\" needs a regular expression after the colon");
    llvm::Regex compiled(regex, llvm::Regex::IgnoreCase);
    std::string why;
    if (!compiled.isValid(why))
      return error("invalid regular expression \"" + regex + "\": " + why);
    pipe.partitionMethod = PartitionMethod::Type;
    pipe.partitionTypeRegex = regex;
  } else {
    return error("must be \"parameters\", \"uniform\", \"flops\" or "
                 "\"type:REGEX\", got \"" +
                 method.str() + "\"");
  }
  return llvm::Error::success();
}

llvm::Expected<Config> parseConfig(StringRef jsonText,
                                   const ResolveOptions &options) {
  try {
    return resolve(jsonText, options);
  } catch (const ConfigError &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), e.message);
  } catch (const std::exception &e) {
    // Not expected; a JSON library surprise must still not escape.
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   std::string("internal error: ") + e.what());
  }
}

/// The config file's text, or an error naming the path.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readConfigFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read config file \"" + path.str() +
                                       "\": " + buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<Config> loadConfig(StringRef path,
                                  const ResolveOptions &options) {
  auto buffer = readConfigFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseConfig((*buffer)->getBuffer(), options);
}

llvm::Expected<nlohmann::json> readConfigJson(StringRef path) {
  auto buffer = readConfigFile(path);
  if (!buffer)
    return buffer.takeError();
  try {
    return parseJson((*buffer)->getBuffer());
  } catch (const ConfigError &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), e.message);
  }
}

} // namespace ds::config
