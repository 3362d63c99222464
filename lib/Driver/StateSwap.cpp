//===- StateSwap.cpp - Optimizer state in files under nvme_path -----------===//
#include "ds/Driver/StateSwap.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace ::ds::driver;
using llvm::createStringError;

namespace {
constexpr const char *kPathKey =
    "zero_optimization.offload_optimizer.nvme_path";
constexpr int64_t kFileAlign = 4096; // libdsrt pads each file to this

int64_t paddedBytes(const ArgSpec &arg) {
  int64_t bytes = numElements(arg.shape) * 4;
  return (bytes + kFileAlign - 1) / kFileAlign * kFileAlign;
}
} // namespace

llvm::Error
StateSwap::checkDirectory(const ::ds::config::OffloadConfig &offload) {
  const std::string &path = offload.nvmePath;
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st))
    return createStringError("%s: %s: %s; create it, or point nvme_path at a "
                             "directory on the NVMe drive",
                             kPathKey, path.c_str(), ec.message().c_str());
  if (!llvm::sys::fs::is_directory(st))
    return createStringError("%s: %s is not a directory; point nvme_path at a "
                             "directory on the NVMe drive",
                             kPathKey, path.c_str());
  // A file made and removed: access(2) says yes to root on a read-only
  // mount or in /proc.
  llvm::SmallString<256> probe(path);
  llvm::sys::path::append(probe, ".ds-write-test-%%%%%%");
  int fd = -1;
  llvm::SmallString<256> made;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(probe, fd, made))
    return createStringError("%s: %s is not writable (%s); give this user "
                             "write access or choose another directory",
                             kPathKey, path.c_str(), ec.message().c_str());
  ::close(fd);
  llvm::sys::fs::remove(made);
  return llvm::Error::success();
}

bool StateSwap::swaps(const StepManifest &manifest, size_t i) {
  const ArgSpec &arg = manifest.args[i];
  if (arg.kind != ArgSpec::State || arg.dtype != DType::F32 ||
      (arg.stateKind != "exp_avg" && arg.stateKind != "exp_avg_sq") ||
      arg.stateInit.kind != StateInit::Zeros || numElements(arg.shape) == 0)
    return false;
  // A stacked group's values are one buffer, which the step takes whole.
  return llvm::none_of(manifest.argStacks, [&](const std::vector<size_t> &g) {
    return llvm::is_contained(g, i);
  });
}

int64_t StateSwap::fileBytes(const StepManifest &manifest) {
  int64_t bytes = 0;
  for (size_t i = 0; i < manifest.args.size(); ++i)
    if (swaps(manifest, i))
      bytes += paddedBytes(manifest.args[i]);
  return bytes;
}

llvm::Expected<std::unique_ptr<StateSwap>>
StateSwap::open(const ::ds::config::Config &config,
                const StepManifest &manifest, int rank, int ranksOnHost) {
  const ::ds::config::OffloadConfig &offload = config.zero.offloadOptimizer;
  // Room for every rank of this host, before any file is made: a full
  // disk is refused with the numbers, not found in the middle of a step.
  int64_t need = fileBytes(manifest), onHost = need * ranksOnHost;
  struct statvfs fs;
  if (statvfs(offload.nvmePath.c_str(), &fs) != 0)
    return createStringError("%s: %s: %s", kPathKey, offload.nvmePath.c_str(),
                             std::strerror(errno));
  int64_t available = int64_t(fs.f_bavail) * int64_t(fs.f_frsize);
  const char *source = "";
  if (const char *forced = std::getenv("DS_NVME_FREE_BYTES")) {
    available = std::atoll(forced);
    source = " (DS_NVME_FREE_BYTES)";
  }
  if (onHost > available)
    return createStringError(
        "%s: %s has %lld bytes available%s but the optimizer state needs "
        "%lld (%lld per rank x %d rank(s) on this host); free space or "
        "choose a larger drive",
        kPathKey, offload.nvmePath.c_str(), (long long)available, source,
        (long long)onHost, (long long)need, ranksOnHost);

  std::unique_ptr<StateSwap> swap(new StateSwap());
  llvm::SmallString<256> dir(offload.nvmePath);
  llvm::sys::path::append(dir, "rank" + std::to_string(rank));
  swap->dir = dir.str().str();
  dsrt_swap_options options;
  options.block_size = config.aio.blockSize;
  options.queue_depth = int32_t(config.aio.queueDepth);
  options.single_submit = config.aio.singleSubmit;
  options.buffer_count = int32_t(offload.bufferCount);
  options.buffer_size = offload.bufferSize;
  if (dsrt_swap_open(swap->dir.c_str(), &options, &swap->swap) != DSRT_OK)
    return createStringError("%s", dsrt_last_error());
  swap->keys.assign(manifest.args.size(), nullptr);
  for (size_t i = 0; i < manifest.args.size(); ++i) {
    if (!swaps(manifest, i))
      continue;
    const ArgSpec &arg = manifest.args[i];
    std::string file = arg.name + ".swp";
    std::replace(file.begin(), file.end(), '/', '_');
    if (dsrt_swap_add(swap->swap, file.c_str(), numElements(arg.shape) * 4,
                      &swap->keys[i]) != DSRT_OK)
      return createStringError("%s", dsrt_last_error());
  }
  return std::move(swap);
}

StateSwap::~StateSwap() { dsrt_swap_close(swap); }

bool StateSwap::direct() const { return dsrt_swap_direct(swap); }
