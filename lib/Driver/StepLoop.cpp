//===- StepLoop.cpp - Run the steps, measure and report them --------------===//
#include "ds/Driver/StepLoop.h"
#include "ds/Driver/Evaluator.h"
#include "ds/Driver/MemoryFit.h"
#include "ds/Driver/Timeline.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sys/mman.h>
#include <unistd.h>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
using llvm::createStringError;

namespace {

/// The bytes of the pages under `tensors` that are in memory now (a page
/// two tensors share counted once).
int64_t residentBytes(llvm::ArrayRef<Tensor> tensors) {
  const uintptr_t page = sysconf(_SC_PAGESIZE);
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const Tensor &t : tensors)
    if (t.data() && t.byteSize() > 0) {
      auto begin = reinterpret_cast<uintptr_t>(t.data());
      ranges.push_back({begin & ~(page - 1),
                        (begin + t.byteSize() + page - 1) & ~(page - 1)});
    }
  llvm::sort(ranges);
  int64_t bytes = 0;
  std::vector<unsigned char> in;
  for (size_t i = 0; i < ranges.size();) {
    auto [begin, end] = ranges[i];
    for (++i; i < ranges.size() && ranges[i].first <= end; ++i)
      end = std::max(end, ranges[i].second);
    in.assign((end - begin) / page, 0);
    if (mincore(reinterpret_cast<void *>(begin), end - begin, in.data()))
      continue;
    for (unsigned char resident : in)
      bytes += (resident & 1) ? page : 0;
  }
  return bytes;
}

} // namespace

llvm::Expected<StepLoop> StepLoop::create(const StepManifest &manifest,
                                          const TrainOptions &options,
                                          const cfg::Config &config, int rank) {
  std::string metricsPath = options.metricsPath;
  if (!metricsPath.empty() && rank > 0) {
    llvm::SmallString<256> path(metricsPath);
    std::string ext = llvm::sys::path::extension(path).str();
    llvm::sys::path::replace_extension(path, "");
    metricsPath = (path + ".rank" + llvm::Twine(rank) + ext).str();
  }
  auto metrics = MetricsWriter::open(metricsPath);
  if (!metrics)
    return metrics.takeError();
  auto csv = CsvMonitor::open(config.csvMonitor, rank);
  if (!csv)
    return csv.takeError();
  return StepLoop(manifest, options, config, rank, std::move(*metrics),
                  std::move(*csv));
}

StepLoop::StepLoop(const StepManifest &manifest, const TrainOptions &options,
                   const cfg::Config &config, int rank, MetricsWriter metrics,
                   CsvMonitor csv)
    : manifest(&manifest), options(&options), config(&config), rank(rank),
      talk(rank == 0 && !options.quiet), metrics(std::move(metrics)),
      csv(std::move(csv)), routing(manifest) {
  if (config.pipeline.stages > 1)
    stage = rank / config.stageRanks();
  if (!options.profilePath.empty())
    profile.emplace();
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    if (manifest.args[i].kind != ArgSpec::State)
      continue;
    const std::string &name = manifest.args[i].name;
    if (name == "loss_scale")
      scaleArg = i;
    else if (name == "skipped_steps")
      skippedArg = i;
    else if (name == "loss_scale_hysteresis")
      hysteresisArg = i;
  }
}

void StepLoop::printSummary(const StateStore &store, const DataFeeder &feeder,
                            double compileSeconds, llvm::StringRef origin,
                            llvm::raw_ostream &log) const {
  if (!talk)
    return;
  log << llvm::formatv(
      "ds-train: {0} parameters, global batch {1} = "
      "micro-batch {2} x accumulation {3} x data-parallel "
      "{4}, seq {5}; ZeRO stage {8}, {9} MB model states "
      "per rank; {10} in {6:f1} s ({7} BLAS call "
      "sites)\n",
      store.parameterCount(), config->trainBatchSize,
      config->trainMicroBatchSizePerGpu, config->gradientAccumulationSteps,
      config->dpSize, feeder.seqLen(), compileSeconds, manifest->blasCallSites,
      config->zero.stage,
      store.residentBytes(config->dpSize, config->zero.stage) / 1e6, origin);
}

