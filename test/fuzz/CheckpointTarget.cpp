//===- CheckpointTarget.cpp - checkpoint manifest, `latest` and a shard ---===//
//
// An input is `latest`'s text up to the first newline, then the manifest,
// then (after a line "----") rank0.safetensors: a checkpoint directory as
// `ds-train --load` and `ds-ckpt verify|export` read it.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "ds/Driver/Checkpoint.h"

#include "llvm/Support/FileSystem.h"

using namespace ::ds::driver;

int ds::fuzz::fuzzCheckpoint(const uint8_t *data, size_t size) {
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  auto [latest, rest] = input.split('\n');
  auto [manifest, shard] = rest.split("\n----\n");
  std::string dir = scratchDir() + "/ckpt", tag = dir + "/global_step1";
  llvm::sys::fs::create_directories(tag);
  if (!writeFile(dir + "/latest", latest) ||
      !writeFile(tag + "/manifest.json", manifest) ||
      !writeFile(tag + "/rank0.safetensors", shard))
    return 0;
  auto listing = listCheckpoints(dir);
  if (!listing)
    llvm::consumeError(listing.takeError());
  auto ckpt = CheckpointReader::open(dir);
  if (!ckpt) {
    llvm::consumeError(ckpt.takeError());
    return 0;
  }
  if (llvm::Error err = ckpt->verify())
    llvm::consumeError(std::move(err));
  auto exported = exportSafeTensors(*ckpt, scratchDir() + "/export.safetensors",
                                    /*toF32=*/true, /*withState=*/true);
  if (!exported)
    llvm::consumeError(exported.takeError());
  return 0;
}
