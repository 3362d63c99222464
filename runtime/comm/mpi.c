/*===- mpi.c - the Open MPI backend (CPU buffers)
 *---------------------------===*
 *
 * Every operation is a nonblocking MPI call (MPI_I*), so comm.c's timed wait
 * can give up on a dead or stuck peer; blocking MPI calls could not. Errors
 * come back as statuses (MPI_ERRORS_RETURN on every group), never as an
 * abort inside MPI. f16 and bf16 travel as a 2-byte type with our own
 * reduction ops (each combine in f32, rounded to nearest even); avg is a
 * sum divided by the group size when the request completes. A progress
 * thread (mpi_progress.c) moves the bytes of started operations while the
 * caller computes; every MPI call here holds its lock (the table at the end
 * takes it), so MPI_THREAD_SERIALIZED suffices.
 *
 *===-----------------------------------------------------------------------===*/
#include "comm/backend.h"
#include "comm/half.h"
#include "comm/mpi_join.h"
#include "comm/mpi_liveness.h"
#include "comm/mpi_progress.h"
#include "core/error.h"

#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_group mpi_group;
typedef struct mpi_request mpi_request;

/* A collective's arguments, kept while it waits in its group's queue. */
typedef enum {
  OP_ALL_REDUCE,
  OP_ALL_GATHER,
  OP_REDUCE_SCATTER,
  OP_ALL_TO_ALL,
  OP_BROADCAST,
  OP_BARRIER
} op_kind;
typedef struct op_args {
  op_kind kind;
  dsrt_comm *comm;
  const void *send;
  void *recv;
  int64_t count;
  dsrt_dtype dt;
  dsrt_reduce_op op;
  int root;
} op_args;

struct mpi_request {
  dsrt_request base;
  /* Its group's queue (see submit): the next entry, and the bytes it counts
   * while posted. A queued operation is a proxy: `args` until posted, then
   * `real` does the work (or `post_status` says why it could not start). */
  mpi_group *group; /* NULL: not in a queue */
  mpi_request *qnext;
  int64_t qbytes;
  int proxy;
  op_args args;
  mpi_request *real;
  int post_status;
  dsrt_mpi_inflight link; /* in the progress thread's list while in flight */
  int nmpi;               /* MPI requests in mpi[], all done when this one is */
  MPI_Request *mpi;       /* stored after the struct, like arrays */
  int cancellable; /* a receive: MPI_Cancel works on it, unlike collectives */
  dsrt_dtype dt;
  int divisor; /* avg: divide result[0 .. result_count) when done; 0: none */
  void *result;
  int64_t result_count;
  void *copy_to; /* all-gather: this rank's own slot, copied when done */
  const void *copy_from;
  size_t copy_bytes;
  const void *add_a, *add_b; /* pairwise reduce-scatter: sum these into */
  void *add_to;              /* add_to (first, before any avg) */
  int64_t add_count;
  void *scratch; /* freed with the request */
  void *zero;    /* reduce_scatter past count: zero these bytes when done */
  size_t zero_bytes;
  int *arrays; /* counts then displacements of the v-forms, which MPI
                  reads until the operation completes */
  struct mpi_request *next_abandoned;
};

/* A group's communicator and its queue: its collectives in the order the
 * caller started them, those posted to MPI whose transfer still runs first,
 * then those not posted yet. */
struct mpi_group {
  MPI_Comm comm; /* first: comm_of reads it */
  mpi_request *head, *tail;
  int64_t in_flight; /* bytes of the posted ones in the queue */
  mpi_group *next;   /* every group, for the progress thread */
};
static mpi_group *groups;
static int64_t inflight_cap; /* DSRT_COMM_INFLIGHT_BYTES */
#define DSRT_DEFAULT_INFLIGHT_BYTES (4 << 20)
static void advance_all(void);

/* Collectives given up on by a timeout: MPI may still read and write their
 * memory, so they live as long as the process, on this list (reachable, not
 * leaked, for LeakSanitizer too). */
static mpi_request *abandoned;

static int we_initialized; /* MPI started here, so finalize ends it too */
static MPI_Datatype half_type = MPI_DATATYPE_NULL;
static MPI_Op half_ops[2][3]; /* [f16, bf16][sum, max, min] */
/* The point-to-point messages of libdsrt's own collectives (all-gather,
 * reduce-scatter on few ranks). Every rank posts its collectives in the same
 * order and MPI matches messages between two ranks on one tag in order, so
 * one tag serves them all. */
#define DSRT_GATHER_TAG 32768 /* past every tag dsrt_send may use */
static int gather_tag_ok;     /* MPI_TAG_UB allows DSRT_GATHER_TAG */

/* Open MPI's nonblocking all-reduce (libnbc) picks a binomial tree below 4
 * ranks: a reduce then a broadcast, one direction at a time. Its ring moves
 * both directions at once and measured 1.5x MPI_Allreduce from 1 to 64 MiB
 * at 2 ranks. The choice is a control variable (MPI_T), so large
 * all-reduces ask for the ring and small ones leave the choice to libnbc;
 * an MPI without that variable, or one the caller started, keeps its own. */
