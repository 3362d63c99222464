//===- ConfigJson.cpp - Print a resolved config --------------------------===//
//
// The resolved JSON spells every key the way ds_config.json does, so a user
// can diff it against their file to see what ds filled in.
//
//===----------------------------------------------------------------------===//

#include "ds/Config/Config.h"

#include "llvm/ADT/StringExtras.h"

using json = nlohmann::json;

namespace ds::config {

llvm::StringRef stringifyOptimizerType(OptimizerType type) {
  switch (type) {
  case OptimizerType::Adam:
    return "Adam";
  case OptimizerType::AdamW:
    return "AdamW";
  case OptimizerType::Lamb:
    return "Lamb";
  case OptimizerType::SGD:
    return "SGD";
  }
  return "";
}

llvm::StringRef stringifySchedulerType(SchedulerType type) {
  switch (type) {
  case SchedulerType::None:
    return "none";
  case SchedulerType::WarmupLR:
    return "WarmupLR";
  case SchedulerType::WarmupDecayLR:
    return "WarmupDecayLR";
  case SchedulerType::WarmupCosineLR:
    return "WarmupCosineLR";
  case SchedulerType::OneCycle:
    return "OneCycle";
  }
  return "";
}

llvm::StringRef stringifyWarmupType(WarmupType type) {
  return type == WarmupType::Log ? "log" : "linear";
}

std::string stringifyPartitionMethod(const PipelineConfig &pipeline) {
  switch (pipeline.partitionMethod) {
  case PartitionMethod::Parameters:
    return "parameters";
  case PartitionMethod::Uniform:
    return "uniform";
  case PartitionMethod::Type:
    return "type:" + pipeline.partitionTypeRegex;
  case PartitionMethod::Flops:
    return "flops";
  }
  return "";
}

llvm::StringRef stringifyPipelineSchedule(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  }
  return "";
}

static json optimizerParams(const OptimizerConfig &o) {
  json p;
  p["lr"] = o.lr;
  p["weight_decay"] = o.weightDecay;
  switch (o.type) {
  case OptimizerType::Adam:
  case OptimizerType::AdamW:
    p["betas"] = {o.betas[0], o.betas[1]};
    p["eps"] = o.eps;
    p["bias_correction"] = o.biasCorrection;
    p["adam_w_mode"] = o.adamWMode;
    break;
  case OptimizerType::Lamb:
    p["betas"] = {o.betas[0], o.betas[1]};
    p["eps"] = o.eps;
    p["bias_correction"] = o.biasCorrection;
    p["max_coeff"] = o.maxCoeff;
    p["min_coeff"] = o.minCoeff;
    break;
  case OptimizerType::SGD:
    p["momentum"] = o.momentum;
    p["dampening"] = o.dampening;
    p["nesterov"] = o.nesterov;
    break;
  }
  return p;
}

static json schedulerParams(const SchedulerConfig &s) {
  json p;
  switch (s.type) {
  case SchedulerType::None:
    break;
  case SchedulerType::WarmupDecayLR:
    p["total_num_steps"] = s.totalNumSteps;
    [[fallthrough]];
  case SchedulerType::WarmupLR:
    p["warmup_min_lr"] = s.warmupMinLr;
    p["warmup_max_lr"] = s.warmupMaxLr;
    p["warmup_num_steps"] = s.warmupNumSteps;
    p["warmup_type"] = stringifyWarmupType(s.warmupType).str();
    break;
  case SchedulerType::WarmupCosineLR:
    p["total_num_steps"] = s.totalNumSteps;
    p["warmup_min_ratio"] = s.warmupMinRatio;
    p["warmup_num_steps"] = s.warmupNumSteps;
    p["cos_min_ratio"] = s.cosMinRatio;
    p["warmup_type"] = stringifyWarmupType(s.warmupType).str();
    break;
  case SchedulerType::OneCycle:
    p["cycle_min_lr"] = s.cycleMinLr;
    p["cycle_max_lr"] = s.cycleMaxLr;
    p["decay_lr_rate"] = s.decayLrRate;
    p["cycle_first_step_size"] = s.cycleFirstStepSize;
    p["cycle_second_step_size"] = s.cycleSecondStepSize;
    p["cycle_first_stair_count"] = s.cycleFirstStairCount;
    p["cycle_second_stair_count"] = s.cycleSecondStairCount;
    p["decay_step_size"] = s.decayStepSize;
    p["cycle_momentum"] = s.cycleMomentum;
    p["cycle_min_mom"] = s.cycleMinMom;
    p["cycle_max_mom"] = s.cycleMaxMom;
    p["decay_mom_rate"] = s.decayMomRate;
    break;
  }
  return p;
}

