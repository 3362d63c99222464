/*===- adamw_bench.c - dsrt_adam(w) vs a memory-roofline kernel -----------===*
 *
 * usage: adamw_bench PARAMS TENSORS REPS
 * Times one AdamW step of dsrt_adam_multi over PARAMS fp32 parameters split
 * into TENSORS equal tensors (separately allocated), and one step of a
 * kernel with the same memory traffic (reads p, g, m, v; writes p, m, v)
 * and trivial arithmetic on separate buffers of the same shape, alternating
 * the two REPS times so load from elsewhere hits both alike. Prints
 * "ds_best_s roofline_best_s ds_median_s roofline_median_s".
 * Threads: OpenMP (OMP_NUM_THREADS) on both sides.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct state {
  int64_t tensors;
  int64_t *counts;
  float **p, **g, **m, **v;
} state;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *buffer(int64_t n, float value) {
  float *x = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  if (!x) {
    fprintf(stderr, "adamw_bench: out of memory\n");
    exit(1);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    x[i] = value * (float)((i % 1000) - 500) * 1e-3f;
  return x;
}

static void make_state(state *s, int64_t params, int64_t tensors) {
  s->tensors = tensors;
  s->counts = malloc(sizeof(int64_t) * tensors);
  s->p = malloc(sizeof(float *) * tensors);
  s->g = malloc(sizeof(float *) * tensors);
  s->m = malloc(sizeof(float *) * tensors);
  s->v = malloc(sizeof(float *) * tensors);
  for (int64_t t = 0; t < tensors; ++t) {
    s->counts[t] = params / tensors + (t < params % tensors);
    s->p[t] = buffer(s->counts[t], 1.0f);
    s->g[t] = buffer(s->counts[t], 0.1f);
    s->m[t] = buffer(s->counts[t], 0.0f);
    s->v[t] = buffer(s->counts[t], 0.0f);
  }
}

static void ds_step(state *s, int64_t step) {
  if (dsrt_adam_multi(s->tensors, s->p, (const void *const *)s->g, DSRT_F32,
                      s->m, s->v, s->counts, step, 1e-3f, 0.9f, 0.999f, 1e-8f,
                      0.01f, 1, 1, 1.0f, NULL, 0) != DSRT_OK) {
    fprintf(stderr, "adamw_bench: %s\n", dsrt_last_error());
    exit(1);
  }
}

/* Same bytes moved, next to no arithmetic: what memory allows. */
static void roofline_step(state *s) {
#pragma omp parallel
  for (int64_t t = 0; t < s->tensors; ++t) {
    float *restrict p = s->p[t], *restrict m = s->m[t], *restrict v = s->v[t];
    const float *restrict g = s->g[t];
    int64_t n = s->counts[t];
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < n; ++i) {
      float gi = g[i];
      float mi = m[i] * 0.5f + gi;
      m[i] = mi;
      v[i] = v[i] * 0.5f + gi;
      p[i] = p[i] - 1e-9f * mi;
    }
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: adamw_bench PARAMS TENSORS REPS\n");
    return 2;
  }
  int64_t params = atoll(argv[1]), tensors = atoll(argv[2]);
  int reps = atoi(argv[3]);
  state ds, roof;
  make_state(&ds, params, tensors);
  make_state(&roof, params, tensors);
  ds_step(&ds, 1); /* warm-up: page faults, thread pool */
  roofline_step(&roof);
  double *tds = malloc(sizeof(double) * reps),
         *troof = malloc(sizeof(double) * reps);
  for (int r = 0; r < reps; ++r) {
    double t0 = now();
    ds_step(&ds, r + 2);
    double t1 = now();
    roofline_step(&roof);
    double t2 = now();
    tds[r] = t1 - t0;
    troof[r] = t2 - t1;
  }
  qsort(tds, reps, sizeof(double), cmp);
  qsort(troof, reps, sizeof(double), cmp);
  fprintf(stderr,
          "adamw_bench: %lld params, %lld tensors, %d threads, %s path\n",
          (long long)params, (long long)tensors, omp_get_max_threads(),
          dsrt_optim_simd_get());
  printf("%.9f %.9f %.9f %.9f\n", tds[0], troof[0], tds[reps / 2],
         troof[reps / 2]);
  return 0;
}
