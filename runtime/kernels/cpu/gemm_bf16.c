/*===- gemm_bf16.c - dsrt_gemm_bf16: bf16 operands, f32 accumulation -------===*
 *
 * The compiler calls these for a contraction of two bf16 operands into an
 * f32 result (ds-bf16-contractions). Every product of two bf16 values is
 * exact in f32, so the backends differ only in the order of the f32 sums:
 *
 *   onednn  oneDNN's matmul primitive, on CPUs with AVX512_BF16: the
 *           vdpbf16ps dot products run at about twice the f32 FMA rate and
 *           the operands are read at half the bytes. Debian's OpenBLAS is
 *           built without its sbgemm, so oneDNN it is.
 *   f32     each operand widened into scratch (exactly), then dsrt_sgemm:
 *           the same call, bit for bit, as a contraction over widened
 *           tensors, so CPUs without the instructions keep their numbers.
 *
 * The backend is chosen once per process from the CPU (so an artifact
 * compiled elsewhere runs what this CPU has); DSRT_BF16_GEMM=f32 or onednn
 * overrides. A shape oneDNN would run only with its reference kernel falls
 * back to f32. oneDNN shares the OpenMP team dsrt_threads_set sizes.
 *
 *===-----------------------------------------------------------------------===*/
#include "core/error.h"
#include "dsrt/dsrt.h"

#include "kernels/gemm_args.h"

#include <oneapi/dnnl/dnnl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*--- Backend choice -------------------------------------------------------*/

static pthread_once_t backend_once = PTHREAD_ONCE_INIT;
static int backend = DSRT_BF16_GEMM_F32;
static int backend_status = DSRT_OK;
static char backend_why[160];

static int cpu_has_bf16(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static void choose_backend(void) {
  const char *forced = getenv("DSRT_BF16_GEMM");
  int want_onednn = cpu_has_bf16();
  if (forced && *forced) {
    if (strcmp(forced, "f32") == 0) {
      want_onednn = 0;
    } else if (strcmp(forced, "onednn") == 0) {
      if (!cpu_has_bf16()) {
        backend_status = dsrt_fail(
            DSRT_ERR_UNSUPPORTED,
            "DSRT_BF16_GEMM=onednn: this CPU has no avx512_bf16; unset "
            "DSRT_BF16_GEMM (ds then widens to f32) or set it to f32");
        return;
      }
      want_onednn = 1;
    } else {
      backend_status =
          dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                    "DSRT_BF16_GEMM=%s: not a bf16 GEMM backend; use f32 or "
                    "onednn (or unset it: ds chooses from the CPU)",
                    forced);
      return;
    }
  }
  snprintf(backend_why, sizeof backend_why, "%s",
           forced && *forced ? "DSRT_BF16_GEMM=f32"
                             : "this CPU has no avx512_bf16");
  if (!want_onednn)
    return;
  if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) !=
          dnnl_success) {
    backend_status = dsrt_fail(DSRT_ERR_INTERNAL,
                               "dsrt_gemm_bf16: oneDNN could not create its "
                               "CPU engine; set DSRT_BF16_GEMM=f32");
    return;
  }
  backend = DSRT_BF16_GEMM_ONEDNN;
  const dnnl_version_t *v = dnnl_version();
  snprintf(backend_why, sizeof backend_why, "oneDNN %d.%d.%d, %s", v->major,
           v->minor, v->patch,
           forced && *forced ? "DSRT_BF16_GEMM=onednn"
                             : "this CPU has avx512_bf16");
}

int dsrt_bf16_gemm_backend(const char **why) {
  pthread_once(&backend_once, choose_backend);
  if (why)
    *why = backend_why;
  return backend_status == DSRT_OK ? backend : -1;
}

/*--- The f32 backend ------------------------------------------------------*/

/* Per-thread scratch for the widened operands; grows, never shrinks. */
static __thread float *scratch;
static __thread size_t scratch_elems;

