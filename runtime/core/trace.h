/*===- trace.h - runtime-internal timeline recording -----------------------===*
 *
 * Not part of the ABI: the runtime's own spans (collectives, waits, the
 * optimizer kernels) go through these. Each costs one load and a branch
 * while no timeline is being recorded.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_CORE_TRACE_H
#define DSRT_CORE_TRACE_H

#include "dsrt/dsrt.h"

/* Non-zero between dsrt_trace_start and dsrt_trace_stop. */
extern int dsrt_trace_active;

/* A span's start: the clock while recording, else -1 (nothing to record). */
static inline double dsrt_trace_t0(void) {
  return dsrt_trace_active ? dsrt_trace_now() : -1.0;
}

/* Records [t0, now] unless t0 came from dsrt_trace_t0 while not recording. */
static inline void dsrt_trace_done(int track, const char *cat, const char *name,
                                   double t0, int64_t bytes) {
  if (t0 >= 0 && dsrt_trace_active)
    dsrt_trace_span(track, cat, name, t0, dsrt_trace_now(), bytes);
}

#endif /* DSRT_CORE_TRACE_H */
