/*===- fake_cuda.c - a libcuda.so.1 with the driver API's ABI, no GPU -----===*
 *
 * The tests' stand-in for the NVIDIA driver on machines without one: the
 * same exported names and calling conventions as libcuda's driver API, with
 * the answers a test asks for through the environment:
 *   DS_FAKE_CUDA_DEVICES  devices cuDeviceGetCount reports (default 1),
 *   DS_FAKE_CUDA_INIT     the CUresult cuInit returns (default 0),
 *   DS_FAKE_CUDA_SM       compute capability as "major.minor" (default 9.0).
 * Each device is an "NVIDIA H200" with 132 SMs and 143771 MiB.
 *
 *===-----------------------------------------------------------------------===*/
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
  case 100:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case 999:
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
  }
  return 1;
}
