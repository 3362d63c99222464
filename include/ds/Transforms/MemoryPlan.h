//===- MemoryPlan.h - The step's peak memory per rank -------*- C++ -*-===//
//
// What ds-plan-memory predicts a rank holds at most during one call of the
// step, read off the tensor IR after the training pipeline (and
// ds-schedule-comm): the step's arguments and results, and the buffers
// its code creates, each live from the op that makes it to its last use —
// gathered parameters to their dsdist.release, a collective started but
// not waited its snapshot of the operand and its result. ds-train compares
// it with libdsrt's count (docs/communication.md, "Memory").
//
//===----------------------------------------------------------------------===//
#ifndef DS_TRANSFORMS_MEMORYPLAN_H
#define DS_TRANSFORMS_MEMORYPLAN_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace mlir::ds {

struct PeakMemoryPlan {
  /// The step's arguments and result buffers (the caller holds them).
  int64_t held = 0;
  /// The most bytes of the step's own buffers live at once (its micro-batch
  /// loop and the functions it calls included: one arena, reused).
  int64_t transient = 0;
  /// The buffers of the functions with an arena of their own (all held at
  /// once): each distinct layer function, a function called from more
  /// than one place (a pipeline stage's forward and backward), and the
  /// eval step when there is one.
  int64_t functions = 0;
  /// Of the buffers live at the transient peak: gathered parameters
  /// (waited, not yet released) and collectives in flight (started, not
  /// waited: snapshot and result). The largest of each alone, too.
  int64_t gatheredAtPeak = 0, inFlightAtPeak = 0;
  int64_t gatheredPeak = 0, inFlightPeak = 0;

  /// The step's buffers live at the transient peak, each with the op that
  /// makes it (an argument's or a result's buffer is in `held`, not here).
  std::vector<std::pair<int64_t, Operation *>> atPeak;

  int64_t total() const { return held + transient + functions; }
};

/// The plan of `entry`'s peak, or nullopt when it has no body; with a
/// function `evalEntry` (an eval set), its arena counts too.
std::optional<PeakMemoryPlan>
planPeakMemory(ModuleOp module, llvm::StringRef entry,
               llvm::StringRef evalEntry = "eval_step");

} // namespace mlir::ds

#endif // DS_TRANSFORMS_MEMORYPLAN_H
