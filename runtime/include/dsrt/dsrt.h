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
  DSRT_ERR_IO = 5, /* a file operation failed; the message names the file */
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

/*--- bf16 operands, f32 accumulation (kernels/cpu/gemm_bf16.c) ----------*/

/* dsrt_sgemm's contract with A and B in bf16 (the upper 16 bits of an f32,
 * as uint16_t) and C in f32. Each product is exact in f32; the sums are f32.
 * On a CPU with AVX512_BF16 oneDNN's matmul runs it (its own order of the
 * sums); elsewhere the operands are widened and dsrt_sgemm runs it, bit for
 * bit the product of the widened operands. DSRT_BF16_GEMM=f32|onednn
 * overrides the choice. */
DSRT_API int dsrt_gemm_bf16(int transA, int transB, int64_t M, int64_t N,
                            int64_t K, float alpha, const uint16_t *A,
                            int64_t lda, const uint16_t *B, int64_t ldb,
                            float beta, float *C, int64_t ldc);
DSRT_API int dsrt_gemm_bf16_strided_batched(
    int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
    const uint16_t *A, int64_t lda, int64_t strideA, const uint16_t *B,
    int64_t ldb, int64_t strideB, float beta, float *C, int64_t ldc,
    int64_t strideC, int64_t batchCount);

typedef enum dsrt_bf16_gemm_kind {
  DSRT_BF16_GEMM_F32 = 0,    /* widened, then dsrt_sgemm */
  DSRT_BF16_GEMM_ONEDNN = 1, /* oneDNN's matmul on AVX512_BF16 */
} dsrt_bf16_gemm_kind;

/* Which backend this process's bf16 GEMMs use (chosen at the first call),
 * or -1 when DSRT_BF16_GEMM is invalid (dsrt_last_error() says why). *why,
 * when not NULL, gets the library and the reason ("oneDNN 2.6.3, this CPU
 * has avx512_bf16", "this CPU has no avx512_bf16", "DSRT_BF16_GEMM=f32"). */
DSRT_API int dsrt_bf16_gemm_backend(const char **why);

/*--- Which BLAS kernels run (kernels/cpu/blas_core.c) --------------------*/

/* OpenBLAS built with DYNAMIC_ARCH picks its kernel set ("core": Prescott,
 * Haswell, Zen, SkylakeX, ...) once, when it loads: OPENBLAS_CORETYPE if set,
 * else its own CPU detection, which falls back to generic SSE kernels on CPU
 * models it does not know. ds replaces such a generic fallback with the
 * fastest core the CPU's features allow, unless the user set
 * OPENBLAS_CORETYPE. docs/blas.md. */

typedef enum dsrt_blas_core_source {
  DSRT_BLAS_CORE_DETECTED = 0, /* OpenBLAS's own detection */
  DSRT_BLAS_CORE_CHOSEN = 1,   /* chosen by ds over a generic detection */
  DSRT_BLAS_CORE_USER = 2,     /* the user's OPENBLAS_CORETYPE */
} dsrt_blas_core_source;

typedef struct dsrt_blas_info {
  const char *library;  /* the loaded OpenBLAS file ("" if unknown) */
  const char *version;  /* "0.3.21" */
  const char *config;   /* openblas_get_config() */
  const char *core;     /* the kernels in use (openblas_get_corename()) */
  const char *detected; /* what OpenBLAS detected ("" under source USER) */
  const char *best;     /* the fastest core this CPU's features allow */
  const char *features; /* what `best` rests on: "avx avx2 fma" */
  int source;           /* dsrt_blas_core_source */
  int dynamic;          /* DYNAMIC_ARCH build: OPENBLAS_CORETYPE works */
  int generic;          /* core is a generic SSE one, `best` is not */
  int unsupported;      /* core needs features this CPU lacks (SIGILL) */
} dsrt_blas_info;

/* Fills *out; the strings are static. DSRT_BLAS_FAKE_DETECTED=CORE (a test
 * hook) makes ds treat OpenBLAS's detection as CORE. */
DSRT_API int dsrt_blas_info_get(dsrt_blas_info *out);

