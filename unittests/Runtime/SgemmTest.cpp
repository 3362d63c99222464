//===- SgemmTest.cpp - dsrt_sgemm and the strided-batched form ------------===//
//
// Every result is compared with a naive triple loop in double precision over
// the same row-major storage, for each transpose combination, odd sizes,
// padded leading dimensions, alpha/beta and batch broadcasting.
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "GemmOracle.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using dstest::expectNear;
using dstest::naiveGemm;
using dstest::randomMatrix;

struct GemmCase {
  bool tA, tB;
  int64_t M, N, K;
  int64_t padA, padB, padC; // extra columns in the leading dimensions
  float alpha, beta;
};

std::string name(const GemmCase &c) {
  return "tA=" + std::to_string(c.tA) + " tB=" + std::to_string(c.tB) +
         " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " K=" + std::to_string(c.K) + " pads=" + std::to_string(c.padA) + "," +
         std::to_string(c.padB) + "," + std::to_string(c.padC) +
         " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta);
}

void runCase(const GemmCase &c) {
  int64_t rowsA = c.tA ? c.K : c.M, colsA = c.tA ? c.M : c.K;
  int64_t rowsB = c.tB ? c.N : c.K, colsB = c.tB ? c.K : c.N;
  int64_t lda = colsA + c.padA, ldb = colsB + c.padB, ldc = c.N + c.padC;
  std::vector<float> A = randomMatrix(rowsA * lda, 1);
  std::vector<float> B = randomMatrix(rowsB * ldb, 2);
  std::vector<float> C = randomMatrix(c.M * ldc, 3);
  std::vector<float> want = C;
  naiveGemm(c.tA, c.tB, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb,
            c.beta, want.data(), ldc);
  ASSERT_EQ(dsrt_sgemm(c.tA, c.tB, c.M, c.N, c.K, c.alpha, A.data(), lda,
                       B.data(), ldb, c.beta, C.data(), ldc),
            DSRT_OK)
      << dsrt_last_error();
  expectNear(C, want, c.K, name(c));
}

TEST(Sgemm, AllTransposesOddSizes) {
  for (bool tA : {false, true})
    for (bool tB : {false, true})
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                             {3, 5, 7},
                             {17, 1, 33},
                             {1, 19, 8},
                             {64, 48, 96},
                             {129, 65, 31}})
        runCase({tA, tB, M, N, K, 0, 0, 0, 1.0f, 0.0f});
}

TEST(Sgemm, PaddedLeadingDimensions) {
  for (bool tA : {false, true})
    for (bool tB : {false, true})
      runCase({tA, tB, 13, 11, 9, 3, 5, 7, 1.0f, 0.0f});
}

TEST(Sgemm, AlphaBetaAccumulate) {
  runCase({false, false, 10, 12, 14, 0, 0, 0, 0.5f, 1.0f});
  runCase({true, false, 10, 12, 14, 2, 0, 1, -2.0f, 0.25f});
  runCase({false, true, 7, 3, 5, 0, 0, 0, 1.0f, 1.0f});
}

TEST(Sgemm, BetaZeroIgnoresNaNInC) {
  const int64_t M = 4, N = 5, K = 3;
  std::vector<float> A = randomMatrix(M * K, 4), B = randomMatrix(K * N, 5);
  std::vector<float> C(M * N, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> want(M * N, 0.0f);
  naiveGemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
            want.data(), N);
  ASSERT_EQ(dsrt_sgemm(0, 0, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                       C.data(), N),
            DSRT_OK);
  expectNear(C, want, K, "beta=0 over NaN");
}

TEST(Sgemm, EmptySizes) {
  std::vector<float> C = {1, 2, 3, 4};
  // K == 0: C = beta * C.
  ASSERT_EQ(dsrt_sgemm(0, 0, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f,
                       C.data(), 2),
            DSRT_OK)
      << dsrt_last_error();
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  // M == 0 or N == 0: nothing is touched.
  EXPECT_EQ(
      dsrt_sgemm(0, 0, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2),
      DSRT_OK);
}