json toJson(const Config &c) {
  json j;
  j["train_batch_size"] = c.trainBatchSize;
  j["train_micro_batch_size_per_gpu"] = c.trainMicroBatchSizePerGpu;
  j["gradient_accumulation_steps"] = c.gradientAccumulationSteps;
  j["world_size"] = c.worldSize;
  j["dp_size"] = c.dpSize;
  j["gradient_clipping"] = c.gradientClipping;
  j["prescale_gradients"] = c.prescaleGradients;
  j["gradient_predivide_factor"] = c.gradientPredivideFactor;
  j["steps_per_print"] = c.stepsPerPrint;
  j["wall_clock_breakdown"] = c.wallClockBreakdown;

  const ZeroConfig &z = c.zero;
  j["zero_optimization"] = {
      {"stage", z.stage},
      {"contiguous_gradients", z.contiguousGradients},
      {"reduce_scatter", z.reduceScatter},
      {"reduce_bucket_size", z.reduceBucketSize},
      {"allgather_partitions", z.allgatherPartitions},
      {"allgather_bucket_size", z.allgatherBucketSize},
      {"overlap_comm", z.overlapComm},
      {"stage3_prefetch_bucket_size", z.prefetchBucketSize},
      {"stage3_param_persistence_threshold", z.paramPersistenceThreshold},
      {"stage3_max_live_parameters", z.maxLiveParameters},
      {"stage3_max_reuse_distance", z.maxReuseDistance}};
  // Where the NVMe files go and how they are read do not change the
  // compiled step: only the device is here.
  auto offload = [](const OffloadConfig &o) {
    return json{{"device", o.device == OffloadDevice::Nvme ? "nvme"
                           : o.enabled()                   ? "cpu"
                                                           : "none"},
                {"pin_memory", o.pinMemory}};
  };
  if (z.offloadOptimizer.enabled())
    j["zero_optimization"]["offload_optimizer"] = offload(z.offloadOptimizer);
  if (z.offloadParam.enabled())
    j["zero_optimization"]["offload_param"] = offload(z.offloadParam);

  j["compile"] = {{"deepcompile", c.compile.deepcompile},
                  {"debug_log", c.compile.debugLog}};
  j["kernels"] = {
      {"attention_block_size", c.kernels.attentionBlockSize},
      {"attention_block_threshold", c.kernels.attentionBlockThreshold},
      {"loss_chunk_rows", c.kernels.lossChunkRows},
      {"loss_chunk_threshold", c.kernels.lossChunkThreshold}};

  const Fp16Config &f = c.fp16;
  j["fp16"] = {{"enabled", f.enabled},
               {"loss_scale", f.lossScale},
               {"initial_scale_power", f.initialScalePower},
               {"loss_scale_window", f.lossScaleWindow},
               {"hysteresis", f.hysteresis},
               {"consecutive_hysteresis", f.consecutiveHysteresis},
               {"min_loss_scale", f.minLossScale}};
  j["bf16"] = {{"enabled", c.bf16.enabled}};

  j["optimizer"] = {{"type", stringifyOptimizerType(c.optimizer.type).str()},
                    {"params", optimizerParams(c.optimizer)}};
  if (c.scheduler.type == SchedulerType::None)
    j["scheduler"] = nullptr;
  else
    j["scheduler"] = {{"type", stringifySchedulerType(c.scheduler.type).str()},
                      {"params", schedulerParams(c.scheduler)}};

  const PipelineConfig &p = c.pipeline;
  j["pipeline"] = {
      {"stages", p.stages},
      {"partition_method", stringifyPartitionMethod(p)},
      {"schedule", stringifyPipelineSchedule(p.schedule).str()},
      {"virtual_stages", p.virtualStages},
      {"activation_checkpoint_interval", p.activationCheckpointInterval},
      {"micro_batches", p.microBatches}};

  const MoEConfig &m = c.moe;
  if (!m.enabled)
    j["moe"] = {{"enabled", false}};
  else
    j["moe"] = {{"enabled", true},
                {"num_experts", m.numExperts},
                {"ep_size", m.epSize},
                {"k", m.k},
                {"capacity_factor", m.capacityFactor},
                {"eval_capacity_factor", m.evalCapacityFactor},
                {"min_capacity", m.minCapacity},
                {"drop_tokens", m.dropTokens},
                {"aux_loss_coef", m.auxLossCoef}};

  j["tensor_parallel"] = {
      {"autotp_size", c.tensorParallel.autotpSize},
      {"sequence_parallel", c.tensorParallel.sequenceParallel}};
  j["sequence_parallel_size"] = c.sequenceParallelSize;
  j["ignored_keys"] = c.ignoredKeys;
  return j;
}

/// A number as the resolved JSON prints it (shortest round trip).
static std::string num(double v) { return json(v).dump(); }

