//===- FuzzMain.cpp - libFuzzer's entry for one target --------------------===//
//
// Built once per target with DS_FUZZ_ENTRY naming its function.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return ds::fuzz::DS_FUZZ_ENTRY(data, size);
}
