/*===- comm.c - communication entry points, over one backend table --------===*
 *
 * Everything backend-independent lives here: choosing the backend, the list
 * of live groups, the grid groups, argument checks, the blocking forms (a
 * start plus a timed wait), the timeout that keeps a dead or stuck peer from
 * hanging the others, dsrt_check and the time spent waiting.
 *
 *===-----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200809L

#include "comm/backend.h"
#include "core/error.h"
#include "core/trace.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DSRT_GRID_MAX_DIMS 8
#define DSRT_TAG_MAX 32767 /* the least MPI_TAG_UB MPI guarantees */
#define DSRT_DEFAULT_TIMEOUT_S 45.0

static const dsrt_backend *backend;
static dsrt_comm *world;
static dsrt_comm *groups; /* every live group, world and grid ones too */
static int grid_ndims;
static dsrt_comm *grid_groups[1u << DSRT_GRID_MAX_DIMS];
static _Thread_local double comm_seconds;
/* The part of comm_seconds spent in blocking point-to-point sends and
 * receives: a pipeline stage's wait on its neighbours. */
static _Thread_local double p2p_seconds;
static int deterministic; /* dsrt_comm_set_deterministic */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/*--- Shared helpers -------------------------------------------------------*/

size_t dsrt_dtype_size(dsrt_dtype dt) {
  switch (dt) {
  case DSRT_F16:
  case DSRT_BF16:
    return 2;
  case DSRT_F32:
  case DSRT_I32:
    return 4;
  case DSRT_I64:
    return 8;
  }
  return 0;
}

int64_t dsrt_shard_stride(int64_t count, int n) {
  return n > 0 ? (count + n - 1) / n : 0;
}

int64_t dsrt_shard_count(int64_t count, int n, int r) {
  int64_t c = dsrt_shard_stride(count, n), left = count - (int64_t)r * c;
  return left <= 0 ? 0 : (left < c ? left : c);
}

/* DSRT_COMM_TIMEOUT_S as seconds (0 = wait forever); -1 if malformed. */
static double parse_timeout(void) {
  const char *env = getenv("DSRT_COMM_TIMEOUT_S");
  if (!env || !*env)
    return DSRT_DEFAULT_TIMEOUT_S;
  char *end;
  double v = strtod(env, &end);
  return (end == env || *end || v < 0) ? -1 : v;
}

/* After a timeout: which ranks no longer answer (a cut link, a dead host),
 * as "; world rank 2 on node-b did not answer within 3 s" for the error. The
 * window is short and also bounded by the limit, so a timeout still ends
 * the rank promptly. */
static void name_silent_peers(const dsrt_backend *b, double limit, char *out,
                              size_t n) {
  out[0] = '\0';
  if (!b->unanswered_peers)
    return;
  double window = limit < 3.0 ? limit : 3.0;
  char list[896];
  int silent = b->unanswered_peers(window, list, sizeof list);
  if (silent > 0)
    snprintf(out, n,
             ": %s did not answer within %g s (dead, cut off or "
             "stuck outside communication)",
             list, window);
  else if (silent == 0)
    snprintf(out, n, ": every other rank still answers, so one is stuck");
}

static int wait_loop(const dsrt_backend *b, dsrt_request *req, int *helped);

/* During its spin the caller progresses everything itself, and a helper
 * (MPI's progress thread) waking then only costs a context switch (5-10%
 * of a 1 MiB all-to-all); past the spin the helper is let in again, as it
 * measurably keeps longer transfers (4 MiB) from stalling on a loaded
 * machine. */
int dsrt_comm_wait_on(const dsrt_backend *b, dsrt_request *req) {
  int helped = !b->caller_waits;
  if (!helped)
    b->caller_waits(1);
  int status = wait_loop(b, req, &helped);
  if (!helped)
    b->caller_waits(0);
  return status;
}