/* For main(), before anything else: when OpenBLAS detected a generic core
 * that dsrt_blas_core_choose replaces and OPENBLAS_CORETYPE is unset, sets
 * OPENBLAS_CORETYPE (and DSRT_BLAS_CORE_DETECTED, the detected core) and
 * re-executes /proc/self/exe with argv, so OpenBLAS loads again with that
 * core. Returns only if nothing changes (DSRT_OK) or the exec fails
 * (DSRT_ERR_UNSUPPORTED, after a warning on stderr). */
DSRT_API int dsrt_blas_core_select(char **argv);

/* The core to use instead of `detected` on a CPU with `features`
 * (space-separated /proc/cpuinfo flag names: avx, avx2, fma, avx512f,
 * avx512bw, avx512dq, avx512vl), amd != 0 for AMD: SkylakeX, Zen (AMD) or
 * Haswell, or Sandybridge. NULL when `detected` is not generic or the
 * features allow nothing faster. Pure, so tests can ask about any CPU. */
DSRT_API const char *dsrt_blas_core_choose(const char *detected,
                                           const char *features, int amd);

/*--- Threads -------------------------------------------------------------*/

/* Threads the BLAS kernels (OpenBLAS's own pool) and the OpenMP optimizer
 * kernels use. n <= 0 keeps the library defaults (OPENBLAS_NUM_THREADS,
 * OMP_NUM_THREADS / the number of cores). */
DSRT_API int dsrt_threads_set(int n);
DSRT_API int dsrt_threads_get(void);

/* The compiled step's loop nests (core/parallel.c): fn runs the iterations
 * [b, e) of the outermost parallel loop of one nest, ctx holds its buffers'
 * addresses. [begin, end) is cut into contiguous chunks that
 * dsrt_threads_get() threads (the caller and a pool) claim; a nested call
 * runs serially. Each iteration runs exactly as it would serially, so
 * results do not depend on the count. */
typedef void (*dsrt_range_fn)(void *ctx, int64_t b, int64_t e);
DSRT_API int dsrt_parallel_for(dsrt_range_fn fn, void *ctx, int64_t begin,
                               int64_t end);

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

/*--- Workspaces (core/workspace.c) --------------------------------------*/

/* The memory a loaded step's planned buffers live in: the compiled code
 * calls dsrt_workspace_alloc once when it is loaded (its
 * __ds_workspaces_init) and dsrt_workspace_free when it is unloaded.
 * Page-aligned (2 MiB-aligned, transparent huge pages advised, from 2 MiB
 * on), untouched until first written. Not counted by dsrt_mem_*: the loader
 * holds it with dsrt_mem_hold, as it holds the model states. NULL on
 * failure, with dsrt_last_error() naming the size. */
DSRT_API void *dsrt_workspace_alloc(int64_t bytes);
DSRT_API void dsrt_workspace_free(void *workspace, int64_t bytes);

/*--- Memory accounting (core/memory.c) ----------------------------------*/

/* The bytes a rank holds for its step, counted as they are taken: compiled
 * code's heap buffers (the lowering calls these instead of malloc,
 * aligned_alloc and free) and what the caller reports with dsrt_mem_hold
 * (model states, the loaded code's arenas; negative to give back). */
DSRT_API void *dsrt_malloc(size_t bytes);
DSRT_API void *dsrt_aligned_alloc(size_t alignment, size_t bytes);
DSRT_API void dsrt_free(void *ptr);
DSRT_API void dsrt_mem_hold(int64_t delta);
/* Bytes held now, and the most held at once since the last peak reset. */
DSRT_API int64_t dsrt_mem_bytes(void);
DSRT_API int64_t dsrt_mem_peak_bytes(void);
DSRT_API void dsrt_mem_peak_reset(void);

/*--- Communication (comm/) ----------------------------------------------*/

/* One process per rank. A backend moves the bytes; every backend serves the
 * same calls with the same meaning:
 *   "self"  world size 1, no dependency (collectives are copies);
 *   "mpi"   Open MPI (CPU buffers; rendezvous through mpirun);
 *   "nccl"  libnccl.so.2 loaded at run time (device buffers; the unique id
 *           is broadcast over MPI, so it needs the mpi backend underneath).
 * "auto" (or NULL) picks nccl when a GPU is usable, else mpi when the process
 * was started by mpirun, else self. The DSRT_BACKEND environment variable
 * overrides NULL/"auto". Calls come from one thread at a time.
 *
 * No call waits forever: blocking collectives and dsrt_wait give up after
 * DSRT_COMM_TIMEOUT_S seconds (default 45; 0 waits forever) with
 * DSRT_ERR_INTERNAL and an error naming the call, the group size and "a
 * peer rank is likely dead or stuck". See docs/communication.md. */

