//===- FuzzTargets.h - One entry point per input reader ---------*- C++ -*-===//
//
// Each function takes one input's bytes through a reader the way a tool
// does and returns 0; a malformed input must come back as an llvm::Error,
// never a crash, a leak, undefined behaviour or a huge allocation. The
// libFuzzer binaries (DS_FUZZ=ON) and ds-fuzz-replay (every build: the
// regression corpus in `make test`) call the same functions.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TEST_FUZZ_FUZZTARGETS_H
#define DS_TEST_FUZZ_FUZZTARGETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace ds::fuzz {

using Entry = int (*)(const uint8_t *data, size_t size);

int fuzzConfig(const uint8_t *data, size_t size);
int fuzzModelSpec(const uint8_t *data, size_t size);
int fuzzMlir(const uint8_t *data, size_t size);
int fuzzSafeTensors(const uint8_t *data, size_t size);
int fuzzCheckpoint(const uint8_t *data, size_t size);
int fuzzNpy(const uint8_t *data, size_t size);
int fuzzHostfile(const uint8_t *data, size_t size);
int fuzzTokens(const uint8_t *data, size_t size);
int fuzzPt2(const uint8_t *data, size_t size);

struct Target {
  const char *name;
  Entry entry;
};

/// Every target, by the name of its corpus folder.
llvm::ArrayRef<Target> targets();

/// A scratch directory private to this process, created once.
const std::string &scratchDir();
/// Writes `bytes` to `path` (replacing it); false if it cannot.
bool writeFile(const std::string &path, llvm::StringRef bytes);

} // namespace ds::fuzz

#endif // DS_TEST_FUZZ_FUZZTARGETS_H