static int wait_loop(const dsrt_backend *b, dsrt_request *req, int *helped) {
  /* test() frees req when it completes, so keep what the message needs. */
  const char *what = req->what;
  int rank = req->comm ? req->comm->rank : -1;
  int size = req->comm ? req->comm->size : -1;
  double start = now(), limit = -1;
  for (;;) {
    int done = 0, status = b->test(req, &done);
    if (status || done)
      return status;
    double waited = now() - start;
    /* Spin briefly, as MPI's own blocking calls do: progress happens only
     * inside MPI_Test, and small messages complete within microseconds.
     * Not longer: ranks often share cores (two ranks on two cores with
     * other work around), and a rank spinning on a core holds back the
     * very peer it waits for — measured, a 100 ms spin made ZeRO-3's
     * communication time grow 20x on a loaded machine. */
    if (waited < 200e-6)
      continue;
    if (!*helped) {
      b->caller_waits(0);
      *helped = 1;
    }
    if (limit < 0) {
      limit = parse_timeout();
      if (limit < 0)
        limit = DSRT_DEFAULT_TIMEOUT_S;
    }
    if (limit > 0 && waited > limit) {
      b->abandon(req);
      char who[1024];
      name_silent_peers(b, limit, who, sizeof who);
      return dsrt_fail(
          DSRT_ERR_INTERNAL,
          "%s: no completion after %.3g s on a group of %d ranks (this is "
          "rank %d of it); a peer rank is likely dead or stuck%s "
          "(DSRT_COMM_TIMEOUT_S=%g sets the limit)",
          what, waited, size, rank, who, limit);
    }
    /* Then yield, and past 20 ms sleep briefly: a wait that long is a slow
     * peer, and the core is better left to ranks that still compute. */
    if (waited < 0.02) {
      sched_yield();
    } else {
      if (b->answer_peers)
        b->answer_peers();
      struct timespec pause = {0, 50 * 1000};
      nanosleep(&pause, NULL);
    }
  }
}

/*--- Argument checks --------------------------------------------------------*/

static int check_started(const char *what) {
  if (!backend)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: communication is not started; call dsrt_comm_init "
                     "first",
                     what);
  return DSRT_OK;
}

static int check_comm(const char *what, const dsrt_comm *comm) {
  int status = check_started(what);
  if (status)
    return status;
  if (!comm)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: comm is NULL; pass dsrt_comm_world(), a group from "
                     "dsrt_comm_split or one from dsrt_comm_axes",
                     what);
  for (const dsrt_comm *g = groups; g; g = g->next)
    if (g == comm)
      return DSRT_OK;
  return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                   "%s: comm %p is not a live group (freed, or made before the "
                   "last dsrt_comm_finalize)",
                   what, (const void *)comm);
}

static int check_dtype(const char *what, int dtype) {
  if (dtype < DSRT_F32 || dtype > DSRT_I64)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: dtype %d is not a dsrt_dtype (DSRT_F32 = 0 .. "
                     "DSRT_I64 = 4)",
                     what, dtype);
  return DSRT_OK;
}

static int check_op(const char *what, int op) {
  if (op < DSRT_SUM || op > DSRT_MIN)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: op %d is not a dsrt_reduce_op (DSRT_SUM = 0, "
                     "DSRT_AVG = 1, DSRT_MAX = 2, DSRT_MIN = 3)",
                     what, op);
  return DSRT_OK;
}

static int check_count(const char *what, const char *name, int64_t count) {
  if (count < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: %s is %lld; it must be >= 0", what, name,
                     (long long)count);
  return DSRT_OK;
}

static int check_buffer(const char *what, const char *name, const void *buf,
                        int64_t count) {
  if (count > 0 && !buf)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: %s is NULL but holds %lld elements", what, name,
                     (long long)count);
  return DSRT_OK;
}

/* send and recv (of the given byte sizes) must be disjoint unless send is
 * exactly `in_place` (NULL: the operation has no in-place form). */
static int check_overlap(const char *what, const void *send, size_t send_bytes,
                         const void *recv, size_t recv_bytes,
                         const void *in_place, const char *in_place_rule) {
  const char *s = send, *r = recv;
  if (!send_bytes || !recv_bytes || (in_place && send == in_place))
    return DSRT_OK;
  if (s < r + recv_bytes && r < s + send_bytes)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: send and recv overlap; %s",
                     what,
                     in_place_rule ? in_place_rule
                                   : "this call has no in-place form, use "
                                     "disjoint buffers");
  return DSRT_OK;
}

static int check_rank(const char *what, const char *name, int rank,
                      const dsrt_comm *comm) {
  if (rank < 0 || rank >= comm->size)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: %s %d is not a rank of this group of %d ranks "
                     "(0 .. %d)",
                     what, name, rank, comm->size, comm->size - 1);
  return DSRT_OK;
}

static int check_tag(const char *what, int tag) {
  if (tag < 0 || tag > DSRT_TAG_MAX)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: tag %d is outside [0, %d]",
                     what, tag, DSRT_TAG_MAX);
  return DSRT_OK;
}