typedef enum dsrt_dtype {
  DSRT_F32 = 0,
  DSRT_F16 = 1,
  DSRT_BF16 = 2,
  DSRT_I32 = 3,
  DSRT_I64 = 4,
} dsrt_dtype;

/* Same values as the dsdist.reduction enum. avg = sum / group size (for
 * integer types: truncating division). 16-bit sums accumulate in f32. */
typedef enum dsrt_reduce_op {
  DSRT_SUM = 0,
  DSRT_AVG = 1,
  DSRT_MAX = 2,
  DSRT_MIN = 3,
} dsrt_reduce_op;

/* A process group (a communicator). Opaque. */
typedef struct dsrt_comm dsrt_comm;
/* An asynchronous operation in flight. Opaque; freed by dsrt_wait. */
typedef struct dsrt_request dsrt_request;

/* Starts communication for this process (once; a second call fails).
 * backend: see above. */
DSRT_API int dsrt_comm_init(const char *backend);
/* Waits for nothing: frees every group and shuts the backend down (MPI only
 * if dsrt_comm_init started it). Does nothing before init. */
DSRT_API int dsrt_comm_finalize(void);
/* Name of the backend in use ("self", "mpi", "nccl"); "" before init. */
DSRT_API const char *dsrt_comm_backend(void);
/* The group of all ranks (valid between init and finalize). */
DSRT_API dsrt_comm *dsrt_comm_world(void);
/* -1 (with dsrt_last_error set) for NULL or a freed group. */
DSRT_API int dsrt_comm_rank(const dsrt_comm *comm);
DSRT_API int dsrt_comm_size(const dsrt_comm *comm);
/* Collective over `parent`: ranks passing the same color (>= 0) form one
 * new group, ordered by key (ties by parent rank). */
DSRT_API int dsrt_comm_split(dsrt_comm *parent, int color, int key,
                             dsrt_comm **out);
/* NULL is a no-op; the world and grid groups belong to the runtime. */
DSRT_API int dsrt_comm_free(dsrt_comm *comm);

/* The device grid (a dsdist.grid attribute): ndims named axes whose sizes
 * multiply to the world size, the last axis varying fastest over ranks.
 * Collective over the world; creates the group of every subset of axes at
 * once, so compiled code can look them up without communicating. */
DSRT_API int dsrt_comm_set_grid(int ndims, const int64_t *sizes);
/* The group of ranks that differ from this one only along the axes whose
 * bits are set in axes_mask (bit i = axis i of the grid). NULL (with
 * dsrt_last_error set) without a grid or for a mask naming no axis. */
DSRT_API dsrt_comm *dsrt_comm_axes(uint64_t axes_mask);

/* Collectives. count is in elements of dtype. Send and receive buffers
 * must not overlap except in place, where noted. Blocking forms return
 * when this rank's receive buffer is complete.
 *
 * Uneven sizes: with n ranks and c = ceil(count / n), rank r owns elements
 * [r*c, min((r+1)*c, count)) of a count-element tensor. reduce_scatter
 * leaves that slice in recv (c elements; positions past count are zeroed)
 * and all_gather rebuilds the count elements from every rank's first
 * min(c, count - r*c) elements of send. */
DSRT_API int dsrt_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count, int dtype,
                             int op); /* in place ok */
/* In place: send == recv + r*c elements (this rank's slot). */
DSRT_API int dsrt_all_gather(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count, int dtype);
/* In place: send == recv (count elements in; the slice lands at the front). */
DSRT_API int dsrt_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                                 int64_t count, int dtype, int op);
/* send and recv hold n blocks of count_per_rank elements; block j of send
 * goes to rank j and arrives as block r of rank j's recv. */
DSRT_API int dsrt_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count_per_rank, int dtype);
DSRT_API int dsrt_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                            int dtype, int root);
/* tag in [0, 32767]. On nccl, tags are not matched: messages between two
 * ranks arrive in the order sent. A blocking send may wait for its receive
 * (start it with dsrt_send_start when both sides send first). */
DSRT_API int dsrt_send(dsrt_comm *comm, const void *buf, int64_t count,
                       int dtype, int peer, int tag);
