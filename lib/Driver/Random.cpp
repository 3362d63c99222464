//===- Random.cpp - Portable counter-based random numbers
//------------------===//
#include "ds/Driver/Random.h"

#include <cmath>

using namespace ds::driver;

uint64_t ds::driver::mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t ds::driver::randomBits(uint64_t seed, uint64_t stream,
                                uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

double ds::driver::randomUniform(uint64_t seed, uint64_t stream,
                                 uint64_t index) {
  return static_cast<double>(randomBits(seed, stream, index) >> 11) * 0x1.0p-53;
}

double ds::driver::randomNormal(uint64_t seed, uint64_t stream,
                                uint64_t index) {
  // u1 in (0, 1] keeps log finite.
  double u1 = 1.0 - randomUniform(seed, stream, 2 * index);
  double u2 = randomUniform(seed, stream, 2 * index + 1);
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
