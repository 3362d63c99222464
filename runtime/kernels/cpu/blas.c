/*===- blas.c - dsrt_sgemm and its strided-batched form on OpenBLAS --------===*
 *
 * The fixed symbols the compiler's matmul rewrite calls. Arguments are
 * checked here (OpenBLAS's own xerbla prints and carries on), sizes are
 * int64_t in the ABI and narrowed to OpenBLAS's 32-bit blasint with a check.
 *
 *===-----------------------------------------------------------------------===*/
#include "core/error.h"
#include "core/parallel.h"
#include "dsrt/dsrt.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/gemm_args.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int fits_blasint(int64_t x) {
  return sizeof(blasint) >= sizeof(int64_t) || x <= (int64_t)INT_MAX;
}

static int check_gemm(const char *fn, int transA, int transB, int64_t M,
                      int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, const float *C,
                      int64_t ldc) {
  int status =
      dsrt_gemm_check_args(fn, transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (status != DSRT_OK)
    return status;
  if (!fits_blasint(M) || !fits_blasint(N) || !fits_blasint(K) ||
      !fits_blasint(lda) || !fits_blasint(ldb) || !fits_blasint(ldc))
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "%s: a size or leading dimension exceeds OpenBLAS's "
                     "32-bit integers",
                     fn);
  return DSRT_OK;
}

/* C = beta * C for the K == 0 case, which BLAS implementations disagree on. */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

static void gemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float beta, float *C, int64_t ldc) {
  if (M == 0 || N == 0)
    return;
  if (K == 0 || alpha == 0.0f) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
              (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C,
              (blasint)ldc);
}

/* A product across the threads as blocks of C, one single-threaded OpenBLAS
 * call per block (DSRT_SGEMM_THREADS=blocks), instead of OpenBLAS's own
 * threading of the whole call (the default). Blocks start at multiples of
 * BLOCK_ALIGN rows or columns, a multiple of every OpenBLAS micro-tile; the
 * bits are one call's on the AVX-512 cores, not on Haswell's or Zen's,
 * which sum a cut product in another order (as their own threading does). */
enum { BLOCK_ALIGN = 64 };

typedef struct {
  int transA, transB;
  int64_t M, N, K;
  float alpha;
  const float *A;
  int64_t lda;
  const float *B;
  int64_t ldb;
  float beta;
  float *C;
  int64_t ldc;
  int64_t blocks, units; /* blocks of `units` x BLOCK_ALIGN rows/columns */
  int byRows;
} block_job;

static void run_blocks(void *ctx, int64_t first, int64_t end) {
  const block_job *j = ctx;
  for (int64_t i = first; i < end; ++i) {
    int64_t lo = j->units * i / j->blocks * BLOCK_ALIGN;
    int64_t hi = j->units * (i + 1) / j->blocks * BLOCK_ALIGN;
    if (j->byRows) {
      if (hi > j->M)
        hi = j->M;
      if (lo >= hi)
        continue;
      const float *a = j->transA ? j->A + lo : j->A + lo * j->lda;
      gemm(j->transA, j->transB, hi - lo, j->N, j->K, j->alpha, a, j->lda, j->B,
           j->ldb, j->beta, j->C + lo * j->ldc, j->ldc);
    } else {
      if (hi > j->N)
        hi = j->N;
      if (lo >= hi)
        continue;
      const float *b = j->transB ? j->B + lo * j->ldb : j->B + lo;
      gemm(j->transA, j->transB, j->M, hi - lo, j->K, j->alpha, j->A, j->lda, b,
           j->ldb, j->beta, j->C + lo, j->ldc);
    }
  }
}

/* Read at each call (a few per layer), so a test can compare the two. */
static int split_blocks(void) {
  const char *v = getenv("DSRT_SGEMM_THREADS");
  return v && strcmp(v, "blocks") == 0;
}