static int check_out(const char *what, const char *name, const void *out) {
  if (!out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, name);
  return DSRT_OK;
}

/*--- Init, finalize, groups -------------------------------------------------*/

/* Was this process started by mpirun (Open MPI's launcher or any PMIx one)? */
static int started_by_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

static int pick_backend(const char *name, const dsrt_backend **out) {
  if (!strcmp(name, "self")) {
    *out = &dsrt_comm_self_backend;
    return DSRT_OK;
  }
  if (!strcmp(name, "mpi")) {
#ifdef DSRT_HAVE_MPI
    *out = &dsrt_comm_mpi_backend;
    return DSRT_OK;
#else
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: backend \"mpi\": this libdsrt was built "
                     "without MPI (CMake found no MPI C library); install "
                     "libopenmpi-dev and rebuild, or use backend \"self\"");
#endif
  }
  if (!strcmp(name, "nccl")) {
#ifdef DSRT_HAVE_NCCL
    *out = &dsrt_comm_nccl_backend;
    return DSRT_OK;
#else
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: backend \"nccl\": this libdsrt was built "
                     "without CUDA or MPI; rebuild with both, or use "
                     "--backend mpi");
#endif
  }
  if (!strcmp(name, "auto")) {
#ifdef DSRT_HAVE_NCCL
    if (dsrt_comm_nccl_backend.probe() == DSRT_OK) {
      *out = &dsrt_comm_nccl_backend;
      return DSRT_OK;
    }
    dsrt_error_clear(); /* no GPU is not an error for "auto" */
#endif
#ifdef DSRT_HAVE_MPI
    if (started_by_mpirun()) {
      *out = &dsrt_comm_mpi_backend;
      return DSRT_OK;
    }
#endif
    *out = &dsrt_comm_self_backend;
    return DSRT_OK;
  }
  return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                   "dsrt_comm_init: unknown backend \"%s\"; expected \"auto\", "
                   "\"self\", \"mpi\" or \"nccl\"",
                   name);
}

static void link_group(dsrt_comm *comm) {
  comm->next = groups;
  groups = comm;
}

static void unlink_group(dsrt_comm *comm) {
  for (dsrt_comm **p = &groups; *p; p = &(*p)->next)
    if (*p == comm) {
      *p = comm->next;
      return;
    }
}

int dsrt_comm_init(const char *name) {
  const char *what = "dsrt_comm_init";
  if (backend)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: communication is already started (backend \"%s\"); "
                     "call dsrt_comm_finalize first",
                     what, backend->name);
  if (!name || !strcmp(name, "auto")) {
    const char *env = getenv("DSRT_BACKEND");
    name = env && *env ? env : "auto";
  }
  if (parse_timeout() < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: DSRT_COMM_TIMEOUT_S=\"%s\" is not a number of "
                     "seconds >= 0 (0 waits forever)",
                     what, getenv("DSRT_COMM_TIMEOUT_S"));
  const dsrt_backend *b = NULL;
  int status = pick_backend(name, &b);
  if (status || (status = b->probe()))
    return status;
  dsrt_comm *w = calloc(1, sizeof(*w));
  if (!w)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  if ((status = b->init(w))) {
    free(w);
    return status;
  }
  w->owned = 1;
  backend = b;
  world = w;
  link_group(w);
  return DSRT_OK;
}

static void free_grid(void) {
  for (unsigned mask = 1; mask < (1u << grid_ndims); ++mask) {
    dsrt_comm *g = grid_groups[mask];
    if (!g)
      continue;
    unlink_group(g);
    backend->free(g);
    free(g);
    grid_groups[mask] = NULL;
  }
  grid_ndims = 0;
}

int dsrt_comm_finalize(void) {
  if (!backend)
    return DSRT_OK; /* like free(NULL): nothing was started */
  free_grid();
  while (groups) {
    dsrt_comm *g = groups;
    groups = g->next;
    backend->free(g);
    free(g);
  }
  world = NULL;
  const dsrt_backend *b = backend;
  backend = NULL;
  return b->finalize();
}

const char *dsrt_comm_backend(void) { return backend ? backend->name : ""; }

dsrt_comm *dsrt_comm_world(void) {
  if (check_started("dsrt_comm_world"))
    return NULL;
  return world;
}

