/*===- mpi.c - the Open MPI backend (CPU buffers)
 *---------------------------===*
 *
 * Every operation is a nonblocking MPI call (MPI_I*), so comm.c's timed wait
 * can give up on a dead or stuck peer; blocking MPI calls could not. Errors
 * come back as statuses (MPI_ERRORS_RETURN on every group), never as an
 * abort inside MPI. f16 and bf16 travel as a 2-byte type with our own
 * reduction ops (each combine in f32, rounded to nearest even); avg is a
 * sum divided by the group size when the request completes.
 *
 *===-----------------------------------------------------------------------===*/
#include "comm/backend.h"
#include "comm/half.h"
#include "core/error.h"

#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_request {
  dsrt_request base;
  MPI_Request mpi;
  int cancellable; /* a receive: MPI_Cancel works on it, unlike collectives */
  dsrt_dtype dt;
  int divisor; /* avg: divide result[0 .. result_count) when done; 0: none */
  void *result;
  int64_t result_count;
  void *zero; /* reduce_scatter past count: zero these bytes when done */
  size_t zero_bytes;
  int arrays[]; /* counts then displacements of the v-forms, which MPI
                   reads until the operation completes */
} mpi_request;

static int we_initialized; /* MPI started here, so finalize ends it too */
static MPI_Datatype half_type = MPI_DATATYPE_NULL;
static MPI_Op half_ops[2][3]; /* [f16, bf16][sum, max, min] */

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

/*--- Requests ---------------------------------------------------------------*/

static mpi_request *new_request(int narrays) {
  mpi_request *r = calloc(1, sizeof(*r) + (size_t)narrays * sizeof(int));
  if (r)
    r->mpi = MPI_REQUEST_NULL;
  else
    dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  return r;
}

/* Hands out r after its MPI call, or frees it if the call failed. */
static int issued(const char *call, int rc, mpi_request *r,
                  dsrt_request **req) {
  if (rc != MPI_SUCCESS) {
    free(r);
    return mpi_error(call, rc);
  }
  *req = &r->base;
  return DSRT_OK;
}

static int mpi_test(dsrt_request *req, int *done) {
  mpi_request *r = (mpi_request *)req;
  int flag = 0, rc = MPI_Test(&r->mpi, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    const char *what = r->base.what;
    free(r);
    char call[96];
    snprintf(call, sizeof(call), "%s: MPI_Test", what);
    return mpi_error(call, rc);
  }
  if (!flag)
    return DSRT_OK;
  if (r->divisor)
    divide(r->result, r->result_count, r->dt, r->divisor);
  if (r->zero_bytes)
    memset(r->zero, 0, r->zero_bytes);
  free(r);
  *done = 1;
  return DSRT_OK;
}

static void mpi_abandon(dsrt_request *req) {
  mpi_request *r = (mpi_request *)req;
  if (!r->cancellable)
    return; /* MPI can neither cancel nor free a collective in flight, and a
               late peer may still write into its buffers: leak it */
  MPI_Cancel(&r->mpi);
  MPI_Wait(&r->mpi, MPI_STATUS_IGNORE);
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
  return DSRT_OK;
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
  /* A private copy of the world: our traffic never matches the caller's. */
  MPI_Comm *comm = malloc(sizeof(*comm));
  if (!comm)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, comm), status;
  if (rc != MPI_SUCCESS) {
    free(comm);
    return mpi_error("dsrt_comm_init: MPI_Comm_dup", rc);
  }
  if ((status = set_group(world, comm)) || (status = create_half_ops())) {
    MPI_Comm_free(comm);
    free(comm);
    free_half_ops();
    return status;
  }
  return DSRT_OK;
}

static int mpi_finalize(void) {
  free_half_ops();
  if (!we_initialized)
    return DSRT_OK; /* whoever started MPI ends it */
  we_initialized = 0;
  int rc = MPI_Finalize();
  return rc == MPI_SUCCESS ? DSRT_OK
                           : mpi_error("dsrt_comm_finalize: MPI_Finalize", rc);
}

static int mpi_barrier(dsrt_comm *comm, dsrt_request **req) {
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  return issued("MPI_Ibarrier", MPI_Ibarrier(comm_of(comm), &r->mpi), r, req);
}

static int mpi_split(dsrt_comm *parent, int color, int key, dsrt_comm *out) {
  /* MPI_Comm_split blocks; a timed barrier first means every rank is alive
   * and inside it, so it cannot wait on a dead peer. */
  dsrt_request *req;
  int status = mpi_barrier(parent, &req);
  if (status)
    return status;
  req->what = "dsrt_comm_split";
  req->comm = parent;
  if ((status = dsrt_comm_wait_on(&dsrt_comm_mpi_backend, req)))
    return status;
  MPI_Comm *comm = malloc(sizeof(*comm));
  if (!comm)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "mpi backend: out of memory");
  int rc = MPI_Comm_split(comm_of(parent), color, key, comm);
  if (rc != MPI_SUCCESS) {
    free(comm);
    return mpi_error("dsrt_comm_split: MPI_Comm_split", rc);
  }
  if ((status = set_group(out, comm))) {
    MPI_Comm_free(comm);
    free(comm);
  }
  return status;
}

