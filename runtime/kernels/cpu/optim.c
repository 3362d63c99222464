/*===- optim.c - fused Adam/AdamW, SGD and Lamb steps on the CPU ----------===*
 *
 * One pass over memory per step: the gradient is read (and widened from
 * 16 bits, and scaled) on the fly, the states and the fp32 parameters are
 * updated in place and the optional 16-bit model copy is written from the
 * block just updated, while it is still in cache.
 *
 * Work is cut into blocks of OPTIM_BLOCK elements of one tensor; each thread
 * of dsrt_parallel_for takes contiguous runs of blocks over all tensors at
 * once, so 100 small tensors cost one parallel call, not 100. The loops themselves live
 * in optim.h, compiled once per instruction set; the table is chosen on first
 * use from the CPU's features or DSRT_SIMD.
 *
 *===-----------------------------------------------------------------------===*/
#include "kernels/cpu/optim.h"
#include "core/error.h"
#include "core/trace.h"
#include "dsrt/dsrt.h"
#include "offload/swap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*--- Which instruction set ------------------------------------------------*/

static const optim_kernels *active_kernels; /* __atomic accesses only */

static int cpu_has(const optim_kernels *k) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
  if (k == &dsrt_optim_avx2)
    return avx2;
  if (k == &dsrt_optim_avx512)
    return avx2 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#endif
  return k == &dsrt_optim_scalar;
}

static const optim_kernels *best_kernels(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_has(&dsrt_optim_avx512))
    return &dsrt_optim_avx512;
  if (cpu_has(&dsrt_optim_avx2))
    return &dsrt_optim_avx2;
#endif
  return &dsrt_optim_scalar;
}

/* NULL/"" /"auto" -> the best the CPU runs; otherwise that exact path. */
static int kernels_named(const char *name, const char *origin,
                         const optim_kernels **out) {
  if (!name || !*name || !strcmp(name, "auto")) {
    *out = best_kernels();
    return DSRT_OK;
  }
  const optim_kernels *all[] = {
    &dsrt_optim_scalar,
#if defined(__x86_64__) || defined(__i386__)
    &dsrt_optim_avx2,
    &dsrt_optim_avx512,
#endif
  };
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    if (strcmp(name, all[i]->name))
      continue;
    if (!cpu_has(all[i]))
      return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                       "%s=%s: this CPU lacks the instructions it needs "
                       "(avx2: AVX2+FMA+F16C; avx512: also AVX-512F/BW/VL)",
                       origin, name);
    *out = all[i];
    return DSRT_OK;
  }
  return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                   "%s=\"%s\": expected scalar, avx2, avx512 or auto", origin,
                   name);
}

/* The table in use; resolved once from DSRT_SIMD (racing first calls compute
 * the same answer). NULL with the error set when DSRT_SIMD is unusable. */
static const optim_kernels *kernels(void) {
  const optim_kernels *k = __atomic_load_n(&active_kernels, __ATOMIC_ACQUIRE);
  if (k)
    return k;
  if (kernels_named(getenv("DSRT_SIMD"), "DSRT_SIMD", &k) != DSRT_OK)
    return NULL;
  __atomic_store_n(&active_kernels, k, __ATOMIC_RELEASE);
  return k;
}

int dsrt_optim_simd_set(const char *name) {
  const optim_kernels *k = NULL;
  int status = kernels_named(name, "dsrt_optim_simd_set", &k);
  if (status == DSRT_OK)
    __atomic_store_n(&active_kernels, k, __ATOMIC_RELEASE);
  return status;
}

const char *dsrt_optim_simd_get(void) {
  const optim_kernels *k = kernels();
  return k ? k->name : "";
}

/*--- Blocks over threads --------------------------------------------------*/

/* The tensors of one call and where each one's blocks start. */
typedef struct block_plan {
  int64_t num_tensors;
  const int64_t *counts;
  int64_t *first_block; /* num_tensors + 1 entries */
  int64_t small[9];     /* first_block storage for up to 8 tensors */
} block_plan;

