/*===- arena.c - one aligned block, fixed offsets or bump allocation ------===*/
#include "core/error.h"
#include "dsrt/dsrt.h"

#include <stdlib.h>

struct dsrt_arena {
  char *base;
  int64_t capacity;
  int64_t alignment;
  int64_t used;
  int64_t peak;
};

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

int dsrt_arena_create(int64_t capacity, int64_t alignment, dsrt_arena **out) {
  if (!out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_create: out is NULL");
  *out = NULL;
  if (alignment == 0)
    alignment = 64;
  if (capacity < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_create: capacity %lld is negative",
                     (long long)capacity);
  if (!is_pow2(alignment) || alignment < 16)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_create: alignment %lld is not a power of two "
                     ">= 16",
                     (long long)alignment);
  dsrt_arena *arena = calloc(1, sizeof(*arena));
  if (!arena)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "dsrt_arena_create: out of memory");
  /* aligned_alloc wants a size that is a multiple of the alignment. */
  int64_t rounded = (capacity + alignment - 1) / alignment * alignment;
  if (rounded == 0)
    rounded = alignment;
  arena->base = aligned_alloc((size_t)alignment, (size_t)rounded);
  if (!arena->base) {
    free(arena);
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "dsrt_arena_create: cannot allocate %lld bytes",
                     (long long)capacity);
  }
  arena->capacity = capacity;
  arena->alignment = alignment;
  *out = arena;
  return DSRT_OK;
}

void dsrt_arena_destroy(dsrt_arena *arena) {
  if (!arena)
    return;
  free(arena->base);
  free(arena);
}

void *dsrt_arena_base(const dsrt_arena *arena) {
  return arena ? arena->base : NULL;
}

int64_t dsrt_arena_capacity(const dsrt_arena *arena) {
  return arena ? arena->capacity : 0;
}

int dsrt_arena_alloc(dsrt_arena *arena, int64_t bytes, int64_t alignment,
                     void **out) {
  if (!arena || !out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_alloc: arena or out is NULL");
  *out = NULL;
  if (alignment == 0)
    alignment = arena->alignment;
  if (!is_pow2(alignment) || alignment > arena->alignment)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_alloc: alignment %lld is not a power of two "
                     "<= the arena's %lld",
                     (long long)alignment, (long long)arena->alignment);
  if (bytes < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_arena_alloc: size %lld is negative",
                     (long long)bytes);
  int64_t offset = (arena->used + alignment - 1) / alignment * alignment;
  if (offset + bytes > arena->capacity)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "dsrt_arena_alloc: %lld bytes do not fit: %lld of %lld "
                     "used",
                     (long long)bytes, (long long)arena->used,
                     (long long)arena->capacity);
  arena->used = offset + bytes;
  if (arena->used > arena->peak)
    arena->peak = arena->used;
  *out = arena->base + offset;
  return DSRT_OK;
}

void dsrt_arena_reset(dsrt_arena *arena) {
  if (arena)
    arena->used = 0;
}

int64_t dsrt_arena_used(const dsrt_arena *arena) {
  return arena ? arena->used : 0;
}

int64_t dsrt_arena_peak(const dsrt_arena *arena) {
  return arena ? arena->peak : 0;
}
