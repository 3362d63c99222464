//===- JitStep.h - Compile @train_step in memory with the JIT ---*- C++ -*-===//
//
// The one place ds-train meets the IR: import the model, run the training
// pipeline the config asks for, read the manifest off @train_step, then
// lower and JIT it, or write it as a ds-compile artifact. Declared without
// MLIR types so the run side stays free of them.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_JITSTEP_H
#define DS_DRIVER_JITSTEP_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace ds::driver {

llvm::Expected<CompiledStep> compileJitStep(const StepRequest &request);

/// ds-compile: what compileJitStep builds, written to `dir` as an artifact
/// (Artifact.h) with code for CPU level `cpuLevel` instead of JIT'd.
struct ArtifactRequest {
  StepRequest step;       ///< worldSize: the ranks the artifact runs on
  std::string configPath; ///< copied into dir as ds_config.json
  std::string dir;
  std::string cpuLevel; ///< "x86-64-v3", "x86-64-v4", "native", ...
  bool writeIR = true;  ///< dir/ir/*.mlir
  bool quiet = false;
};
llvm::Error compileArtifact(const ArtifactRequest &request,
                            llvm::raw_ostream &log);

/// Whether the step's lowering runs equal layers as one loop over stacked
/// parameters (ds-stack-layers, ds-stack-arguments; docs/architecture.md):
/// DS_STACK_LAYERS=1 or 0 forces it on or off; otherwise it is on where
/// every per-layer value can be stacked (one rank, ZeRO 0, Adam or AdamW,
/// fp32, no pipeline, MoE or gradient accumulation). The compile cache keys
/// on it.
bool stackLayers(const ::ds::config::Config &config);

} // namespace ds::driver

#endif // DS_DRIVER_JITSTEP_H
