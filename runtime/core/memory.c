/*===- memory.c - bytes the step holds, with a high-water mark ------------===*/
/*
 * Compiled code's heap buffers (what ds-plan-buffers leaves out of its
 * arenas) come from dsrt_malloc / dsrt_aligned_alloc, which the lowering
 * calls instead of malloc / aligned_alloc, so each allocation's size is
 * known when it is freed. What the caller holds for the step (model states,
 * the arenas of the loaded code) it reports with dsrt_mem_hold. The peak
 * is over both, since the last dsrt_mem_peak_reset.
 */
#include "dsrt/dsrt.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static _Atomic int64_t current_bytes, peak_bytes;

static void account(int64_t delta) {
  int64_t now = atomic_fetch_add(&current_bytes, delta) + delta;
  int64_t peak = atomic_load(&peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
    ;
}

/* Before the returned pointer: the size asked for, then the distance back
 * to the block malloc returned (the header is a multiple of the alignment,
 * so the pointer keeps it). */
static void *tracked(size_t alignment, size_t bytes) {
  size_t header = alignment < 16 ? 16 : alignment;
  char *base =
      aligned_alloc(header, header + (bytes + header - 1) / header * header);
  if (!base)
    return NULL;
  char *p = base + header;
  ((int64_t *)p)[-2] = (int64_t)bytes;
  ((int64_t *)p)[-1] = (int64_t)header;
  account((int64_t)bytes);
  return p;
}

void *dsrt_malloc(size_t bytes) { return tracked(16, bytes); }

void *dsrt_aligned_alloc(size_t alignment, size_t bytes) {
  /* Not a power of two: aligned_alloc's own failure. */
  if (alignment == 0 || (alignment & (alignment - 1)))
    return NULL;
  return tracked(alignment, bytes);
}

void dsrt_free(void *ptr) {
  if (!ptr)
    return;
  char *p = ptr;
  account(-((int64_t *)p)[-2]);
  free(p - ((int64_t *)p)[-1]);
}

void dsrt_mem_hold(int64_t delta) { account(delta); }

int64_t dsrt_mem_bytes(void) { return atomic_load(&current_bytes); }

int64_t dsrt_mem_peak_bytes(void) { return atomic_load(&peak_bytes); }

void dsrt_mem_peak_reset(void) {
  atomic_store(&peak_bytes, atomic_load(&current_bytes));
}