TEST(Sgemm, BadLeadingDimensionIsAnError) {
  std::vector<float> A(12), B(12), C(9);
  dsrt_error_clear();
  EXPECT_EQ(dsrt_sgemm(0, 0, 3, 3, 4, 1.0f, A.data(), 3, B.data(), 3, 0.0f,
                       C.data(), 3),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(dsrt_last_error(), "dsrt_sgemm: lda=3 < 4 (columns of A)");
  EXPECT_EQ(dsrt_sgemm(0, 0, -1, 3, 4, 1.0f, A.data(), 4, B.data(), 3, 0.0f,
                       C.data(), 3),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("negative size"),
            std::string::npos);
}

TEST(SgemmBatched, MatchesLoopOfGemms) {
  for (bool tA : {false, true})
    for (bool tB : {false, true}) {
      const int64_t batch = 3, M = 5, N = 7, K = 6;
      int64_t lda = tA ? M : K, ldb = tB ? K : N, ldc = N;
      int64_t sA = M * K, sB = K * N, sC = M * N;
      std::vector<float> A = randomMatrix(batch * sA, 6);
      std::vector<float> B = randomMatrix(batch * sB, 7);
      std::vector<float> C(batch * sC, 0.0f), want(batch * sC, 0.0f);
      for (int64_t b = 0; b < batch; ++b)
        naiveGemm(tA, tB, M, N, K, 1.0f, A.data() + b * sA, lda,
                  B.data() + b * sB, ldb, 0.0f, want.data() + b * sC, ldc);
      ASSERT_EQ(dsrt_sgemm_strided_batched(tA, tB, M, N, K, 1.0f, A.data(), lda,
                                           sA, B.data(), ldb, sB, 0.0f,
                                           C.data(), ldc, sC, batch),
                DSRT_OK)
          << dsrt_last_error();
      expectNear(C, want, K,
                 "batched tA=" + std::to_string(tA) +
                     " tB=" + std::to_string(tB));
    }
}

TEST(SgemmBatched, ZeroStrideBroadcastsAnOperand) {
  // One weight matrix B shared by every batch element (strideB = 0).
  const int64_t batch = 4, M = 3, N = 2, K = 5;
  std::vector<float> A = randomMatrix(batch * M * K, 8);
  std::vector<float> B = randomMatrix(K * N, 9);
  std::vector<float> C(batch * M * N), want(batch * M * N);
  for (int64_t b = 0; b < batch; ++b)
    naiveGemm(false, false, M, N, K, 1.0f, A.data() + b * M * K, K, B.data(), N,
              0.0f, want.data() + b * M * N, N);
  ASSERT_EQ(dsrt_sgemm_strided_batched(0, 0, M, N, K, 1.0f, A.data(), K, M * K,
                                       B.data(), N, 0, 0.0f, C.data(), N, M * N,
                                       batch),
            DSRT_OK)
      << dsrt_last_error();
  expectNear(C, want, K, "broadcast B");
}

// Runs `call` on a copy of C0 at 1 and at 2 threads, expects the same bits,
// and returns the 2-thread result.
template <class Call>
std::vector<float> atOneAndTwoThreads(const std::vector<float> &C0, Call call,
                                      const std::string &what) {
  std::vector<std::vector<float>> out;
  for (int threads : {1, 2}) {
    dsrt_threads_set(threads);
    std::vector<float> C = C0;
    EXPECT_EQ(call(C.data()), DSRT_OK) << dsrt_last_error();
    EXPECT_EQ(dsrt_threads_get(), threads);
    out.push_back(C);
  }
  EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(),
                        out[0].size() * sizeof(float)),
            0)
      << what;
  return out[1];
}

// With 2 threads a large product runs as blocks of rows or columns of C
// across the pool, one single-threaded OpenBLAS call each; with 1 thread as
// one call. Same bits, for each transpose, odd sizes and either cut.
// Only where OpenBLAS's own threading keeps the bits (its AVX-512 cores):
// Haswell's and Zen's kernels sum a product cut in blocks, or threaded by
// OpenBLAS, in another order than the whole product on one thread.
TEST(ThreadsBitwise, SgemmBlocks) {
  int saved = dsrt_threads_get();
  {
    const int64_t M = 1000, N = 300, K = 257;
    std::vector<float> A = randomMatrix(M * K, 31), B = randomMatrix(K * N, 32);
    std::vector<std::vector<float>> out;
    for (int threads : {1, 2}) {
      dsrt_threads_set(threads);
      out.emplace_back(M * N);
      ASSERT_EQ(dsrt_sgemm(0, 0, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                           out.back().data(), N),
                DSRT_OK);
    }
    dsrt_threads_set(saved);
    dsrt_blas_info info;
    ASSERT_EQ(dsrt_blas_info_get(&info), DSRT_OK);
    if (out[0] != out[1])
      GTEST_SKIP() << "OpenBLAS's threaded sgemm on core " << info.core
                   << " does not give the one-thread bits";
  }
  setenv("DSRT_SGEMM_THREADS", "blocks", 1);
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape s : {Shape{1000, 300, 257}, Shape{130, 2000, 64},
                  Shape{256, 512, 1024}, Shape{4096, 256, 512},
                  Shape{77, 129, 3000}})
    for (bool tA : {false, true})
      for (bool tB : {false, true}) {
        int64_t lda = tA ? s.M : s.K, ldb = tB ? s.K : s.N;
        std::vector<float> A = randomMatrix(s.M * s.K, 21);
        std::vector<float> B = randomMatrix(s.K * s.N, 22);
        std::vector<float> C0 = randomMatrix(s.M * s.N, 23);
        std::vector<float> two = atOneAndTwoThreads(
            C0,
            [&](float *C) {
              return dsrt_sgemm(tA, tB, s.M, s.N, s.K, 1.0f, A.data(), lda,
                                B.data(), ldb, 1.0f, C, s.N);
            },
            std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                std::to_string(s.K) + " tA=" + std::to_string(tA) +
                " tB=" + std::to_string(tB));
        if (s.M * s.N * s.K < (int64_t(1) << 26)) {
          std::vector<float> want = C0;
          naiveGemm(tA, tB, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb,
                    1.0f, want.data(), s.N);
          expectNear(two, want, s.K, "blocks across threads");
        }
      }
  unsetenv("DSRT_SGEMM_THREADS");
  dsrt_threads_set(saved);
}

