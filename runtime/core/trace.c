/*===- trace.c - Timeline of a run: spans for a Chrome trace ---------------===*
 *
 * Spans are kept in memory and read back by the driver, which writes the
 * trace file (it knows the rank and the other ranks' events). Recording is
 * off until dsrt_trace_start: every entry point then returns after one
 * branch, so the calls compiled into every step cost nothing measurable.
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "core/trace.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int dsrt_trace_active;

/* Events keep copies of their names, so a span may name a buffer that is
 * reused or freed (compiled code is unloaded, the driver's strings go).
 * Few distinct names: a small table keyed by content. */
#define NAME_SLOTS 4096
static char *names[NAME_SLOTS];

static const char *interned(const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *c = name; *c; ++c)
    h = (h ^ (unsigned char)*c) * 1099511628211ull;
  for (size_t i = 0, at = h % NAME_SLOTS; i < NAME_SLOTS;
       ++i, at = (at + 1) % NAME_SLOTS) {
    if (names[at] && !strcmp(names[at], name))
      return names[at];
    if (!names[at]) {
      names[at] = strdup(name);
      return names[at] ? names[at] : "?";
    }
  }
  return "?"; /* more distinct names than any model has */
}

static void clear_names(void) {
  for (size_t i = 0; i < NAME_SLOTS; ++i) {
    free(names[i]);
    names[i] = NULL;
  }
}

/* Open dsrt_trace_begin spans; deeper ones are counted, not recorded. */
#define MAX_DEPTH 64
static struct {
  const char *name;
  int32_t kind;
  double t0;
} open_spans[MAX_DEPTH];
static int depth;

static dsrt_trace_event *events;
static int64_t count, capacity, limit, dropped;
static double origin;

double dsrt_trace_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int dsrt_trace_start(int64_t max_events) {
  if (max_events < 1)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_trace_start: max_events must be >= 1, got %lld",
                     (long long)max_events);
  dsrt_trace_clear();
  limit = max_events;
  depth = 0;
  origin = dsrt_trace_now();
  dsrt_trace_active = 1;
  return DSRT_OK;
}

void dsrt_trace_stop(void) { dsrt_trace_active = 0; }

int dsrt_trace_recording(void) { return dsrt_trace_active; }

void dsrt_trace_clear(void) {
  dsrt_trace_active = 0;
  free(events);
  events = NULL;
  count = capacity = dropped = 0;
  clear_names();
}

void dsrt_trace_span(int32_t track, const char *cat, const char *name,
                     double t0, double t1, int64_t bytes) {
  if (!dsrt_trace_active)
    return;
  if (count == capacity) {
    int64_t grown = capacity ? 2 * capacity : 4096;
    if (grown > limit)
      grown = limit;
    dsrt_trace_event *more =
        count < limit ? realloc(events, (size_t)grown * sizeof *events) : NULL;
    if (!more) {
      ++dropped;
      return;
    }
    events = more;
    capacity = grown;
  }
  dsrt_trace_event *e = &events[count++];
  e->name = interned(name ? name : "?");
  e->cat = interned(cat ? cat : "");
  e->start_us = (t0 - origin) * 1e6;
  e->dur_us = (t1 - t0) * 1e6;
  e->track = track;
  e->bytes = bytes;
}

void dsrt_trace_begin(const char *name, int32_t kind) {
  if (!dsrt_trace_active)
    return;
  if (depth < MAX_DEPTH) {
    open_spans[depth].name = name;
    open_spans[depth].kind = kind;
    open_spans[depth].t0 = dsrt_trace_now();
  }
  ++depth;
}

void dsrt_trace_end(void) {
  if (!dsrt_trace_active || depth == 0)
    return;
  if (--depth >= MAX_DEPTH)
    return;
  dsrt_trace_span(
      DSRT_TRACE_COMPUTE, open_spans[depth].kind ? "backward" : "forward",
      open_spans[depth].name, open_spans[depth].t0, dsrt_trace_now(), -1);
}

int dsrt_trace_events(const dsrt_trace_event **out, int64_t *n, int64_t *lost) {
  if (!out || !n)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_trace_events: out and n must not be NULL");
  *out = events;
  *n = count;
  if (lost)
    *lost = dropped;
  return DSRT_OK;
}
