//===- ConfigTest.cpp - ds_config.json parsing and resolution -------------===//
//
// Every expected value here is written by hand from DeepSpeed's defaults and
// the batch equation, never computed by the code under test.
//
//===----------------------------------------------------------------------===//

#include "ds/Config/Config.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace ds::config;

namespace {

Config parseOk(const std::string &text, int64_t worldSize = 1) {
  llvm::Expected<Config> config = parseConfig(text, ResolveOptions{worldSize});
  if (!config) {
    ADD_FAILURE() << "unexpected error: " << llvm::toString(config.takeError());
    return Config();
  }
  return *config;
}

std::string parseError(const std::string &text, int64_t worldSize = 1) {
  llvm::Expected<Config> config = parseConfig(text, ResolveOptions{worldSize});
  if (config) {
    ADD_FAILURE() << "expected an error for: " << text;
    return "";
  }
  return llvm::toString(config.takeError());
}

/// The smallest valid config plus `extra` top-level members.
std::string withBatch(const std::string &extra) {
  return R"({"train_batch_size": 8)" + (extra.empty() ? "" : ", " + extra) +
         "}";
}

//===----------------------------------------------------------------------===//
// Defaults
//===----------------------------------------------------------------------===//

TEST(ConfigDefaults, TopLevel) {
  Config c = parseOk(withBatch(""));
  // DeepSpeed's GRADIENT_CLIPPING_DEFAULT since 0.19.3.
  EXPECT_EQ(c.gradientClipping, 1.0);
  EXPECT_FALSE(c.prescaleGradients);
  EXPECT_EQ(c.gradientPredivideFactor, 1.0);
  EXPECT_EQ(c.stepsPerPrint, 10);
  EXPECT_FALSE(c.wallClockBreakdown);
  EXPECT_TRUE(c.ignoredKeys.empty());
  EXPECT_EQ(c.worldSize, 1);
  EXPECT_EQ(c.dpSize, 1);
}

TEST(ConfigDefaults, ZeroOptimization) {
  Config c = parseOk(withBatch(""));
  EXPECT_EQ(c.zero.stage, 0);
  EXPECT_EQ(c.zero.reduceBucketSize, 500000000);
  EXPECT_EQ(c.zero.allgatherBucketSize, 500000000);
  EXPECT_FALSE(c.zero.overlapComm);
  EXPECT_TRUE(c.zero.contiguousGradients);
  EXPECT_TRUE(c.zero.reduceScatter);
  EXPECT_TRUE(c.zero.allgatherPartitions);
  EXPECT_EQ(c.zero.prefetchBucketSize, 50000000);
  EXPECT_EQ(c.zero.paramPersistenceThreshold, 100000);
  EXPECT_EQ(c.zero.maxLiveParameters, 1000000000);
  EXPECT_EQ(c.zero.maxReuseDistance, 1000000000);
}

TEST(ConfigDefaults, OverlapCommOnlyForStage3) {
  EXPECT_FALSE(parseOk(withBatch(R"("zero_optimization": {"stage": 1})"))
                   .zero.overlapComm);
  EXPECT_FALSE(parseOk(withBatch(R"("zero_optimization": {"stage": 2})"))
                   .zero.overlapComm);
  EXPECT_TRUE(parseOk(withBatch(R"("zero_optimization": {"stage": 3})"))
                  .zero.overlapComm);
  EXPECT_FALSE(parseOk(withBatch(
                           R"("zero_optimization": {"stage": 3,
                               "overlap_comm": false})"))
                   .zero.overlapComm);
}

TEST(ConfigDefaults, Fp16AndBf16) {
  Config c = parseOk(withBatch(R"("fp16": {"enabled": true})"));
  EXPECT_TRUE(c.fp16.enabled);
  EXPECT_EQ(c.fp16.lossScale, 0.0);
  EXPECT_EQ(c.fp16.initialScalePower, 16);
  EXPECT_EQ(c.fp16.lossScaleWindow, 1000);
  EXPECT_EQ(c.fp16.hysteresis, 2);
  EXPECT_FALSE(c.fp16.consecutiveHysteresis);
  EXPECT_EQ(c.fp16.minLossScale, 1.0);
  EXPECT_FALSE(c.bf16.enabled);
  EXPECT_FALSE(parseOk(withBatch("")).fp16.enabled);
}

TEST(ConfigDefaults, NoOptimizerSectionMeansAdam) {
  Config c = parseOk(withBatch(""));
  EXPECT_FALSE(c.optimizerGiven);
  EXPECT_EQ(c.optimizer.type, OptimizerType::Adam);
  EXPECT_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.optimizer.betas[0], 0.9);
  EXPECT_EQ(c.optimizer.betas[1], 0.999);
  EXPECT_EQ(c.optimizer.eps, 1e-8);
  EXPECT_EQ(c.optimizer.weightDecay, 0.0);
  EXPECT_TRUE(c.optimizer.biasCorrection);
  EXPECT_TRUE(c.optimizer.adamWMode);
  EXPECT_EQ(c.scheduler.type, SchedulerType::None);
}

TEST(ConfigDefaults, LambParams) {
  Config c = parseOk(withBatch(R"("optimizer": {"type": "Lamb"})"));
  EXPECT_EQ(c.optimizer.type, OptimizerType::Lamb);
  EXPECT_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.optimizer.maxCoeff, 10.0);
  EXPECT_EQ(c.optimizer.minCoeff, 0.01);
}

TEST(ConfigDefaults, SgdParams) {
  Config c = parseOk(
      withBatch(R"("optimizer": {"type": "SGD", "params": {"lr": 0.1}})"));
  EXPECT_EQ(c.optimizer.type, OptimizerType::SGD);
  EXPECT_EQ(c.optimizer.lr, 0.1);
  EXPECT_EQ(c.optimizer.momentum, 0.0);
  EXPECT_EQ(c.optimizer.dampening, 0.0);
  EXPECT_FALSE(c.optimizer.nesterov);
  EXPECT_EQ(c.optimizer.weightDecay, 0.0);
}

TEST(ConfigDefaults, WarmupLRPeaksAtOptimizerLr) {
  Config c = parseOk(withBatch(R"("optimizer": {"type": "AdamW",
                                    "params": {"lr": 3e-4}},
                                  "scheduler": {"type": "WarmupLR"})"));
  EXPECT_EQ(c.scheduler.type, SchedulerType::WarmupLR);
  EXPECT_EQ(c.scheduler.warmupMinLr, 0.0);
  EXPECT_EQ(c.scheduler.warmupMaxLr, 3e-4);
  EXPECT_EQ(c.scheduler.warmupNumSteps, 1000);
  EXPECT_EQ(c.scheduler.warmupType, WarmupType::Log);
}

TEST(ConfigDefaults, WarmupCosineLR) {
  Config c = parseOk(withBatch(R"("scheduler": {"type": "WarmupCosineLR",
                                    "params": {"total_num_steps": 5000}})"));
  EXPECT_EQ(c.scheduler.totalNumSteps, 5000);
  EXPECT_EQ(c.scheduler.warmupMinRatio, 0.0);
  EXPECT_EQ(c.scheduler.warmupNumSteps, 1000);
  EXPECT_EQ(c.scheduler.cosMinRatio, 0.0001);
  EXPECT_EQ(c.scheduler.warmupType, WarmupType::Log);
}

