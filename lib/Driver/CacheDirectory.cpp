//===- CacheDirectory.cpp - Where compiled steps are kept, and how long ---===//
//
// The MLIR-free half of CompileCache.h: settings, sizes, eviction and the
// build identity (ds-report shows them without linking the compiler).
//
//===----------------------------------------------------------------------===//
#include "ds/Driver/Artifact.h"
#include "ds/Driver/CompileCache.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstdlib>
#include <unistd.h>

using namespace ::ds::driver;
namespace fs = llvm::sys::fs;

namespace {

struct Entry {
  std::string path;
  uint64_t bytes = 0;
  llvm::sys::TimePoint<> used; ///< the manifest's time: touched on every hit
};

uint64_t treeBytes(const std::string &dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    fs::file_status status;
    if (!fs::status(it->path(), status) && fs::is_regular_file(status))
      bytes += status.getSize();
  }
  return bytes;
}

std::vector<Entry> entries(const std::string &dir) {
  std::vector<Entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    fs::file_status manifest;
    if (fs::status(it->path() + "/manifest.json", manifest))
      continue; // not an entry (or one being written)
    out.push_back({it->path(), treeBytes(it->path()),
                   manifest.getLastModificationTime()});
  }
  return out;
}

} // namespace

llvm::Expected<CompileCacheSettings> ds::driver::compileCacheSettings() {
  CompileCacheSettings s;
  llvm::StringRef env =
      getenv("DS_COMPILE_CACHE") ? getenv("DS_COMPILE_CACHE") : "";
  if (env == "off" || env == "0") {
    s.enabled = false;
  } else if (!env.empty()) {
    s.dir = env.str();
  } else if (const char *xdg = getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    s.dir = std::string(xdg) + "/ds/compile";
  } else if (const char *home = getenv("HOME"); home && *home) {
    s.dir = std::string(home) + "/.cache/ds/compile";
  } else {
    s.dir = "/tmp/ds-compile-cache-" + std::to_string(getuid());
  }
  if (const char *max = getenv("DS_COMPILE_CACHE_MAX_MB"); max && *max) {
    char *end = nullptr;
    long long mb = strtoll(max, &end, 10);
    if (*end || mb < 0)
      return llvm::createStringError(
          "DS_COMPILE_CACHE_MAX_MB=%s: expected a whole number of MB", max);
    s.maxBytes = uint64_t(mb) << 20;
  }
  return s;
}

CompileCacheStats ds::driver::compileCacheStats(const std::string &dir) {
  CompileCacheStats stats;
  for (const Entry &e : entries(dir)) {
    ++stats.entries;
    stats.bytes += e.bytes;
  }
  return stats;
}

void ds::driver::evictCompileCache(const std::string &dir, uint64_t maxBytes,
                                   const std::string &keep) {
  std::vector<Entry> all = entries(dir);
  uint64_t total = 0;
  for (const Entry &e : all)
    total += e.bytes;
  std::sort(all.begin(), all.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &e : all) {
    if (total <= maxBytes)
      break;
    if (e.path == keep)
      continue;
    // A concurrent reader holds its .so open; removing the name is safe.
    if (!fs::remove_directories(e.path))
      total -= e.bytes;
  }
}

std::string ds::driver::buildIdentity() {
  std::string id = "ds " + dsVersion().str();
  fs::file_status self;
  if (!fs::status("/proc/self/exe", self))
    id += " exe " + std::to_string(self.getSize()) + " " +
          std::to_string(
              self.getLastModificationTime().time_since_epoch().count());
  return id;
}
