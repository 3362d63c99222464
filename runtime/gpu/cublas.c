/*===- cublas.c - dsrt_cuda_sgemm on cuBLAS, loaded with dlopen -----------===*
 *
 * The GPU step's contractions: the row-major contract of dsrt_sgemm (so the
 * compiled code calls either with the same arguments) on cuBLAS's 64-bit
 * column-major API. A row-major C = op(A)·op(B) is, read column-major,
 * Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS gets B and A swapped, each with its own
 * transpose flag, and M and N swapped. One handle per process, bound to the
 * ds stream, so a GEMM runs in program order with the kernels around it.
 * libcublas is dlopen'd (like the driver and NCCL): nothing links it.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include "core/error.h"
#include "kernels/gemm_args.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*CublasCreate)(void **);
typedef int (*CublasSetStream)(void *, void *);
typedef const char *(*CublasStatusName)(int);
typedef int (*CublasSgemm64)(void *, int, int, int64_t, int64_t, int64_t,
                             const float *, const float *, int64_t,
                             const float *, int64_t, const float *, float *,
                             int64_t);
typedef int (*CublasSgemmStridedBatched64)(void *, int, int, int64_t, int64_t,
                                           int64_t, const float *,
                                           const float *, int64_t, long long,
                                           const float *, int64_t, long long,
                                           const float *, float *, int64_t,
                                           long long, int64_t);

static struct {
  CublasCreate create;
  CublasSetStream setStream;
  CublasStatusName statusName;
  CublasSgemm64 sgemm;
  CublasSgemmStridedBatched64 sgemmStridedBatched;
  void *handle;
} blas;
static int loadStatus = -1;
static char loadError[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The soname first (LD_LIBRARY_PATH, the loader's cache), then the toolkit. */
static void *openCublas(void) {
  void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib)
    return lib;
  const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                         "/usr/local/cuda"};
  for (size_t i = 0; i < sizeof(homes) / sizeof(homes[0]) && !lib; ++i) {
    if (!homes[i] || !*homes[i])
      continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/lib64/libcublas.so.13", homes[i]);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  return lib;
}

static void load(void) {
  void *lib = openCublas();
  if (!lib) {
    snprintf(loadError, sizeof(loadError),
             "libcublas.so.13 does not load (install cuBLAS 13, or put its "
             "directory on LD_LIBRARY_PATH): %s",
             dlerror());
    return;
  }
  *(void **)&blas.create = dlsym(lib, "cublasCreate_v2");
  *(void **)&blas.setStream = dlsym(lib, "cublasSetStream_v2");
  *(void **)&blas.statusName = dlsym(lib, "cublasGetStatusName");
  *(void **)&blas.sgemm = dlsym(lib, "cublasSgemm_v2_64");
  *(void **)&blas.sgemmStridedBatched =
      dlsym(lib, "cublasSgemmStridedBatched_64");
  if (!blas.create || !blas.setStream || !blas.sgemm ||
      !blas.sgemmStridedBatched) {
    snprintf(loadError, sizeof(loadError),
             "libcublas.so.13 lacks the 64-bit GEMM API "
             "(cublasSgemm_v2_64): cuBLAS 12 or later is needed");
    return;
  }
  void *stream = NULL;
  if (dsrt_cuda_stream(&stream) != DSRT_OK) {
    snprintf(loadError, sizeof(loadError), "%s", dsrt_last_error());
    return;
  }
  int rc = blas.create(&blas.handle);
  if (rc == 0)
    rc = blas.setStream(blas.handle, stream);
  if (rc != 0) {
    snprintf(loadError, sizeof(loadError), "cuBLAS does not start: %s (%d)",
             blas.statusName ? blas.statusName(rc) : "status", rc);
    return;
  }
  loadStatus = DSRT_OK;
}

static int ready(void) {
  pthread_once(&once, load);
  if (loadStatus != DSRT_OK)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED, "GPU GEMMs: %s", loadError);
  return DSRT_OK;
}

static int status(int rc, const char *fn) {
  if (rc == 0)
    return DSRT_OK;
  return dsrt_fail(DSRT_ERR_INTERNAL, "%s: cuBLAS failed: %s (%d)", fn,
                   blas.statusName ? blas.statusName(rc) : "status", rc);
}

enum { kOpN = 0, kOpT = 1 };

int dsrt_cuda_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc) {
  int s = dsrt_gemm_check_args("dsrt_cuda_sgemm", transA, transB, M, N, K, A,
                               lda, B, ldb, C, ldc);
  if (s != DSRT_OK)
    return s;
  if (M == 0 || N == 0)
    return DSRT_OK;
  if ((s = ready()) != DSRT_OK)
    return s;
  return status(blas.sgemm(blas.handle, transB ? kOpT : kOpN,
                           transA ? kOpT : kOpN, N, M, K, &alpha, B, ldb, A,
                           lda, &beta, C, ldc),
                "dsrt_cuda_sgemm");
}

int dsrt_cuda_sgemm_strided_batched(int transA, int transB, int64_t M,
                                    int64_t N, int64_t K, float alpha,
                                    const float *A, int64_t lda,
                                    int64_t strideA, const float *B,
                                    int64_t ldb, int64_t strideB, float beta,
                                    float *C, int64_t ldc, int64_t strideC,
                                    int64_t batchCount) {
  const char *fn = "dsrt_cuda_sgemm_strided_batched";
  int s =
      dsrt_gemm_check_args(fn, transA, transB, M, N, K, A, lda, B, ldb, C, ldc);
  if (s == DSRT_OK)
    s = dsrt_gemm_check_batch(fn, M, N, ldc, strideA, strideB, strideC,
                              batchCount);
  if (s != DSRT_OK)
    return s;
  if (M == 0 || N == 0 || batchCount == 0)
    return DSRT_OK;
  if ((s = ready()) != DSRT_OK)
    return s;
  return status(blas.sgemmStridedBatched(blas.handle, transB ? kOpT : kOpN,
                                         transA ? kOpT : kOpN, N, M, K, &alpha,
                                         B, ldb, strideB, A, lda, strideA,
                                         &beta, C, ldc, strideC, batchCount),
                fn);
}
