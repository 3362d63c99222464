//===- PipelineStreams.cpp - Each stage's instruction stream --------------===//
//
// 1F1B is DeepSpeed's TrainSchedule step for step: the same instructions in
// the same order with the same buffer ids, so a stream dumped by ds-report
// can be compared with DeepSpeed's. Each instruction also names its
// micro-batch, which DeepSpeed leaves implicit in the buffer.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Pipeline.h"

#include "ds/Config/Config.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ds;
using namespace mlir::ds::pipeline;
using dist::PipeInstrKind;

namespace {
/// Appends instructions to the step being built.
struct StepBuilder {
  Step step;
  void add(PipeInstrKind kind, int64_t microBatch, int64_t buffer) {
    step.push_back({kind, microBatch, buffer});
  }
  void endOfBatch() {
    for (PipeInstrKind kind :
         {PipeInstrKind::reduce_tied_grads, PipeInstrKind::reduce_grads,
          PipeInstrKind::optimizer_step})
      step.push_back({kind, std::nullopt, std::nullopt});
  }
};

/// The micro-batch stage `stage` forwards or backwards in step `step` of
/// 1F1B; out of [0, m) when the stage idles (filling or draining).
/// Forwards fall on the steps of the stage's parity: stage s starts its
/// first forward at step s and its first backward at step 2p - s - 1.
std::pair<int64_t, bool> microBatchOfStep(int64_t step, int64_t stages,
                                          int64_t stage) {
  int64_t half = step / 2;
  bool forward = step % 2 == stage % 2;
  if (forward)
    return {half - stage / 2, true};
  if (step % 2 == 0) // an odd stage
    return {half - stages + (stage + 1) / 2, false};
  return {half - stages + 1 + stage / 2, false};
}
} // namespace

int64_t mlir::ds::pipeline::numBuffers1F1B(int64_t microBatches, int64_t stages,
                                           int64_t stage) {
  return std::max<int64_t>(2, std::min(stages - stage, microBatches));
}

std::vector<Step> mlir::ds::pipeline::trainSchedule1F1B(int64_t microBatches,
                                                        int64_t stages,
                                                        int64_t stage) {
  int64_t buffers = numBuffers1F1B(microBatches, stages, stage);
  auto valid = [&](int64_t mb) { return mb >= 0 && mb < microBatches; };
  bool hasPrev = stage > 0, hasNext = stage < stages - 1;
  bool loads = stage == 0 || stage == stages - 1;
  int64_t numSteps = 2 * (microBatches + stages - 1);

  std::vector<Step> steps;
  int64_t prev = -1;
  for (int64_t t = 0; t < numSteps; ++t) {
    auto [mb, forward] = microBatchOfStep(t, stages, stage);
    StepBuilder b;
    // What the previous step computed leaves one step later, so the send
    // overlaps the neighbour's compute of the step before.
    if (forward) {
      if (valid(prev) && hasPrev)
        b.add(PipeInstrKind::send_grad, prev, prev % buffers);
      if (valid(mb) && hasPrev)
        b.add(PipeInstrKind::recv_activation, mb, mb % buffers);
    } else {
      if (valid(mb) && hasNext)
        b.add(PipeInstrKind::recv_grad, mb, mb % buffers);
      if (valid(prev) && hasNext)
        b.add(PipeInstrKind::send_activation, prev, prev % buffers);
    }
    if (loads && forward && valid(mb))
      b.add(PipeInstrKind::load_micro_batch, mb, mb % buffers);
    if (valid(mb))
      b.add(forward ? PipeInstrKind::forward : PipeInstrKind::backward, mb,
            mb % buffers);
    if (t == numSteps - 1)
      b.endOfBatch();
    prev = mb;
    steps.push_back(std::move(b.step));
  }
  return steps;
}

std::vector<Step> mlir::ds::pipeline::gpipeSchedule(int64_t microBatches,
                                                    int64_t stages,
                                                    int64_t stage) {
  bool hasPrev = stage > 0, hasNext = stage < stages - 1;
  bool loads = stage == 0 || stage == stages - 1;
  std::vector<Step> steps;
  for (int64_t mb = 0; mb < microBatches; ++mb) {
    StepBuilder b;
    if (hasPrev)
      b.add(PipeInstrKind::recv_activation, mb, mb);
    if (loads)
      b.add(PipeInstrKind::load_micro_batch, mb, mb);
    b.add(PipeInstrKind::forward, mb, mb);
    if (hasNext)
      b.add(PipeInstrKind::send_activation, mb, mb);
    steps.push_back(std::move(b.step));
  }
  for (int64_t mb = microBatches - 1; mb >= 0; --mb) {
    StepBuilder b;
    if (hasNext)
      b.add(PipeInstrKind::recv_grad, mb, mb);
    b.add(PipeInstrKind::backward, mb, mb);
    if (hasPrev)
      b.add(PipeInstrKind::send_grad, mb, mb);
    if (mb == 0)
      b.endOfBatch();
    steps.push_back(std::move(b.step));
  }
  return steps;
}

