/*===- mpi_join.c - one world from several mpirun jobs -------------------===*
 *
 * `ds-launch --no_ssh` runs one mpirun per node, each given node 0's
 * ompi-server, and tells every rank its node (DSRT_MPI_JOIN_NODE, of
 * DSRT_MPI_JOIN_NODES) and the job's service name (DSRT_MPI_JOIN_SERVICE).
 * For k = 1, 2, ... in turn, node 0's rank 0 opens an MPI port for node k
 * and publishes it under that name and k; node k looks it up, and the
 * world so far accepts node k and merges with it. Merging with the
 * newcomer ranked high keeps the world ordered by node rank, so world rank
 * = node offset + local rank, what the launcher told the rank shim (checked
 * here).
 *
 *===----------------------------------------------------------------------===*/
#include "comm/mpi_join.h"
#include "core/error.h"
#include "dsrt/dsrt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the whole join may take (DSRT_MPI_JOIN_TIMEOUT_S; ds-launch
 * passes its --rendezvous_timeout). Every node's ranks start at about the
 * same time, since the launchers formed the job first, so this only bounds
 * a node whose ranks died or never called dsrt_comm_init: MPI_Comm_accept
 * would wait for them forever. */
#define DSRT_JOIN_DEFAULT_TIMEOUT_S 300.0

static MPI_Comm joined = MPI_COMM_NULL;
static MPI_Comm *links; /* the intercommunicators, one per join taken part in */
static int nlinks;

static double join_timeout_s(void) {
  const char *v = getenv("DSRT_MPI_JOIN_TIMEOUT_S");
  char *end;
  double t = v && *v ? strtod(v, &end) : 0;
  return v && *v && !*end && t > 0 ? t : DSRT_JOIN_DEFAULT_TIMEOUT_S;
}

/* The watchdog: ends the rank when the join outlives its timeout. A
 * blocked MPI call cannot be cancelled, and another thread may not call
 * MPI meanwhile (MPI_THREAD_SERIALIZED), so it exits: mpirun then ends this
 * node's job, and the other nodes' joins fail or time out in turn. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_done = PTHREAD_COND_INITIALIZER;
static int joining;
static struct {
  int node, nodes;
  double timeout;
} watch;

static void *watchdog(void *unused) {
  (void)unused;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  double whole = (double)(time_t)watch.timeout;
  until.tv_sec += (time_t)whole;
  until.tv_nsec += (long)((watch.timeout - whole) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&watch_lock);
  int rc = 0;
  while (joining && rc == 0)
    rc = pthread_cond_timedwait(&watch_done, &watch_lock, &until);
  int late = joining;
  pthread_mutex_unlock(&watch_lock);
  if (late) {
    fprintf(stderr,
            "dsrt_comm_init: node %d of %d: the nodes of ds-launch --no_ssh "
            "did not all join within %g s; some node's ranks failed to "
            "start: check every node's ds-launch output\n",
            watch.node, watch.nodes, watch.timeout);
    fflush(stderr);
    _exit(1);
  }
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int env_int(const char *name, int *out) {
  const char *v = getenv(name);
  char *end;
  if (!v || !*v)
    return 0;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > 1 << 20)
    return -1;
  *out = (int)n;
  return 1;
}

static int join_error(const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
    msg[0] = 0;
  return dsrt_fail(DSRT_ERR_INTERNAL,
                   "dsrt_comm_init: joining the nodes of ds-launch --no_ssh: "
                   "%s failed: %s",
                   what, msg);
}

/* Node k's own port: node 0's rank 0 (the root of every accept) opens one
 * per newcomer under "SERVICE-k", and node k's rank 0 (its root) looks it
 * up, so node k cannot take node j's turn: MPI_Comm_accept takes whoever
 * connects first. The port name matters only at the roots. */
static int find_port(int node, int k, int local_rank, const char *service,
                     char *port) {
  if (local_rank != 0 || (node != 0 && node != k))
    return DSRT_OK;
  char name[256];
  snprintf(name, sizeof name, "%s-%d", service, k);
  if (node == 0) {
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    if (rc == MPI_SUCCESS)
      rc = MPI_Publish_name(name, MPI_INFO_NULL, port);
    return rc == MPI_SUCCESS ? DSRT_OK : join_error("MPI_Publish_name", rc);
  }
  /* A name not published yet is an error, not a wait: poll. */
  double deadline = now() + watch.timeout;
  struct timespec pause = {0, 20 * 1000 * 1000};
  while (MPI_Lookup_name(name, MPI_INFO_NULL, port) != MPI_SUCCESS) {
    if (now() > deadline)
      return dsrt_fail(DSRT_ERR_INTERNAL,
                       "dsrt_comm_init: node 0 did not publish the MPI port "
                       "'%s' within %.0f s; check that node 0's ds-launch "
                       "--no_ssh and its ranks are running",
                       name, watch.timeout);
    nanosleep(&pause, NULL);
  }
  return DSRT_OK;
}