#define DSRT_RING_MIN_BYTES (64 << 10)
static int have_algorithm_cvar, algorithm_now;
static MPI_T_cvar_handle algorithm_cvar;

static void open_algorithm_cvar(void) {
  int provided, index, count;
  if (getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm"))
    return; /* the user chose */
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) ==
          MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &algorithm_cvar, &count) ==
          MPI_SUCCESS &&
      count == 1) {
    have_algorithm_cvar = 1;
    algorithm_now = 0;
    return;
  }
  MPI_T_finalize();
}

static void close_algorithm_cvar(void) {
  if (!have_algorithm_cvar)
    return;
  int libnbc_default = 0;
  MPI_T_cvar_write(algorithm_cvar, &libnbc_default);
  MPI_T_cvar_handle_free(&algorithm_cvar);
  MPI_T_finalize();
  have_algorithm_cvar = 0;
}

static void choose_all_reduce_algorithm(size_t bytes) {
  int want = bytes >= DSRT_RING_MIN_BYTES ? 1 /* ring */ : 0 /* libnbc's */;
  if (have_algorithm_cvar && want != algorithm_now &&
      MPI_T_cvar_write(algorithm_cvar, &want) == MPI_SUCCESS)
    algorithm_now = want;
}

static MPI_Comm comm_of(const dsrt_comm *comm) {
  return *(const MPI_Comm *)comm->impl;
}

static int mpi_error(const char *call, int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof(msg), "MPI error code %d", rc);
  return dsrt_fail(DSRT_ERR_INTERNAL, "%s failed: %s", call, msg);
}

/* MPI counts are int. */
static int check_int(const char *name, int64_t v) {
  if (v > INT_MAX)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "mpi backend: %s is %lld, past MPI's int counts (%d); "
                     "split the buffer into smaller collectives",
                     name, (long long)v, INT_MAX);
  return DSRT_OK;
}

/*--- 16-bit reductions ------------------------------------------------------*/

#define DSRT_HALF_OP(name, to_f32, from_f32, combine)                          \
  static void name(void *in, void *inout, int *len, MPI_Datatype *type) {      \
    (void)type;                                                                \
    const uint16_t *a = in;                                                    \
    uint16_t *b = inout;                                                       \
    for (int i = 0; i < *len; ++i) {                                           \
      float x = to_f32(a[i]), y = to_f32(b[i]);                                \
      b[i] = from_f32(combine);                                                \
    }                                                                          \
  }
DSRT_HALF_OP(f16_sum, dsrt_f16_to_f32, dsrt_f32_to_f16, x + y)
DSRT_HALF_OP(f16_max, dsrt_f16_to_f32, dsrt_f32_to_f16, x > y ? x : y)
DSRT_HALF_OP(f16_min, dsrt_f16_to_f32, dsrt_f32_to_f16, x < y ? x : y)
DSRT_HALF_OP(bf16_sum, dsrt_bf16_to_f32, dsrt_f32_to_bf16, x + y)
DSRT_HALF_OP(bf16_max, dsrt_bf16_to_f32, dsrt_f32_to_bf16, x > y ? x : y)
DSRT_HALF_OP(bf16_min, dsrt_bf16_to_f32, dsrt_f32_to_bf16, x < y ? x : y)
#undef DSRT_HALF_OP

static int create_half_ops(void) {
  static MPI_User_function *const fns[2][3] = {{f16_sum, f16_max, f16_min},
                                               {bf16_sum, bf16_max, bf16_min}};
  int rc = MPI_Type_contiguous(2, MPI_BYTE, &half_type);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&half_type);
  for (int t = 0; t < 2 && rc == MPI_SUCCESS; ++t)
    for (int k = 0; k < 3 && rc == MPI_SUCCESS; ++k)
      rc = MPI_Op_create(fns[t][k], /*commute=*/1, &half_ops[t][k]);
  return rc == MPI_SUCCESS ? DSRT_OK : mpi_error("MPI_Op_create", rc);
}

static void free_half_ops(void) {
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < 3; ++k)
      if (half_ops[t][k] != MPI_OP_NULL && half_ops[t][k])
        MPI_Op_free(&half_ops[t][k]);
  if (half_type != MPI_DATATYPE_NULL)
    MPI_Type_free(&half_type);
  memset(half_ops, 0, sizeof(half_ops));
  half_type = MPI_DATATYPE_NULL;
}

static MPI_Datatype mpi_type(dsrt_dtype dt) {
  switch (dt) {
  case DSRT_F32:
    return MPI_FLOAT;
  case DSRT_I32:
    return MPI_INT32_T;
  case DSRT_I64:
    return MPI_INT64_T;
  case DSRT_F16:
  case DSRT_BF16:
    break;
  }
  return half_type;
}

static MPI_Op mpi_op(dsrt_dtype dt, dsrt_reduce_op op) {
  int k = op == DSRT_MAX ? 1 : op == DSRT_MIN ? 2 : 0; /* avg: a sum first */
  if (dt == DSRT_F16 || dt == DSRT_BF16)
    return half_ops[dt == DSRT_BF16][k];
  return k == 1 ? MPI_MAX : k == 2 ? MPI_MIN : MPI_SUM;
}