int dsrt_comm_rank(const dsrt_comm *comm) {
  return check_comm("dsrt_comm_rank", comm) ? -1 : comm->rank;
}

int dsrt_comm_size(const dsrt_comm *comm) {
  return check_comm("dsrt_comm_size", comm) ? -1 : comm->size;
}

/* A new group from backend->split, linked into the list. */
static int split_group(dsrt_comm *parent, int color, int key, int owned,
                       dsrt_comm **out) {
  dsrt_comm *g = calloc(1, sizeof(*g));
  if (!g)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "dsrt_comm_split: out of memory");
  int status = backend->split(parent, color, key, g);
  if (status) {
    free(g);
    return status;
  }
  g->owned = owned;
  link_group(g);
  *out = g;
  return DSRT_OK;
}

int dsrt_comm_split(dsrt_comm *parent, int color, int key, dsrt_comm **out) {
  const char *what = "dsrt_comm_split";
  int status;
  if ((status = check_out(what, "out", out)))
    return status;
  *out = NULL;
  if ((status = check_comm(what, parent)))
    return status;
  if (color < 0)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: color %d is negative; colors are >= 0 (every rank "
                     "joins exactly one new group)",
                     what, color);
  return split_group(parent, color, key, 0, out);
}

int dsrt_comm_free(dsrt_comm *comm) {
  const char *what = "dsrt_comm_free";
  if (!comm)
    return DSRT_OK;
  int status = check_comm(what, comm);
  if (status)
    return status;
  if (comm->owned)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: comm is the world or a grid group, which the runtime "
                     "owns; dsrt_comm_finalize frees it",
                     what);
  unlink_group(comm);
  backend->free(comm);
  free(comm);
  return DSRT_OK;
}

/*--- Grid -------------------------------------------------------------------*/

int dsrt_comm_set_grid(int ndims, const int64_t *sizes) {
  const char *what = "dsrt_comm_set_grid";
  int status = check_started(what);
  if (status)
    return status;
  if (ndims < 1 || ndims > DSRT_GRID_MAX_DIMS)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: ndims is %d; a grid has 1 to %d axes", what, ndims,
                     DSRT_GRID_MAX_DIMS);
  if ((status = check_out(what, "sizes", sizes)))
    return status;
  int64_t product = 1;
  char shape[160] = "";
  for (int d = 0; d < ndims; ++d) {
    if (sizes[d] < 1)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: sizes[%d] is %lld; every axis has >= 1 rank", what,
                       d, (long long)sizes[d]);
    /* Saturates instead of overflowing: any product past INT32_MAX is
     * already wrong for every world. */
    if (product <= INT32_MAX)
      product *= sizes[d];
    size_t used = strlen(shape);
    snprintf(shape + used, sizeof(shape) - used, "%s%lld", d ? "x" : "",
             (long long)sizes[d]);
  }
  if (product != world->size)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "%s: a %s grid needs %lld ranks but the world has %d; "
                     "make the axis sizes multiply to the world size",
                     what, shape, (long long)product, world->size);

  free_grid();
  /* Rank = row-major index of its coordinates, last axis fastest. */
  int64_t stride[DSRT_GRID_MAX_DIMS], coord[DSRT_GRID_MAX_DIMS], s = 1;
  for (int d = ndims - 1; d >= 0; --d) {
    stride[d] = s;
    coord[d] = (world->rank / s) % sizes[d];
    s *= sizes[d];
  }
  grid_ndims = ndims;
  for (unsigned mask = 1; mask < (1u << ndims); ++mask) {
    /* Ranks agreeing on every axis outside the mask share a group: color
     * is this rank's index with the masked coordinates zeroed. */
    int64_t color = 0;
    for (int d = 0; d < ndims; ++d)
      if (!(mask & (1u << d)))
        color += coord[d] * stride[d];
    if ((status = split_group(world, (int)color, world->rank, 1,
                              &grid_groups[mask]))) {
      free_grid();
      return status;
    }
  }
  return DSRT_OK;
}

dsrt_comm *dsrt_comm_axes(uint64_t axes_mask) {
  const char *what = "dsrt_comm_axes";
  if (check_started(what))
    return NULL;
  if (!grid_ndims) {
    dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
              "%s: no grid is set; call dsrt_comm_set_grid first", what);
    return NULL;
  }
  if (!axes_mask || axes_mask >= (1ull << grid_ndims)) {
    dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
              "%s: axes_mask 0x%llx names no axis or an axis past the grid's "
              "%d; valid masks are 0x1 .. 0x%x",
              what, (unsigned long long)axes_mask, grid_ndims,
              (1u << grid_ndims) - 1);
    return NULL;
  }
  return grid_groups[axes_mask];
}