int dsrt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda, const float *B,
               int64_t ldb, float beta, float *C, int64_t ldc) {
  int status =
      check_gemm("dsrt_sgemm", transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (status != DSRT_OK)
    return status;
  int threads = openblas_get_num_threads();
  int64_t rowUnits = M / BLOCK_ALIGN, colUnits = N / BLOCK_ALIGN;
  if (threads > 1 && split_blocks() && K > 0 && alpha != 0.0f &&
      (rowUnits >= threads || colUnits >= threads) &&
      (double)M * N * K >= (double)(1 << 21)) {
    block_job job = {transA, transB, M,    N,    K,   alpha, A, lda,
                     B,      ldb,    beta, C,    ldc, 0,     0, 0};
    job.byRows = M >= N ? rowUnits >= threads : colUnits < threads;
    job.units = job.byRows ? (M + BLOCK_ALIGN - 1) / BLOCK_ALIGN
                           : (N + BLOCK_ALIGN - 1) / BLOCK_ALIGN;
    job.blocks = threads;
    openblas_set_num_threads(1);
    dsrt_parallel_for_threads(run_blocks, &job, 0, job.blocks, threads);
    openblas_set_num_threads(threads);
    return DSRT_OK;
  }
  gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return DSRT_OK;
}

/* A batch's products across the threads, one whole product per iteration
 * on one BLAS thread: attention's per-head products are too small for
 * OpenBLAS to split well (each call forks and joins its threads), and each
 * product is then one single-threaded call, as with one thread, so the
 * bits are those of one thread on every OpenBLAS core. (OpenBLAS's own
 * threading of one product keeps them only on its AVX-512 cores: Haswell's
 * and Zen's kernels sum a threaded product in another order.) */
typedef struct {
  int transA, transB;
  int64_t M, N, K;
  float alpha;
  const float *A;
  int64_t lda, strideA;
  const float *B;
  int64_t ldb, strideB;
  float beta;
  float *C;
  int64_t ldc, strideC;
} batch_job;

static void run_batch(void *ctx, int64_t first, int64_t end) {
  const batch_job *j = ctx;
  for (int64_t b = first; b < end; ++b)
    gemm(j->transA, j->transB, j->M, j->N, j->K, j->alpha, j->A + b * j->strideA,
         j->lda, j->B + b * j->strideB, j->ldb, j->beta, j->C + b * j->strideC,
         j->ldc);
}

int dsrt_sgemm_strided_batched(int transA, int transB, int64_t M, int64_t N,
                               int64_t K, float alpha, const float *A,
                               int64_t lda, int64_t strideA, const float *B,
                               int64_t ldb, int64_t strideB, float beta,
                               float *C, int64_t ldc, int64_t strideC,
                               int64_t batchCount) {
  static const char fn[] = "dsrt_sgemm_strided_batched";
  int status = check_gemm(fn, transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (status != DSRT_OK)
    return status;
  status = dsrt_gemm_check_batch(fn, M, N, ldc, strideA, strideB, strideC,
                                 batchCount);
  if (status != DSRT_OK)
    return status;
  batch_job job = {transA, transB, M,       N,    K,    alpha, A,
                   lda,    strideA, B,  ldb,     strideB, beta, C,     ldc,
                   strideC};
  int threads = openblas_get_num_threads();
  if (threads > 1 && batchCount >= threads) {
    openblas_set_num_threads(1);
    dsrt_parallel_for_threads(run_batch, &job, 0, batchCount, threads);
    openblas_set_num_threads(threads);
  } else {
    run_batch(&job, 0, batchCount);
  }
  return DSRT_OK;
}

int dsrt_threads_set(int n) {
  if (n > 0) {
    openblas_set_num_threads(n);
#ifdef _OPENMP
    /* The optimizer kernels' OpenMP team gets the same share. */
    omp_set_num_threads(n);
#endif
  }
  return DSRT_OK;
}

int dsrt_threads_get(void) { return openblas_get_num_threads(); }
