//===- ds-runner.cpp - Train with a ds-compile artifact, no compiler ------===//
//
// ds-train --compiled DIR runs this. It links the runtime and ds-train's run
// side only: no libMLIR, no libLLVM, no LibTorch in the process.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/ArtifactStep.h"
#include "ds/Driver/Trainer.h"
#include "dsrt/dsrt.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

int main(int argc, char **argv) {
  // Before anything else: may re-execute with faster BLAS kernels.
  dsrt_blas_core_select(argv);
  InitLLVM init(argc, argv);
  auto options = ds::driver::parseTrainCommandLine(
      argc, argv,
      "ds-runner: train with a ds-compile artifact (ds-train --compiled DIR "
      "runs this)\n");
  if (options && options->compiledDir.empty())
    options = createStringError("ds-runner runs ds-compile artifacts: give "
                                "--compiled DIR (ds-train compiles models)");
  if (!options) {
    WithColor::error(errs(), "ds-train") << toString(options.takeError())
                                         << "\n";
    return 1;
  }
  const std::string dir = options->compiledDir;
  ds::driver::StepSource source;
  source.provide = [&](const ds::driver::StepRequest &request) {
    return ds::driver::loadArtifact(dir, request);
  };
  source.checkWorldSize = [&](int64_t worldSize) {
    return ds::driver::checkArtifactWorldSize(dir, worldSize);
  };
  if (Error err = ds::driver::runTraining(*options, source, outs())) {
    outs().flush();
    WithColor::error(errs(), "ds-train") << toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
