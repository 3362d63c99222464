//===- Pipelines.h - Named ds pass pipelines --------------------*- C++ -*-===//
//
// Each phase of DESIGN.md as one pipeline: what ds-train runs and what a
// user names on the ds-opt command line to stop after that phase.
//
//===----------------------------------------------------------------------===//
#ifndef DS_PIPELINES_PIPELINES_H
#define DS_PIPELINES_PIPELINES_H

#include "ds/Config/Config.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::ds {

/// Model contract -> step contract, as `config` asks: verify the model,
/// ds-autodiff, ds-accumulate-grads, ds-clip-grads, ds-optimizer,
/// ds-lr-schedule, verify the step, ds-zero. With pipeline.stages > 1 the
/// step is pipeline stage `stage`'s: ds-pipeline-split before the autodiff
/// and ds-pipeline-schedule in place of ds-accumulate-grads. Fails for
/// settings the training phase does not implement yet, naming the key.
/// With `eval`, ds-eval-step adds @eval_step before ds-zero. A non-empty
/// `commProfile` (the file `ds-report --comm-profile` writes) is the cost
/// model ds-schedule-comm fits; empty: its documented defaults.
llvm::Error buildTrainingPipeline(OpPassManager &pm,
                                  const ::ds::config::Config &config,
                                  int64_t stage = 0, bool eval = false,
                                  llvm::StringRef commProfile = "");

/// Registers `ds-training-pipeline{config=FILE world-size=N stage=S eval
/// comm-profile=FILE}`.
void registerTrainingPipeline();

} // namespace mlir::ds

#endif // DS_PIPELINES_PIPELINES_H
