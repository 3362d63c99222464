/*===- fixed_order.c - reductions summed in rank order ---------------------===*
 *
 * Deterministic mode (dsrt_comm_set_deterministic): an all-reduce or a
 * reduce-scatter moves every rank's contribution to where it is needed
 * (all-gather, all-to-all) and adds them up locally in rank order, so the
 * result does not depend on the backend's algorithm, the message sizes or
 * the group size's factorisation — at n times the memory and traffic of
 * the reduction itself. For checking runs against each other, not speed.
 *
 *===-----------------------------------------------------------------------===*/
#include "comm/backend.h"
#include "comm/half.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

static double load(const void *base, int64_t i, dsrt_dtype dt) {
  switch (dt) {
  case DSRT_F32:
    return ((const float *)base)[i];
  case DSRT_F16:
    return dsrt_f16_to_f32(((const uint16_t *)base)[i]);
  case DSRT_BF16:
    return dsrt_bf16_to_f32(((const uint16_t *)base)[i]);
  case DSRT_I32:
    return ((const int32_t *)base)[i];
  case DSRT_I64:
    return (double)((const int64_t *)base)[i];
  }
  return 0;
}

/* Element i of recv = op over the n blocks of `blocks` (stride `stride`
 * elements), block 0 first. Floats accumulate in their own type (f32) or in
 * f32 (f16, bf16), as the backends do; integers exactly. */
static void reduce_blocks(const void *blocks, int n, int64_t stride,
                          int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                          void *recv) {
  size_t es = dsrt_dtype_size(dt);
  for (int64_t i = 0; i < count; ++i) {
    if (dt == DSRT_I64 || dt == DSRT_I32) {
      int64_t acc = 0;
      for (int j = 0; j < n; ++j) {
        int64_t v = dt == DSRT_I64 ? ((const int64_t *)blocks)[j * stride + i]
                                   : ((const int32_t *)blocks)[j * stride + i];
        if (j == 0)
          acc = v;
        else if (op == DSRT_MAX)
          acc = v > acc ? v : acc;
        else if (op == DSRT_MIN)
          acc = v < acc ? v : acc;
        else
          acc += v;
      }
      if (op == DSRT_AVG)
        acc /= n;
      if (dt == DSRT_I64)
        ((int64_t *)recv)[i] = acc;
      else
        ((int32_t *)recv)[i] = (int32_t)acc;
      continue;
    }
    float acc = 0;
    for (int j = 0; j < n; ++j) {
      float v = (float)load(blocks, j * stride + i, dt);
      if (j == 0)
        acc = v;
      else if (op == DSRT_MAX)
        acc = v > acc ? v : acc;
      else if (op == DSRT_MIN)
        acc = v < acc ? v : acc;
      else
        acc += v;
    }
    if (op == DSRT_AVG)
      acc /= (float)n;
    if (dt == DSRT_F32)
      ((float *)recv)[i] = acc;
    else if (dt == DSRT_F16)
      ((uint16_t *)recv)[i] = dsrt_f32_to_f16(acc);
    else
      ((uint16_t *)recv)[i] = dsrt_f32_to_bf16(acc);
  }
  (void)es;
}

int dsrt_fixed_order_reduce(const dsrt_backend *b, dsrt_comm *comm,
                            const void *send, void *recv, int64_t count,
                            dsrt_dtype dt, dsrt_reduce_op op, int scatter) {
  int n = comm->size;
  size_t es = dsrt_dtype_size(dt);
  int64_t c = scatter ? dsrt_shard_stride(count, n) : count;
  void *blocks = malloc((size_t)n * (size_t)c * es + 1);
  void *padded = NULL;
  if (!blocks)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "deterministic reduction: no memory for %d x %lld "
                     "elements",
                     n, (long long)c);
  dsrt_request *req = NULL;
  int status;
  if (!scatter) {
    /* Every rank gets every contribution: an all-gather of n x count. */
    status = b->all_gather(comm, send, blocks, (int64_t)n * count, dt, &req);
  } else {
    /* Rank j gets chunk j of everyone: pad to n chunks, all-to-all. */
    padded = calloc((size_t)n * (size_t)c + 1, es);
    if (!padded) {
      free(blocks);
      return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                       "deterministic reduction: no memory for %d x %lld "
                       "elements",
                       n, (long long)c);
    }
    memcpy(padded, send, (size_t)count * es);
    status = b->all_to_all(comm, padded, blocks, c, dt, &req);
  }
  if (status == DSRT_OK) {
    /* Named as the caller's call in a timeout error. */
    req->what = scatter ? "dsrt_reduce_scatter" : "dsrt_all_reduce";
    req->comm = comm;
    status = dsrt_comm_wait_on(b, req);
  }
  if (status == DSRT_OK)
    reduce_blocks(blocks, n, c, c, dt, op, recv);
  free(padded);
  free(blocks);
  return status;
}
