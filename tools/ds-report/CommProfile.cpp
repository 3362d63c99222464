//===- CommProfile.cpp - Measured collective times for the cost model -----===//
#include "CommProfile.h"

#include "dsrt/dsrt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "nlohmann/json.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace llvm;
using ds::report::CommProfileOptions;

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static Error dsrtError(StringRef call) {
  return fail(call + " failed: " + dsrt_last_error());
}

namespace {
enum class Kind { AllGather, ReduceScatter, AllReduce };

struct Bench {
  dsrt_comm *comm;
  int ranks;
  std::vector<float> send, recv;

  /// One call of `kind` on a whole tensor of `count` f32 elements.
  int run(Kind kind, int64_t count) {
    int64_t chunk = count / ranks;
    switch (kind) {
    case Kind::AllGather:
      return dsrt_all_gather(comm, send.data(), recv.data(), count, DSRT_F32);
    case Kind::ReduceScatter:
      return dsrt_reduce_scatter(comm, send.data(), recv.data(), chunk * ranks,
                                 DSRT_F32, DSRT_SUM);
    case Kind::AllReduce:
      return dsrt_all_reduce(comm, send.data(), recv.data(), count, DSRT_F32,
                             DSRT_SUM);
    }
    return DSRT_ERR_INTERNAL;
  }

  /// Seconds of the slowest rank for one call (every rank enters together).
  Expected<double> time(Kind kind, int64_t count) {
    if (dsrt_barrier(comm) != DSRT_OK)
      return dsrtError("dsrt_barrier");
    auto start = std::chrono::steady_clock::now();
    if (run(kind, count) != DSRT_OK)
      return dsrtError("the collective");
    int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    int64_t slowest = 0;
    if (dsrt_all_reduce(comm, &ns, &slowest, 1, DSRT_I64, DSRT_MAX) != DSRT_OK)
      return dsrtError("dsrt_all_reduce");
    return double(slowest) * 1e-9;
  }

  /// The median over `repeats` calls, after one untimed call.
  Expected<double> median(Kind kind, int64_t count, int repeats) {
    if (run(kind, count) != DSRT_OK)
      return dsrtError("the collective");
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
      Expected<double> t = time(kind, count);
      if (!t)
        return t.takeError();
      times.push_back(*t);
    }
    std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
    return times[repeats / 2];
  }
};
} // namespace

static Error measure(Bench &bench, const CommProfileOptions &options,
                     nlohmann::json &points, bool print) {
  static const std::pair<Kind, const char *> kinds[] = {
      {Kind::AllGather, "all_gather"},
      {Kind::ReduceScatter, "reduce_scatter"},
      {Kind::AllReduce, "all_reduce"}};
  for (auto [kind, name] : kinds) {
    nlohmann::json &list = points[name] = nlohmann::json::array();
    for (int64_t bytes : options.sizes) {
      // Whole f32 tensors that split evenly over the ranks.
      int64_t count =
          std::max<int64_t>(bytes / 4 / bench.ranks, 1) * bench.ranks;
      Expected<double> seconds = bench.median(kind, count, options.repeats);
      if (!seconds)
        return seconds.takeError();
      list.push_back({count * 4, *seconds});
      if (print)
        outs() << formatv("{0,-15} {1,12} bytes {2,12:f6} s\n", name, count * 4,
                          *seconds);
    }
  }
  return Error::success();
}

Error ds::report::writeCommProfile(StringRef path,
                                   const CommProfileOptions &options) {
  if (options.sizes.empty() || options.repeats < 1)
    return fail("--comm-profile needs at least one size and one repeat");
  for (int64_t bytes : options.sizes)
    if (bytes < 4 || bytes > (int64_t(1) << 32))
      return fail("--comm-profile-sizes: " + Twine(bytes) +
                  " bytes is out of range; give sizes from 4 bytes to 4 GiB");
  if (dsrt_comm_init(nullptr) != DSRT_OK)
    return dsrtError("dsrt_comm_init");
  dsrt_comm *world = dsrt_comm_world();
  int ranks = dsrt_comm_size(world), rank = dsrt_comm_rank(world);
  if (ranks < 2) {
    dsrt_comm_finalize();
    return fail("--comm-profile measures collectives between ranks, and this "
                "process runs alone; start it on the job's ranks, e.g. "
                "`ds-launch --num_procs 2 -- ds-report --comm-profile FILE`");
  }
  int64_t largest =
      *std::max_element(options.sizes.begin(), options.sizes.end());
  Bench bench{world, ranks, {}, {}};
  bench.send.assign(largest / 4 + ranks, 1.0f);
  bench.recv.assign(largest / 4 + ranks, 0.0f);

  nlohmann::json profile = {
      {"version", 1},
      {"backend", dsrt_comm_backend()},
      {"group_size", ranks},
      {"dtype", "f32"},
      {"repeats", options.repeats},
      {"statistic", "median over repeats of the slowest rank's seconds"},
      {"bytes", "whole tensor: all_gather output, reduce_scatter input, "
                "all_reduce buffer"}};
  if (rank == 0)
    outs() << "collective times on " << ranks << " ranks ("
           << dsrt_comm_backend() << "), median of " << options.repeats
           << ":\n";
  Error err = measure(bench, options, profile["points"], rank == 0);
  dsrt_comm_finalize();
  if (err || rank != 0)
    return err;

  std::error_code ec;
  raw_fd_ostream out(path, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write the comm profile " + path + ": " + ec.message() +
                "; check the directory exists and is writable");
  out << profile.dump(2) << "\n";
  out.close();
  if (out.has_error())
    return fail("cannot write the comm profile " + path + ": " +
                out.error().message());
  outs() << "wrote " << path << "\n";
  return Error::success();
}
