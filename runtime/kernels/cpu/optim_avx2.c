/*===- optim_avx2.c - optimizer loops for AVX2 + FMA + F16C ----------------===*
 *
 * Chosen at run time when the CPU has AVX2, FMA and F16C (optim.c). FMA is
 * enabled for the instruction set but never used by the loops (see optim.h).
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"
#include "kernels/cpu/optim.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2_TARGET "avx2,fma,f16c"

__attribute__((target(AVX2_TARGET))) static inline void
widen_f16(const uint16_t *restrict src, float *restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  (const __m128i *)(const void *)(src + i))));
  for (; i < n; ++i)
    dst[i] = optim_f16_to_f32(src[i]);
}

__attribute__((target(AVX2_TARGET))) static inline void
narrow_f16(const float *restrict src, uint16_t *restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        (__m128i *)(void *)(dst + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    dst[i] = optim_f32_to_f16(src[i]);
}

OPTIM_DEFINE_KERNELS(dsrt_optim_avx2, "avx2", AVX2_TARGET, widen_f16,
                     narrow_f16);
#endif