static int plan_blocks(block_plan *plan, int64_t num_tensors,
                       const int64_t *counts) {
  plan->num_tensors = num_tensors;
  plan->counts = counts;
  plan->first_block = plan->small;
  if (num_tensors + 1 > (int64_t)(sizeof(plan->small) / sizeof(int64_t))) {
    plan->first_block = malloc((size_t)(num_tensors + 1) * sizeof(int64_t));
    if (!plan->first_block)
      return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                       "optimizer: no memory for %lld tensor offsets",
                       (long long)num_tensors);
  }
  plan->first_block[0] = 0;
  for (int64_t t = 0; t < num_tensors; ++t)
    plan->first_block[t + 1] =
        plan->first_block[t] + (counts[t] + OPTIM_BLOCK - 1) / OPTIM_BLOCK;
  return DSRT_OK;
}

static void free_plan(block_plan *plan) {
  if (plan->first_block != plan->small)
    free(plan->first_block);
}

/* fn(ctx, k, tensor, first element, elements, global block index). */
typedef void (*block_fn)(const void *ctx, const optim_kernels *k, int64_t t,
                         int64_t begin, int64_t len, int64_t block);

static void run_blocks_range(const block_plan *plan, const optim_kernels *k,
                             block_fn fn, const void *ctx, int64_t b0,
                             int64_t b1) {
  if (b0 >= b1)
    return;
  /* The tensor holding block b0: the last t with first_block[t] <= b0. */
  int64_t lo = 0, hi = plan->num_tensors;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (plan->first_block[mid] <= b0)
      lo = mid;
    else
      hi = mid;
  }
  int64_t t = lo;
  for (int64_t b = b0; b < b1; ++b) {
    while (b >= plan->first_block[t + 1])
      ++t;
    int64_t begin = (b - plan->first_block[t]) * OPTIM_BLOCK;
    int64_t len = plan->counts[t] - begin;
    fn(ctx, k, t, begin, len < OPTIM_BLOCK ? len : OPTIM_BLOCK, b);
  }
}

typedef struct {
  const block_plan *plan;
  const optim_kernels *k;
  block_fn fn;
  const void *ctx;
} blocks_job;

static void run_blocks_chunk(void *job, int64_t b0, int64_t b1) {
  const blocks_job *j = job;
  run_blocks_range(j->plan, j->k, j->fn, j->ctx, b0, b1);
}

/* Blocks are independent, so any split gives the same bits. On the step's
 * own pool (core/parallel.c), not an OpenMP team: right after a parallel
 * loop nest the pool's workers are still spinning, and a second team's
 * threads would take turns with them on the cores (measured: adam_multi
 * 3.8 ms a step on 1 thread, 7.1 ms on 2 with OpenMP). */
static void run_blocks(const block_plan *plan, const optim_kernels *k,
                       block_fn fn, const void *ctx) {
  int64_t nblocks = plan->first_block[plan->num_tensors];
  /* Below ~32K elements splitting costs more than it saves. */
  if (nblocks < 16) {
    run_blocks_range(plan, k, fn, ctx, 0, nblocks);
    return;
  }
  blocks_job job = {plan, k, fn, ctx};
  dsrt_parallel_for(run_blocks_chunk, &job, 0, nblocks);
}

/* The block's gradient as fp32: in place, or widened into `stage`. */
static const float *grad_block(const optim_kernels *k, const void *grad,
                               int dtype, int64_t begin, int64_t len,
                               float *stage) {
  if (dtype == DSRT_F32)
    return (const float *)grad + begin;
  k->widen((const uint16_t *)grad + begin, dtype, stage, len);
  return stage;
}

static void write_param16(const optim_kernels *k, void *const *params16,
                          int dtype, int64_t t, const float *p, int64_t begin,
                          int64_t len) {
  if (params16)
    k->narrow(p, (uint16_t *)params16[t] + begin, dtype, len);
}

/*--- Argument checks ------------------------------------------------------*/