TEST(ConfigDefaults, OneCycle) {
  Config c = parseOk(withBatch(R"("scheduler": {"type": "OneCycle",
      "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-3}})"));
  const SchedulerConfig &s = c.scheduler;
  EXPECT_EQ(s.type, SchedulerType::OneCycle);
  EXPECT_EQ(s.cycleMinLr, 1e-5);
  EXPECT_EQ(s.cycleMaxLr, 1e-3);
  EXPECT_EQ(s.decayLrRate, 0.0);
  EXPECT_EQ(s.cycleFirstStepSize, 2000);
  EXPECT_EQ(s.cycleSecondStepSize, 2000);
  EXPECT_EQ(s.cycleFirstStairCount, 0);
  EXPECT_EQ(s.cycleSecondStairCount, 0);
  EXPECT_EQ(s.decayStepSize, 0);
  EXPECT_TRUE(s.cycleMomentum);
  EXPECT_EQ(s.cycleMinMom, 0.8);
  EXPECT_EQ(s.cycleMaxMom, 0.9);
  EXPECT_EQ(s.decayMomRate, 0.0);
}

TEST(ConfigDefaults, OneCycleSecondHalfMirrorsFirst) {
  Config c = parseOk(withBatch(R"("scheduler": {"type": "OneCycle",
      "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-3,
                 "cycle_first_step_size": 500, "cycle_first_stair_count": 3}})"));
  EXPECT_EQ(c.scheduler.cycleSecondStepSize, 500);
  EXPECT_EQ(c.scheduler.cycleSecondStairCount, 3);
}

TEST(ConfigDefaults, PipelineMoEAndTensorParallel) {
  Config c = parseOk(R"({"train_micro_batch_size_per_gpu": 2,
                         "gradient_accumulation_steps": 4})");
  EXPECT_EQ(c.pipeline.stages, 1);
  EXPECT_EQ(c.pipeline.partitionMethod, PartitionMethod::Parameters);
  EXPECT_EQ(c.pipeline.activationCheckpointInterval, 0);
  EXPECT_EQ(c.pipeline.microBatches, 4);
  EXPECT_FALSE(c.moe.enabled);
  EXPECT_EQ(c.tensorParallel.autotpSize, 1);
}

TEST(ConfigDefaults, MoESection) {
  Config c = parseOk(withBatch(R"("moe": {"num_experts": 4})"));
  EXPECT_TRUE(c.moe.enabled);
  EXPECT_EQ(c.moe.numExperts, 4);
  EXPECT_EQ(c.moe.epSize, 1);
  EXPECT_EQ(c.moe.k, 1);
  EXPECT_EQ(c.moe.capacityFactor, 1.0);
  EXPECT_EQ(c.moe.evalCapacityFactor, 1.0);
  EXPECT_EQ(c.moe.minCapacity, 4);
  EXPECT_TRUE(c.moe.dropTokens);
  EXPECT_EQ(c.moe.auxLossCoef, 0.01);
}

TEST(ConfigDefaults, AutotpSizeZeroMeansOne) {
  Config c = parseOk(withBatch(R"("tensor_parallel": {"autotp_size": 0})"));
  EXPECT_EQ(c.tensorParallel.autotpSize, 1);
}

TEST(ConfigDefaults, ResolvedJsonHasEveryDefault) {
  nlohmann::json j = toJson(parseOk(withBatch("")));
  EXPECT_EQ(j["train_batch_size"], 8);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 8);
  EXPECT_EQ(j["gradient_accumulation_steps"], 1);
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_EQ(j["dp_size"], 1);
  EXPECT_EQ(j["gradient_clipping"], 1.0);
  EXPECT_EQ(j["prescale_gradients"], false);
  EXPECT_EQ(j["gradient_predivide_factor"], 1.0);
  EXPECT_EQ(j["zero_optimization"]["reduce_bucket_size"], 500000000);
  EXPECT_EQ(j["zero_optimization"]["stage3_max_reuse_distance"], 1000000000);
  EXPECT_EQ(j["fp16"]["initial_scale_power"], 16);
  EXPECT_EQ(j["optimizer"]["type"], "Adam");
  EXPECT_EQ(j["optimizer"]["params"]["betas"], nlohmann::json({0.9, 0.999}));
  EXPECT_TRUE(j["scheduler"].is_null());
  EXPECT_EQ(j["pipeline"]["partition_method"], "parameters");
  EXPECT_EQ(j["moe"]["enabled"], false);
  EXPECT_EQ(j["tensor_parallel"]["autotp_size"], 1);
  EXPECT_EQ(j["ignored_keys"], nlohmann::json::array());
}

//===----------------------------------------------------------------------===//
// Optimizer and scheduler names
//===----------------------------------------------------------------------===//

TEST(ConfigOptimizer, TypeNamesAreCaseInsensitive) {
  EXPECT_EQ(
      parseOk(withBatch(R"("optimizer": {"type": "adamw"})")).optimizer.type,
      OptimizerType::AdamW);
  EXPECT_EQ(
      parseOk(withBatch(R"("optimizer": {"type": "ADAM"})")).optimizer.type,
      OptimizerType::Adam);
  EXPECT_EQ(
      parseOk(withBatch(R"("optimizer": {"type": "lamb"})")).optimizer.type,
      OptimizerType::Lamb);
  EXPECT_EQ(
      parseOk(withBatch(R"("optimizer": {"type": "sgd"})")).optimizer.type,
      OptimizerType::SGD);
}

TEST(ConfigOptimizer, AdamWithL2WeightDecay) {
  Config c = parseOk(withBatch(R"("optimizer": {"type": "Adam",
      "params": {"adam_w_mode": false, "weight_decay": 0.01}})"));
  EXPECT_FALSE(c.optimizer.adamWMode);
  EXPECT_EQ(c.optimizer.weightDecay, 0.01);
}

TEST(ConfigOptimizer, AdamWRejectsL2Mode) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "AdamW",
                "params": {"adam_w_mode": false}})")),
            "optimizer.params.adam_w_mode: AdamW always decouples weight "
            "decay; use type Adam for L2 weight decay");
}

TEST(ConfigOptimizer, UnsupportedDeepSpeedOptimizer) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "OneBitAdam"})")),
            "optimizer.type: ds does not support the \"OneBitAdam\" "
            "optimizer; use Adam, AdamW, Lamb or SGD");
}

TEST(ConfigOptimizer, MisspeltTypeGetsSuggestion) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adm"})")),
            "optimizer.type: unknown optimizer \"Adm\"; did you mean "
            "\"Adam\"?");
}

TEST(ConfigOptimizer, MissingType) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"params": {"lr": 0.1}})")),
            "optimizer.type: missing; one of Adam, AdamW, Lamb, SGD");
}

