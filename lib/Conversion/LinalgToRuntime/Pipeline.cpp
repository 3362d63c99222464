//===- Pipeline.cpp - the ds-lower-to-llvm pipeline
//------------------------===//
//
// tensors ─ fuse elementwise ─ one-shot bufferize (function boundaries,
// identity layouts) ─ repeated results copied ─ results to out-params ─
// ds-plan-buffers ─ ownership-based deallocation for what is left ─
// ds-lower-to-runtime (BLAS), ds-lower-optimizer-to-runtime,
// ds-lower-comm-to-runtime ─ linalg to (parallel) loops ─ big nests across
// the threads (ds-parallelize-loops) ─ math to LLVM / libm ─ LLVM dialect.
//
// The BLAS rewrite runs after deallocation placement on purpose: it turns a
// memref use into a raw pointer the deallocation analysis cannot see, so a
// dealloc placed afterwards could free the buffer before the call.
//
//===----------------------------------------------------------------------===//

#include "ds/Conversion/LinalgToGPU.h"
#include "ds/Conversion/LinalgToRuntime.h"
#include "ds/Conversion/Passes.h"
#include "dsdist/DistOps.h"
#include "dstrain/TrainDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ds::buildLowerToLLVMPipeline(OpPassManager &pm,
                                  const LowerToLLVMPipelineOptions &options) {
  // Tensor level: clean up, then fuse elementwise chains so each becomes
  // one loop nest (one memory pass) instead of one per op — but never into
  // a contraction (see ds-fuse-elementwise).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Elementwise arith/math on tensors (0-d step and LR math in @train_step)
  // is not bufferizable as is; as linalg.generic it is.
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Before fusion, which would fuse an operand's widening into its producer.
  if (options.blas && options.bf16Gemm && options.target == "cpu") {
    pm.addPass(ds::createBF16Contractions());
    pm.addPass(createCanonicalizerPass());
  }
  if (options.fuseElementwise) {
    pm.addPass(ds::createFuseElementwise());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }

  // Each fresh tensor (empty, or filled) made where it is used:
  // bufferization allocates it there.
  pm.addNestedPass<func::FuncOp>(ds::createSplitInitTensors());
  // An elementwise result over an input that dies there (a tied model's
  // two vocabulary-sized gradients summed), not a third buffer.
  if (options.elementwiseInPlace)
    pm.addNestedPass<func::FuncOp>(ds::createElementwiseInPlace());

  // Buffers. Identity layouts at function boundaries keep the C interface
  // simple (contiguous row-major host buffers in and out).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // The micro-batch loop carries gradient accumulators whose new values are
  // fresh buffers each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  if (options.outParams) {
    // A buffer returned twice would be hoisted into two out-params (and
    // erased twice): after CSE a layer can return one gradient twice.
    pm.addNestedPass<func::FuncOp>(ds::createCopyRepeatedResults());
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    // A call's result returned again is copied into the out-param: write
    // it there in the first place.
    pm.addNestedPass<func::FuncOp>(ds::createFoldResultCopies());
  }
  pm.addPass(createCanonicalizerPass());
  if (options.planBuffers)
    pm.addPass(ds::createPlanBuffers(
        {options.reuseBuffers, /*alignment=*/64, options.report}));
  bufferization::buildBufferDeallocationPipeline(pm);

  // Matmuls to the runtime, the rest to loops LLVM can vectorize.
  if (options.blas)
    pm.addPass(ds::createLowerToRuntime({/*foldFill=*/true, options.report}));
  // Before the collectives: their declared effects (dsdist.comm) let an
  // optimizer group span them; as calls they would end it.
  pm.addPass(
      ds::createLowerOptimizerToRuntime({/*multi=*/true, options.report}));
  pm.addPass(ds::createLowerCommToRuntime({options.report}));
  pm.addPass(ds::createRelaxReductions());
  // Every kernel is now one op: a linalg op, a copy or a runtime call.
  if (options.profile)
    pm.addPass(ds::createProfileSpans());
  // The same loop nest for every layer's parameters of one shape: one
  // function each, so the step's code does not grow with depth.
  if (options.outlineKernels)
    pm.addPass(ds::createOutlineKernels());
  // A GPU target: the linalg ops become kernels here; what it leaves goes
  // on to loops like the CPU's.
  // "sm_90-emulated": the same kernels, run as CPU loops in the GPU's
  // order (ds-gpu-launch-to-loops), to check them without a GPU.
  bool emulated = llvm::StringRef(options.target).ends_with("-emulated");
  bool gpu = options.target != "cpu" && !emulated;
  if (emulated) {
    pm.addPass(ds::createMapKernelsToGPU());
    pm.addPass(ds::createGPULaunchToLoops());
  }
  GPUTargetOptions gpuTarget;
  gpuTarget.chip = options.target;
  gpuTarget.toolkit = options.cudaToolkit;
  gpuTarget.format = options.gpuBinaryFormat;
  if (gpu)
    buildKernelsToNVVMPipeline(pm, gpuTarget);
  if (options.parallelLoops)
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  else
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // The big nests' outermost parallel loops across the threads, before the
  // passes that give a reduction stack buffers (those must be per thread).
  // Not for a GPU target, whose kernels are launched, nor its emulation,
  // which checks them in the GPU's order.
  if (options.parallelLoops && options.target == "cpu")
    pm.addPass(ds::createParallelizeLoops());
  pm.addNestedPass<func::FuncOp>(ds::createPromoteAccumulators());
  pm.addNestedPass<func::FuncOp>(ds::createFixedOrderReductions());

  // LLVM dialect. Transcendentals as polynomials first, so the loops
  // around them vectorize; what is left goes to LLVM intrinsics or libm.
  if (options.approximateMath)
    pm.addPass(ds::createApproximateMath());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass()); // erf and friends: libm
  pm.addPass(ds::createExpandBF16Casts());
  pm.addPass(ds::createStaticCopies());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(ds::createSplitEntryBlocks());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  if (gpu)
    buildGPUHostToLLVMPipeline(pm, gpuTarget);
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The entry points' bodies into their C wrappers: no call passing every
  // descriptor field. Layer and kernel functions are called only from here:
  // internal, LLVM drops the descriptor fields they never read.
  pm.addPass(ds::createInlineIntoCWrappers());
  pm.addPass(ds::createInternalizeFunctions());
  pm.addPass(ds::createCanonicalizeCallees());
  if (options.planBuffers && options.workspacesAtLoad)
    pm.addPass(ds::createWorkspacesAtLoad());
  if (gpu)
    pm.addPass(ds::createGPUHostRuntime());
}

void ds::registerLowerToLLVMPipeline() {
  PassPipelineRegistration<LowerToLLVMPipelineOptions>(
      "ds-lower-to-llvm",
      "Lower tensors (linalg, tensor, arith, math, func) to the LLVM dialect "
      "calling dsrt_*: fuse, bufferize, plan buffers, BLAS, loops, LLVM",
      buildLowerToLLVMPipeline);
}

void ds::registerLowerToLLVMDependencies(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect, ub::UBDialect,
                  vector::VectorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  registry.insert<ds::dist::DistDialect, ds::train::TrainDialect>();
  registerDistBufferizationModels(registry);
  registerOptimizerBufferizationModels(registry);
  registerGPUTargetDependencies(registry);
}
