//===- CompileCache.h - Compiled steps kept between runs --------*- C++ -*-===//
//
// ds-train without --compiled looks its step up here first and compiles
// only on a miss, as an artifact (Artifact.h) under the cache directory, so
// a relaunch, or a second rank on the same node, skips compilation.
//
//   DS_COMPILE_CACHE        unset: $XDG_CACHE_HOME/ds/compile, else
//                           $HOME/.cache/ds/compile; a path: that
//                           directory; "off" or "0": no cache (JIT only)
//   DS_COMPILE_CACHE_MAX_MB the size the directory is kept under (default
//                           2048); least recently used entries go first
//
// An entry is named by the hash of everything that decides the code: the
// model file's bytes, the resolved config, the world size, the rank
// program, the CPU target (DS_JIT_CPU, else this host's CPU and features)
// and the ds build (version and binary). Under a launcher one rank per
// distinct program compiles while the others wait, then the ones whose
// cache directory does not hold the entry (node-local directories) receive
// it over the communication backend.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_COMPILECACHE_H
#define DS_DRIVER_COMPILECACHE_H

#include "ds/Driver/CompiledStep.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace ds::driver {

struct CompileCacheSettings {
  bool enabled = true;
  std::string dir;
  uint64_t maxBytes = 2048ull << 20;
};

/// From the environment (DS_COMPILE_CACHE, DS_COMPILE_CACHE_MAX_MB).
llvm::Expected<CompileCacheSettings> compileCacheSettings();

struct CompileCacheStats {
  int64_t entries = 0;
  uint64_t bytes = 0;
};
CompileCacheStats compileCacheStats(const std::string &dir);

/// Drops the least recently used entries of `dir` (never `keep`) until it
/// holds at most `maxBytes`.
void evictCompileCache(const std::string &dir, uint64_t maxBytes,
                       const std::string &keep);

/// What names this ds build: its version and its binary (size and time).
std::string buildIdentity();

/// The step for `request` from the cache, compiled there on a miss (by one
/// rank); the JIT when the cache is off or IR dumps are asked for.
llvm::Expected<CompiledStep> compileCached(const StepRequest &request,
                                           bool quiet);

} // namespace ds::driver

#endif // DS_DRIVER_COMPILECACHE_H