DSRT_API int dsrt_recv(dsrt_comm *comm, void *buf, int64_t count, int dtype,
                       int peer, int tag);
DSRT_API int dsrt_barrier(dsrt_comm *comm);

/* Asynchronous forms: same meaning; the buffers must stay untouched until
 * dsrt_wait(*req) returns, which completes and frees the request (also when
 * it fails: never wait twice). On failure *req is NULL. */
DSRT_API int dsrt_all_reduce_start(dsrt_comm *comm, const void *send,
                                   void *recv, int64_t count, int dtype, int op,
                                   dsrt_request **req);
DSRT_API int dsrt_all_gather_start(dsrt_comm *comm, const void *send,
                                   void *recv, int64_t count, int dtype,
                                   dsrt_request **req);
DSRT_API int dsrt_reduce_scatter_start(dsrt_comm *comm, const void *send,
                                       void *recv, int64_t count, int dtype,
                                       int op, dsrt_request **req);
DSRT_API int dsrt_all_to_all_start(dsrt_comm *comm, const void *send,
                                   void *recv, int64_t count_per_rank,
                                   int dtype, dsrt_request **req);
DSRT_API int dsrt_broadcast_start(dsrt_comm *comm, void *buf, int64_t count,
                                  int dtype, int root, dsrt_request **req);
DSRT_API int dsrt_send_start(dsrt_comm *comm, const void *buf, int64_t count,
                             int dtype, int peer, int tag, dsrt_request **req);
DSRT_API int dsrt_recv_start(dsrt_comm *comm, void *buf, int64_t count,
                             int dtype, int peer, int tag, dsrt_request **req);
DSRT_API int dsrt_wait(dsrt_request *req);

/* Deterministic mode (off by default): blocking all_reduce and
 * reduce_scatter gather every rank's contribution and add them in rank
 * order on each rank, so results are bitwise reproducible whatever the
 * algorithm, message sizes or reduction placement (ZeRO 0-3 agree bit for
 * bit). Costs n times the traffic and memory of the reduction. The async
 * forms sum the same way inside their start, which returns a request that
 * is already complete; the nccl backend refuses the mode. Not collective: set
 * it alike on every rank before the first reduction. */
DSRT_API int dsrt_comm_set_deterministic(int on);
DSRT_API int dsrt_comm_deterministic(void);

/* For compiled code, which has no error path of its own: a non-zero status
 * prints "error: <what> failed: <dsrt_last_error()>" to stderr and ends the
 * whole job (every rank), since a collective that failed on one rank would
 * leave the others waiting forever. Returns 0 otherwise. */
DSRT_API int dsrt_check(int status, const char *what);
/* Seconds spent inside blocking collectives and waits on this thread since
 * the last reset (for comm_ms in metrics). */
DSRT_API double dsrt_comm_seconds(void);
/* The part of it spent in blocking dsrt_send / dsrt_recv (a pipeline
 * stage waiting on its neighbours: bubble_ms in metrics). Reset with it. */
DSRT_API double dsrt_p2p_seconds(void);
DSRT_API void dsrt_comm_seconds_reset(void);

/*--- Phase timers (core/phases.c) ----------------------------------------*/

/* wall_clock_breakdown: a step compiled with it calls dsrt_phase_begin where
 * each phase of the step starts; the wall-clock time until the next call is
 * that phase's. DSRT_PHASE_NONE starts time charged to no phase. */
typedef enum dsrt_phase {
  DSRT_PHASE_NONE = 0,
  DSRT_PHASE_FORWARD = 1,
  DSRT_PHASE_BACKWARD = 2,  /* includes accumulating micro-batch gradients */
  DSRT_PHASE_REDUCTION = 3, /* gradient all-reduce / reduce-scatter */
  DSRT_PHASE_OPTIMIZER = 4, /* clip, loss scale, update, ZeRO all-gathers */
  DSRT_PHASE_COUNT = 5,
} dsrt_phase;
DSRT_API void dsrt_phase_begin(int32_t phase);
/* Seconds charged to `phase` since the last reset (0 for an unknown one). */
DSRT_API double dsrt_phase_seconds(int32_t phase);
DSRT_API void dsrt_phase_reset(void);

/*--- Timeline (core/trace.c) ---------------------------------------------*/

