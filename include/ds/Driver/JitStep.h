//===- JitStep.h - Compile @train_step in memory with the JIT ---*- C++ -*-===//
//
// The one place ds-train meets the IR: import the model, run the training
// pipeline the config asks for, read the manifest off @train_step, then
// lower and JIT it. Declared without MLIR types so the run side stays
// free of them.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_JITSTEP_H
#define DS_DRIVER_JITSTEP_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"

#include <functional>
#include <string>

namespace ds::driver {

struct JitStepRequest {
  std::string modelPath; ///< .json spec, .mlir model contract or .pt
  const ::ds::config::Config *config = nullptr;
  std::string dumpIRDir; ///< writes each phase's IR here (empty: none)
  /// Called with the start-up hash as soon as the step is built, before
  /// anything else can fail: ranks compare it.
  std::function<llvm::Error(uint64_t startupHash)> agreeOnStep;
  /// Called with the manifest before code generation, the slow part: what
  /// the manifest alone can refuse is refused first.
  std::function<llvm::Error(const StepManifest &)> beforeCodegen;
};

llvm::Expected<CompiledStep> compileJitStep(const JitStepRequest &request);

} // namespace ds::driver

#endif // DS_DRIVER_JITSTEP_H
