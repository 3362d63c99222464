//===- TrainingPipeline.cpp - Model contract to step contract -------------===//
//
// The one place that maps ds_config.json onto the training passes' options,
// so ds-train and `ds-opt --ds-training-pipeline` build the same step.
//
//===----------------------------------------------------------------------===//
#include "ds/Pipelines/Pipelines.h"
#include "ds/Transforms/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::ds;
namespace cfg = ::ds::config;

llvm::Error mlir::ds::buildTrainingPipeline(OpPassManager &pm,
                                            const cfg::Config &config,
                                            int64_t stage, bool eval,
                                            llvm::StringRef commProfile) {
  if (config.fp16.enabled && config.bf16.enabled)
    return llvm::createStringError(
        "fp16.enabled and bf16.enabled are both true; pick one precision");
  const cfg::PipelineConfig &pipe = config.pipeline;
  bool pipelined = pipe.stages > 1;
  if (stage < 0 || stage >= pipe.stages)
    return llvm::createStringError(
        "pipeline stage " + std::to_string(stage) + " is not one of the " +
        std::to_string(pipe.stages) + " stages of pipeline.stages");

  pm.addPass(createVerifyModelContract());
  if (config.tensorParallel.autotpSize > 1) {
    // First: the grid's tp axis, and the autodiff mirrors f and g.
    TensorParallelOptions tensor;
    tensor.size = config.tensorParallel.autotpSize;
    tensor.dpSize = config.dpSize;
    tensor.sequenceParallel = config.tensorParallel.sequenceParallel;
    pm.addPass(createTensorParallel(tensor));
  }
  if (config.sequenceParallelSize > 1) {
    // On the model contract too: the backward's inverse all-to-alls and
    // the parameters' gradient sums over sp come from the VJPs.
    SequenceParallelOptions sequence;
    sequence.size = config.sequenceParallelSize;
    sequence.dpSize = config.dpSize;
    pm.addPass(createSequenceParallel(sequence));
  }
  if (config.moe.enabled && config.moe.epSize > 1) {
    // On the model contract, so the autodiff mirrors the exchanges.
    MoEExpertParallelOptions experts;
    experts.epSize = config.moe.epSize;
    experts.dpSize = config.dpSize;
    pm.addPass(createMoEExpertParallel(experts));
  }
  if (config.fp16.enabled || config.bf16.enabled) {
    MixedPrecisionOptions precision;
    precision.dtype = config.fp16.enabled ? "f16" : "bf16";
    // bf16 has f32's exponent range: its gradients need no scaling.
    precision.lossScale = config.fp16.enabled;
    // After expert parallelism: its all-to-alls then carry 16-bit tokens.
    pm.addPass(createMixedPrecision(precision));
  }
  if (pipelined) {
    // Only this stage's layers from here on: the autodiff, the step and
    // everything below see one stage.
    PipelineSplitOptions split;
    split.stages = pipe.stages;
    split.stage = stage;
    split.virtualStages = pipe.virtualStages;
    split.partition = cfg::stringifyPartitionMethod(pipe);
    pm.addPass(createPipelineSplit(split));
  }
  {
    // Before the autodiff, so that the gradient recomputes each chunk's
    // logits instead of keeping them all.
    FuseLinearCrossEntropyOptions fuse;
    fuse.minLogits = config.kernels.lossChunkThreshold;
    fuse.chunk = config.kernels.lossChunkRows;
    pm.addPass(createFuseLinearCrossEntropy(fuse));
  }
  if (pipelined && pipe.virtualStages > 1) {
    // Interleaved: each of the stage's model chunks is its own function.
    for (int64_t j = 0; j < pipe.virtualStages; ++j) {
      AutodiffOptions autodiff;
      autodiff.entry = "forward_chunk" + std::to_string(j);
      autodiff.result = "forward_backward_chunk" + std::to_string(j);
      pm.addPass(createAutodiff(autodiff));
    }
  } else {
    pm.addPass(createAutodiff());
  }
  // Before the stage cut, so the cut saves only what the blocks read.
  if (pipe.activationCheckpointInterval > 0)
    pm.addPass(createCheckpointActivations(
        CheckpointActivationsOptions{pipe.activationCheckpointInterval}));

  if (pipelined) {
    PipelineScheduleOptions schedule;
    schedule.schedule = cfg::stringifyPipelineSchedule(pipe.schedule).str();
    schedule.microBatches = config.gradientAccumulationSteps;
    schedule.dpSize = config.dpSize;
    pm.addPass(createPipelineSchedule(schedule));
  } else {
    AccumulateGradsOptions accumulate;
    accumulate.steps = config.gradientAccumulationSteps;
    pm.addPass(createAccumulateGrads(accumulate));
  }
  ClipGradsOptions clip;
  clip.maxNorm = config.gradientClipping;
  pm.addPass(createClipGrads(clip));

  const cfg::OptimizerConfig &opt = config.optimizer;
  OptimizerOptions optimizer;
  optimizer.type = cfg::stringifyOptimizerType(opt.type).str();
  optimizer.lr = opt.lr;
  optimizer.betas = {opt.betas[0], opt.betas[1]};
  optimizer.eps = opt.eps;
  optimizer.weightDecay = opt.weightDecay;
  optimizer.adamWMode = opt.adamWMode;
  optimizer.biasCorrection = opt.biasCorrection;
  optimizer.maxCoeff = opt.maxCoeff;
  optimizer.minCoeff = opt.minCoeff;
  optimizer.momentum = opt.momentum;
  optimizer.dampening = opt.dampening;
  optimizer.nesterov = opt.nesterov;
  pm.addPass(createOptimizer(optimizer));

  const cfg::SchedulerConfig &sched = config.scheduler;
  LRScheduleOptions schedule;
  schedule.type = cfg::stringifySchedulerType(sched.type).str();
  schedule.warmupMinLr = sched.warmupMinLr;
  schedule.warmupMaxLr = sched.warmupMaxLr;
  schedule.warmupNumSteps = sched.warmupNumSteps;
  schedule.warmupType = cfg::stringifyWarmupType(sched.warmupType).str();
  schedule.totalNumSteps = sched.totalNumSteps;
  schedule.warmupMinRatio = sched.warmupMinRatio;
  schedule.cosMinRatio = sched.cosMinRatio;
  schedule.cycleMinLr = sched.cycleMinLr;
  schedule.cycleMaxLr = sched.cycleMaxLr;
  schedule.decayLrRate = sched.decayLrRate;
  schedule.cycleFirstStepSize = sched.cycleFirstStepSize;
  schedule.cycleSecondStepSize = sched.cycleSecondStepSize;
  schedule.cycleFirstStairCount = sched.cycleFirstStairCount;
  schedule.cycleSecondStairCount = sched.cycleSecondStairCount;
  schedule.decayStepSize = sched.decayStepSize;
  pm.addPass(createLRSchedule(schedule));
  if (config.fp16.enabled) {
    const cfg::Fp16Config &fp16 = config.fp16;
    LossScaleOptions scaler;
    scaler.staticScale = fp16.lossScale;
    scaler.initialScalePower = fp16.initialScalePower;
    scaler.scaleWindow = fp16.lossScaleWindow;
    scaler.hysteresis = fp16.hysteresis;
    scaler.minScale = fp16.minLossScale;
    scaler.consecutiveHysteresis = fp16.consecutiveHysteresis;
    pm.addPass(createLossScale(scaler));
  }
  pm.addPass(createVerifyStepContract());
  // Before ds-zero, which gives it the parameters as the step holds them.
  if (eval)
    pm.addPass(createEvalStep());

  // Data parallelism: the step every rank of the dp group runs.
  ZeroOptions zero;
  zero.stage = config.zero.stage;
  zero.dpSize = config.dpSize;
  zero.reduceBucketSize = config.zero.reduceBucketSize;
  zero.allgatherBucketSize = config.zero.allgatherBucketSize;
  zero.paramPersistenceThreshold = config.zero.paramPersistenceThreshold;
  zero.prescaleGradients = config.prescaleGradients;
  zero.gradientPredivideFactor = config.gradientPredivideFactor;
  pm.addPass(createZero(zero));
  pm.addPass(createMoERoutingMetrics());
  pm.addPass(createVerifyStepContract());
  // overlap_comm (or compile.deepcompile): collectives start early and are
  // waited late, so their bytes move while the ranks compute.
  if ((config.zero.overlapComm || config.compile.deepcompile) &&
      config.dpSize > 1) {
    ScheduleCommOptions schedule;
    schedule.maxLiveParameters = config.zero.maxLiveParameters;
    schedule.prefetchBucketSize = config.zero.prefetchBucketSize;
    schedule.reduceBucketSize = config.zero.reduceBucketSize;
    schedule.maxReuseDistance = config.zero.maxReuseDistance;
    schedule.printPlan = config.compile.debugLog;
    schedule.commProfile = commProfile.str();
    // DeepCompile's selective gather is part of deepcompile, not of
    // DeepSpeed's overlap_comm.
    schedule.selectiveUnshard = config.compile.deepcompile;
    pm.addPass(createScheduleComm(schedule));
  }
  // Last: the timers mark where each phase of the final step begins.
  if (config.wallClockBreakdown)
    pm.addPass(createPhaseTimers());
  return llvm::Error::success();
}