/* `ds-train --trace`: spans recorded in memory while recording is on, read
 * back with dsrt_trace_events and written as a Chrome trace by the driver.
 * Off by default; then every call below returns after one branch. Spans come
 * from the thread that runs the step (compiled code, collectives, waits,
 * optimizer kernels) and the driver; they nest on a track as calls do. */
typedef enum dsrt_trace_track {
  DSRT_TRACE_COMPUTE = 0, /* layers, waits, optimizer, the driver's spans */
  DSRT_TRACE_PHASE = 1,   /* wall_clock_breakdown's phases */
  DSRT_TRACE_COMM = 2,    /* a collective from its start to its completion */
} dsrt_trace_track;

typedef struct dsrt_trace_event {
  const char *name; /* "h.0", "all_gather", "adam" (valid until clear) */
  const char *cat;  /* "forward", "backward", "collective", "wait", ... */
  double start_us;  /* microseconds since dsrt_trace_start */
  double dur_us;
  int32_t track; /* dsrt_trace_track */
  int64_t bytes; /* a collective's received bytes; -1 otherwise */
} dsrt_trace_event;

/* Starts recording (dropping earlier events); time 0 is now, on
 * CLOCK_MONOTONIC. Past max_events further spans are counted, not kept. */
DSRT_API int dsrt_trace_start(int64_t max_events);
DSRT_API void dsrt_trace_stop(void);
DSRT_API int dsrt_trace_recording(void);
/* Stops and frees every event. */
DSRT_API void dsrt_trace_clear(void);
/* Seconds on the trace's clock. */
DSRT_API double dsrt_trace_now(void);
/* One span [t0, t1] (dsrt_trace_now seconds); name and cat are copied. */
DSRT_API void dsrt_trace_span(int32_t track, const char *cat, const char *name,
                              double t0, double t1, int64_t bytes);
/* Compiled code brackets each layer call with these (ds-outline-layers):
 * kind 0 forward, 1 backward; spans nest. */
DSRT_API void dsrt_trace_begin(const char *name, int32_t kind);
DSRT_API void dsrt_trace_end(void);
/* The events so far (not a copy: valid until the next span or clear), and
 * how many were dropped past max_events. */
DSRT_API int dsrt_trace_events(const dsrt_trace_event **out, int64_t *count,
                               int64_t *dropped);

/*--- Kernel profile (core/profile.c) -------------------------------------*/

/* `ds-train --profile`: a step compiled with profiling (ds-profile-spans)
 * brackets each kernel (a BLAS call, a loop nest, a copy, a collective, an
 * optimizer call) with these. The runtime sums, per kernel, its calls,
 * seconds and the FLOPs and bytes the compiler counted from its shapes. A
 * step compiled without profiling makes no such calls. */
typedef enum dsrt_profile_class {
  DSRT_PROFILE_GEMM = 0,        /* matrix products (dsrt_sgemm*, loops) */
  DSRT_PROFILE_ELEMENTWISE = 1, /* fused loop nests, every loop parallel */
  DSRT_PROFILE_REDUCTION = 2,   /* loop nests with a reduction loop */
  DSRT_PROFILE_COPY = 3,        /* copies, transposes */
  DSRT_PROFILE_FILL = 4,        /* a buffer set to one value */
  DSRT_PROFILE_COLLECTIVE = 5,  /* collectives, their waits, send/recv */
  DSRT_PROFILE_OPTIMIZER = 6,   /* the fused optimizer kernels */
  DSRT_PROFILE_CLASS_COUNT = 7,
} dsrt_profile_class;

typedef struct dsrt_profile_kernel {
  const char *name; /* "layer_block:3 elementwise 128x768" (a copy) */
  int32_t cls;      /* dsrt_profile_class */
  int64_t calls;
  double seconds;
  int64_t flops; /* summed over calls; 0 where not counted */
  int64_t bytes; /* each operand's buffer once per call; 0: not counted */
} dsrt_profile_kernel;

/* Brackets one kernel; spans do not nest (a begin while one is open
 * restarts it). `name` is a constant of the compiled code. */
DSRT_API void dsrt_profile_begin(void);
DSRT_API void dsrt_profile_end(const char *name, int32_t cls, int64_t flops,
                               int64_t bytes);
/* The kernels so far, in order of first call (not a copy: valid until the
 * next dsrt_profile_end or reset). */
DSRT_API int dsrt_profile_kernels(const dsrt_profile_kernel **out,
                                  int64_t *count);
