/*===- fake_cuda.c - a libcuda.so.1 with the driver API's ABI, no GPU -----===*
 *
 * The tests' stand-in for the NVIDIA driver on machines without one: the
 * same exported names and calling conventions as libcuda's driver API, with
 * the answers a test asks for through the environment:
 *   DS_FAKE_CUDA_DEVICES  devices cuDeviceGetCount reports (default 1),
 *   DS_FAKE_CUDA_INIT     the CUresult cuInit returns (default 0),
 *   DS_FAKE_CUDA_SM       compute capability as "major.minor" (default 9.0).
 *   DS_FAKE_CUDA_LOG      a file each call of the execution API is
 *                         appended to, one line each, for call-order tests,
 *   DS_FAKE_CUDA_FAIL     "cuName=code": that entry point returns code.
 * Each device is an "NVIDIA H200" with 132 SMs and 143771 MiB. "Device"
 * memory is host memory (cuMemAlloc is malloc, copies are memmove), so a
 * host-side shim such as the cuBLAS one can be checked numerically against
 * a fake library that computes on the host; modules load any image and
 * kernels launch without running.
 *
 *===-----------------------------------------------------------------------===*/
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int envInt(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static int initialized;

EXPORT int cuInit(unsigned flags) {
  (void)flags;
  int rc = envInt("DS_FAKE_CUDA_INIT", 0);
  initialized = rc == 0;
  return rc;
}

EXPORT int cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}

/* CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_INVALID_DEVICE = 101. */
EXPORT int cuDeviceGetCount(int *count) {
  if (!initialized)
    return 3;
  *count = envInt("DS_FAKE_CUDA_DEVICES", 1);
  return 0;
}

EXPORT int cuDeviceGet(int *device, int ordinal) {
  if (!initialized)
    return 3;
  if (ordinal < 0 || ordinal >= envInt("DS_FAKE_CUDA_DEVICES", 1))
    return 101;
  *device = ordinal;
  return 0;
}

EXPORT int cuDeviceGetName(char *name, int len, int device) {
  (void)device;
  snprintf(name, (size_t)len, "NVIDIA H200");
  return 0;
}

EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  int major = 9, minor = 0;
  const char *sm = getenv("DS_FAKE_CUDA_SM");
  if (sm)
    sscanf(sm, "%d.%d", &major, &minor);
  switch (attribute) {
  case 16: /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    *value = 132;
    return 0;
  case 75: /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    *value = major;
    return 0;
  case 76: /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
    *value = minor;
    return 0;
  }
  return 1; /* CUDA_ERROR_INVALID_VALUE */
}

EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  (void)device;
  *bytes = (size_t)143771 << 20;
  return 0;
}

EXPORT int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case 0:
    *name = "CUDA_SUCCESS";
    return 0;
  case 3:
    *name = "CUDA_ERROR_NOT_INITIALIZED";
    return 0;
  case 2:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return 0;
  case 100:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case 209:
    *name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    return 0;
  case 719:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return 0;
  case 999:
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
  }
  return 1;
}

/*--- The execution API: contexts, streams, modules, memory ---------------*/

static void logCall(const char *fmt, ...) {
  const char *path = getenv("DS_FAKE_CUDA_LOG");
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "a");
  if (!f)
    return;
  va_list args;
  va_start(args, fmt);
  vfprintf(f, fmt, args);
  va_end(args);
  fputc('\n', f);
  fclose(f);
}

/* DS_FAKE_CUDA_FAIL=cuName=code makes cuName return code. */
static int injected(const char *name) {
  const char *spec = getenv("DS_FAKE_CUDA_FAIL");
  size_t n = strlen(name);
  if (spec && strncmp(spec, name, n) == 0 && spec[n] == '=')
    return atoi(spec + n + 1);
  return 0;
}

#define ENTER(name)                                                            \
  do {                                                                         \
    if (!initialized)                                                          \
      return 3;                                                                \
    int rc_ = injected(name);                                                  \
    if (rc_)                                                                   \
      return rc_;                                                              \
  } while (0)

static int contextToken, streamTokens[64], moduleTokens[64], eventToken;
static int streamsMade, modulesMade;

EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int device) {
  ENTER("cuDevicePrimaryCtxRetain");
  (void)device;
  *ctx = &contextToken;
  return 0;
}

EXPORT int cuCtxSetCurrent(void *ctx) {
  ENTER("cuCtxSetCurrent");
  return ctx == &contextToken ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}

EXPORT int cuStreamCreate(void **stream, unsigned flags) {
  ENTER("cuStreamCreate");
  *stream = &streamTokens[streamsMade++ % 64];
  logCall("cuStreamCreate flags=%u -> stream%d", flags,
          (int)((int *)*stream - streamTokens));
  return 0;
}

