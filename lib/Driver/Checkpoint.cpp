//===- Checkpoint.cpp - Sharded checkpoints of the training state ---------===//
#include "ds/Driver/Checkpoint.h"
#include "ds/Driver/SafeTensors.h"
#include "ds/Support/StrictJson.h"
#include "dsrt/dsrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace ds::driver;
using ds::support::jsonInteger;
using ds::support::jsonIntegers;
using llvm::createStringError;
using llvm::Twine;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

#ifndef DS_VERSION
#define DS_VERSION "unknown"
#endif

static constexpr const char *kManifest = "manifest.json";
static constexpr const char *kLatest = "latest";
static constexpr int kFormatVersion = 1;

static int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t CkptTensor::numElements() const { return product(shape); }
int64_t CkptTensorInfo::numElements() const { return product(shape); }
unsigned CkptTensorInfo::elementBytes() const {
  return safeTensorsDTypeSize(dtype);
}

std::string ds::driver::ckptTagForStep(int64_t step) {
  return "global_step" + std::to_string(step);
}

static std::string hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
  return buf;
}

static std::optional<int64_t> stepOfTag(llvm::StringRef tag) {
  int64_t step;
  if (!tag.consume_front("global_step") || tag.getAsInteger(10, step))
    return std::nullopt;
  return step;
}

void ds::driver::ckptCrashPoint(llvm::StringRef point) {
  // DS_CKPT_CRASH_AT=POINT[:N]: die at the N-th time (default 1) this
  // process reaches POINT, as a power cut would: no cleanup at all.
  static const char *spec = getenv("DS_CKPT_CRASH_AT");
  if (!spec)
    return;
  static int hits = 0;
  auto [name, nth] = llvm::StringRef(spec).split(':');
  int want = 1;
  if (!nth.empty())
    nth.getAsInteger(10, want);
  if (name == point && ++hits == want)
    raise(SIGKILL);
}

//===----------------------------------------------------------------------===//
// Small POSIX helpers: every failure names the file and the reason.
//===----------------------------------------------------------------------===//

static llvm::Error sysError(const Twine &what, const Twine &file) {
  return createStringError(file + ": " + what + ": " + strerror(errno));
}

/// A write into `file` of `needed` bytes failed with errno `err`. A full
/// or read-only filesystem is named with the bytes the save needs and what
/// is free there, so the fix is clear.
static llvm::Error writeError(int err, const Twine &what, llvm::StringRef file,
                              uint64_t needed) {
  if (err != ENOSPC && err != EDQUOT && err != EROFS) {
    errno = err;
    return sysError(what, file);
  }
  std::string free = "unknown";
  struct statvfs st;
  if (::statvfs(path::parent_path(file).str().c_str(), &st) == 0)
    free = std::to_string(uint64_t(st.f_bavail) * st.f_frsize);
  if (err == EROFS)
    return createStringError(
        file + ": " + what + ": the filesystem is read-only; the save needs " +
        Twine(needed) +
        " bytes there. Remount it read-write or --save to another directory");
  return createStringError(
      file + ": " + what + ": " + strerror(err) + "; the save needs " +
      Twine(needed) + " bytes, " + free +
      " are free there. Free space or --save to another directory");
}

/// Writes every byte; 0 or the errno of the failed write.
static int writeAllBytes(int fd, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, std::min<size_t>(bytes, size_t(1) << 30));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    p += n;
    bytes -= size_t(n);
  }
  return 0;
}

static llvm::Error writeAll(int fd, const void *data, size_t bytes,
                            llvm::StringRef file) {
  if (int err = writeAllBytes(fd, data, bytes)) {
    errno = err;
    return sysError("write failed", file);
  }
  return llvm::Error::success();
}

static llvm::Error readAt(int fd, void *data, size_t bytes, uint64_t offset,
                          llvm::StringRef file) {
  char *p = static_cast<char *>(data);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return sysError("read failed", file);
    if (n == 0)
      return createStringError(file + ": ends before byte " +
                               Twine(offset + bytes) + "; truncated?");
    p += n;
    bytes -= size_t(n);
    offset += uint64_t(n);
  }
  return llvm::Error::success();
}

/// Makes a rename in `dir` durable.
static llvm::Error syncDir(llvm::StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return sysError("cannot open directory", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0)
    return sysError("fsync failed", dir);
  return llvm::Error::success();
}

/// Writes `pieces` to `file` atomically: FILE.tmp, fsync, rename, fsync of
/// the directory. A crash leaves either the old file or the new one.
static llvm::Error
writeFileAtomically(llvm::StringRef file,
                    llvm::ArrayRef<std::pair<const void *, size_t>> pieces,
                    llvm::StringRef crashPointBeforeRename = "",
                    bool syncDirectory = true,
                    const std::function<void(size_t)> &afterPiece = {},
                    const std::function<void()> &afterWrites = {}) {
  std::string tmp = (file + ".tmp").str();
  uint64_t needed = 0;
  for (auto piece : pieces)
    needed += piece.second;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return writeError(errno, "cannot create", tmp, needed);
  // A failed write leaves no partial file to fill the disk further.
  auto fail = [&](const char *what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return writeError(err, what, tmp, needed);
  };
  // Start the device on each 8 MiB as soon as it is written, so it works
  // while the rest is copied in and the final fsync has little left.
  const uint64_t kFlushChunk = 8 << 20;
  uint64_t written = 0, flushed = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto [data, bytes] = pieces[i];
    if (int err = writeAllBytes(fd, data, bytes)) {
      errno = err;
      return fail("write failed");
    }
    written += bytes;
    if (written - flushed >= kFlushChunk) {
      ::sync_file_range(fd, off_t(flushed), off_t(written - flushed),
                        SYNC_FILE_RANGE_WRITE);
      flushed = written;
    }
    if (afterPiece)
      afterPiece(i);
  }
  if (afterWrites)
    afterWrites();
  if (::fsync(fd) != 0)
    return fail("fsync failed");
  // The pages are clean now and nobody reads them soon: hand them back.
  // Measured here: once written checkpoints fill the page cache, every new
  // page costs a reclaim and writes drop from ~2 GB/s to ~0.3-0.5 GB/s.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (!crashPointBeforeRename.empty())
    ckptCrashPoint(crashPointBeforeRename);
  if (::rename(tmp.c_str(), file.str().c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return writeError(err, "cannot rename " + tmp + " to", file, needed);
  }
  return syncDirectory ? syncDir(path::parent_path(file))
                       : llvm::Error::success();
}

