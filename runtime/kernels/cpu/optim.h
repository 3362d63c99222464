/*===- optim.h - loops shared by the optimizer kernel variants ------------===*
 *
 * Not part of the ABI. optim.c checks arguments, splits the work into blocks
 * over OpenMP threads and calls one of the kernel tables below; each table
 * is the same portable loops compiled for one instruction set
 * (optim_scalar.c, optim_avx2.c, optim_avx512.c instantiate them with
 * function-level target attributes, so no global -march is needed).
 *
 * The loops use no fused multiply-add and the files are built with
 * -ffp-contract=off: every variant performs the same IEEE operations in the
 * same order, so vector and scalar results are bitwise equal (sqrt and
 * division are correctly rounded in both). Reductions (Lamb's norms) use a
 * fixed lane order (OPTIM_LANES partial sums per block) for the same reason.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_KERNELS_CPU_OPTIM_H
#define DSRT_KERNELS_CPU_OPTIM_H

#include <stdint.h>
#include <string.h>

#include <math.h>

/* Elements per block: the unit of work split over threads and of the Lamb
 * partial norms, so results do not depend on the thread count. Also the
 * size of the on-stack staging buffer for 16-bit gradients. */
#define OPTIM_BLOCK 2048
/* Partial sums per block for the Lamb norms (fixed summation order). */
#define OPTIM_LANES 16

/* Per-call constants, computed once in double and rounded to float the way
 * PyTorch rounds its Python-double scalars. */
typedef struct optim_adam_consts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float eps;
  float l2;       /* Adam: wd added to the gradient (0 for AdamW) */
  float decay;    /* AdamW: 1 - lr*wd (1 for Adam) */
  float bc2_sqrt; /* sqrt(1 - beta2^t), or 1 */
  float neg_step; /* -lr / (1 - beta1^t), or -lr */
  float grad_scale;
} optim_adam_consts;

typedef struct optim_sgd_consts {
  float l2, momentum, one_minus_dampening, neg_lr, grad_scale;
  int has_momentum, first_step, nesterov;
} optim_sgd_consts;

typedef struct optim_lamb_consts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float eps, weight_decay, grad_scale;
} optim_lamb_consts;

/* One instruction set's loops. All counts are elements of one block at
 * most; grads are fp32 (16-bit ones are widened into a staging buffer). */
typedef struct optim_kernels {
  const char *name;
  /* dst[i] = (float)src[i] for DSRT_F16 or DSRT_BF16 src. */
  void (*widen)(const void *src, int dtype, float *dst, int64_t n);
  /* dst[i] = src[i] rounded to nearest even, DSRT_F16 or DSRT_BF16. */
  void (*narrow)(const float *src, void *dst, int dtype, int64_t n);
  void (*adam)(const optim_adam_consts *c, float *p, const float *g, float *m,
               float *v, int64_t n);
  void (*sgd)(const optim_sgd_consts *c, float *p, const float *g, float *buf,
              int64_t n);
  /* Updates m and v; adds ||p||^2 and ||update||^2 to sums[0], sums[1]. */
  void (*lamb_stats)(const optim_lamb_consts *c, const float *p, const float *g,
                     float *m, float *v, int64_t n, double sums[2]);
  /* p -= step * update, update recomputed from m, v and p. */
  void (*lamb_apply)(const optim_lamb_consts *c, float *p, const float *m,
                     const float *v, int64_t n, float step);
} optim_kernels;

extern const optim_kernels dsrt_optim_scalar;
#if defined(__x86_64__) || defined(__i386__)
extern const optim_kernels dsrt_optim_avx2;
extern const optim_kernels dsrt_optim_avx512;
#endif

/*--- The loops (inlined into each variant) --------------------------------*/

#define OPTIM_INLINE static inline __attribute__((always_inline))

OPTIM_INLINE float optim_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Round to nearest even; NaNs stay (quiet) NaNs. */
OPTIM_INLINE uint16_t optim_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* IEEE half <-> float in software, bit-identical to the F16C instructions
 * (round to nearest even, subnormals kept, NaNs quieted): the scalar path and
 * the tails of the vector paths. */
