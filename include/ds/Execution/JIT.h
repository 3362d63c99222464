//===- JIT.h - lower, JIT and call ds functions on host buffers -*- C++ -*-===//
//
// The execution harness: a module at tensor level (linalg / tensor / arith /
// math / func — or higher, with a pre-lowering callback such as
// ds-lower-nn-to-linalg) goes through the `ds-lower-to-llvm` pipeline into
// an mlir::ExecutionEngine (LLVM O3, host CPU features, dsrt_* resolved from
// the linked libdsrt); each public function can then be called on Tensors.
//
//   auto runner = Runner::fromSource(text);      // llvm::Expected<...>
//   auto outs = (*runner)->invoke("forward", {x, w});
//
// Calling convention underneath (PackedCall.h): every public function gets
// llvm.emit_c_interface; tensor arguments are passed as memref descriptors
// over the Tensor's data (never copied), tensor results become trailing
// out-parameters the Runner allocates (or the caller provides, invokeInto),
// so no buffer crosses the boundary with unclear ownership. A runtime error
// inside the call (dsrt_last_error) becomes the returned llvm::Error. The
// same lowering written to a shared object instead is ObjectCode.h.
//
// Functions whose temporaries were planned into an arena are not
// reentrant: call each function from one thread at a time.
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_JIT_H
#define DS_EXECUTION_JIT_H

#include "ds/Execution/Lowering.h"
#include "ds/Execution/PackedCall.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class MLIRContext;
} // namespace mlir

namespace mlir::ds::exec {

class Runner {
public:
  /// Lowers `module` in place and JITs it. The module's context gets the
  /// dialects and interfaces the lowering needs appended to its registry.
  static llvm::Expected<std::unique_ptr<Runner>>
  create(mlir::ModuleOp module, const RunnerOptions &options = {});
  /// Parses MLIR text / a file into a context the Runner owns, then create().
  static llvm::Expected<std::unique_ptr<Runner>>
  fromSource(llvm::StringRef source, const RunnerOptions &options = {},
             llvm::StringRef sourceName = "input");
  static llvm::Expected<std::unique_ptr<Runner>>
  fromFile(llvm::StringRef path, const RunnerOptions &options = {});

  ~Runner();
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  /// Public functions, in module order.
  std::vector<std::string> functionNames() const;
  /// nullptr if `name` is not a public function of the module.
  const FunctionSignature *signature(llvm::StringRef name) const;

  /// Calls `name`; results are freshly allocated owned Tensors.
  llvm::Expected<std::vector<Tensor>> invoke(llvm::StringRef name,
                                             llvm::ArrayRef<Tensor> inputs);
  /// Calls `name` writing the results into `outputs` (owned or borrowed,
  /// exactly the result types): no allocation at all.
  llvm::Error invokeInto(llvm::StringRef name, llvm::ArrayRef<Tensor> inputs,
                         llvm::ArrayRef<Tensor> outputs);

  /// Contractions the lowering sent to dsrt_sgemm* (call sites).
  int64_t blasCallSites() const { return blasCallSites_; }
  /// Bytes of every ds-plan-buffers arena in the loaded code.
  int64_t arenaBytes() const { return arenaBytes_; }

  /// Where compile time went: MLIR passes (pre-lowering + ds-lower-to-llvm)
  /// and LLVM (translation, O3, machine code).
  struct CompileTimes {
    double mlirSeconds = 0, llvmSeconds = 0;
  };
  const CompileTimes &compileTimes() const { return compileTimes_; }

private:
  Runner();
  llvm::Error lowerAndLoad(mlir::ModuleOp module, const RunnerOptions &options);

  std::unique_ptr<mlir::MLIRContext> ownedContext_;
  mlir::OwningOpRef<mlir::ModuleOp> ownedModule_;
  std::unique_ptr<mlir::ExecutionEngine> engine_;
  struct TargetMachineHolder;
  std::unique_ptr<TargetMachineHolder> tm_;
  std::vector<FunctionSignature> functions_;
  std::vector<PackedEntry> entries_; ///< one per functions_ entry
  int64_t blasCallSites_ = 0;
  int64_t arenaBytes_ = 0;
  WorkspacesRelease releaseWorkspaces_ = nullptr;
  CompileTimes compileTimes_;
};

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_JIT_H