llvm::Error StepLoop::run(StepFunction &step, StateStore &store,
                          DataFeeder &feeder, Checkpointer &checkpointer,
                          uint64_t seed, llvm::raw_ostream &log,
                          Evaluator *evaluator) {
  using Clock = std::chrono::steady_clock;
  std::vector<Tensor> args(manifest->args.size()),
      results(manifest->results.size());
  std::optional<size_t> lossAt, lrAt, normAt;
  for (size_t k = 0; k < manifest->results.size(); ++k) {
    const ResultSpec &r = manifest->results[k];
    if (r.updates >= 0)
      continue;
    results[k] = Tensor::zeros(r.dtype, r.shape);
    if (r.name == "loss" || r.name == "lr" || r.name == "grad_norm")
      (r.name == "loss" ? lossAt : r.name == "lr" ? lrAt : normAt) = k;
  }
  store.bind(args, results);
  feeder.bind(args);
  // What the step holds besides its heap buffers (libdsrt counts those):
  // its arguments, the result buffers that are not also arguments (a model
  // state's next value is written over its current one) and the loaded
  // code's arenas.
  int64_t heldBytes = manifest->arenaBytes;
  for (const Tensor &t : args)
    heldBytes += t.byteSize();
  for (size_t k = 0; k < results.size(); ++k)
    if (manifest->results[k].updates < 0)
      heldBytes += results[k].byteSize();
  dsrt_mem_hold(heldBytes);
  auto unhold = llvm::make_scope_exit([&] { dsrt_mem_hold(-heldBytes); });
  // What the process holds besides the step: code, libraries, the
  // compiler's context, the runtime, the data. Its resident set now, less
  // the step's tensors' pages already in memory (the workspaces are not
  // touched before the step runs).
  if (int64_t rss = currentRssBytes()) {
    std::vector<Tensor> held(args);
    for (size_t k = 0; k < results.size(); ++k)
      if (manifest->results[k].updates < 0)
        held.push_back(results[k]);
    processBytes = rss - residentBytes(held);
  }
  int64_t modelStateBytes =
      store.residentBytes(config->dpSize, config->zero.stage);
  auto stateI64 = [&](std::optional<size_t> arg) -> int64_t {
    return arg ? *store.current(*arg).data<int64_t>() : 0;
  };

  const int64_t firstStep = checkpointer.firstStep();
  if (checkpointer.resume() && talk)
    log << llvm::formatv("ds-train: resuming from {0} at step {1}\n",
                         checkpointer.resume()->tagDir(), firstStep);
  for (int64_t s = firstStep; s < options->steps; ++s) {
    auto stepStart = Clock::now();
    // The timeline's step: from feeding the batch to the metrics line.
    TraceSpan stepSpan("step", "step");
    {
      TraceSpan data("data", "data");
      if (llvm::Error err = feeder.fill(s))
        return err;
    }
    checkpointer.beforeStep(s + 1, metrics);
    int64_t skippedBefore = stateI64(skippedArg);
    float scaleBefore = scaleArg ? *store.current(*scaleArg).data<float>() : 0;
    int64_t hysteresisBefore = stateI64(hysteresisArg);
    dsrt_comm_seconds_reset();
    dsrt_phase_reset();
    dsrt_mem_peak_reset();
    if (profile)
      profile->beforeStep(s, firstStep);
    if (llvm::Error err = step.run(args, results))
      return err;
    if (profile)
      profile->afterStep(timesPhases());
    StepReport r;
    r.peakTrackedBytes = dsrt_mem_peak_bytes();
    if (int64_t rss = currentRssBytes())
      r.rssGrowthBytes = rss - rssBaseline;
    if (timesPhases()) {
      r.forwardMs = dsrt_phase_seconds(DSRT_PHASE_FORWARD) * 1000.0;
      r.backwardMs = dsrt_phase_seconds(DSRT_PHASE_BACKWARD) * 1000.0;
      r.reductionMs = dsrt_phase_seconds(DSRT_PHASE_REDUCTION) * 1000.0;
      r.optimizerMs = dsrt_phase_seconds(DSRT_PHASE_OPTIMIZER) * 1000.0;
    }
    r.commMs = dsrt_comm_seconds() * 1000.0;
    r.bubbleMs = dsrt_p2p_seconds() * 1000.0;
    r.stepMs =
        std::chrono::duration<double, std::milli>(Clock::now() - stepStart)
            .count();
    r.loss = *results[*lossAt].data<float>();
    r.lr = *results[*lrAt].data<float>();
    r.gradNorm = *results[*normAt].data<float>();
    routing.observe(results);
    // Samples, for a model without a sequence dim.
    r.tokensPerS = config->trainBatchSize *
                   std::max<int64_t>(feeder.seqLen(), 1) / (r.stepMs / 1000.0);
    r.skipped = skippedArg && stateI64(skippedArg) > skippedBefore;
    if (llvm::Error err = checkStep(s + 1, r, scaleBefore, hysteresisBefore))
      return err;
    if (llvm::Error err = checkpointer.afterStep(s + 1, seed, store, metrics))
      return err;
    if (evaluator && evaluator->due(s + 1)) {
      TraceSpan eval("eval", "eval");
      auto evalLoss = evaluator->run(step, store);
      if (!evalLoss)
        return evalLoss.takeError();
      r.evalLoss = *evalLoss;
      metrics.addToNextLine("eval_loss", *evalLoss);
    }
    if (llvm::Error err = report(s, r, store, modelStateBytes, log))
      return err;
  }
  if (profile && rank == 0)
    return profile->write(options->profilePath, llvm::errs());
  return llvm::Error::success();
}

