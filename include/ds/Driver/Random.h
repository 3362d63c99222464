//===- Random.h - Portable counter-based random numbers ----------*- C++
//-*-===//
//
// Parameter init and data shuffling must give the same numbers on every
// machine, compiler and rank: <random>'s distributions are
// implementation-defined, so ds uses its own counter-based generator
// (SplitMix64) and Box-Muller on doubles, keyed by (seed, stream, index).
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_RANDOM_H
#define DS_DRIVER_RANDOM_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ds::driver {

/// One SplitMix64 step: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The key of the stream (seed, stream): what every value of the stream
/// shares, computed once per tensor rather than once per element.
inline uint64_t streamKey(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed) ^ stream);
}

/// The index-th 64-bit value of the stream with `key`.
inline uint64_t randomBitsAt(uint64_t key, uint64_t index) {
  return mix64(key ^ index);
}

/// Uniform double in [0, 1) with 53 random bits.
inline double randomUniformAt(uint64_t key, uint64_t index) {
  return static_cast<double>(randomBitsAt(key, index) >> 11) * 0x1.0p-53;
}

/// Standard normal via Box-Muller over the uniform pair (2i, 2i+1).
double randomNormalAt(uint64_t key, uint64_t index);

/// out[i] = float(scale * randomNormalAt(key, first + i)) for i < count:
/// the same bits, about twice as fast (a vectorized cosine, whose result
/// is kept only where it rounds to the float libm's would).
void randomNormalsAt(uint64_t key, double scale, uint64_t first, int64_t count,
                     float *out);

namespace detail {
/// Values per call of cosBlock.
constexpr int64_t kCosBlock = 256;
/// c[i] = cos(x[i]) for x[i] in [0, 2 pi], to 2^-44 of |cos x[i]| plus
/// 2^-90: what randomNormalsAt's rounding check assumes.
void cosBlock(const double *__restrict x, double *__restrict c);
} // namespace detail

/// The same, keyed by (seed, stream).
inline uint64_t randomBits(uint64_t seed, uint64_t stream, uint64_t index) {
  return randomBitsAt(streamKey(seed, stream), index);
}
inline double randomUniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return randomUniformAt(streamKey(seed, stream), index);
}
inline double randomNormal(uint64_t seed, uint64_t stream, uint64_t index) {
  return randomNormalAt(streamKey(seed, stream), index);
}

/// FNV-1a of a name: the stream of a named parameter, so its values do not
/// depend on the order parameters are declared in.
uint64_t streamOf(llvm::StringRef name);

} // namespace ds::driver

#endif // DS_DRIVER_RANDOM_H
