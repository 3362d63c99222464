/*===- half.h - f16 and bf16 <-> f32, round to nearest even ----------------===*
 *
 * Not part of the ABI. Bit-level conversions, so 16-bit reductions round
 * the same way on every compiler and host (no _Float16 or F16C needed).
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_COMM_HALF_H
#define DSRT_COMM_HALF_H

#include <stdint.h>
#include <string.h>

static inline float dsrt_bits_to_f32(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static inline uint32_t dsrt_f32_to_bits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

static inline float dsrt_bf16_to_f32(uint16_t h) {
  return dsrt_bits_to_f32((uint32_t)h << 16);
}

static inline uint16_t dsrt_f32_to_bf16(float f) {
  uint32_t x = dsrt_f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN stays a (quiet) NaN */
    return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static inline float dsrt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) /* inf, NaN */
    return dsrt_bits_to_f32(sign | 0x7f800000u | (man << 13));
  if (exp)
    return dsrt_bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
  if (!man)
    return dsrt_bits_to_f32(sign);
  /* Subnormal: man * 2^-24, normalized for f32. */
  uint32_t e = 113;
  while (!(man & 0x400)) {
    man <<= 1;
    --e;
  }
  return dsrt_bits_to_f32(sign | (e << 23) | ((man & 0x3ff) << 13));
}

static inline uint16_t dsrt_f32_to_f16(float f) {
  uint32_t x = dsrt_f32_to_bits(f), ax = x & 0x7fffffffu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  if (ax >= 0x7f800000u) /* inf, NaN */
    return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
  if (ax >= 0x477ff000u) /* >= 65520 rounds past 65504 */
    return sign | 0x7c00;
  if (ax >= 0x38800000u) { /* a normal f16: rebias 127 -> 15 and round */
    uint32_t r = ax - 0x38000000u;
    return sign | (uint16_t)((r + 0xfffu + ((r >> 13) & 1)) >> 13);
  }
  if (ax <= 0x33000000u) /* <= 2^-25: half the least subnormal, ties to 0 */
    return sign;
  /* Subnormal: count units of 2^-24 from the 24-bit significand. */
  uint32_t shift = 126 - (ax >> 23), m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1),
           half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q; /* q == 0x400 is the least normal, encoded the same way */
  return sign | (uint16_t)q;
}

#endif /* DSRT_COMM_HALF_H */
