/*===- mgpu.c - the mgpu* functions MLIR's GPU host lowering calls --------===*
 *
 * gpu-to-llvm turns each gpu.launch_func into calls of mgpuModuleLoad (in a
 * global constructor, when the step's code is loaded), mgpuModuleGetFunction
 * and mgpuLaunchKernel, and gpu.alloc/memcpy/memset into mgpuMem*. Upstream
 * provides them in a library Debian does not ship; these are written over
 * the dlopen'd driver (driver.c), so the step's code loads everywhere and
 * the first device call on a machine without a GPU ends the job with one
 * error naming what is missing.
 *
 * Every "stream" the lowering creates is the process's one ds stream
 * (dsrt_cuda_stream): kernels, cuBLAS calls and the CUDA optimizer run in
 * program order on it, and destroying it is a no-op.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include "core/error.h"
#include "gpu/driver.h"
#include "gpu/mgpu.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MGPU_API DSRT_API

/* Compiled code has no error path: a failed device call ends the job, as a
 * failed collective does (dsrt_check). */
static void check(int result, const char *call) {
  if (result != 0)
    dsrt_check(dsrt_cu_check(result, call), "a GPU call");
}

static const dsrt_cu_api *cu(void) {
  const dsrt_cu_api *api = dsrt_cu();
  if (!api)
    dsrt_check(DSRT_ERR_UNSUPPORTED, "running the GPU step");
  return api;
}

/* The constructor loading a module runs when the step's code is dlopen'd,
 * before anything could report an error: a failure is remembered and
 * reported at the module's first use. */
static char moduleError[512];

MGPU_API void *mgpuModuleLoad(void *data, size_t bytes) {
  (void)bytes;
  const dsrt_cu_api *api = dsrt_cu();
  if (!api) {
    snprintf(moduleError, sizeof(moduleError), "%s", dsrt_last_error());
    return NULL;
  }
  void *module = NULL;
  int rc = api->moduleLoadData(&module, data);
  if (rc != 0) {
    dsrt_cu_check(rc, "cuModuleLoadData (the step's sm_* device code; "
                      "compiled for another GPU?)");
    snprintf(moduleError, sizeof(moduleError), "%s", dsrt_last_error());
    return NULL;
  }
  return module;
}

/* format=isa: PTX, compiled by the driver at load. */
MGPU_API void *mgpuModuleLoadJIT(void *data, int optLevel) {
  const dsrt_cu_api *api = dsrt_cu();
  if (!api) {
    snprintf(moduleError, sizeof(moduleError), "%s", dsrt_last_error());
    return NULL;
  }
  int options[1] = {7 /* CU_JIT_OPTIMIZATION_LEVEL */};
  void *values[1] = {(void *)(intptr_t)optLevel};
  void *module = NULL;
  int rc = api->moduleLoadDataEx(&module, data, 1, options, values);
  if (rc != 0) {
    dsrt_cu_check(rc, "cuModuleLoadDataEx (JIT of the step's PTX)");
    snprintf(moduleError, sizeof(moduleError), "%s", dsrt_last_error());
    return NULL;
  }
  return module;
}

MGPU_API void mgpuModuleUnload(void *module) {
  /* At exit the context may already be gone: nothing to report then. */
  const dsrt_cu_api *api = module ? dsrt_cu() : NULL;
  if (api)
    api->moduleUnload(module);
}

MGPU_API void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module)
    dsrt_check(dsrt_fail(DSRT_ERR_UNSUPPORTED,
                         "the step's device code is not loaded (%s)",
                         moduleError[0] ? moduleError : "unknown reason"),
               "running the GPU step");
  void *function = NULL;
  check(cu()->moduleGetFunction(&function, module, name),
        "cuModuleGetFunction");
  return function;
}

MGPU_API void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy,
                               intptr_t gz, intptr_t bx, intptr_t by,
                               intptr_t bz, int32_t smem, void *stream,
                               void **params, void **extra, size_t nparams) {
  (void)nparams;
  check(cu()->launchKernel(function, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                           (unsigned)bx, (unsigned)by, (unsigned)bz,
                           (unsigned)smem, stream, params, extra),
        "cuLaunchKernel");
}

MGPU_API void *mgpuStreamCreate(void) {
  void *stream = NULL;
  if (dsrt_cuda_stream(&stream) != DSRT_OK)
    dsrt_check(DSRT_ERR_UNSUPPORTED, "running the GPU step");
  return stream;
}

