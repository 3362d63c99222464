//===- FitReport.cpp - ds-report: does the job fit this machine? ----------===//
#include "FitReport.h"

#include "ds/Driver/JitStep.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace cfg = ds::config;
namespace drv = ds::driver;
using llvm::formatv;

namespace {

/// The resident peak per rank of the largest pipeline stage, from the
/// compile ds-train runs (import, training pipeline, ds-plan-memory, the
/// step's lowering), stopped where ds-train checks the fit: before code
/// generation.
llvm::Expected<int64_t> plannedPeak(llvm::StringRef configPath,
                                    llvm::StringRef modelPath,
                                    const cfg::Config &config) {
  int64_t peak = -1;
  for (int64_t stage = 0; stage < config.pipeline.stages; ++stage) {
    drv::StepRequest request;
    request.modelPath = modelPath.str();
    request.configPath = configPath.str();
    request.config = &config;
    request.worldSize = config.worldSize;
    request.rank = stage * config.stageRanks();
    bool planned = false;
    request.beforeCodegen =
        [&](const drv::StepManifest &manifest) -> llvm::Error {
      peak = std::max(peak, drv::residentPeakBytes(manifest, config));
      planned = true;
      // Stops the compile: the rest is code generation.
      return llvm::createStringError("planned");
    };
    auto step = drv::compileJitStep(request);
    if (step)
      continue;
    if (!planned)
      return step.takeError();
    llvm::consumeError(step.takeError());
  }
  return peak;
}

bool fitsIn(int64_t peak, const drv::RankMemory &memory) {
  return memory.bytes < 0 || peak <= memory.bytes;
}

/// One line: an error's newlines (a compile's diagnostics) as "; ".
std::string oneLine(llvm::Error err) {
  llvm::SmallVector<llvm::StringRef> lines;
  std::string text = llvm::toString(std::move(err));
  llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef &line : lines)
    line = line.trim();
  return llvm::join(lines, "; ");
}

/// Offload needs ZeRO 1 at least; in a combination the ZeRO entry says the
/// stage.
constexpr llvm::StringLiteral kOffloadStage = "zero_optimization.stage 1 with ";

/// Each setting that shrinks what one rank holds, as a merge patch of
/// ds_config.json; the ones `config` already has are left out.
std::vector<FitAlternative> candidates(const cfg::Config &config) {
  std::vector<FitAlternative> out;
  auto add = [&](llvm::StringRef kind, std::string setting,
                 nlohmann::json patch) {
    FitAlternative alternative;
    alternative.kind = kind.str();
    alternative.setting = std::move(setting);
    alternative.patch = std::move(patch);
    out.push_back(std::move(alternative));
  };
  // Offload first: merged into the combination before the ZeRO stage, its
  // stage 1 gives way to stage 3.
  bool adam = config.optimizer.type == cfg::OptimizerType::Adam ||
              config.optimizer.type == cfg::OptimizerType::AdamW;
  if (config.zero.offloadOptimizer.device != cfg::OffloadDevice::Nvme &&
      adam && !config.fp16.enabled) {
    nlohmann::json patch = {
        {"zero_optimization",
         {{"offload_optimizer",
           {{"device", "nvme"}, {"nvme_path", "/local_nvme"}}}}}};
    std::string setting = "zero_optimization.offload_optimizer.device nvme "
                          "(nvme_path: a directory on the drive)";
    if (config.zero.stage == 0) {
      patch["zero_optimization"]["stage"] = 1;
      setting = (kOffloadStage + setting).str();
    }
    add("offload", setting, patch);
  }
  if (config.pipeline.activationCheckpointInterval == 0)
    add("checkpointing", "pipeline.activation_checkpoint_interval 1",
        {{"pipeline", {{"activation_checkpoint_interval", 1}}}});
  // Tensor parallelism takes ranks from data parallelism: the accumulation
  // grows by as much, so the global batch stays.
  int64_t tp = config.tensorParallel.autotpSize;
  int64_t stageWorld = config.stageRanks() / config.sequenceParallelSize;
  for (int64_t size = tp * 2; size <= stageWorld; size *= 2) {
    if (stageWorld % size)
      continue;
    int64_t accumulation = config.gradientAccumulationSteps * size / tp;
    add("tensor_parallel",
        formatv("tensor_parallel.autotp_size {0} (gradient_accumulation_steps "
                "{1} keeps the batch)",
                size, accumulation)
            .str(),
        {{"tensor_parallel", {{"autotp_size", size}}},
         {"gradient_accumulation_steps", accumulation},
         {"train_micro_batch_size_per_gpu", config.trainMicroBatchSizePerGpu},
         {"train_batch_size", nullptr}});
  }
  for (int64_t stage = config.zero.stage + 1; stage <= 3; ++stage)
    add("zero", formatv("zero_optimization.stage {0}", stage).str(),
        {{"zero_optimization", {{"stage", stage}}}});
  return out;
}

std::string bytes(int64_t n) {
  if (n >= 1000000000)
    return formatv("{0:F2} GB", double(n) / 1e9).str();
  return formatv("{0:F2} MB", double(n) / 1e6).str();
}

} // namespace

