/*===- nccl.c - the NCCL backend (device buffers)
 *---------------------------===*
 *
 * libnccl.so.2 is opened at run time, so libdsrt (with cudart linked
 * statically) loads on machines without NCCL or a GPU driver. Every group is
 * also an mpi-backend group of the same ranks: the NCCL unique id travels
 * over it, and barriers and splits go through it. Work is enqueued on one
 * stream per group; a request is an event recorded after the work, so a
 * wait is an event query under comm.c's timeout. Scratch for the uneven
 * sizes is allocated and freed in stream order, so no request owns memory
 * past its enqueue.
 *
 * NCCL has no tags: sends and receives between two ranks match in the
 * order they are issued, and `tag` is only checked, not used.
 *
 *===-----------------------------------------------------------------------===*/
#include "comm/backend.h"
#include "core/error.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>
#include <stdlib.h>

/* The libnccl.so.2 entry points we call; CommSplit is optional (>= 2.18). */
static struct {
  void *lib;
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t,
                            ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t,
                            ncclComm_t, cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t,
                                ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int,
                            ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  const char *(*GetErrorString)(ncclResult_t);
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
} nccl;

typedef struct nccl_group {
  dsrt_comm host; /* the same ranks on the mpi backend */
  ncclComm_t comm;
  cudaStream_t stream;
} nccl_group;

typedef struct nccl_request {
  dsrt_request base;
  cudaEvent_t done;   /* recorded on the group's stream after the work */
  dsrt_request *host; /* a barrier: the mpi request doing it */
} nccl_request;

static const dsrt_backend *const mpi = &dsrt_comm_mpi_backend;

static int cuda_error(const char *call, cudaError_t e) {
  return dsrt_fail(DSRT_ERR_INTERNAL, "%s failed: %s", call,
                   cudaGetErrorString(e));
}

static int nccl_error(const char *call, ncclResult_t rc) {
  return dsrt_fail(DSRT_ERR_INTERNAL, "%s failed: %s", call,
                   nccl.GetErrorString(rc));
}

static int load_nccl(void) {
  if (nccl.lib)
    return DSRT_OK;
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: backend \"nccl\": libnccl.so.2 does not "
                     "load (%s); install NCCL 2 or use --backend mpi",
                     dlerror());
#define DSRT_NCCL_SYM(field, required)                                         \
  do {                                                                         \
    *(void **)&nccl.field = dlsym(lib, "nccl" #field);                         \
    if (required && !nccl.field) {                                             \
      dlclose(lib);                                                            \
      return dsrt_fail(DSRT_ERR_UNSUPPORTED,                                   \
                       "dsrt_comm_init: backend \"nccl\": libnccl.so.2 has "   \
                       "no nccl" #field " (NCCL too old?); use --backend "     \
                       "mpi");                                                 \
    }                                                                          \
  } while (0)
  DSRT_NCCL_SYM(GetUniqueId, 1);
  DSRT_NCCL_SYM(CommInitRank, 1);
  DSRT_NCCL_SYM(CommDestroy, 1);
  DSRT_NCCL_SYM(AllReduce, 1);
  DSRT_NCCL_SYM(AllGather, 1);
  DSRT_NCCL_SYM(ReduceScatter, 1);
  DSRT_NCCL_SYM(Broadcast, 1);
  DSRT_NCCL_SYM(Send, 1);
  DSRT_NCCL_SYM(Recv, 1);
  DSRT_NCCL_SYM(GroupStart, 1);
  DSRT_NCCL_SYM(GroupEnd, 1);
  DSRT_NCCL_SYM(GetErrorString, 1);
  DSRT_NCCL_SYM(CommSplit, 0);
#undef DSRT_NCCL_SYM
  nccl.lib = lib;
  return DSRT_OK;
}

static int nccl_probe(void) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: backend \"nccl\": no usable GPU: "
                     "cudaGetDeviceCount: %s; use --backend mpi",
                     cudaGetErrorString(e));
  if (devices == 0)
    return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                     "dsrt_comm_init: backend \"nccl\": no usable GPU: no CUDA "
                     "device is visible; use --backend mpi");
  return load_nccl();
}

/* A new NCCL communicator over g->host's ranks: rank 0 makes the unique id
 * and the host group broadcasts it. */