static float *scratch_for(size_t elems) {
  static float none; /* K == 0: nothing to widen, but not NULL */
  if (elems == 0)
    return &none;
  if (elems > scratch_elems) {
    free(scratch);
    scratch = malloc(elems * sizeof(float));
    scratch_elems = scratch ? elems : 0;
  }
  return scratch;
}

static inline float widen(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* rows x cols (leading dimension ld) of bf16 into dense f32. */
static void widen_matrix(const uint16_t *src, int64_t rows, int64_t cols,
                         int64_t ld, float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = widen(src[r * ld + c]);
}

static int gemm_f32(int transA, int transB, int64_t M, int64_t N, int64_t K,
                    float alpha, const uint16_t *A, int64_t lda,
                    int64_t strideA, const uint16_t *B, int64_t ldb,
                    int64_t strideB, float beta, float *C, int64_t ldc,
                    int64_t strideC, int64_t batch) {
  int64_t aRows = transA ? K : M, aCols = transA ? M : K;
  int64_t bRows = transB ? N : K, bCols = transB ? K : N;
  int64_t aBatch = strideA ? batch : 1, bBatch = strideB ? batch : 1;
  size_t aElems = (size_t)(aRows * aCols), bElems = (size_t)(bRows * bCols);
  float *wide = scratch_for(aElems * aBatch + bElems * bBatch);
  if (!wide)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "dsrt_gemm_bf16: no memory to widen %lld x %lld x %lld "
                     "operands to f32",
                     (long long)M, (long long)N, (long long)K);
  float *wa = wide, *wb = wide + aElems * aBatch;
  for (int64_t i = 0; i < aBatch; ++i)
    widen_matrix(A + i * strideA, aRows, aCols, lda, wa + i * aElems);
  for (int64_t i = 0; i < bBatch; ++i)
    widen_matrix(B + i * strideB, bRows, bCols, ldb, wb + i * bElems);
  if (batch == 0)
    return dsrt_sgemm(transA, transB, M, N, K, alpha, wa, aCols > 1 ? aCols : 1,
                      wb, bCols > 1 ? bCols : 1, beta, C, ldc);
  return dsrt_sgemm_strided_batched(
      transA, transB, M, N, K, alpha, wa, aCols > 1 ? aCols : 1,
      strideA ? (int64_t)aElems : 0, wb, bCols > 1 ? bCols : 1,
      strideB ? (int64_t)bElems : 0, beta, C, ldc, strideC, batch);
}

/*--- The oneDNN backend ---------------------------------------------------*/

/* One matmul primitive per distinct problem, made at its first call (JIT
 * code generation, ~1 ms) and kept: a step has a few dozen shapes. */
typedef struct {
  int transA, transB;
  int64_t M, N, K, lda, ldb, ldc, strideA, strideB, strideC, batch;
  float alpha;
  int accumulate;
} gemm_key;

typedef struct {
  gemm_key key;
  dnnl_primitive_t prim; /* NULL: oneDNN has only its reference kernel */
  dnnl_memory_desc_t src, wei, dst;
} gemm_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static gemm_entry *cache;
static size_t cache_len, cache_cap;

/* Row-major operand rows x cols with leading dimension ld (transposed:
 * stored cols x rows), batched when batch > 0 (batch stride 0: one matrix
 * broadcast over the batch). */
static dnnl_status_t matrix_desc(dnnl_memory_desc_t *md, dnnl_data_type_t dt,
                                 int64_t batch, int64_t stride, int64_t rows,
                                 int64_t cols, int trans, int64_t ld) {
  dnnl_dims_t dims = {0}, strides = {0};
  int n = 0;
  if (batch > 0) {
    dims[n] = stride ? batch : 1;
    strides[n++] = stride ? stride : rows * cols;
  }
  dims[n] = rows;
  strides[n++] = trans ? 1 : ld;
  dims[n] = cols;
  strides[n++] = trans ? ld : 1;
  return dnnl_memory_desc_init_by_strides(md, n, dims, dt, strides);
}