/* "gemm", "elementwise", ...; "?" for an unknown class. */
DSRT_API const char *dsrt_profile_class_name(int32_t cls);
DSRT_API void dsrt_profile_reset(void);

/*--- Optimizers (kernels/cpu/optim.c) -----------------------------------*/

/* One fused pass per step over flat fp32 buffers updated in place: params,
 * states (exp_avg, exp_avg_sq, momentum_buf) and, when param16 is not NULL,
 * a 16-bit copy of the updated params (param16_dtype DSRT_F16 or DSRT_BF16,
 * rounded to nearest even) for mixed precision. grad is grad_dtype (DSRT_F32,
 * DSRT_F16 or DSRT_BF16) and is multiplied by grad_scale as it is read (pass
 * 1/loss_scale times the clip coefficient; 1 for none). step counts from 1.
 * Threads: OpenMP (OMP_NUM_THREADS); vector path: see dsrt_optim_simd_set.
 *
 * The _multi forms take arrays of num_tensors pointers and counts and do
 * the whole list in one parallel pass (the same result as one call per
 * tensor); a NULL params16 array means no 16-bit copy. */

/* Adam (adamw_mode 0) as torch.optim.Adam: g = grad*grad_scale +
 * weight_decay*p; AdamW (adamw_mode 1) as torch.optim.AdamW: p *= 1 -
 * lr*weight_decay first. Then m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g*g,
 * p += -lr/(1-b1^step) * m / (sqrt(v)/sqrt(1-b2^step) + eps); without
 * bias_correction both corrections are 1. */
DSRT_API int dsrt_adam(float *param, const void *grad, int grad_dtype,
                       float *exp_avg, float *exp_avg_sq, int64_t count,
                       int64_t step, float lr, float beta1, float beta2,
                       float eps, float weight_decay, int adamw_mode,
                       int bias_correction, float grad_scale, void *param16,
                       int param16_dtype);
DSRT_API int dsrt_adam_multi(int64_t num_tensors, float *const *params,
                             const void *const *grads, int grad_dtype,
                             float *const *exp_avgs, float *const *exp_avg_sqs,
                             const int64_t *counts, int64_t step, float lr,
                             float beta1, float beta2, float eps,
                             float weight_decay, int adamw_mode,
                             int bias_correction, float grad_scale,
                             void *const *params16, int param16_dtype);

/*--- Optimizer state on NVMe (offload/swap.c) ---------------------------*/

/* A directory of state files, one per swapped tensor, read and written
 * through io_uring (pread/pwrite where the kernel has no io_uring), with
 * O_DIRECT where the file system takes it. dsrt_swap_add returns a key: an
 * address range the size of the tensor, reserved but never backed by
 * memory (any access faults). Passed as a state buffer to dsrt_adam or
 * dsrt_adam_multi (as exp_avg and exp_avg_sq together), it makes the update
 * stream that state from its file through buffer_count staging buffers of
 * buffer_size elements: the next chunks are read while the kernel updates
 * this one, and it is written back behind it. The arithmetic is the
 * kernel's own, element by element: the values equal those of the call
 * over memory, bit for bit. */
typedef struct dsrt_swap dsrt_swap; /* opaque */
typedef struct dsrt_swap_options {
  int64_t block_size;    /* bytes per I/O request, a multiple of 4096 */
  int32_t queue_depth;   /* the ring's entries: requests in flight at most */
  int32_t single_submit; /* submit each request alone, not a batch */
  int32_t buffer_count;  /* staging slots, 2..64 */
  int64_t buffer_size;   /* elements per chunk (rounded to whole blocks) */
} dsrt_swap_options;

/* Opens (creating one level if missing) directory `dir`; NULL options are
 * 1 MiB requests, depth 8, 4 buffers of 1M elements. */
DSRT_API int dsrt_swap_open(const char *dir, const dsrt_swap_options *options,
                            dsrt_swap **out);
/* A tensor of `bytes` in file dir/name (truncated, its blocks allocated
 * now, zeros; padded to 4096 bytes), and the key standing for it. */
DSRT_API int dsrt_swap_add(dsrt_swap *s, const char *name, int64_t bytes,
                           void **key);