int dsrt_mpi_join(MPI_Comm *world) {
  *world = MPI_COMM_WORLD;
  int node = 0, nodes = 1, offset = 0;
  const char *service = getenv("DSRT_MPI_JOIN_SERVICE");
  int has_nodes = env_int("DSRT_MPI_JOIN_NODES", &nodes);
  if (has_nodes == 0)
    return DSRT_OK;
  if (has_nodes < 0 || env_int("DSRT_MPI_JOIN_NODE", &node) != 1 ||
      env_int("DSRT_MPI_JOIN_RANK_OFFSET", &offset) != 1 || !service ||
      !*service || node >= nodes)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_comm_init: DSRT_MPI_JOIN_NODES is set but "
                     "DSRT_MPI_JOIN_NODE, _RANK_OFFSET or _SERVICE is "
                     "missing or invalid; start the ranks with ds-launch "
                     "--no_ssh, which sets them all");
  if (nodes == 1)
    return DSRT_OK;
  links = calloc((size_t)nodes, sizeof(MPI_Comm));
  if (!links)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");

  watch.node = node;
  watch.nodes = nodes;
  watch.timeout = join_timeout_s();
  joining = 1;
  pthread_t watcher;
  int watching = pthread_create(&watcher, NULL, watchdog, NULL) == 0;

  /* Lookup failures are answers here, not aborts. */
  MPI_Errhandler before;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &before);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int local_rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &local_rank);
  int status = DSRT_OK;
  MPI_Comm current = MPI_COMM_WORLD;
  for (int k = 1; k < nodes && !status; ++k) {
    if (node > k)
      continue; /* joins later, as the newcomer */
    char port[MPI_MAX_PORT_NAME] = "";
    if ((status = find_port(node, k, local_rank, service, port)))
      break;
    MPI_Comm link, merged;
    int rc = node < k
                 ? MPI_Comm_accept(port, MPI_INFO_NULL, 0, current, &link)
                 : MPI_Comm_connect(port, MPI_INFO_NULL, 0, current, &link);
    if (node == 0 && local_rank == 0) {
      char name[256];
      snprintf(name, sizeof name, "%s-%d", service, k);
      MPI_Unpublish_name(name, MPI_INFO_NULL, port);
      MPI_Close_port(port);
    }
    if (rc != MPI_SUCCESS) {
      status =
          join_error(node < k ? "MPI_Comm_accept" : "MPI_Comm_connect", rc);
      break;
    }
    links[nlinks++] = link;
    rc = MPI_Intercomm_merge(link, /*high=*/node == k, &merged);
    if (rc != MPI_SUCCESS) {
      status = join_error("MPI_Intercomm_merge", rc);
      break;
    }
    if (current != MPI_COMM_WORLD)
      MPI_Comm_free(&current);
    current = merged;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, before);
  MPI_Errhandler_free(&before);
  pthread_mutex_lock(&watch_lock);
  joining = 0;
  pthread_cond_signal(&watch_done);
  pthread_mutex_unlock(&watch_lock);
  if (watching)
    pthread_join(watcher, NULL);
  if (status) {
    if (current != MPI_COMM_WORLD)
      MPI_Comm_free(&current);
    dsrt_mpi_join_end();
    return status;
  }
  int rank;
  MPI_Comm_rank(current, &rank);
  if (rank != offset + local_rank) {
    MPI_Comm_free(&current);
    dsrt_mpi_join_end();
    return dsrt_fail(DSRT_ERR_INTERNAL,
                     "dsrt_comm_init: node %d's local rank %d became world "
                     "rank %d after joining, not %d as ds-launch said; the "
                     "nodes disagree on their ranks",
                     node, local_rank, rank, offset + local_rank);
  }
  joined = current;
  *world = current;
  return DSRT_OK;
}

MPI_Comm dsrt_mpi_world(void) {
  return joined != MPI_COMM_NULL ? joined : MPI_COMM_WORLD;
}

void dsrt_mpi_join_end(void) {
  if (joined != MPI_COMM_NULL)
    MPI_Comm_free(&joined);
  for (int i = 0; i < nlinks; ++i)
    MPI_Comm_disconnect(&links[i]);
  free(links);
  links = NULL;
  nlinks = 0;
}