static int build(gemm_entry *e) {
  const gemm_key *k = &e->key;
  e->prim = NULL;
  if (matrix_desc(&e->src, dnnl_bf16, k->batch, k->strideA, k->M, k->K,
                  k->transA, k->lda) != dnnl_success ||
      matrix_desc(&e->wei, dnnl_bf16, k->batch, k->strideB, k->K, k->N,
                  k->transB, k->ldb) != dnnl_success ||
      matrix_desc(&e->dst, dnnl_f32, k->batch, k->strideC, k->M, k->N, 0,
                  k->ldc) != dnnl_success)
    return DSRT_OK; /* not expressible: the f32 backend takes it */
  dnnl_matmul_desc_t desc;
  if (dnnl_matmul_desc_init(&desc, &e->src, &e->wei, NULL, &e->dst) !=
      dnnl_success)
    return DSRT_OK;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  dnnl_primitive_desc_t pd = NULL;
  int ok = dnnl_primitive_attr_create(&attr) == dnnl_success;
  if (ok && k->alpha != 1.0f)
    ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha) ==
         dnnl_success;
  if (ok && k->accumulate) {
    ok = dnnl_post_ops_create(&ops) == dnnl_success &&
         dnnl_post_ops_append_sum(ops, 1.0f) == dnnl_success &&
         dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
  }
  if (ok && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) ==
                dnnl_success) {
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    /* The reference kernel is a scalar loop nest: sgemm on widened operands
     * is far faster. */
    if (impl && strncmp(impl, "ref", 3) != 0 &&
        dnnl_primitive_create(&e->prim, pd) != dnnl_success)
      e->prim = NULL;
  }
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (ops)
    dnnl_post_ops_destroy(ops);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return DSRT_OK;
}

/* The primitive for `k` (built on its first call; NULL when oneDNN has only
 * its reference kernel) and its operands' descriptors, copied out under the
 * lock: the cache may move when it grows. */
static int lookup(const gemm_key *k, dnnl_primitive_t *prim,
                  dnnl_memory_desc_t mds[3]) {
  pthread_mutex_lock(&cache_lock);
  gemm_entry *found = NULL;
  for (size_t i = 0; i < cache_len && !found; ++i)
    if (memcmp(&cache[i].key, k, sizeof *k) == 0)
      found = &cache[i];
  if (!found) {
    if (cache_len == cache_cap) {
      size_t cap = cache_cap ? 2 * cache_cap : 64;
      gemm_entry *grown = realloc(cache, cap * sizeof *grown);
      if (!grown) {
        pthread_mutex_unlock(&cache_lock);
        return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                         "dsrt_gemm_bf16: no memory for its kernel cache");
      }
      cache = grown;
      cache_cap = cap;
    }
    found = &cache[cache_len++];
    memset(found, 0, sizeof *found);
    found->key = *k;
    build(found);
  }
  *prim = found->prim;
  mds[0] = found->src;
  mds[1] = found->wei;
  mds[2] = found->dst;
  pthread_mutex_unlock(&cache_lock);
  return DSRT_OK;
}