OPTIM_INLINE float optim_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1f)
    u = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0);
  else if (exp != 0)
    u = sign | ((exp + 112) << 23) | (man << 13);
  else {
    float f = (float)man * 0x1p-24f; /* exact: man < 2^10 */
    memcpy(&u, &f, sizeof u);
    u |= sign;
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

OPTIM_INLINE uint16_t optim_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) /* rounds past 65504 */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) {          /* below 2^-14: a subnormal half (or zero) */
    float x = fabsf(f) * 0x1p24f; /* exact; the half's integer mantissa */
    x = (x + 0x1p23f) - 0x1p23f;  /* round to nearest even integer */
    return (uint16_t)(sign | (uint32_t)x);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
  return (uint16_t)(sign | (r >> 13));
}

OPTIM_INLINE void optim_widen_bf16(const uint16_t *restrict src,
                                   float *restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = optim_bf16_to_f32(src[i]);
}

OPTIM_INLINE void optim_narrow_bf16(const float *restrict src,
                                    uint16_t *restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = optim_f32_to_bf16(src[i]);
}

/* PyTorch's order of operations: m.mul_(b1).add_(g, 1-b1),
 * v.mul_(b2).addcmul_(g, g, 1-b2), denom = sqrt(v)/bc2_sqrt + eps,
 * p.addcdiv_(m, denom, -step). */
OPTIM_INLINE void optim_adam_loop(const optim_adam_consts *c, float *restrict p,
                                  const float *restrict g, float *restrict m,
                                  float *restrict v, int64_t n) {
  const float b1 = c->beta1, omb1 = c->one_minus_beta1, b2 = c->beta2,
              omb2 = c->one_minus_beta2, eps = c->eps, l2 = c->l2,
              decay = c->decay, bc2 = c->bc2_sqrt, ns = c->neg_step,
              scale = c->grad_scale;
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i];
    float gi = g[i] * scale;
    gi = l2 != 0.0f ? gi + l2 * pi : gi; /* as PyTorch: no 0*p (inf p) */
    pi = pi * decay;
    float mi = m[i] * b1 + omb1 * gi;
    float vi = v[i] * b2 + omb2 * gi * gi;
    float denom = sqrtf(vi) / bc2 + eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + ns * mi / denom;
  }
}

/* PyTorch's SGD: d = g + wd*p (only when wd != 0); buf = d (first step) or
 * buf*momentum + (1-dampening)*d; d = nesterov ? d + momentum*buf : buf;
 * p += -lr*d. */
OPTIM_INLINE float optim_sgd_grad(float g, float scale, float l2, float p) {
  return l2 != 0.0f ? g * scale + l2 * p : g * scale;
}

OPTIM_INLINE void optim_sgd_loop(const optim_sgd_consts *c, float *restrict p,
                                 const float *restrict g, float *restrict buf,
                                 int64_t n) {
  const float l2 = c->l2, mom = c->momentum, omd = c->one_minus_dampening,
              nlr = c->neg_lr, scale = c->grad_scale;
  if (!c->has_momentum) {
    for (int64_t i = 0; i < n; ++i)
      p[i] = p[i] + nlr * optim_sgd_grad(g[i], scale, l2, p[i]);
    return;
  }
  if (c->first_step) {
    for (int64_t i = 0; i < n; ++i) {
      float d = optim_sgd_grad(g[i], scale, l2, p[i]);
      buf[i] = d;
      p[i] = p[i] + nlr * (c->nesterov ? d + mom * d : d);
    }
    return;
  }
  if (c->nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      float d = optim_sgd_grad(g[i], scale, l2, p[i]);
      float b = buf[i] * mom + omd * d;
      buf[i] = b;
      p[i] = p[i] + nlr * (d + mom * b);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float d = optim_sgd_grad(g[i], scale, l2, p[i]);
    float b = buf[i] * mom + omd * d;
    buf[i] = b;
    p[i] = p[i] + nlr * b;
  }
}

/* DeepSpeed's FusedLamb (eps outside the sqrt): update = m/(sqrt(v)+eps) +
 * wd*p, with m and v not bias-corrected (the correction is in the step). */
OPTIM_INLINE float optim_lamb_update(const optim_lamb_consts *c, float p,
                                     float m, float v) {
  return m / (sqrtf(v) + c->eps) + c->weight_decay * p;
}

