/*===- mgpu.h - the mgpu* functions MLIR's GPU host lowering calls --------===*
 *
 * Declared for symbols.c, whose table the JIT resolves the step's calls by:
 * the signatures are the ones gpu-to-llvm emits (GPUToLLVMConversion.cpp).
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_GPU_MGPU_H
#define DSRT_GPU_MGPU_H

#include "dsrt/dsrt.h"

#include <stddef.h>
#include <stdint.h>

DSRT_API void *mgpuModuleLoad(void *data, size_t bytes);
DSRT_API void *mgpuModuleLoadJIT(void *data, int optLevel);
DSRT_API void mgpuModuleUnload(void *module);
DSRT_API void *mgpuModuleGetFunction(void *module, const char *name);
DSRT_API void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy,
                               intptr_t gz, intptr_t bx, intptr_t by,
                               intptr_t bz, int32_t smem, void *stream,
                               void **params, void **extra, size_t paramsCount);
DSRT_API void *mgpuStreamCreate(void);
DSRT_API void mgpuStreamDestroy(void *stream);
DSRT_API void mgpuStreamSynchronize(void *stream);
DSRT_API void mgpuStreamWaitEvent(void *stream, void *event);
DSRT_API void *mgpuEventCreate(void);
DSRT_API void mgpuEventDestroy(void *event);
DSRT_API void mgpuEventSynchronize(void *event);
DSRT_API void mgpuEventRecord(void *event, void *stream);
DSRT_API void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t hostShared);
DSRT_API void mgpuMemFree(void *ptr, void *stream);
DSRT_API void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
DSRT_API void mgpuMemset32(void *dst, unsigned value, size_t count,
                           void *stream);
DSRT_API void mgpuMemset16(void *dst, unsigned short value, size_t count,
                           void *stream);
DSRT_API void mgpuMemHostRegister(void *ptr, uint64_t bytes);
DSRT_API void mgpuMemHostUnregister(void *ptr);
DSRT_API void mgpuMemHostRegisterMemRef(int64_t rank, const int64_t *desc,
                                        int64_t elementBytes);
DSRT_API void mgpuMemHostUnregisterMemRef(int64_t rank, const int64_t *desc,
                                          int64_t elementBytes);
DSRT_API void mgpuSetDefaultDevice(int32_t device);

#endif /* DSRT_GPU_MGPU_H */
