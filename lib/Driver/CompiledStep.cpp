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

llvm::Error
ds::driver::setArgStacks(StepManifest &manifest,
                         const mlir::ds::exec::FunctionSignature &signature) {
  auto layout = mlir::ds::exec::callerLayout(signature.inputs, signature.name,
                                             "argument");
  if (!layout)
    return layout.takeError();
  if (layout->arity != int64_t(manifest.args.size()))
    return llvm::createStringError(
        "@%s takes %lld input(s) but the step's manifest has %zu arguments",
        signature.name.c_str(), (long long)layout->arity, manifest.args.size());
  manifest.argStacks.clear();
  for (auto [v, info] : llvm::enumerate(signature.inputs)) {
    if (info.stack.empty())
      continue;
    mlir::ds::exec::ValueInfo slice = info.callerValue();
    std::vector<size_t> group;
    for (int64_t p : info.stack) {
      const ArgSpec &arg = manifest.args[p];
      if (arg.dtype != slice.dtype ||
          llvm::ArrayRef<int64_t>(arg.shape) != llvm::ArrayRef(slice.shape))
        return llvm::createStringError(
            "@%s: argument %zu stacks manifest argument %lld \"%s\", which "
            "is %s, but its slices are %s",
            signature.name.c_str(), v, (long long)p, arg.name.c_str(),
            mlir::ds::exec::typeString(arg.dtype, arg.shape).c_str(),
            mlir::ds::exec::typeString(slice.dtype, slice.shape).c_str());
      group.push_back(size_t(p));
    }
    manifest.argStacks.push_back(std::move(group));
  }
  return llvm::Error::success();
}
