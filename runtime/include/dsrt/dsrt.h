/*===- dsrt.h - the ds runtime C ABI ---------------------------------------===*
 *
 * The only header compiled ds code and the ds tools see. Everything the JIT'd
 * step functions call is declared here with a fixed, unmangled name; the
 * compiler emits calls to these symbols and nothing else from the runtime.
 *
 * Conventions:
 *   - every entry point that can fail returns a dsrt_status (0 = DSRT_OK);
 *   - on failure dsrt_last_error() describes what happened, in words, for
 *     the calling thread (thread-local, valid until the next failing call);
 *   - names are dsrt_<noun>_<verb>; sizes and strides are int64_t elements;
 *   - matrices are row-major; a transposed operand is still stored row-major
 *     and read transposed (BLAS's CblasRowMajor convention).
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_DSRT_H
#define DSRT_DSRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DSRT_API __attribute__((visibility("default")))
#else
#define DSRT_API
#endif

/*--- Version -------------------------------------------------------------*/

#define DSRT_VERSION_MAJOR 0
#define DSRT_VERSION_MINOR 1
#define DSRT_VERSION_PATCH 0
/* Bumped whenever an entry point's signature or meaning changes; compiled
 * code and the runtime it is linked with must agree on it. */
#define DSRT_ABI_VERSION 1

/* "MAJOR.MINOR.PATCH (abi N, blas: <backend>)". Never NULL. */
DSRT_API const char *dsrt_version_string(void);
DSRT_API int dsrt_abi_version(void);

/*--- Status and errors ---------------------------------------------------*/

typedef enum dsrt_status {
  DSRT_OK = 0,
  DSRT_ERR_INVALID_ARGUMENT = 1, /* a size, stride or pointer is wrong */
  DSRT_ERR_OUT_OF_MEMORY = 2,
  DSRT_ERR_UNSUPPORTED = 3, /* valid request this build cannot serve */
  DSRT_ERR_INTERNAL = 4,
} dsrt_status;

/* Message of the last failing call on this thread ("" if none). */
DSRT_API const char *dsrt_last_error(void);
/* Clears this thread's last error. */
DSRT_API void dsrt_error_clear(void);
/* Short name of a status code ("DSRT_ERR_INVALID_ARGUMENT"). */
DSRT_API const char *dsrt_status_string(int status);

/*--- Dense linear algebra (kernels/cpu/blas.c) ---------------------------*/

/* C = alpha * op(A) * op(B) + beta * C, single precision.
 * op(A) is M x K, op(B) is K x N, C is M x N, all row-major:
 *   transA == 0: A is M x K with leading dimension lda >= K;
 *   transA != 0: A is K x M with lda >= M (and likewise B with ldb).
 *   ldc >= N. beta == 0 ignores the contents of C (NaNs included).
 * M, N or K == 0 is valid (K == 0 scales C by beta). */
DSRT_API int dsrt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C,
                        int64_t ldc);

/* batchCount independent dsrt_sgemm problems; problem i reads
 * A + i*strideA, B + i*strideB and writes C + i*strideC. A stride of 0
 * broadcasts that operand over the batch (not allowed for C). */
DSRT_API int dsrt_sgemm_strided_batched(int transA, int transB, int64_t M,
                                        int64_t N, int64_t K, float alpha,
                                        const float *A, int64_t lda,
                                        int64_t strideA, const float *B,
                                        int64_t ldb, int64_t strideB,
                                        float beta, float *C, int64_t ldc,
                                        int64_t strideC, int64_t batchCount);

/*--- Threads -------------------------------------------------------------*/

/* Threads the BLAS kernels use (OpenBLAS's own pool). n <= 0 keeps the
 * library default (OPENBLAS_NUM_THREADS / the number of cores). */
DSRT_API int dsrt_threads_set(int n);
DSRT_API int dsrt_threads_get(void);

/*--- Workspace arena (core/arena.c) --------------------------------------*/

/* A bump allocator over one aligned block: the memory planner gives each
 * buffer a fixed offset, so the block is allocated once and reused for
 * every call. Opaque; not thread-safe. */
typedef struct dsrt_arena dsrt_arena;

/* capacity in bytes; the block is aligned to `alignment` (a power of two,
 * >= 16; 0 means 64). */
DSRT_API int dsrt_arena_create(int64_t capacity, int64_t alignment,
                               dsrt_arena **out);
DSRT_API void dsrt_arena_destroy(dsrt_arena *arena);
/* The block itself, for planned (fixed-offset) use. */
DSRT_API void *dsrt_arena_base(const dsrt_arena *arena);
DSRT_API int64_t dsrt_arena_capacity(const dsrt_arena *arena);
/* Bump allocation of `bytes` aligned to `alignment` (0 = arena default). */
DSRT_API int dsrt_arena_alloc(dsrt_arena *arena, int64_t bytes,
                              int64_t alignment, void **out);
/* Releases every bump allocation at once (the block is kept). */
DSRT_API void dsrt_arena_reset(dsrt_arena *arena);
/* Bytes handed out by dsrt_arena_alloc since the last reset, and the
 * high-water mark over the arena's life. */
DSRT_API int64_t dsrt_arena_used(const dsrt_arena *arena);
DSRT_API int64_t dsrt_arena_peak(const dsrt_arena *arena);

/*--- Symbol table (core/symbols.c) ---------------------------------------*/

/* Every entry point above that compiled code may call, by name, so a JIT
 * can resolve them without dlsym and cannot drift from this header. */
typedef struct dsrt_symbol {
  const char *name;
  void *address;
} dsrt_symbol;

/* *out points at a static table of *count entries. */
DSRT_API int dsrt_symbol_table(const dsrt_symbol **out, int64_t *count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DSRT_DSRT_H */
