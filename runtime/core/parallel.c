/*===- parallel.c - the compiled step's own loops across the threads -----===*/
/*
 * ds-parallelize-loops outlines a loop nest's outermost parallel loop into
 * fn(ctx, b, e) and calls dsrt_parallel_for. [begin, end) is cut into
 * contiguous chunks that the threads claim; an iteration runs exactly as it
 * does serially whichever thread and chunk it falls in, so results are
 * bitwise equal for every thread count.
 *
 * Why a pool of our own rather than OpenMP (libgomp, which libdsrt links
 * for the optimizer kernels): measured on the shared 2-core machine, a
 * `#pragma omp parallel` per nest made a 2-thread step 6x slower than the
 * same step with only OpenBLAS threaded. An OpenMP region ends in a barrier
 * that waits for every thread of the team, so a worker the kernel has not
 * scheduled yet (OpenBLAS's spinning threads, other processes) stalls the
 * caller for a time slice, and libgomp's workers then spin, taking the core
 * from OpenBLAS's. Here the chunks are claimed from a counter: the caller
 * takes whatever chunks no worker has started and waits only for chunks in
 * progress; workers spin only briefly after a nest, then sleep. No second
 * OpenMP runtime either (MLIR's omp dialect would bring LLVM's libomp).
 * The thread count is the BLAS's (dsrt_threads_get: OPENBLAS_NUM_THREADS,
 * OMP_NUM_THREADS or dsrt_threads_set), so one knob sets both.
 */
#include "core/parallel.h"
#include "dsrt/dsrt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

enum {
  MAX_HELPERS = 63,
  /* A worker's busy wait for the next nest before it sleeps: about the
   * gap between two nests of a step, well under a GEMM's, whose OpenBLAS
   * threads then have the cores. */
  WORKER_SPINS = 4000,
  CHUNKS_PER_THREAD = 4,
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake;
  int started; /* worker threads running */
  int busy;    /* a job is in flight (a second caller runs serially) */
  /* The job of generation `gen`, written under mu before gen moves. */
  dsrt_range_fn fn;
  void *ctx;
  int64_t begin, n, chunks;
  int helpers;
  _Atomic uint64_t gen;
  _Atomic uint64_t ticket; /* gen << 32 | next chunk to claim */
  _Atomic int64_t done;    /* chunks of the current job finished */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

/* Nested calls (from inside a chunk) run serially. */
static _Thread_local int inside;

/* Claims and runs chunks of job `g` until none is left. A claim carries the
 * generation, so a late worker never takes a chunk of a newer job with the
 * old job's function. */
static void work(uint64_t g, dsrt_range_fn fn, void *ctx, int64_t begin,
                 int64_t n, int64_t chunks) {
  uint64_t tag = (g & 0xffffffffu) << 32;
  uint64_t t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
  inside = 1;
  while ((t & ~(uint64_t)0xffffffffu) == tag &&
         (int64_t)(t & 0xffffffffu) < chunks) {
    if (!atomic_compare_exchange_weak(&pool.ticket, &t, t + 1))
      continue;
    int64_t c = (int64_t)(t & 0xffffffffu);
    int64_t b = begin + n * c / chunks, e = begin + n * (c + 1) / chunks;
    if (b < e)
      fn(ctx, b, e);
    atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
    t = atomic_load_explicit(&pool.ticket, memory_order_acquire);
  }
  inside = 0;
}

static void *worker_main(void *arg) {
  int index = (int)(intptr_t)arg;
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < WORKER_SPINS &&
                    atomic_load_explicit(&pool.gen, memory_order_acquire) ==
                        seen;
         ++i)
      cpu_relax();
    pthread_mutex_lock(&pool.mu);
    while (atomic_load_explicit(&pool.gen, memory_order_acquire) == seen)
      pthread_cond_wait(&pool.wake, &pool.mu);
    uint64_t g = atomic_load(&pool.gen);
    dsrt_range_fn fn = pool.fn;
    void *ctx = pool.ctx;
    int64_t begin = pool.begin, n = pool.n, chunks = pool.chunks;
    int helpers = pool.helpers;
    pthread_mutex_unlock(&pool.mu);
    seen = g;
    if (index < helpers)
      work(g, fn, ctx, begin, n, chunks);
  }
  return NULL;
}

int dsrt_parallel_for(dsrt_range_fn fn, void *ctx, int64_t begin,
                      int64_t end) {
  return dsrt_parallel_for_threads(fn, ctx, begin, end, dsrt_threads_get());
}

int dsrt_parallel_for_threads(dsrt_range_fn fn, void *ctx, int64_t begin,
                              int64_t end, int64_t threads) {
  int64_t n = end - begin;
  if (n <= 0)
    return DSRT_OK;
  if (inside)
    threads = 1;
  if (threads > n)
    threads = n;
  if (threads > MAX_HELPERS + 1)
    threads = MAX_HELPERS + 1;
  if (threads <= 1) {
    fn(ctx, begin, end);
    return DSRT_OK;
  }
  pthread_mutex_lock(&pool.mu);
  if (pool.busy) { /* another thread's nest is in flight */
    pthread_mutex_unlock(&pool.mu);
    fn(ctx, begin, end);
    return DSRT_OK;
  }
  while (pool.started < threads - 1) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int failed = pthread_create(&thread, &attr, worker_main,
                                (void *)(intptr_t)pool.started);
    pthread_attr_destroy(&attr);
    if (failed)
      break; /* fewer helpers; the caller takes their chunks */
    ++pool.started;
  }
  int64_t chunks = threads * CHUNKS_PER_THREAD;
  if (chunks > n)
    chunks = n;
  pool.busy = 1;
  pool.fn = fn;
  pool.ctx = ctx;
  pool.begin = begin;
  pool.n = n;
  pool.chunks = chunks;
  pool.helpers = (int)threads - 1;
  uint64_t g = atomic_load(&pool.gen) + 1;
  atomic_store(&pool.done, 0);
  atomic_store(&pool.ticket, (g & 0xffffffffu) << 32);
  atomic_store_explicit(&pool.gen, g, memory_order_release);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mu);

  work(g, fn, ctx, begin, n, chunks);
  for (unsigned i = 0;
       atomic_load_explicit(&pool.done, memory_order_acquire) < chunks; ++i) {
    if (i < 1000)
      cpu_relax();
    else
      sched_yield(); /* a helper holding a chunk was descheduled */
  }
  pthread_mutex_lock(&pool.mu);
  pool.busy = 0;
  pthread_mutex_unlock(&pool.mu);
  return DSRT_OK;
}
