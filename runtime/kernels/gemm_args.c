/*===- gemm_args.c - the argument rules of every dsrt_*sgemm -------------===*/
#include "kernels/gemm_args.h"

#include "core/error.h"
#include "dsrt/dsrt.h"

int dsrt_gemm_check_args(const char *fn, int transA, int transB, int64_t M,
                         int64_t N, int64_t K, const void *A, int64_t lda,
                         const void *B, int64_t ldb, const void *C,
                         int64_t ldc) {
  if (M < 0 || N < 0 || K < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: negative size M=%lld N=%lld K=%lld", fn, (long long)M,
                     (long long)N, (long long)K);
  int64_t colsA = transA ? M : K, colsB = transB ? K : N;
  if (lda < (colsA > 1 ? colsA : 1))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: lda=%lld < %lld (columns of %sA)", fn, (long long)lda,
                     (long long)colsA, transA ? "stored " : "");
  if (ldb < (colsB > 1 ? colsB : 1))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: ldb=%lld < %lld (columns of %sB)", fn, (long long)ldb,
                     (long long)colsB, transB ? "stored " : "");
  if (ldc < (N > 1 ? N : 1))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: ldc=%lld < N=%lld", fn,
                     (long long)ldc, (long long)N);
  if (M > 0 && N > 0 && !C)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: C is NULL", fn);
  if (M > 0 && N > 0 && K > 0 && (!A || !B))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: A or B is NULL", fn);
  return DSRT_OK;
}

int dsrt_gemm_check_batch(const char *fn, int64_t M, int64_t N, int64_t ldc,
                          int64_t strideA, int64_t strideB, int64_t strideC,
                          int64_t batchCount) {
  if (batchCount < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: batchCount=%lld < 0", fn,
                     (long long)batchCount);
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: negative batch stride (A %lld, B %lld, C %lld)", fn,
                     (long long)strideA, (long long)strideB,
                     (long long)strideC);
  if (batchCount > 1 && M > 0 && N > 0 && strideC < (M - 1) * ldc + N)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: strideC=%lld makes the batch's C matrices overlap "
                     "(each spans %lld elements)",
                     fn, (long long)strideC, (long long)((M - 1) * ldc + N));
  return DSRT_OK;
}
