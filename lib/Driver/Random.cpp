//===- Random.cpp - Portable counter-based random numbers
//------------------===//
#include "ds/Driver/Random.h"

#include <cmath>

using namespace ds::driver;

double ds::driver::randomNormalAt(uint64_t key, uint64_t index) {
  // u1 in (0, 1] keeps log finite.
  double u1 = 1.0 - randomUniformAt(key, 2 * index);
  double u2 = randomUniformAt(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t ds::driver::streamOf(llvm::StringRef name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