MGPU_API void mgpuStreamDestroy(void *stream) {
  void *shared = NULL;
  if (dsrt_cuda_stream(&shared) == DSRT_OK && stream == shared)
    return;
  check(cu()->streamDestroy(stream), "cuStreamDestroy");
}

MGPU_API void mgpuStreamSynchronize(void *stream) {
  check(cu()->streamSynchronize(stream), "cuStreamSynchronize");
}

MGPU_API void mgpuStreamWaitEvent(void *stream, void *event) {
  check(cu()->streamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

MGPU_API void *mgpuEventCreate(void) {
  void *event = NULL;
  check(cu()->eventCreate(&event, 2 /* CU_EVENT_DISABLE_TIMING */),
        "cuEventCreate");
  return event;
}

MGPU_API void mgpuEventDestroy(void *event) {
  check(cu()->eventDestroy(event), "cuEventDestroy");
}

MGPU_API void mgpuEventSynchronize(void *event) {
  check(cu()->eventSynchronize(event), "cuEventSynchronize");
}

MGPU_API void mgpuEventRecord(void *event, void *stream) {
  check(cu()->eventRecord(event, stream), "cuEventRecord");
}

MGPU_API void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t hostShared) {
  (void)stream;
  dsrt_cu_ptr ptr = 0;
  if (bytes == 0)
    return NULL;
  if (hostShared)
    check(cu()->memAllocManaged(&ptr, bytes, 1 /* CU_MEM_ATTACH_GLOBAL */),
          "cuMemAllocManaged");
  else
    check(cu()->memAlloc(&ptr, bytes), "cuMemAlloc");
  return (void *)(uintptr_t)ptr;
}

MGPU_API void mgpuMemFree(void *ptr, void *stream) {
  (void)stream;
  if (ptr)
    check(cu()->memFree((dsrt_cu_ptr)(uintptr_t)ptr), "cuMemFree");
}

MGPU_API void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  check(cu()->memcpyAsync((dsrt_cu_ptr)(uintptr_t)dst,
                          (dsrt_cu_ptr)(uintptr_t)src, bytes, stream),
        "cuMemcpyAsync");
}

MGPU_API void mgpuMemset32(void *dst, unsigned value, size_t count,
                           void *stream) {
  check(cu()->memsetD32Async((dsrt_cu_ptr)(uintptr_t)dst, value, count, stream),
        "cuMemsetD32Async");
}

MGPU_API void mgpuMemset16(void *dst, unsigned short value, size_t count,
                           void *stream) {
  check(cu()->memsetD16Async((dsrt_cu_ptr)(uintptr_t)dst, value, count, stream),
        "cuMemsetD16Async");
}

MGPU_API void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  check(cu()->memHostRegister(ptr, bytes, 0), "cuMemHostRegister");
}

MGPU_API void mgpuMemHostUnregister(void *ptr) {
  check(cu()->memHostUnregister(ptr), "cuMemHostUnregister");
}

/* A ranked memref descriptor: {allocated, aligned, offset, sizes[rank],
 * strides[rank]}; the registered range is the whole contiguous buffer. */
static void descriptorRange(int64_t rank, const int64_t *desc,
                            int64_t elementBytes, char **start,
                            uint64_t *bytes) {
  char *aligned = (char *)(intptr_t)desc[1];
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= desc[3 + i];
  *start = aligned + desc[2] * elementBytes;
  *bytes = (uint64_t)(count * elementBytes);
}

MGPU_API void mgpuMemHostRegisterMemRef(int64_t rank, const int64_t *desc,
                                        int64_t elementBytes) {
  char *start;
  uint64_t bytes;
  descriptorRange(rank, desc, elementBytes, &start, &bytes);
  mgpuMemHostRegister(start, bytes);
}

MGPU_API void mgpuMemHostUnregisterMemRef(int64_t rank, const int64_t *desc,
                                          int64_t elementBytes) {
  char *start;
  uint64_t bytes;
  descriptorRange(rank, desc, elementBytes, &start, &bytes);
  mgpuMemHostUnregister(start);
}

MGPU_API void mgpuSetDefaultDevice(int32_t device) {
  if (device != 0)
    dsrt_check(dsrt_fail(DSRT_ERR_UNSUPPORTED,
                         "mgpuSetDefaultDevice(%d): a ds process drives GPU 0 "
                         "of its CUDA_VISIBLE_DEVICES",
                         device),
               "running the GPU step");
}
