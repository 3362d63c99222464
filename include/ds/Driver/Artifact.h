//===- Artifact.h - A ds-compile artifact directory -------------*- C++ -*-===//
//
// What `ds-compile` writes and `ds-train --compiled` (through ds-runner)
// runs, without the compiler:
//
//   DIR/manifest.json   versioned; everything the run side needs that
//                       otherwise comes from the IR (see ArtifactManifest)
//   DIR/ds_config.json  the config as given (resolved again on load and
//                       compared with the manifest's resolved copy)
//   DIR/<program>.so    one shared object per distinct rank program
//   DIR/ir/*.mlir       the IR after each phase, for reading
//
// The format is ds's own and changes with it: a manifest is read only by
// the ds version that wrote it.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_ARTIFACT_H
#define DS_DRIVER_ARTIFACT_H

#include "ds/Driver/CompiledStep.h"
#include "ds/Execution/PackedCall.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds::driver {

/// The ds version this build is (PROJECT_VERSION).
llvm::StringRef dsVersion();

/// One distinct rank program: every data-parallel rank shares one.
struct ArtifactProgram {
  std::string object;         ///< file name of the .so in DIR
  std::vector<int64_t> ranks; ///< the ranks that run it
  StepManifest step;
  mlir::ds::exec::FunctionSignature signature; ///< of @train_step
  /// Of @eval_step, in the same object, when ds-compile built one
  /// (--eval; its arguments are step.evalArgs). An artifact written
  /// without it has none and is refused for --eval-data.
  std::optional<mlir::ds::exec::FunctionSignature> evalSignature;
};

struct ArtifactManifest {
  static constexpr int64_t kFormatVersion = 1;
  int64_t formatVersion = kFormatVersion;
  std::string dsVersion;
  int64_t worldSize = 1;
  /// The CPU level the code was generated for ("x86-64-v3", "native", ...),
  /// the LLVM CPU name and, for native, the features it was given.
  std::string cpuLevel, cpuName;
  std::vector<std::string> cpuFeatures;
  std::string modelPath;  ///< as given to ds-compile, for messages
  uint64_t modelHash = 0; ///< xxh3 of the model file's bytes
  /// The communication profile the schedule was fitted to (ds-compile
  /// --comm-profile), path for messages and xxh3 of its bytes; empty path:
  /// none, the cost model's defaults.
  std::string commProfilePath;
  uint64_t commProfileHash = 0;
  nlohmann::json config; ///< the resolved config (config::toJson)
  std::vector<ArtifactProgram> programs;

  /// The program rank `rank` runs, if any.
  const ArtifactProgram *programOf(int64_t rank) const;
};

/// xxh3 of a file's bytes (the model hash).
llvm::Expected<uint64_t> hashFile(const std::string &path);

llvm::Error writeArtifactManifest(const ArtifactManifest &manifest,
                                  const std::string &dir);
llvm::Expected<ArtifactManifest> readArtifactManifest(const std::string &dir);

/// The starting weights of an artifact compiled from a PyTorch file (.pt,
/// .pt2), written by ds-compile beside the manifest: ds-runner reads no
/// PyTorch files.
inline constexpr llvm::StringLiteral kArtifactWeightsFile =
    "weights.safetensors";

/// The first place two JSON values differ, as "key.path: a vs b" ("" when
/// equal): what a config mismatch names.
std::string firstDifference(const nlohmann::json &a, const nlohmann::json &b);

} // namespace ds::driver

#endif // DS_DRIVER_ARTIFACT_H
