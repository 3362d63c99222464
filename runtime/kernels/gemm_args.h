/*===- gemm_args.h - the argument rules of every dsrt_*sgemm -------------===*
 *
 * Not part of the ABI. The CPU (OpenBLAS) and GPU (cuBLAS) GEMMs share one
 * row-major contract, so one check, with one wording, for both.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_KERNELS_GEMM_ARGS_H
#define DSRT_KERNELS_GEMM_ARGS_H

#include <stdint.h>

/* DSRT_OK, or DSRT_ERR_INVALID_ARGUMENT naming `fn` and the bad argument:
 * negative sizes, leading dimensions below the rows they hold, NULL
 * operands of a non-empty product. */
int dsrt_gemm_check_args(const char *fn, int transA, int transB, int64_t M,
                         int64_t N, int64_t K, const void *A, int64_t lda,
                         const void *B, int64_t ldb, const void *C,
                         int64_t ldc);
/* The strided-batched form's extra rules: non-negative count and strides,
 * C matrices that do not overlap. */
int dsrt_gemm_check_batch(const char *fn, int64_t M, int64_t N, int64_t ldc,
                          int64_t strideA, int64_t strideB, int64_t strideC,
                          int64_t batchCount);

#endif /* DSRT_KERNELS_GEMM_ARGS_H */
