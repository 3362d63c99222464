/* STREAM's triad, a[i] = b[i] + s * c[i], on OpenMP threads: the memory
 * bandwidth a loop nest of the step can hope for. Arrays of TRIAD_N doubles
 * (argv[1], default 2^23: 64 MiB each, well past the last-level cache); the
 * best of argv[2] (10) passes, counted as STREAM does (3 x 8 bytes an
 * element, no write-allocate). Prints GB/s. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1L << 23;
  int passes = argc > 2 ? atoi(argv[2]) : 10;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
         *c = malloc(n * sizeof *c);
  if (!a || !b || !c)
    return 1;
#pragma omp parallel for
  for (long i = 0; i < n; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  double best = 1e30, s = 3.0;
  for (int p = 0; p < passes; ++p) {
    double t = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
    t = omp_get_wtime() - t;
    if (t < best)
      best = t;
  }
  if (a[n / 2] != 7.0)
    return 1;
  printf("%.3f\n", 3.0 * 8.0 * (double)n / best / 1e9);
  return 0;
}
