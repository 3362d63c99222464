/*===- phases.c - Wall-clock time per phase of a training step -----------===*/
#include "core/trace.h"
#include "dsrt/dsrt.h"

#include <time.h>

/* The step's top-level code runs on one thread; kernels fan out below it. */
static double seconds[DSRT_PHASE_COUNT];
static int32_t current = DSRT_PHASE_NONE;
static double since;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *const phase_names[DSRT_PHASE_COUNT] = {
    "none", "forward", "backward", "reduction", "optimizer"};

void dsrt_phase_begin(int32_t phase) {
  double t = now();
  if (current > DSRT_PHASE_NONE && current < DSRT_PHASE_COUNT) {
    seconds[current] += t - since;
    if (dsrt_trace_active)
      dsrt_trace_span(DSRT_TRACE_PHASE, "phase", phase_names[current], since, t,
                      -1);
  }
  current = phase;
  since = t;
}

double dsrt_phase_seconds(int32_t phase) {
  return phase >= 0 && phase < DSRT_PHASE_COUNT ? seconds[phase] : 0.0;
}

void dsrt_phase_reset(void) {
  for (int i = 0; i < DSRT_PHASE_COUNT; ++i)
    seconds[i] = 0;
  current = DSRT_PHASE_NONE;
}