/* avg = sum / n; integers truncate, 16-bit types divide in f32. */
static void divide(void *buf, int64_t count, dsrt_dtype dt, int n) {
  switch (dt) {
  case DSRT_F32:
    for (float *p = buf, *e = p + count; p < e; ++p)
      *p /= (float)n;
    break;
  case DSRT_I32:
    for (int32_t *p = buf, *e = p + count; p < e; ++p)
      *p /= n;
    break;
  case DSRT_I64:
    for (int64_t *p = buf, *e = p + count; p < e; ++p)
      *p /= n;
    break;
  case DSRT_F16:
    for (uint16_t *p = buf, *e = p + count; p < e; ++p)
      *p = dsrt_f32_to_f16(dsrt_f16_to_f32(*p) / (float)n);
    break;
  case DSRT_BF16:
    for (uint16_t *p = buf, *e = p + count; p < e; ++p)
      *p = dsrt_f32_to_bf16(dsrt_bf16_to_f32(*p) / (float)n);
    break;
  }
}

/* out[i] = a[i] + b[i]; out may be a or b. Integers wrap. */
#define DSRT_ADD(T, sum)                                                       \
  {                                                                            \
    const T *x = a, *y = b;                                                    \
    T *o = out;                                                                \
    for (int64_t i = 0; i < count; ++i)                                        \
      o[i] = sum;                                                              \
    break;                                                                     \
  }
static void add(const void *a, const void *b, void *out, int64_t count,
                dsrt_dtype dt) {
  switch (dt) {
  case DSRT_F32:
    DSRT_ADD(float, x[i] + y[i])
  case DSRT_I32:
    DSRT_ADD(uint32_t, x[i] + y[i])
  case DSRT_I64:
    DSRT_ADD(uint64_t, x[i] + y[i])
  case DSRT_F16:
    DSRT_ADD(uint16_t,
             dsrt_f32_to_f16(dsrt_f16_to_f32(x[i]) + dsrt_f16_to_f32(y[i])))
  case DSRT_BF16:
    DSRT_ADD(uint16_t,
             dsrt_f32_to_bf16(dsrt_bf16_to_f32(x[i]) + dsrt_bf16_to_f32(y[i])))
  }
}
#undef DSRT_ADD

/*--- Requests ---------------------------------------------------------------*/

/* A request for nmpi MPI requests and narrays ints, in one block. */
static mpi_request *new_request(int nmpi, int narrays) {
  mpi_request *r = calloc(1, sizeof(*r) + (size_t)nmpi * sizeof(MPI_Request) +
                                 (size_t)narrays * sizeof(int));
  if (!r) {
    dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
    return NULL;
  }
  r->nmpi = nmpi;
  r->mpi = (MPI_Request *)(r + 1);
  r->arrays = (int *)(r->mpi + nmpi);
  for (int i = 0; i < nmpi; ++i)
    r->mpi[i] = MPI_REQUEST_NULL;
  return r;
}

/* The request of a one-call operation on `count` elements (named `name`,
 * which must fit MPI's int counts). */
static int begin(const char *name, int64_t count, mpi_request **out) {
  int status = check_int(name, count);
  if (status)
    return status;
  *out = new_request(1, 0);
  return *out ? DSRT_OK : DSRT_ERR_OUT_OF_MEMORY;
}

/* Hands out r after its MPI call, or frees it if the call failed. */
static int issued(const char *call, int rc, mpi_request *r,
                  dsrt_request **req) {
  if (rc != MPI_SUCCESS) {
    free(r);
    return mpi_error(call, rc);
  }
  r->link.n = r->nmpi;
  r->link.reqs = r->mpi;
  dsrt_mpi_track(&r->link);
  *req = &r->base;
  return DSRT_OK;
}

/* Takes e out of its group's queue; a posted one's bytes stop counting. */
static void retire(mpi_request *e) {
  mpi_group *g = e->group;
  if (!g)
    return;
  mpi_request *prev = NULL;
  for (mpi_request *q = g->head; q; prev = q, q = q->qnext)
    if (q == e) {
      if (prev)
        prev->qnext = e->qnext;
      else
        g->head = e->qnext;
      if (g->tail == e)
        g->tail = prev;
      break;
    }
  if (!e->proxy || e->real)
    g->in_flight -= e->qbytes;
  e->group = NULL;
  e->qnext = NULL;
}

