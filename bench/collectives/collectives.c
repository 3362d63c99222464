/*===- collectives.c - libdsrt collectives vs the same MPI calls ----------===*
 *
 * Run under mpirun by bench/collectives.sh. For each collective and size,
 * alternates one libdsrt call and one direct MPI call (so machine noise
 * hits both alike), keeps the median time of each side over the repeats
 * (slowest rank of each repeat; the median, not the best, so that one
 * lucky repeat on a loaded machine does not decide) and prints bus bandwidth as
 *the JSON line of bench/run.sh's convention. Bus bandwidth follows nccl-tests:
 *algbw * 2(n-1)/n for all-reduce, algbw * (n-1)/n for all-gather and
 * reduce-scatter and all-to-all, where algbw = bytes of the full tensor /
 * time. COLLECTIVES_KINDS (e.g. "all_to_all") picks some of them.
 *
 *===-----------------------------------------------------------------------===*/
#include "dsrt/dsrt.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL };
static const char *const names[] = {"all_reduce", "all_gather",
                                    "reduce_scatter", "all_to_all"};
static const char *const baselines[] = {"MPI_Allreduce", "MPI_Allgather",
                                        "MPI_Reduce_scatter_block",
                                        "MPI_Alltoall"};

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of the n times in t (sorts t). */
static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, by_value);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void check(int status, const char *what) {
  if (dsrt_check(status, what))
    exit(1);
}

/* One timed call of collective k on `count` f32 elements, ds or MPI. */
static double timed(int k, int ds, float *send, float *recv, int count, int n) {
  dsrt_comm *w = dsrt_comm_world();
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime();
  if (k == ALL_REDUCE) {
    if (ds)
      check(dsrt_all_reduce(w, send, recv, count, DSRT_F32, DSRT_SUM),
            "dsrt_all_reduce");
    else
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (k == ALL_GATHER) {
    if (ds)
      check(dsrt_all_gather(w, send, recv, count, DSRT_F32), "dsrt_all_gather");
    else
      MPI_Allgather(send, count / n, MPI_FLOAT, recv, count / n, MPI_FLOAT,
                    MPI_COMM_WORLD);
  } else if (k == ALL_TO_ALL) {
    if (ds)
      check(dsrt_all_to_all(w, send, recv, count / n, DSRT_F32),
            "dsrt_all_to_all");
    else
      MPI_Alltoall(send, count / n, MPI_FLOAT, recv, count / n, MPI_FLOAT,
                   MPI_COMM_WORLD);
  } else {
    if (ds)
      check(dsrt_reduce_scatter(w, send, recv, count, DSRT_F32, DSRT_SUM),
            "dsrt_reduce_scatter");
    else
      MPI_Reduce_scatter_block(send, recv, count / n, MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
  }
  t = MPI_Wtime() - t;
  double slowest;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char **argv) {
  /* libdsrt starts MPI, as in ds-train (and then talks on MPI_COMM_WORLD
   * itself); the baseline's calls use the same MPI_COMM_WORLD, one call at
   * a time, and dsrt_comm_finalize ends MPI. */
  (void)argc, (void)argv;
  check(dsrt_comm_init("mpi"), "dsrt_comm_init");
  int n, r;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const char *sizes = getenv("COLLECTIVES_SIZES_MIB");
  char list[256];
  snprintf(list, sizeof(list), "%s", sizes && *sizes ? sizes : "1 4 16 64");
  for (char *tok = strtok(list, " "); tok; tok = strtok(NULL, " ")) {
    int mib = atoi(tok);
    int count = mib * (1 << 20) / 4;
    count -= count % n; /* MPI's block forms need equal shards */
    float *send = malloc((size_t)count * 4), *recv = malloc((size_t)count * 4);
    for (int i = 0; i < count; ++i)
      send[i] = (float)(i % 1000) * 0.5f + (float)r;
    memset(recv, 0, (size_t)count * 4);
    /* More repeats for small sizes, where noise weighs most. */
    int repeats = mib <= 1 ? 40 : mib <= 4 ? 20 : mib <= 16 ? 20 : 10;
    const char *kinds = getenv("COLLECTIVES_KINDS");
    for (int k = ALL_REDUCE; k <= ALL_TO_ALL; ++k) {
      if (kinds && *kinds ? !strstr(kinds, names[k]) : k == ALL_TO_ALL)
        continue;
      timed(k, 1, send, recv, count, n); /* warm-up: buffers, connections */
      timed(k, 0, send, recv, count, n);
      double *times[2] = {malloc(sizeof(double) * repeats),
                          malloc(sizeof(double) * repeats)};
      for (int i = 0; i < repeats; ++i)
        for (int ds = 0; ds < 2; ++ds) {
          /* Alternate which side goes first, too. */
          int side = (i & 1) ? ds : !ds;
          times[side][i] = timed(k, side, send, recv, count, n);
        }
      double best[2] = {median(times[0], repeats), median(times[1], repeats)};
      free(times[0]);
      free(times[1]);
      double bytes = (double)count * 4;
      double factor = k == ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
      double ds = bytes / best[1] * factor / 1e9;
      double base = bytes / best[0] * factor / 1e9;
      if (r == 0)
        printf("{\"bench\": \"collectives\", \"metric\": "
               "\"%s_busbw_GBps_%dMiB\", \"ds\": %.4f, \"baseline\": %.4f, "
               "\"baseline_name\": \"%s\", \"ratio\": %.3f}\n",
               names[k], mib, ds, base, baselines[k], ds / base);
      fflush(stdout);
    }
    free(send);
    free(recv);
  }
  check(dsrt_comm_finalize(), "dsrt_comm_finalize");
  return 0;
}
