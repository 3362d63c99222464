/*===- device.c - the CUDA driver and its devices, probed at run time -----===*
 *
 * libdsrt never links libcuda: the driver is dlopen'd, so libdsrt, ds-runner
 * and every tool start on machines without one, and a GPU step that cannot
 * run says which piece is missing (driver library, cuInit, device, compute
 * capability) instead of failing at load.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include "core/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Driver API ABI (cuda.h): CUresult is int, CUdevice is int. */
enum {
  kAttrMultiprocessors = 16,
  kAttrComputeMajor = 75,
  kAttrComputeMinor = 76,
};

typedef int (*CuInit)(unsigned);
typedef int (*CuIntOut)(int *);
typedef int (*CuDeviceGet)(int *, int);
typedef int (*CuDeviceGetName)(char *, int, int);
typedef int (*CuDeviceGetAttribute)(int *, int, int);
typedef int (*CuDeviceTotalMem)(size_t *, int);
typedef int (*CuGetErrorName)(int, const char **);

static const char *errorName(CuGetErrorName getName, int rc) {
  const char *name = NULL;
  if (getName && getName(rc, &name) == 0 && name)
    return name;
  return "unknown CUresult";
}

int dsrt_cuda_probe(dsrt_cuda_info *info) {
  if (!info)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_cuda_probe: info is NULL");
  memset(info, 0, sizeof(*info));
  /* RTLD_LOCAL: the driver's symbols never interpose on anything else. */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(info->problem, sizeof(info->problem),
             "no NVIDIA driver: libcuda.so.1 does not load (install the "
             "driver, or run where one is)");
    return dsrt_fail(DSRT_ERR_UNSUPPORTED, "%s", info->problem);
  }
  info->driver_loaded = 1;
  CuInit init = (CuInit)dlsym(lib, "cuInit");
  CuIntOut driverVersion = (CuIntOut)dlsym(lib, "cuDriverGetVersion");
  CuIntOut deviceCount = (CuIntOut)dlsym(lib, "cuDeviceGetCount");
  CuDeviceGet deviceGet = (CuDeviceGet)dlsym(lib, "cuDeviceGet");
  CuDeviceGetName deviceName = (CuDeviceGetName)dlsym(lib, "cuDeviceGetName");
  CuDeviceGetAttribute attribute =
      (CuDeviceGetAttribute)dlsym(lib, "cuDeviceGetAttribute");
  CuDeviceTotalMem totalMem =
      (CuDeviceTotalMem)dlsym(lib, "cuDeviceTotalMem_v2");
  CuGetErrorName getErrorName = (CuGetErrorName)dlsym(lib, "cuGetErrorName");
  if (!init || !driverVersion || !deviceCount || !deviceGet || !deviceName ||
      !attribute || !totalMem) {
    snprintf(info->problem, sizeof(info->problem),
             "libcuda.so.1 loads but lacks the driver API (cuInit, "
             "cuDeviceGet...): not an NVIDIA driver library");
    return dsrt_fail(DSRT_ERR_UNSUPPORTED, "%s", info->problem);
  }
  driverVersion(&info->driver_version);
  int rc = init(0);
  if (rc != 0) {
    snprintf(info->problem, sizeof(info->problem),
             "the NVIDIA driver does not initialize: cuInit failed with %s "
             "(%d); is a GPU visible to this process (CUDA_VISIBLE_DEVICES, "
             "/dev/nvidia*)?",
             errorName(getErrorName, rc), rc);
    return dsrt_fail(DSRT_ERR_UNSUPPORTED, "%s", info->problem);
  }
  int count = 0;
  rc = deviceCount(&count);
  if (rc != 0 || count <= 0) {
    snprintf(info->problem, sizeof(info->problem),
             "the NVIDIA driver sees no GPU (cuDeviceGetCount: %s, %d "
             "device(s))",
             rc ? errorName(getErrorName, rc) : "CUDA_SUCCESS", count);
    return dsrt_fail(DSRT_ERR_UNSUPPORTED, "%s", info->problem);
  }
  info->device_count = count;
  int listed = count < DSRT_CUDA_MAX_DEVICES ? count : DSRT_CUDA_MAX_DEVICES;
  for (int i = 0; i < listed; ++i) {
    dsrt_cuda_device *d = &info->devices[i];
    int dev = 0;
    size_t bytes = 0;
    if ((rc = deviceGet(&dev, i)) != 0 ||
        (rc = deviceName(d->name, (int)sizeof(d->name), dev)) != 0 ||
        (rc = attribute(&d->major, kAttrComputeMajor, dev)) != 0 ||
        (rc = attribute(&d->minor, kAttrComputeMinor, dev)) != 0 ||
        (rc = attribute(&d->multiprocessors, kAttrMultiprocessors, dev)) != 0 ||
        (rc = totalMem(&bytes, dev)) != 0) {
      snprintf(info->problem, sizeof(info->problem),
               "querying GPU %d failed with %s (%d)", i,
               errorName(getErrorName, rc), rc);
      return dsrt_fail(DSRT_ERR_INTERNAL, "%s", info->problem);
    }
    d->name[sizeof(d->name) - 1] = '\0';
    d->total_bytes = (uint64_t)bytes;
  }
  return DSRT_OK;
}

int dsrt_cuda_require(int major, int minor) {
  dsrt_cuda_info info;
  if (dsrt_cuda_probe(&info) != DSRT_OK)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "this step is compiled for sm_%d%d, but %s", major, minor,
                     info.problem);
  /* Device code for sm_XY runs on sm_XY and on later minor revisions of
   * the same major (cubin compatibility); anything else needs a recompile. */
  const dsrt_cuda_device *d = &info.devices[0];
  if (d->major != major || d->minor < minor)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "this step is compiled for sm_%d%d, but GPU 0 (%s) is "
                     "sm_%d%d: compile it again with --target sm_%d%d",
                     major, minor, d->name, d->major, d->minor, d->major,
                     d->minor);
  return DSRT_OK;
}
