/*===- self.c - the one-rank backend
 *----------------------------------------===*
 *
 * World size 1 and no dependency, so unit tests and single-process runs need
 * nothing else. Every group has one rank: a reduction of one value is that
 * value (avg included), gathers and scatters are copies, a broadcast and a
 * barrier do nothing. Sends to itself are queued until the matching receive,
 * as an eager MPI send would be.
 *
 *===-----------------------------------------------------------------------===*/
#include "comm/backend.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

/* A request: done at start, except a receive still waiting for its send. */
typedef struct self_request {
  dsrt_request base;
  int pending; /* a receive whose send has not come yet */
  void *buf;
  int64_t bytes;
  int tag;
  struct self_request *next;
} self_request;

/* A sent message no receive has taken yet. */
typedef struct self_message {
  int tag;
  int64_t bytes;
  struct self_message *next;
  char data[];
} self_message;

static self_message *mailbox;
static self_request *pending_recvs;

static int self_probe(void) { return DSRT_OK; }

static int self_init(dsrt_comm *world) {
  world->rank = 0;
  world->size = 1;
  return DSRT_OK;
}

static int self_finalize(void) {
  while (mailbox) {
    self_message *m = mailbox;
    mailbox = m->next;
    free(m);
  }
  pending_recvs = NULL; /* their owners were told to wait; nothing to free */
  return DSRT_OK;
}

static int self_split(dsrt_comm *parent, int color, int key, dsrt_comm *out) {
  (void)parent, (void)color, (void)key;
  out->rank = 0;
  out->size = 1;
  return DSRT_OK;
}

static void self_free(dsrt_comm *comm) { (void)comm; }

static int done_request(dsrt_request **req) {
  self_request *r = calloc(1, sizeof(*r));
  if (!r)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "self backend: out of memory");
  *req = &r->base;
  return DSRT_OK;
}

/* The one-rank result of every collective here: recv = send. */
static int copy(const void *send, void *recv, int64_t count, dsrt_dtype dt,
                dsrt_request **req) {
  if (count && send != recv)
    memmove(recv, send, (size_t)count * dsrt_dtype_size(dt));
  return done_request(req);
}

static int self_all_reduce(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count, dsrt_dtype dt, dsrt_reduce_op op,
                           dsrt_request **req) {
  (void)comm, (void)op;
  return copy(send, recv, count, dt, req);
}

static int self_all_gather(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count, dsrt_dtype dt, dsrt_request **req) {
  (void)comm;
  return copy(send, recv, count, dt, req);
}

static int self_all_to_all(dsrt_comm *comm, const void *send, void *recv,
                           int64_t count_per_rank, dsrt_dtype dt,
                           dsrt_request **req) {
  (void)comm;
  return copy(send, recv, count_per_rank, dt, req);
}

static int self_broadcast(dsrt_comm *comm, void *buf, int64_t count,
                          dsrt_dtype dt, int root, dsrt_request **req) {
  (void)comm, (void)buf, (void)count, (void)dt, (void)root;
  return done_request(req);
}

static int self_barrier(dsrt_comm *comm, dsrt_request **req) {
  (void)comm;
  return done_request(req);
}

static int self_send(dsrt_comm *comm, const void *buf, int64_t count,
                     dsrt_dtype dt, int peer, int tag, dsrt_request **req) {
  (void)comm, (void)peer;
  int64_t bytes = count * (int64_t)dsrt_dtype_size(dt);
  for (self_request **p = &pending_recvs; *p; p = &(*p)->next) {
    self_request *r = *p;
    if (r->tag != tag)
      continue;
    if (r->bytes != bytes)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "dsrt_send: %lld bytes with tag %d but the matching "
                       "receive expects %lld",
                       (long long)bytes, tag, (long long)r->bytes);
    if (bytes)
      memcpy(r->buf, buf, (size_t)bytes);
    r->pending = 0;
    *p = r->next;
    return done_request(req);
  }
  self_message *m = malloc(sizeof(*m) + (size_t)bytes);
  if (!m)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "self backend: out of memory");
  m->tag = tag;
  m->bytes = bytes;
  if (bytes)
    memcpy(m->data, buf, (size_t)bytes);
  m->next = NULL;
  self_message **tail = &mailbox;
  while (*tail)
    tail = &(*tail)->next;
  *tail = m; /* messages with one tag arrive in the order sent */
  return done_request(req);
}

static int self_recv(dsrt_comm *comm, void *buf, int64_t count, dsrt_dtype dt,
                     int peer, int tag, dsrt_request **req) {
  (void)comm, (void)peer;
  int64_t bytes = count * (int64_t)dsrt_dtype_size(dt);
  for (self_message **p = &mailbox; *p; p = &(*p)->next) {
    self_message *m = *p;
    if (m->tag != tag)
      continue;
    if (m->bytes != bytes)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "dsrt_recv: expects %lld bytes with tag %d but the "
                       "matching send has %lld",
                       (long long)bytes, tag, (long long)m->bytes);
    if (bytes)
      memcpy(buf, m->data, (size_t)bytes);
    *p = m->next;
    free(m);
    return done_request(req);
  }
  int status = done_request(req);
  if (status)
    return status;
  self_request *r = (self_request *)*req;
  r->pending = 1;
  r->buf = buf;
  r->bytes = bytes;
  r->tag = tag;
  self_request **tail = &pending_recvs;
  while (*tail)
    tail = &(*tail)->next;
  *tail = r;
  return DSRT_OK;
}

static int self_test(dsrt_request *req, int *done) {
  self_request *r = (self_request *)req;
  if (r->pending) {
    /* Nothing else can send on one rank while this one waits. */
    int tag = r->tag;
    for (self_request **p = &pending_recvs; *p; p = &(*p)->next)
      if (*p == r) {
        *p = r->next;
        break;
      }
    free(r);
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_wait: a receive with tag %d on a one-rank group "
                     "has no matching send; on one rank the send must be "
                     "started before the receive is waited for",
                     tag);
  }
  free(r);
  *done = 1;
  return DSRT_OK;
}

static void self_abandon(dsrt_request *req) { (void)req; }

const dsrt_backend dsrt_comm_self_backend = {
    .name = "self",
    .probe = self_probe,
    .init = self_init,
    .finalize = self_finalize,
    .split = self_split,
    .free = self_free,
    .all_reduce = self_all_reduce,
    .all_gather = self_all_gather,
    .reduce_scatter = self_all_reduce,
    .all_to_all = self_all_to_all,
    .broadcast = self_broadcast,
    .send = self_send,
    .recv = self_recv,
    .barrier = self_barrier,
    .test = self_test,
    .abandon = self_abandon,
    .abort_job = NULL,
};