/* Runs `k` on oneDNN; *done = 0 when oneDNN has no fast kernel for it. */
static int gemm_onednn(const gemm_key *k, const uint16_t *A, const uint16_t *B,
                       float *C, int *done) {
  dnnl_primitive_t prim = NULL;
  dnnl_memory_desc_t mds[3];
  *done = 0;
  int status = lookup(k, &prim, mds);
  if (status != DSRT_OK || !prim)
    return status;
  dnnl_memory_t mem[3] = {NULL, NULL, NULL};
  void *handles[3] = {(void *)A, (void *)B, C};
  int ok = 1;
  for (int i = 0; i < 3 && ok; ++i)
    ok = dnnl_memory_create(&mem[i], &mds[i], engine, handles[i]) ==
         dnnl_success;
  if (ok) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mem[0]},
                               {DNNL_ARG_WEIGHTS, mem[1]},
                               {DNNL_ARG_DST, mem[2]}};
    ok = dnnl_primitive_execute(prim, stream, 3, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
  }
  for (int i = 0; i < 3; ++i)
    if (mem[i])
      dnnl_memory_destroy(mem[i]);
  if (!ok)
    return dsrt_fail(DSRT_ERR_INTERNAL,
                     "dsrt_gemm_bf16: oneDNN failed on a %lld x %lld x %lld "
                     "product; set DSRT_BF16_GEMM=f32 to bypass it",
                     (long long)k->M, (long long)k->N, (long long)k->K);
  *done = 1;
  return DSRT_OK;
}

/*--- Entry points ---------------------------------------------------------*/

static int gemm_bf16(const char *fn, int transA, int transB, int64_t M,
                     int64_t N, int64_t K, float alpha, const uint16_t *A,
                     int64_t lda, int64_t strideA, const uint16_t *B,
                     int64_t ldb, int64_t strideB, float beta, float *C,
                     int64_t ldc, int64_t strideC, int64_t batch) {
  int status =
      dsrt_gemm_check_args(fn, transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (status != DSRT_OK)
    return status;
  if (batch > 0) {
    status = dsrt_gemm_check_batch(fn, M, N, ldc, strideA, strideB, strideC,
                                   batch);
    if (status != DSRT_OK)
      return status;
  }
  int which = dsrt_bf16_gemm_backend(NULL);
  if (which < 0)
    return backend_status;
  if (M == 0 || N == 0)
    return DSRT_OK;
  /* beta is 0 or 1 from the compiler; oneDNN's sum post-op adds C once, so
   * another beta goes the f32 way. K == 0 too (C = beta * C only). */
  if (which == DSRT_BF16_GEMM_ONEDNN && K > 0 &&
      (beta == 0.0f || beta == 1.0f)) {
    gemm_key k;
    memset(&k, 0, sizeof k); /* padding too: keys compare with memcmp */
    k.transA = !!transA;
    k.transB = !!transB;
    k.M = M;
    k.N = N;
    k.K = K;
    k.lda = lda;
    k.ldb = ldb;
    k.ldc = ldc;
    k.strideA = strideA;
    k.strideB = strideB;
    k.strideC = strideC;
    k.batch = batch;
    k.alpha = alpha;
    k.accumulate = beta != 0.0f;
    int done;
    status = gemm_onednn(&k, A, B, C, &done);
    if (status != DSRT_OK || done)
      return status;
  }
  return gemm_f32(transA, transB, M, N, K, alpha, A, lda, strideA, B, ldb,
                  strideB, beta, C, ldc, strideC, batch);
}

int dsrt_gemm_bf16(int transA, int transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const uint16_t *A, int64_t lda,
                   const uint16_t *B, int64_t ldb, float beta, float *C,
                   int64_t ldc) {
  return gemm_bf16("dsrt_gemm_bf16", transA, transB, M, N, K, alpha, A, lda, 0,
                   B, ldb, 0, beta, C, ldc, 0, 0);
}

int dsrt_gemm_bf16_strided_batched(int transA, int transB, int64_t M,
                                   int64_t N, int64_t K, float alpha,
                                   const uint16_t *A, int64_t lda,
                                   int64_t strideA, const uint16_t *B,
                                   int64_t ldb, int64_t strideB, float beta,
                                   float *C, int64_t ldc, int64_t strideC,
                                   int64_t batchCount) {
  if (batchCount == 0)
    return dsrt_gemm_check_batch("dsrt_gemm_bf16_strided_batched", M, N, ldc,
                                 strideA, strideB, strideC, batchCount);
  return gemm_bf16("dsrt_gemm_bf16_strided_batched", transA, transB, M, N, K,
                   alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                   strideC, batchCount);
}
