//===- ds-runner.cpp - Train with a ds-compile artifact, no compiler ------===//
//
// ds-train --compiled DIR runs this. It links the runtime and ds-train's run
// side only: no libMLIR, no libLLVM, no LibTorch in the process.
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/ArtifactStep.h"
#include "ds/Driver/Trainer.h"

using namespace ds::driver;

int main(int argc, char **argv) {
  return trainMain(
      argc, argv,
      "ds-runner: train with a ds-compile artifact (ds-train --compiled DIR "
      "runs this)\n",
      [](const TrainOptions &options) -> llvm::Expected<StepSource> {
        if (options.compiledDir.empty())
          return llvm::createStringError(
              "ds-runner runs ds-compile artifacts: give --compiled DIR "
              "(ds-train compiles models)");
        std::string dir = options.compiledDir;
        StepSource source;
        source.provide = [dir](const StepRequest &request) {
          return loadArtifact(dir, request);
        };
        source.checkWorldSize = [dir](int64_t worldSize) {
          return checkArtifactWorldSize(dir, worldSize);
        };
        return source;
      });
}