TEST(ConfigOptimizer, ParameterOfAnotherOptimizer) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "params": {"momentum": 0.9}})")),
            "optimizer.params.momentum: Adam has no parameter \"momentum\"; "
            "its parameters are lr, betas, eps, weight_decay, "
            "bias_correction, adam_w_mode");
}

TEST(ConfigOptimizer, NesterovNeedsMomentum) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "SGD",
                "params": {"nesterov": true}})")),
            "optimizer.params.nesterov: Nesterov momentum needs momentum > 0 "
            "and dampening 0, got momentum 0.0 and dampening 0.0");
}

TEST(ConfigOptimizer, LambCoefficientOrder) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Lamb",
                "params": {"max_coeff": 0.001}})")),
            "optimizer.params.max_coeff: 0.001 is below min_coeff 0.01");
}

TEST(ConfigScheduler, UnknownTypeGetsSuggestion) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupLRR"})")),
            "scheduler.type: unknown scheduler \"WarmupLRR\"; did you mean "
            "\"WarmupLR\"?");
}

TEST(ConfigScheduler, LRRangeTestUnsupported) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "LRRangeTest"})")),
            "scheduler.type: ds does not support the LRRangeTest schedule; "
            "use WarmupLR, WarmupDecayLR, WarmupCosineLR or OneCycle");
}

TEST(ConfigScheduler, WarmupDecayNeedsTotalSteps) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupDecayLR",
                "params": {"warmup_num_steps": 10}})")),
            "scheduler.params.total_num_steps: required by WarmupDecayLR");
}

TEST(ConfigScheduler, OneCycleNeedsBounds) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "OneCycle",
                "params": {"cycle_max_lr": 0.1}})")),
            "scheduler.params.cycle_min_lr: required by OneCycle");
}

TEST(ConfigScheduler, ParameterOfAnotherScheduler) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupLR",
                "params": {"total_num_steps": 100}})")),
            "scheduler.params.total_num_steps: WarmupLR has no parameter "
            "\"total_num_steps\"; its parameters are warmup_min_lr, "
            "warmup_max_lr, warmup_num_steps, warmup_type");
}

TEST(ConfigScheduler, BadWarmupType) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupLR",
                "params": {"warmup_type": "cosine"}})")),
            "scheduler.params.warmup_type: must be \"log\" or \"linear\", got "
            "\"cosine\"");
}

//===----------------------------------------------------------------------===//
// The batch triangle
//===----------------------------------------------------------------------===//

TEST(ConfigBatch, TrainAndMicroGiveAccumulation) {
  Config c = parseOk(
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4})", 8);
  EXPECT_EQ(c.gradientAccumulationSteps, 2);
  EXPECT_EQ(c.dpSize, 8);
}

TEST(ConfigBatch, TrainAndAccumulationGiveMicro) {
  Config c = parseOk(
      R"({"train_batch_size": 64, "gradient_accumulation_steps": 4})", 4);
  EXPECT_EQ(c.trainMicroBatchSizePerGpu, 4);
}

TEST(ConfigBatch, MicroAndAccumulationGiveTrain) {
  Config c = parseOk(R"({"train_micro_batch_size_per_gpu": 4,
                         "gradient_accumulation_steps": 8})",
                     2);
  EXPECT_EQ(c.trainBatchSize, 64);
}

TEST(ConfigBatch, TrainAloneMeansNoAccumulation) {
  Config c = parseOk(R"({"train_batch_size": 32})", 8);
  EXPECT_EQ(c.trainMicroBatchSizePerGpu, 4);
  EXPECT_EQ(c.gradientAccumulationSteps, 1);
}

TEST(ConfigBatch, MicroAloneMeansNoAccumulation) {
  Config c = parseOk(R"({"train_micro_batch_size_per_gpu": 4})", 8);
  EXPECT_EQ(c.trainBatchSize, 32);
  EXPECT_EQ(c.gradientAccumulationSteps, 1);
}

TEST(ConfigBatch, AllThreeConsistent) {
  Config c = parseOk(R"({"train_batch_size": 64,
                         "train_micro_batch_size_per_gpu": 4,
                         "gradient_accumulation_steps": 2})",
                     8);
  EXPECT_EQ(c.trainBatchSize, 64);
  EXPECT_EQ(c.trainMicroBatchSizePerGpu, 4);
  EXPECT_EQ(c.gradientAccumulationSteps, 2);
}

TEST(ConfigBatch, PipelineStagesShrinkDataParallel) {
  Config c = parseOk(R"({"train_micro_batch_size_per_gpu": 4,
                         "gradient_accumulation_steps": 8,
                         "pipeline": {"stages": 2}})",
                     8);
  EXPECT_EQ(c.dpSize, 4);
  EXPECT_EQ(c.trainBatchSize, 128);
  EXPECT_EQ(c.pipeline.microBatches, 8);
}

TEST(ConfigBatch, TensorParallelShrinksDataParallel) {
  // dp = world / (T x PP); TP inside a pipeline is refused (see
  // test/Config/tensor-parallel-errors.test).
  Config c = parseOk(R"({"train_batch_size": 16,
                         "train_micro_batch_size_per_gpu": 4,
                         "gradient_clipping": 0,
                         "tensor_parallel": {"autotp_size": 4}})",
                     8);
  EXPECT_EQ(c.dpSize, 2);
  EXPECT_EQ(c.gradientAccumulationSteps, 2);
}

TEST(ConfigBatch, InconsistentTriangle) {
  EXPECT_EQ(parseError(R"({"train_batch_size": 512,
                           "train_micro_batch_size_per_gpu": 4,
                           "gradient_accumulation_steps": 8})",
                       8),
            "train_batch_size 512 != train_micro_batch_size_per_gpu 4 x "
            "gradient_accumulation_steps 8 x data-parallel size 8 (= 256); "
            "fix one of the three or the world size");
}

TEST(ConfigBatch, NonIntegerAccumulation) {
  EXPECT_EQ(
      parseError(
          R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3})",
          4),
      "train_batch_size 100 is not a multiple of "
      "train_micro_batch_size_per_gpu 3 x data-parallel size 4 (= 12), so "
      "gradient_accumulation_steps would not be an integer");
}

TEST(ConfigBatch, NonIntegerMicroBatch) {
  EXPECT_EQ(
      parseError(
          R"({"train_batch_size": 100, "gradient_accumulation_steps": 3})", 2),
      "train_batch_size 100 is not a multiple of gradient_accumulation_steps "
      "3 x data-parallel size 2 (= 6), so train_micro_batch_size_per_gpu "
      "would not be an integer");
}

TEST(ConfigBatch, TrainAloneNotDivisibleByDataParallel) {
  EXPECT_EQ(parseError(R"({"train_batch_size": 10})", 4),
            "train_batch_size 10 is not a multiple of the data-parallel size "
            "4, so train_micro_batch_size_per_gpu would not be an integer");
}

TEST(ConfigBatch, WorldNotDivisibleByModelParallel) {
  EXPECT_EQ(parseError(R"({"train_micro_batch_size_per_gpu": 4,
                           "pipeline": {"stages": 4}})",
                       6),
            "world size 6 is not divisible by pipeline.stages 4 x "
            "tensor_parallel.autotp_size 1 (= 4)");
}

