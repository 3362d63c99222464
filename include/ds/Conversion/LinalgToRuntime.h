//===- LinalgToRuntime.h - linalg -> dsrt calls -> LLVM ----------*- C++
//-*-===//
//
// The level below linalg, as a C++ API for drivers (the JIT, ds-train) that
// want the numbers and not only the IR: the BLAS rewrite, the buffer planner
// and the `ds-lower-to-llvm` pipeline that strings them together with
// upstream bufferization and the LLVM conversions.
//
//===----------------------------------------------------------------------===//
#ifndef DS_CONVERSION_LINALGTORUNTIME_H
#define DS_CONVERSION_LINALGTORUNTIME_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <cstdint>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::ds {

/// The runtime symbols the rewrite calls (runtime/include/dsrt/dsrt.h).
inline constexpr llvm::StringLiteral kSgemmSymbol = "dsrt_sgemm";
inline constexpr llvm::StringLiteral kSgemmStridedBatchedSymbol =
    "dsrt_sgemm_strided_batched";
/// bf16 A and B, f32 C: the same arguments as the two above.
inline constexpr llvm::StringLiteral kGemmBF16Symbol = "dsrt_gemm_bf16";
inline constexpr llvm::StringLiteral kGemmBF16StridedBatchedSymbol =
    "dsrt_gemm_bf16_strided_batched";

/// Prefix of the global that holds a function's planned buffers
/// (ds-plan-buffers): `<prefix><function name>`.
inline constexpr llvm::StringLiteral kArenaPrefix = "__ds_arena_";

struct LinalgToRuntimeOptions {
  /// Fold a zero linalg.fill of the output into beta = 0.
  bool foldFill = true;
  /// Remark on every contraction left as loops, and a module summary.
  bool report = false;
};

struct LinalgToRuntimeStats {
  int64_t blasCalls = 0;     ///< contractions that now call dsrt_sgemm*
  int64_t unmatched = 0;     ///< contractions left for the loop lowering
  int64_t copiesToLoops = 0; ///< strided memref.copy turned into linalg.copy
};

/// The `ds-lower-to-runtime` rewrite on a bufferized module.
LogicalResult lowerLinalgToRuntime(ModuleOp module,
                                   const LinalgToRuntimeOptions &options,
                                   LinalgToRuntimeStats &stats);

/// Function attributes `ds-plan-buffers` sets.
inline constexpr llvm::StringLiteral kWorkspaceBytesAttr = "ds.workspace_bytes";
inline constexpr llvm::StringLiteral kWorkspaceUnplannedBytesAttr =
    "ds.workspace_unplanned_bytes";

/// Options of the `ds-lower-to-llvm` pipeline: tensors (linalg, tensor,
/// arith, math, func) in, LLVM dialect calling dsrt_* out.
struct LowerToLLVMPipelineOptions
    : public PassPipelineOptions<LowerToLLVMPipelineOptions> {
  PassOptions::Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("fuse producer/consumer elementwise linalg ops on "
                     "tensors before bufferization"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("exp/log/tanh/erf as vectorizable polynomials "
                     "(ds-approximate-math) instead of libm calls"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outParams{
      *this, "out-params",
      llvm::cl::desc("tensor results become caller-allocated trailing "
                     "arguments (the JIT driver's calling convention)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> planBuffers{
      *this, "plan-buffers",
      llvm::cl::desc("place static temporaries in one arena per function "
                     "(ds-plan-buffers)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> workspacesAtLoad{
      *this, "workspaces-at-load",
      llvm::cl::desc("allocate the arenas when the code is loaded "
                     "(ds-workspaces-at-load; the loader calls "
                     "__ds_workspaces_init); off: static storage, for "
                     "runners that do not, such as mlir-runner"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> elementwiseInPlace{
      *this, "elementwise-in-place",
      llvm::cl::desc("write an elementwise result over an input that dies "
                     "there (ds-elementwise-in-place)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> reuseBuffers{
      *this, "reuse-buffers",
      llvm::cl::desc("let planned buffers share bytes by liveness"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("call dsrt_sgemm for f32 contractions "
                     "(ds-lower-to-runtime); off: loops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> bf16Gemm{
      *this, "bf16-gemm",
      llvm::cl::desc("contractions of bf16 operands call dsrt_gemm_bf16 "
                     "(ds-bf16-contractions; CPU target with blas); off: "
                     "dsrt_sgemm on operands widened in the step"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> parallelLoops{
      *this, "parallel-loops",
      llvm::cl::desc("lower linalg to scf.parallel where the iterators "
                     "allow (sequential today, ready for OpenMP)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineKernels{
      *this, "outline-kernels",
      llvm::cl::desc("compile each repeated linalg op once, as a shared "
                     "function (ds-outline-kernels)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> profile{
      *this, "profile",
      llvm::cl::desc("bracket each kernel with libdsrt's profile calls "
                     "(ds-profile-spans; ds-train --profile); CPU only"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> target{
      *this, "target",
      llvm::cl::desc("cpu (loops LLVM vectorizes) or a GPU chip, e.g. "
                     "sm_90: each linalg op a kernel (ds-map-kernels-to-gpu) "
                     "assembled into the module by ptxas; sm_90-emulated: "
                     "those kernels as CPU loops (ds-gpu-launch-to-loops)"),
      llvm::cl::init("cpu")};
  PassOptions::Option<std::string> cudaToolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("with a GPU target: the CUDA toolkit's root (ptxas, "
                     "fatbinary, libdevice)")};
  PassOptions::Option<std::string> gpuBinaryFormat{
      *this, "gpu-binary-format",
      llvm::cl::desc("with a GPU target: fatbin, bin (cubin) or isa (PTX)"),
      llvm::cl::init("fatbin")};
  PassOptions::Option<bool> report{
      *this, "report",
      llvm::cl::desc("remarks from the BLAS rewrite and the buffer planner"),
      llvm::cl::init(false)};
};

/// Appends the `ds-lower-to-llvm` pipeline to a module pass manager.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMPipelineOptions &options);

/// Registers `ds-lower-to-llvm` with the textual pass pipeline parser.
void registerLowerToLLVMPipeline();

/// Dialects and external models (bufferization of arith/linalg/tensor/...,
/// func boundaries) the pipeline needs in a context that was not set up by
/// ds-opt's registerAllDialects.
void registerLowerToLLVMDependencies(DialectRegistry &registry);

/// Bufferization of the dsdist collectives into dsdist.comm
/// (lib/Conversion/LinalgToRuntime/LowerCommToRuntime.cpp).
void registerDistBufferizationModels(DialectRegistry &registry);

/// Bufferization of dstrain.adam, lamb and sgd into dstrain.apply
/// (lib/Conversion/LinalgToRuntime/LowerOptimizerToRuntime.cpp).
void registerOptimizerBufferizationModels(DialectRegistry &registry);

} // namespace mlir::ds

#endif // DS_CONVERSION_LINALGTORUNTIME_H
