//===- GemmBf16Test.cpp - dsrt_gemm_bf16 against the double-precision oracle =//
//
// Registered twice (unittests/Runtime/CMakeLists.txt): as the CPU chooses
// (oneDNN where it has AVX512_BF16) and with DSRT_BF16_GEMM=f32. Operands
// are bf16 values, so the oracle sums their exact products in double; the
// f32 backend must also be bit for bit dsrt_sgemm on the widened operands.
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "GemmOracle.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dstest::expectNear;
using dstest::naiveGemm;
using dstest::randomMatrix;

uint16_t toBf16(float f) { // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

struct Operand {
  std::vector<uint16_t> bf16;
  std::vector<float> wide; // the same values in f32
};

Operand randomBf16(int64_t n, unsigned seed) {
  Operand o;
  for (float x : randomMatrix(n, seed)) {
    o.bf16.push_back(toBf16(x));
    o.wide.push_back(fromBf16(o.bf16.back()));
  }
  return o;
}

bool forcedF32() {
  const char *v = std::getenv("DSRT_BF16_GEMM");
  return v && std::string(v) == "f32";
}

struct Case {
  bool tA, tB;
  int64_t M, N, K, pad;
  float beta;
};

TEST(GemmBf16, BackendFollowsTheCpuOrTheVariable) {
  const char *why = nullptr;
  int backend = dsrt_bf16_gemm_backend(&why);
  ASSERT_NE(why, nullptr);
  if (forcedF32()) {
    EXPECT_EQ(backend, DSRT_BF16_GEMM_F32);
    EXPECT_STREQ(why, "DSRT_BF16_GEMM=f32");
    return;
  }
  __builtin_cpu_init();
  bool bf16 = __builtin_cpu_supports("avx512bf16");
  EXPECT_EQ(backend, bf16 ? DSRT_BF16_GEMM_ONEDNN : DSRT_BF16_GEMM_F32) << why;
}

TEST(GemmBf16, MatchesTheOracleForEveryLayout) {
  const Case cases[] = {
      {false, false, 64, 96, 128, 0, 0.0f}, {true, false, 33, 17, 65, 3, 0.0f},
      {false, true, 128, 256, 64, 0, 1.0f}, {true, true, 5, 7, 300, 1, 1.0f},
      {false, false, 1, 512, 256, 0, 0.0f}, {false, true, 256, 1, 512, 2, 1.0f},
      {true, false, 512, 512, 512, 0, 0.0f}};
  for (const Case &c : cases) {
    int64_t rowsA = c.tA ? c.K : c.M, colsA = c.tA ? c.M : c.K;
    int64_t rowsB = c.tB ? c.N : c.K, colsB = c.tB ? c.K : c.N;
    int64_t lda = colsA + c.pad, ldb = colsB + c.pad, ldc = c.N + c.pad;
    Operand A = randomBf16(rowsA * lda, 1), B = randomBf16(rowsB * ldb, 2);
    std::vector<float> C = randomMatrix(c.M * ldc, 3);
    std::vector<float> want = C, viaSgemm = C;
    naiveGemm(c.tA, c.tB, c.M, c.N, c.K, 1.0f, A.wide.data(), lda,
              B.wide.data(), ldb, c.beta, want.data(), ldc);
    std::string what = "tA=" + std::to_string(c.tA) +
                       " tB=" + std::to_string(c.tB) +
                       " M=" + std::to_string(c.M) + " N=" +
                       std::to_string(c.N) + " K=" + std::to_string(c.K);
    std::vector<float> got = C;
    ASSERT_EQ(dsrt_gemm_bf16(c.tA, c.tB, c.M, c.N, c.K, 1.0f, A.bf16.data(),
                             lda, B.bf16.data(), ldb, c.beta, got.data(), ldc),
              DSRT_OK)
        << dsrt_last_error();
    expectNear(got, want, c.K, what);
    // The same call again: the same bits (no run-to-run variation).
    std::vector<float> again = C;
    ASSERT_EQ(dsrt_gemm_bf16(c.tA, c.tB, c.M, c.N, c.K, 1.0f, A.bf16.data(),
                             lda, B.bf16.data(), ldb, c.beta, again.data(),
                             ldc),
              DSRT_OK);
    EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 4), 0)
        << what;
    if (forcedF32()) {
      // The widened product is sgemm's on dense widened copies.
      std::vector<float> Ad(rowsA * colsA), Bd(rowsB * colsB);
      for (int64_t r = 0; r < rowsA; ++r)
        for (int64_t k = 0; k < colsA; ++k)
          Ad[r * colsA + k] = A.wide[r * lda + k];
      for (int64_t r = 0; r < rowsB; ++r)
        for (int64_t k = 0; k < colsB; ++k)
          Bd[r * colsB + k] = B.wide[r * ldb + k];
      ASSERT_EQ(dsrt_sgemm(c.tA, c.tB, c.M, c.N, c.K, 1.0f, Ad.data(), colsA,
                           Bd.data(), colsB, c.beta, viaSgemm.data(), ldc),
                DSRT_OK);
      EXPECT_EQ(std::memcmp(got.data(), viaSgemm.data(), got.size() * 4), 0)
          << what;
    }
  }
}

TEST(GemmBf16, BatchedWithABroadcastOperand) {
  const int64_t batch = 3, M = 16, N = 40, K = 72;
  Operand A = randomBf16(batch * M * K, 4), B = randomBf16(K * N, 5);
  std::vector<float> C(batch * M * N, 7.0f), want(batch * M * N);
  ASSERT_EQ(dsrt_gemm_bf16_strided_batched(0, 0, M, N, K, 1.0f, A.bf16.data(),
                                           K, M * K, B.bf16.data(), N, 0, 0.0f,
                                           C.data(), N, M * N, batch),
            DSRT_OK)
      << dsrt_last_error();
  for (int64_t b = 0; b < batch; ++b)
    naiveGemm(false, false, M, N, K, 1.0f, A.wide.data() + b * M * K, K,
              B.wide.data(), N, 0.0f, want.data() + b * M * N, N);
  expectNear(C, want, K, "batched");
}

TEST(GemmBf16, EmptyAndBadArguments) {
  std::vector<uint16_t> A(16, toBf16(1.0f)), B(16, toBf16(2.0f));
  std::vector<float> C(16, 5.0f);
  // K == 0: C = beta * C.
  ASSERT_EQ(dsrt_gemm_bf16(0, 0, 4, 4, 0, 1.0f, A.data(), 1, B.data(), 4, 0.0f,
                           C.data(), 4),
            DSRT_OK);
  EXPECT_EQ(C[0], 0.0f);
  EXPECT_EQ(dsrt_gemm_bf16(0, 0, 4, 4, 4, 1.0f, A.data(), 2, B.data(), 4, 0.0f,
                           C.data(), 4),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("dsrt_gemm_bf16"),
            std::string::npos)
      << dsrt_last_error();
}

} // namespace