static int check_dtypes(const char *fn, int grad_dtype, const void *params16,
                        int param16_dtype) {
  if (grad_dtype != DSRT_F32 && grad_dtype != DSRT_F16 &&
      grad_dtype != DSRT_BF16)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: grad_dtype %d is not DSRT_F32, DSRT_F16 or DSRT_BF16",
                     fn, grad_dtype);
  if (params16 && param16_dtype != DSRT_F16 && param16_dtype != DSRT_BF16)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: param16_dtype %d is not DSRT_F16 or DSRT_BF16 (the "
                     "16-bit copy is optional: pass NULL for none)",
                     fn, param16_dtype);
  return DSRT_OK;
}

/* Every tensor with elements needs every buffer in `bufs` (NULL-able arrays
 * are skipped when the whole array is NULL and `optional` is set). */
static int check_tensors(const char *fn, int64_t num_tensors,
                         const int64_t *counts, int nbufs,
                         const void *const *const *bufs,
                         const char *const *names, const int *optional) {
  if (num_tensors < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: num_tensors=%lld < 0", fn,
                     (long long)num_tensors);
  if (num_tensors > 0 && !counts)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: counts is NULL", fn);
  for (int b = 0; b < nbufs; ++b)
    if (num_tensors > 0 && !bufs[b] && !optional[b])
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                       names[b]);
  for (int64_t t = 0; t < num_tensors; ++t) {
    if (counts[t] < 0)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: tensor %lld has count %lld < 0", fn, (long long)t,
                       (long long)counts[t]);
    for (int b = 0; b < nbufs; ++b)
      if (counts[t] > 0 && bufs[b] && !bufs[b][t])
        return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                         "%s: %s[%lld] is NULL for %lld elements", fn, names[b],
                         (long long)t, (long long)counts[t]);
  }
  return DSRT_OK;
}

static int check_step(const char *fn, int64_t step) {
  if (step < 1)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: step=%lld; steps count from 1", fn, (long long)step);
  return DSRT_OK;
}

/*--- Adam / AdamW ---------------------------------------------------------*/

typedef struct adam_call {
  optim_adam_consts c;
  float *const *params, *const *exp_avgs, *const *exp_avg_sqs;
  const void *const *grads;
  void *const *params16;
  int grad_dtype, param16_dtype;
} adam_call;

static void adam_block(const void *ctx, const optim_kernels *k, int64_t t,
                       int64_t begin, int64_t len, int64_t block) {
  (void)block;
  const adam_call *a = ctx;
  float stage[OPTIM_BLOCK];
  const float *g = grad_block(k, a->grads[t], a->grad_dtype, begin, len, stage);
  float *p = a->params[t] + begin;
  k->adam(&a->c, p, g, a->exp_avgs[t] + begin, a->exp_avg_sqs[t] + begin, len);
  write_param16(k, a->params16, a->param16_dtype, t, p, begin, len);
}

static int run_adam(adam_call *a, const optim_kernels *k, int64_t num_tensors,
                    const int64_t *counts) {
  block_plan plan;
  int status = plan_blocks(&plan, num_tensors, counts);
  if (status != DSRT_OK)
    return status;
  run_blocks(&plan, k, adam_block, a);
  free_plan(&plan);
  return DSRT_OK;
}

/* Whether the states are files (dsrt_swap_add keys), not memory. */
static int swapped(int64_t num_tensors, const int64_t *counts,
                   float *const *states) {
  for (int64_t t = 0; t < num_tensors; ++t)
    if (counts[t] > 0)
      return dsrt_swap_holds(states[t]);
  return 0;
}

/* One chunk of a swapped update: the same call over staged states. */
typedef struct adam_chunks {
  adam_call *a;
  const optim_kernels *k;
} adam_chunks;

static int adam_chunk(void *ctx, int64_t num_tensors, float *const *params,
                      const void *const *grads, float *const *exp_avgs,
                      float *const *exp_avg_sqs, const int64_t *counts,
                      void *const *params16) {
  adam_chunks *c = ctx;
  c->a->params = params;
  c->a->grads = grads;
  c->a->exp_avgs = exp_avgs;
  c->a->exp_avg_sqs = exp_avg_sqs;
  c->a->params16 = params16;
  return run_adam(c->a, c->k, num_tensors, counts);
}