/*--- Collectives ------------------------------------------------------------*/

/* Common checks of every collective: a live comm, a dtype, a count. */
static int check_common(const char *what, const dsrt_comm *comm, int dtype,
                        const char *count_name, int64_t count) {
  int status;
  if ((status = check_comm(what, comm)) || (status = check_dtype(what, dtype)))
    return status;
  return check_count(what, count_name, count);
}

/* Names a started request, or clears *req after a failed start. */
static int started(int status, const char *what, dsrt_comm *comm,
                   dsrt_request **req, int64_t bytes) {
  if (status) {
    *req = NULL;
    return status;
  }
  (*req)->what = what;
  (*req)->comm = comm;
  (*req)->traced_start = dsrt_trace_t0();
  (*req)->traced_bytes = bytes;
  return DSRT_OK;
}

static int check_all_reduce(const char *what, dsrt_comm *comm, const void *send,
                            void *recv, int64_t count, int dtype, int op) {
  int status;
  if ((status = check_common(what, comm, dtype, "count", count)) ||
      (status = check_op(what, op)) ||
      (status = check_buffer(what, "send", send, count)) ||
      (status = check_buffer(what, "recv", recv, count)))
    return status;
  size_t bytes = (size_t)count * dsrt_dtype_size(dtype);
  return check_overlap(what, send, bytes, recv, bytes, recv,
                       "pass send == recv for in place");
}

/* Deterministic mode serves the reductions of the host backends; an
 * asynchronous one sums in rank order inside its start and hands back a
 * request that is already complete (scheduled code starts reductions
 * early, and the numbers must not depend on it). Returns 1 when this
 * reduction is summed in rank order here, 0 when the backend reduces, or a
 * reported error status (> 1). */
static int fixed_order(const char *what, const dsrt_comm *comm) {
  if (!deterministic || !comm || comm->size <= 1)
    return 0;
  if (!strcmp(backend->name, "nccl"))
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "%s: deterministic mode sums in rank order on the host, "
                     "for host backends; turn it off "
                     "(dsrt_comm_set_deterministic(0)) for nccl",
                     what);
  return 1;
}

/* The request of a start that completed before returning. */
static dsrt_request completed_request = {"a completed start", NULL, -1, 0};

/* A blocking reduction in rank order (deterministic mode). */
static int reduce_fixed(int status, dsrt_comm *comm, const void *send,
                        void *recv, int64_t count, int dtype, int op,
                        int scatter, double t0) {
  if (status == 1)
    status =
        dsrt_fixed_order_reduce(backend, comm, send, recv, count,
                                (dsrt_dtype)dtype, (dsrt_reduce_op)op, scatter);
  double t1 = now();
  comm_seconds += t1 - t0;
  if (dsrt_trace_active)
    dsrt_trace_span(DSRT_TRACE_COMM, "blocking",
                    scatter ? "reduce_scatter" : "all_reduce", t0, t1,
                    count * (int64_t)dsrt_dtype_size(dtype));
  return status;
}

/* An asynchronous reduction in rank order: done before its start returns. */
static int reduce_fixed_now(int status, dsrt_comm *comm, const void *send,
                            void *recv, int64_t count, int dtype, int op,
                            int scatter, dsrt_request **req) {
  status =
      reduce_fixed(status, comm, send, recv, count, dtype, op, scatter, now());
  *req = status ? NULL : &completed_request;
  return status;
}

static int start_all_reduce(const char *what, dsrt_comm *comm, const void *send,
                            void *recv, int64_t count, int dtype, int op,
                            dsrt_request **req) {
  int status = check_all_reduce(what, comm, send, recv, count, dtype, op);
  if (status)
    return status;
  if ((status = fixed_order(what, comm)))
    return reduce_fixed_now(status, comm, send, recv, count, dtype, op, 0, req);
  return started(backend->all_reduce(comm, send, recv, count, dtype, op, req),
                 what, comm, req, count * (int64_t)dsrt_dtype_size(dtype));
}