static int init_nccl_comm(nccl_group *g, const char *what) {
  ncclUniqueId id;
  ncclResult_t rc;
  if (g->host.rank == 0 && (rc = nccl.GetUniqueId(&id)) != ncclSuccess)
    return nccl_error("ncclGetUniqueId", rc);
  dsrt_request *req;
  int status = mpi->broadcast(&g->host, &id, sizeof(id) / 4, DSRT_I32, 0, &req);
  if (status)
    return status;
  req->what = what;
  req->comm = &g->host;
  if ((status = dsrt_comm_wait_on(mpi, req)))
    return status;
  if ((rc = nccl.CommInitRank(&g->comm, g->host.size, id, g->host.rank)) !=
      ncclSuccess)
    return nccl_error("ncclCommInitRank", rc);
  return DSRT_OK;
}

static void free_group(nccl_group *g) {
  if (g->comm)
    nccl.CommDestroy(g->comm);
  if (g->stream)
    cudaStreamDestroy(g->stream);
  mpi->free(&g->host);
  free(g);
}

/* Fills out from g (whose host group is made) once its NCCL side exists. */
static int finish_group(nccl_group *g, dsrt_comm *out, int status) {
  cudaError_t e;
  /* A blocking stream: it orders after work on the legacy default stream,
   * where callers usually produce the buffers. */
  if (!status && !g->stream && (e = cudaStreamCreate(&g->stream)))
    status = cuda_error("cudaStreamCreate", e);
  if (status) {
    free_group(g);
    return status;
  }
  out->rank = g->host.rank;
  out->size = g->host.size;
  out->impl = g;
  return DSRT_OK;
}

static int nccl_init(dsrt_comm *world) {
  nccl_group *g = calloc(1, sizeof(*g));
  if (!g)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "nccl backend: out of memory");
  int status = mpi->init(&g->host);
  if (status) {
    free(g);
    return status;
  }
  /* One GPU per rank of a node, round robin over the visible ones. */
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int devices = 1, device = local ? atoi(local) : g->host.rank;
  cudaGetDeviceCount(&devices);
  cudaError_t e = cudaSetDevice(device % (devices > 0 ? devices : 1));
  if (e) {
    status = cuda_error("cudaSetDevice", e);
  } else if (!(status = init_nccl_comm(g, "dsrt_comm_init"))) {
    return finish_group(g, world, DSRT_OK);
  }
  free_group(g);
  mpi->finalize();
  return status;
}

static int nccl_finalize(void) { return mpi->finalize(); }

static int nccl_split(dsrt_comm *parent, int color, int key, dsrt_comm *out) {
  nccl_group *p = parent->impl, *g = calloc(1, sizeof(*g));
  if (!g)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "nccl backend: out of memory");
  int status = mpi->split(&p->host, color, key, &g->host);
  if (status) {
    free(g);
    return status;
  }
  if (nccl.CommSplit) {
    ncclResult_t rc = nccl.CommSplit(p->comm, color, key, &g->comm, NULL);
    if (rc != ncclSuccess)
      status = nccl_error("ncclCommSplit", rc);
  } else {
    status = init_nccl_comm(g, "dsrt_comm_split");
  }
  return finish_group(g, out, status);
}

static void nccl_free(dsrt_comm *comm) {
  if (comm->impl)
    free_group(comm->impl);
  comm->impl = NULL;
}

/*--- Collectives ------------------------------------------------------------*/

static ncclDataType_t nccl_type(dsrt_dtype dt) {
  switch (dt) {
  case DSRT_F16:
    return ncclFloat16;
  case DSRT_BF16:
    return ncclBfloat16;
  case DSRT_I32:
    return ncclInt32;
  case DSRT_I64:
    return ncclInt64;
  case DSRT_F32:
    break;
  }
  return ncclFloat32;
}

static ncclRedOp_t nccl_op(dsrt_reduce_op op) {
  switch (op) {
  case DSRT_AVG:
    return ncclAvg;
  case DSRT_MAX:
    return ncclMax;
  case DSRT_MIN:
    return ncclMin;
  case DSRT_SUM:
    break;
  }
  return ncclSum;
}

/* After the NCCL call `call` returned rc: a request whose event follows the
 * work on the group's stream. */