static int adam(const char *fn, int64_t num_tensors, float *const *params,
                const void *const *grads, int grad_dtype,
                float *const *exp_avgs, float *const *exp_avg_sqs,
                const int64_t *counts, int64_t step, float lr, float beta1,
                float beta2, float eps, float weight_decay, int adamw_mode,
                int bias_correction, float grad_scale, void *const *params16,
                int param16_dtype) {
  const void *const *bufs[] = {
      (const void *const *)params, grads, (const void *const *)exp_avgs,
      (const void *const *)exp_avg_sqs, (const void *const *)params16};
  const char *names[] = {"params", "grads", "exp_avgs", "exp_avg_sqs",
                         "params16"};
  const int optional[] = {0, 0, 0, 0, 1};
  int status = check_tensors(fn, num_tensors, counts, 5, bufs, names, optional);
  if (status == DSRT_OK)
    status = check_dtypes(fn, grad_dtype, params16, param16_dtype);
  if (status == DSRT_OK)
    status = check_step(fn, step);
  if (status != DSRT_OK)
    return status;
  const optim_kernels *k = kernels();
  if (!k)
    return DSRT_ERR_UNSUPPORTED;

  double bc1 = bias_correction ? 1.0 - pow(beta1, (double)step) : 1.0;
  double bc2 = bias_correction ? 1.0 - pow(beta2, (double)step) : 1.0;
  adam_call a = {.c = {.beta1 = beta1,
                       .one_minus_beta1 = (float)(1.0 - beta1),
                       .beta2 = beta2,
                       .one_minus_beta2 = (float)(1.0 - beta2),
                       .eps = eps,
                       .l2 = adamw_mode ? 0.0f : weight_decay,
                       .decay = adamw_mode
                                    ? (float)(1.0 - (double)lr * weight_decay)
                                    : 1.0f,
                       .bc2_sqrt = (float)sqrt(bc2),
                       .neg_step = (float)(-(lr / bc1)),
                       .grad_scale = grad_scale},
                 .params = params,
                 .exp_avgs = exp_avgs,
                 .exp_avg_sqs = exp_avg_sqs,
                 .grads = grads,
                 .params16 = params16,
                 .grad_dtype = grad_dtype,
                 .param16_dtype = param16_dtype};
  if (swapped(num_tensors, counts, exp_avgs)) {
    adam_chunks chunks = {.a = &a, .k = k};
    return dsrt_swap_update(fn, num_tensors, params, grads, grad_dtype,
                            exp_avgs, exp_avg_sqs, counts, params16,
                            param16_dtype, OPTIM_BLOCK, adam_chunk, &chunks);
  }
  return run_adam(&a, k, num_tensors, counts);
}

int dsrt_adam(float *param, const void *grad, int grad_dtype, float *exp_avg,
              float *exp_avg_sq, int64_t count, int64_t step, float lr,
              float beta1, float beta2, float eps, float weight_decay,
              int adamw_mode, int bias_correction, float grad_scale,
              void *param16, int param16_dtype) {
  double t0 = dsrt_trace_t0();
  int status = adam("dsrt_adam", 1, &param, &grad, grad_dtype, &exp_avg,
                    &exp_avg_sq, &count, step, lr, beta1, beta2, eps,
                    weight_decay, adamw_mode, bias_correction, grad_scale,
                    param16 ? &param16 : NULL, param16_dtype);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "adam", t0, -1);
  return status;
}

