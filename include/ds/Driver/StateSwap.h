//===- StateSwap.h - Optimizer state in files under nvme_path ---*- C++ -*-===//
//
// ZeRO-Infinity's NVMe tier for the optimizer state (offload_optimizer
// "device": "nvme"): each Adam moment of this rank is a file under
// nvme_path/rank<N>, and the state store holds, in its place, libdsrt's key
// for it (an address range that no memory backs). The compiled step passes
// the key where the moment would be, and libdsrt's Adam streams the moment
// from the file and back (runtime/offload/swap.c). The step and its
// arithmetic are those of the run without offload.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_STATESWAP_H
#define DS_DRIVER_STATESWAP_H

#include "ds/Config/Config.h"
#include "ds/Driver/CompiledStep.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

struct dsrt_swap;

namespace ds::driver {

class StateSwap {
public:
  /// nvme_path exists, is a directory and can be written to: checked as
  /// soon as the config is read, before the compile.
  static llvm::Error checkDirectory(const ::ds::config::OffloadConfig &offload);
  /// Whether `arg` goes to a file: an f32 Adam moment that starts at zero.
  static bool swaps(const StepManifest &manifest, size_t arg);
  /// Bytes of this rank's files for `manifest`.
  static int64_t fileBytes(const StepManifest &manifest);

  /// Creates this rank's files (zeros, their blocks allocated) after
  /// checking that the file system has room for every rank on this host.
  static llvm::Expected<std::unique_ptr<StateSwap>>
  open(const ::ds::config::Config &config, const StepManifest &manifest,
       int rank, int ranksOnHost);
  ~StateSwap();

  /// The key standing for argument `arg`, or null when it is memory.
  void *key(size_t arg) const { return keys[arg]; }
  const std::string &directory() const { return dir; }
  /// Whether the files are read and written with O_DIRECT.
  bool direct() const;

private:
  StateSwap() = default;
  dsrt_swap *swap = nullptr;
  std::string dir;
  std::vector<void *> keys; ///< per argument
};

} // namespace ds::driver

#endif // DS_DRIVER_STATESWAP_H