static int enqueued(dsrt_comm *comm, const char *call, ncclResult_t rc,
                    dsrt_request **req) {
  nccl_group *g = comm->impl;
  if (rc != ncclSuccess)
    return nccl_error(call, rc);
  nccl_request *r = calloc(1, sizeof(*r));
  if (!r)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "nccl backend: out of memory");
  cudaError_t e = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming);
  if (!e && (e = cudaEventRecord(r->done, g->stream)))
    cudaEventDestroy(r->done);
  if (e) {
    free(r);
    return cuda_error("cudaEventRecord", e);
  }
  *req = &r->base;
  return DSRT_OK;
}

static int nccl_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                           dsrt_request **req) {
  nccl_group *g = comm->impl;
  return enqueued(comm, "ncclAllReduce",
                  nccl.AllReduce(send, recv, (size_t)count, nccl_type(dt),
                                 nccl_op(op), g->comm, g->stream),
                  req);
}

/* Stream-ordered scratch of n * c elements for the uneven forms. */
static int scratch(nccl_group *g, size_t bytes, char **out) {
  cudaError_t e = cudaMallocAsync((void **)out, bytes ? bytes : 1, g->stream);
  return e ? cuda_error("cudaMallocAsync", e) : DSRT_OK;
}

static int nccl_all_gather(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count, dsrt_dtype dt, dsrt_request **req) {
  nccl_group *g = comm->impl;
  int n = comm->size, me = comm->rank;
  size_t es = dsrt_dtype_size(dt), c = (size_t)dsrt_shard_stride(count, n);
  size_t mine = (size_t)dsrt_shard_count(count, n, me);
  if (c * n == (size_t)count) /* NCCL's own in-place rule is ours */
    return enqueued(
        comm, "ncclAllGather",
        nccl.AllGather(send, recv, c, nccl_type(dt), g->comm, g->stream), req);
  /* Uneven: gather c per rank into scratch, keep the first count. */
  char *tmp;
  int status = scratch(g, n * c * es, &tmp);
  if (status)
    return status;
  cudaError_t e = cudaMemcpyAsync(tmp + me * c * es, send, mine * es,
                                  cudaMemcpyDeviceToDevice, g->stream);
  ncclResult_t rc = nccl.AllGather(tmp + me * c * es, tmp, c, nccl_type(dt),
                                   g->comm, g->stream);
  if (!e)
    e = cudaMemcpyAsync(recv, tmp, (size_t)count * es, cudaMemcpyDeviceToDevice,
                        g->stream);
  cudaFreeAsync(tmp, g->stream);
  if (e)
    return cuda_error("cudaMemcpyAsync", e);
  return enqueued(comm, "ncclAllGather", rc, req);
}

static int nccl_reduce_scatter(dsrt_comm *comm, const void *send, void *recv,
                               int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                               dsrt_request **req) {
  nccl_group *g = comm->impl;
  int n = comm->size, me = comm->rank;
  size_t es = dsrt_dtype_size(dt), c = (size_t)dsrt_shard_stride(count, n);
  if (c * n == (size_t)count && send != recv)
    return enqueued(comm, "ncclReduceScatter",
                    nccl.ReduceScatter(send, recv, c, nccl_type(dt),
                                       nccl_op(op), g->comm, g->stream),
                    req);
  /* Uneven or in place: reduce a zero-padded copy (zeros reduce to zeros),
   * then copy this rank's c elements out. */
  char *tmp;
  int status = scratch(g, n * c * es, &tmp);
  if (status)
    return status;
  size_t bytes = (size_t)count * es;
  cudaError_t e =
      cudaMemcpyAsync(tmp, send, bytes, cudaMemcpyDeviceToDevice, g->stream);
  if (!e)
    e = cudaMemsetAsync(tmp + bytes, 0, n * c * es - bytes, g->stream);
  ncclResult_t rc = nccl.ReduceScatter(tmp, tmp + me * c * es, c, nccl_type(dt),
                                       nccl_op(op), g->comm, g->stream);
  if (!e)
    e = cudaMemcpyAsync(recv, tmp + me * c * es, c * es,
                        cudaMemcpyDeviceToDevice, g->stream);
  cudaFreeAsync(tmp, g->stream);
  if (e)
    return cuda_error("cudaMemcpyAsync", e);
  return enqueued(comm, "ncclReduceScatter", rc, req);
}