static int mpi_test(dsrt_request *req, int *done) {
  mpi_request *r = (mpi_request *)req;
  int flag = 0, rc = r->nmpi == 1 ? MPI_Test(r->mpi, &flag, MPI_STATUS_IGNORE)
                                  : MPI_Testall(r->nmpi, r->mpi, &flag,
                                                MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) {
    const char *what = r->base.what;
    dsrt_mpi_untrack(&r->link);
    retire(r);
    free(r->scratch);
    free(r);
    char call[96];
    snprintf(call, sizeof(call), "%s: MPI_Test", what ? what : "dsrt_wait");
    return mpi_error(call, rc);
  }
  if (!flag)
    return DSRT_OK;
  dsrt_mpi_untrack(&r->link);
  retire(r);
  if (r->add_count)
    add(r->add_a, r->add_b, r->add_to, r->add_count, r->dt);
  free(r->scratch);
  if (r->divisor)
    divide(r->result, r->result_count, r->dt, r->divisor);
  if (r->zero_bytes)
    memset(r->zero, 0, r->zero_bytes);
  if (r->copy_bytes)
    memcpy(r->copy_to, r->copy_from, r->copy_bytes);
  free(r);
  *done = 1;
  return DSRT_OK;
}

static void mpi_abandon(dsrt_request *req) {
  mpi_request *r = (mpi_request *)req;
  retire(r);
  if (r->proxy) {
    if (r->real)
      mpi_abandon(&r->real->base);
    free(r);
    return;
  }
  dsrt_mpi_untrack(&r->link);
  if (!r->cancellable) {
    /* MPI can neither cancel nor free a collective in flight, and a late
       peer may still write into its buffers: keep it */
    r->next_abandoned = abandoned;
    abandoned = r;
    return;
  }
  MPI_Cancel(r->mpi);
  MPI_Wait(r->mpi, MPI_STATUS_IGNORE);
  free(r->scratch);
  free(r);
}

/*--- Lifetime and groups ----------------------------------------------------*/

static int mpi_probe(void) { return DSRT_OK; }

static int set_group(dsrt_comm *out, MPI_Comm *comm) {
  int rc = MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_rank(*comm, &out->rank);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(*comm, &out->size);
  if (rc != MPI_SUCCESS)
    return mpi_error("MPI_Comm_set_errhandler", rc);
  out->impl = comm;
  mpi_group *g = (mpi_group *)comm;
  g->next = groups;
  groups = g;
  return DSRT_OK;
}

static void mpi_free(dsrt_comm *comm) {
  MPI_Comm *c = comm->impl;
  if (!c)
    return;
  for (mpi_group **g = &groups; *g; g = &(*g)->next)
    if (*g == (mpi_group *)c) {
      *g = (*g)->next;
      break;
    }
  if (*c != MPI_COMM_WORLD && *c != dsrt_mpi_world())
    MPI_Comm_free(c); /* dsrt_mpi_join_end frees a joined world */
  free(c);
  comm->impl = NULL;
}

static int mpi_init(dsrt_comm *world) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: MPI was finalized earlier in this "
                     "process and cannot start again; start communication "
                     "once per process");
  if (!initialized) {
    int provided,
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
      return mpi_error("dsrt_comm_init: MPI_Init_thread", rc);
    we_initialized = 1;
  }
  MPI_Comm *comm = calloc(1, sizeof(mpi_group)); /* comm first */
  if (!comm)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  /* MPI_COMM_WORLD itself when MPI is ours (measured: 20-30% faster than a
   * duplicate for 1 MiB collectives); a private copy when the caller
   * started MPI, so our traffic never matches theirs. Under ds-launch
   * --no_ssh, each node's mpirun is a job of its own: the world is every
   * node's ranks joined (mpi_join.c). */
  int rc = MPI_SUCCESS, status;
  if (we_initialized) {
    if ((status = dsrt_mpi_join(comm))) {
      free(comm);
      return status;
    }
  } else if (getenv("DSRT_MPI_JOIN_NODES")) {
    free(comm);
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: under ds-launch --no_ssh the nodes' "
                     "ranks join when libdsrt starts MPI, but this program "
                     "started MPI itself; let dsrt_comm_init start it");
  } else {
    rc = MPI_Comm_dup(MPI_COMM_WORLD, comm);
  }
  if (rc != MPI_SUCCESS) {
    free(comm);
    return mpi_error("dsrt_comm_init: MPI_Comm_dup", rc);
  }
  if ((status = set_group(world, comm)) || (status = create_half_ops())) {
    world->impl = comm;
    mpi_free(world);
    free_half_ops();
    return status;
  }
  if (we_initialized) /* a caller's own MPI keeps its settings */
    open_algorithm_cvar();
  int *tag_ub, found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  gather_tag_ok = found && *tag_ub >= DSRT_GATHER_TAG;
  dsrt_mpi_liveness_start(dsrt_mpi_world());
  const char *cap = getenv("DSRT_COMM_INFLIGHT_BYTES");
  inflight_cap = cap && *cap ? atoll(cap) : DSRT_DEFAULT_INFLIGHT_BYTES;
  dsrt_mpi_progress_start(advance_all);
  return DSRT_OK;
}

static int mpi_finalize(void) {
  dsrt_mpi_progress_stop();
  dsrt_mpi_liveness_stop();
  free_half_ops();
  close_algorithm_cvar();
  if (!we_initialized)
    return DSRT_OK; /* whoever started MPI ends it */
  we_initialized = 0;
  dsrt_mpi_join_end();
  int rc = MPI_Finalize();
  return rc == MPI_SUCCESS ? DSRT_OK
                           : mpi_error("dsrt_comm_finalize: MPI_Finalize", rc);
}

