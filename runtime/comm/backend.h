/*===- backend.h - the table every communication backend fills ------------===*
 *
 * Not part of the ABI. comm.c owns the public dsrt_* entry points (argument
 * checks, groups, grids, timing, timeouts) and calls exactly one of these
 * tables; self.c, mpi.c and nccl.c each fill one. Arguments reaching a
 * backend are already checked (non-NULL buffers when count > 0, valid dtype,
 * op, root, peer and tag), so backends check only their own limits.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_COMM_BACKEND_H
#define DSRT_COMM_BACKEND_H

#include "dsrt/dsrt.h"

#include <stddef.h>
#include <stdint.h>

/* A group: what every backend needs, plus the backend's own state. */
struct dsrt_comm {
  int rank;
  int size;
  void *impl;             /* the backend's communicator */
  int owned;              /* world and grid groups: freed only by the runtime */
  struct dsrt_comm *next; /* every live group, so finalize frees them all */
};

/* The part of every backend request that comm.c reads. Backends embed it as
 * their request's first member. */
struct dsrt_request {
  const char *what; /* "dsrt_all_reduce": names the call in timeout errors */
  dsrt_comm *comm;
  double traced_start; /* for the timeline: when it started (-1: not traced) */
  int64_t traced_bytes;
};

/* Every *_start entry begins the operation and returns a request in *req;
 * the blocking forms are start + wait, so a backend serves both at once. */
typedef struct dsrt_backend {
  const char *name;
  /* 0 if this backend can run in this process; otherwise a status, with
   * dsrt_last_error saying why and what to use instead. */
  int (*probe)(void);
  /* Starts the backend and fills the world group's rank, size and impl. */
  int (*init)(dsrt_comm *world);
  int (*finalize)(void);
  /* Fills out->rank, size, impl (collective over parent). */
  int (*split)(dsrt_comm *parent, int color, int key, dsrt_comm *out);
  void (*free)(dsrt_comm *comm);

  int (*all_reduce)(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                    dsrt_request **req);
  int (*all_gather)(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count, dsrt_dtype dt, dsrt_request **req);
  int (*reduce_scatter)(dsrt_comm *comm, const void *send, void *recv,
                        int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                        dsrt_request **req);
  int (*all_to_all)(dsrt_comm *comm, const void *send, void *recv,
                    int64_t count_per_rank, dsrt_dtype dt, dsrt_request **req);
  int (*broadcast)(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                   int root, dsrt_request **req);
  int (*send)(dsrt_comm *comm, const void *buf, int64_t count, dsrt_dtype dt,
              int peer, int tag, dsrt_request **req);
  int (*recv)(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
              int peer, int tag, dsrt_request **req);
  int (*barrier)(dsrt_comm *comm, dsrt_request **req);

  /* Progresses req; sets *done when complete, in which case (or on an
   * error) the backend has finished its work and freed req. */
  int (*test)(dsrt_request *req, int *done);
  /* Gives up on req after a timeout: cancels what can be cancelled and
   * otherwise keeps it for the life of the process, since the peer may
   * still write into its buffers. */
  void (*abandon)(dsrt_request *req);
  /* Ends every rank of the job (NULL: exit this process). */
  void (*abort_job)(int code);
  /* Optional. Called with 1 when a thread starts spinning on a request and
   * with 0 when it stops (done, or spun long enough): a spinning caller
   * progresses every operation in flight itself, so helpers (MPI's
   * progress thread) can rest meanwhile. */
  void (*caller_waits)(int on);
  /* Optional. An operation was started for the caller to wait on later
   * (the dsrt_*_start forms): helpers may progress it meanwhile. */
  void (*async_started)(void);
  /* Optional (NULL: not offered). Answers the liveness pings of peers whose
   * waits timed out; called while waiting. */
  void (*answer_peers)(void);
  /* Optional. Pings every other rank for up to window seconds; writes the
   * silent ones ("world rank R on HOST, ...") into out and returns how
   * many there are, or -1 when it cannot tell. */
  int (*unanswered_peers)(double window, char *out, size_t n);
} dsrt_backend;

extern const dsrt_backend dsrt_comm_self_backend;
#ifdef DSRT_HAVE_MPI
extern const dsrt_backend dsrt_comm_mpi_backend;
#endif
#ifdef DSRT_HAVE_NCCL
extern const dsrt_backend dsrt_comm_nccl_backend;
#endif

/* Bytes of one element of dt (dt already checked). */
size_t dsrt_dtype_size(dsrt_dtype dt);
/* c = ceil(count / n) and the number of elements rank r owns under the
 * uneven-size convention of dsrt.h. */
int64_t dsrt_shard_stride(int64_t count, int n);
int64_t dsrt_shard_count(int64_t count, int n, int r);
/* Waits for req with the DSRT_COMM_TIMEOUT_S deadline, on backend b; what a
 * backend layered on another (nccl on mpi) uses for the layer below. */
int dsrt_comm_wait_on(const dsrt_backend *b, dsrt_request *req);

/* all_reduce (scatter = 0) or reduce_scatter (scatter = 1) summed in rank
 * order on this host (fixed_order.c), for deterministic mode. */
int dsrt_fixed_order_reduce(const dsrt_backend *b, dsrt_comm *comm,
                            const void *send, void *recv, int64_t count,
                            dsrt_dtype dt, dsrt_reduce_op op, int scatter);

#endif /* DSRT_COMM_BACKEND_H */
