//===- FuzzScratch.cpp - Files for the readers that take a path -----------===//
#include "FuzzTargets.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace ds::fuzz;

static std::string &scratchPath() {
  static std::string path;
  return path;
}

static void removeScratch() {
  llvm::sys::fs::remove_directories(scratchPath(), /*IgnoreErrors=*/true);
}

const std::string &ds::fuzz::scratchDir() {
  static const std::string dir = [] {
    // tmpfs when there is one: readers that take a path get a file per input.
    const char *base =
        llvm::sys::fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string d = std::string(base) + "/ds-fuzz-" + std::to_string(getpid());
    llvm::sys::fs::create_directories(d);
    scratchPath() = d;
    std::atexit(removeScratch);
    return d;
  }();
  return dir;
}

bool ds::fuzz::writeFile(const std::string &path, llvm::StringRef bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return bool(out);
}
