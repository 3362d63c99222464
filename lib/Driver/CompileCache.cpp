//===- CompileCache.cpp - Compiled steps kept between runs ----------------===//
#include "ds/Driver/CompileCache.h"
#include "ds/Config/Config.h"
#include "ds/Driver/Artifact.h"
#include "ds/Driver/ArtifactStep.h"
#include "ds/Driver/JitStep.h"
#include "ds/Execution/JitTarget.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <utime.h>

using namespace ::ds::driver;
namespace cfg = ::ds::config;
namespace fs = llvm::sys::fs;
using llvm::createStringError;

namespace {

/// One program for every rank today; pipeline stages add one per stage.
constexpr const char *kProgram = "train_step";

llvm::Error commError(const char *what) {
  return createStringError("compile cache: %s: %s", what, dsrt_last_error());
}

/// Every rank's value of `mine`.
llvm::Expected<std::vector<int64_t>> gather(int64_t mine, int64_t world) {
  std::vector<int64_t> all(world);
  if (dsrt_all_gather(dsrt_comm_world(), &mine, all.data(), world, DSRT_I64) !=
      0)
    return commError("all-gather");
  return all;
}

llvm::Expected<uint64_t> cacheKey(const StepRequest &request,
                                  const mlir::ds::exec::JitTarget &target) {
  auto model = hashFile(request.modelPath);
  if (!model)
    return model.takeError();
  std::string key;
  llvm::raw_string_ostream os(key);
  // The profile's bytes, as the model's: the schedule follows its numbers.
  if (!request.commProfile.empty()) {
    auto profile = hashFile(request.commProfile);
    if (!profile)
      return profile.takeError();
    os << "comm-profile " << *profile << "\n";
  }
  // Stacked or unrolled layers: the same numbers, different code.
  if (stackLayers(*request.config))
    os << "stack-layers\n";
  if (request.seqLen)
    os << "seq-len " << *request.seqLen << "\n";
  // Timers around every kernel: the same numbers, different code.
  if (request.profile)
    os << "profile\n";
  os << "model " << *model << "\nconfig " << cfg::toJson(*request.config).dump()
     << "\nworld " << request.worldSize << "\nprogram " << kProgram << "\ncpu "
     << target.level << " " << target.cpu << " "
     << llvm::join(target.features, ",") << "\ntarget " << request.target
     << "\n"
     << buildIdentity();
  return llvm::xxh3_64bits(key);
}

/// Compiles into a private directory, then renames it into place: a rank
/// or process racing for the same entry finds it whole or not at all. With
/// `early`, the request's beforeCodegen runs before LLVM, as on the JIT
/// path, so the caller's first values are drawn while the code is
/// generated.
llvm::Error compileEntry(const StepRequest &request,
                         const mlir::ds::exec::JitTarget &target,
                         const std::string &entry, bool early = false) {
  std::string tmp =
      entry + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  fs::remove_directories(tmp);
  ArtifactRequest artifact;
  artifact.step.modelPath = request.modelPath;
  artifact.step.seqLen = request.seqLen;
  artifact.step.config = request.config;
  artifact.step.worldSize = request.worldSize;
  artifact.step.commProfile = request.commProfile;
  artifact.step.target = request.target;
  artifact.step.profile = request.profile;
  if (early)
    artifact.step.beforeCodegen = request.beforeCodegen;
  artifact.configPath = request.configPath;
  artifact.dir = tmp;
  artifact.cpuLevel = target.level;
  artifact.writeIR = false;
  artifact.quiet = true;
  if (llvm::Error err = compileArtifact(artifact, llvm::nulls())) {
    fs::remove_directories(tmp);
    return err;
  }
  if (fs::rename(tmp, entry)) // another process won: its entry is the same
    fs::remove_directories(tmp);
  return llvm::Error::success();
}

/// Rank 0 compiles while the others wait: a heartbeat every second keeps
/// every collective short (no rank is timed out by a long compile), and the
/// waiting ranks sleep between beats instead of polling the network.
llvm::Error compileOnRankZero(const StepRequest &request,
                              const mlir::ds::exec::JitTarget &target,
                              const std::string &entry, bool rankZeroHas) {
  enum : int64_t { Running = 0, Done = 1, Failed = 2 };
  int64_t status = Running;
  llvm::Error result = llvm::Error::success();
  if (request.rank == 0) {
    std::future<llvm::Error> job = std::async(std::launch::async, [&] {
      return rankZeroHas ? llvm::Error::success()
                         : compileEntry(request, target, entry);
    });
    while (status == Running) {
      if (job.wait_for(std::chrono::seconds(1)) == std::future_status::ready) {
        result = job.get();
        status = result ? Failed : Done;
      }
      if (dsrt_broadcast(dsrt_comm_world(), &status, 1, DSRT_I64, 0) != 0)
        return commError("heartbeat");
    }
    return result;
  }
  while (status == Running) {
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    if (dsrt_broadcast(dsrt_comm_world(), &status, 1, DSRT_I64, 0) != 0)
      return commError("waiting for rank 0's compile");
  }
  if (status == Failed)
    return createStringError("rank 0 could not compile the step (its error "
                             "says why)");
  return llvm::Error::success();
}

/// The files of an entry, from rank 0 to the ranks whose cache directory
/// does not have them (node-local directories on other nodes).
llvm::Error shareEntry(const StepRequest &request, const std::string &entry,
                       bool have) {
  auto haves = gather(have, request.worldSize);
  if (!haves)
    return haves.takeError();
  if (llvm::all_of(*haves, [](int64_t h) { return h != 0; }))
    return llvm::Error::success();
  std::vector<std::string> files = {"manifest.json", "ds_config.json"};
  if (request.rank == 0) {
    auto manifest = readArtifactManifest(entry);
    if (!manifest)
      return manifest.takeError();
    for (const ArtifactProgram &p : manifest->programs)
      files.push_back(p.object);
  }
  int64_t count = int64_t(files.size());
  if (dsrt_broadcast(dsrt_comm_world(), &count, 1, DSRT_I64, 0) != 0)
    return commError("sharing the compiled step");
  files.resize(count);
  std::string tmp =
      entry + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  if (!have)
    fs::create_directories(tmp);
  for (std::string &name : files) {
    // Name and bytes as one image, in 8-byte words (the backend's unit).
    std::string image;
    if (request.rank == 0) {
      auto bytes = llvm::MemoryBuffer::getFile(entry + "/" + name);
      if (!bytes)
        return createStringError("%s/%s: %s", entry.c_str(), name.c_str(),
                                 bytes.getError().message().c_str());
      image = name + '\0' + (*bytes)->getBuffer().str();
    }
    int64_t size = int64_t(image.size());
    if (dsrt_broadcast(dsrt_comm_world(), &size, 1, DSRT_I64, 0) != 0)
      return commError("sharing the compiled step");
    std::vector<int64_t> words((size + 7) / 8);
    memcpy(words.data(), image.data(), image.size());
    if (dsrt_broadcast(dsrt_comm_world(), words.data(), int64_t(words.size()),
                       DSRT_I64, 0) != 0)
      return commError("sharing the compiled step");
    if (have)
      continue;
    llvm::StringRef all(reinterpret_cast<const char *>(words.data()), size);
    auto [fileName, contents] = all.split('\0');
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp + "/" + fileName.str(), ec);
    if (ec)
      return createStringError("%s: cannot write: %s", tmp.c_str(),
                               ec.message().c_str());
    os << contents;
  }
  if (!have && fs::rename(tmp, entry))
    fs::remove_directories(tmp);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<CompiledStep>
ds::driver::compileCached(const StepRequest &request, bool quiet) {
  auto settings = compileCacheSettings();
  if (!settings)
    return settings.takeError();
  // A model that cannot be read gets the importer's own error (the other
  // ranks are stopped by the launcher when this one exits).
  if (!fs::is_regular_file(request.modelPath))
    return compileJitStep(request);
  // The cache holds the step alone; an eval function is JIT-compiled.
  bool use = settings->enabled && request.dumpIRDir.empty() && !request.eval;
  const int64_t world = request.worldSize, rank = request.rank;
  // Every rank must take the same path: the cached one talks.
  if (world > 1) {
    auto uses = gather(use, world);
    if (!uses)
      return uses.takeError();
    for (int64_t r = 0; r < world; ++r)
      if ((*uses)[r] != int64_t(use))
        return createStringError(
            "rank %lld %s the compile cache but rank %lld does not: give "
            "every rank the same DS_COMPILE_CACHE and --dump-ir",
            (long long)(use ? rank : r), "uses", (long long)(use ? r : rank));
  }
  if (!use)
    return compileJitStep(request);

  auto target = mlir::ds::exec::resolveJitTargetFromEnvironment();
  if (!target)
    return target.takeError();
  auto key = cacheKey(request, *target);
  if (!key)
    return key.takeError();
  char name[17];
  snprintf(name, sizeof name, "%016llx", (unsigned long long)*key);
  std::string entry = settings->dir + "/" + name;
  if (std::error_code ec = fs::create_directories(settings->dir))
    return createStringError("DS_COMPILE_CACHE %s: cannot create: %s",
                             settings->dir.c_str(), ec.message().c_str());
  auto have = [&] { return fs::exists(entry + "/manifest.json"); };
  bool hit = have();
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::vector<int64_t> hits = {hit};
  if (world > 1) {
    auto keys = gather(int64_t(*key), world);
    if (!keys)
      return keys.takeError();
    auto all = gather(hit, world);
    if (!all)
      return all.takeError();
    hits = std::move(*all);
    for (int64_t r = 0; r < world; ++r)
      if ((*keys)[r] != (*keys)[0])
        return createStringError(
            "rank %lld compiled a different training step than rank 0: the "
            "model, the config or the ds build differ between ranks; give "
            "every rank the same files and binaries (their compile cache "
            "keys differ)",
            (long long)r);
  }
  bool allHit = llvm::all_of(hits, [](int64_t h) { return h != 0; });
  std::string how = "compile cache hit (" + entry + ")";
  // One rank compiling calls beforeCodegen itself, before LLVM; the load
  // must not call it again.
  StepRequest loadRequest = request;
  if (!allHit) {
    const char *what = hit ? "had the step" : "compiled the step";
    if (world == 1) {
      if (llvm::Error err = compileEntry(request, *target, entry, true))
        return std::move(err);
      loadRequest.beforeCodegen = nullptr;
    } else {
      if (llvm::Error err =
              compileOnRankZero(request, *target, entry, hits[0] != 0))
        return std::move(err);
      bool found = have(); // a directory shared with rank 0
      if (rank != 0 && !hit)
        what = found ? "found the step rank 0 compiled"
                     : "received the step rank 0 compiled";
      if (llvm::Error err = shareEntry(request, entry, found))
        return std::move(err);
    }
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (!quiet) // one write per line: ranks share the terminal
      llvm::errs() << llvm::formatv("ds-train: rank {0}: {1} (compile cache "
                                    "{2}, {3:f1} s)\n",
                                    rank, what, entry, seconds)
                          .str();
    how = "compiled (compile cache miss, now " + entry + ")";
  }
  // Its time is the entry's last use: eviction drops the oldest first.
  utime((entry + "/manifest.json").c_str(), nullptr);
  evictCompileCache(settings->dir, settings->maxBytes, entry);
  auto step = loadArtifact(entry, loadRequest);
  if (!step)
    return step.takeError();
  step->origin = how;
  return step;
}