bool StepLoop::timesPhases() const {
  return config->wallClockBreakdown && !stage;
}

llvm::Error StepLoop::writeCsv(int64_t s, const StepReport &r,
                               const StateStore &store) {
  if (!csv.enabled())
    return llvm::Error::success();
  std::vector<std::pair<std::string, double>> events = {
      {"Train/Samples/train_loss", r.loss}, {"Train/Samples/lr", r.lr}};
  if (scaleArg)
    events.push_back(
        {"Train/Samples/loss_scale", *store.current(*scaleArg).data<float>()});
  if (timesPhases()) {
    // DeepSpeed's backward timer holds its gradient all-reduce.
    events.push_back({"Train/Samples/elapsed_time_ms_forward", r.forwardMs});
    events.push_back({"Train/Samples/elapsed_time_ms_backward",
                      r.backwardMs + r.reductionMs});
    events.push_back(
        {"Train/Samples/elapsed_time_ms_backward_inner", r.backwardMs});
    events.push_back(
        {"Train/Samples/elapsed_time_ms_backward_allreduce", r.reductionMs});
    events.push_back({"Train/Samples/elapsed_time_ms_step", r.optimizerMs});
  }
  return csv.write((s + 1) * config->trainBatchSize, events);
}

llvm::Error StepLoop::checkStep(int64_t step, const StepReport &r,
                                float scaleBefore,
                                int64_t hysteresisBefore) const {
  // An overflow the scaler can no longer answer by lowering the scale
  // would skip every step from here on: stop, as DeepSpeed does.
  const bool dynamicScale = config->fp16.enabled && config->fp16.lossScale == 0;
  if (r.skipped && dynamicScale && scaleBefore <= config->fp16.minLossScale &&
      (config->fp16.hysteresis <= 1 || hysteresisBefore <= 1))
    return createStringError(
        "step %lld: the fp16 gradients overflow at the minimum loss scale "
        "(fp16.min_loss_scale = %g), so every further step would be "
        "skipped; lower fp16.min_loss_scale, lower the learning rate, or "
        "train in bf16",
        (long long)step, config->fp16.minLossScale);
  if (!std::isfinite(r.loss) && !r.skipped)
    return createStringError(
        "step %lld: the loss is %f; training diverged (lower the learning "
        "rate or enable gradient_clipping)",
        (long long)step, r.loss);
  return llvm::Error::success();
}

