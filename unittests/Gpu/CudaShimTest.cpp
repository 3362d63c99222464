//===- CudaShimTest.cpp - cuBLAS and mgpu shims against fake libraries ----===//
//
// The fake driver's device memory is host memory and its cuBLAS computes on
// the host, so dsrt_cuda_sgemm's row-major to column-major mapping is
// checked against a double-precision loop over the row-major storage, and
// the call log shows every GEMM, copy and launch on the one ds stream.
//
//===----------------------------------------------------------------------===//

#include "dsrt/dsrt.h"

#include "GemmOracle.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
void *mgpuModuleLoad(void *data, size_t bytes);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra,
                      size_t nparams);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t hostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
}

namespace {

class CudaShim : public ::testing::Test {
protected:
  void SetUp() override {
    log = ::testing::TempDir() + "ds-fake-cuda-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name() +
          ".log";
    std::remove(log.c_str());
    setenv("DS_FAKE_CUDA_LOG", log.c_str(), 1);
    unsetenv("DS_FAKE_CUBLAS_STATUS");
    unsetenv("DS_FAKE_CUDA_FAIL");
  }
  void TearDown() override { unsetenv("DS_FAKE_CUDA_LOG"); }
  std::vector<std::string> calls() const {
    std::ifstream in(log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }
  std::string log;
};

using dstest::naiveGemm;
using dstest::randomMatrix;

// A host vector copied to fresh "device" memory and back.
struct DeviceBuffer {
  explicit DeviceBuffer(const std::vector<float> &host) : count(host.size()) {
    EXPECT_EQ(dsrt_cuda_malloc(&ptr, count * sizeof(float)), DSRT_OK)
        << dsrt_last_error();
    EXPECT_EQ(dsrt_cuda_memcpy(ptr, host.data(), count * sizeof(float)),
              DSRT_OK)
        << dsrt_last_error();
  }
  ~DeviceBuffer() { EXPECT_EQ(dsrt_cuda_free(ptr), DSRT_OK); }
  std::vector<float> read() const {
    std::vector<float> host(count);
    EXPECT_EQ(dsrt_cuda_memcpy(host.data(), ptr, count * sizeof(float)),
              DSRT_OK);
    return host;
  }
  float *data() const { return static_cast<float *>(ptr); }
  void *ptr = nullptr;
  size_t count;
};

TEST_F(CudaShim, SgemmEveryTransposeMatchesTheRowMajorOracle) {
  const int64_t M = 7, N = 5, K = 9, pad = 3;
  for (int tA = 0; tA < 2; ++tA)
    for (int tB = 0; tB < 2; ++tB) {
      int64_t lda = (tA ? M : K) + pad, ldb = (tB ? K : N) + pad, ldc = N + 1;
      auto a = randomMatrix((tA ? K : M) * lda, 1 + tA);
      auto b = randomMatrix((tB ? N : K) * ldb, 3 + tB);
      auto c = randomMatrix(M * ldc, 5);
      auto expected = c;
      naiveGemm(tA, tB, M, N, K, 0.75f, a.data(), lda, b.data(), ldb, -0.5f,
                expected.data(), ldc);
      DeviceBuffer da(a), db(b), dc(c);
      ASSERT_EQ(dsrt_cuda_sgemm(tA, tB, M, N, K, 0.75f, da.data(), lda,
                                db.data(), ldb, -0.5f, dc.data(), ldc),
                DSRT_OK)
          << dsrt_last_error();
      auto got = dc.read();
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], 1e-5f)
            << "tA=" << tA << " tB=" << tB << " element " << i;
    }
}

TEST_F(CudaShim, StridedBatchedBroadcastsAZeroStride) {
  const int64_t M = 4, N = 6, K = 3, batch = 3;
  auto a = randomMatrix(M * K, 11); // shared by every problem
  auto b = randomMatrix(batch * K * N, 12);
  std::vector<float> c(batch * M * N, 0.0f), expected = c;
  for (int64_t i = 0; i < batch; ++i)
    naiveGemm(false, true, M, N, K, 1.0f, a.data(), K, b.data() + i * K * N, K,
              0.0f, expected.data() + i * M * N, N);
  DeviceBuffer da(a), db(b), dc(c);
  ASSERT_EQ(dsrt_cuda_sgemm_strided_batched(0, 1, M, N, K, 1.0f, da.data(), K,
                                            0, db.data(), K, K * N, 0.0f,
                                            dc.data(), N, M * N, batch),
            DSRT_OK)
      << dsrt_last_error();
  auto got = dc.read();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-5f) << "element " << i;
}