namespace {
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> config{*this, "config",
                             llvm::cl::desc("ds_config.json to follow")};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("ranks the batch triangle is resolved against"),
      llvm::cl::init(1)};
  Option<int64_t> stage{
      *this, "stage",
      llvm::cl::desc("the pipeline stage to build (with pipeline.stages > 1)"),
      llvm::cl::init(0)};
  Option<bool> eval{
      *this, "eval",
      llvm::cl::desc("also build @eval_step (ds-eval-step), as ds-train "
                     "--eval-data does"),
      llvm::cl::init(false)};
  Option<std::string> commProfile{
      *this, "comm-profile",
      llvm::cl::desc("measured collective times (ds-report --comm-profile) "
                     "for ds-schedule-comm's cost model, as ds-train "
                     "--comm-profile gives it")};
};
} // namespace

void mlir::ds::registerTrainingPipeline() {
  registerPassPipeline(
      "ds-training-pipeline",
      "Model contract to step contract (autodiff, accumulation, clipping, "
      "optimizer, LR schedule) as a ds_config.json asks",
      [](OpPassManager &pm, StringRef optionString,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainingPipelineOptions options;
        if (failed(options.parseFromString(optionString)))
          return failure();
        if (options.config.empty())
          return errorHandler("ds-training-pipeline needs config=FILE (a "
                              "ds_config.json)");
        llvm::Expected<cfg::Config> config =
            cfg::loadConfig(options.config, {options.worldSize});
        if (!config)
          return errorHandler(llvm::toString(config.takeError()));
        if (llvm::Error err = buildTrainingPipeline(
                pm, *config, options.stage, options.eval, options.commProfile))
          return errorHandler(llvm::toString(std::move(err)));
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionHandler) {
        optionHandler(TrainingPipelineOptions());
      });
}