static void mpi_free(dsrt_comm *comm) {
  MPI_Comm *c = comm->impl;
  if (!c)
    return;
  MPI_Comm_free(c);
  free(c);
  comm->impl = NULL;
}

static void mpi_abort_job(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, code);
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
  int status = check_int("count", count);
  if (status)
    return status;
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  average_later(r, comm, op, dt, recv, count);
  return issued("MPI_Iallreduce",
                MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                               (int)count, mpi_type(dt), mpi_op(dt, op),
                               comm_of(comm), &r->mpi),
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
  if (c * n == count) {
    mpi_request *r = new_request(0);
    if (!r)
      return DSRT_ERR_OUT_OF_MEMORY;
    return issued("MPI_Iallgather",
                  MPI_Iallgather(s, (int)c, type, recv, (int)c, type,
                                 comm_of(comm), &r->mpi),
                  r, req);
  }
  mpi_request *r = new_request(2 * n);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  int *counts = r->arrays, *displs = r->arrays + n;
  shard_layout(count, n, counts, displs);
  return issued("MPI_Iallgatherv",
                MPI_Iallgatherv(s, mine, type, recv, counts, displs, type,
                                comm_of(comm), &r->mpi),
                r, req);
}

static int mpi_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                              int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                              dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  int n = comm->size;
  int64_t c = dsrt_shard_stride(count, n);
  int64_t mine = dsrt_shard_count(count, n, comm->rank);
  size_t es = dsrt_dtype_size(dt);
  const void *s = send == recv ? MPI_IN_PLACE : send;
  MPI_Datatype type = mpi_type(dt);
  if (c * n == count) {
    mpi_request *r = new_request(0);
    if (!r)
      return DSRT_ERR_OUT_OF_MEMORY;
    average_later(r, comm, op, dt, recv, mine);
    return issued("MPI_Ireduce_scatter_block",
                  MPI_Ireduce_scatter_block(s, recv, (int)c, type,
                                            mpi_op(dt, op), comm_of(comm),
                                            &r->mpi),
                  r, req);
  }
  mpi_request *r = new_request(n);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  shard_layout(count, n, r->arrays, NULL);
  average_later(r, comm, op, dt, recv, mine);
  /* Zeroed at completion: in place, these bytes are still input until then. */
  r->zero = (char *)recv + (size_t)mine * es;
  r->zero_bytes = (size_t)(c - mine) * es;
  return issued("MPI_Ireduce_scatter",
                MPI_Ireduce_scatter(s, recv, r->arrays, type, mpi_op(dt, op),
                                    comm_of(comm), &r->mpi),
                r, req);
}

static int mpi_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                          int64_t count_per_rank, dsrt_dtype dt,
                          dsrt_request **req) {
  int status = check_int("count_per_rank", count_per_rank);
  if (status)
    return status;
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  MPI_Datatype type = mpi_type(dt);
  return issued("MPI_Ialltoall",
                MPI_Ialltoall(send, (int)count_per_rank, type, recv,
                              (int)count_per_rank, type, comm_of(comm),
                              &r->mpi),
                r, req);
}

static int mpi_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                         dsrt_dtype dt, int root, dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  return issued(
      "MPI_Ibcast",
      MPI_Ibcast(buf, (int)count, mpi_type(dt), root, comm_of(comm), &r->mpi),
      r, req);
}

static int mpi_send(dsrt_comm *comm, const void *buf, int64_t count,
                    dsrt_dtype dt, int peer, int tag, dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  return issued("MPI_Isend",
                MPI_Isend(buf, (int)count, mpi_type(dt), peer, tag,
                          comm_of(comm), &r->mpi),
                r, req);
}

static int mpi_recv(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                    int peer, int tag, dsrt_request **req) {
  int status = check_int("count", count);
  if (status)
    return status;
  mpi_request *r = new_request(0);
  if (!r)
    return DSRT_ERR_OUT_OF_MEMORY;
  r->cancellable = 1;
  return issued("MPI_Irecv",
                MPI_Irecv(buf, (int)count, mpi_type(dt), peer, tag,
                          comm_of(comm), &r->mpi),
                r, req);
}

const dsrt_backend dsrt_comm_mpi_backend = {
    .name = "mpi",
    .probe = mpi_probe,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .split = mpi_split,
    .free = mpi_free,
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .all_to_all = mpi_all_to_all,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
    .test = mpi_test,
    .abandon = mpi_abandon,
    .abort_job = mpi_abort_job,
};