TEST_F(CudaShim, GemmsCopiesAndLaunchesShareTheDsStream) {
  void *stream = nullptr;
  ASSERT_EQ(dsrt_cuda_stream(&stream), DSRT_OK) << dsrt_last_error();
  EXPECT_EQ(mgpuStreamCreate(), stream);
  DeviceBuffer a(std::vector<float>(4, 1.0f)), c(std::vector<float>(4, 0.0f));
  ASSERT_EQ(dsrt_cuda_sgemm(0, 0, 2, 2, 2, 1.0f, a.data(), 2, a.data(), 2, 0.0f,
                            c.data(), 2),
            DSRT_OK);
  EXPECT_EQ(c.read(), std::vector<float>(4, 2.0f));
  // A fatbin's magic number starts the image the lowering embeds.
  unsigned char image[16] = {0x50, 0xED, 0x55, 0xBA};
  void *module = mgpuModuleLoad(image, sizeof(image));
  ASSERT_NE(module, nullptr);
  void *kernel = mgpuModuleGetFunction(module, "kernel_0_kernel");
  mgpuLaunchKernel(kernel, 4, 1, 1, 256, 1, 1, 0, mgpuStreamCreate(), nullptr,
                   nullptr, 0);
  mgpuStreamDestroy(stream); // the shared stream outlives the lowering's use
  auto lines = calls();
  std::string all;
  for (const auto &l : lines)
    all += l + "\n";
  EXPECT_NE(all.find("cuModuleLoadData fatbin"), std::string::npos) << all;
  EXPECT_NE(all.find("cuLaunchKernel kernel_0_kernel grid=4x1x1 "
                     "block=256x1x1 smem=0 stream"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("cublasSgemm_v2_64 m=2 n=2 k=2 op=NN batch=1 stream=set"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("cuStreamDestroy"), std::string::npos) << all;
  // No stream but the first is ever made: everything is ordered on it.
  for (const auto &l : lines)
    if (l.rfind("cuMemcpyAsync", 0) == 0 || l.rfind("cuLaunchKernel", 0) == 0)
      EXPECT_NE(l.find(" stream0"), std::string::npos) << l;
}

TEST_F(CudaShim, MgpuMemoryRoundTrips) {
  void *stream = mgpuStreamCreate();
  float *d = static_cast<float *>(mgpuMemAlloc(8 * sizeof(float), stream, 0));
  ASSERT_NE(d, nullptr);
  mgpuMemset32(d, 0x3f800000u, 8, stream); // 1.0f
  std::vector<float> host(8, 0.0f);
  mgpuMemcpy(host.data(), d, 8 * sizeof(float), stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(host, std::vector<float>(8, 1.0f));
  mgpuMemFree(d, stream);
}

TEST_F(CudaShim, CublasFailureNamesTheStatus) {
  setenv("DS_FAKE_CUBLAS_STATUS", "13", 1);
  DeviceBuffer a(std::vector<float>(4, 1.0f));
  EXPECT_EQ(dsrt_cuda_sgemm(0, 0, 2, 2, 2, 1.0f, a.data(), 2, a.data(), 2, 0.0f,
                            a.data(), 2),
            DSRT_ERR_INTERNAL);
  EXPECT_NE(
      std::string(dsrt_last_error()).find("CUBLAS_STATUS_EXECUTION_FAILED"),
      std::string::npos)
      << dsrt_last_error();
}

TEST_F(CudaShim, BadLeadingDimensionIsRefusedBeforeCuBLAS) {
  float x = 0;
  EXPECT_EQ(dsrt_cuda_sgemm(0, 0, 2, 3, 4, 1.0f, &x, 3, &x, 3, 0.0f, &x, 3),
            DSRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dsrt_last_error()).find("lda=3 < 4"), std::string::npos)
      << dsrt_last_error();
  EXPECT_EQ(calls().size(), 0u);
}

TEST_F(CudaShim, DeviceOutOfMemoryNamesTheSize) {
  setenv("DS_FAKE_CUDA_FAIL", "cuMemAlloc_v2=2", 1);
  void *p = nullptr;
  EXPECT_EQ(dsrt_cuda_malloc(&p, 123456789), DSRT_ERR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(dsrt_last_error()).find("123456789 bytes"),
            std::string::npos)
      << dsrt_last_error();
  EXPECT_EQ(p, nullptr);
}

TEST_F(CudaShim, FailedLaunchEndsTheJobNamingTheCall) {
  setenv("DS_FAKE_CUDA_FAIL", "cuLaunchKernel=719", 1);
  unsigned char image[16] = {0x50, 0xED, 0x55, 0xBA};
  void *module = mgpuModuleLoad(image, sizeof(image));
  void *kernel = mgpuModuleGetFunction(module, "k");
  EXPECT_DEATH(mgpuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr,
                                nullptr, 0),
               "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED \\(719\\)");
}

} // namespace
