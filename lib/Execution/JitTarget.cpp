//===- JitTarget.cpp - the CPU level compiled code is generated for -------===//
#include "ds/Execution/JitTarget.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>

using namespace mlir::ds::exec;

namespace {

struct Level {
  llvm::StringLiteral name;
  /// What the level adds to the one before it (LLVM feature names, as
  /// sys::getHostCPUFeatures reports them).
  std::vector<llvm::StringLiteral> adds;
};

// The x86-64 micro-architecture levels of the psABI, each needing the
// features of the ones before it.
const std::vector<Level> &levels() {
  static const std::vector<Level> table = {
      {"x86-64-v2",
       {"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"}},
      {"x86-64-v3",
       {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe",
        "xsave"}},
      {"x86-64-v4",
       {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}},
  };
  return table;
}

bool hostIsX86() {
  return llvm::Triple(llvm::sys::getProcessTriple()).getArch() ==
         llvm::Triple::x86_64;
}

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

} // namespace

std::vector<std::string> mlir::ds::exec::runnableJitTargetLevels() {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names = {"native"};
  if (hostIsX86())
    for (const Level &level : levels()) {
      bool all = true;
      for (llvm::StringLiteral f : level.adds)
        all &= host.lookup(f);
      if (!all)
        break;
      names.push_back(level.name.str());
    }
  return names;
}

std::vector<std::string> mlir::ds::exec::jitTargetLevels() {
  std::vector<std::string> names = {"native"};
  for (const Level &level : levels())
    names.push_back(level.name.str());
  return names;
}

llvm::Expected<JitTarget>
mlir::ds::exec::resolveJitTarget(llvm::StringRef request) {
  JitTarget target;
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  if (request.empty() || request == "native") {
    target.level = "native";
    target.cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : host)
      target.features.push_back((feature.second ? "+" : "-") +
                                feature.first().str());
    return target;
  }
  auto it = llvm::find_if(
      levels(), [&](const Level &level) { return level.name == request; });
  if (it == levels().end())
    return fail("DS_JIT_CPU=" + request + ": unknown CPU level; use one of " +
                llvm::join(jitTargetLevels(), ", "));
  if (!hostIsX86())
    return fail("DS_JIT_CPU=" + request + ": an x86-64 level, but this is " +
                llvm::sys::getProcessTriple() + "; use native");
  std::vector<std::string> missing = featuresHostLacks(request);
  if (!missing.empty())
    return fail("DS_JIT_CPU=" + request + ": this CPU lacks " +
                llvm::join(missing, ", ") +
                ", so code for it would not run here; levels this CPU runs: " +
                llvm::join(runnableJitTargetLevels(), ", "));
  target.level = request.str();
  target.cpu = request.str();
  return target;
}

std::vector<std::string>
mlir::ds::exec::featuresHostLacks(llvm::StringRef request) {
  auto it = llvm::find_if(
      levels(), [&](const Level &level) { return level.name == request; });
  std::vector<std::string> missing;
  if (it == levels().end())
    return missing;
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  for (auto level = levels().begin(); level != std::next(it); ++level)
    for (llvm::StringLiteral f : level->adds)
      if (!host.lookup(f))
        missing.push_back(f.str());
  return missing;
}

llvm::Expected<JitTarget>
mlir::ds::exec::compileTargetFor(llvm::StringRef request) {
  if (request.empty() || request == "native")
    return resolveJitTarget(request);
  if (llvm::none_of(levels(),
                    [&](const Level &level) { return level.name == request; }))
    return fail("--cpu " + request + ": unknown CPU level; use one of " +
                llvm::join(jitTargetLevels(), ", "));
  JitTarget target;
  target.level = target.cpu = request.str();
  return target;
}

llvm::Expected<JitTarget> mlir::ds::exec::resolveJitTargetFromEnvironment() {
  const char *env = std::getenv("DS_JIT_CPU");
  auto target = resolveJitTarget(env ? env : "");
  if (target)
    target->fromEnvironment = env && *env;
  return target;
}