int dsrt_adam_multi(int64_t num_tensors, float *const *params,
                    const void *const *grads, int grad_dtype,
                    float *const *exp_avgs, float *const *exp_avg_sqs,
                    const int64_t *counts, int64_t step, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int adamw_mode,
                    int bias_correction, float grad_scale,
                    void *const *params16, int param16_dtype) {
  double t0 = dsrt_trace_t0();
  int status =
      adam("dsrt_adam_multi", num_tensors, params, grads, grad_dtype, exp_avgs,
           exp_avg_sqs, counts, step, lr, beta1, beta2, eps, weight_decay,
           adamw_mode, bias_correction, grad_scale, params16, param16_dtype);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "adam", t0, -1);
  return status;
}

/*--- SGD ------------------------------------------------------------------*/

typedef struct sgd_call {
  optim_sgd_consts c;
  float *const *params, *const *bufs;
  const void *const *grads;
  void *const *params16;
  int grad_dtype, param16_dtype;
} sgd_call;

static void sgd_block(const void *ctx, const optim_kernels *k, int64_t t,
                      int64_t begin, int64_t len, int64_t block) {
  (void)block;
  const sgd_call *s = ctx;
  float stage[OPTIM_BLOCK];
  const float *g = grad_block(k, s->grads[t], s->grad_dtype, begin, len, stage);
  float *p = s->params[t] + begin;
  k->sgd(&s->c, p, g, s->c.has_momentum ? s->bufs[t] + begin : NULL, len);
  write_param16(k, s->params16, s->param16_dtype, t, p, begin, len);
}

static int sgd(const char *fn, int64_t num_tensors, float *const *params,
               const void *const *grads, int grad_dtype,
               float *const *momentum_bufs, const int64_t *counts, int64_t step,
               float lr, float momentum, float dampening, int nesterov,
               float weight_decay, float grad_scale, void *const *params16,
               int param16_dtype) {
  /* Without momentum there is no buffer to check (nor to touch). */
  const void *const *bufs[] = {
      (const void *const *)params, grads,
      momentum != 0.0f ? (const void *const *)momentum_bufs : NULL,
      (const void *const *)params16};
  const char *names[] = {"params", "grads", "momentum_bufs", "params16"};
  const int optional[] = {0, 0, momentum == 0.0f, 1};
  int status = check_tensors(fn, num_tensors, counts, 4, bufs, names, optional);
  if (status == DSRT_OK)
    status = check_dtypes(fn, grad_dtype, params16, param16_dtype);
  if (status == DSRT_OK)
    status = check_step(fn, step);
  if (status == DSRT_OK && nesterov && (momentum <= 0.0f || dampening != 0.0f))
    status = dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: nesterov needs momentum > 0 and dampening 0 "
                       "(momentum=%g, dampening=%g)",
                       fn, momentum, dampening);
  if (status != DSRT_OK)
    return status;
  const optim_kernels *k = kernels();
  if (!k)
    return DSRT_ERR_UNSUPPORTED;

  sgd_call s = {.c = {.l2 = weight_decay,
                      .momentum = momentum,
                      .one_minus_dampening = (float)(1.0 - dampening),
                      .neg_lr = -lr,
                      .grad_scale = grad_scale,
                      .has_momentum = momentum != 0.0f,
                      .first_step = step == 1,
                      .nesterov = nesterov != 0},
                .params = params,
                .bufs = momentum_bufs,
                .grads = grads,
                .params16 = params16,
                .grad_dtype = grad_dtype,
                .param16_dtype = param16_dtype};
  block_plan plan;
  if ((status = plan_blocks(&plan, num_tensors, counts)) != DSRT_OK)
    return status;
  run_blocks(&plan, k, sgd_block, &s);
  free_plan(&plan);
  return DSRT_OK;
}

int dsrt_sgd(float *param, const void *grad, int grad_dtype,
             float *momentum_buf, int64_t count, int64_t step, float lr,
             float momentum, float dampening, int nesterov, float weight_decay,
             float grad_scale, void *param16, int param16_dtype) {
  double t0 = dsrt_trace_t0();
  int status =
      sgd("dsrt_sgd", 1, &param, &grad, grad_dtype, &momentum_buf, &count, step,
          lr, momentum, dampening, nesterov, weight_decay, grad_scale,
          param16 ? &param16 : NULL, param16_dtype);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "sgd", t0, -1);
  return status;
}

