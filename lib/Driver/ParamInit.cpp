//===- ParamInit.cpp - Deterministic parameter initialization
//--------------===//
#include "ds/Driver/ParamInit.h"
#include "ds/Driver/Random.h"

using namespace ds::driver;

void ds::driver::initParameter(llvm::StringRef name, InitKind kind,
                               double scale, uint64_t seed, int64_t first,
                               int64_t count, float *out) {
  uint64_t key = streamKey(seed, streamOf(name));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t index = static_cast<uint64_t>(first + i);
    switch (kind) {
    case InitKind::Zeros:
      out[i] = 0.0f;
      break;
    case InitKind::Ones:
      out[i] = 1.0f;
      break;
    case InitKind::Normal:
      out[i] = static_cast<float>(scale * randomNormalAt(key, index));
      break;
    case InitKind::Uniform:
      out[i] =
          static_cast<float>(scale * (2.0 * randomUniformAt(key, index) - 1.0));
      break;
    }
  }
}
