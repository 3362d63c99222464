// adam_bandwidth.cu - effective memory bandwidth of dsrt_cuda_adam_multi.
//
// usage: adam_bandwidth [PARAMS]  (default 2^28)
// For fp32 gradients (flat and as 100 tensors) and bf16 gradients with a bf16
// model copy, times 20 AdamW steps with CUDA events after a warm-up and
// prints one JSON line per case: effective GB/s (28 bytes moved per
// parameter in both cases) against the card's peak memory bandwidth
// (2 x memory clock x bus width, from cudaDeviceGetAttribute).
#include "dsrt/dsrt.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::fprintf(stderr, "adam_bandwidth: %s: %s\n", #x,                     \
                   cudaGetErrorString(e));                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  long long params = argc > 1 ? std::atoll(argv[1]) : (1LL << 28);
  int dev = 0, clockKHz = 0, busBits = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, dev));
  CHECK(cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  double peak = 2.0 * clockKHz * 1e3 * (busBits / 8) / 1e9;

  struct Case {
    int tensors, gradDtype, copy16;
  } cases[] = {{1, DSRT_F32, 0}, {100, DSRT_F32, 0}, {1, DSRT_BF16, 1}};
  for (const Case &c : cases) {
    std::vector<int64_t> counts(c.tensors, params / c.tensors);
    std::vector<float *> p(c.tensors), m(c.tensors), v(c.tensors);
    std::vector<const void *> g(c.tensors);
    std::vector<void *> p16(c.tensors);
    size_t gbytes = c.gradDtype == DSRT_F32 ? 4 : 2;
    for (int t = 0; t < c.tensors; ++t) {
      size_t n = (size_t)counts[t];
      CHECK(cudaMalloc(&p[t], n * 4));
      CHECK(cudaMalloc(&m[t], n * 4));
      CHECK(cudaMalloc(&v[t], n * 4));
      void *gp;
      CHECK(cudaMalloc(&gp, n * gbytes));
      g[t] = gp;
      CHECK(cudaMemset(p[t], 0, n * 4));
      CHECK(cudaMemset(m[t], 0, n * 4));
      CHECK(cudaMemset(v[t], 0, n * 4));
      CHECK(cudaMemset(gp, 0, n * gbytes));
      p16[t] = nullptr;
      if (c.copy16)
        CHECK(cudaMalloc(&p16[t], n * 2));
    }
    auto step = [&](int64_t s) {
      if (dsrt_cuda_adam_multi(
              c.tensors, p.data(), g.data(), c.gradDtype, m.data(), v.data(),
              counts.data(), s, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 1, 1.0f,
              c.copy16 ? p16.data() : nullptr, DSRT_BF16, nullptr) != DSRT_OK) {
        std::fprintf(stderr, "adam_bandwidth: %s\n", dsrt_last_error());
        std::exit(1);
      }
    };
    step(1);
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    const int reps = 20;
    CHECK(cudaEventRecord(a));
    for (int r = 0; r < reps; ++r)
      step(r + 2);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    double bytes = 28.0 * (double)params; // see the header
    double gbps = bytes * reps / (ms * 1e-3) / 1e9;
    std::printf("{\"bench\": \"gpu_adam\", \"metric\": \"effective_GBps\", "
                "\"ds\": %.1f, \"baseline\": %.1f, \"baseline_name\": \"peak "
                "memory bandwidth of %s\", \"ratio\": %.3f, \"params\": %lld, "
                "\"tensors\": %d, \"grad\": \"%s\", \"param16\": %s}\n",
                gbps, peak, prop.name, gbps / peak, params, c.tensors,
                c.gradDtype == DSRT_F32 ? "f32" : "bf16",
                c.copy16 ? "\"bf16\"" : "null");
    for (int t = 0; t < c.tensors; ++t) {
      cudaFree(p[t]);
      cudaFree(m[t]);
      cudaFree(v[t]);
      cudaFree(const_cast<void *>(g[t]));
      cudaFree(p16[t]);
    }
  }
  return 0;
}
