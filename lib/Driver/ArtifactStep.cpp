//===- ArtifactStep.cpp - Run a ds-compile artifact -----------------------===//
#include "ds/Driver/ArtifactStep.h"
#include "ds/Config/Config.h"
#include "ds/Driver/Artifact.h"
#include "ds/Execution/JitTarget.h"
#include "ds/Execution/SharedObject.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <optional>

using namespace ::ds::driver;
namespace exec = mlir::ds::exec;
namespace cfg = ::ds::config;

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

/// An entry point of the loaded object and how to call it.
struct LoadedEntry {
  exec::PackedEntry entry = nullptr;
  exec::FunctionSignature signature;
};

class ArtifactStepFunction : public StepFunction {
public:
  ArtifactStepFunction(std::unique_ptr<exec::SharedObject> object,
                       LoadedEntry step, std::optional<LoadedEntry> eval)
      : object(std::move(object)), step(std::move(step)),
        eval(std::move(eval)) {}
  llvm::Error run(llvm::ArrayRef<Tensor> args,
                  llvm::ArrayRef<Tensor> results) override {
    return exec::callPacked(step.entry, step.signature, args, results);
  }
  llvm::Error evaluate(llvm::ArrayRef<Tensor> args,
                       const Tensor &loss) override {
    if (!eval)
      return StepFunction::evaluate(args, loss);
    return exec::callPacked(eval->entry, eval->signature, args, {loss});
  }

private:
  std::unique_ptr<exec::SharedObject> object;
  LoadedEntry step;
  std::optional<LoadedEntry> eval;
};

/// Code for a CPU this host lacks would die of an illegal instruction on
/// its first vector op: refuse it by name first.
llvm::Error checkCpu(const ArtifactManifest &m, const std::string &dir) {
  std::vector<std::string> missing;
  if (m.cpuLevel == "native") {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (const std::string &f : m.cpuFeatures)
      if (f.size() > 1 && f[0] == '+' && !host.lookup(f.substr(1)))
        missing.push_back(f.substr(1));
    if (missing.empty())
      return llvm::Error::success();
  } else {
    auto target = exec::resolveJitTarget(m.cpuLevel);
    if (target)
      return llvm::Error::success();
    llvm::consumeError(target.takeError());
    missing = exec::featuresHostLacks(m.cpuLevel);
  }
  std::string what = missing.empty()
                         ? std::string()
                         : " (it lacks " + llvm::join(missing, ", ") + ")";
  return makeError(dir + " was compiled for CPU " + m.cpuLevel +
                   (m.cpuLevel == "native" ? " = " + m.cpuName : "") +
                   ", which this CPU does not run" + what +
                   "; compile it for a level this CPU runs (" +
                   llvm::join(exec::runnableJitTargetLevels(), ", ") +
                   ") with ds-compile --cpu");
}

llvm::Error checkWorldSize(const ArtifactManifest &m, const std::string &dir,
                           int64_t worldSize) {
  if (m.worldSize == worldSize)
    return llvm::Error::success();
  return makeError(dir + " was compiled for " + llvm::Twine(m.worldSize) +
                   " rank(s), but this job has " + llvm::Twine(worldSize) +
                   "; compile it again with ds-compile --world-size " +
                   llvm::Twine(worldSize));
}

llvm::Error checkJob(const ArtifactManifest &m, const std::string &dir,
                     const StepRequest &request) {
  if (llvm::Error err = checkWorldSize(m, dir, request.worldSize))
    return err;
  std::string diff = firstDifference(m.config, cfg::toJson(*request.config));
  if (!diff.empty())
    return makeError("the config does not match the one " + dir +
                     " was compiled with (" + diff +
                     ", compiled vs given); run without --config to use "
                     "the artifact's, or compile it again with ds-compile");
  if (!request.modelPath.empty()) {
    auto hash = hashFile(request.modelPath);
    if (!hash)
      return hash.takeError();
    if (*hash != m.modelHash)
      return makeError(request.modelPath + " is not the model " + dir +
                       " was compiled from (" + m.modelPath +
                       ", different contents); run without --model, or "
                       "compile it again with ds-compile");
  }
  if (!request.commProfile.empty()) {
    auto hash = hashFile(request.commProfile);
    if (!hash)
      return hash.takeError();
    if (m.commProfilePath.empty() || *hash != m.commProfileHash)
      return makeError(
          request.commProfile + " is not the communication profile " + dir +
          " was compiled with (" +
          (m.commProfilePath.empty()
               ? std::string("none: the default cost "
                             "model")
               : m.commProfilePath + ", different contents") +
          "); run without --comm-profile, or compile it again with "
          "ds-compile --comm-profile");
  }
  return checkCpu(m, dir);
}

} // namespace

llvm::Error ds::driver::checkArtifactWorldSize(const std::string &dir,
                                               int64_t worldSize) {
  auto manifest = readArtifactManifest(dir);
  if (!manifest)
    return manifest.takeError();
  return checkWorldSize(*manifest, dir, worldSize);
}

llvm::Expected<CompiledStep>
ds::driver::loadArtifact(const std::string &dir, const StepRequest &request) {
  auto manifest = readArtifactManifest(dir);
  if (!manifest)
    return manifest.takeError();
  if (llvm::Error err = checkJob(*manifest, dir, request))
    return std::move(err);
  const ArtifactProgram *program = manifest->programOf(request.rank);
  if (!program)
    return makeError(dir + " has no program for rank " +
                     llvm::Twine(request.rank));
  if (request.eval && !program->evalSignature)
    return makeError("--eval-data: " + dir +
                     " was compiled without an eval function; compile it "
                     "again with ds-compile --eval, or run without "
                     "--compiled to evaluate");
  if (request.agreeOnStep)
    if (llvm::Error err = request.agreeOnStep(program->step.startupHash))
      return std::move(err);
  if (request.beforeCodegen)
    if (llvm::Error err = request.beforeCodegen(program->step))
      return std::move(err);
  auto object = exec::SharedObject::open(dir + "/" + program->object);
  if (!object)
    return object.takeError();
  auto entry = (*object)->entry(program->signature.name);
  if (!entry)
    return entry.takeError();
  std::optional<LoadedEntry> eval;
  if (program->evalSignature) {
    auto evalEntry = (*object)->entry(program->evalSignature->name);
    if (!evalEntry)
      return evalEntry.takeError();
    eval = LoadedEntry{*evalEntry, *program->evalSignature};
  }
  CompiledStep compiled;
  compiled.manifest = program->step;
  compiled.origin = "loaded " + dir;
  compiled.function = std::make_unique<ArtifactStepFunction>(
      std::move(*object), LoadedEntry{*entry, program->signature},
      std::move(eval));
  return compiled;
}