static int mpi_barrier(dsrt_comm *comm, dsrt_request **req) {
  mpi_request *r = new_request(1, 0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  return issued("MPI_Ibarrier", MPI_Ibarrier(comm_of(comm), r->mpi), r, req);
}

static int mpi_split(dsrt_comm *parent, int color, int key, dsrt_comm *out) {
  /* MPI_Comm_split blocks; a timed barrier first means every rank is alive
   * and inside it, so it cannot wait on a dead peer. */
  dsrt_request *req;
  int status = dsrt_comm_mpi_backend.barrier(parent, &req);
  if (status)
    return status;
  req->what = "dsrt_comm_split";
  req->comm = parent;
  if ((status = dsrt_comm_wait_on(&dsrt_comm_mpi_backend, req)))
    return status;
  MPI_Comm *comm = calloc(1, sizeof(mpi_group)); /* comm first */
  if (!comm)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  dsrt_mpi_lock();
  int rc = MPI_Comm_split(comm_of(parent), color, key, comm);
  if (rc != MPI_SUCCESS) {
    dsrt_mpi_unlock();
    free(comm);
    return mpi_error("dsrt_comm_split: MPI_Comm_split", rc);
  }
  if ((status = set_group(out, comm))) {
    MPI_Comm_free(comm);
    free(comm);
  }
  dsrt_mpi_unlock();
  return status;
}

static void mpi_abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(dsrt_mpi_world(), code);
  exit(code);
}

/*--- Collectives ------------------------------------------------------------*/

/* Sets r to divide by the group size at completion when op is avg. */
static void average_later(mpi_request *r, dsrt_comm *comm, dsrt_reduce_op op,
                          dsrt_dtype dt, void *result, int64_t count) {
  if (op != DSRT_AVG || comm->size == 1)
    return;
  r->divisor = comm->size;
  r->dt = dt;
  r->result = result;
  r->result_count = count;
}

static int mpi_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                          dsrt_request **req) {
  mpi_request *r;
  int status = begin("count", count, &r);
  if (status)
    return status;
  average_later(r, comm, op, dt, recv, count);
  choose_all_reduce_algorithm((size_t)count * dsrt_dtype_size(dt));
  return issued("MPI_Iallreduce",
                MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                               (int)count, mpi_type(dt), mpi_op(dt, op),
                               comm_of(comm), r->mpi),
                r, req);
}

/* Fills counts[i] (elements rank i owns) and, if displs, displs[i]. */
static void shard_layout(int64_t count, int n, int *counts, int *displs) {
  int64_t c = dsrt_shard_stride(count, n);
  for (int i = 0; i < n; ++i) {
    counts[i] = (int)dsrt_shard_count(count, n, i);
    if (displs)
      displs[i] = (int)(i * c < count ? i * c : count);
  }
}

/* On few ranks an all-gather is n - 1 sends and receives per rank, posted
 * at once, and this rank's own slot copied when they are done (copied
 * during them, it competed with the peers' copies for memory bandwidth).
 * Measured at 1 MiB: libnbc's all-gather 25% behind MPI_Allgather on 2
 * ranks, this level with it on 2 and ahead on 3 and 4. */
#define DSRT_DIRECT_GATHER_MAX_RANKS 4

