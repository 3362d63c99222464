//===- PipelineTest.cpp - Partitions and schedules ------------------------===//
//
// Expected boundaries are worked out by hand from DeepSpeed's documented
// algorithms (partition_uniform, partition_balanced since 0.12.5); the
// generated streams are checked against the dsdist.pipeline_schedule
// verifier, and a stream broken on purpose must fail it. The full 1F1B
// comparison with DeepSpeed's TrainSchedule is the lit test
// test/Distributed/pipeline-report.test.
//
//===----------------------------------------------------------------------===//
#include "ds/Transforms/Pipeline.h"
#include "ds/Config/Config.h"
#include "dsdist/DistDialect.h"
#include "dsdist/DistOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::ds::pipeline;
using mlir::ds::dist::PipeInstrKind;
using Bounds = std::vector<int64_t>;

namespace {

TEST(PartitionUniform, FirstPartsTakeTheRemainder) {
  EXPECT_EQ(partitionUniform(7, 3), (Bounds{0, 3, 5, 7}));
  EXPECT_EQ(partitionUniform(6, 3), (Bounds{0, 2, 4, 6}));
  EXPECT_EQ(partitionUniform(10, 4), (Bounds{0, 3, 6, 8, 10}));
}

TEST(PartitionUniform, FewerItemsThanPartsLeavesTrailingPartsEmpty) {
  EXPECT_EQ(partitionUniform(2, 4), (Bounds{0, 1, 2, 2, 2}));
  EXPECT_EQ(partitionUniform(3, 3), (Bounds{0, 1, 2, 3}));
}

TEST(PartitionBalanced, EqualSplitWhenOneExists) {
  EXPECT_EQ(partitionBalanced({1, 1, 1, 1}, 2), (Bounds{0, 2, 4}));
  EXPECT_EQ(partitionBalanced({5, 1, 1, 5}, 2), (Bounds{0, 2, 4}));
}

TEST(PartitionBalanced, TiesGoToTheLaterBoundary) {
  // {1 | 1 1} and {1 1 | 1} both have spread 1; `>=` keeps the later k.
  EXPECT_EQ(partitionBalanced({1, 1, 1}, 2), (Bounds{0, 2, 3}));
  // type: weighs only the matching layers; the zero-weight layer between
  // the halves stays in the first stage, the boundary as late as the tie
  // allows.
  EXPECT_EQ(partitionBalanced({0, 1, 0, 1, 0}, 2), (Bounds{0, 3, 5}));
}

TEST(PartitionBalanced, MinimizesTheSpreadNotTheHeaviestPart) {
  // DeepSpeed's prefix table over 1 1 5 3 3 in 3 parts ends at 7 | 3 | 3
  // (spread 4, heaviest 7); the slowest stage is lightest at 2 | 5 | 6.
  EXPECT_EQ(partitionBalanced({1, 1, 5, 3, 3}, 3), (Bounds{0, 3, 4, 5}));
  EXPECT_EQ(partitionMinMax({1, 1, 5, 3, 3}, 3), (Bounds{0, 2, 3, 5}));
  // With two parts the two aims agree: {1 1 | 9}.
  EXPECT_EQ(partitionBalanced({1, 1, 9}, 2), (Bounds{0, 2, 3}));
}

TEST(PartitionMinMax, MinimizesTheSlowestStage) {
  EXPECT_EQ(partitionMinMax({1, 1, 9}, 2), (Bounds{0, 2, 3}));
  // Heaviest 6 is the best: {1 2 3 | 4} is 6 | 4 and {1 2 | 3 4} is 3 | 7.
  EXPECT_EQ(partitionMinMax({1, 2, 3, 4}, 2), (Bounds{0, 3, 4}));
  // Ties keep the earlier boundary: {2 | 2 2} and {2 2 | 2} both 4.
  EXPECT_EQ(partitionMinMax({2, 2, 2}, 2), (Bounds{0, 1, 3}));
  // Every part non-empty even when a zero-weight layer could join.
  EXPECT_EQ(partitionMinMax({0, 0, 5}, 3), (Bounds{0, 1, 2, 3}));
}

TEST(PartitionLayers, ErrorsNameTheNumbers) {
  std::vector<Layer> layers = {{"embed", "GPT2Embedding", 10, {}, 1},
                               {"h.0", "GPT2Block", 20, {}, 1},
                               {"head", "Head", 10, {}, 1}};
  ::ds::config::PipelineConfig config;
  config.stages = 4;
  auto tooMany = partitionLayers(layers, config);
  ASSERT_FALSE(tooMany);
  EXPECT_EQ(llvm::toString(tooMany.takeError()),
            "pipeline: 4 stages but the model has only 3 layers to cut; every "
            "stage needs at least one layer, so use at most 3 stages");

  config.stages = 2;
  config.partitionMethod = ::ds::config::PartitionMethod::Type;
  config.partitionTypeRegex = "attention";
  auto none = partitionLayers(layers, config);
  ASSERT_FALSE(none);
  EXPECT_EQ(llvm::toString(none.takeError()),
            "pipeline.partition_method \"type:attention\" matches no layer "
            "type; the model's layer types are \"GPT2Embedding\", "
            "\"GPT2Block\", \"Head\"");

  config.partitionTypeRegex = "block";
  auto blocks = partitionLayers(layers, config);
  ASSERT_TRUE(bool(blocks)) << llvm::toString(blocks.takeError());
  EXPECT_EQ(*blocks, (Bounds{0, 2, 3}));
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

int64_t count(const std::vector<Step> &steps, PipeInstrKind kind) {
  int64_t n = 0;
  for (const Step &step : steps)
    for (const Instr &instr : step)
      n += instr.kind == kind;
  return n;
}

TEST(TrainSchedule1F1B, StepsAndBuffersAreDeepSpeeds) {
  for (int64_t p : {1, 2, 3, 4})
    for (int64_t m : {1, 2, 4, 8})
      for (int64_t s = 0; s < p; ++s) {
        std::vector<Step> steps = trainSchedule1F1B(m, p, s);
        EXPECT_EQ(int64_t(steps.size()), 2 * (m + p - 1));
        EXPECT_EQ(numBuffers1F1B(m, p, s),
                  std::max<int64_t>(2, std::min(p - s, m)));
        EXPECT_EQ(count(steps, PipeInstrKind::forward), m);
        EXPECT_EQ(count(steps, PipeInstrKind::backward), m);
        EXPECT_EQ(count(steps, PipeInstrKind::send_activation),
                  s < p - 1 ? m : 0);
        EXPECT_EQ(count(steps, PipeInstrKind::recv_grad), s < p - 1 ? m : 0);
        EXPECT_EQ(count(steps, PipeInstrKind::load_micro_batch),
                  s == 0 || s == p - 1 ? m : 0);
        EXPECT_EQ(steps.back().back().kind, PipeInstrKind::optimizer_step);
      }
}

TEST(TrainSchedule1F1B, TwoStagesFourMicroBatches) {
  // DeepSpeed's TrainSchedule(micro_batches=4, stages=2, stage_id=1): odd
  // steps forward (mb = (t - 1) / 2), even steps backward
  // (mb = t / 2 - 2 + 1); the gradient of step t's backward leaves in
  // step t + 1.
  std::vector<Step> steps = trainSchedule1F1B(4, 2, 1);
  ASSERT_EQ(steps.size(), 10u);
  EXPECT_TRUE(steps[0].empty());
  ASSERT_EQ(steps[1].size(), 3u);
  EXPECT_EQ(steps[1][0].kind, PipeInstrKind::recv_activation);
  EXPECT_EQ(steps[1][1].kind, PipeInstrKind::load_micro_batch);
  EXPECT_EQ(steps[1][2].kind, PipeInstrKind::forward);
  EXPECT_EQ(steps[1][2].microBatch, 0);
  ASSERT_EQ(steps[2].size(), 1u);
  EXPECT_EQ(steps[2][0].kind, PipeInstrKind::backward);
  EXPECT_EQ(steps[2][0].microBatch, 0);
  ASSERT_EQ(steps[3].size(), 4u);
  EXPECT_EQ(steps[3][0].kind, PipeInstrKind::send_grad);
  EXPECT_EQ(steps[3][0].microBatch, 0);
  EXPECT_EQ(steps[3][1].kind, PipeInstrKind::recv_activation);
  EXPECT_EQ(steps[3][1].microBatch, 1);
  EXPECT_EQ(steps[3][1].buffer, 1);
  ASSERT_EQ(steps[9].size(), 4u);
  EXPECT_EQ(steps[9][0].kind, PipeInstrKind::send_grad);
  EXPECT_EQ(steps[9][0].microBatch, 3);
}

class ScheduleVerifier : public ::testing::Test {
protected:
  ScheduleVerifier() {
    ctx.getOrLoadDialect<mlir::ds::dist::DistDialect>();
    module = ModuleOp::create(UnknownLoc::get(&ctx));
  }

  /// The verifier's message for the schedule `config` asks for, or "" when
  /// it verifies.
  std::string verifyBuilt(const ::ds::config::PipelineConfig &config) {
    auto stages = buildSchedule(config);
    if (!stages)
      return llvm::toString(stages.takeError());
    return verify(config, *stages);
  }

  /// The verifier's message, or "" when `stages` verifies.
  std::string verify(const ::ds::config::PipelineConfig &config,
                     const std::vector<std::vector<Step>> &stages) {
    std::string diag;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      diag += d.str();
      return success();
    });
    OpBuilder builder(&ctx);
    builder.setInsertionPointToEnd(module->getBody());
    Operation *op =
        buildScheduleOp(builder, builder.getUnknownLoc(), config, stages);
    bool ok = succeeded(mlir::verify(op));
    op->erase();
    return ok ? "" : diag;
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

TEST_F(ScheduleVerifier, GeneratedSchedulesVerify) {
  for (auto kind : {::ds::config::PipelineSchedule::OneFOneB,
                    ::ds::config::PipelineSchedule::GPipe})
    for (int64_t p : {1, 2, 3, 4})
      for (int64_t m : {1, 2, 4, 8}) {
        ::ds::config::PipelineConfig config;
        config.schedule = kind;
        config.stages = p;
        config.microBatches = m;
        EXPECT_EQ(verifyBuilt(config), "")
            << ::ds::config::stringifyPipelineSchedule(kind).str() << " p=" << p
            << " m=" << m;
      }
}

TEST_F(ScheduleVerifier, ReorderedSendsAreRejected) {
  ::ds::config::PipelineConfig config;
  config.stages = 2;
  config.microBatches = 4;
  auto stages = buildSchedule(config);
  ASSERT_TRUE(bool(stages));
  // Stage 0 sends micro-batch 1's activations before micro-batch 0's: stage
  // 1 receives 0 first, so the streams no longer match.
  std::vector<Instr *> sends;
  for (Step &step : (*stages)[0])
    for (Instr &instr : step)
      if (instr.kind == PipeInstrKind::send_activation)
        sends.push_back(&instr);
  ASSERT_GE(sends.size(), 2u);
  std::swap(sends[0]->microBatch, sends[1]->microBatch);
  std::swap(sends[0]->buffer, sends[1]->buffer);
  EXPECT_NE(verify(config, *stages), "");
}

/// A stage's forwards and backwards as "F<chunk>.<mb>" / "B<chunk>.<mb>".
std::string computes(const std::vector<Step> &steps) {
  std::string text;
  for (const Step &step : steps)
    for (const Instr &instr : step)
      if (instr.kind == PipeInstrKind::forward ||
          instr.kind == PipeInstrKind::backward)
        text += (text.empty() ? "" : " ") +
                std::string(instr.kind == PipeInstrKind::forward ? "F" : "B") +
                std::to_string(instr.chunk.value_or(-1)) + "." +
                std::to_string(*instr.microBatch);
  return text;
}

// Megatron's interleaved order for p = 2, v = 2, m = 4, worked out by hand
// from forward_backward_pipelining_with_interleaving: stage s warms up with
// (p - s - 1) * 2 + (v - 1) * p forwards; forward k runs chunk
// (k mod pv) / p on micro-batch (k / pv) * p + k mod p, backward k the
// chunks in reverse.
TEST(InterleavedSchedule, MegatronsOrder) {
  auto stages = interleavedSchedule(4, 2, 2);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(computes(stages[0]), "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 "
                                 "F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3");
  EXPECT_EQ(computes(stages[1]), "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 "
                                 "F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3");
}

// The model's first chunk (stage 0, chunk 0) loads the inputs and the last
// (stage p - 1, chunk v - 1) the labels; activations of stage p - 1's chunk
// j go to stage 0's chunk j + 1.
TEST(InterleavedSchedule, LoadsAndTheWrapAround) {
  auto stages = interleavedSchedule(2, 2, 2);
  auto count = [&](int64_t s, PipeInstrKind kind, int64_t chunk) {
    int64_t n = 0;
    for (const Step &step : stages[s])
      for (const Instr &instr : step)
        n += instr.kind == kind && instr.chunk == chunk;
    return n;
  };
  EXPECT_EQ(count(0, PipeInstrKind::load_micro_batch, 0), 2);
  EXPECT_EQ(count(0, PipeInstrKind::load_micro_batch, 1), 0);
  EXPECT_EQ(count(1, PipeInstrKind::load_micro_batch, 0), 0);
  EXPECT_EQ(count(1, PipeInstrKind::load_micro_batch, 1), 2);
  EXPECT_EQ(count(1, PipeInstrKind::send_activation, 0), 2);
  EXPECT_EQ(count(0, PipeInstrKind::recv_activation, 1), 2);
  EXPECT_EQ(count(0, PipeInstrKind::send_grad, 1), 2);
  EXPECT_EQ(count(1, PipeInstrKind::recv_grad, 0), 2);
  EXPECT_EQ(count(0, PipeInstrKind::recv_activation, 0), 0);
  EXPECT_EQ(count(1, PipeInstrKind::send_activation, 1), 0);
}

// Every step runs at most one forward or backward per stage, so the steps
// count the schedule's length in chunk computes: 2mv computes per stage
// and a bubble of about 2 (p - 1) steps, (p - 1) / (v m) of the work,
// against 2 (p - 1) whole-stage steps for 1F1B.
TEST(InterleavedSchedule, BubbleShrinksWithChunks) {
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        auto stages = interleavedSchedule(m, p, v);
        int64_t steps = stages.front().size();
        EXPECT_GE(steps, 2 * m * v + 2 * (p - 1))
            << "p=" << p << " v=" << v << " m=" << m;
        EXPECT_LE(steps, 2 * m * v + 2 * (p - 1) + p)
            << "p=" << p << " v=" << v << " m=" << m;
      }
}

TEST_F(ScheduleVerifier, InterleavedSchedulesVerify) {
  for (int64_t p : {2, 3, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        ::ds::config::PipelineConfig config;
        config.schedule = ::ds::config::PipelineSchedule::Interleaved;
        config.stages = p;
        config.virtualStages = v;
        config.microBatches = m;
        EXPECT_EQ(verifyBuilt(config), "")
            << "p=" << p << " v=" << v << " m=" << m;
      }
}

// Stage 0's first receive of chunk 1's input claims to be chunk 0's, which
// the model's first chunk never receives: the pair no longer matches.
TEST_F(ScheduleVerifier, InterleavedSwappedChunksAreRejected) {
  ::ds::config::PipelineConfig config;
  config.schedule = ::ds::config::PipelineSchedule::Interleaved;
  config.stages = 2;
  config.virtualStages = 2;
  config.microBatches = 2;
  auto stages = buildSchedule(config);
  ASSERT_TRUE(bool(stages));
  bool broken = false;
  for (Step &step : (*stages)[0])
    for (Instr &instr : step)
      if (!broken && instr.kind == PipeInstrKind::recv_activation &&
          instr.chunk == 1) {
        instr.chunk = 0;
        broken = true;
      }
  ASSERT_TRUE(broken);
  EXPECT_NE(verify(config, *stages), "");
}

TEST(BuildSchedule, InterleavedNeedsMicroBatchesInGroupsOfStages) {
  ::ds::config::PipelineConfig config;
  config.stages = 2;
  config.microBatches = 3;
  config.schedule = ::ds::config::PipelineSchedule::Interleaved;
  config.virtualStages = 2;
  auto stages = buildSchedule(config);
  ASSERT_FALSE(stages);
  EXPECT_EQ(llvm::toString(stages.takeError()),
            "pipeline.schedule \"interleaved\": 3 micro-batches "
            "(gradient_accumulation_steps) is not a multiple of the 2 stages; "
            "the interleaved schedule runs micro-batches in groups of one per "
            "stage, so use a multiple of 2");
}

} // namespace