TEST(ConfigBatch, NoneGiven) {
  EXPECT_EQ(parseError("{}"),
            "no batch size given; set train_batch_size or "
            "train_micro_batch_size_per_gpu (ds derives the rest from "
            "train_batch_size = train_micro_batch_size_per_gpu x "
            "gradient_accumulation_steps x data-parallel size)");
}

TEST(ConfigBatch, AccumulationAloneIsNotEnough) {
  std::string error = parseError(R"({"gradient_accumulation_steps": 4})");
  EXPECT_EQ(error.rfind("gradient_accumulation_steps alone does not fix the "
                        "batch; set train_batch_size or "
                        "train_micro_batch_size_per_gpu",
                        0),
            0u)
      << error;
}

TEST(ConfigBatch, ZeroBatchSize) {
  EXPECT_EQ(parseError(R"({"train_batch_size": 0})"),
            "train_batch_size: must be >= 1, got 0");
}

TEST(ConfigBatch, WorldSizeMustBePositive) {
  EXPECT_EQ(parseError(withBatch(""), 0), "world size must be >= 1, got 0");
}

//===----------------------------------------------------------------------===//
// Unknown, ignored and unsupported keys
//===----------------------------------------------------------------------===//

TEST(ConfigKeys, UnknownNestedKeyGetsSuggestion) {
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {"stgae": 2})")),
            "zero_optimization.stgae: unknown key; did you mean \"stage\"?");
}

TEST(ConfigKeys, UnknownTopLevelKeyGetsSuggestion) {
  EXPECT_EQ(parseError(R"({"train_batch_sise": 8})"),
            "train_batch_sise: unknown key; did you mean "
            "\"train_batch_size\"?");
}

TEST(ConfigKeys, UnknownKeyFarFromAnyKnownKey) {
  EXPECT_EQ(parseError(withBatch(R"("xylophone_quartet": 1)")),
            "xylophone_quartet: unknown key");
}

TEST(ConfigKeys, UnknownOptimizerParam) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "AdamW",
                "params": {"wieght_decay": 0.1}})")),
            "optimizer.params.wieght_decay: unknown key; did you mean "
            "\"weight_decay\"?");
}

TEST(ConfigKeys, UnknownSchedulerParam) {
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupLR",
                "params": {"warmup_num_step": 10}})")),
            "scheduler.params.warmup_num_step: unknown key; did you mean "
            "\"warmup_num_steps\"?");
}

TEST(ConfigKeys, UnknownKeyInEverySection) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"enabeld": true})")),
            "fp16.enabeld: unknown key; did you mean \"enabled\"?");
  EXPECT_EQ(parseError(withBatch(R"("bf16": {"enable": true})")),
            "bf16.enable: unknown key; did you mean \"enabled\"?");
  EXPECT_EQ(parseError(withBatch(R"("pipeline": {"stage": 2})")),
            "pipeline.stage: unknown key; did you mean \"stages\"?");
  EXPECT_EQ(parseError(withBatch(R"("moe": {"num_expert": 2})")),
            "moe.num_expert: unknown key; did you mean \"num_experts\"?");
  EXPECT_EQ(parseError(withBatch(R"("tensor_parallel": {"tp_size": 2})")),
            "tensor_parallel.tp_size: unknown key");
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "param": {}})")),
            "optimizer.param: unknown key; did you mean \"params\"?");
}

TEST(ConfigKeys, MonitoringKeysAreIgnoredAndListed) {
  // tensorboard and wandb while off (DeepSpeed's default without
  // "enabled"); enabled, they are errors (test/Config/monitors.test).
  Config c = parseOk(withBatch(R"("wandb": {"enabled": false},
      "tensorboard": {"output_path": "runs"},
      "flops_profiler": {"enabled": true},
      "zero_allow_untested_optimizer": true,
      "comms_logger": {"enabled": true})"));
  std::vector<std::string> expected = {"comms_logger", "flops_profiler",
                                       "tensorboard", "wandb",
                                       "zero_allow_untested_optimizer"};
  EXPECT_EQ(c.ignoredKeys, expected);
  EXPECT_EQ(toJson(c)["ignored_keys"], nlohmann::json(expected));
}

TEST(ConfigKeys, NestedIgnoredKeysCarryTheirPath) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 1,
        "round_robin_gradients": true},
      "optimizer": {"type": "Adam", "params": {"torch_adam": true}})"));
  std::vector<std::string> expected = {
      "optimizer.params.torch_adam", "zero_optimization.round_robin_gradients"};
  EXPECT_EQ(c.ignoredKeys, expected);
}

// ZeRO-Offload to the CPU is read (docs/offload.md); NVMe is refused.
TEST(ConfigKeys, OffloadToCpuIsReadAndParamsToNvmeRefused) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 2,
                "offload_optimizer": {"device": "cpu", "pin_memory": true,
                                      "buffer_count": 4}})"));
  EXPECT_TRUE(c.zero.offloadOptimizer.enabled());
  EXPECT_TRUE(c.zero.offloadOptimizer.pinMemory);
  EXPECT_FALSE(c.zero.offloadParam.enabled());
  EXPECT_EQ(c.ignoredKeys,
            std::vector<std::string>{
                "zero_optimization.offload_optimizer.buffer_count"});
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {"stage": 3,
                "offload_param": {"device": "nvme", "nvme_path": "/nvme"}})")),
            "zero_optimization.offload_param.device: ds does not support "
            "parameter offload to NVMe (ZeRO-Infinity) yet; use \"cpu\" (the "
            "parameters stay in host memory) or \"none\"; offload_optimizer "
            "takes \"nvme\"");
}

TEST(ConfigKeys, OptimizerOffloadToNvmeReadsItsBuffersAndAio) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 2,
                "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme",
                                      "buffer_count": 3, "buffer_size": 1e6,
                                      "fast_init": false}},
                "aio": {"block_size": 262144, "queue_depth": 16,
                        "single_submit": true})"));
  EXPECT_EQ(c.zero.offloadOptimizer.device, OffloadDevice::Nvme);
  EXPECT_EQ(c.zero.offloadOptimizer.nvmePath, "/nvme");
  EXPECT_EQ(c.zero.offloadOptimizer.bufferCount, 3);
  EXPECT_EQ(c.zero.offloadOptimizer.bufferSize, 1000000);
  EXPECT_EQ(c.aio.blockSize, 262144);
  EXPECT_EQ(c.aio.queueDepth, 16);
  EXPECT_TRUE(c.aio.singleSubmit);
  EXPECT_EQ(c.ignoredKeys,
            std::vector<std::string>{
                "zero_optimization.offload_optimizer.fast_init"});
}

TEST(ConfigKeys, OffloadToNoneIsOff) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 3,
                "offload_param": {"device": "none"}})"));
  EXPECT_FALSE(c.zero.offloadParam.enabled());
  EXPECT_TRUE(c.ignoredKeys.empty());
}

