//===- LinalgToGPU.h - The GPU target below linalg --------------*- C++ -*-===//
//
// ds-map-kernels-to-gpu and the passes around it: linalg ops on buffers as
// GPU kernels, the kernels through NVVM to device code (ptxas, fatbinary),
// the host's launches as mgpu* calls libdsrt serves.
//
//===----------------------------------------------------------------------===//
#ifndef DS_CONVERSION_LINALGTOGPU_H
#define DS_CONVERSION_LINALGTOGPU_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::ds {

struct GPUTargetOptions {
  std::string chip = "sm_90";
  /// PTX ISA 8.0: what sm_90 needs, and every ptxas since CUDA 12 reads.
  std::string features = "+ptx80";
  /// The CUDA toolkit's root (ptxas, fatbinary, libdevice); never left to
  /// gpu-module-to-binary's own search, which emits unresolved libdevice
  /// calls without one.
  std::string toolkit;
  /// gpu-module-to-binary's format: fatbin (the artifact), bin (cubin) or
  /// isa (PTX text, what the ptxas tests read).
  std::string format = "fatbin";
};

/// After ds-outline-kernels, in place of linalg-to-loops: each linalg op a
/// kernel (ds-map-kernels-to-gpu), kernels outlined into a gpu.module for
/// `options.chip`, and the device side lowered to NVVM.
void buildKernelsToNVVMPipeline(OpPassManager &pm,
                                const GPUTargetOptions &options);

/// After the host's conversion to the LLVM dialect: launches to mgpu*
/// calls, each gpu.module assembled to device code embedded in the module.
void buildGPUHostToLLVMPipeline(OpPassManager &pm,
                                const GPUTargetOptions &options);

/// Dialects and translations the GPU target's passes create.
void registerGPUTargetDependencies(DialectRegistry &registry);

} // namespace mlir::ds

#endif // DS_CONVERSION_LINALGTOGPU_H
