//===- ObjectCode.h - A ds module compiled into a shared object -*- C++ -*-===//
//
// The artifact backend: the Runner's lowering, target machine and LLVM
// pipeline (Lowering.h), with the machine code written to an object file
// and linked by ld.lld into a shared object instead of kept in memory.
// Every entry point `f` is exported as its packed C wrapper
// `_mlir__mlir_ciface_f(void **)` (PackedCall.h), the symbol a loader
// (SharedObject.h) looks up; everything else is hidden. dsrt_* and libm
// stay undefined and bind to the loading process's.
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_OBJECTCODE_H
#define DS_EXECUTION_OBJECTCODE_H

#include "ds/Execution/Lowering.h"

namespace mlir::ds::exec {

struct ObjectCodeTimes {
  double mlirSeconds = 0, llvmSeconds = 0, linkSeconds = 0;
};

/// Lowers `module` in place and writes the shared object `soPath`
/// (atomically: a reader never sees half a file).
llvm::Expected<LoweredModule>
compileSharedObject(mlir::ModuleOp module, const RunnerOptions &options,
                    const JitTarget &target, const std::string &soPath,
                    ObjectCodeTimes *times = nullptr);

/// The linker compileSharedObject runs.
std::string sharedObjectLinker();

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_OBJECTCODE_H