static int start_all_gather(const char *what, dsrt_comm *comm, const void *send,
                            void *recv, int64_t count, int dtype,
                            dsrt_request **req) {
  int status;
  if ((status = check_common(what, comm, dtype, "count", count)))
    return status;
  size_t es = dsrt_dtype_size(dtype);
  int64_t mine = dsrt_shard_count(count, comm->size, comm->rank);
  char *slot = (char *)recv +
               (size_t)dsrt_shard_stride(count, comm->size) * comm->rank * es;
  if ((status = check_buffer(what, "send", send, mine)) ||
      (status = check_buffer(what, "recv", recv, count)) ||
      (status = check_overlap(what, send, (size_t)mine * es, recv,
                              (size_t)count * es, mine ? slot : NULL,
                              "for in place pass send == recv + rank * "
                              "ceil(count / size) elements")))
    return status;
  return started(backend->all_gather(comm, send, recv, count, dtype, req), what,
                 comm, req, count * (int64_t)es);
}

static int check_reduce_scatter(const char *what, dsrt_comm *comm,
                                const void *send, void *recv, int64_t count,
                                int dtype, int op) {
  int status;
  if ((status = check_common(what, comm, dtype, "count", count)) ||
      (status = check_op(what, op)))
    return status;
  int64_t c = dsrt_shard_stride(count, comm->size);
  size_t es = dsrt_dtype_size(dtype);
  if ((status = check_buffer(what, "send", send, count)) ||
      (status = check_buffer(what, "recv", recv, c)))
    return status;
  return check_overlap(what, send, (size_t)count * es, recv, (size_t)c * es,
                       recv, "pass send == recv for in place");
}

static int start_reduce_scatter(const char *what, dsrt_comm *comm,
                                const void *send, void *recv, int64_t count,
                                int dtype, int op, dsrt_request **req) {
  int status = check_reduce_scatter(what, comm, send, recv, count, dtype, op);
  if (status)
    return status;
  if ((status = fixed_order(what, comm)))
    return reduce_fixed_now(status, comm, send, recv, count, dtype, op, 1, req);
  return started(
      backend->reduce_scatter(comm, send, recv, count, dtype, op, req), what,
      comm, req, count * (int64_t)dsrt_dtype_size(dtype));
}

static int start_all_to_all(const char *what, dsrt_comm *comm, const void *send,
                            void *recv, int64_t count_per_rank, int dtype,
                            dsrt_request **req) {
  int status;
  if ((status =
           check_common(what, comm, dtype, "count_per_rank", count_per_rank)))
    return status;
  int64_t total = count_per_rank * comm->size;
  size_t bytes = (size_t)total * dsrt_dtype_size(dtype);
  if ((status = check_buffer(what, "send", send, total)) ||
      (status = check_buffer(what, "recv", recv, total)) ||
      (status = check_overlap(what, send, bytes, recv, bytes, NULL, NULL)))
    return status;
  return started(
      backend->all_to_all(comm, send, recv, count_per_rank, dtype, req), what,
      comm, req, (int64_t)bytes);
}

static int start_broadcast(const char *what, dsrt_comm *comm, void *buf,
                           int64_t count, int dtype, int root,
                           dsrt_request **req) {
  int status;
  if ((status = check_common(what, comm, dtype, "count", count)) ||
      (status = check_buffer(what, "buf", buf, count)) ||
      (status = check_rank(what, "root", root, comm)))
    return status;
  return started(backend->broadcast(comm, buf, count, dtype, root, req), what,
                 comm, req, count * (int64_t)dsrt_dtype_size(dtype));
}

static int check_p2p(const char *what, dsrt_comm *comm, const void *buf,
                     int64_t count, int dtype, int peer, int tag) {
  int status;
  if ((status = check_common(what, comm, dtype, "count", count)) ||
      (status = check_buffer(what, "buf", buf, count)) ||
      (status = check_rank(what, "peer", peer, comm)))
    return status;
  return check_tag(what, tag);
}

static int start_send(const char *what, dsrt_comm *comm, const void *buf,
                      int64_t count, int dtype, int peer, int tag,
                      dsrt_request **req) {
  int status = check_p2p(what, comm, buf, count, dtype, peer, tag);
  if (status)
    return status;
  return started(backend->send(comm, buf, count, dtype, peer, tag, req), what,
                 comm, req, count * (int64_t)dsrt_dtype_size(dtype));
}

