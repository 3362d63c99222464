//===- Lowering.h - A ds module down to LLVM IR, for any backend -*- C++
//-*-===//
//
// What the JIT and the artifact compiler share: the pre-lowering passes,
// `ds-lower-to-llvm` with the C interface on every entry point, the entry
// points' signatures, the target machine for a CPU level and the LLVM
// optimization pipeline. Running it on the same module and target gives
// the same machine code in memory (Runner) and in a .so (ObjectCode.h).
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_LOWERING_H
#define DS_EXECUTION_LOWERING_H

#include "ds/Execution/JitTarget.h"
#include "ds/Execution/PackedCall.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class OpPassManager;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace mlir::ds::exec {

struct RunnerOptions {
  /// Passes run before the ds lowering, e.g. ds-lower-nn-to-linalg.
  std::function<void(mlir::OpPassManager &)> preLowering;
  /// Dialects the input may use beyond the upstream ones the lowering
  /// needs (fromSource/fromFile only), e.g. registerAllDSDialects.
  std::function<void(mlir::DialectRegistry &)> registerDialects;
  /// ds-lower-to-llvm options (see LowerToLLVMPipelineOptions).
  bool fuseElementwise = true;
  bool elementwiseInPlace = true;
  bool planBuffers = true;
  bool reuseBuffers = true;
  bool blas = true;
  bool outlineKernels = true;
  /// Profile calls around each kernel (ds-profile-spans).
  bool profile = false;
  /// "cpu", or a GPU chip ("sm_90") whose kernels are assembled with the
  /// CUDA toolkit at `cudaToolkit` (ds::target::findCudaToolkit).
  std::string target = "cpu";
  std::string cudaToolkit;
  /// Remarks from the BLAS rewrite and the buffer planner, on stderr.
  bool report = false;
  /// LLVM optimization level (0-3).
  unsigned optLevel = 3;
  /// Public functions to keep callable; the others become private and are
  /// dropped when unused (less to compile). Empty: every public function.
  std::vector<std::string> entryPoints;
  /// Called with the module after each stage ("pre", "llvm"), for dumps.
  std::function<void(llvm::StringRef stage, mlir::ModuleOp)> onStage;
};

/// A module lowered to the LLVM dialect, ready for translation.
struct LoweredModule {
  std::vector<FunctionSignature> functions; ///< the entry points
  /// Contractions the lowering sent to dsrt_sgemm* (call sites).
  int64_t blasCallSites = 0;
  /// Every function's ds-plan-buffers arena: static storage, all of it
  /// held at once.
  int64_t arenaBytes = 0;
  double mlirSeconds = 0;
};

/// Lowers `module` in place to the LLVM dialect: every entry point gets a
/// C interface (`_mlir_ciface_<name>`) and stays out of line.
/// The caller-visible signature of tensor-level function `fn`: its values,
/// and the caller positions of stacked ones (`ds.stack`).
llvm::Expected<FunctionSignature> signatureOf(mlir::func::FuncOp fn);

llvm::Expected<LoweredModule> lowerForExecution(mlir::ModuleOp module,
                                                const RunnerOptions &options);

/// The target machine code for `target` is generated with, at O3. `jit`:
/// for in-process code (ORC's defaults), else position-independent code
/// for a shared object.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const JitTarget &target, bool jit);

/// The LLVM optimization pipeline both backends run on the translated
/// module.
std::function<llvm::Error(llvm::Module *)>
makeOptimizer(unsigned optLevel, llvm::TargetMachine *tm);

/// The registry a module's context needs for lowering and translation.
void registerRunnerDependencies(mlir::DialectRegistry &registry);

/// Collects a context's diagnostics while alive; errors go into the
/// llvm::Error of the failing step, remarks and warnings to stderr.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext *ctx);
  ~DiagnosticCapture();
  llvm::Error error(const llvm::Twine &what);

private:
  std::string errors, others;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_LOWERING_H