static int direct_all_gather(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count, dsrt_dtype dt, dsrt_request **req) {
  int n = comm->size, me = comm->rank;
  size_t es = dsrt_dtype_size(dt), c = (size_t)dsrt_shard_stride(count, n);
  mpi_request *r = new_request(2 * (n - 1), 0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  MPI_Datatype type = mpi_type(dt);
  MPI_Comm mc = comm_of(comm);
  int k = 0, rc = MPI_SUCCESS, mine = (int)dsrt_shard_count(count, n, me);
  /* Ranks owning nothing send nothing; both sides know who they are. */
  for (int i = 1; i < n && rc == MPI_SUCCESS; ++i) {
    int from = (me + n - i) % n, theirs = (int)dsrt_shard_count(count, n, from);
    if (theirs)
      rc = MPI_Irecv((char *)recv + from * c * es, theirs, type, from,
                     DSRT_GATHER_TAG, mc, &r->mpi[k++]);
  }
  for (int i = 1; i < n && rc == MPI_SUCCESS && mine; ++i)
    rc = MPI_Isend(send, mine, type, (me + i) % n, DSRT_GATHER_TAG, mc,
                   &r->mpi[k++]);
  r->nmpi = k;
  char *slot = (char *)recv + me * c * es;
  if (rc == MPI_SUCCESS && mine && send != slot) {
    r->copy_to = slot;
    r->copy_from = send;
    r->copy_bytes = (size_t)mine * es;
  }
  return issued("MPI_Isend/MPI_Irecv", rc, r, req);
}

static int mpi_all_gather(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count, dsrt_dtype dt, dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  int n = comm->size, me = comm->rank;
  int64_t c = dsrt_shard_stride(count, n);
  int mine = (int)dsrt_shard_count(count, n, me);
  const void *slot =
      (const char *)recv + (size_t)(c * me) * dsrt_dtype_size(dt);
  const void *s = mine && send == slot ? MPI_IN_PLACE : send;
  MPI_Datatype type = mpi_type(dt);
  if (n <= DSRT_DIRECT_GATHER_MAX_RANKS && gather_tag_ok)
    return direct_all_gather(comm, send, recv, count, dt, req);
  if (c * n == count) {
    mpi_request *r = new_request(1, 0);
    if (!r)
      return DSRT_ERR_OUT_OF_MEMORY;
    return issued("MPI_Iallgather",
                  MPI_Iallgather(s, (int)c, type, recv, (int)c, type,
                                 comm_of(comm), r->mpi),
                  r, req);
  }
  mpi_request *r = new_request(1, 2 * n);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  int *counts = r->arrays, *displs = r->arrays + n;
  shard_layout(count, n, counts, displs);
  return issued("MPI_Iallgatherv",
                MPI_Iallgatherv(s, mine, type, recv, counts, displs, type,
                                comm_of(comm), r->mpi),
                r, req);
}

/* On two ranks a sum's reduce-scatter is one exchange: each rank sends the
 * peer its slice and adds the peer's contribution to its own at completion,
 * both directions of the link busy at once. libnbc reduces the whole buffer
 * onto one rank and scatters half of it back, one direction at a time:
 * measured on the two-host 1 Gbit/s link, its 16 MiB reduce-scatter took
 * 195 ms, three times the wire time of a slice. a + b is b + a in IEEE
 * arithmetic (also rounded from f32 for the 16-bit types), so the result is
 * the bits of any other order; max and min keep libnbc (their NaN and
 * signed-zero results depend on the order). */
static int pairwise_reduce_scatter(dsrt_comm *comm, const void *send,
                                   void *recv, int64_t count, dsrt_dtype dt,
                                   dsrt_reduce_op op, dsrt_request **req) {
  int me = comm->rank, peer = 1 - me;
  size_t es = dsrt_dtype_size(dt), c = (size_t)dsrt_shard_stride(count, 2);
  int mine = (int)dsrt_shard_count(count, 2, me);
  int theirs = (int)dsrt_shard_count(count, 2, peer);
  mpi_request *r = new_request(2, 0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  const char *own = (const char *)send + me * c * es;
  /* In place, recv is still the input (ours, and the slice in flight to
   * the peer) until completion, so the peer's part lands aside. */
  void *in = recv;
  if (send == recv && mine && !(in = r->scratch = malloc((size_t)mine * es))) {
    free(r);
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  }
  MPI_Datatype type = mpi_type(dt);
  MPI_Comm mc = comm_of(comm);
  int k = 0, rc = MPI_SUCCESS;
  if (mine)
    rc = MPI_Irecv(in, mine, type, peer, DSRT_GATHER_TAG, mc, &r->mpi[k++]);
  if (theirs && rc == MPI_SUCCESS)
    rc = MPI_Isend((const char *)send + peer * c * es, theirs, type, peer,
                   DSRT_GATHER_TAG, mc, &r->mpi[k++]);
  r->nmpi = k;
  r->dt = dt;
  r->add_count = mine;
  r->add_a = me == 0 ? own : in; /* rank 0's term first */
  r->add_b = me == 0 ? in : own;
  r->add_to = recv;
  average_later(r, comm, op, dt, recv, mine);
  r->zero = (char *)recv + (size_t)mine * es;
  r->zero_bytes = (c - (size_t)mine) * es;
  if (rc != MPI_SUCCESS)
    free(r->scratch);
  return issued("MPI_Isend/MPI_Irecv", rc, r, req);
}

static int mpi_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                              int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                              dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  int n = comm->size;
  if (n == 2 && gather_tag_ok && (op == DSRT_SUM || op == DSRT_AVG))
    return pairwise_reduce_scatter(comm, send, recv, count, dt, op, req);
  int64_t c = dsrt_shard_stride(count, n);
  int64_t mine = dsrt_shard_count(count, n, comm->rank);
  size_t es = dsrt_dtype_size(dt);
  const void *s = send == recv ? MPI_IN_PLACE : send;
  MPI_Datatype type = mpi_type(dt);
  if (c * n == count) {
    mpi_request *r = new_request(1, 0);
    if (!r)
      return DSRT_ERR_OUT_OF_MEMORY;
    average_later(r, comm, op, dt, recv, mine);
    return issued("MPI_Ireduce_scatter_block",
                  MPI_Ireduce_scatter_block(s, recv, (int)c, type,
                                            mpi_op(dt, op), comm_of(comm),
                                            r->mpi),
                  r, req);
  }
  mpi_request *r = new_request(1, n);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  shard_layout(count, n, r->arrays, NULL);
  average_later(r, comm, op, dt, recv, mine);
  /* Zeroed at completion: in place, these bytes are still input until then. */
  r->zero = (char *)recv + (size_t)mine * es;
  r->zero_bytes = (size_t)(c - mine) * es;
  return issued("MPI_Ireduce_scatter",
                MPI_Ireduce_scatter(s, recv, r->arrays, type, mpi_op(dt, op),
                                    comm_of(comm), r->mpi),
                r, req);
}

static int mpi_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count_per_rank, dsrt_dtype dt,
                          dsrt_request **req) {
  mpi_request *r;
  int status = begin("count_per_rank", count_per_rank, &r);
  if (status)
    return status;
  MPI_Datatype type = mpi_type(dt);
  return issued("MPI_Ialltoall",
                MPI_Ialltoall(send, (int)count_per_rank, type, recv,
                              (int)count_per_rank, type, comm_of(comm), r->mpi),
                r, req);
}