static llvm::Expected<std::string> readSmallFile(const Twine &file) {
  auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return createStringError(file +
                             ": cannot read: " + buf.getError().message());
  return (*buf)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

namespace {
/// This rank's part of one tensor in its shard file.
struct ShardSlice {
  size_t tensor; // index into the save's tensor list
  int64_t first = 0, count = 0;
  const char *data = nullptr; // the rank's live buffer
  uint64_t bytes = 0;
  // Filled by the write:
  uint64_t offset = 0, xxh3 = 0;
};

struct WriteResult {
  bool ok = false;
  std::string error;
  uint64_t fileSize = 0, headerXxh3 = 0;
  double seconds = 0;
};
} // namespace

/// Rank 0's part of a commit: the manifest, then `latest`.
struct CheckpointSaver::CommitFiles {
  std::string manifestPath, manifest, latestPath, latest;
};

static llvm::Error writeCommitFiles(const CheckpointSaver::CommitFiles &c) {
  llvm::Error err = writeFileAtomically(
      c.manifestPath, {{c.manifest.data(), c.manifest.size()}});
  if (err)
    return err;
  ckptCrashPoint("manifest-written");
  // No directory sync after `latest`'s rename: if a crash loses it,
  // `latest` names the previous complete checkpoint, which stays intact.
  return writeFileAtomically(c.latestPath, {{c.latest.data(), c.latest.size()}},
                             "latest-written", /*syncDirectory=*/false);
}

struct CheckpointSaver::Pending {
  std::string tag, tagDir, shardName;
  CkptRunInfo run;
  std::vector<CkptTensor> tensors; // data pointers unused after the copy
  std::vector<ShardSlice> slices;
  // Async: the writer thread hashes and write()s straight from the live
  // buffers while the step loop reports and feeds the next batch; the
  // kernel's copy into the page cache is the snapshot. The next step
  // updates those buffers in place, so it waits for `copied` (the fsync
  // and the commit stay off the training thread).
  int64_t overwriteStep = 0;
  std::promise<void> copiedPromise;
  std::shared_future<void> copied;
  bool copyWaited = false;
  /// Async, rank 0: the previous save's commit files, written by this
  /// save's thread before anything else (four fsyncs off the training
  /// thread; `latest` still moves only after every shard is complete).
  std::unique_ptr<CommitFiles> previousCommit;
  WriteResult result;
  std::thread writer;
};

static std::string shardFileName(int rank) {
  return "rank" + std::to_string(rank) + ".safetensors";
}

/// Writes the shard: a safetensors file whose tensors are this rank's
/// slices (flat, or whole with their shape when the rank holds all).
static void writeShard(CheckpointSaver::Pending &p, int rank, bool async) {
  auto start = std::chrono::steady_clock::now();

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "ds-checkpoint-shard"},
                            {"tag", p.tag},
                            {"rank", std::to_string(rank)}};
  uint64_t offset = 0;
  for (ShardSlice &s : p.slices) {
    const CkptTensor &t = p.tensors[s.tensor];
    std::vector<int64_t> shape =
        s.count == t.numElements() ? t.shape : std::vector<int64_t>{s.count};
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", shape},
                      {"data_offsets", {offset, offset + s.bytes}}};
    s.offset = offset; // made absolute below
    offset += s.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  char lenBytes[8];
  for (int i = 0; i < 8; ++i)
    lenBytes[i] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);
  std::vector<std::pair<const void *, size_t>> pieces;
  pieces.push_back({lenBytes, 8});
  pieces.push_back({text.data(), text.size()});
  std::string headerBytes = std::string(lenBytes, 8) + text;
  p.result.headerXxh3 = llvm::xxh3_64bits(llvm::StringRef(headerBytes));
  for (ShardSlice &s : p.slices) {
    s.offset += headerBytes.size();
    pieces.push_back({s.data, s.bytes});
  }
  // Each slice is hashed right after its write, while it is still in
  // cache and the device takes the bytes before it.
  auto hashPiece = [&p](size_t piece) {
    if (piece < 2) // the length and the header
      return;
    ShardSlice &s = p.slices[piece - 2];
    s.xxh3 = llvm::xxh3_64bits(llvm::StringRef(s.data, s.bytes));
  };
  p.result.fileSize = headerBytes.size() + offset;
  std::string file = (p.tagDir + "/" + p.shardName);
  // Async: once every slice is written and hashed the step may overwrite
  // the buffers; the previous save's manifest and `latest` are written
  // before this shard's fsync.
  bool released = false;
  llvm::Error commitErr = llvm::Error::success();
  auto release = [&] {
    released = true;
    p.copiedPromise.set_value();
    if (p.previousCommit)
      commitErr = writeCommitFiles(*p.previousCommit);
  };
  // Rank 0 makes the rename durable with the manifest's directory sync.
  llvm::Error err = writeFileAtomically(
      file, pieces, "shard-written", /*syncDirectory=*/rank != 0, hashPiece,
      async ? std::function<void()>(release) : std::function<void()>());
  if (async && !released) {
    p.copiedPromise.set_value();
    // The previous save is complete whatever became of this one: commit it
    // (its files are small, and a failed shard left no partial file).
    if (p.previousCommit)
      commitErr = writeCommitFiles(*p.previousCommit);
  }
  if (err && commitErr)
    err = llvm::joinErrors(std::move(err), std::move(commitErr));
  else if (!err)
    err = std::move(commitErr);
  else
    llvm::consumeError(std::move(commitErr));
  if (err) {
    p.result.error = llvm::toString(std::move(err));
  } else {
    ckptCrashPoint("shard-renamed");
    p.result.ok = true;
  }
  p.result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

