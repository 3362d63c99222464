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
/// ds-lr-schedule, verify the step. Runs on a module. Fails for settings
/// the training phase does not implement yet (fp16/bf16), naming the key.
llvm::Error buildTrainingPipeline(OpPassManager &pm,
                                  const ::ds::config::Config &config);

/// Registers `ds-training-pipeline{config=FILE world-size=N}`.
void registerTrainingPipeline();

} // namespace mlir::ds

#endif // DS_PIPELINES_PIPELINES_H
