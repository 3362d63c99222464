//===- Checkpointer.cpp - --save, --save-interval and --load of a run -----===//
#include "ds/Driver/Checkpointer.h"
#include "ds/Driver/Timeline.h"
#include "dsrt/dsrt.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <nlohmann/json.hpp>

#include <cstdio>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

namespace {

std::string modelHash(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return "";
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx",
           (unsigned long long)llvm::xxh3_64bits((*buf)->getBuffer()));
  return hex;
}

const char *orderName(DataOrder order) {
  return order == DataOrder::Shuffled ? "shuffled" : "sequential";
}

/// Expert parallelism is a layout a checkpoint does not keep (ep_size may
/// change), but the experts are the model's: their number must match.
llvm::Error checkExperts(const std::string &where, const std::string &saved,
                         const cfg::Config &config) {
  auto json = nlohmann::json::parse(saved, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("moe") ||
      !config.moe.enabled)
    return llvm::Error::success();
  const nlohmann::json &moe = json["moe"];
  int64_t experts =
      moe.value("enabled", false) ? moe.value("num_experts", 0) : int64_t(0);
  if (experts <= 0 || experts == config.moe.numExperts)
    return llvm::Error::success();
  return createStringError(
      "%s: saved with moe.num_experts %lld, this config has %lld; the "
      "experts are part of the model: give num_experts %lld (ep_size may "
      "change)",
      where.c_str(), (long long)experts, (long long)config.moe.numExperts,
      (long long)experts);
}

} // namespace

llvm::Expected<Checkpointer> Checkpointer::open(const TrainOptions &options,
                                                const cfg::Config &config,
                                                const CkptPlace &place) {
  Checkpointer ckpt(options, config, place);
  if (options.saveInterval < 0)
    return createStringError("--save-interval must be >= 0, got %lld",
                             (long long)options.saveInterval);
  if (!options.saveDir.empty()) {
    auto created = CheckpointSaver::create(options.saveDir,
                                           /*async=*/!options.saveSync, place);
    if (!created)
      return created.takeError();
    ckpt.saver = std::move(*created);
  }
  if (!options.loadDir.empty()) {
    if (llvm::Error err = ckpt.openLoad())
      return std::move(err);
  } else if (!options.loadTag.empty()) {
    return createStringError("--tag needs --load DIR");
  }
  if (ckpt.saver)
    if (llvm::Error err = ckpt.saver->checkPlannedSaves(
            ckpt.firstStep(), options.steps, options.saveInterval))
      return std::move(err);
  return std::move(ckpt);
}