llvm::Expected<std::unique_ptr<CheckpointSaver>>
CheckpointSaver::create(llvm::StringRef dir, bool async,
                        const CkptPlace &place) {
  if (std::error_code ec = fs::create_directories(dir))
    return createStringError("--save %s: cannot create the directory: %s",
                             dir.str().c_str(), ec.message().c_str());
  std::unique_ptr<CheckpointSaver> saver(new CheckpointSaver());
  saver->dir = dir.str();
  saver->async = async;
  saver->place = place;
  return saver;
}

CheckpointSaver::~CheckpointSaver() {
  // An error path left a write in flight: let it end, commit nothing.
  if (pending && pending->writer.joinable())
    pending->writer.join();
}

llvm::Error CheckpointSaver::save(const CkptRunInfo &run,
                                  llvm::ArrayRef<CkptTensor> tensors) {
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error err = commitPrevious())
    return err;
  const int rank = place.rank, worldSize = place.worldSize;

  auto p = std::make_unique<Pending>();
  p->tag = ckptTagForStep(run.step);
  p->tagDir = dir + "/" + p->tag;
  p->shardName = shardFileName(rank);
  p->run = run;
  p->tensors.assign(tensors.begin(), tensors.end());
  // This rank's slices: its part of every sharded tensor where it is this
  // rank's to write (CkptTensor::held); whole tensors
  // (identical on every rank of the program) are spread round-robin so each
  // rank writes a similar share.
  auto planSlices = [&]() -> llvm::Error {
    uint64_t total = 0;
    for (size_t i = 0; i < p->tensors.size(); ++i) {
      const CkptTensor &t = p->tensors[i];
      unsigned elt = safeTensorsDTypeSize(t.dtype);
      if (!elt)
        return createStringError("checkpoint: tensor \"%s\" has dtype %s, "
                                 "which safetensors cannot hold",
                                 t.name.c_str(), t.dtype.c_str());
      ShardSlice s;
      s.tensor = i;
      int64_t numel = t.numElements();
      if (t.held) {
        if (!t.held->writes)
          continue;
        s.first = t.held->first;
        s.count = t.held->count;
      } else if (int(i % place.programSize) == place.programRank) {
        s.count = numel;
      }
      if (s.count == 0)
        continue;
      s.bytes = uint64_t(s.count) * elt;
      s.data = static_cast<const char *>(t.data); // the rank's buffer start
      total += s.bytes;
      p->slices.push_back(s);
    }
    bytes = total;
    return llvm::Error::success();
  };
  std::string manifest = p->tagDir + "/" + kManifest;
  auto prepare = [&]() -> llvm::Error {
    // A committed checkpoint is never overwritten in place: a crash half
    // way would leave `latest` naming a mix of two saves.
    if (fs::exists(manifest)) {
      std::string latest;
      if (auto text = readSmallFile(dir + "/" + kLatest))
        latest = llvm::StringRef(*text).trim().str();
      else
        llvm::consumeError(text.takeError());
      std::optional<int64_t> latestStep = stepOfTag(latest);
      if (latestStep && *latestStep >= run.step)
        return createStringError(
            "--save %s: %s already holds a committed checkpoint; this run "
            "would overwrite it at step %lld. Save to another directory or "
            "remove that tag",
            dir.c_str(), p->tagDir.c_str(), (long long)run.step);
    }
    if (std::error_code ec = fs::create_directories(p->tagDir))
      return writeError(ec.value(), "cannot create the directory", p->tagDir,
                        bytes);
    return llvm::Error::success();
  };
  llvm::Error prepared = planSlices();
  if (!prepared)
    prepared = prepare();
  // Every rank has checked the old manifest before rank 0 drops it, and no
  // rank starts a save another could not (it would wait for it forever).
  if (worldSize > 1) {
    int32_t failed = prepared ? 1 : 0;
    if (dsrt_all_reduce(dsrt_comm_world(), &failed, &failed, 1, DSRT_I32,
                        DSRT_MAX) != 0) {
      llvm::consumeError(std::move(prepared));
      return createStringError("checkpoint %s: %s", p->tag.c_str(),
                               dsrt_last_error());
    }
    if (!prepared && failed)
      prepared = createStringError("checkpoint %s: another rank could not "
                                   "start the save (its error says why)",
                                   p->tag.c_str());
  }
  if (prepared) {
    // The previous save is complete: its commit does not wait for this one.
    if (deferred)
      prepared =
          llvm::joinErrors(std::move(prepared), writeCommitFiles(*deferred));
    deferred.reset();
    return prepared;
  }
  p->previousCommit = std::move(deferred);
  if (rank == 0)
    fs::remove(manifest);

  if (async) {
    // The next step updates the model states in place.
    p->overwriteStep = run.step + 1;
    p->copied = p->copiedPromise.get_future().share();
    for (CkptTensor &t : p->tensors)
      t.data = nullptr;
    Pending *raw = p.get();
    int r = rank;
    p->writer = std::thread([raw, r] {
      // Training runs on the other threads: on a contended core it wins.
      setpriority(PRIO_PROCESS, pid_t(syscall(SYS_gettid)), 10);
      writeShard(*raw, r, true);
    });
    pending = std::move(p);
  } else {
    writeShard(*p, rank, false);
    pending = std::move(p);
    if (llvm::Error err = commit(/*deferWrite=*/false))
      return err;
  }
  stallS = commitS + std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  commitS = 0;
  return llvm::Error::success();
}

