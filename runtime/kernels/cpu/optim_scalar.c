/*===- optim_scalar.c - optimizer loops for the baseline instruction set --===*
 *
 * The fallback every machine can run (DSRT_SIMD=scalar forces it). Plain C:
 * the compiler may still use the baseline vector unit (SSE2 on x86-64), which
 * performs the same correctly rounded operations.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"
#include "kernels/cpu/optim.h"

static void widen_f16(const uint16_t *restrict src, float *restrict dst,
                      int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = optim_f16_to_f32(src[i]);
}

static void narrow_f16(const float *restrict src, uint16_t *restrict dst,
                       int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = optim_f32_to_f16(src[i]);
}

OPTIM_DEFINE_KERNELS(dsrt_optim_scalar, "scalar", "default", widen_f16,
                     narrow_f16);