std::string summarize(const Config &c) {
  std::string s;
  auto line = [&](const std::string &text) { s += text + "\n"; };
  line("world size " + std::to_string(c.worldSize) + " = data-parallel " +
       std::to_string(c.dpSize) + " x pipeline " +
       std::to_string(c.pipeline.stages) + " x tensor-parallel " +
       std::to_string(c.tensorParallel.autotpSize) +
       (c.sequenceParallelSize > 1
            ? " x sequence-parallel " + std::to_string(c.sequenceParallelSize)
            : std::string()));
  line("batch: train_batch_size " + std::to_string(c.trainBatchSize) +
       " = micro-batch " + std::to_string(c.trainMicroBatchSizePerGpu) +
       " x accumulation " + std::to_string(c.gradientAccumulationSteps) +
       " x data-parallel " + std::to_string(c.dpSize));
  line("ZeRO stage " + std::to_string(c.zero.stage) + " (reduce bucket " +
       std::to_string(c.zero.reduceBucketSize) + ", allgather bucket " +
       std::to_string(c.zero.allgatherBucketSize) + ", overlap_comm " +
       (c.zero.overlapComm ? "true" : "false") +
       (c.zero.offloadOptimizer.device == OffloadDevice::Nvme
            ? ", optimizer offload nvme " + c.zero.offloadOptimizer.nvmePath
        : c.zero.offloadOptimizer.enabled() ? ", optimizer offload cpu"
                                            : "") +
       (c.zero.offloadParam.enabled() ? ", parameter offload cpu" : "") + ")");
  if (c.fp16.enabled) {
    if (c.fp16.lossScale == 0)
      line("precision: fp16, dynamic loss scale from 2^" +
           std::to_string(c.fp16.initialScalePower) + ", window " +
           std::to_string(c.fp16.lossScaleWindow) + ", hysteresis " +
           std::to_string(c.fp16.hysteresis) + ", min " +
           num(c.fp16.minLossScale));
    else
      line("precision: fp16, static loss scale " + num(c.fp16.lossScale));
  } else if (c.bf16.enabled) {
    line("precision: bf16");
  } else {
    line("precision: fp32");
  }
  const OptimizerConfig &o = c.optimizer;
  std::string opt = "optimizer: " + stringifyOptimizerType(o.type).str() +
                    " lr " + num(o.lr) + " weight_decay " + num(o.weightDecay);
  if (o.type == OptimizerType::SGD)
    opt += " momentum " + num(o.momentum);
  else
    opt += " betas (" + num(o.betas[0]) + ", " + num(o.betas[1]) + ") eps " +
           num(o.eps);
  if (!c.optimizerGiven)
    opt += " (no optimizer section: defaults)";
  line(opt);
  const SchedulerConfig &sc = c.scheduler;
  switch (sc.type) {
  case SchedulerType::None:
    line("scheduler: none (constant lr)");
    break;
  case SchedulerType::WarmupLR:
  case SchedulerType::WarmupDecayLR:
    line("scheduler: " + stringifySchedulerType(sc.type).str() + " " +
         num(sc.warmupMinLr) + " -> " + num(sc.warmupMaxLr) + " over " +
         std::to_string(sc.warmupNumSteps) + " steps (" +
         stringifyWarmupType(sc.warmupType).str() + ")" +
         (sc.type == SchedulerType::WarmupDecayLR
              ? ", decay to 0 at step " + std::to_string(sc.totalNumSteps)
              : ""));
    break;
  case SchedulerType::WarmupCosineLR:
    line("scheduler: WarmupCosineLR warmup " +
         std::to_string(sc.warmupNumSteps) + " steps, cosine to ratio " +
         num(sc.cosMinRatio) + " at step " + std::to_string(sc.totalNumSteps));
    break;
  case SchedulerType::OneCycle:
    line("scheduler: OneCycle " + num(sc.cycleMinLr) + " <-> " +
         num(sc.cycleMaxLr) + ", steps " +
         std::to_string(sc.cycleFirstStepSize) + " + " +
         std::to_string(sc.cycleSecondStepSize));
    break;
  }
  line("gradient clipping: " +
       (c.gradientClipping > 0 ? num(c.gradientClipping) : "off"));
  if (c.prescaleGradients)
    line("gradient reduction: divided by the data-parallel size before it");
  else if (c.gradientPredivideFactor != 1.0)
    line("gradient reduction: divided by " + num(c.gradientPredivideFactor) +
         " before it and by data-parallel size / " +
         num(c.gradientPredivideFactor) + " after");
  if (c.pipeline.stages > 1)
    line("pipeline: " + std::to_string(c.pipeline.stages) +
         " stages, partition " + stringifyPartitionMethod(c.pipeline) +
         ", schedule " + stringifyPipelineSchedule(c.pipeline.schedule).str() +
         (c.pipeline.virtualStages > 1
              ? " x " + std::to_string(c.pipeline.virtualStages) +
                    " virtual stages"
              : std::string()) +
         ", " + std::to_string(c.pipeline.microBatches) + " micro-batches");
  if (c.moe.enabled)
    line("moe: " + std::to_string(c.moe.numExperts) + " experts, top-" +
         std::to_string(c.moe.k) + ", ep_size " + std::to_string(c.moe.epSize) +
         ", capacity factor " + num(c.moe.capacityFactor));
  if (!c.ignoredKeys.empty())
    line("ignored (no effect on training): " + llvm::join(c.ignoredKeys, ", "));
  return s;
}

} // namespace ds::config