llvm::Error StepLoop::report(int64_t s, const StepReport &r,
                             const StateStore &store, int64_t modelStateBytes,
                             llvm::raw_ostream &log) {
  std::vector<std::pair<std::string, MetricsWriter::Value>> fields = {
      {"step", s + 1},
      {"loss", double(r.loss)},
      {"lr", double(r.lr)},
      {"grad_norm", double(r.gradNorm)},
      {"tokens_per_s", r.tokensPerS},
      {"step_ms", r.stepMs},
      {"peak_rss_bytes", peakRssBytes()},
      {"comm_ms", r.commMs},
      {"model_state_bytes", modelStateBytes},
      {"rank", int64_t(rank)}};
  fields.push_back({"peak_tracked_bytes", r.peakTrackedBytes});
  if (manifest->plannedPeakBytes >= 0)
    fields.push_back({"planned_peak_bytes", manifest->plannedPeakBytes});
  if (rssBaseline > 0)
    fields.push_back({"rss_growth_bytes", r.rssGrowthBytes});
  fields.push_back({"arena_bytes", manifest->arenaBytes});
  if (processBytes > 0) {
    fields.push_back({"process_bytes", processBytes});
    // The resident set the plan expects: the step's peak (less what an
    // NVMe offload keeps in files) over what the process held before it.
    int64_t step = residentPeakBytes(*manifest, *config);
    if (step >= 0)
      fields.push_back({"planned_rss_bytes", step + processBytes});
  }
  if (manifest->predictedCommMs >= 0) {
    // What the cost model expected of comm_ms (exposed) and in all.
    fields.push_back({"comm_pred_ms", manifest->predictedExposedCommMs});
    fields.push_back({"comm_pred_total_ms", manifest->predictedCommMs});
  }
  if (stage) {
    // A pipeline stage: which one, and its wait on its neighbours.
    fields.push_back({"stage", *stage});
    fields.push_back({"bubble_ms", r.bubbleMs});
  }
  if (scaleArg) {
    fields.push_back(
        {"loss_scale", double(*store.current(*scaleArg).data<float>())});
    fields.push_back({"skipped", r.skipped});
  }
  if (timesPhases()) {
    fields.push_back({"forward_ms", r.forwardMs});
    fields.push_back({"backward_ms", r.backwardMs});
    fields.push_back({"reduction_ms", r.reductionMs});
    fields.push_back({"optimizer_ms", r.optimizerMs});
  }
  routing.addFields(fields);
  metrics.write(fields);
  if (llvm::Error err = writeCsv(s, r, store))
    return err;
  int64_t printEvery = std::max<int64_t>(1, config->stepsPerPrint);
  if (!talk || !((s + 1) % printEvery == 0 || s == 0 ||
                 s + 1 == options->steps || r.evalLoss))
    return llvm::Error::success();
  log << llvm::formatv("step {0,5}/{1}  loss {2:f4}  lr {3:e2}  "
                       "grad_norm {4:f3}  tokens/s {5,8:f0}  step {6:f1} "
                       "ms",
                       s + 1, options->steps, r.loss, r.lr, r.gradNorm,
                       r.tokensPerS, r.stepMs);
  if (r.evalLoss)
    log << llvm::formatv("  eval_loss {0:f4}", *r.evalLoss);
  if (scaleArg)
    log << llvm::formatv("  loss_scale {0}{1}",
                         *store.current(*scaleArg).data<float>(),
                         r.skipped ? "  (skipped: overflow)" : "");
  log << routing.collapseWarning(printEvery) << "\n";
  if (timesPhases())
    // DeepSpeed's timer names: bwd = bwd_inner + bwd_allreduce.
    log << llvm::formatv("time (ms) | fwd: {0:f2} | bwd: {1:f2} | bwd_inner: "
                         "{2:f2} | bwd_allreduce: {3:f2} | step: {4:f2}\n",
                         r.forwardMs, r.backwardMs + r.reductionMs,
                         r.backwardMs, r.reductionMs, r.optimizerMs);
  return llvm::Error::success();
}
