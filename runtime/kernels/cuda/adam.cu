/*===- adam.cu - FusedAdam/AdamW over a list of tensors on a GPU ----------===*
 *
 * Multi-tensor apply: the host walks the tensor list in chunks of kChunk
 * elements and packs up to kMaxTensors tensor addresses and kMaxBlocks
 * (tensor, chunk) pairs into a struct passed to the kernel by value (kernel
 * arguments live in constant memory: no copy, no allocation per step). One
 * thread block updates one chunk; a launch goes out whenever the struct is
 * full, a tensor cut by it is carried into the next launch.
 *
 * The per-element math and the per-call constants are those of the CPU
 * kernels (kernels/cpu/optim.h), built with --fmad=false: the same bits.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"
extern "C" {
#include "core/error.h"
}

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

namespace {

constexpr int kDepth = 5; // param, grad, exp_avg, exp_avg_sq, param16
constexpr int kMaxTensors = 24;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;

// Under the 4 KiB kernel-argument limit of every CUDA version.
struct TensorListMeta {
  void *addrs[kDepth][kMaxTensors];
  int64_t sizes[kMaxTensors];
  unsigned char blockToTensor[kMaxBlocks];
  int blockToChunk[kMaxBlocks];
};
static_assert(sizeof(TensorListMeta) + 64 <= 4096, "kernel arguments");

struct AdamConsts {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, l2, decay, bc2Sqrt,
      negStep, gradScale;
};

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

struct NoCopy {};
__device__ __forceinline__ void store16(NoCopy *, int64_t, float) {}
__device__ __forceinline__ void store16(__half *p, int64_t i, float x) {
  p[i] = __float2half_rn(x);
}
__device__ __forceinline__ void store16(__nv_bfloat16 *p, int64_t i, float x) {
  p[i] = __float2bfloat16_rn(x);
}

// optim_adam_loop's order of operations (PyTorch's).
template <typename G, typename P16>
__device__ __forceinline__ void adamElement(const AdamConsts &c, float *p,
                                            const G *g, float *m, float *v,
                                            P16 *p16, int64_t i) {
  float pi = p[i];
  float gi = toFloat(g[i]) * c.gradScale;
  gi = c.l2 != 0.0f ? gi + c.l2 * pi : gi;
  pi = pi * c.decay;
  float mi = m[i] * c.beta1 + c.oneMinusBeta1 * gi;
  float vi = v[i] * c.beta2 + c.oneMinusBeta2 * gi * gi;
  float denom = sqrtf(vi) / c.bc2Sqrt + c.eps;
  m[i] = mi;
  v[i] = vi;
  float out = pi + c.negStep * mi / denom;
  p[i] = out;
  store16(p16, i, out);
}

template <typename G, typename P16>
__global__ void __launch_bounds__(kThreads)
    adamKernel(TensorListMeta meta, AdamConsts c) {
  int t = meta.blockToTensor[blockIdx.x];
  int64_t begin = (int64_t)meta.blockToChunk[blockIdx.x] * kChunk;
  int64_t end = min(meta.sizes[t], begin + kChunk);
  float *p = static_cast<float *>(meta.addrs[0][t]);
  const G *g = static_cast<const G *>(meta.addrs[1][t]);
  float *m = static_cast<float *>(meta.addrs[2][t]);
  float *v = static_cast<float *>(meta.addrs[3][t]);
  P16 *p16 = static_cast<P16 *>(meta.addrs[4][t]);
  // Four independent elements per thread per iteration keep enough loads in
  // flight to saturate HBM.
  constexpr int kIlp = 4;
  for (int64_t base = begin; base < end; base += (int64_t)kThreads * kIlp) {
#pragma unroll
    for (int k = 0; k < kIlp; ++k) {
      int64_t i = base + k * kThreads + threadIdx.x;
      if (i < end)
        adamElement(c, p, g, m, v, p16, i);
    }
  }
}

template <typename G, typename P16>
void launch(const TensorListMeta &meta, int blocks, const AdamConsts &c,
            cudaStream_t stream) {
  adamKernel<G, P16><<<blocks, kThreads, 0, stream>>>(meta, c);
}

template <typename G>
void launchFor16(int param16Dtype, const TensorListMeta &meta, int blocks,
                 const AdamConsts &c, cudaStream_t stream) {
  if (param16Dtype == DSRT_F16)
    launch<G, __half>(meta, blocks, c, stream);
  else if (param16Dtype == DSRT_BF16)
    launch<G, __nv_bfloat16>(meta, blocks, c, stream);
  else
    launch<G, NoCopy>(meta, blocks, c, stream);
}

void launchAny(int gradDtype, int param16Dtype, const TensorListMeta &meta,
               int blocks, const AdamConsts &c, cudaStream_t stream) {
  if (gradDtype == DSRT_F16)
    launchFor16<__half>(param16Dtype, meta, blocks, c, stream);
  else if (gradDtype == DSRT_BF16)
    launchFor16<__nv_bfloat16>(param16Dtype, meta, blocks, c, stream);
  else
    launchFor16<float>(param16Dtype, meta, blocks, c, stream);
}

int checkArgs(int64_t numTensors, float *const *params,
              const void *const *grads, int gradDtype, float *const *expAvgs,
              float *const *expAvgSqs, const int64_t *counts, int64_t step,
              void *const *params16, int param16Dtype) {
  const char *fn = "dsrt_cuda_adam_multi";
  if (numTensors < 0 || (numTensors > 0 && (!params || !grads || !expAvgs ||
                                            !expAvgSqs || !counts)))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: num_tensors=%lld with a NULL array (params, grads, "
                     "exp_avgs, exp_avg_sqs and counts are required)",
                     fn, (long long)numTensors);
  if (gradDtype != DSRT_F32 && gradDtype != DSRT_F16 && gradDtype != DSRT_BF16)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: grad_dtype %d is not DSRT_F32, DSRT_F16 or DSRT_BF16",
                     fn, gradDtype);
  if (params16 && param16Dtype != DSRT_F16 && param16Dtype != DSRT_BF16)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: param16_dtype %d is not DSRT_F16 or DSRT_BF16", fn,
                     param16Dtype);
  if (step < 1)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: step=%lld; steps count from 1", fn, (long long)step);
  for (int64_t t = 0; t < numTensors; ++t) {
    if (counts[t] < 0)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: tensor %lld has count %lld < 0", fn, (long long)t,
                       (long long)counts[t]);
    if (counts[t] > 0 && (!params[t] || !grads[t] || !expAvgs[t] ||
                          !expAvgSqs[t] || (params16 && !params16[t])))
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: a buffer of tensor %lld is NULL", fn, (long long)t);
  }
  return DSRT_OK;
}

} // namespace

extern "C" int dsrt_cuda_adam_multi(
    int64_t num_tensors, float *const *params, const void *const *grads,
    int grad_dtype, float *const *exp_avgs, float *const *exp_avg_sqs,
    const int64_t *counts, int64_t step, float lr, float beta1, float beta2,
    float eps, float weight_decay, int adamw_mode, int bias_correction,
    float grad_scale, void *const *params16, int param16_dtype, void *stream) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    if (err != cudaSuccess)
      cudaGetLastError(); // not sticky: clear it for later calls
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_cuda_adam_multi: no usable GPU (cudaGetDeviceCount: "
                     "%s)",
                     err != cudaSuccess ? cudaGetErrorString(err)
                                        : "0 devices");
  }
  int status = checkArgs(num_tensors, params, grads, grad_dtype, exp_avgs,
                         exp_avg_sqs, counts, step, params16, param16_dtype);
  if (status != DSRT_OK)
    return status;

  double bc1 = bias_correction ? 1.0 - pow(beta1, (double)step) : 1.0;
  double bc2 = bias_correction ? 1.0 - pow(beta2, (double)step) : 1.0;
  AdamConsts c = {beta1,
                  (float)(1.0 - beta1),
                  beta2,
                  (float)(1.0 - beta2),
                  eps,
                  adamw_mode ? 0.0f : weight_decay,
                  adamw_mode ? (float)(1.0 - (double)lr * weight_decay) : 1.0f,
                  (float)sqrt(bc2),
                  (float)(-(lr / bc1)),
                  grad_scale};
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int p16dt = params16 ? param16_dtype : -1;

  TensorListMeta meta;
  int locTensor = 0, locBlock = 0;
  int64_t last = num_tensors - 1;
  while (last >= 0 && counts[last] == 0)
    --last;
  for (int64_t t = 0; t <= last; ++t) {
    if (counts[t] == 0)
      continue;
    meta.sizes[locTensor] = counts[t];
    meta.addrs[0][locTensor] = params[t];
    meta.addrs[1][locTensor] = const_cast<void *>(grads[t]);
    meta.addrs[2][locTensor] = exp_avgs[t];
    meta.addrs[3][locTensor] = exp_avg_sqs[t];
    meta.addrs[4][locTensor] = params16 ? params16[t] : nullptr;
    ++locTensor;
    int64_t chunks = (counts[t] + kChunk - 1) / kChunk;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      meta.blockToTensor[locBlock] = (unsigned char)(locTensor - 1);
      meta.blockToChunk[locBlock] = (int)chunk;
      ++locBlock;
      bool lastChunk = chunk == chunks - 1;
      if (!(locBlock == kMaxBlocks || (locTensor == kMaxTensors && lastChunk) ||
            (t == last && lastChunk)))
        continue;
      launchAny(grad_dtype, p16dt, meta, locBlock, c, s);
      if ((err = cudaGetLastError()) != cudaSuccess)
        return dsrt_fail(DSRT_ERR_INTERNAL,
                         "dsrt_cuda_adam_multi: kernel launch failed: %s",
                         cudaGetErrorString(err));
      locBlock = 0;
      if (lastChunk) {
        locTensor = 0;
      } else { // the rest of this tensor goes on in the next launch
        meta.sizes[0] = meta.sizes[locTensor - 1];
        for (int d = 0; d < kDepth; ++d)
          meta.addrs[d][0] = meta.addrs[d][locTensor - 1];
        locTensor = 1;
      }
    }
  }
  return DSRT_OK;
}
