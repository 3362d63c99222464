/*===- mpi_liveness.c - which peers still answer, after a timeout ----------===*
 *
 * A timed-out wait knows only that its operation did not complete. To name
 * the peer behind it, the waiting rank pings every other rank on a private
 * duplicate of the world and lists those that do not answer within a short
 * window: ranks behind a cut link or on a dead host. Ranks answer pings
 * while they wait (dsrt_comm_wait_on) and while they ping, so two ranks
 * that time out on the same operation hear each other. Host names come from
 * MPI_Get_processor_name, gathered at start-up.
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "comm/mpi_liveness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PING_TAG = 1, PONG_TAG = 2 };

static MPI_Comm health = MPI_COMM_NULL;
static int me, size;
static char (*hosts)[MPI_MAX_PROCESSOR_NAME];
/* One ping and one pong in flight per peer; a buffer is reused only once
 * its send completed (a send stuck behind a cut link stays stuck). */
static int *ping_buf, *pong_buf;
static MPI_Request *ping_req, *pong_req;
static int round_id;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int dsrt_mpi_liveness_start(MPI_Comm world) {
  if (MPI_Comm_dup(world, &health) != MPI_SUCCESS)
    return 0; /* no names in timeout errors, nothing worse */
  MPI_Comm_set_errhandler(health, MPI_ERRORS_RETURN);
  MPI_Comm_rank(health, &me);
  MPI_Comm_size(health, &size);
  hosts = calloc((size_t)size, sizeof(*hosts));
  ping_buf = calloc((size_t)size, sizeof(int));
  pong_buf = calloc((size_t)size, sizeof(int));
  ping_req = malloc((size_t)size * sizeof(MPI_Request));
  pong_req = malloc((size_t)size * sizeof(MPI_Request));
  char name[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(name, &len);
  if (!hosts || !ping_buf || !pong_buf || !ping_req || !pong_req ||
      MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
                    MPI_MAX_PROCESSOR_NAME, MPI_CHAR, health) != MPI_SUCCESS) {
    dsrt_mpi_liveness_stop();
    return 0;
  }
  for (int i = 0; i < size; ++i)
    ping_req[i] = pong_req[i] = MPI_REQUEST_NULL;
  return 1;
}

void dsrt_mpi_liveness_stop(void) {
  if (health != MPI_COMM_NULL)
    MPI_Comm_free(&health);
  health = MPI_COMM_NULL;
  free(hosts);
  free(ping_buf);
  free(pong_buf);
  free(ping_req);
  free(pong_req);
  hosts = NULL;
  ping_buf = pong_buf = NULL;
  ping_req = pong_req = NULL;
}

/* A send slot is free once its last send completed. */
static int slot_free(MPI_Request *req) {
  int done = 1;
  if (*req != MPI_REQUEST_NULL)
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
  return done;
}

void dsrt_mpi_answer_peers(void) {
  if (health == MPI_COMM_NULL)
    return;
  for (;;) {
    int flag = 0, value;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, PING_TAG, health, &flag, &st) !=
            MPI_SUCCESS ||
        !flag)
      return;
    int src = st.MPI_SOURCE;
    MPI_Recv(&value, 1, MPI_INT, src, PING_TAG, health, MPI_STATUS_IGNORE);
    if (!slot_free(&pong_req[src]))
      continue;
    pong_buf[src] = value;
    MPI_Isend(&pong_buf[src], 1, MPI_INT, src, PONG_TAG, health,
              &pong_req[src]);
  }
}

/* Takes every pong that arrived; those of this round mark their sender. */
static void collect_pongs(char *answered) {
  for (;;) {
    int flag = 0, value;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, PONG_TAG, health, &flag, &st) !=
            MPI_SUCCESS ||
        !flag)
      return;
    MPI_Recv(&value, 1, MPI_INT, st.MPI_SOURCE, PONG_TAG, health,
             MPI_STATUS_IGNORE);
    if (value == round_id)
      answered[st.MPI_SOURCE] = 1;
  }
}

int dsrt_mpi_unanswered_peers(double window, char *out, size_t n) {
  if (health == MPI_COMM_NULL || size < 2 || n == 0)
    return -1;
  char *answered = calloc((size_t)size, 1);
  if (!answered)
    return -1;
  ++round_id;
  collect_pongs(answered); /* earlier rounds' late answers: dropped */
  answered[me] = 1;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == me || !slot_free(&ping_req[peer]))
      continue;
    ping_buf[peer] = round_id;
    MPI_Isend(&ping_buf[peer], 1, MPI_INT, peer, PING_TAG, health,
              &ping_req[peer]);
  }
  double start = now();
  int missing = size - 1;
  while (missing > 0 && now() - start < window) {
    dsrt_mpi_answer_peers();
    collect_pongs(answered);
    missing = 0;
    for (int peer = 0; peer < size; ++peer)
      missing += !answered[peer];
    struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  /* "world rank 2 on ds-host-b, world rank 3 on ds-host-b" */
  size_t used = 0;
  out[0] = '\0';
  for (int peer = 0, listed = 0; peer < size && used < n; ++peer) {
    if (answered[peer])
      continue;
    int w = snprintf(out + used, n - used, "%sworld rank %d on %s",
                     listed++ ? ", " : "", peer, hosts[peer]);
    used += w > 0 ? (size_t)w : 0;
  }
  free(answered);
  return missing;
}
