//===- Pipeline.h - Pipeline partitions and schedules -----------*- C++ -*-===//
//
// What the pipeline passes and ds-report share: the model's pipeline layers
// (its top-level `dsnn.layer`s, and the head after them), the partition of
// those layers into stages, and each stage's instruction stream.
//
// The partitions and the 1F1B stream follow DeepSpeed's PipelineModule and
// TrainSchedule (docs/pipeline.md says where ds differs); every function here
// is deterministic and depends only on its arguments, so all ranks compute
// the same stages and streams.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TRANSFORMS_PIPELINE_H
#define DS_TRANSFORMS_PIPELINE_H

#include "dsdist/DistOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds::config {
struct PipelineConfig;
} // namespace ds::config

namespace mlir::ds::pipeline {

/// The attribute names of a split stage (dsdist dialect).
inline constexpr llvm::StringLiteral kPipeInputAttrName =
    dist::DistDialect::kPipeInputAttrName;
inline constexpr llvm::StringLiteral kPipeOutputAttrName =
    dist::DistDialect::kPipeOutputAttrName;
inline constexpr llvm::StringLiteral kPipeGradAttrName =
    dist::DistDialect::kPipeGradAttrName;
inline constexpr llvm::StringLiteral kPipelineAttrName =
    dist::DistDialect::kPipelineAttrName;

/// Operands of `op` and of the ops nested in it that are defined outside
/// `op`, in order of first use: what `op` needs from its block.
llvm::SetVector<Value> usedFromAbove(Operation *op);

/// An op a stage may recompute rather than receive (a constant).
bool isCopyable(Operation *op);

/// Whether parameter `param` of `fn` counts in its stage's share of the
/// model's gradient norm: every parameter of a stage does, except a weight
/// several stages hold (the tied embedding), which its first holder counts.
/// True outside a pipeline.
bool countsInStageNorm(ModuleOp module, func::FuncOp fn, unsigned param);

/// This rank's share of the squared gradient norm (f32 scalar), the same on
/// every rank of a tensor-parallel group: of the gradients `grads[i]` of
/// `fn`'s parameters i that count in the stage's norm (all of them outside a
/// pipeline), a tensor-parallel piece's squares summed over tp and a
/// replicated parameter's, the same on every rank of the group, once. Zero
/// when none counts. Summing it over the data-parallel chunks and the
/// stages gives the model's.
Value normSquares(OpBuilder &b, Location loc, ModuleOp module, func::FuncOp fn,
                  ArrayRef<Value> grads);

/// The ops of `block` (top level) that `outputs` need, transitively: the
/// forward of a gradient function whose outputs are its loss or the
/// activations a stage sends on. The other ops are its backward.
llvm::SetVector<Operation *> forwardSlice(Block &block, ValueRange outputs);

/// Values the backward of `block` reads from its forward (forwardSlice of
/// `outputs`), constants aside: what one micro-batch saves for its backward.
llvm::SetVector<Value> savedValues(Block &block, ValueRange outputs);

/// One entry of the layer list a DeepSpeed PipelineModule would be given.
struct Layer {
  std::string name;
  std::string type;
  /// Trainable parameter elements the layer uses; a parameter used by
  /// several layers (a tied embedding and LM head) counts in full at each.
  int64_t params = 0;
  /// The @forward arguments of those parameters, ascending.
  std::vector<unsigned> paramArgs;
  /// Forward FLOPs of one micro-batch (multiply-adds count two).
  int64_t flops = 0;
};

/// The name and type of the implicit last layer: the ops of the model
/// contract after its last top-level `dsnn.layer` that read a parameter
/// (an LM head), with the loss.
inline constexpr llvm::StringLiteral kHeadLayerName = "head";
inline constexpr llvm::StringLiteral kHeadLayerType = "Head";

/// The pipeline layers of a model contract's @forward, in order: each
/// top-level `dsnn.layer`, then the head when the ops after the last layer
/// read a parameter. An error when the function has no top-level layer.
llvm::Expected<std::vector<Layer>> collectLayers(func::FuncOp forward);

/// The parameter elements each stage holds: its layers' parameters, each
/// once (a tied weight is held by every stage that uses it).
std::vector<int64_t> stageParams(func::FuncOp forward, ArrayRef<Layer> layers,
                                 ArrayRef<int64_t> parts);

/// DeepSpeed's partition_uniform: `numParts + 1` boundaries; the first
/// `numItems % numParts` parts get one item more.
std::vector<int64_t> partitionUniform(int64_t numItems, int64_t numParts);

/// DeepSpeed's partition_balanced (since 0.12.5): the prefix dynamic program
/// minimizing the difference of the heaviest and lightest part, ties going
/// to the later boundary; uniform when there are no more items than parts.
std::vector<int64_t> partitionBalanced(ArrayRef<int64_t> weights,
                                       int64_t numParts);

/// The partition minimizing the heaviest part (the slowest stage); every
/// part non-empty. Among equally heavy ones, each boundary is the earliest
/// that keeps the parts before it lightest.
std::vector<int64_t> partitionMinMax(ArrayRef<int64_t> weights,
                                     int64_t numParts);

/// The boundaries `config` asks for over `layers` with `numParts` parts
/// (stages, times virtual stages when interleaved): `numParts + 1` indices
/// into `layers`. Errors, naming the numbers: more parts than layers, a
/// `type:` regex that matches no layer type.
llvm::Expected<std::vector<int64_t>>
partitionLayers(ArrayRef<Layer> layers,
                const ::ds::config::PipelineConfig &config);

/// One instruction of a stage's stream; the end-of-batch kinds have no
/// micro-batch and no buffer.
struct Instr {
  dist::PipeInstrKind kind;
  std::optional<int64_t> microBatch, buffer;
  /// The stage's model chunk, under the interleaved schedule only.
  std::optional<int64_t> chunk = std::nullopt;
};

/// What a stage runs in one schedule step; a barrier may separate steps
/// without deadlock.
using Step = std::vector<Instr>;

/// Stage `stage`'s steps of DeepSpeed's TrainSchedule over `microBatches`
/// micro-batches and `stages` stages: 2 (m + p - 1) steps, buffers
/// max(2, min(p - s, m)) used cyclically.
std::vector<Step> trainSchedule1F1B(int64_t microBatches, int64_t stages,
                                    int64_t stage);
int64_t numBuffers1F1B(int64_t microBatches, int64_t stages, int64_t stage);

/// All forwards, then all backwards in reverse order; one buffer per
/// micro-batch. One step per forward or backward.
std::vector<Step> gpipeSchedule(int64_t microBatches, int64_t stages,
                                int64_t stage);

/// Megatron's interleaved 1F1B, every stage's steps: stage s holds the
/// model chunks j * stages + s (j < virtualStages) and runs its forwards and
/// backwards in Megatron's order (warm-up (stages - s - 1) * 2 +
/// (virtualStages - 1) * stages forwards, then one forward and one backward
/// in turn, then the remaining backwards; micro-batches in groups of
/// `stages`). Each step does at most one forward or backward per stage and
/// then the step's sends and receives in one order all stages share, so
/// blocking sends cannot deadlock. One buffer per chunk and micro-batch.
/// `microBatches` must be a multiple of `stages`.
std::vector<std::vector<Step>> interleavedSchedule(int64_t microBatches,
                                                   int64_t stages,
                                                   int64_t virtualStages);

/// The activation buffers stage `stage` allocates under `config`'s schedule.
int64_t numBuffers(const ::ds::config::PipelineConfig &config, int64_t stage);

/// The schedule `config` names, one stream of steps per stage. An error
/// when the interleaved schedule's micro-batches are not a multiple of the
/// stages.
llvm::Expected<std::vector<std::vector<Step>>>
buildSchedule(const ::ds::config::PipelineConfig &config);

/// The streams as a `dsdist.pipeline_schedule` op (not yet verified), whose
/// verifier checks data dependencies, buffer lifetimes and that neighbours
/// send and receive in the same order.
dist::PipelineScheduleOp
buildScheduleOp(OpBuilder &builder, Location loc,
                const ::ds::config::PipelineConfig &config,
                ArrayRef<std::vector<Step>> stages);

/// DeepSpeed's class name of an instruction kind ("ForwardPass").
llvm::StringRef deepSpeedName(dist::PipeInstrKind kind);

} // namespace mlir::ds::pipeline

#endif // DS_TRANSFORMS_PIPELINE_H