llvm::Error CheckpointSaver::commitPrevious() {
  if (!pending)
    return llvm::Error::success();
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = commit(/*deferWrite=*/async);
  commitS +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return err;
}

llvm::Error CheckpointSaver::checkPlannedSaves(int64_t firstStep,
                                               int64_t lastStep,
                                               int64_t interval) const {
  auto listing = listCheckpoints(dir);
  if (!listing)
    return listing.takeError();
  // A complete tag newer than `latest` is the leftover of a save that
  // crashed before its commit: it may go.
  std::optional<int64_t> latest = stepOfTag(listing->latest);
  for (const auto &e : listing->tags) {
    bool planned =
        e.step == lastStep || (interval > 0 && e.step % interval == 0);
    if (!e.complete || !planned || e.step <= firstStep || e.step > lastStep ||
        !latest || e.step > *latest)
      continue;
    return createStringError(
        "--save %s: %s/%s already holds a committed checkpoint, which this "
        "run would overwrite at step %lld; save to another directory or "
        "remove that tag",
        dir.c_str(), dir.c_str(), e.tag.c_str(), (long long)e.step);
  }
  return llvm::Error::success();
}

double CheckpointSaver::beforeStep(int64_t step) {
  if (!pending || !pending->writer.joinable() || pending->copyWaited ||
      step < pending->overwriteStep)
    return 0;
  auto start = std::chrono::steady_clock::now();
  pending->copied.wait();
  pending->copyWaited = true;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void CheckpointSaver::abandon() {
  if (pending && pending->writer.joinable())
    pending->writer.join();
  pending.reset();
}

llvm::Error CheckpointSaver::finish() {
  if (!pending)
    return llvm::Error::success();
  return commit(/*deferWrite=*/false);
}

/// Every rank's `text` (of any length), gathered over the world.
static llvm::Expected<std::vector<std::string>>
allGatherText(const std::string &text, int worldSize) {
  if (worldSize == 1)
    return std::vector<std::string>{text};
  dsrt_comm *world = dsrt_comm_world();
  int64_t length = int64_t(text.size());
  std::vector<int64_t> lengths(worldSize);
  if (dsrt_all_gather(world, &length, lengths.data(), worldSize, DSRT_I64))
    return createStringError(dsrt_last_error());
  int64_t words = (*std::max_element(lengths.begin(), lengths.end()) + 7) / 8;
  std::vector<int64_t> mine(words, 0), all(words * worldSize);
  std::memcpy(mine.data(), text.data(), text.size());
  if (dsrt_all_gather(world, mine.data(), all.data(), words * worldSize,
                      DSRT_I64))
    return createStringError(dsrt_last_error());
  std::vector<std::string> texts;
  for (int r = 0; r < worldSize; ++r)
    texts.emplace_back(reinterpret_cast<const char *>(&all[r * words]),
                       size_t(lengths[r]));
  return texts;
}

llvm::Error CheckpointSaver::commit(bool deferWrite) {
  std::unique_ptr<Pending> p = std::move(pending);
  if (p->writer.joinable())
    p->writer.join();
  writeS = p->result.seconds;

  // Every rank's shard index, gathered: its outcome and, per tensor it
  // holds, the slice it wrote. Ranks of different pipeline stages hold
  // different tensors, so the index is keyed by name. The gather is also
  // the barrier: each rank's shard is renamed and synced before it takes
  // part.
  const int rank = place.rank, worldSize = place.worldSize;
  std::vector<const ShardSlice *> sliceOf(p->tensors.size(), nullptr);
  for (const ShardSlice &s : p->slices)
    sliceOf[s.tensor] = &s;
  nlohmann::ordered_json mine = {{"ok", p->result.ok},
                                 {"bytes", p->result.fileSize},
                                 {"header_xxh3", p->result.headerXxh3},
                                 {"tensors", nlohmann::ordered_json::array()}};
  for (size_t i = 0; i < p->tensors.size(); ++i) {
    const CkptTensor &t = p->tensors[i];
    nlohmann::ordered_json entry = {{"name", t.name},
                                    {"kind", t.kind},
                                    {"dtype", t.dtype},
                                    {"shape", t.shape}};
    if (const ShardSlice *s = sliceOf[i])
      entry["slice"] = {s->first, s->count, s->offset, s->bytes, s->xxh3};
    mine["tensors"].push_back(std::move(entry));
  }
  auto gathered = allGatherText(mine.dump(), worldSize);
  if (!gathered)
    return createStringError("checkpoint %s: gathering the shard index: %s",
                             p->tag.c_str(),
                             llvm::toString(gathered.takeError()).c_str());
  std::vector<nlohmann::ordered_json> rows;
  for (const std::string &text : *gathered)
    rows.push_back(nlohmann::ordered_json::parse(text));
  // A save that cannot complete leaves no shard behind to fill the disk.
  auto drop = [&] {
    fs::remove(p->tagDir + "/" + p->shardName);
    fs::remove(p->tagDir); // only once it is empty
  };
  if (!p->result.ok) {
    drop();
    return createStringError("checkpoint %s: %s; `latest` still names the "
                             "last complete checkpoint",
                             p->tag.c_str(), p->result.error.c_str());
  }
  for (int r = 0; r < worldSize; ++r)
    if (!rows[r].at("ok").get<bool>()) {
      drop();
      return createStringError(
          "checkpoint %s: rank %d could not write its part (its own error "
          "says why); `latest` still names the last complete checkpoint",
          p->tag.c_str(), r);
    }

  // Every rank merges the index, so all agree on a refusal. A tensor is
  // listed where its lowest stage lists it; a later stage's slices of it
  // are copies (ranks are in stage order).
  struct Merged {
    nlohmann::ordered_json entry;
    int stage;
    nlohmann::ordered_json slices = nlohmann::ordered_json::array();
    nlohmann::ordered_json copies = nlohmann::ordered_json::array();
  };
  std::vector<Merged> merged;
  llvm::StringMap<size_t> byName;
  for (int r = 0; r < worldSize; ++r) {
    int stage = r / place.programSize;
    for (const nlohmann::ordered_json &t : rows[r].at("tensors")) {
      std::string name = t.at("name").get<std::string>();
      auto [it, fresh] = byName.try_emplace(name, merged.size());
      if (fresh)
        merged.push_back({nlohmann::ordered_json{{"name", name},
                                                 {"kind", t.at("kind")},
                                                 {"dtype", t.at("dtype")},
                                                 {"shape", t.at("shape")}},
                          stage});
      Merged &m = merged[it->second];
      if (m.entry["kind"] != t.at("kind") ||
          m.entry["dtype"] != t.at("dtype") ||
          m.entry["shape"] != t.at("shape"))
        return createStringError(
            "checkpoint %s: tensor \"%s\" is %s %s on stage %d but %s %s on "
            "stage %d; two stages hold different tensors under one name",
            p->tag.c_str(), name.c_str(), m.entry["dtype"].dump().c_str(),
            m.entry["shape"].dump().c_str(), m.stage,
            t.at("dtype").dump().c_str(), t.at("shape").dump().c_str(), stage);
      if (!t.contains("slice"))
        continue;
      const nlohmann::ordered_json &rec = t.at("slice");
      nlohmann::ordered_json slice = {{"rank", r},
                                      {"file", shardFileName(r)},
                                      {"offset", rec[2].get<uint64_t>()},
                                      {"length", rec[3].get<uint64_t>()},
                                      {"first", rec[0].get<int64_t>()},
                                      {"count", rec[1].get<int64_t>()},
                                      {"xxh3", hex64(rec[4].get<uint64_t>())}};
      (stage == m.stage ? m.slices : m.copies).push_back(std::move(slice));
    }
  }

  int status = 0;
  std::string failure;
  if (rank == 0) {
    CommitFiles commitFiles;
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    m["format"] = "ds-checkpoint";
    m["format_version"] = kFormatVersion;
    m["ds_version"] = DS_VERSION;
    m["tag"] = p->tag;
    m["step"] = p->run.step;
    m["seed"] = p->run.seed;
    m["seed_option"] = p->run.seedOption
                           ? nlohmann::ordered_json(*p->run.seedOption)
                           : nlohmann::ordered_json(nullptr);
    m["data_order"] = p->run.dataOrder;
    m["global_batch"] = p->run.globalBatch;
    m["world"] = {{"world_size", p->run.worldSize},
                  {"dp", p->run.dpSize},
                  {"ep", p->run.epSize},
                  {"stages", p->run.stages},
                  {"zero_stage", p->run.zeroStage}};
    m["model"] = {{"path", p->run.modelPath}, {"xxh3", p->run.modelHash}};
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(
        p->run.configJson, nullptr, /*allow_exceptions=*/false);
    m["config"] =
        config.is_discarded() ? nlohmann::ordered_json(nullptr) : config;
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (int r = 0; r < worldSize; ++r)
      files.push_back(
          {{"name", shardFileName(r)},
           {"rank", r},
           {"stage", r / place.programSize},
           {"bytes", rows[r].at("bytes").get<uint64_t>()},
           {"header_xxh3", hex64(rows[r].at("header_xxh3").get<uint64_t>())}});
    m["files"] = files;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (Merged &t : merged) {
      t.entry["slices"] = std::move(t.slices);
      if (!t.copies.empty())
        t.entry["copies"] = std::move(t.copies);
      tensors.push_back(std::move(t.entry));
    }
    m["tensors"] = tensors;
    commitFiles.manifestPath = p->tagDir + "/" + kManifest;
    commitFiles.manifest = m.dump(1) + "\n";
    commitFiles.latestPath = dir + "/" + kLatest;
    commitFiles.latest = p->tag + "\n";
    if (deferWrite) {
      // Written by the next save's thread; its outcome travels with that
      // save's shard status.
      deferred = std::make_unique<CommitFiles>(std::move(commitFiles));
      return llvm::Error::success();
    }
    if (llvm::Error err = writeCommitFiles(commitFiles)) {
      status = 1;
      failure = llvm::toString(std::move(err));
    }
  }
  if (deferWrite)
    return llvm::Error::success();
  // Rank 0's outcome, so no rank trains on believing a save landed.
  if (worldSize > 1 &&
      dsrt_broadcast(dsrt_comm_world(), &status, 1, DSRT_I32, 0) != 0)
    return createStringError("checkpoint %s: %s", p->tag.c_str(),
                             dsrt_last_error());
  if (status != 0)
    return createStringError(
        "checkpoint %s: %s", p->tag.c_str(),
        rank == 0 ? failure.c_str()
                  : "rank 0 could not write the manifest or `latest`");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

static uint64_t parseHex(const std::string &s) {
  uint64_t v = 0;
  if (llvm::StringRef(s).getAsInteger(16, v))
    throw std::runtime_error("\"" + s + "\" is not a hex checksum");
  return v;
}

llvm::Expected<CheckpointReader> CheckpointReader::open(llvm::StringRef dir,
                                                        llvm::StringRef tag) {
  CheckpointReader ckpt;
  ckpt.dirPath = dir.str();
  if (!fs::is_directory(dir))
    return createStringError("%s: no such checkpoint directory",
                             dir.str().c_str());
  if (tag.empty()) {
    auto text = readSmallFile(dir + "/" + kLatest);
    if (!text) {
      llvm::consumeError(text.takeError());
      return createStringError(
          "%s/latest: missing; no save into %s completed (give --tag to "
          "pick a tag, or see `ds-ckpt inspect %s`)",
          dir.str().c_str(), dir.str().c_str(), dir.str().c_str());
    }
    ckpt.tagName = llvm::StringRef(*text).trim().str();
    if (ckpt.tagName.empty() || ckpt.tagName.find('/') != std::string::npos)
      return createStringError("%s/latest: does not name a tag (\"%s\")",
                               dir.str().c_str(), ckpt.tagName.c_str());
  } else {
    ckpt.tagName = tag.str();
  }
  ckpt.tagPath = ckpt.dirPath + "/" + ckpt.tagName;
  if (!fs::is_directory(ckpt.tagPath))
    return createStringError("%s: no such tag in %s", ckpt.tagName.c_str(),
                             ckpt.dirPath.c_str());
  std::string manifestPath = ckpt.tagPath + "/" + kManifest;
  auto text = readSmallFile(manifestPath);
  if (!text) {
    llvm::consumeError(text.takeError());
    return createStringError("%s: missing; the save of %s did not complete, "
                             "so it cannot be loaded",
                             manifestPath.c_str(), ckpt.tagName.c_str());
  }
  nlohmann::json m =
      nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object())
    return createStringError("%s: not valid JSON", manifestPath.c_str());
  try {
    if (m.at("format").get<std::string>() != "ds-checkpoint")
      throw std::runtime_error("format is not \"ds-checkpoint\"");
    int version = jsonInteger<int>(m, "format_version");
    if (version != kFormatVersion)
      throw std::runtime_error("format_version " + std::to_string(version) +
                               " is not the version this ds reads (" +
                               std::to_string(kFormatVersion) + ")");
    ckpt.dsVersion = m.at("ds_version").get<std::string>();
    CkptRunInfo &run = ckpt.runInfo;
    run.step = jsonInteger<int64_t>(m, "step");
    run.seed = jsonInteger<uint64_t>(m, "seed");
    if (!m.at("seed_option").is_null())
      run.seedOption = jsonInteger<uint64_t>(m, "seed_option");
    run.dataOrder = m.at("data_order").get<std::string>();
    run.globalBatch = jsonInteger<int64_t>(m, "global_batch");
    run.worldSize = jsonInteger<int>(m.at("world"), "world_size");
    run.dpSize = jsonInteger<int64_t>(m.at("world"), "dp");
    run.epSize = jsonInteger<int64_t>(m.at("world"), "ep", 1);
    run.stages = jsonInteger<int64_t>(m.at("world"), "stages", 1);
    run.zeroStage = jsonInteger<int64_t>(m.at("world"), "zero_stage");
    run.configJson = m.at("config").dump();
    run.modelPath = m.at("model").at("path").get<std::string>();
    run.modelHash = m.at("model").at("xxh3").get<std::string>();
    for (auto &f : m.at("files")) {
      CkptFileInfo info;
      info.name = f.at("name").get<std::string>();
      if (info.name.find('/') != std::string::npos)
        throw std::runtime_error("file name \"" + info.name +
                                 "\" leaves the tag directory");
      info.rank = jsonInteger<int>(f, "rank");
      info.stage = jsonInteger<int>(f, "stage", 0);
      info.size = jsonInteger<uint64_t>(f, "bytes");
      info.headerXxh3 = parseHex(f.at("header_xxh3").get<std::string>());
      ckpt.fileInfos.push_back(info);
    }
    for (auto &t : m.at("tensors")) {
      CkptTensorInfo info;
      info.name = t.at("name").get<std::string>();
      info.kind = t.at("kind").get<std::string>();
      info.dtype = t.at("dtype").get<std::string>();
      info.shape = jsonIntegers(t, "shape");
      if (!info.elementBytes())
        throw std::runtime_error("tensor \"" + info.name +
                                 "\": unknown dtype " + info.dtype);
      // Readers size buffers from the shape: it must be one a file can hold.
      uint64_t tensorBytes = info.elementBytes();
      for (int64_t d : info.shape)
        if (d < 0 ||
            __builtin_mul_overflow(tensorBytes, uint64_t(d), &tensorBytes) ||
            tensorBytes > uint64_t(INT64_MAX))
          throw std::runtime_error("tensor \"" + info.name + "\": shape " +
                                   t.at("shape").dump() +
                                   " is negative or larger than a file");
      auto parseSlice = [&](const nlohmann::json &s) {
        CkptSlice slice;
        slice.rank = jsonInteger<int>(s, "rank");
        slice.file = s.at("file").get<std::string>();
        slice.offset = jsonInteger<uint64_t>(s, "offset");
        slice.length = jsonInteger<uint64_t>(s, "length");
        slice.first = jsonInteger<int64_t>(s, "first");
        slice.count = jsonInteger<int64_t>(s, "count");
        slice.xxh3 = parseHex(s.at("xxh3").get<std::string>());
        auto file = llvm::find_if(ckpt.fileInfos, [&](const CkptFileInfo &f) {
          return f.name == slice.file;
        });
        if (file == ckpt.fileInfos.end())
          throw std::runtime_error("tensor \"" + info.name +
                                   "\": slice in unlisted file " + slice.file);
        uint64_t bytes = 0;
        if (slice.count < 0 || slice.first < 0 ||
            __builtin_mul_overflow(uint64_t(slice.count), info.elementBytes(),
                                   &bytes) ||
            slice.length != bytes || slice.offset > file->size ||
            slice.length > file->size - slice.offset)
          throw std::runtime_error(
              "tensor \"" + info.name + "\": slice of rank " +
              std::to_string(slice.rank) + " has inconsistent bounds");
        return slice;
      };
      int64_t covered = 0;
      for (auto &s : t.at("slices")) {
        info.slices.push_back(parseSlice(s));
        if (__builtin_add_overflow(covered, info.slices.back().count, &covered))
          throw std::runtime_error("tensor \"" + info.name +
                                   "\": slices hold more elements than a "
                                   "file can");
      }
      if (t.contains("copies"))
        for (auto &s : t.at("copies"))
          info.copies.push_back(parseSlice(s));
      llvm::sort(info.slices, [](const CkptSlice &a, const CkptSlice &b) {
        return a.first < b.first;
      });
      int64_t expect = 0;
      for (const CkptSlice &s : info.slices) {
        if (s.first != expect)
          throw std::runtime_error("tensor \"" + info.name +
                                   "\": slices leave a gap or overlap at "
                                   "element " +
                                   std::to_string(expect));
        expect += s.count; // no overflow: bounded by `covered`
      }
      if (covered != info.numElements())
        throw std::runtime_error("tensor \"" + info.name + "\": slices hold " +
                                 std::to_string(covered) + " of " +
                                 std::to_string(info.numElements()) +
                                 " elements");
      ckpt.infos.push_back(std::move(info));
    }
  } catch (const std::exception &e) {
    return createStringError("%s: malformed manifest: %s", manifestPath.c_str(),
                             e.what());
  }
  // Missing or truncated shards are found here, before anything is read.
  for (const CkptFileInfo &f : ckpt.fileInfos) {
    std::string file = ckpt.tagPath + "/" + f.name;
    fs::file_status st;
    if (fs::status(file, st) || !fs::exists(st))
      return createStringError(
          "%s: missing (the shard of rank %d%s); the checkpoint %s is "
          "incomplete",
          file.c_str(), f.rank,
          ckpt.runInfo.stages > 1
              ? (", pipeline stage " + std::to_string(f.stage)).c_str()
              : "",
          ckpt.tagName.c_str());
    if (st.getSize() != f.size)
      return createStringError(
          "%s: %llu bytes, but the manifest says %llu; the file is %s",
          file.c_str(), (unsigned long long)st.getSize(),
          (unsigned long long)f.size,
          st.getSize() < f.size ? "truncated"
                                : "not the one the manifest "
                                  "describes");
  }
  return ckpt;
}

const CkptTensorInfo *CheckpointReader::find(llvm::StringRef name) const {
  for (const CkptTensorInfo &t : infos)
    if (t.name == name)
      return &t;
  return nullptr;
}

namespace {
/// Open shard files of one read, closed together.
struct FileCache {
  std::string dir;
  std::vector<std::pair<std::string, int>> fds;
  ~FileCache() {
    for (auto &[name, fd] : fds)
      ::close(fd);
  }
  llvm::Expected<int> get(const std::string &name) {
    for (auto &[n, fd] : fds)
      if (n == name)
        return fd;
    std::string file = dir + "/" + name;
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return sysError("cannot open", file);
    fds.push_back({name, fd});
    return fd;
  }
};

/// Reads one slice whole and checks its checksum.
llvm::Error readSlice(FileCache &files, const CkptTensorInfo &t,
                      const CkptSlice &s, std::vector<char> &buf) {
  auto fd = files.get(s.file);
  if (!fd)
    return fd.takeError();
  buf.resize(s.length);
  std::string file = files.dir + "/" + s.file;
  if (llvm::Error err = readAt(*fd, buf.data(), s.length, s.offset, file))
    return err;
  uint64_t got = llvm::xxh3_64bits(llvm::StringRef(buf.data(), buf.size()));
  if (got != s.xxh3)
    return createStringError(
        "%s: checksum mismatch in tensor \"%s\" (elements %lld..%lld, bytes "
        "%llu..%llu): the file is corrupt",
        file.c_str(), t.name.c_str(), (long long)s.first,
        (long long)(s.first + s.count), (unsigned long long)s.offset,
        (unsigned long long)(s.offset + s.length));
  return llvm::Error::success();
}
} // namespace

llvm::Error CheckpointReader::read(const CkptTensorInfo &t, int64_t first,
                                   int64_t count, void *out) const {
  FileCache files{tagPath, {}};
  unsigned elt = t.elementBytes();
  std::vector<char> buf;
  for (const CkptSlice &s : t.slices) {
    int64_t lo = std::max(first, s.first),
            hi = std::min(first + count, s.first + s.count);
    if (lo >= hi)
      continue;
    if (llvm::Error err = readSlice(files, t, s, buf))
      return err;
    std::memcpy(static_cast<char *>(out) + (lo - first) * elt,
                buf.data() + (lo - s.first) * elt, (hi - lo) * elt);
  }
  return llvm::Error::success();
}

llvm::Error CheckpointReader::verify() const {
  std::string problems;
  auto report = [&](llvm::Error err) {
    problems += llvm::toString(std::move(err)) + "\n";
  };
  FileCache files{tagPath, {}};
  for (const CkptFileInfo &f : fileInfos) {
    std::string file = tagPath + "/" + f.name;
    auto fd = files.get(f.name);
    if (!fd) {
      report(fd.takeError());
      continue;
    }
    char lenBytes[8];
    if (llvm::Error err = readAt(*fd, lenBytes, 8, 0, file)) {
      report(std::move(err));
      continue;
    }
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i)
      len = (len << 8) | uint8_t(lenBytes[i]);
    if (len > f.size - 8) {
      report(createStringError(file + ": the header length is corrupt"));
      continue;
    }
    std::string header(8 + len, '\0');
    if (llvm::Error err = readAt(*fd, header.data(), header.size(), 0, file)) {
      report(std::move(err));
      continue;
    }
    if (llvm::xxh3_64bits(llvm::StringRef(header)) != f.headerXxh3)
      report(createStringError(file + ": checksum mismatch in the "
                                      "safetensors header: the file is "
                                      "corrupt"));
  }
  std::vector<char> buf;
  for (const CkptTensorInfo &t : infos) {
    for (const CkptSlice &s : t.slices)
      if (llvm::Error err = readSlice(files, t, s, buf))
        report(std::move(err));
    // A later stage's copy (a tied weight) must hold the same bytes.
    for (const CkptSlice &c : t.copies) {
      if (llvm::Error err = readSlice(files, t, c, buf)) {
        report(std::move(err));
        continue;
      }
      for (const CkptSlice &s : t.slices)
        if (s.first == c.first && s.count == c.count && s.xxh3 != c.xxh3)
          report(createStringError(
              "%s/%s: tensor \"%s\" (elements %lld..%lld) differs from the "
              "first stage's copy in %s: the pipeline stages holding it "
              "diverged",
              tagPath.c_str(), c.file.c_str(), t.name.c_str(),
              (long long)c.first, (long long)(c.first + c.count),
              s.file.c_str()));
    }
  }
  if (!problems.empty())
    return createStringError(llvm::StringRef(problems).rtrim());
  return llvm::Error::success();
}

