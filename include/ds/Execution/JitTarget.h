//===- JitTarget.h - the CPU level compiled code is generated for -*- C++
//-*-===//
//
// The JIT generates code for the host CPU unless DS_JIT_CPU names a level:
//
//   DS_JIT_CPU=native      the host's own CPU and features (the default)
//   DS_JIT_CPU=x86-64-v2   SSE4.2, 128-bit vectors
//   DS_JIT_CPU=x86-64-v3   AVX2 + FMA, 256-bit vectors
//   DS_JIT_CPU=x86-64-v4   AVX-512 F/BW/CD/DQ/VL
//
// A level runs only on a CPU that has its features, so a level the host
// lacks is refused (code for it would die of an illegal instruction). The
// levels let one machine produce what the compiler would generate on
// another, which is how the tests check that numerics do not depend on it.
//
//===----------------------------------------------------------------------===//
#ifndef DS_EXECUTION_JITTARGET_H
#define DS_EXECUTION_JITTARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::ds::exec {

struct JitTarget {
  std::string level; ///< "native", "x86-64-v3", ...
  std::string cpu;   ///< the LLVM CPU name code is generated for
  /// Subtarget features on top of the CPU's own ("+avx2", ...); native only.
  std::vector<std::string> features;
  bool fromEnvironment = false; ///< DS_JIT_CPU chose it
};

/// The levels DS_JIT_CPU accepts, "native" first.
std::vector<std::string> jitTargetLevels();

/// The levels this host's CPU runs, "native" first.
std::vector<std::string> runnableJitTargetLevels();

/// Resolves `level` ("" = native) against this host's CPU.
llvm::Expected<JitTarget> resolveJitTarget(llvm::StringRef level);

/// The features of x86-64 level `level` (and the levels below it) this
/// host's CPU lacks; empty when it runs the level or the level is unknown.
std::vector<std::string> featuresHostLacks(llvm::StringRef level);

/// `level` as a target to compile for, whether or not this host runs it
/// (ds-compile writes code for other machines); only unknown levels fail.
llvm::Expected<JitTarget> compileTargetFor(llvm::StringRef level);

/// Resolves DS_JIT_CPU (unset or empty: native).
llvm::Expected<JitTarget> resolveJitTargetFromEnvironment();

} // namespace mlir::ds::exec

#endif // DS_EXECUTION_JITTARGET_H
