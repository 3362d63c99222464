//===- ArtifactStep.h - Run a ds-compile artifact ---------------*- C++ -*-===//
//
// The step loaded from an artifact directory (Artifact.h) instead of
// compiled: the manifest is checked against this job (ds version, world
// size, resolved config, model, CPU), the rank's shared object is loaded,
// and the rest of the run is ds-train's own. No MLIR, no LLVM code
// generation: ds-runner links this.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_ARTIFACTSTEP_H
#define DS_DRIVER_ARTIFACTSTEP_H

#include "ds/Driver/CompiledStep.h"

#include <string>

namespace ds::driver {

/// Loads `dir` for `request` (its config, world size and rank; its model,
/// when given, must be the one compiled).
llvm::Expected<CompiledStep> loadArtifact(const std::string &dir,
                                          const StepRequest &request);

/// Refuses `dir` for a job of `worldSize` ranks it was not compiled for
/// (and any manifest this build cannot read).
llvm::Error checkArtifactWorldSize(const std::string &dir, int64_t worldSize);

} // namespace ds::driver

#endif // DS_DRIVER_ARTIFACTSTEP_H
