//===- SinkReductions.h - Gradient buckets into the backward ----*- C++ -*-===//
//
// ds-schedule-comm's moves of a gradient reduction bucket, reduced once
// after the gradient function returns, into that function, cut where its
// gradients become ready; and, under gradient accumulation, the peeling of
// the last micro-batch that lets the reduction overlap its backward.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_TRANSFORMS_DISTRIBUTED_SINKREDUCTIONS_H
#define DS_LIB_TRANSFORMS_DISTRIBUTED_SINKREDUCTIONS_H

#include "ds/Transforms/CommCostModel.h"
#include "dsdist/DistOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ds {

/// DeepCompile's fusion rule: collectives join while the joined one is
/// predicted to take less than this times the longer of the two.
constexpr double kFuseGain = 1.2;

/// Moves `red`, a reduce-scatter or all-reduce of gradients a call
/// returns, into the callee, cut into pieces where the gradients become
/// ready (`model` on `grid` decides which join); false if it does not have
/// that form (nothing changed then).
bool sinkReduction(Operation *red, ModuleOp module, const CommCostModel &model,
                   dist::GridAttr grid);

/// Under gradient accumulation: runs the last micro-batch of `loop` after
/// it, calling its own copy of the gradient function, when a reduction
/// bucket after the loop is fed by that function's gradients (so
/// sinkReduction can move it into the copy); false if not (nothing changed
/// then).
bool peelLastMicroBatch(scf::ForOp loop, ModuleOp module);

} // namespace mlir::ds

#endif // DS_LIB_TRANSFORMS_DISTRIBUTED_SINKREDUCTIONS_H