/* The whole tensor of `key` from its file into memory, or back. */
DSRT_API int dsrt_swap_load(const void *key, void *dst);
DSRT_API int dsrt_swap_store(const void *key, const void *src);
/* Whether every file is opened with O_DIRECT. */
DSRT_API int dsrt_swap_direct(const dsrt_swap *s);
/* Bytes read from and written to the files so far. */
DSRT_API void dsrt_swap_traffic(const dsrt_swap *s, int64_t *read,
                                int64_t *written);
/* Closes the files (which stay) and releases the keys. */
DSRT_API int dsrt_swap_close(dsrt_swap *s);

/* SGD as torch.optim.SGD: d = grad*grad_scale + weight_decay*p; with
 * momentum, buf = d on step 1, else buf = momentum*buf + (1-dampening)*d,
 * and d = nesterov ? d + momentum*buf : buf; p -= lr*d. momentum_buf may be
 * NULL when momentum is 0; nesterov needs momentum > 0 and dampening 0. */
DSRT_API int dsrt_sgd(float *param, const void *grad, int grad_dtype,
                      float *momentum_buf, int64_t count, int64_t step,
                      float lr, float momentum, float dampening, int nesterov,
                      float weight_decay, float grad_scale, void *param16,
                      int param16_dtype);
DSRT_API int dsrt_sgd_multi(int64_t num_tensors, float *const *params,
                            const void *const *grads, int grad_dtype,
                            float *const *momentum_bufs, const int64_t *counts,
                            int64_t step, float lr, float momentum,
                            float dampening, int nesterov, float weight_decay,
                            float grad_scale, void *const *params16,
                            int param16_dtype);

/* Lamb as DeepSpeed's FusedLamb (eps outside the sqrt): m and v as Adam's
 * (no weight decay in g), update = m/(sqrt(v)+eps) + weight_decay*p, trust
 * ratio = ||p|| / ||update|| over the whole tensor (1 if either norm is 0)
 * clamped to [min_coeff, max_coeff], p -= step_size*ratio*update with
 * step_size = lr*sqrt(1-b2^step)/(1-b1^step) (lr without bias_correction).
 * The ratio is per tensor: per call here, per list entry in _multi; it is
 * stored to trust_ratio(s) unless NULL. */
DSRT_API int dsrt_lamb(float *param, const void *grad, int grad_dtype,
                       float *exp_avg, float *exp_avg_sq, int64_t count,
                       int64_t step, float lr, float beta1, float beta2,
                       float eps, float weight_decay, int bias_correction,
                       float min_coeff, float max_coeff, float grad_scale,
                       void *param16, int param16_dtype, float *trust_ratio);
DSRT_API int dsrt_lamb_multi(int64_t num_tensors, float *const *params,
                             const void *const *grads, int grad_dtype,
                             float *const *exp_avgs, float *const *exp_avg_sqs,
                             const int64_t *counts, int64_t step, float lr,
                             float beta1, float beta2, float eps,
                             float weight_decay, int bias_correction,
                             float min_coeff, float max_coeff, float grad_scale,
                             void *const *params16, int param16_dtype,
                             float *trust_ratios);

/* The vector path the CPU kernels use: "scalar", "avx2" (AVX2+FMA+F16C) or
 * "avx512" (also AVX-512F/BW/VL). By default the best the CPU has, or the
 * DSRT_SIMD environment variable (same names, or "auto") read on first use.
 * All paths give bitwise equal results. set fails with
 * DSRT_ERR_UNSUPPORTED when the CPU lacks the path; NULL or "auto" picks the
 * best. get returns "" (dsrt_last_error says why) if DSRT_SIMD is unusable. */
DSRT_API int dsrt_optim_simd_set(const char *name);
DSRT_API const char *dsrt_optim_simd_get(void);

/* FusedAdam/AdamW on a GPU (kernels/cuda/adam.cu): the math of
 * dsrt_adam_multi over device pointers (the pointer arrays and counts are
 * host memory), launched on `stream` (a cudaStream_t; NULL = the default
 * stream) and returning before the kernels finish. DSRT_ERR_UNSUPPORTED when
 * libdsrt was built without CUDA or no GPU is usable. */
DSRT_API int dsrt_cuda_adam_multi(
    int64_t num_tensors, float *const *params, const void *const *grads,
    int grad_dtype, float *const *exp_avgs, float *const *exp_avg_sqs,
    const int64_t *counts, int64_t step, float lr, float beta1, float beta2,
    float eps, float weight_decay, int adamw_mode, int bias_correction,
    float grad_scale, void *const *params16, int param16_dtype, void *stream);