llvm::Error Checkpointer::openLoad() {
  if (!options->initFrom.empty())
    return createStringError("give --load (the whole training state) or "
                             "--init-from (weights only), not both");
  auto ckpt = CheckpointReader::open(options->loadDir, options->loadTag);
  if (!ckpt)
    return ckpt.takeError();
  const CkptRunInfo &run = ckpt->run();
  std::string where = ckpt->tagDir().str();
  if (options->steps <= run.step)
    return createStringError("%s is at step %lld; --steps %lld leaves "
                             "nothing to run (--steps is the step the "
                             "continued run ends at)",
                             where.c_str(), (long long)run.step,
                             (long long)options->steps);
  if (run.globalBatch != config->trainBatchSize)
    return createStringError(
        "%s: saved with train_batch_size %lld, this config has %lld; the "
        "data position is counted in global batches, keep it the same "
        "(micro-batch, accumulation and world size may change)",
        where.c_str(), (long long)run.globalBatch,
        (long long)config->trainBatchSize);
  if (llvm::Error err = checkExperts(where, run.configJson, *config))
    return err;
  std::string order = orderName(options->order);
  if (run.dataOrder != order)
    return createStringError("%s: saved with --data-order %s, this run "
                             "uses %s; give --data-order %s",
                             where.c_str(), run.dataOrder.c_str(),
                             order.c_str(), run.dataOrder.c_str());
  if (!seed)
    seed = run.seedOption;
  resumed.emplace(std::move(*ckpt));
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::vector<char>>>
Checkpointer::readState(const StepManifest &manifest, uint64_t runSeed) const {
  if (!resumed)
    return std::vector<std::vector<char>>();
  if (runSeed != resumed->run().seed)
    return createStringError(
        "%s: saved by a run with seed %llu, but this run's seed is %llu; "
        "the sample order and dropout masks would differ (drop --seed or "
        "give the checkpoint's)",
        resumed->tagDir().str().c_str(),
        (unsigned long long)resumed->run().seed, (unsigned long long)runSeed);
  auto values = readCheckpointState(*resumed, manifest, place.programRank);
  // Ranks read different slices: all must agree before the compile goes
  // on, or the ones that succeeded would wait on the others forever.
  int32_t failed = values ? 0 : 1;
  if (place.worldSize > 1 &&
      dsrt_all_reduce(dsrt_comm_world(), &failed, &failed, 1, DSRT_I32,
                      DSRT_MAX) != 0) {
    if (!values)
      llvm::consumeError(values.takeError());
    return createStringError("--load: %s", dsrt_last_error());
  }
  if (!values)
    return values.takeError();
  if (failed)
    return createStringError("--load %s: another rank could not read its "
                             "part of the checkpoint (its error says why)",
                             options->loadDir.c_str());
  return values;
}

void Checkpointer::beforeStep(int64_t step, MetricsWriter &metrics) {
  if (saver)
    if (double waited = saver->beforeStep(step))
      metrics.addToNextLine("checkpoint_copy_wait_ms", waited * 1000.0);
}

llvm::Error Checkpointer::afterStep(int64_t step, uint64_t runSeed,
                                    const StateStore &store,
                                    MetricsWriter &metrics) {
  bool due = step == options->steps ||
             (options->saveInterval > 0 && step % options->saveInterval == 0);
  if (!saver || !due)
    return llvm::Error::success();
  // What the step loop waits for; a background writer's time is not in it.
  TraceSpan span("checkpoint", "checkpoint_save");
  CkptRunInfo run;
  run.step = step;
  run.seed = runSeed;
  run.seedOption = seed;
  run.dataOrder = orderName(options->order);
  run.globalBatch = config->trainBatchSize;
  run.worldSize = place.worldSize;
  run.dpSize = config->dpSize;
  run.epSize = config->moe.enabled ? config->moe.epSize : 1;
  run.stages = config->pipeline.stages;
  run.zeroStage = config->zero.stage;
  run.configJson = cfg::toJson(*config).dump();
  run.modelPath = options->modelPath;
  run.modelHash = modelHash(options->modelPath);
  if (llvm::Error err = tolerate(saver->commitPrevious(), /*last=*/false))
    return err;
  auto tensors = store.checkpointTensors();
  if (!tensors)
    return tensors.takeError();
  if (llvm::Error err = tolerate(saver->save(run, *tensors),
                                 /*last=*/step == options->steps))
    return err;
  metrics.addToNextLine("checkpoint_stall_ms",
                        saver->lastStallSeconds() * 1000.0);
  metrics.addToNextLine("checkpoint_bytes", saver->lastBytes());
  if (saver->lastWriteSeconds() > 0)
    metrics.addToNextLine("checkpoint_write_s", saver->lastWriteSeconds());
  return llvm::Error::success();
}

llvm::Error Checkpointer::tolerate(llvm::Error err, bool last) {
  if (!err || !options->continueOnSaveError || last)
    return err;
  ++failedSaves;
  llvm::errs() << "ds-train: warning: " << llvm::toString(std::move(err))
               << "; training continues (--on-save-error continue)\n";
  return llvm::Error::success();
}

llvm::Error Checkpointer::finish(bool talk, llvm::raw_ostream &log) {
  if (!saver)
    return llvm::Error::success();
  if (llvm::Error err = saver->finish())
    return err;
  if (failedSaves)
    llvm::errs() << llvm::formatv("ds-train: warning: {0} checkpoint save(s) "
                                  "failed during the run (see above)\n",
                                  failedSaves);
  if (talk)
    log << llvm::formatv("ds-train: checkpoint {0}/{1}: {2:f1} MB per rank "
                         "written in {3:f3} s\n",
                         options->saveDir, ckptTagForStep(options->steps),
                         saver->lastBytes() / 1e6, saver->lastWriteSeconds());
  return llvm::Error::success();
}

void Checkpointer::abandon() {
  if (saver)
    saver->abandon();
}
