//===- CudaAdamTest.cpp - dsrt_cuda_adam_multi vs the CPU kernel ----------===//
//
// On a GPU: lists that fill the launch struct several times over (more than
// 24 tensors, a tensor longer than 320 chunks of 64K, empty tensors) for each
// gradient dtype, with and without the 16-bit copy; the result must be the
// bits of dsrt_adam_multi on the CPU (both skip FMA contraction). Without a
// GPU (or a CUDA build) the entry point must say so, and the test skips.
//
//===----------------------------------------------------------------------===//

#include "OptimTestUtil.h"

#include "dsrt/dsrt.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

#ifdef DS_TEST_CUDA
#include <cuda_runtime.h>
#endif

using namespace ds::optimtest;

namespace {

// "" when a GPU is usable, else why not.
std::string gpuUnavailable() {
#ifdef DS_TEST_CUDA
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  return n > 0 ? "" : "no CUDA device";
#else
  return "libdsrt built without CUDA (no nvcc at configure time)";
#endif
}

TEST(CudaAdam, UnsupportedWithoutGpuSaysWhy) {
  std::string why = gpuUnavailable();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable here";
  float *p = nullptr;
  const void *g = nullptr;
  int64_t count = 0;
  EXPECT_EQ(dsrt_cuda_adam_multi(1, &p, &g, DSRT_F32, &p, &p, &count, 1, 1e-3f,
                                 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1, 1.0f, nullptr,
                                 0, nullptr),
            DSRT_ERR_UNSUPPORTED);
  std::string msg = dsrt_last_error();
  EXPECT_TRUE(msg.find("no usable GPU") != std::string::npos ||
              msg.find("without CUDA") != std::string::npos)
      << msg;
}

#ifdef DS_TEST_CUDA
struct DeviceBuffer {
  void *ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&ptr, bytes ? bytes : 1), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
};
#endif

TEST(CudaAdam, MatchesCpuKernelBitwise) {
  std::string why = gpuUnavailable();
  if (!why.empty())
    GTEST_SKIP() << "no GPU: " << why;
#ifdef DS_TEST_CUDA
  std::vector<int64_t> counts = {3, 0, 65536 * 321 + 5, 1000, 65536, 65537};
  for (int t = 0; t < 40; ++t)
    counts.push_back(1 + t * 977);
  int64_t nt = (int64_t)counts.size();
  for (int gdt : {(int)DSRT_F32, (int)DSRT_F16, (int)DSRT_BF16})
    for (int p16dt : {-1, (int)DSRT_F16, (int)DSRT_BF16}) {
      size_t gsize = gdt == DSRT_F32 ? 4 : 2;
      std::vector<std::vector<float>> p(nt), m(nt), v(nt);
      std::vector<std::vector<uint16_t>> g16(nt), p16(nt), dp16(nt);
      std::vector<std::vector<float>> g32(nt);
      std::vector<DeviceBuffer *> bufs;
      std::vector<float *> hp, hm, hv, dp, dm, dv;
      std::vector<const void *> hg, dg;
      std::vector<void *> hp16, dp16p;
      for (int64_t t = 0; t < nt; ++t) {
        int64_t n = counts[t];
        p[t] = uniform(n, -1, 1, (unsigned)t);
        m[t] = uniform(n, -0.1f, 0.1f, 100 + (unsigned)t);
        v[t] = uniform(n, 0, 0.01f, 200 + (unsigned)t);
        g32[t] = uniform(n, -1, 1, 300 + (unsigned)t);
        g16[t].resize(n);
        for (int64_t i = 0; i < n; ++i) // any 16-bit pattern of a finite value
          g16[t][i] = (uint16_t)(bits(g32[t][i]) >> 16);
        p16[t].resize(n);
        dp16[t].resize(n);
        hp.push_back(p[t].data());
        hm.push_back(m[t].data());
        hv.push_back(v[t].data());
        hg.push_back(gdt == DSRT_F32 ? (const void *)g32[t].data()
                                     : (const void *)g16[t].data());
        hp16.push_back(p16[t].data());
        auto dev = [&](const void *host, size_t bytes) {
          bufs.push_back(new DeviceBuffer(bytes));
          cudaMemcpy(bufs.back()->ptr, host, bytes, cudaMemcpyHostToDevice);
          return bufs.back()->ptr;
        };
        dp.push_back((float *)dev(p[t].data(), n * 4));
        dm.push_back((float *)dev(m[t].data(), n * 4));
        dv.push_back((float *)dev(v[t].data(), n * 4));
        dg.push_back(dev(hg.back(), n * gsize));
        dp16p.push_back(dev(p16[t].data(), n * 2));
      }
      for (int64_t step = 1; step <= 2; ++step) {
        ASSERT_EQ(dsrt_cuda_adam_multi(nt, dp.data(), dg.data(), gdt, dm.data(),
                                       dv.data(), counts.data(), step, 1e-3f,
                                       0.9f, 0.999f, 1e-8f, 0.01f, step == 1, 1,
                                       0.5f, p16dt < 0 ? nullptr : dp16p.data(),
                                       p16dt, nullptr),
                  DSRT_OK)
            << dsrt_last_error();
        ASSERT_EQ(dsrt_adam_multi(nt, hp.data(), hg.data(), gdt, hm.data(),
                                  hv.data(), counts.data(), step, 1e-3f, 0.9f,
                                  0.999f, 1e-8f, 0.01f, step == 1, 1, 0.5f,
                                  p16dt < 0 ? nullptr : hp16.data(), p16dt),
                  DSRT_OK);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      for (int64_t t = 0; t < nt; ++t) {
        int64_t n = counts[t];
        std::vector<float> got(n);
        std::string what = "grad dtype " + std::to_string(gdt) + " p16 " +
                           std::to_string(p16dt) + " tensor " +
                           std::to_string(t);
        cudaMemcpy(got.data(), dp[t], n * 4, cudaMemcpyDeviceToHost);
        EXPECT_TRUE(got == p[t]) << what << " param";
        cudaMemcpy(got.data(), dm[t], n * 4, cudaMemcpyDeviceToHost);
        EXPECT_TRUE(got == m[t]) << what << " exp_avg";
        cudaMemcpy(got.data(), dv[t], n * 4, cudaMemcpyDeviceToHost);
        EXPECT_TRUE(got == v[t]) << what << " exp_avg_sq";
        if (p16dt >= 0) {
          cudaMemcpy(dp16[t].data(), dp16p[t], n * 2, cudaMemcpyDeviceToHost);
          EXPECT_TRUE(dp16[t] == p16[t]) << what << " param16";
        }
      }
      for (DeviceBuffer *b : bufs)
        delete b;
    }
#endif
}

} // namespace