static int mpi_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                         dsrt_dtype dt, int root, dsrt_request **req) {
  mpi_request *r;
  int status = begin("count", count, &r);
  if (status)
    return status;
  return issued(
      "MPI_Ibcast",
      MPI_Ibcast(buf, (int)count, mpi_type(dt), root, comm_of(comm), r->mpi), r,
      req);
}

static int mpi_send(dsrt_comm *comm, const void *buf, int64_t count,
                    dsrt_dtype dt, int peer, int tag, dsrt_request **req) {
  mpi_request *r;
  int status = begin("count", count, &r);
  if (status)
    return status;
  return issued("MPI_Isend",
                MPI_Isend(buf, (int)count, mpi_type(dt), peer, tag,
                          comm_of(comm), r->mpi),
                r, req);
}

static int mpi_recv(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                    int peer, int tag, dsrt_request **req) {
  mpi_request *r;
  int status = begin("count", count, &r);
  if (status)
    return status;
  r->cancellable = 1;
  return issued("MPI_Irecv",
                MPI_Irecv(buf, (int)count, mpi_type(dt), peer, tag,
                          comm_of(comm), r->mpi),
                r, req);
}

/*--- The queue: collectives of a group posted in order --------------------*/

/* A started collective reaches MPI only while the bytes of the group's
 * posted, unfinished collectives stay within DSRT_COMM_INFLIGHT_BYTES
 * (default 4 MiB; 0: no limit), one at least; later ones wait in the
 * group's queue and are posted, in the order started, as earlier transfers
 * end. Posted all at once, the link served every gather ds-schedule-comm
 * prefetched at the same time, so the one needed first finished among the
 * last: on the two-host 1 Gbit/s link the first layer of the bench GPT
 * waited 56 ms for gathers that take 29 ms alone. In order, it is served
 * first, as a CUDA stream serves NCCL's. Every rank starts a group's
 * collectives in the same order, so they post them in the same order,
 * whenever each one does. */

static int post_now(const op_args *a, dsrt_request **req) {
  switch (a->kind) {
  case OP_ALL_REDUCE:
    return mpi_all_reduce(a->comm, a->send, a->recv, a->count, a->dt, a->op,
                          req);
  case OP_ALL_GATHER:
    return mpi_all_gather(a->comm, a->send, a->recv, a->count, a->dt, req);
  case OP_REDUCE_SCATTER:
    return mpi_reduce_scatter(a->comm, a->send, a->recv, a->count, a->dt, a->op,
                              req);
  case OP_ALL_TO_ALL:
    return mpi_all_to_all(a->comm, a->send, a->recv, a->count, a->dt, req);
  case OP_BROADCAST:
    return mpi_broadcast(a->comm, a->recv, a->count, a->dt, a->root, req);
  case OP_BARRIER:
    break;
  }
  return mpi_barrier(a->comm, req);
}

static void enqueue(mpi_group *g, mpi_request *e, int64_t bytes) {
  e->group = g;
  e->qbytes = bytes;
  e->qnext = NULL;
  if (g->tail)
    g->tail->qnext = e;
  else
    g->head = e;
  g->tail = e;
}

static int fits(const mpi_group *g, int64_t bytes) {
  return !g->in_flight || !inflight_cap || g->in_flight + bytes <= inflight_cap;
}

/* Retires the finished transfers at the front of g's queue (their
 * finishing work still waits for dsrt_wait), then posts what now fits. */
static void advance(mpi_group *g) {
  mpi_request *e = g->head, *next;
  for (; e && (!e->proxy || e->real); e = next) {
    next = e->qnext;
    mpi_request *x = e->proxy ? e->real : e;
    int flag = 0;
    if (MPI_Testall(x->nmpi, x->mpi, &flag, MPI_STATUSES_IGNORE) ==
            MPI_SUCCESS &&
        flag)
      retire(e);
  }
  for (e = g->head; e; e = next) {
    next = e->qnext;
    if (!e->proxy || e->real)
      continue;
    if (!fits(g, e->qbytes))
      break;
    dsrt_request *got;
    if ((e->post_status = post_now(&e->args, &got))) {
      retire(e); /* its wait reports the error */
      continue;
    }
    e->real = (mpi_request *)got;
    g->in_flight += e->qbytes;
  }
}

/* The progress thread's pass. */
static void advance_all(void) {
  for (mpi_group *g = groups; g; g = g->next)
    if (g->head)
      advance(g);
}