static int nccl_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count_per_rank, dsrt_dtype dt,
                           dsrt_request **req) {
  nccl_group *g = comm->impl;
  size_t block = (size_t)count_per_rank * dsrt_dtype_size(dt);
  ncclResult_t rc = nccl.GroupStart();
  for (int j = 0; j < comm->size && rc == ncclSuccess; ++j) {
    rc = nccl.Send((const char *)send + j * block, (size_t)count_per_rank,
                   nccl_type(dt), j, g->comm, g->stream);
    if (rc == ncclSuccess)
      rc = nccl.Recv((char *)recv + j * block, (size_t)count_per_rank,
                     nccl_type(dt), j, g->comm, g->stream);
  }
  ncclResult_t end = nccl.GroupEnd();
  return enqueued(comm, "ncclSend/ncclRecv", rc != ncclSuccess ? rc : end, req);
}

static int nccl_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                          dsrt_dtype dt, int root, dsrt_request **req) {
  nccl_group *g = comm->impl;
  return enqueued(comm, "ncclBroadcast",
                  nccl.Broadcast(buf, buf, (size_t)count, nccl_type(dt), root,
                                 g->comm, g->stream),
                  req);
}

static int nccl_send(dsrt_comm *comm, const void *buf, int64_t count,
                     dsrt_dtype dt, int peer, int tag, dsrt_request **req) {
  (void)tag;
  nccl_group *g = comm->impl;
  return enqueued(
      comm, "ncclSend",
      nccl.Send(buf, (size_t)count, nccl_type(dt), peer, g->comm, g->stream),
      req);
}

static int nccl_recv(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                     int peer, int tag, dsrt_request **req) {
  (void)tag;
  nccl_group *g = comm->impl;
  return enqueued(
      comm, "ncclRecv",
      nccl.Recv(buf, (size_t)count, nccl_type(dt), peer, g->comm, g->stream),
      req);
}

static int nccl_barrier(dsrt_comm *comm, dsrt_request **req) {
  /* Device work first, then every rank's host meets the others. */
  nccl_group *g = comm->impl;
  cudaError_t e = cudaStreamSynchronize(g->stream);
  if (e)
    return cuda_error("cudaStreamSynchronize", e);
  nccl_request *r = calloc(1, sizeof(*r));
  if (!r)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "nccl backend: out of memory");
  int status = mpi->barrier(&g->host, &r->host);
  if (status) {
    free(r);
    return status;
  }
  r->host->what = "dsrt_barrier";
  r->host->comm = &g->host;
  *req = &r->base;
  return DSRT_OK;
}

static int nccl_test(dsrt_request *req, int *done) {
  nccl_request *r = (nccl_request *)req;
  if (r->host) {
    int status = mpi->test(r->host, done);
    if (status || *done)
      free(r);
    return status;
  }
  cudaError_t e = cudaEventQuery(r->done);
  if (e == cudaErrorNotReady)
    return DSRT_OK;
  const char *what = r->base.what;
  cudaEventDestroy(r->done);
  free(r);
  if (e)
    return dsrt_fail(DSRT_ERR_INTERNAL, "%s: the device work failed: %s", what,
                     cudaGetErrorString(e));
  *done = 1;
  return DSRT_OK;
}

static void nccl_abandon(dsrt_request *req) {
  /* The device may still run the collective into its buffers: leak it. */
  nccl_request *r = (nccl_request *)req;
  if (r->host)
    mpi->abandon(r->host);
}

/* The job ends through MPI, which launched it. */
static void nccl_abort_job(int code) { mpi->abort_job(code); }

const dsrt_backend dsrt_comm_nccl_backend = {
    .name = "nccl",
    .probe = nccl_probe,
    .init = nccl_init,
    .finalize = nccl_finalize,
    .split = nccl_split,
    .free = nccl_free,
    .all_reduce = nccl_all_reduce,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .all_to_all = nccl_all_to_all,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .barrier = nccl_barrier,
    .test = nccl_test,
    .abandon = nccl_abandon,
    .abort_job = nccl_abort_job,
};
