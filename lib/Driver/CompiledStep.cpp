//===- CompiledStep.cpp - A compiled training step and its manifest -------===//
#include "ds/Driver/CompiledStep.h"

using namespace ::ds::driver;

int64_t ds::driver::numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<size_t> StepManifest::find(ArgSpec::Kind kind,
                                         llvm::StringRef name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == kind && args[i].name == name)
      return i;
  return std::nullopt;
}

std::optional<size_t> StepManifest::masterOf(const ArgSpec &param) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == ArgSpec::State && args[i].stateKind == "master" &&
        args[i].owner == param.name)
      return i;
  return std::nullopt;
}
