/*===- comm_progress.c - an all-gather overlapped with a matmul -----------===*
 *
 * Run under mpirun by bench/comm_progress.sh. Measures, slowest rank of
 * each repeat, best over the repeats:
 *   comm     dsrt_all_gather of COMM_PROGRESS_MIB MiB (the whole tensor)
 *   compute  k dsrt_sgemm calls of d x d, k chosen so compute ~ comm
 *   overlap  dsrt_all_gather_start, the same k sgemms, dsrt_wait
 * and prints "overlap comm compute k" for bench/comm_progress.sh, which
 * makes the JSON lines. COMM_PROGRESS_K fixes k (the run with the progress
 * thread off repeats the first run's k).
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "dsrt/dsrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { COMM, COMPUTE, OVERLAP };

static void check(int status, const char *what) {
  if (dsrt_check(status, what))
    exit(1);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  float *send, *recv, *a, *b, *c;
  int64_t count, d;
  int k;
} problem;

static void matmuls(const problem *p) {
  for (int i = 0; i < p->k; ++i)
    check(dsrt_sgemm(0, 0, p->d, p->d, p->d, 1.0f, p->a, p->d, p->b, p->d, 0.0f,
                     p->c, p->d),
          "dsrt_sgemm");
}

/* One timed run of `what`, the slowest rank's seconds. */
static double timed(int what, const problem *p) {
  dsrt_comm *w = dsrt_comm_world();
  check(dsrt_barrier(w), "dsrt_barrier");
  double t0 = now();
  if (what == COMM) {
    check(dsrt_all_gather(w, p->send, p->recv, p->count, DSRT_F32),
          "dsrt_all_gather");
  } else if (what == COMPUTE) {
    matmuls(p);
  } else {
    dsrt_request *req;
    check(dsrt_all_gather_start(w, p->send, p->recv, p->count, DSRT_F32, &req),
          "dsrt_all_gather_start");
    matmuls(p);
    check(dsrt_wait(req), "dsrt_wait");
  }
  float t = (float)(now() - t0), slowest;
  check(dsrt_all_reduce(w, &t, &slowest, 1, DSRT_F32, DSRT_MAX),
        "dsrt_all_reduce");
  return slowest;
}

static double best_of(int what, const problem *p, int repeats) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    double t = timed(what, p);
    best = t < best ? t : best;
  }
  return best;
}

static float *filled(int64_t n, float v) {
  float *x = malloc((size_t)n * sizeof(float));
  if (!x) {
    fprintf(stderr, "comm_progress: out of memory\n");
    exit(1);
  }
  for (int64_t i = 0; i < n; ++i)
    x[i] = v + (float)(i % 7);
  return x;
}

int main(void) {
  check(dsrt_comm_init("mpi"), "dsrt_comm_init");
  int n = dsrt_comm_size(dsrt_comm_world());
  int rank = dsrt_comm_rank(dsrt_comm_world());
  const char *env = getenv("COMM_PROGRESS_MIB");
  int mib = env && *env ? atoi(env) : 64;
  const char *reps = getenv("COMM_PROGRESS_REPEATS");
  int repeats = reps && *reps ? atoi(reps) : 5;
  problem p = {.count = (int64_t)mib * (1 << 20) / 4, .d = 512, .k = 1};
  p.count -= p.count % n;
  p.send = filled(p.count / n, (float)rank);
  p.recv = filled(p.count, 0);
  p.a = filled(p.d * p.d, 1);
  p.b = filled(p.d * p.d, 2);
  p.c = filled(p.d * p.d, 0);
  timed(COMM, &p); /* warm-up: connections, pages */
  double comm = best_of(COMM, &p, repeats);
  double one = best_of(COMPUTE, &p, 3);
  const char *fixed = getenv("COMM_PROGRESS_K");
  p.k = fixed && *fixed ? atoi(fixed) : (int)(comm / one + 0.5);
  p.k = p.k < 1 ? 1 : p.k;
  double compute = best_of(COMPUTE, &p, repeats);
  double overlap = best_of(OVERLAP, &p, repeats);
  if (rank == 0) {
    fprintf(stderr,
            "comm_progress: %d ranks, all-gather %d MiB %.4f s, %d sgemm "
            "%lldx%lld %.4f s, overlapped %.4f s\n",
            n, mib, comm, p.k, (long long)p.d, (long long)p.d, compute,
            overlap);
    printf("%.6f %.6f %.6f %d\n", overlap, comm, compute, p.k);
    fflush(stdout);
  }
  check(dsrt_comm_finalize(), "dsrt_comm_finalize");
  return 0;
}