int64_t
mlir::ds::pipeline::numBuffers(const ::ds::config::PipelineConfig &config,
                               int64_t stage) {
  if (config.schedule == ::ds::config::PipelineSchedule::OneFOneB)
    return numBuffers1F1B(config.microBatches, config.stages, stage);
  if (config.schedule == ::ds::config::PipelineSchedule::Interleaved)
    return config.microBatches * config.virtualStages;
  return config.microBatches;
}

llvm::Expected<std::vector<std::vector<Step>>>
mlir::ds::pipeline::buildSchedule(const ::ds::config::PipelineConfig &config) {
  using ::ds::config::PipelineSchedule;
  if (config.schedule == PipelineSchedule::Interleaved) {
    if (config.microBatches % config.stages != 0)
      return llvm::createStringError(
          "pipeline.schedule \"interleaved\": " +
          std::to_string(config.microBatches) +
          " micro-batches (gradient_accumulation_steps) is not a multiple of "
          "the " +
          std::to_string(config.stages) +
          " stages; the interleaved schedule runs micro-batches in groups of "
          "one per stage, so use a multiple of " +
          std::to_string(config.stages));
    return interleavedSchedule(config.microBatches, config.stages,
                               config.virtualStages);
  }
  std::vector<std::vector<Step>> stages;
  for (int64_t s = 0; s < config.stages; ++s) {
    switch (config.schedule) {
    case PipelineSchedule::OneFOneB:
      stages.push_back(
          trainSchedule1F1B(config.microBatches, config.stages, s));
      break;
    case PipelineSchedule::GPipe:
      stages.push_back(gpipeSchedule(config.microBatches, config.stages, s));
      break;
    case PipelineSchedule::Interleaved:
      llvm_unreachable("built above");
    }
  }
  return stages;
}

dist::PipelineScheduleOp
mlir::ds::pipeline::buildScheduleOp(OpBuilder &builder, Location loc,
                                    const ::ds::config::PipelineConfig &config,
                                    ArrayRef<std::vector<Step>> stages) {
  MLIRContext *ctx = builder.getContext();
  SmallVector<Attribute> streams;
  for (const std::vector<Step> &steps : stages) {
    SmallVector<Attribute> stream;
    for (const Step &step : steps)
      for (const Instr &instr : step)
        stream.push_back(dist::PipeInstrAttr::get(
            ctx, instr.kind, instr.microBatch, instr.buffer, instr.chunk));
    streams.push_back(builder.getArrayAttr(stream));
  }
  return dist::PipelineScheduleOp::create(
      builder, loc,
      builder.getStringAttr(
          ::ds::config::stringifyPipelineSchedule(config.schedule)),
      builder.getI64IntegerAttr(config.stages),
      builder.getI64IntegerAttr(config.microBatches),
      config.virtualStages > 1 ? builder.getI64IntegerAttr(config.virtualStages)
                               : IntegerAttr(),
      builder.getArrayAttr(streams));
}

StringRef mlir::ds::pipeline::deepSpeedName(PipeInstrKind kind) {
  switch (kind) {
  case PipeInstrKind::load_micro_batch:
    return "LoadMicroBatch";
  case PipeInstrKind::forward:
    return "ForwardPass";
  case PipeInstrKind::backward:
    return "BackwardPass";
  case PipeInstrKind::send_activation:
    return "SendActivation";
  case PipeInstrKind::recv_activation:
    return "RecvActivation";
  case PipeInstrKind::send_grad:
    return "SendGrad";
  case PipeInstrKind::recv_grad:
    return "RecvGrad";
  case PipeInstrKind::reduce_tied_grads:
    return "ReduceTiedGrads";
  case PipeInstrKind::reduce_grads:
    return "ReduceGrads";
  case PipeInstrKind::optimizer_step:
    return "OptimizerStep";
  }
  llvm_unreachable("unknown pipeline instruction");
}
