//===- GemmOracle.h - the row-major GEMM contract, element by element -----===//
//
// The independent oracle of every dsrt_*sgemm test (CPU and GPU): the ABI's
// storage rules read one element at a time, accumulated in double.
//
//===----------------------------------------------------------------------===//
#ifndef DS_UNITTESTS_GEMMORACLE_H
#define DS_UNITTESTS_GEMMORACLE_H

#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <random>
#include <vector>

namespace dstest {

inline std::vector<float> randomMatrix(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

// C = alpha * op(A) op(B) + beta * C with the same storage rules as the ABI.
inline void naiveGemm(bool tA, bool tB, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        double a = tA ? A[k * lda + i] : A[i * lda + k];
        double b = tB ? B[j * ldb + k] : B[k * ldb + j];
        acc += a * b;
      }
      double c = beta == 0.0f ? 0.0 : beta * double(C[i * ldc + j]);
      C[i * ldc + j] = float(alpha * acc + c);
    }
}

// Inputs in [-1, 1]: the f32 rounding error of a K-term sum grows at most
// ~K eps.
inline void expectNear(const std::vector<float> &got,
                       const std::vector<float> &want, int64_t K,
                       const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  float tol = 1e-5f * float(K + 1);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " at flat index " << i;
}

} // namespace dstest

#endif // DS_UNITTESTS_GEMMORACLE_H
