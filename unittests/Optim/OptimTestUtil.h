//===- OptimTestUtil.h - inputs and bit comparisons for the optimizer tests
//===//
#ifndef DS_UNITTESTS_OPTIM_OPTIMTESTUTIL_H
#define DS_UNITTESTS_OPTIM_OPTIMTESTUTIL_H

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace ds::optimtest {

inline std::vector<float> uniform(int64_t n, float lo, float hi,
                                  unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

} // namespace ds::optimtest

#endif // DS_UNITTESTS_OPTIM_OPTIMTESTUTIL_H