TEST(ConfigKeys, AmpIsUnsupportedUnlessDisabled) {
  EXPECT_EQ(parseError(withBatch(R"("amp": {"enabled": true,
                "opt_level": "O1"})")),
            "amp: ds does not support Apex AMP (use fp16 or bf16); remove the "
            "key or switch it off");
  Config c = parseOk(withBatch(R"("amp": {"enabled": false})"));
  EXPECT_EQ(c.ignoredKeys, std::vector<std::string>{"amp"});
}

TEST(ConfigKeys, Fp32CommunicationAndAccumulationAreWhatDsDoes) {
  Config c = parseOk(withBatch(R"("bf16": {"enabled": true},
      "fp32_allreduce": true, "communication_data_type": "fp32",
      "data_types": {"grad_accum_dtype": "fp32"})"));
  EXPECT_EQ(c.ignoredKeys,
            (std::vector<std::string>{"communication_data_type", "data_types",
                                      "fp32_allreduce"}));
  EXPECT_EQ(parseError(withBatch(R"("communication_data_type": "bf16")")),
            "communication_data_type: ds does not support a 16-bit "
            "communication data type (ds communicates gradients in fp32); "
            "remove the key or switch it off");
  EXPECT_EQ(
      parseError(withBatch(R"("data_types": {"grad_accum_dtype": "bf16"})")),
      "data_types: ds does not support a 16-bit gradient-accumulation data "
      "type (ds accumulates in fp32); remove the key or switch it off");
}

TEST(ConfigKeys, DuplicateKey) {
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {"stage": 1,
                "stage": 2})")),
            "zero_optimization.stage: key given twice");
}

TEST(ConfigKeys, Stage3NamesWithoutPrefix) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 3,
      "prefetch_bucket_size": 1000, "max_live_parameters": 2000})"));
  EXPECT_EQ(c.zero.prefetchBucketSize, 1000);
  EXPECT_EQ(c.zero.maxLiveParameters, 2000);
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {
                "prefetch_bucket_size": 1000,
                "stage3_prefetch_bucket_size": 2000})")),
            "zero_optimization.prefetch_bucket_size: same setting as "
            "stage3_prefetch_bucket_size; give only one");
}

TEST(ConfigKeys, Bfloat16IsBf16) {
  EXPECT_TRUE(
      parseOk(withBatch(R"("bfloat16": {"enabled": true})")).bf16.enabled);
}

//===----------------------------------------------------------------------===//
// Types, ranges, "auto"
//===----------------------------------------------------------------------===//

TEST(ConfigTypes, StringWhereIntegerExpected) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"loss_scale_window": "1000"})")),
            "fp16.loss_scale_window: expected an integer, got string "
            "\"1000\"");
}

TEST(ConfigTypes, NumberWhereBooleanExpected) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"enabled": 1})")),
            "fp16.enabled: expected a boolean, got number 1");
}

TEST(ConfigTypes, SectionMustBeObject) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": true)")),
            "fp16: expected an object, got boolean true");
}

TEST(ConfigTypes, FractionalInteger) {
  EXPECT_EQ(parseError(R"({"train_batch_size": 8.5})"),
            "train_batch_size: expected an integer, got number 8.5");
}

TEST(ConfigTypes, ExponentIntegersAccepted) {
  Config c = parseOk(withBatch(R"("zero_optimization": {
      "reduce_bucket_size": 2e8, "allgather_bucket_size": 5e7})"));
  EXPECT_EQ(c.zero.reduceBucketSize, 200000000);
  EXPECT_EQ(c.zero.allgatherBucketSize, 50000000);
}

TEST(ConfigTypes, BetasMustBeTwoNumbers) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "params": {"betas": [0.9]}})")),
            "optimizer.params.betas: expected an array of 2 numbers, got an "
            "array");
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "params": {"betas": [0.9, "x"]}})")),
            "optimizer.params.betas[1]: expected a number, got string \"x\"");
}

TEST(ConfigTypes, AutoNeedsANumber) {
  EXPECT_EQ(parseError(R"({"train_batch_size": "auto"})"),
            "train_batch_size: \"auto\" is filled in by the Hugging Face "
            "Trainer, not by ds; write an integer here");
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "AdamW",
                "params": {"lr": "auto"}})")),
            "optimizer.params.lr: \"auto\" is filled in by the Hugging Face "
            "Trainer, not by ds; write a number here");
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"enabled": "auto"})")),
            "fp16.enabled: \"auto\" is filled in by the Hugging Face Trainer, "
            "not by ds; write a boolean here");
}

TEST(ConfigTypes, AutoAnywhere) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "AdamW",
                "params": {"betas": "auto"}})")),
            "optimizer.params.betas: \"auto\" is filled in by the Hugging "
            "Face Trainer, not by ds; write an array of 2 numbers here");
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": "auto")")),
            "zero_optimization: \"auto\" is filled in by the Hugging Face "
            "Trainer, not by ds; write an object (or true/false) here");
  // Where ds reads no type (a string, an ignored section) the message
  // names none, but it is still the "auto" one.
  EXPECT_EQ(parseError(withBatch(R"("scheduler": {"type": "WarmupLR",
                "params": {"warmup_type": "auto"}})")),
            "scheduler.params.warmup_type: \"auto\" is filled in by the "
            "Hugging Face Trainer, not by ds; write the value here");
  EXPECT_EQ(parseError(withBatch(R"("tensorboard": {"output_path": "auto"})")),
            "tensorboard.output_path: \"auto\" is filled in by the Hugging "
            "Face Trainer, not by ds; write the value here");
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "auto"})")),
            "optimizer.type: \"auto\" is filled in by the Hugging Face "
            "Trainer, not by ds; write the value here");
}

TEST(ConfigRanges, ZeroStage) {
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {"stage": 4})")),
            "zero_optimization.stage: must be in [0, 3], got 4");
}

TEST(ConfigRanges, NegativeBucketSize) {
  EXPECT_EQ(parseError(withBatch(
                R"("zero_optimization": {"reduce_bucket_size": -1})")),
            "zero_optimization.reduce_bucket_size: must be >= 0, got -1");
}

TEST(ConfigRanges, NegativeLearningRate) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "params": {"lr": -0.1}})")),
            "optimizer.params.lr: must be >= 0, got -0.1");
}

TEST(ConfigRanges, BetaOfOne) {
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam",
                "params": {"betas": [0.9, 1.0]}})")),
            "optimizer.params.betas[1]: must be in [0, 1), got 1.0");
}

TEST(ConfigRanges, Fp16Hysteresis) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"hysteresis": 0})")),
            "fp16.hysteresis: must be >= 1, got 0");
}

TEST(ConfigRanges, NegativeGradientClipping) {
  EXPECT_EQ(parseError(withBatch(R"("gradient_clipping": -1.0)")),
            "gradient_clipping: must be >= 0, got -1.0");
}

//===----------------------------------------------------------------------===//
// Checks across sections
//===----------------------------------------------------------------------===//