static int submit(const op_args *a, int64_t bytes, dsrt_request **req) {
  mpi_group *g = a->comm->impl;
  if (g->head)
    advance(g);
  int waiting = g->tail && g->tail->proxy && !g->tail->real;
  if (!waiting && fits(g, bytes)) {
    int status = post_now(a, req);
    if (status)
      return status;
    enqueue(g, (mpi_request *)*req, bytes);
    g->in_flight += bytes;
    return DSRT_OK;
  }
  mpi_request *p = new_request(0, 0);
  if (!p)
    return DSRT_ERR_OUT_OF_MEMORY;
  p->proxy = 1;
  p->args = *a;
  enqueue(g, p, bytes);
  *req = &p->base;
  return DSRT_OK;
}

static int queue_test(dsrt_request *req, int *done) {
  mpi_request *r = (mpi_request *)req;
  mpi_group *g = r->group;
  /* Every group, not only r's: a peer may be waiting for something queued
   * here in another group before it can take part in r (and the progress
   * thread may be off). */
  advance_all();
  int status;
  if (!r->proxy) {
    status = mpi_test(req, done);
  } else if (!r->real) {
    if (!(status = r->post_status))
      return DSRT_OK; /* still queued */
    free(r);
  } else {
    r->real->base = r->base; /* names the call in errors */
    if ((status = mpi_test(&r->real->base, done)) || *done) {
      retire(r);
      free(r);
    }
  }
  if (g && (status || *done))
    advance(g); /* what waited behind it */
  return status;
}

/*--- The table: every MPI call under the progress lock
 * ------------------------*/

static void locked_free(dsrt_comm *comm) {
  dsrt_mpi_lock();
  mpi_free(comm);
  dsrt_mpi_unlock();
}

static int locked_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                             dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_ALL_REDUCE, comm, send, recv, count, dt, op, 0};
  int status = submit(&a, count * (int64_t)dsrt_dtype_size(dt), req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_all_gather(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count, dsrt_dtype dt, dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_ALL_GATHER, comm, send, recv, count, dt, DSRT_SUM, 0};
  int status = submit(&a, count * (int64_t)dsrt_dtype_size(dt), req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                                 int64_t count, dsrt_dtype dt,
                                 dsrt_reduce_op op, dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_REDUCE_SCATTER, comm, send, recv, count, dt, op, 0};
  int status = submit(&a, count * (int64_t)dsrt_dtype_size(dt), req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                             int64_t count_per_rank, dsrt_dtype dt,
                             dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_ALL_TO_ALL,  comm, send,     recv,
               count_per_rank, dt,   DSRT_SUM, 0};
  int status = submit(
      &a, count_per_rank * comm->size * (int64_t)dsrt_dtype_size(dt), req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                            dsrt_dtype dt, int root, dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_BROADCAST, comm, NULL, buf, count, dt, DSRT_SUM, root};
  int status = submit(&a, count * (int64_t)dsrt_dtype_size(dt), req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_send(dsrt_comm *comm, const void *buf, int64_t count,
                       dsrt_dtype dt, int peer, int tag, dsrt_request **req) {
  dsrt_mpi_lock();
  int status = mpi_send(comm, buf, count, dt, peer, tag, req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_recv(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                       int peer, int tag, dsrt_request **req) {
  dsrt_mpi_lock();
  int status = mpi_recv(comm, buf, count, dt, peer, tag, req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_barrier(dsrt_comm *comm, dsrt_request **req) {
  dsrt_mpi_lock();
  op_args a = {OP_BARRIER, comm, NULL, NULL, 0, DSRT_F32, DSRT_SUM, 0};
  int status = submit(&a, 0, req);
  dsrt_mpi_unlock();
  return status;
}

static int locked_test(dsrt_request *req, int *done) {
  dsrt_mpi_lock();
  int status = queue_test(req, done);
  dsrt_mpi_unlock();
  return status;
}

static void locked_abandon(dsrt_request *req) {
  dsrt_mpi_lock();
  mpi_abandon(req);
  dsrt_mpi_unlock();
}

static void locked_answer_peers(void) {
  dsrt_mpi_lock();
  dsrt_mpi_answer_peers();
  dsrt_mpi_unlock();
}

static int locked_unanswered_peers(double window, char *out, size_t n) {
  dsrt_mpi_lock();
  int silent = dsrt_mpi_unanswered_peers(window, out, n);
  dsrt_mpi_unlock();
  return silent;
}

const dsrt_backend dsrt_comm_mpi_backend = {
    .name = "mpi",
    .probe = mpi_probe,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .split = mpi_split,
    .free = locked_free,
    .all_reduce = locked_all_reduce,
    .all_gather = locked_all_gather,
    .reduce_scatter = locked_reduce_scatter,
    .all_to_all = locked_all_to_all,
    .broadcast = locked_broadcast,
    .send = locked_send,
    .recv = locked_recv,
    .barrier = locked_barrier,
    .test = locked_test,
    .abandon = locked_abandon,
    .abort_job = mpi_abort_job,
    .caller_waits = dsrt_mpi_caller_waits,
    .async_started = dsrt_mpi_async_started,
    .answer_peers = locked_answer_peers,
    .unanswered_peers = locked_unanswered_peers,
};
