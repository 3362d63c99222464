/*===- driver.c - the CUDA driver API, loaded once with dlopen ------------===*
 *
 * libdsrt never links libcuda (see device.c): the entry points are resolved
 * here the first time a GPU step needs them, so a machine without a driver
 * loads libdsrt and fails only at the first device call, with one error
 * naming what is missing.
 *
 *===-----------------------------------------------------------------------===*/
#include "gpu/driver.h"

#include "core/error.h"
#include "dsrt/dsrt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static dsrt_cu_api api;
static void *context;
static int loadStatus = -1;
static char loadError[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Thread_local int contextCurrent;
static int (*ctxSetCurrent)(void *);

#define RESOLVE(field, name)                                                   \
  do {                                                                         \
    *(void **)&api.field = dlsym(lib, name);                                   \
    if (!api.field) {                                                          \
      snprintf(loadError, sizeof(loadError),                                   \
               "libcuda.so.1 lacks %s: the driver is older than CUDA 12 or "   \
               "not NVIDIA's (update the driver)",                             \
               name);                                                          \
      return;                                                                  \
    }                                                                          \
  } while (0)

static void load(void) {
  dsrt_cuda_info info;
  /* The probe names the missing piece: library, cuInit or device. */
  if (dsrt_cuda_probe(&info) != DSRT_OK) {
    snprintf(loadError, sizeof(loadError), "%s", info.problem);
    return;
  }
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(loadError, sizeof(loadError), "libcuda.so.1 does not load");
    return;
  }
  int (*deviceGet)(int *, int);
  int (*primaryCtxRetain)(void **, int);
  *(void **)&deviceGet = dlsym(lib, "cuDeviceGet");
  *(void **)&primaryCtxRetain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void **)&ctxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
  if (!deviceGet || !primaryCtxRetain || !ctxSetCurrent) {
    snprintf(loadError, sizeof(loadError),
             "libcuda.so.1 lacks the primary-context API (update the driver)");
    return;
  }
  RESOLVE(getErrorName, "cuGetErrorName");
  RESOLVE(moduleLoadData, "cuModuleLoadData");
  RESOLVE(moduleLoadDataEx, "cuModuleLoadDataEx");
  RESOLVE(moduleUnload, "cuModuleUnload");
  RESOLVE(moduleGetFunction, "cuModuleGetFunction");
  RESOLVE(launchKernel, "cuLaunchKernel");
  RESOLVE(streamCreate, "cuStreamCreate");
  RESOLVE(streamSynchronize, "cuStreamSynchronize");
  RESOLVE(streamDestroy, "cuStreamDestroy_v2");
  RESOLVE(streamWaitEvent, "cuStreamWaitEvent");
  RESOLVE(eventCreate, "cuEventCreate");
  RESOLVE(eventRecord, "cuEventRecord");
  RESOLVE(eventSynchronize, "cuEventSynchronize");
  RESOLVE(eventDestroy, "cuEventDestroy_v2");
  RESOLVE(memAlloc, "cuMemAlloc_v2");
  RESOLVE(memAllocManaged, "cuMemAllocManaged");
  RESOLVE(memFree, "cuMemFree_v2");
  RESOLVE(memcpyAsync, "cuMemcpyAsync");
  RESOLVE(memsetD32Async, "cuMemsetD32Async");
  RESOLVE(memsetD16Async, "cuMemsetD16Async");
  RESOLVE(memHostRegister, "cuMemHostRegister_v2");
  RESOLVE(memHostUnregister, "cuMemHostUnregister");
  int device = 0, rc;
  const char *name = "unknown CUresult";
  if ((rc = deviceGet(&device, 0)) != 0 ||
      (rc = primaryCtxRetain(&context, device)) != 0) {
    api.getErrorName(rc, &name);
    snprintf(loadError, sizeof(loadError),
             "GPU 0's context cannot be created: %s (%d)", name, rc);
    return;
  }
  loadStatus = DSRT_OK;
}

const dsrt_cu_api *dsrt_cu(void) {
  pthread_once(&once, load);
  if (loadStatus != DSRT_OK) {
    dsrt_fail(DSRT_ERR_UNSUPPORTED, "no usable GPU: %s", loadError);
    return NULL;
  }
  if (!contextCurrent) {
    int rc = ctxSetCurrent(context);
    if (rc != 0) {
      dsrt_cu_check(rc, "cuCtxSetCurrent");
      return NULL;
    }
    contextCurrent = 1;
  }
  return &api;
}

int dsrt_cu_check(int result, const char *call) {
  if (result == 0)
    return DSRT_OK;
  const char *name = NULL;
  if (!api.getErrorName || api.getErrorName(result, &name) != 0 || !name)
    name = "unknown CUresult";
  return dsrt_fail(DSRT_ERR_INTERNAL, "%s failed: %s (%d)", call, name, result);
}
