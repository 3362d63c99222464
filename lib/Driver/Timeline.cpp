//===- Timeline.cpp - ds-train --trace: a Chrome trace of the run ---------===//
#include "ds/Driver/Timeline.h"

#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <vector>

using llvm::createStringError;
using nlohmann::json;

namespace {

/// About 100 MB of events per rank; later spans are counted as dropped.
constexpr int64_t kMaxEvents = 2'000'000;
/// The tag of the events' bytes sent to rank 0 (nothing else is in flight).
constexpr int kTag = 32001;

/// Thread ids: the compute track, wall_clock_breakdown's phases, then one
/// lane per collective in flight at once (async collectives overlap each
/// other; a viewer nests spans of one thread, so each lane holds spans that
/// do not).
enum : int { kComputeTid = 0, kPhaseTid = 1, kFirstCommTid = 2 };

json metadata(const char *what, int rank, int tid, const std::string &name) {
  return {{"name", what},
          {"ph", "M"},
          {"pid", rank},
          {"tid", tid},
          {"args", {{"name", name}}}};
}

/// This rank's events, sorted by start (outer spans first at equal starts).
json rankEvents(int rank, int64_t &dropped) {
  const dsrt_trace_event *events = nullptr;
  int64_t n = 0;
  dsrt_trace_events(&events, &n, &dropped);
  std::vector<const dsrt_trace_event *> order;
  for (int64_t i = 0; i < n; ++i)
    order.push_back(&events[i]);
  std::stable_sort(order.begin(), order.end(), [](auto *a, auto *b) {
    return a->start_us != b->start_us ? a->start_us < b->start_us
                                      : a->dur_us > b->dur_us;
  });
  json list = json::array();
  list.push_back(
      metadata("process_name", rank, 0, "rank " + std::to_string(rank)));
  list.push_back({{"name", "process_sort_index"},
                  {"ph", "M"},
                  {"pid", rank},
                  {"args", {{"sort_index", rank}}}});
  list.push_back(metadata("thread_name", rank, kComputeTid, "compute"));
  std::vector<double> laneEnds;
  bool phases = false;
  for (const dsrt_trace_event *e : order) {
    int tid = kComputeTid;
    if (e->track == DSRT_TRACE_PHASE) {
      tid = kPhaseTid;
      phases = true;
    } else if (e->track == DSRT_TRACE_COMM) {
      size_t lane = 0;
      while (lane < laneEnds.size() && laneEnds[lane] > e->start_us)
        ++lane;
      if (lane == laneEnds.size())
        laneEnds.push_back(0);
      laneEnds[lane] = e->start_us + e->dur_us;
      tid = kFirstCommTid + int(lane);
    }
    json event = {{"name", e->name},   {"cat", e->cat},    {"ph", "X"},
                  {"ts", e->start_us}, {"dur", e->dur_us}, {"pid", rank},
                  {"tid", tid}};
    if (e->bytes >= 0)
      event["args"] = {{"bytes", e->bytes}};
    list.push_back(std::move(event));
  }
  if (phases)
    list.push_back(metadata("thread_name", rank, kPhaseTid, "phases"));
  for (size_t lane = 0; lane < laneEnds.size(); ++lane)
    list.push_back(metadata("thread_name", rank, kFirstCommTid + int(lane),
                            "collectives " + std::to_string(lane)));
  return list;
}

/// Rank 0 receives each other rank's events as JSON text.
llvm::Error sendTo0(dsrt_comm *world, const std::string &text) {
  int64_t size = int64_t(text.size());
  std::vector<int32_t> words((text.size() + 3) / 4, 0);
  std::copy(text.begin(), text.end(), reinterpret_cast<char *>(words.data()));
  if (dsrt_send(world, &size, 1, DSRT_I64, 0, kTag) != DSRT_OK ||
      dsrt_send(world, words.data(), int64_t(words.size()), DSRT_I32, 0,
                kTag) != DSRT_OK)
    return createStringError(
        "--trace: sending this rank's events to rank 0: %s", dsrt_last_error());
  return llvm::Error::success();
}

llvm::Expected<std::string> receiveFrom(dsrt_comm *world, int rank) {
  int64_t size = 0;
  if (dsrt_recv(world, &size, 1, DSRT_I64, rank, kTag) != DSRT_OK)
    return createStringError("--trace: receiving rank %d's events: %s", rank,
                             dsrt_last_error());
  std::vector<int32_t> words((size_t(size) + 3) / 4, 0);
  if (dsrt_recv(world, words.data(), int64_t(words.size()), DSRT_I32, rank,
                kTag) != DSRT_OK)
    return createStringError("--trace: receiving rank %d's events: %s", rank,
                             dsrt_last_error());
  return std::string(reinterpret_cast<const char *>(words.data()),
                     size_t(size));
}

} // namespace

namespace ds::driver {

llvm::Error startTimeline(const std::string &path, dsrt_comm *world) {
  if (path.empty())
    return llvm::Error::success();
  // A bad path fails now, not after the run.
  if (dsrt_comm_rank(world) == 0 && !std::ofstream(path))
    return createStringError("--trace %s: cannot write the file (does its "
                             "directory exist?)",
                             path.c_str());
  if (dsrt_barrier(world) != DSRT_OK || dsrt_trace_start(kMaxEvents) != DSRT_OK)
    return createStringError("--trace %s: %s", path.c_str(), dsrt_last_error());
  return llvm::Error::success();
}

llvm::Error writeTimeline(const std::string &path, dsrt_comm *world) {
  if (path.empty())
    return llvm::Error::success();
  dsrt_trace_stop();
  const int rank = dsrt_comm_rank(world), size = dsrt_comm_size(world);
  int64_t dropped = 0;
  json events = rankEvents(rank, dropped);
  if (dropped > 0)
    llvm::errs() << "ds-train: warning: --trace kept the first " << kMaxEvents
                 << " spans of rank " << rank << " and dropped " << dropped
                 << "\n";
  if (rank != 0) {
    llvm::Error err = sendTo0(world, events.dump());
    dsrt_trace_clear();
    return err;
  }
  for (int r = 1; r < size; ++r) {
    auto text = receiveFrom(world, r);
    if (!text)
      return text.takeError();
    json theirs = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!theirs.is_array())
      return createStringError("--trace: rank %d sent malformed events", r);
    for (json &e : theirs)
      events.push_back(std::move(e));
  }
  dsrt_trace_clear();
  json trace = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", {{"producer", "ds-train --trace"}, {"ranks", size}}}};
  std::ofstream out(path);
  out << trace.dump() << "\n";
  out.close();
  if (!out)
    return createStringError("--trace %s: cannot write the file (does its "
                             "directory exist?)",
                             path.c_str());
  return llvm::Error::success();
}

} // namespace ds::driver