int dsrt_sgd_multi(int64_t num_tensors, float *const *params,
                   const void *const *grads, int grad_dtype,
                   float *const *momentum_bufs, const int64_t *counts,
                   int64_t step, float lr, float momentum, float dampening,
                   int nesterov, float weight_decay, float grad_scale,
                   void *const *params16, int param16_dtype) {
  double t0 = dsrt_trace_t0();
  int status = sgd("dsrt_sgd_multi", num_tensors, params, grads, grad_dtype,
                   momentum_bufs, counts, step, lr, momentum, dampening,
                   nesterov, weight_decay, grad_scale, params16, param16_dtype);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "sgd", t0, -1);
  return status;
}

/*--- Lamb -----------------------------------------------------------------*/

typedef struct lamb_call {
  optim_lamb_consts c;
  float *const *params, *const *exp_avgs, *const *exp_avg_sqs;
  const void *const *grads;
  void *const *params16;
  int grad_dtype, param16_dtype;
  double *partials;   /* 2 per block: ||p||^2 and ||update||^2 */
  const float *steps; /* per tensor: step size * trust ratio */
} lamb_call;

static void lamb_stats_block(const void *ctx, const optim_kernels *k, int64_t t,
                             int64_t begin, int64_t len, int64_t block) {
  const lamb_call *l = ctx;
  float stage[OPTIM_BLOCK];
  const float *g = grad_block(k, l->grads[t], l->grad_dtype, begin, len, stage);
  double *sums = l->partials + 2 * block;
  sums[0] = sums[1] = 0.0;
  k->lamb_stats(&l->c, l->params[t] + begin, g, l->exp_avgs[t] + begin,
                l->exp_avg_sqs[t] + begin, len, sums);
}

static void lamb_apply_block(const void *ctx, const optim_kernels *k, int64_t t,
                             int64_t begin, int64_t len, int64_t block) {
  (void)block;
  const lamb_call *l = ctx;
  float *p = l->params[t] + begin;
  k->lamb_apply(&l->c, p, l->exp_avgs[t] + begin, l->exp_avg_sqs[t] + begin,
                len, l->steps[t]);
  write_param16(k, l->params16, l->param16_dtype, t, p, begin, len);
}