EXPORT int cuStreamSynchronize(void *stream) {
  ENTER("cuStreamSynchronize");
  logCall("cuStreamSynchronize stream%d", (int)((int *)stream - streamTokens));
  return 0;
}

EXPORT int cuStreamDestroy_v2(void *stream) {
  ENTER("cuStreamDestroy_v2");
  logCall("cuStreamDestroy stream%d", (int)((int *)stream - streamTokens));
  return 0;
}

EXPORT int cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  ENTER("cuStreamWaitEvent");
  (void)stream, (void)event, (void)flags;
  return 0;
}

EXPORT int cuEventCreate(void **event, unsigned flags) {
  ENTER("cuEventCreate");
  (void)flags;
  *event = &eventToken;
  return 0;
}

EXPORT int cuEventRecord(void *event, void *stream) {
  ENTER("cuEventRecord");
  (void)event, (void)stream;
  return 0;
}

EXPORT int cuEventSynchronize(void *event) {
  ENTER("cuEventSynchronize");
  (void)event;
  return 0;
}

EXPORT int cuEventDestroy_v2(void *event) {
  ENTER("cuEventDestroy_v2");
  (void)event;
  return 0;
}

EXPORT int cuModuleLoadData(void **module, const void *image) {
  ENTER("cuModuleLoadData");
  const unsigned char *p = image;
  *module = &moduleTokens[modulesMade++ % 64];
  /* fatbin magic 0xBA55ED50, ELF (cubin) "\x7fELF", PTX text. */
  uint32_t magic;
  memcpy(&magic, p, 4);
  logCall("cuModuleLoadData %s -> module%d",
          magic == 0xBA55ED50u                           ? "fatbin"
          : (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L') ? "cubin"
                                                         : "other",
          (int)((int *)*module - moduleTokens));
  return 0;
}

EXPORT int cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                              int *options, void **values) {
  ENTER("cuModuleLoadDataEx");
  (void)n, (void)options, (void)values;
  return cuModuleLoadData(module, image);
}

EXPORT int cuModuleUnload(void *module) {
  ENTER("cuModuleUnload");
  (void)module;
  return 0;
}

EXPORT int cuModuleGetFunction(void **function, void *module,
                               const char *name) {
  ENTER("cuModuleGetFunction");
  *function = (void *)name;
  logCall("cuModuleGetFunction module%d %s",
          (int)((int *)module - moduleTokens), name);
  return 0;
}

EXPORT int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned smem,
                          void *stream, void **params, void **extra) {
  ENTER("cuLaunchKernel");
  (void)params, (void)extra;
  logCall("cuLaunchKernel %s grid=%ux%ux%u block=%ux%ux%u smem=%u stream%d",
          (const char *)function, gx, gy, gz, bx, by, bz, smem,
          stream ? (int)((int *)stream - streamTokens) : -1);
  return 0;
}

EXPORT int cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
  ENTER("cuMemAlloc_v2");
  void *p = malloc(bytes);
  if (!p)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *ptr = (unsigned long long)(uintptr_t)p;
  logCall("cuMemAlloc %zu", bytes);
  return 0;
}

EXPORT int cuMemAllocManaged(unsigned long long *ptr, size_t bytes,
                             unsigned flags) {
  (void)flags;
  return cuMemAlloc_v2(ptr, bytes);
}

EXPORT int cuMemFree_v2(unsigned long long ptr) {
  ENTER("cuMemFree_v2");
  free((void *)(uintptr_t)ptr);
  logCall("cuMemFree");
  return 0;
}

EXPORT int cuMemcpyAsync(unsigned long long dst, unsigned long long src,
                         size_t bytes, void *stream) {
  ENTER("cuMemcpyAsync");
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  logCall("cuMemcpyAsync %zu stream%d", bytes,
          stream ? (int)((int *)stream - streamTokens) : -1);
  return 0;
}

EXPORT int cuMemsetD32Async(unsigned long long dst, unsigned value,
                            size_t count, void *stream) {
  ENTER("cuMemsetD32Async");
  (void)stream;
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return 0;
}

EXPORT int cuMemsetD16Async(unsigned long long dst, unsigned short value,
                            size_t count, void *stream) {
  ENTER("cuMemsetD16Async");
  (void)stream;
  uint16_t *p = (uint16_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return 0;
}

EXPORT int cuMemHostRegister_v2(void *ptr, size_t bytes, unsigned flags) {
  ENTER("cuMemHostRegister_v2");
  (void)ptr, (void)bytes, (void)flags;
  return 0;
}

EXPORT int cuMemHostUnregister(void *ptr) {
  ENTER("cuMemHostUnregister");
  (void)ptr;
  return 0;
}
