//===- SafeTensorsTarget.cpp - safetensors header and data ----------------===//
#include "FuzzTargets.h"

#include "ds/Driver/SafeTensors.h"

int ds::fuzz::fuzzSafeTensors(const uint8_t *data, size_t size) {
  // --init-from reads a file by path, as here.
  std::string path = scratchDir() + "/in.safetensors";
  if (!writeFile(path, {reinterpret_cast<const char *>(data), size}))
    return 0;
  auto file = ::ds::driver::SafeTensorsFile::open(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  for (const auto &info : file->tensors()) {
    (void)file->raw(info);
    auto values = file->readF32(info.name);
    if (!values)
      llvm::consumeError(values.takeError());
  }
  return 0;
}