static int lamb(const char *fn, int64_t num_tensors, float *const *params,
                const void *const *grads, int grad_dtype,
                float *const *exp_avgs, float *const *exp_avg_sqs,
                const int64_t *counts, int64_t step, float lr, float beta1,
                float beta2, float eps, float weight_decay, int bias_correction,
                float min_coeff, float max_coeff, float grad_scale,
                void *const *params16, int param16_dtype, float *trust_ratios) {
  const void *const *bufs[] = {
      (const void *const *)params, grads, (const void *const *)exp_avgs,
      (const void *const *)exp_avg_sqs, (const void *const *)params16};
  const char *names[] = {"params", "grads", "exp_avgs", "exp_avg_sqs",
                         "params16"};
  const int optional[] = {0, 0, 0, 0, 1};
  int status = check_tensors(fn, num_tensors, counts, 5, bufs, names, optional);
  if (status == DSRT_OK)
    status = check_dtypes(fn, grad_dtype, params16, param16_dtype);
  if (status == DSRT_OK)
    status = check_step(fn, step);
  if (status == DSRT_OK && !(min_coeff <= max_coeff))
    status =
        dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: min_coeff=%g > max_coeff=%g",
                  fn, min_coeff, max_coeff);
  if (status != DSRT_OK)
    return status;
  const optim_kernels *k = kernels();
  if (!k)
    return DSRT_ERR_UNSUPPORTED;

  block_plan plan;
  if ((status = plan_blocks(&plan, num_tensors, counts)) != DSRT_OK)
    return status;
  int64_t nblocks = plan.first_block[num_tensors];
  double *partials = malloc((size_t)(2 * nblocks + 1) * sizeof(double));
  float *steps = malloc((size_t)(num_tensors + 1) * sizeof(float));
  if (!partials || !steps) {
    free(partials);
    free(steps);
    free_plan(&plan);
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "%s: no memory for %lld partial norms", fn,
                     (long long)nblocks);
  }
  /* DeepSpeed's FusedLamb: step_size = lr * sqrt(1-b2^t) / (1-b1^t), in
   * float like its host code. */
  float step_size =
      bias_correction
          ? (float)((double)lr * sqrt(1.0 - pow(beta2, (double)step)) /
                    (1.0 - pow(beta1, (double)step)))
          : lr;
  lamb_call l = {.c = {.beta1 = beta1,
                       .one_minus_beta1 = (float)(1.0 - beta1),
                       .beta2 = beta2,
                       .one_minus_beta2 = (float)(1.0 - beta2),
                       .eps = eps,
                       .weight_decay = weight_decay,
                       .grad_scale = grad_scale},
                 .params = params,
                 .exp_avgs = exp_avgs,
                 .exp_avg_sqs = exp_avg_sqs,
                 .grads = grads,
                 .params16 = params16,
                 .grad_dtype = grad_dtype,
                 .param16_dtype = param16_dtype,
                 .partials = partials,
                 .steps = steps};
  run_blocks(&plan, k, lamb_stats_block, &l);
  /* Per tensor, blocks summed in order: the ratio does not depend on the
   * thread count. */
  for (int64_t t = 0; t < num_tensors; ++t) {
    double w2 = 0.0, u2 = 0.0;
    for (int64_t b = plan.first_block[t]; b < plan.first_block[t + 1]; ++b) {
      w2 += partials[2 * b];
      u2 += partials[2 * b + 1];
    }
    float w = (float)sqrt(w2), u = (float)sqrt(u2), ratio = 1.0f;
    if (w != 0.0f && u != 0.0f) {
      ratio = w / u;
      ratio = ratio > max_coeff ? max_coeff : ratio;
      ratio = ratio < min_coeff ? min_coeff : ratio;
    }
    steps[t] = step_size * ratio;
    if (trust_ratios)
      trust_ratios[t] = ratio;
  }
  run_blocks(&plan, k, lamb_apply_block, &l);
  free(partials);
  free(steps);
  free_plan(&plan);
  return DSRT_OK;
}

int dsrt_lamb(float *param, const void *grad, int grad_dtype, float *exp_avg,
              float *exp_avg_sq, int64_t count, int64_t step, float lr,
              float beta1, float beta2, float eps, float weight_decay,
              int bias_correction, float min_coeff, float max_coeff,
              float grad_scale, void *param16, int param16_dtype,
              float *trust_ratio) {
  double t0 = dsrt_trace_t0();
  int status =
      lamb("dsrt_lamb", 1, &param, &grad, grad_dtype, &exp_avg, &exp_avg_sq,
           &count, step, lr, beta1, beta2, eps, weight_decay, bias_correction,
           min_coeff, max_coeff, grad_scale, param16 ? &param16 : NULL,
           param16_dtype, trust_ratio);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "lamb", t0, -1);
  return status;
}

int dsrt_lamb_multi(int64_t num_tensors, float *const *params,
                    const void *const *grads, int grad_dtype,
                    float *const *exp_avgs, float *const *exp_avg_sqs,
                    const int64_t *counts, int64_t step, float lr, float beta1,
                    float beta2, float eps, float weight_decay,
                    int bias_correction, float min_coeff, float max_coeff,
                    float grad_scale, void *const *params16, int param16_dtype,
                    float *trust_ratios) {
  double t0 = dsrt_trace_t0();
  int status = lamb("dsrt_lamb_multi", num_tensors, params, grads, grad_dtype,
                    exp_avgs, exp_avg_sqs, counts, step, lr, beta1, beta2, eps,
                    weight_decay, bias_correction, min_coeff, max_coeff,
                    grad_scale, params16, param16_dtype, trust_ratios);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "lamb", t0, -1);
  return status;
}
