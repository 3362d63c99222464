//===- CommPrediction.h - A step's communication, predicted ----*- C++ -*-===//
//
// What ds-schedule-comm's plan and ds-train's metrics share: the size,
// group and kind of a collective op, a rough flop count of compute, and
// the predicted communication of a whole function (docs/communication.md,
// "Predicted and measured").
//
//===----------------------------------------------------------------------===//
#ifndef DS_TRANSFORMS_COMMPREDICTION_H
#define DS_TRANSFORMS_COMMPREDICTION_H

#include "ds/Transforms/CommCostModel.h"
#include "dsdist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::ds {

/// What the plan assumes one rank computes per second (a few CPU cores of
/// sgemm): only estimates of hidden communication use it.
constexpr double kPlanFlopsPerSecond = 50e9;

/// Under gradient accumulation ds-schedule-comm runs the last micro-batch
/// through a copy of the gradient function named with this suffix (its
/// backward overlaps the reduction); phase timers mark it as the original.
constexpr llvm::StringLiteral kLastMicroBatchSuffix = "_last_micro_batch";

/// Bytes of a ranked tensor type.
int64_t bytesOf(Type type);
/// Ranks in the group of a collective over the axes of `grid`.
int64_t groupSizeOf(Operation *op, dist::GridAttr grid);
/// The cost model's kind of a collective or its start form.
CollectiveKind kindOf(Operation *op);
/// The bytes a collective's cost is counted on: the gathered result, the
/// reduce-scatter's input, the all-reduced tensor.
int64_t costBytes(Operation *op);
/// A rough count of the floating-point operations of `op` and what it
/// nests: 2MNK per matmul, one per result element for other dsnn ops.
double flopsOf(Operation *op);

/// The communication of one call of `fn`, in seconds: every all-gather,
/// reduce-scatter, all-reduce and all-to-all it runs (in what it calls and
/// in loops of constant trip count too, as often as they run), each as
/// `model` predicts it; `exposed` counts a blocking one whole and a
/// started one less the compute between its start and its wait (at
/// kPlanFlopsPerSecond), as ds-schedule-comm's plan does.
struct CommPrediction {
  double seconds = 0, exposed = 0;
};
CommPrediction predictComm(func::FuncOp fn, const CommCostModel &model);

} // namespace mlir::ds

#endif // DS_TRANSFORMS_COMMPREDICTION_H
