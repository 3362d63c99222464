/*===- optim_avx512.c - optimizer loops for AVX-512 (F, BW, VL) ------------===*
 *
 * Chosen at run time when the CPU has AVX-512F, BW and VL (optim.c); the
 * loops are the portable ones of optim.h vectorized over 16 lanes.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"
#include "kernels/cpu/optim.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx2,fma,f16c"

__attribute__((target(AVX512_TARGET))) static inline void
widen_f16(const uint16_t *restrict src, float *restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                  (const __m256i *)(const void *)(src + i))));
  for (; i < n; ++i)
    dst[i] = optim_f16_to_f32(src[i]);
}

__attribute__((target(AVX512_TARGET))) static inline void
narrow_f16(const float *restrict src, uint16_t *restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        (__m256i *)(void *)(dst + i),
        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    dst[i] = optim_f32_to_f16(src[i]);
}

OPTIM_DEFINE_KERNELS(dsrt_optim_avx512, "avx512", AVX512_TARGET, widen_f16,
                     narrow_f16);
#endif
