//===- Timeline.h - ds-train --trace: a Chrome trace of the run -*- C++ -*-===//
//
// libdsrt records spans (layers from the compiled step's marks, collectives
// from start to completion, waits, optimizer kernels); the driver adds its
// own (steps, data, checkpoint saves) and writes one Trace Event Format file
// with every rank as a process. docs/communication.md, "Timeline".
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_TIMELINE_H
#define DS_DRIVER_TIMELINE_H

#include "dsrt/dsrt.h"

#include "llvm/Support/Error.h"

#include <string>

namespace ds::driver {

/// A driver span on the compute track, from construction to destruction;
/// nothing while no timeline is being recorded.
class TraceSpan {
public:
  TraceSpan(const char *cat, const char *name)
      : cat(cat), name(name),
        t0(dsrt_trace_recording() ? dsrt_trace_now() : -1.0) {}
  ~TraceSpan() {
    if (t0 >= 0)
      dsrt_trace_span(DSRT_TRACE_COMPUTE, cat, name, t0, dsrt_trace_now(), -1);
  }
  TraceSpan(const TraceSpan &) = delete;
  TraceSpan &operator=(const TraceSpan &) = delete;

private:
  const char *cat, *name;
  double t0;
};

/// Starts recording on every rank (collective over the world): a barrier,
/// then each rank's time 0, so the ranks' clocks agree to the barrier's
/// exit skew. Nothing for an empty path.
llvm::Error startTimeline(const std::string &path, dsrt_comm *world);

/// Stops recording and writes the events of every rank to `path` from rank
/// 0 (collective over the world: the others send theirs to rank 0).
llvm::Error writeTimeline(const std::string &path, dsrt_comm *world);

} // namespace ds::driver

#endif // DS_DRIVER_TIMELINE_H