llvm::Expected<CkptDirListing>
ds::driver::listCheckpoints(llvm::StringRef dir) {
  if (!fs::is_directory(dir))
    return createStringError("%s: no such checkpoint directory",
                             dir.str().c_str());
  CkptDirListing listing;
  if (auto text = readSmallFile(dir + "/" + kLatest))
    listing.latest = llvm::StringRef(*text).trim().str();
  else
    llvm::consumeError(text.takeError());
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    std::string name = path::filename(it->path()).str();
    auto step = stepOfTag(name);
    if (!step || !fs::is_directory(it->path()))
      continue;
    listing.tags.push_back(
        {name, *step, fs::exists(it->path() + "/" + kManifest)});
  }
  llvm::sort(listing.tags,
             [](const auto &a, const auto &b) { return a.step < b.step; });
  return listing;
}

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

llvm::Expected<int64_t>
ds::driver::exportSafeTensors(const CheckpointReader &ckpt, llvm::StringRef out,
                              bool toF32, bool withState) {
  struct Item {
    const CkptTensorInfo *t;
    std::string dtype;
    uint64_t bytes;
  };
  std::vector<Item> items;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"},
                            {"producer", "ds-ckpt"},
                            {"tag", ckpt.tag().str()},
                            {"step", std::to_string(ckpt.run().step)}};
  uint64_t offset = 0;
  for (const CkptTensorInfo &t : ckpt.tensors()) {
    if (t.kind != "param" && !withState)
      continue;
    bool widen = toF32 && (t.dtype == "BF16" || t.dtype == "F16");
    Item item{&t, widen ? "F32" : t.dtype, 0};
    item.bytes = uint64_t(t.numElements()) * safeTensorsDTypeSize(item.dtype);
    header[t.name] = {{"dtype", item.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + item.bytes}}};
    offset += item.bytes;
    items.push_back(item);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  char lenBytes[8];
  for (int i = 0; i < 8; ++i)
    lenBytes[i] = char((uint64_t(text.size()) >> (8 * i)) & 0xff);

  std::string tmp = (out + ".tmp").str();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return sysError("cannot create", tmp);
  auto fail = [&](llvm::Error err) -> llvm::Error {
    ::close(fd);
    ::unlink(tmp.c_str());
    return err;
  };
  if (llvm::Error err = writeAll(fd, lenBytes, 8, tmp))
    return fail(std::move(err));
  if (llvm::Error err = writeAll(fd, text.data(), text.size(), tmp))
    return fail(std::move(err));
  // One tensor in memory at a time (plus its f32 copy when widening).
  int64_t peak = 0;
  for (const Item &item : items) {
    const CkptTensorInfo &t = *item.t;
    std::vector<char> buf(uint64_t(t.numElements()) * t.elementBytes());
    if (llvm::Error err = ckpt.read(t, 0, t.numElements(), buf.data()))
      return fail(std::move(err));
    int64_t held = int64_t(buf.size());
    if (item.dtype != t.dtype) {
      std::vector<char> wide(item.bytes);
      float *w = reinterpret_cast<float *>(wide.data());
      for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
        uint16_t bits;
        std::memcpy(&bits, buf.data() + 2 * i, 2);
        w[i] = t.dtype == "BF16" ? bf16ToFloat(bits) : f16ToFloat(bits);
      }
      held += int64_t(wide.size());
      buf = std::move(wide);
    }
    peak = std::max(peak, held);
    if (llvm::Error err = writeAll(fd, buf.data(), buf.size(), tmp))
      return fail(std::move(err));
  }
  if (::fsync(fd) != 0)
    return fail(sysError("fsync failed", tmp));
  ::close(fd);
  if (::rename(tmp.c_str(), out.str().c_str()) != 0) {
    ::unlink(tmp.c_str());
    return sysError("cannot rename " + tmp + " to", out);
  }
  return peak;
}