static int start_recv(const char *what, dsrt_comm *comm, void *buf,
                      int64_t count, int dtype, int peer, int tag,
                      dsrt_request **req) {
  int status = check_p2p(what, comm, buf, count, dtype, peer, tag);
  if (status)
    return status;
  return started(backend->recv(comm, buf, count, dtype, peer, tag, req), what,
                 comm, req, count * (int64_t)dsrt_dtype_size(dtype));
}

static int start_barrier(const char *what, dsrt_comm *comm,
                         dsrt_request **req) {
  int status = check_comm(what, comm);
  if (status)
    return status;
  return started(backend->barrier(comm, req), what, comm, req, 0);
}

/* The timeline's name of a call: "dsrt_all_gather_start" -> "all_gather". */
static const char *traced_name(const char *what) {
  static const char *const kinds[] = {
      "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "broadcast",  "send",       "recv",           "barrier"};
  const char *call = strncmp(what, "dsrt_", 5) ? what : what + 5;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i)
    if (!strncmp(call, kinds[i], strlen(kinds[i])))
      return kinds[i];
  return call;
}

/* A collective on the communication track from its start to its completion;
 * a wait (t0: when dsrt_wait was called) also on the compute track, which
 * stood still meanwhile. */
static void trace_collective(const char *what, double start, int64_t bytes,
                             double t0, double t1, int waited) {
  const char *name = traced_name(what);
  dsrt_trace_span(DSRT_TRACE_COMM, waited ? "collective" : "blocking", name,
                  start >= 0 ? start : t0, t1, bytes);
  if (waited)
    dsrt_trace_span(DSRT_TRACE_COMPUTE, "wait", name, t0, t1, bytes);
}

/* The blocking forms: a start, then the timed wait, all counted as time
 * spent communicating. (The start is its own statement: it sets req.) */
static int finish(int status, dsrt_request *req, double t0, int waited) {
  /* The wait frees req. */
  const char *what = status == DSRT_OK ? req->what : NULL;
  double start = what ? req->traced_start : -1;
  int64_t bytes = what ? req->traced_bytes : -1;
  if (status == DSRT_OK)
    status = dsrt_comm_wait_on(backend, req);
  double t1 = now();
  comm_seconds += t1 - t0;
  if (what && dsrt_trace_active)
    trace_collective(what, start, bytes, t0, t1, waited);
  return status;
}

int dsrt_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count, int dtype, int op) {
  double t0 = now();
  if (deterministic) {
    const char *what = "dsrt_all_reduce";
    int status = check_all_reduce(what, comm, send, recv, count, dtype, op);
    if (!status && (status = fixed_order(what, comm)) != 0)
      return reduce_fixed(status, comm, send, recv, count, dtype, op, 0, t0);
    if (status)
      return status;
  }
  dsrt_request *req;
  int status = start_all_reduce("dsrt_all_reduce", comm, send, recv, count,
                                dtype, op, &req);
  return finish(status, req, t0, 0);
}

int dsrt_all_gather(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count, int dtype) {
  double t0 = now();
  dsrt_request *req;
  int status =
      start_all_gather("dsrt_all_gather", comm, send, recv, count, dtype, &req);
  return finish(status, req, t0, 0);
}

int dsrt_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                        int64_t count, int dtype, int op) {
  double t0 = now();
  if (deterministic) {
    const char *what = "dsrt_reduce_scatter";
    int status = check_reduce_scatter(what, comm, send, recv, count, dtype, op);
    if (!status && (status = fixed_order(what, comm)) != 0)
      return reduce_fixed(status, comm, send, recv, count, dtype, op, 1, t0);
    if (status)
      return status;
  }
  dsrt_request *req;
  int status = start_reduce_scatter("dsrt_reduce_scatter", comm, send, recv,
                                    count, dtype, op, &req);
  return finish(status, req, t0, 0);
}

int dsrt_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count_per_rank, int dtype) {
  double t0 = now();
  dsrt_request *req;
  int status = start_all_to_all("dsrt_all_to_all", comm, send, recv,
                                count_per_rank, dtype, &req);
  return finish(status, req, t0, 0);
}

int dsrt_broadcast(dsrt_comm *comm, void *buf, int64_t count, int dtype,
                   int root) {
  double t0 = now();
  dsrt_request *req;
  int status =
      start_broadcast("dsrt_broadcast", comm, buf, count, dtype, root, &req);
  return finish(status, req, t0, 0);
}

