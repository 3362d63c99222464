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
uint64_t mix64(uint64_t x);

/// The index-th 64-bit value of the stream (seed, stream).
uint64_t randomBits(uint64_t seed, uint64_t stream, uint64_t index);

/// Uniform double in [0, 1) with 53 random bits.
double randomUniform(uint64_t seed, uint64_t stream, uint64_t index);

/// Standard normal via Box-Muller over the uniform pair (2i, 2i+1).
double randomNormal(uint64_t seed, uint64_t stream, uint64_t index);

/// FNV-1a of a name: the stream of a named parameter, so its values do not
/// depend on the order parameters are declared in.
uint64_t streamOf(llvm::StringRef name);

} // namespace ds::driver

#endif // DS_DRIVER_RANDOM_H