TEST(ConfigMutual, Fp16AndBf16) {
  EXPECT_EQ(parseError(withBatch(R"("fp16": {"enabled": true},
                                    "bf16": {"enabled": true})")),
            "fp16.enabled and bf16.enabled are both true; enable at most one");
}

TEST(ConfigMutual, PipelineWithOffloadParamIsFine) {
  // On the CPU target the offloaded states are host memory already, so
  // inside a pipeline as on one stage.
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 3,
                                  "offload_param": {"device": "cpu"}},
                              "pipeline": {"stages": 2})"),
                     2);
  EXPECT_TRUE(c.zero.offloadParam.enabled());
  EXPECT_EQ(c.pipeline.stages, 2);
}

TEST(ConfigMutual, PipelineWithZero2And3IsFine) {
  // ZeRO-3: each stage's forward and backward gather its chunks per
  // micro-batch.
  for (int stage : {2, 3}) {
    Config c = parseOk(withBatch(R"("zero_optimization": {"stage": )" +
                                 std::to_string(stage) + R"(},
                                    "pipeline": {"stages": 2})"),
                       4);
    EXPECT_EQ(c.zero.stage, stage);
    EXPECT_EQ(c.dpSize, 2);
  }
}

TEST(ConfigMutual, PipelineWithZero1IsFine) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 1},
                                  "pipeline": {"stages": 2})"),
                     2);
  EXPECT_EQ(c.pipeline.stages, 2);
  EXPECT_EQ(c.dpSize, 1);
}

TEST(ConfigMutual, PipelineMicroBatchesMustMatchAccumulation) {
  EXPECT_EQ(parseError(R"({"train_micro_batch_size_per_gpu": 2,
                           "gradient_accumulation_steps": 8,
                           "pipeline": {"micro_batches": 4}})"),
            "pipeline.micro_batches 4 != gradient_accumulation_steps 8; a "
            "pipeline runs one micro-batch per accumulation step, so leave "
            "micro_batches out or make them equal");
}

TEST(ConfigPipeline, PartitionMethods) {
  Config c = parseOk(withBatch(
      R"js("pipeline": {"partition_method": "type:Transformer(Block|Layer)"})js"));
  EXPECT_EQ(c.pipeline.partitionMethod, PartitionMethod::Type);
  // DeepSpeed lower-cases the whole method string, the regex included.
  EXPECT_EQ(c.pipeline.partitionTypeRegex, "transformer(block|layer)");
  // ... and keeps the text between the first and a second colon.
  EXPECT_EQ(
      parseOk(withBatch(
                  R"("pipeline": {"partition_method": "TYPE:Block:ignored"})"))
          .pipeline.partitionTypeRegex,
      "block");
  EXPECT_EQ(parseOk(withBatch(R"("pipeline": {"partition_method": "flops"})"))
                .pipeline.partitionMethod,
            PartitionMethod::Flops);
  EXPECT_EQ(parseOk(withBatch(R"("pipeline": {"partition_method": "Uniform"})"))
                .pipeline.partitionMethod,
            PartitionMethod::Uniform);
  EXPECT_EQ(
      parseError(withBatch(R"("pipeline": {"partition_method": "best"})")),
      "pipeline.partition_method: must be \"parameters\", \"uniform\", "
      "\"flops\" or \"type:REGEX\", got \"best\"");
}

TEST(ConfigPipeline, Schedules) {
  Config c = parseOk(withBatch(R"("pipeline": {"stages": 1})"));
  EXPECT_EQ(c.pipeline.schedule, PipelineSchedule::OneFOneB);
  EXPECT_EQ(c.pipeline.virtualStages, 1);
  EXPECT_EQ(parseOk(withBatch(R"("pipeline": {"schedule": "gpipe"})"))
                .pipeline.schedule,
            PipelineSchedule::GPipe);
  // Two stages on two ranks, four micro-batches of two.
  std::string twoStages =
      R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, )"
      R"("pipeline": {"stages": 2, "schedule": "interleaved", )"
      R"("virtual_stages": 2}})";
  Config interleaved = parseOk(twoStages, 2);
  EXPECT_EQ(interleaved.pipeline.schedule, PipelineSchedule::Interleaved);
  EXPECT_EQ(interleaved.pipeline.virtualStages, 2);
  EXPECT_EQ(interleaved.pipeline.microBatches, 4);
  EXPECT_EQ(
      parseError(withBatch(
          R"("pipeline": {"schedule": "interleaved", "virtual_stages": 2})")),
      "pipeline.schedule \"interleaved\" with pipeline.stages 1: "
      "interleaving passes model chunks between stages; use 2 or more "
      "stages");
  // Three micro-batches of two do not form groups of one per stage.
  EXPECT_EQ(
      parseError(
          R"({"train_batch_size": 6, "train_micro_batch_size_per_gpu": 2, )"
          R"("pipeline": {"stages": 2, "schedule": "interleaved", )"
          R"("virtual_stages": 2}})",
          2),
      "pipeline.schedule \"interleaved\": 3 micro-batches "
      "(gradient_accumulation_steps) is not a multiple of pipeline.stages 2; "
      "the interleaved schedule runs micro-batches in groups of one per "
      "stage, so use a multiple of 2");
  EXPECT_EQ(
      parseError(withBatch(R"("pipeline": {"schedule": "zb-h1"})")),
      "pipeline.schedule: must be \"1f1b\", \"gpipe\" or \"interleaved\", "
      "got \"zb-h1\"");
  EXPECT_EQ(parseError(withBatch(R"("pipeline": {"schedule": "interleaved"})")),
            "pipeline.virtual_stages: 1, but the interleaved schedule runs at "
            "least 2 model chunks per stage; set virtual_stages to 2 or more");
  EXPECT_EQ(parseError(withBatch(R"("pipeline": {"virtual_stages": 2})")),
            "pipeline.virtual_stages: 2 needs \"schedule\": "
            "\"interleaved\"; the 1f1b schedule runs one model chunk per "
            "stage");
}

TEST(ConfigPipeline, InvalidTypeRegex) {
  EXPECT_EQ(
      parseError(withBatch(R"("pipeline": {"partition_method": "type:(a"})")),
      "pipeline.partition_method: invalid regular expression \"(a\": "
      "parentheses not balanced");
}

TEST(ConfigMoE, EpSizeMustDivideExperts) {
  EXPECT_EQ(
      parseError(withBatch(R"("moe": {"num_experts": 8, "ep_size": 3})"), 3),
      "moe.ep_size: 3 does not divide num_experts 8; every "
      "expert-parallel rank holds the same number of experts");
}

TEST(ConfigMoE, EpSizeMustDivideDataParallel) {
  EXPECT_EQ(parseError(R"({"train_micro_batch_size_per_gpu": 4,
                     "moe": {"num_experts": 8, "ep_size": 4}})",
                       2),
            "moe.ep_size 4 does not divide the data-parallel size 2; "
            "expert-parallel groups are carved out of the data-parallel ranks");
}

TEST(ConfigMoE, TopKWithinExperts) {
  EXPECT_EQ(parseError(withBatch(R"("moe": {"num_experts": 2, "k": 3})")),
            "moe.k: 3 exceeds num_experts 2; a token picks k distinct "
            "experts, so lower k or add experts");
}

