//===- Random.cpp - Portable counter-based random numbers
//------------------===//
#include "ds/Driver/Random.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace ds::driver;

namespace {
/// Box-Muller's radius and angle for element `index`: one definition, so
/// randomNormalsAt's fast path and randomNormalAt round them alike.
double radiusAt(uint64_t key, uint64_t index) {
  // u1 in (0, 1] keeps log finite.
  double u1 = 1.0 - randomUniformAt(key, 2 * index);
  return std::sqrt(-2.0 * std::log(u1));
}
double angleAt(uint64_t key, uint64_t index) {
  return 2.0 * M_PI * randomUniformAt(key, 2 * index + 1);
}
} // namespace

double ds::driver::randomNormalAt(uint64_t key, uint64_t index) {
  return radiusAt(key, index) * std::cos(angleAt(key, index));
}

// Cody-Waite reduction by pi/2 = kPio2Hi + kPio2Lo (the high part has 50
// significant bits, so k * kPio2Hi is exact for k <= 4 and x - k * kPio2Hi
// is exact by Sterbenz), then Taylor series of sin and cos on |r| <= pi/4,
// truncated below 2^-45 relative. Branch-free, so it vectorizes; cloned
// for AVX2.
__attribute__((target_clones("avx2", "default"))) void
ds::driver::detail::cosBlock(const double *__restrict x, double *__restrict c) {
  constexpr double kPio2Hi = 0x1.921fb54442d18p+0;
  constexpr double kPio2Lo = 0x1.1a62633145c07p-54;
  constexpr double kRound = 0x1.8p52; // adding it rounds to an integer
  for (int64_t i = 0; i < kCosBlock; ++i) {
    double kd = (x[i] * (2.0 / M_PI) + kRound) - kRound;
    double r = (x[i] - kd * kPio2Hi) - kd * kPio2Lo;
    double z = r * r;
    double sinR =
        r + r * z *
                (-1.0 / 6 +
                 z * (1.0 / 120 + z * (-1.0 / 5040 +
                                       z * (1.0 / 362880 +
                                            z * (-1.0 / 39916800 +
                                                 z * (1.0 / 6227020800.0))))));
    double cosR =
        1.0 +
        z * (-0.5 + z * (1.0 / 24 +
                         z * (-1.0 / 720 +
                              z * (1.0 / 40320 +
                                   z * (-1.0 / 3628800 +
                                        z * (1.0 / 479001600 +
                                             z * (-1.0 / 87178291200.0)))))));
    // cos(r + k pi/2): cos r, -sin r, -cos r, sin r; selected by bits, as
    // a blend of the two would round.
    uint64_t k = uint64_t(uint32_t(int32_t(kd)));
    uint64_t odd = 0 - (k & 1), negate = ((k + 1) & 2) << 62;
    uint64_t sinBits, cosBits;
    std::memcpy(&sinBits, &sinR, sizeof sinBits);
    std::memcpy(&cosBits, &cosR, sizeof cosBits);
    uint64_t bits = ((sinBits & odd) | (cosBits & ~odd)) ^ negate;
    std::memcpy(&c[i], &bits, sizeof bits);
  }
}

void ds::driver::randomNormalsAt(uint64_t key, double scale, uint64_t first,
                                 int64_t count, float *out) {
  using detail::kCosBlock;
  double x[kCosBlock], c[kCosBlock];
  auto bitsOf = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  for (int64_t b = 0; b < count; b += kCosBlock) {
    int64_t n = std::min(kCosBlock, count - b);
    for (int64_t i = 0; i < n; ++i)
      x[i] = angleAt(key, first + uint64_t(b + i));
    std::fill(x + n, x + kCosBlock, 0.0);
    detail::cosBlock(x, c);
    for (int64_t i = 0; i < n; ++i) {
      double s = radiusAt(key, first + uint64_t(b + i));
      double y = s * c[i];
      // libm's cosine is within 1 ulp of cos x, cosBlock within
      // 2^-44 |cos x| + 2^-90 (its test), so randomNormalAt's product is
      // within `margin` of y; where all of that interval rounds to one
      // float, that float is its, bit for bit. Else (about 1 in 10^4, and
      // every zero, whose sign could differ) it is computed as it does.
      double margin = std::fabs(y) * 0x1.0p-38 + s * 0x1.0p-80;
      float f = static_cast<float>(scale * y);
      if (y == 0.0 || bitsOf(static_cast<float>(scale * (y - margin))) !=
                          bitsOf(static_cast<float>(scale * (y + margin))))
        f = static_cast<float>(scale *
                               randomNormalAt(key, first + uint64_t(b + i)));
      out[b + i] = f;
    }
  }
}

uint64_t ds::driver::streamOf(llvm::StringRef name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
