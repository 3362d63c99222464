/*===- profile.c - Time, FLOPs and bytes per kernel of a step --------------===*
 *
 * The compiled step calls dsrt_profile_begin / dsrt_profile_end around each
 * kernel, thousands of times a step: an end costs one clock read and one
 * lookup keyed by the name's address (a constant of the compiled code).
 * Kernels are kept in order of first call, with a copy of their name, so
 * they outlive the code that named them.
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "core/error.h"
#include "core/trace.h"
#include "dsrt/dsrt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static dsrt_profile_kernel *kernels;
static int64_t count, capacity;

/* Name address -> index in kernels; open addressing, NULL key: empty. */
typedef struct slot {
  const char *key;
  int64_t index;
} slot;
static slot *slots;
static int64_t slot_count; /* a power of two, over twice count */

static double since = -1.0;

static const char *const class_names[DSRT_PROFILE_CLASS_COUNT] = {
    "gemm", "elementwise", "reduction", "copy",
    "fill", "collective",  "optimizer"};

const char *dsrt_profile_class_name(int32_t cls) {
  return cls >= 0 && cls < DSRT_PROFILE_CLASS_COUNT ? class_names[cls] : "?";
}

static size_t hash(const char *key) {
  uintptr_t h = (uintptr_t)key;
  h ^= h >> 17;
  h *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(h ^ (h >> 29));
}

static int grow_slots(void) {
  int64_t n = slot_count ? 2 * slot_count : 256;
  slot *more = calloc((size_t)n, sizeof *more);
  if (!more)
    return -1;
  slot *old = slots;
  int64_t old_count = slot_count;
  slots = more;
  slot_count = n;
  for (int64_t i = 0; i < old_count; ++i) {
    const char *key = old[i].key;
    if (!key)
      continue;
    size_t at = hash(key) & (size_t)(n - 1);
    while (slots[at].key)
      at = (at + 1) & (size_t)(n - 1);
    slots[at] = old[i];
  }
  free(old);
  return 0;
}

/* The kernel `name` names, added on its first call; NULL without memory. */
static dsrt_profile_kernel *kernel(const char *name, int32_t cls) {
  if (2 * (count + 1) > slot_count && grow_slots())
    return NULL;
  size_t at = hash(name) & (size_t)(slot_count - 1);
  for (; slots[at].key; at = (at + 1) & (size_t)(slot_count - 1))
    if (slots[at].key == name)
      return &kernels[slots[at].index];
  if (count == capacity) {
    int64_t n = capacity ? 2 * capacity : 256;
    dsrt_profile_kernel *more = realloc(kernels, (size_t)n * sizeof *more);
    if (!more)
      return NULL;
    kernels = more;
    capacity = n;
  }
  char *copy = strdup(name);
  if (!copy)
    return NULL;
  dsrt_profile_kernel *k = &kernels[count];
  memset(k, 0, sizeof *k);
  k->name = copy;
  k->cls = cls;
  slots[at].key = name;
  slots[at].index = count++;
  return k;
}

void dsrt_profile_begin(void) { since = dsrt_trace_now(); }

void dsrt_profile_end(const char *name, int32_t cls, int64_t flops,
                      int64_t bytes) {
  double t = dsrt_trace_now();
  if (since < 0 || !name)
    return;
  dsrt_profile_kernel *k = kernel(name, cls);
  if (k) {
    ++k->calls;
    k->seconds += t - since;
    k->flops += flops;
    k->bytes += bytes;
  }
  if (dsrt_trace_active)
    dsrt_trace_span(DSRT_TRACE_COMPUTE, dsrt_profile_class_name(cls), name,
                    since, t, bytes > 0 ? bytes : -1);
  since = -1.0;
}

int dsrt_profile_kernels(const dsrt_profile_kernel **out, int64_t *n) {
  if (!out || !n)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_profile_kernels: out and count must not be NULL");
  *out = kernels;
  *n = count;
  return DSRT_OK;
}

void dsrt_profile_reset(void) {
  for (int64_t i = 0; i < count; ++i)
    free((void *)kernels[i].name);
  free(kernels);
  free(slots);
  kernels = NULL;
  slots = NULL;
  count = capacity = slot_count = 0;
  since = -1.0;
}