/*--- CUDA devices (gpu/device.c) -----------------------------------------*/

/* What the NVIDIA driver offers this process, probed with dlopen (libdsrt
 * never links libcuda). */
#define DSRT_CUDA_MAX_DEVICES 16
typedef struct dsrt_cuda_device {
  char name[128];
  int major, minor; /* compute capability: sm_<major><minor> */
  int multiprocessors;
  uint64_t total_bytes;
} dsrt_cuda_device;
typedef struct dsrt_cuda_info {
  int driver_loaded;  /* libcuda.so.1 loaded */
  int driver_version; /* cuDriverGetVersion: 1000*major + 10*minor */
  int device_count;   /* devices[] lists the first DSRT_CUDA_MAX_DEVICES */
  dsrt_cuda_device devices[DSRT_CUDA_MAX_DEVICES];
  char problem[256]; /* why no GPU is usable; "" when one is */
} dsrt_cuda_info;

/* Fills *info. DSRT_OK when at least one GPU is usable; otherwise
 * DSRT_ERR_UNSUPPORTED with info->problem (and dsrt_last_error) naming the
 * missing piece: the driver library, its initialization, or a device. */
DSRT_API int dsrt_cuda_probe(dsrt_cuda_info *info);
/* DSRT_OK when GPU 0 runs device code compiled for sm_<major><minor>;
 * otherwise DSRT_ERR_UNSUPPORTED with an error naming what is missing. */
DSRT_API int dsrt_cuda_require(int major, int minor);

/*--- The GPU step's host side (gpu/memory.c, gpu/cublas.c, gpu/mgpu.c) ----*/

/* The process's one stream (a CUstream, usable as a cudaStream_t), created
 * on first use on GPU 0's primary context: every kernel of a GPU step, its
 * GEMMs and its optimizer run on it in program order. DSRT_ERR_UNSUPPORTED
 * naming the missing piece where no GPU is usable. */
DSRT_API int dsrt_cuda_stream(void **stream);
/* Device memory on GPU 0 (DSRT_ERR_OUT_OF_MEMORY naming the size when it
 * does not fit), freed with dsrt_cuda_free. */
DSRT_API int dsrt_cuda_malloc(void **ptr, int64_t bytes);
DSRT_API int dsrt_cuda_free(void *ptr);
/* Copies bytes between any host and device addresses (unified addressing),
 * ordered after the work already on the ds stream; returns when done. */
DSRT_API int dsrt_cuda_memcpy(void *dst, const void *src, int64_t bytes);
/* Waits for everything on the ds stream. */
DSRT_API int dsrt_cuda_synchronize(void);

/* For a GPU step's compiled code (ds-gpu-host-runtime redirects the CPU
 * forms to these). Managed memory, which the host may also address, in
 * place of malloc/free; failures end the job naming the size. */
DSRT_API void *dsrt_cuda_managed_alloc(int64_t bytes);
DSRT_API void dsrt_cuda_managed_free(void *ptr);
/* dsrt_workspace_alloc's contract in managed memory: NULL with
 * dsrt_last_error naming the size (or the missing GPU) on failure. */
DSRT_API void *dsrt_cuda_workspace_alloc(int64_t bytes);
DSRT_API void dsrt_cuda_workspace_free(void *workspace, int64_t bytes);
/* dsrt_cuda_synchronize, ending the job on failure: before the host reads
 * or writes memory asynchronous GPU work may still use. */
DSRT_API void dsrt_cuda_host_sync(void);

/* dsrt_sgemm and dsrt_sgemm_strided_batched on device pointers, through
 * cuBLAS (libcublas.so.13, dlopen'd) on the ds stream; same row-major
 * contract and argument checks, returning before the GEMM finishes. */
DSRT_API int dsrt_cuda_sgemm(int transA, int transB, int64_t M, int64_t N,
                             int64_t K, float alpha, const float *A,
                             int64_t lda, const float *B, int64_t ldb,
                             float beta, float *C, int64_t ldc);
DSRT_API int dsrt_cuda_sgemm_strided_batched(
    int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
    const float *A, int64_t lda, int64_t strideA, const float *B, int64_t ldb,
    int64_t strideB, float beta, float *C, int64_t ldc, int64_t strideC,
    int64_t batchCount);

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