TEST(ConfigMoE, NumExpertsRequired) {
  EXPECT_EQ(parseError(withBatch(R"("moe": {"ep_size": 1})")),
            "moe.num_experts: required when a moe section is given");
}

//===----------------------------------------------------------------------===//
// Malformed input and files
//===----------------------------------------------------------------------===//

TEST(ConfigInput, MalformedJsonNamesLineAndColumn) {
  EXPECT_EQ(
      parseError("{\n  \"train_batch_size\": 8\n  \"steps_per_print\": 1}"),
      "malformed JSON at line 3, column 19: syntax error while parsing "
      "object - unexpected string literal; expected '}'");
}

//===----------------------------------------------------------------------===//
// hjson, as DeepSpeed reads config files
//===----------------------------------------------------------------------===//

TEST(ConfigHjson, CommentsAndTrailingCommas) {
  Config c = parseOk(R"({
    // the batch
    "train_batch_size": 8, # hash comment
    /* a block
       comment */ "steps_per_print": 5,
    "optimizer": {"type": "SGD", "params": {"lr": 0.5,},},
    "tensorboard": {"output_path": "runs//a#b/*c*/, }"},
  })");
  EXPECT_EQ(c.trainBatchSize, 8);
  EXPECT_EQ(c.stepsPerPrint, 5);
  EXPECT_EQ(c.optimizer.type, OptimizerType::SGD);
  EXPECT_EQ(c.optimizer.lr, 0.5);
  EXPECT_EQ(c.ignoredKeys, std::vector<std::string>{"tensorboard"});
}

TEST(ConfigHjson, StringsKeepCommentCharacters) {
  // A scheduler name is compared verbatim, so a string that loses a
  // character to comment stripping fails to resolve.
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "Adam // x"})")),
            "optimizer.type: unknown optimizer \"Adam // x\"; one of Adam, "
            "AdamW, Lamb, SGD");
  EXPECT_EQ(parseError(withBatch(R"("optimizer": {"type": "a\"#b"})")),
            "optimizer.type: unknown optimizer \"a\"#b\"; one of Adam, "
            "AdamW, Lamb, SGD");
}

TEST(ConfigHjson, ErrorsKeepTheirLineAfterComments) {
  EXPECT_EQ(parseError("{\n// one\n/* two\nthree */\n\"train_batch_size\": 8 "
                       "\"x\": 1\n}"),
            "malformed JSON at line 5, column 25: syntax error while parsing "
            "object - unexpected string literal; expected '}'");
  EXPECT_EQ(parseError("{\"train_batch_size\": 8, /* open"),
            "malformed JSON at line 1, column 25: syntax error while parsing "
            "object key - invalid literal; last read: '8, /'; expected string "
            "literal");
  // Only the comma before the brace goes; a doubled comma is still an error.
  EXPECT_EQ(parseError("{\"train_batch_size\": 8,,}"),
            "malformed JSON at line 1, column 25: syntax error while parsing "
            "object key - unexpected '}'; expected string literal");
}

//===----------------------------------------------------------------------===//
// DeepSpeed 0.19.5 keys
//===----------------------------------------------------------------------===//

TEST(ConfigDeepSpeed, ZeroOptimizationBooleanIsStage1Or0) {
  Config on = parseOk(withBatch(R"("zero_optimization": true)"));
  EXPECT_EQ(on.zero.stage, 1);
  EXPECT_EQ(on.zero.allgatherBucketSize, 500000000);
  EXPECT_FALSE(on.zero.overlapComm);
  EXPECT_EQ(parseOk(withBatch(R"("zero_optimization": false)")).zero.stage, 0);
  Config sized = parseOk(
      withBatch(R"("zero_optimization": true, "allgather_size": 1000)"));
  EXPECT_EQ(sized.zero.allgatherBucketSize, 1000);
  EXPECT_EQ(
      parseError(withBatch(
          R"("zero_optimization": {"stage": 1}, "allgather_size": 1000)")),
      "allgather_size: DeepSpeed reads it only with "
      "\"zero_optimization\": true; write "
      "zero_optimization.allgather_bucket_size instead");
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": 1)")),
            "zero_optimization: expected an object (or true/false), got "
            "number 1");
}

TEST(ConfigDeepSpeed, Bf16KeysAtWhatDsDoes) {
  Config c = parseOk(withBatch(R"("bf16": {"enabled": true,
      "immediate_grad_update": false, "check_grad_overflow": true,
      "bf16_master_weights_and_grads": false,
      "bf16_optimizer_states": false})"));
  EXPECT_TRUE(c.bf16.enabled);
  EXPECT_EQ(c.ignoredKeys,
            (std::vector<std::string>{"bf16.bf16_master_weights_and_grads",
                                      "bf16.bf16_optimizer_states",
                                      "bf16.immediate_grad_update"}));
  parseOk(withBatch(R"("bf16": {"enabled": true, "check_grad_overflow": false,
      "immediate_grad_update": true})"));
  EXPECT_EQ(
      parseError(withBatch(
          R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true})")),
      "bf16.bf16_master_weights_and_grads: ds does not support bf16 master "
      "weights and gradients (ds keeps both in f32); remove the key or "
      "switch it off");
  EXPECT_EQ(parseError(withBatch(
                R"("bf16": {"enabled": true, "bf16_optimizer_states": true})")),
            "bf16.bf16_optimizer_states: ds does not support bf16 optimizer "
            "states (ds keeps them in f32); remove the key or switch it off");
  EXPECT_EQ(parseError(withBatch(R"("bf16": {"check_grad_overflow": 1})")),
            "bf16.check_grad_overflow: expected a boolean, got number 1");
}

TEST(ConfigDeepSpeed, ZeroKeysOfDeepSpeed) {
  Config c = parseOk(withBatch(R"("zero_optimization": {"stage": 3,
      "stage3_use_all_reduce_for_fetch_params": true,
      "enable_sanity_checks": true})"));
  EXPECT_EQ(c.ignoredKeys,
            (std::vector<std::string>{
                "zero_optimization.enable_sanity_checks",
                "zero_optimization.stage3_use_all_reduce_for_fetch_params"}));
}

TEST(ConfigDeepSpeed, ZenFlowBelongsToZeroOptimization) {
  EXPECT_EQ(parseError(withBatch(R"("zenflow": {"topk_ratio": 0.1})")),
            "zenflow: unknown key here; DeepSpeed reads it as "
            "zero_optimization.zenflow");
  EXPECT_EQ(parseError(withBatch(R"("zero_optimization": {"stage": 2,
                "zenflow": {"topk_ratio": 0.1, "update_interval": 4}})")),
            "zero_optimization.zenflow: ds does not support ZenFlow "
            "(stall-free offloaded optimizer steps); remove the key or switch "
            "it off");
  Config off = parseOk(
      withBatch(R"("zero_optimization": {"stage": 2, "zenflow": null})"));
  EXPECT_EQ(off.ignoredKeys,
            std::vector<std::string>{"zero_optimization.zenflow"});
}