llvm::Expected<FitReport> reportFit(llvm::StringRef configPath,
                                    llvm::StringRef modelPath,
                                    const cfg::Config &config) {
  FitReport report;
  report.worldSize = config.worldSize;
  // Every rank on this machine: that is the question.
  report.memory = drv::memoryPerRank(config.worldSize);
  auto peak = plannedPeak(configPath, modelPath, config);
  if (!peak)
    return peak.takeError();
  report.peakBytes = *peak;
  report.fits = fitsIn(*peak, report.memory);
  if (report.fits)
    return report;

  auto root = cfg::readConfigJson(configPath);
  if (!root)
    return root.takeError();
  auto plan = [&](FitAlternative &alternative) {
    nlohmann::json changed = *root;
    changed.merge_patch(alternative.patch);
    cfg::ResolveOptions options;
    options.worldSize = config.worldSize;
    auto resolved = cfg::parseConfig(changed.dump(), options);
    if (!resolved) {
      alternative.error = oneLine(resolved.takeError());
      return;
    }
    auto altPeak = plannedPeak(configPath, modelPath, *resolved);
    if (!altPeak) {
      alternative.error = oneLine(altPeak.takeError());
      return;
    }
    alternative.peakBytes = *altPeak;
    alternative.fits = fitsIn(*altPeak, report.memory);
  };
  report.alternatives = candidates(config);
  for (FitAlternative &alternative : report.alternatives)
    plan(alternative);
  // None alone: all that could be planned, together (the largest tensor-
  // parallel size, the highest ZeRO stage: the later patch wins).
  bool anyFits = llvm::any_of(report.alternatives,
                              [](const FitAlternative &a) { return a.fits; });
  std::vector<const FitAlternative *> plannable;
  for (const FitAlternative &alternative : report.alternatives)
    if (alternative.error.empty())
      plannable.push_back(&alternative);
  if (!anyFits && plannable.size() > 1) {
    FitAlternative all;
    all.kind = "all";
    all.patch = nlohmann::json::object();
    std::vector<std::string> settings;
    for (size_t i = 0; i < plannable.size(); ++i) {
      if (i + 1 < plannable.size() && plannable[i + 1]->kind == plannable[i]->kind)
        continue;
      // update, not merge_patch: a null (a key to remove) must stay.
      all.patch.update(plannable[i]->patch, /*merge_objects=*/true);
      llvm::StringRef setting = plannable[i]->setting;
      if (plannable.back()->kind == "zero")
        setting.consume_front(kOffloadStage);
      settings.push_back(setting.str());
    }
    all.setting = llvm::join(settings, " + ");
    plan(all);
    report.alternatives.push_back(std::move(all));
  }
  return report;
}

std::string summarize(const FitReport &report) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "memory: ";
  if (report.memory.bytes < 0) {
    os << "planned peak " << bytes(report.peakBytes) << " per rank x "
       << report.worldSize
       << " rank(s); this machine's memory is unknown (DS_MEMORY_BYTES=N "
          "sets a rank's)\n";
    return out;
  }
  std::string shared =
      report.memory.source == "DS_MEMORY_BYTES"
          ? std::string()
          : formatv(" shared by {0}", report.memory.ranksHere).str();
  os << (report.fits ? "fits" : "does not fit") << ": planned peak "
     << bytes(report.peakBytes) << " per rank x " << report.worldSize
     << " rank(s) " << (report.fits ? "<=" : ">") << " "
     << bytes(report.memory.bytes) << " per rank (" << report.memory.source
     << shared << ")\n";
  if (report.fits)
    return out;
  std::vector<std::string> fit, tooBig, failed;
  for (const FitAlternative &alternative : report.alternatives) {
    if (!alternative.error.empty())
      failed.push_back(alternative.setting + ": " + alternative.error);
    else
      (alternative.fits ? fit : tooBig)
          .push_back(formatv("{0} ({1}/rank)", alternative.setting,
                             bytes(alternative.peakBytes))
                         .str());
  }
  os << "would fit with: "
     << (fit.empty() ? "none of these settings; more ranks on more machines, "
                       "or a machine with more memory"
                     : llvm::join(fit, "; "))
     << "\n";
  if (!tooBig.empty())
    os << "would not fit with: " << llvm::join(tooBig, "; ") << "\n";
  for (const std::string &line : failed)
    os << "cannot plan: " << line << "\n";
  return out;
}

nlohmann::json toJson(const FitReport &report) {
  nlohmann::json j = {
      {"world_size", report.worldSize},
      {"planned_peak_bytes", report.peakBytes},
      {"memory_per_rank_bytes", report.memory.bytes < 0
                                    ? nlohmann::json(nullptr)
                                    : nlohmann::json(report.memory.bytes)},
      {"memory_source", report.memory.source},
      {"fits", report.fits},
      {"alternatives", nlohmann::json::array()}};
  for (const FitAlternative &alternative : report.alternatives) {
    nlohmann::json a = {{"setting", alternative.setting},
                        {"config", alternative.patch}};
    if (alternative.error.empty()) {
      a["planned_peak_bytes"] = alternative.peakBytes;
      a["fits"] = alternative.fits;
    } else {
      a["error"] = alternative.error;
    }
    j["alternatives"].push_back(a);
  }
  return j;
}
