//===- ds-train.cpp - Compile a model + ds_config.json, then train --------===//
#include "ds/Driver/CompileCache.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Driver/Trainer.h"
#include "ds/Import/Import.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/WithColor.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace llvm;

namespace {

bool wantsArtifact(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg == "--")
      return false;
    if (arg == "--compiled" || arg == "-compiled" ||
        arg.starts_with("--compiled=") || arg.starts_with("-compiled="))
      return true;
  }
  return false;
}

/// --compiled: the artifact runs in ds-runner, installed next to ds-train,
/// so the process that trains has no compiler in it.
int execRunner(char **argv) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string runner = "ds-runner";
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    runner = dir.substr(0, dir.rfind('/') + 1) + "ds-runner";
  }
  execv(runner.c_str(), argv);
  WithColor::error(errs(), "ds-train")
      << "--compiled: cannot run " << runner << ": " << strerror(errno)
      << "; it is built and installed next to ds-train\n";
  return 1;
}

/// A PyTorch file's weights as safetensors, for --init-from and for a .pt
/// model's own starting values.
llvm::Error exportTorchWeights(StringRef path, StringRef out) {
  auto weights = mlir::ds::importer::readTorchWeights(path);
  if (!weights)
    return weights.takeError();
  std::vector<ds::driver::SafeTensorView> views;
  for (const auto &w : *weights)
    views.push_back({w.name, "F32", w.shape, w.values.data()});
  return ds::driver::writeSafeTensors(out, views);
}

} // namespace

int main(int argc, char **argv) {
  if (wantsArtifact(argc, argv))
    return execRunner(argv);
  return ds::driver::trainMain(
      argc, argv,
      "ds-train: compile a model and a ds_config.json into a training step, "
      "then run it\n",
      [](const ds::driver::TrainOptions &options) {
        ds::driver::StepSource source;
        source.exportTorchWeights = exportTorchWeights;
        bool quiet = options.quiet;
        source.provide = [quiet](const ds::driver::StepRequest &request) {
          return ds::driver::compileCached(request, quiet);
        };
        return llvm::Expected<ds::driver::StepSource>(std::move(source));
      });
}