// With 2 threads the batch runs across the pool, one product per thread on
// one BLAS thread; with 1 thread each product on OpenBLAS as one call. The
// products are the same bits either way (OpenBLAS never splits K), for
// products below and above OpenBLAS's own threading threshold, an odd
// batch, and accumulation into C, on every core (each product is one
// single-threaded call either way).
TEST(SgemmBatched, ThreadsGiveTheSameBits) {
  int saved = dsrt_threads_get();
  struct Shape {
    int64_t batch, M, N, K;
    bool tA, tB;
    float beta;
  };
  for (Shape s : {Shape{16, 128, 128, 64, false, true, 0.0f},
                  Shape{7, 64, 32, 64, true, false, 1.0f},
                  Shape{5, 200, 192, 256, true, true, 1.0f}}) {
    int64_t lda = s.tA ? s.M : s.K, ldb = s.tB ? s.K : s.N;
    int64_t sA = s.M * s.K, sB = s.K * s.N, sC = s.M * s.N;
    std::vector<float> A = randomMatrix(s.batch * sA, 11);
    std::vector<float> B = randomMatrix(s.batch * sB, 12);
    std::vector<float> C0 = randomMatrix(s.batch * sC, 13);
    std::vector<float> two = atOneAndTwoThreads(
        C0,
        [&](float *C) {
          return dsrt_sgemm_strided_batched(s.tA, s.tB, s.M, s.N, s.K, 0.5f,
                                            A.data(), lda, sA, B.data(), ldb,
                                            sB, s.beta, C, s.N, sC, s.batch);
        },
        "batch " + std::to_string(s.batch));
    std::vector<float> want = C0;
    for (int64_t b = 0; b < s.batch; ++b)
      naiveGemm(s.tA, s.tB, s.M, s.N, s.K, 0.5f, A.data() + b * sA, lda,
                B.data() + b * sB, ldb, s.beta, want.data() + b * sC, s.N);
    expectNear(two, want, s.K, "batched across threads");
  }
  dsrt_threads_set(saved);
}

TEST(SgemmBatched, OverlappingOutputIsAnError) {
  std::vector<float> A(8), B(8), C(8);
  EXPECT_EQ(dsrt_sgemm_strided_batched(0, 0, 2, 2, 2, 1.0f, A.data(), 2, 4,
                                       B.data(), 2, 4, 0.0f, C.data(), 2, 0, 2),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("overlap"), std::string::npos);
}

TEST(Runtime, VersionAndSymbolTable) {
  EXPECT_EQ(dsrt_abi_version(), DSRT_ABI_VERSION);
  EXPECT_NE(std::string(dsrt_version_string()).find("blas: openblas"),
            std::string::npos);
  const dsrt_symbol *table = nullptr;
  int64_t count = 0;
  ASSERT_EQ(dsrt_symbol_table(&table, &count), DSRT_OK);
  bool found = false;
  for (int64_t i = 0; i < count; ++i)
    if (std::strcmp(table[i].name, "dsrt_sgemm") == 0) {
      found = true;
      EXPECT_EQ(table[i].address, reinterpret_cast<void *>(&dsrt_sgemm));
    }
  EXPECT_TRUE(found);
  EXPECT_STREQ(dsrt_status_string(DSRT_ERR_OUT_OF_MEMORY),
               "DSRT_ERR_OUT_OF_MEMORY");
}

TEST(Runtime, Threads) {
  int before = dsrt_threads_get();
  EXPECT_GE(before, 1);
  EXPECT_EQ(dsrt_threads_set(1), DSRT_OK);
  EXPECT_EQ(dsrt_threads_get(), 1);
  EXPECT_EQ(dsrt_threads_set(before), DSRT_OK);
}

} // namespace
