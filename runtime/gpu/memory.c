/*===- memory.c - the ds stream and device memory for the host side -------===*
 *
 * What the driver (parameters, optimizer state, the workspace) and the shims
 * use: one stream per process, on which every kernel, GEMM and optimizer
 * update runs in program order, and device allocations and copies that
 * report failures as dsrt statuses instead of ending the job. The stream is
 * a blocking one, so work cudart puts on the legacy default stream (the
 * CUDA optimizer's) is ordered with it too.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include "core/error.h"
#include "gpu/driver.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static void *stream;
static int streamStatus = -1;
static char streamError[512];
static pthread_mutex_t streamLock = PTHREAD_MUTEX_INITIALIZER;

int dsrt_cuda_stream(void **out) {
  if (!out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_cuda_stream: out is NULL");
  pthread_mutex_lock(&streamLock);
  if (streamStatus < 0) {
    const dsrt_cu_api *api = dsrt_cu();
    if (!api)
      streamStatus = DSRT_ERR_UNSUPPORTED;
    else
      streamStatus =
          dsrt_cu_check(api->streamCreate(&stream, 0 /* CU_STREAM_DEFAULT */),
                        "cuStreamCreate");
    if (streamStatus != DSRT_OK)
      snprintf(streamError, sizeof(streamError), "%s", dsrt_last_error());
  }
  int status = streamStatus;
  pthread_mutex_unlock(&streamLock);
  if (status != DSRT_OK)
    return dsrt_fail(status, "%s", streamError);
  /* dsrt_cu makes the context current on this thread. */
  if (!dsrt_cu())
    return DSRT_ERR_UNSUPPORTED;
  *out = stream;
  return DSRT_OK;
}

int dsrt_cuda_malloc(void **out, int64_t bytes) {
  if (!out || bytes < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_cuda_malloc: out is NULL or bytes < 0");
  *out = NULL;
  if (bytes == 0)
    return DSRT_OK;
  const dsrt_cu_api *api = dsrt_cu();
  if (!api)
    return DSRT_ERR_UNSUPPORTED;
  dsrt_cu_ptr ptr = 0;
  int rc = api->memAlloc(&ptr, (size_t)bytes);
  if (rc == 2 /* CUDA_ERROR_OUT_OF_MEMORY */)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "GPU 0 is out of memory allocating %lld bytes (lower "
                     "the micro-batch, raise the ZeRO stage or use "
                     "activation checkpointing)",
                     (long long)bytes);
  if (rc != 0)
    return dsrt_cu_check(rc, "cuMemAlloc");
  *out = (void *)(uintptr_t)ptr;
  return DSRT_OK;
}

int dsrt_cuda_free(void *ptr) {
  if (!ptr)
    return DSRT_OK;
  const dsrt_cu_api *api = dsrt_cu();
  if (!api)
    return DSRT_ERR_UNSUPPORTED;
  return dsrt_cu_check(api->memFree((dsrt_cu_ptr)(uintptr_t)ptr), "cuMemFree");
}

int dsrt_cuda_memcpy(void *dst, const void *src, int64_t bytes) {
  if (bytes < 0 || (bytes && (!dst || !src)))
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_cuda_memcpy: NULL pointer or bytes < 0");
  if (bytes == 0)
    return DSRT_OK;
  void *s = NULL;
  int status = dsrt_cuda_stream(&s);
  if (status != DSRT_OK)
    return status;
  const dsrt_cu_api *api = dsrt_cu();
  /* Unified addressing: the driver tells host from device pointers. */
  status = dsrt_cu_check(api->memcpyAsync((dsrt_cu_ptr)(uintptr_t)dst,
                                          (dsrt_cu_ptr)(uintptr_t)src,
                                          (size_t)bytes, s),
                         "cuMemcpyAsync");
  if (status != DSRT_OK)
    return status;
  return dsrt_cu_check(api->streamSynchronize(s), "cuStreamSynchronize");
}

int dsrt_cuda_synchronize(void) {
  void *s = NULL;
  int status = dsrt_cuda_stream(&s);
  if (status != DSRT_OK)
    return status;
  return dsrt_cu_check(dsrt_cu()->streamSynchronize(s), "cuStreamSynchronize");
}

/*--- For compiled code, which has no error path: failures end the job ---*/

/* Managed memory: the GPU's, addressable by the host (the step's few host
 * scalars are read and written in place). */
static void *managedAlloc(int64_t bytes, const char *what) {
  if (bytes <= 0)
    bytes = 1; /* malloc(0) may return a unique pointer; so does this */
  const dsrt_cu_api *api = dsrt_cu();
  if (!api) {
    dsrt_check(DSRT_ERR_UNSUPPORTED, what);
    return NULL;
  }
  dsrt_cu_ptr ptr = 0;
  int rc = api->memAllocManaged(&ptr, (size_t)bytes, 1 /* ATTACH_GLOBAL */);
  if (rc == 2)
    dsrt_check(dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                         "GPU 0 is out of memory allocating %lld bytes",
                         (long long)bytes),
               what);
  else if (rc != 0)
    dsrt_check(dsrt_cu_check(rc, "cuMemAllocManaged"), what);
  return (void *)(uintptr_t)ptr;
}

void *dsrt_cuda_managed_alloc(int64_t bytes) {
  return managedAlloc(bytes, "allocating a GPU buffer");
}

void dsrt_cuda_managed_free(void *ptr) {
  if (ptr)
    dsrt_check(dsrt_cuda_free(ptr), "freeing a GPU buffer");
}

void *dsrt_cuda_workspace_alloc(int64_t bytes) {
  if (bytes < 0) {
    dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
              "dsrt_cuda_workspace_alloc: %lld bytes", (long long)bytes);
    return NULL;
  }
  const dsrt_cu_api *api = dsrt_cu();
  if (!api)
    return NULL;
  dsrt_cu_ptr ptr = 0;
  int rc = api->memAllocManaged(&ptr, (size_t)(bytes ? bytes : 1), 1);
  if (rc == 2) {
    dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
              "the step's workspace of %lld bytes does not fit GPU 0 (lower "
              "the micro-batch, use activation checkpointing or a higher "
              "ZeRO stage)",
              (long long)bytes);
    return NULL;
  }
  if (rc != 0) {
    dsrt_cu_check(rc, "cuMemAllocManaged (the step's workspace)");
    return NULL;
  }
  return (void *)(uintptr_t)ptr;
}

void dsrt_cuda_workspace_free(void *workspace, int64_t bytes) {
  (void)bytes;
  if (workspace)
    dsrt_cuda_free(workspace);
}

void dsrt_cuda_host_sync(void) {
  dsrt_check(dsrt_cuda_synchronize(), "waiting for the GPU");
}