TEST(ConfigDeepSpeed, TensorParallelKeys) {
  Config c = parseOk(withBatch(R"("tensor_parallel": {"autotp_size": 1,
      "partition_config": null, "preset_model": null})"));
  EXPECT_EQ(c.ignoredKeys,
            (std::vector<std::string>{"tensor_parallel.partition_config",
                                      "tensor_parallel.preset_model"}));
  EXPECT_EQ(
      parseError(withBatch(
          R"("tensor_parallel": {"autotp_size": 2, "preset_model": "llama"})")),
      "tensor_parallel.preset_model: ds does not support AutoTP model "
      "presets; remove the key or switch it off");
  EXPECT_EQ(parseError(withBatch(R"("tensor_parallel": {"partition_config":
                {"use_default_specs": false, "layer_specs": []}})")),
            "tensor_parallel.partition_config: ds does not support custom "
            "AutoTP partitioning rules; remove the key or switch it off");
}

TEST(ConfigDeepSpeed, SequenceParallelSize) {
  // Ulysses: a size that divides the world leaves dp = world / S.
  Config c = parseOk(withBatch(R"("sequence_parallel_size": 2)"), 4);
  EXPECT_EQ(c.sequenceParallelSize, 2);
  EXPECT_EQ(c.dpSize, 2);
  EXPECT_TRUE(c.ignoredKeys.empty());
  EXPECT_EQ(parseError(withBatch(R"("sequence_parallel_size": 0)")),
            "sequence_parallel_size: must be >= 1, got 0");
}

TEST(ConfigDeepSpeed, GradientAllreduceOp) {
  parseOk(withBatch(R"("gradient_allreduce_op": "mean")"));
  parseOk(withBatch(R"("gradient_allreduce_op": "MEAN")"));
  EXPECT_EQ(parseError(withBatch(R"("gradient_allreduce_op": "sum")")),
            "gradient_allreduce_op: ds does not support summed gradients; "
            "remove the key or write \"mean\"");
  EXPECT_EQ(parseError(withBatch(R"("gradient_allreduce_op": "max")")),
            "gradient_allreduce_op: must be \"mean\" or \"sum\", got "
            "\"max\"");
}

TEST(ConfigDeepSpeed, PrescaleAndPredivide) {
  Config pre = parseOk(withBatch(R"("prescale_gradients": true)"));
  EXPECT_TRUE(pre.prescaleGradients);
  EXPECT_EQ(pre.gradientPredivideFactor, 1.0);
  EXPECT_TRUE(pre.ignoredKeys.empty());
  Config div = parseOk(withBatch(R"("gradient_predivide_factor": 8)"));
  EXPECT_FALSE(div.prescaleGradients);
  EXPECT_EQ(div.gradientPredivideFactor, 8.0);
  nlohmann::json j = toJson(div);
  EXPECT_EQ(j["gradient_predivide_factor"], 8.0);
  EXPECT_NE(summarize(div).find("gradient reduction: divided by 8.0 before "
                                "it and by data-parallel size / 8.0 after"),
            std::string::npos);
  // The explicit defaults read as the defaults.
  parseOk(withBatch(
      R"("prescale_gradients": false, "gradient_predivide_factor": 1.0)"));
  EXPECT_EQ(parseError(withBatch(R"("gradient_predivide_factor": 0)")),
            "gradient_predivide_factor: must be > 0, got 0.0");
  EXPECT_EQ(
      parseError(withBatch(
          R"("prescale_gradients": true, "gradient_predivide_factor": 2)")),
      "gradient_predivide_factor: 2.0 has no effect with "
      "prescale_gradients true (DeepSpeed ignores it); remove one of the "
      "two");
}

TEST(ConfigInput, TopLevelMustBeObject) {
  EXPECT_EQ(parseError("[1, 2]"),
            "ds_config.json: expected an object at the top level, got an "
            "array");
}

TEST(ConfigInput, MissingFileNamesPath) {
  llvm::Expected<Config> c =
      loadConfig("/nonexistent/ds_config.json", ResolveOptions{});
  ASSERT_FALSE(bool(c));
  EXPECT_EQ(llvm::toString(c.takeError()),
            "cannot read config file \"/nonexistent/ds_config.json\": No "
            "such file or directory");
}

TEST(ConfigInput, LoadsFromFile) {
  std::string path = testing::TempDir() + "ds_config_test.json";
  {
    std::ofstream out(path);
    out << R"({"train_micro_batch_size_per_gpu": 2,
               "zero_optimization": {"stage": 2}})";
  }
  llvm::Expected<Config> c = loadConfig(path, ResolveOptions{4});
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->trainBatchSize, 8);
  EXPECT_EQ(c->zero.stage, 2);
  std::remove(path.c_str());
}

//===----------------------------------------------------------------------===//
// The shipped examples
//===----------------------------------------------------------------------===//

Config loadExample(const std::string &name, int64_t worldSize) {
  std::string path = std::string(DS_EXAMPLE_CONFIG_DIR) + "/" + name;
  llvm::Expected<Config> c = loadConfig(path, ResolveOptions{worldSize});
  if (!c) {
    ADD_FAILURE() << name << ": " << llvm::toString(c.takeError());
    return Config();
  }
  return *c;
}

TEST(ConfigExamples, EveryExampleParses) {
  int count = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(DS_EXAMPLE_CONFIG_DIR)) {
    if (entry.path().extension() != ".json")
      continue;
    ++count;
    // 4 ranks: the pipeline example splits them 2 x 2, the MoE one has
    // ep_size 2.
    llvm::Expected<Config> c =
        loadConfig(entry.path().string(), ResolveOptions{4});
    EXPECT_TRUE(bool(c)) << entry.path() << ": "
                         << (c ? "" : llvm::toString(c.takeError()));
    if (!c)
      llvm::consumeError(c.takeError());
  }
  EXPECT_GE(count, 8);
}

TEST(ConfigExamples, ZeroStagesAndPrecision) {
  EXPECT_EQ(loadExample("zero0.json", 4).zero.stage, 0);
  EXPECT_EQ(loadExample("zero1.json", 4).zero.stage, 1);
  EXPECT_EQ(loadExample("zero2.json", 4).zero.stage, 2);
  Config zero3 = loadExample("zero3.json", 8);
  EXPECT_EQ(zero3.zero.stage, 3);
  EXPECT_TRUE(zero3.zero.overlapComm);
  EXPECT_EQ(zero3.trainBatchSize, 64);
  EXPECT_TRUE(loadExample("bf16.json", 4).bf16.enabled);
  EXPECT_TRUE(loadExample("fp16.json", 4).fp16.enabled);
}

TEST(ConfigExamples, PipelineAndMoE) {
  Config pipe = loadExample("pipeline.json", 4);
  EXPECT_EQ(pipe.pipeline.stages, 2);
  EXPECT_EQ(pipe.dpSize, 2);
  EXPECT_EQ(pipe.trainBatchSize, 64);
  Config moe = loadExample("moe.json", 4);
  EXPECT_EQ(moe.moe.numExperts, 8);
  EXPECT_EQ(moe.moe.epSize, 2);
  EXPECT_EQ(moe.moe.k, 2);
}

} // namespace