int dsrt_send(dsrt_comm *comm, const void *buf, int64_t count, int dtype,
              int peer, int tag) {
  double t0 = now();
  dsrt_request *req;
  int status =
      start_send("dsrt_send", comm, buf, count, dtype, peer, tag, &req);
  status = finish(status, req, t0, 0);
  p2p_seconds += now() - t0;
  return status;
}

int dsrt_recv(dsrt_comm *comm, void *buf, int64_t count, int dtype, int peer,
              int tag) {
  double t0 = now();
  dsrt_request *req;
  int status =
      start_recv("dsrt_recv", comm, buf, count, dtype, peer, tag, &req);
  status = finish(status, req, t0, 0);
  p2p_seconds += now() - t0;
  return status;
}

int dsrt_barrier(dsrt_comm *comm) {
  double t0 = now();
  dsrt_request *req;
  int status = start_barrier("dsrt_barrier", comm, &req);
  return finish(status, req, t0, 0);
}

/* The asynchronous forms check req, then start. */
static int check_req(const char *what, dsrt_request **req) {
  int status = check_out(what, "req", req);
  if (!status)
    *req = NULL;
  return status;
}

/* A started operation runs on while the caller computes: the backend's
 * helper (MPI's progress thread) moves it meanwhile. Blocking forms and
 * waits need no helper: their caller progresses everything itself. */
static int in_background(int status) {
  if (status == DSRT_OK && backend->async_started)
    backend->async_started();
  return status;
}

int dsrt_all_reduce_start(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count, int dtype, int op,
                          dsrt_request **req) {
  const char *what = "dsrt_all_reduce_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_all_reduce(what, comm, send, recv, count,
                                                 dtype, op, req));
}

int dsrt_all_gather_start(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count, int dtype, dsrt_request **req) {
  const char *what = "dsrt_all_gather_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_all_gather(what, comm, send, recv, count,
                                                 dtype, req));
}

int dsrt_reduce_scatter_start(dsrt_comm *comm, const void *send, void *recv,
                              int64_t count, int dtype, int op,
                              dsrt_request **req) {
  const char *what = "dsrt_reduce_scatter_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_reduce_scatter(what, comm, send, recv,
                                                     count, dtype, op, req));
}

int dsrt_all_to_all_start(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count_per_rank, int dtype,
                          dsrt_request **req) {
  const char *what = "dsrt_all_to_all_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_all_to_all(what, comm, send, recv,
                                                 count_per_rank, dtype, req));
}

int dsrt_broadcast_start(dsrt_comm *comm, void *buf, int64_t count, int dtype,
                         int root, dsrt_request **req) {
  const char *what = "dsrt_broadcast_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_broadcast(what, comm, buf, count, dtype,
                                                root, req));
}

int dsrt_send_start(dsrt_comm *comm, const void *buf, int64_t count, int dtype,
                    int peer, int tag, dsrt_request **req) {
  const char *what = "dsrt_send_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_send(what, comm, buf, count, dtype, peer,
                                           tag, req));
}

int dsrt_recv_start(dsrt_comm *comm, void *buf, int64_t count, int dtype,
                    int peer, int tag, dsrt_request **req) {
  const char *what = "dsrt_recv_start";
  int status = check_req(what, req);
  return status ? status
                : in_background(start_recv(what, comm, buf, count, dtype, peer,
                                           tag, req));
}

int dsrt_wait(dsrt_request *req) {
  double t0 = now();
  int status = check_out("dsrt_wait", "req", req);
  if (status)
    return status;
  if ((status = check_started("dsrt_wait")))
    return status;
  if (req == &completed_request)
    return DSRT_OK;
  return finish(DSRT_OK, req, t0, 1);
}

/*--- Failure and timing -----------------------------------------------------*/

int dsrt_check(int status, const char *what) {
  if (status == DSRT_OK)
    return 0;
  fprintf(stderr, "error: %s failed: %s\n", what ? what : "a dsrt call",
          dsrt_last_error());
  fflush(stderr);
  /* The other ranks may be inside a collective waiting for this one. */
  if (backend && backend->abort_job)
    backend->abort_job(1);
  exit(1);
}

int dsrt_comm_set_deterministic(int on) {
  deterministic = on != 0;
  return DSRT_OK;
}

int dsrt_comm_deterministic(void) { return deterministic; }

double dsrt_comm_seconds(void) { return comm_seconds; }

double dsrt_p2p_seconds(void) { return p2p_seconds; }

void dsrt_comm_seconds_reset(void) {
  comm_seconds = 0;
  p2p_seconds = 0;
}
