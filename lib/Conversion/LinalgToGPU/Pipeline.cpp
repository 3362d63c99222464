//===- Pipeline.cpp - The GPU target's passes around ds-map-kernels-to-gpu ===//
//
// The order and flags are the ones measured to reach ptxas cleanly (see
// docs/gpu.md): index computations sunk into each launch before outlining
// (else constants become kernel parameters), affine and scf lowered before
// convert-gpu-to-nvvm (else unrealized casts at translation), the chip always
// named (the default, sm_50, is gone from CUDA 13's ptxas), and the toolkit
// always given (else libdevice calls stay unresolved).
//
//===----------------------------------------------------------------------===//
#include "ds/Conversion/LinalgToGPU.h"
#include "ds/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ds::buildKernelsToNVVMPipeline(OpPassManager &pm,
                                    const GPUTargetOptions &options) {
  pm.addPass(ds::createMapKernelsToGPU());
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createLowerAffinePass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
}

void ds::buildGPUHostToLLVMPipeline(OpPassManager &pm,
                                    const GPUTargetOptions &options) {
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void ds::registerGPUTargetDependencies(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
