/*===- fake_cublas.c - a libcublas.so.13 computing on the host ------------===*
 *
 * The tests' stand-in for cuBLAS beside the fake driver (fake_cuda.c, whose
 * "device" memory is host memory): the same exported names and calling
 * conventions as cuBLAS's 64-bit GEMM API, computing column-major
 * C = alpha·op(A)·op(B) + beta·C naively on the host, so the row-major shim
 * over it (runtime/gpu/cublas.c) is checked against an independent oracle.
 * Each call is appended to DS_FAKE_CUDA_LOG with its stream; a GEMM returns
 * DS_FAKE_CUBLAS_STATUS when that is set.
 *
 *===-----------------------------------------------------------------------===*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static int handleToken;
static void *boundStream;

static void logCall(const char *what, int64_t m, int64_t n, int64_t k, int opA,
                    int opB, int64_t batch) {
  const char *path = getenv("DS_FAKE_CUDA_LOG");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f)
    return;
  fprintf(f, "%s m=%lld n=%lld k=%lld op=%c%c batch=%lld stream=%s\n", what,
          (long long)m, (long long)n, (long long)k, opA ? 'T' : 'N',
          opB ? 'T' : 'N', (long long)batch, boundStream ? "set" : "default");
  fclose(f);
}

static int injected(void) {
  const char *v = getenv("DS_FAKE_CUBLAS_STATUS");
  return v && *v ? atoi(v) : 0;
}

EXPORT int cublasCreate_v2(void **handle) {
  *handle = &handleToken;
  return 0;
}

EXPORT int cublasSetStream_v2(void *handle, void *stream) {
  if (handle != &handleToken)
    return 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
  boundStream = stream;
  return 0;
}

EXPORT const char *cublasGetStatusName(int status) {
  switch (status) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case 7:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case 13:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

/* Column-major element (i, j) of op(X), X stored with leading dim ld. */
static float at(const float *x, int64_t ld, int op, int64_t i, int64_t j) {
  return op ? x[j + i * ld] : x[i + j * ld];
}

static void gemm(int opA, int opB, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb,
                 float beta, float *c, int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (double)at(a, lda, opA, i, p) * at(b, ldb, opB, p, j);
      float *out = &c[i + j * ldc];
      *out = (float)(alpha * sum + (beta == 0 ? 0.0 : (double)beta * *out));
    }
}

EXPORT int cublasSgemm_v2_64(void *handle, int opA, int opB, int64_t m,
                             int64_t n, int64_t k, const float *alpha,
                             const float *a, int64_t lda, const float *b,
                             int64_t ldb, const float *beta, float *c,
                             int64_t ldc) {
  if (handle != &handleToken)
    return 1;
  logCall("cublasSgemm_v2_64", m, n, k, opA, opB, 1);
  if (injected())
    return injected();
  gemm(opA, opB, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
  return 0;
}

EXPORT int cublasSgemmStridedBatched_64(
    void *handle, int opA, int opB, int64_t m, int64_t n, int64_t k,
    const float *alpha, const float *a, int64_t lda, long long strideA,
    const float *b, int64_t ldb, long long strideB, const float *beta, float *c,
    int64_t ldc, long long strideC, int64_t batch) {
  if (handle != &handleToken)
    return 1;
  logCall("cublasSgemmStridedBatched_64", m, n, k, opA, opB, batch);
  if (injected())
    return injected();
  for (int64_t i = 0; i < batch; ++i)
    gemm(opA, opB, m, n, k, *alpha, a + i * strideA, lda, b + i * strideB, ldb,
         *beta, c + i * strideC, ldc);
  return 0;
}