OPTIM_INLINE void optim_lamb_stats_loop(const optim_lamb_consts *c,
                                        const float *restrict p,
                                        const float *restrict g,
                                        float *restrict m, float *restrict v,
                                        int64_t n, double sums[2]) {
  const float b1 = c->beta1, omb1 = c->one_minus_beta1, b2 = c->beta2,
              omb2 = c->one_minus_beta2, scale = c->grad_scale;
  double w2[OPTIM_LANES] = {0}, u2[OPTIM_LANES] = {0};
  int64_t i = 0;
  for (; i + OPTIM_LANES <= n; i += OPTIM_LANES)
    for (int j = 0; j < OPTIM_LANES; ++j) {
      float gi = g[i + j] * scale;
      float mi = m[i + j] * b1 + omb1 * gi;
      float vi = v[i + j] * b2 + omb2 * gi * gi;
      float u = optim_lamb_update(c, p[i + j], mi, vi);
      m[i + j] = mi;
      v[i + j] = vi;
      w2[j] += (double)p[i + j] * (double)p[i + j];
      u2[j] += (double)u * (double)u;
    }
  for (int j = 0; i < n; ++i, ++j) {
    float gi = g[i] * scale;
    float mi = m[i] * b1 + omb1 * gi;
    float vi = v[i] * b2 + omb2 * gi * gi;
    float u = optim_lamb_update(c, p[i], mi, vi);
    m[i] = mi;
    v[i] = vi;
    w2[j] += (double)p[i] * (double)p[i];
    u2[j] += (double)u * (double)u;
  }
  for (int j = 0; j < OPTIM_LANES; ++j) {
    sums[0] += w2[j];
    sums[1] += u2[j];
  }
}

OPTIM_INLINE void optim_lamb_apply_loop(const optim_lamb_consts *c,
                                        float *restrict p,
                                        const float *restrict m,
                                        const float *restrict v, int64_t n,
                                        float step) {
  for (int64_t i = 0; i < n; ++i)
    p[i] = p[i] - step * optim_lamb_update(c, p[i], m[i], v[i]);
}

/* Defines a kernel table named `table` whose loops are compiled with
 * __attribute__((target(tgt))); widen_f16 / narrow_f16 are the variant's
 * own fp16 conversions (F16C or AVX-512 instructions, or software). */
#define OPTIM_DEFINE_KERNELS(table, label, tgt, widen_f16, narrow_f16)         \
  __attribute__((target(tgt))) static void table##_widen(                      \
      const void *src, int dtype, float *dst, int64_t n) {                     \
    if (dtype == DSRT_F16)                                                     \
      widen_f16((const uint16_t *)src, dst, n);                                \
    else                                                                       \
      optim_widen_bf16((const uint16_t *)src, dst, n);                         \
  }                                                                            \
  __attribute__((target(tgt))) static void table##_narrow(                     \
      const float *src, void *dst, int dtype, int64_t n) {                     \
    if (dtype == DSRT_F16)                                                     \
      narrow_f16(src, (uint16_t *)dst, n);                                     \
    else                                                                       \
      optim_narrow_bf16(src, (uint16_t *)dst, n);                              \
  }                                                                            \
  __attribute__((target(tgt))) static void table##_adam(                       \
      const optim_adam_consts *c, float *p, const float *g, float *m,          \
      float *v, int64_t n) {                                                   \
    optim_adam_loop(c, p, g, m, v, n);                                         \
  }                                                                            \
  __attribute__((target(tgt))) static void table##_sgd(                        \
      const optim_sgd_consts *c, float *p, const float *g, float *buf,         \
      int64_t n) {                                                             \
    optim_sgd_loop(c, p, g, buf, n);                                           \
  }                                                                            \
  __attribute__((target(tgt))) static void table##_lamb_stats(                 \
      const optim_lamb_consts *c, const float *p, const float *g, float *m,    \
      float *v, int64_t n, double sums[2]) {                                   \
    optim_lamb_stats_loop(c, p, g, m, v, n, sums);                             \
  }                                                                            \
  __attribute__((target(tgt))) static void table##_lamb_apply(                 \
      const optim_lamb_consts *c, float *p, const float *m, const float *v,    \
      int64_t n, float step) {                                                 \
    optim_lamb_apply_loop(c, p, m, v, n, step);                                \
  }                                                                            \
  const optim_kernels table = {                                                \
      label,       table##_widen,      table##_narrow,    table##_adam,        \
      table##_sgd, table##_lamb_stats, table##_lamb_apply}

#endif /* DSRT_KERNELS_CPU_OPTIM_H */
