/*===- driver.h - the CUDA driver API, loaded once with dlopen ------------===*
 *
 * Not part of the ABI. The entry points the mgpu* functions and the cuBLAS
 * shim need, resolved from libcuda.so.1 on first use, with GPU 0's primary
 * context current on the calling thread (the one cudart's kernels, such as
 * dsrt_cuda_adam_multi, also use).
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_GPU_DRIVER_H
#define DSRT_GPU_DRIVER_H

#include <stddef.h>

/* The driver API's ABI (cuda.h): handles are pointers, CUdeviceptr is an
 * unsigned 64-bit integer, CUresult an int. */
typedef unsigned long long dsrt_cu_ptr;

typedef struct dsrt_cu_api {
  int (*getErrorName)(int, const char **);
  int (*moduleLoadData)(void **module, const void *image);
  int (*moduleLoadDataEx)(void **module, const void *image, unsigned nOptions,
                          int *options, void **values);
  int (*moduleUnload)(void *module);
  int (*moduleGetFunction)(void **function, void *module, const char *name);
  int (*launchKernel)(void *function, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned smem,
                      void *stream, void **params, void **extra);
  int (*streamCreate)(void **stream, unsigned flags);
  int (*streamSynchronize)(void *stream);
  int (*streamDestroy)(void *stream);
  int (*streamWaitEvent)(void *stream, void *event, unsigned flags);
  int (*eventCreate)(void **event, unsigned flags);
  int (*eventRecord)(void *event, void *stream);
  int (*eventSynchronize)(void *event);
  int (*eventDestroy)(void *event);
  int (*memAlloc)(dsrt_cu_ptr *ptr, size_t bytes);
  int (*memAllocManaged)(dsrt_cu_ptr *ptr, size_t bytes, unsigned flags);
  int (*memFree)(dsrt_cu_ptr ptr);
  int (*memcpyAsync)(dsrt_cu_ptr dst, dsrt_cu_ptr src, size_t bytes,
                     void *stream);
  int (*memsetD32Async)(dsrt_cu_ptr dst, unsigned value, size_t count,
                        void *stream);
  int (*memsetD16Async)(dsrt_cu_ptr dst, unsigned short value, size_t count,
                        void *stream);
  int (*memHostRegister)(void *ptr, size_t bytes, unsigned flags);
  int (*memHostUnregister)(void *ptr);
} dsrt_cu_api;

/* The driver with GPU 0's primary context current on this thread, or NULL
 * with dsrt_last_error naming the missing piece (the library, cuInit, a
 * device). Loads and initializes once per process; later calls only make
 * the context current on new threads. */
const dsrt_cu_api *dsrt_cu(void);

/* DSRT_OK for CUDA_SUCCESS; otherwise DSRT_ERR_INTERNAL with
 * dsrt_last_error "<call> failed: <CUresult name> (<code>)". */
int dsrt_cu_check(int result, const char *call);

#endif /* DSRT_GPU_DRIVER_H */
