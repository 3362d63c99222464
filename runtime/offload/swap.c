/*===- swap.c - optimizer state in files, streamed through io_uring --------===*
 *
 * ZeRO-Infinity's NVMe tier for the optimizer state: each swapped tensor is
 * a file (O_DIRECT where the file system takes it) and a reserved address
 * range that is never backed by memory; the compiled step passes that
 * address as the state's buffer, and the optimizer entry points that meet
 * one stream the state through a few staging buffers instead: the reads of
 * the next chunks are in flight while the kernel updates this one, and its
 * writes go out behind it. Between steps the state is only on disk.
 *
 * io_uring carries the I/O: the ring has queue_depth entries and at most
 * that many requests are in flight, each at most block_size bytes. Where a
 * ring cannot be made (a kernel or sandbox without io_uring) the same
 * requests run as pread/pwrite, one after the other.
 *
 *===-----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include "offload/swap.h"
#include "core/error.h"
#include "core/trace.h"
#include "dsrt/dsrt.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* O_DIRECT's alignment of offsets, lengths and buffers on every common
 * device (logical blocks are 512 or 4096 bytes). */
#define SWAP_ALIGN 4096

typedef struct swap_tensor {
  char *path;
  int fd;
  char *key;      /* the reserved range standing for the tensor */
  int64_t bytes;  /* the tensor's */
  int64_t padded; /* the file's: bytes rounded up to SWAP_ALIGN */
} swap_tensor;

/* One request in flight: where it goes, for the error message and for a
 * short transfer's remainder. */
typedef struct swap_req {
  int slot, tensor, write, used;
  char *buf;
  int64_t off, len;
} swap_req;

struct dsrt_swap {
  char *dir;
  dsrt_swap_options opt;
  int direct; /* every file so far opened with O_DIRECT */
  int has_ring;
  struct io_uring ring;
  swap_req *reqs; /* queue_depth of them */
  int inflight, unsubmitted;
  int pending[64]; /* requests in flight per staging slot */
  int status;      /* the first I/O error of the current update */
  swap_tensor *tensors;
  int64_t num_tensors, cap_tensors, last_hit;
  char *stage; /* stage_slots slots x 2 states x stage_elems floats */
  int64_t stage_elems;
  int stage_slots;
  int64_t bytes_read, bytes_written;
  struct dsrt_swap *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static dsrt_swap *registry;

static int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

/*--- Opening, adding, closing ---------------------------------------------*/

int dsrt_swap_open(const char *dir, const dsrt_swap_options *options,
                   dsrt_swap **out) {
  if (!dir || !*dir || !out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_open: dir and out are required");
  dsrt_swap_options o = {.block_size = 1 << 20,
                         .queue_depth = 8,
                         .single_submit = 0,
                         .buffer_count = 4,
                         .buffer_size = 1 << 20};
  if (options)
    o = *options;
  if (o.block_size < SWAP_ALIGN || o.block_size % SWAP_ALIGN)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_open: block_size %lld is not a positive "
                     "multiple of %d bytes",
                     (long long)o.block_size, SWAP_ALIGN);
  if (o.queue_depth < 1 || o.queue_depth > 4096)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_open: queue_depth %d is not in [1, 4096]",
                     (int)o.queue_depth);
  if (o.buffer_count < 2 || o.buffer_count > 64)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_open: buffer_count %d is not in [2, 64]",
                     (int)o.buffer_count);
  if (o.buffer_size < 1)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_open: buffer_size %lld < 1",
                     (long long)o.buffer_size);
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return dsrt_fail(DSRT_ERR_IO, "%s: cannot create the swap directory: %s",
                     dir, strerror(errno));
  dsrt_swap *s = calloc(1, sizeof(*s));
  if (!s || !(s->dir = strdup(dir)) ||
      !(s->reqs = calloc((size_t)o.queue_depth, sizeof(swap_req)))) {
    if (s)
      free(s->dir);
    free(s);
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "dsrt_swap_open: no memory");
  }
  s->opt = o;
  s->direct = 1;
  s->has_ring = io_uring_queue_init((unsigned)o.queue_depth, &s->ring, 0) == 0;
  pthread_mutex_lock(&registry_lock);
  s->next = registry;
  registry = s;
  pthread_mutex_unlock(&registry_lock);
  *out = s;
  return DSRT_OK;
}

/* Opens `path` for direct I/O if the file system takes it: some refuse
 * O_DIRECT at open (tmpfs), some only at the first transfer. */
static int open_state_file(dsrt_swap *s, const char *path, int64_t padded,
                           int *fd_out) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EINVAL)
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  else if (fd >= 0 && padded > 0) {
    /* A probe transfer: the file is still empty, so a read returns 0. */
    void *probe = NULL;
    if (posix_memalign(&probe, SWAP_ALIGN, SWAP_ALIGN) == 0) {
      if (pread(fd, probe, SWAP_ALIGN, 0) < 0 && errno == EINVAL) {
        close(fd);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        s->direct = 0;
      }
      free(probe);
    }
  }
  if (fd < 0)
    return dsrt_fail(DSRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if ((fcntl(fd, F_GETFL) & O_DIRECT) == 0)
    s->direct = 0;
  /* Zeros the state starts from, with its blocks reserved now: a full
   * disk fails here, before the first step, not in the middle of one. */
  int err = padded > 0 ? posix_fallocate(fd, 0, padded) : 0;
  if (err) {
    close(fd);
    return dsrt_fail(DSRT_ERR_IO, "%s: cannot allocate %lld bytes: %s", path,
                     (long long)padded, strerror(err));
  }
  *fd_out = fd;
  return DSRT_OK;
}

int dsrt_swap_add(dsrt_swap *s, const char *name, int64_t bytes, void **key) {
  if (!s || !name || !*name || strchr(name, '/') || bytes < 0 || !key)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_add: needs a swap, a file name without '/', "
                     "bytes >= 0 and key");
  if (s->num_tensors == s->cap_tensors) {
    int64_t cap = s->cap_tensors ? 2 * s->cap_tensors : 64;
    swap_tensor *grown = realloc(s->tensors, (size_t)cap * sizeof(*grown));
    if (!grown)
      return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "dsrt_swap_add: no memory");
    s->tensors = grown;
    s->cap_tensors = cap;
  }
  swap_tensor t = {.bytes = bytes, .padded = round_up(bytes, SWAP_ALIGN)};
  size_t len = strlen(s->dir) + strlen(name) + 2;
  if (!(t.path = malloc(len)))
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "dsrt_swap_add: no memory");
  snprintf(t.path, len, "%s/%s", s->dir, name);
  int status = open_state_file(s, t.path, t.padded, &t.fd);
  if (status != DSRT_OK) {
    free(t.path);
    return status;
  }
  /* Address space only: any access faults, so nothing reads the state
   * anywhere but through the files. */
  t.key = mmap(NULL, (size_t)(t.padded ? t.padded : SWAP_ALIGN), PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t.key == MAP_FAILED) {
    close(t.fd);
    free(t.path);
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                     "dsrt_swap_add: cannot reserve %lld bytes of address "
                     "space for %s",
                     (long long)t.padded, name);
  }
  pthread_mutex_lock(&registry_lock);
  s->tensors[s->num_tensors++] = t;
  pthread_mutex_unlock(&registry_lock);
  *key = t.key;
  return DSRT_OK;
}

int dsrt_swap_close(dsrt_swap *s) {
  if (!s)
    return DSRT_OK;
  pthread_mutex_lock(&registry_lock);
  for (dsrt_swap **at = &registry; *at; at = &(*at)->next)
    if (*at == s) {
      *at = s->next;
      break;
    }
  pthread_mutex_unlock(&registry_lock);
  int status = DSRT_OK;
  for (int64_t i = 0; i < s->num_tensors; ++i) {
    swap_tensor *t = &s->tensors[i];
    if (close(t->fd) != 0 && status == DSRT_OK)
      status =
          dsrt_fail(DSRT_ERR_IO, "%s: close: %s", t->path, strerror(errno));
    munmap(t->key, (size_t)(t->padded ? t->padded : SWAP_ALIGN));
    free(t->path);
  }
  if (s->has_ring)
    io_uring_queue_exit(&s->ring);
  free(s->tensors);
  free(s->stage);
  free(s->reqs);
  free(s->dir);
  free(s);
  return status;
}

int dsrt_swap_direct(const dsrt_swap *s) { return s && s->direct; }

void dsrt_swap_traffic(const dsrt_swap *s, int64_t *read, int64_t *written) {
  if (read)
    *read = s ? s->bytes_read : 0;
  if (written)
    *written = s ? s->bytes_written : 0;
}

/* The tensor whose range holds `p`, and its swap; NULL if none. The
 * optimizer asks about its tensors in order, so the next one is tried
 * first. */
static swap_tensor *find_tensor(const void *p, dsrt_swap **owner) {
  const char *c = p;
  swap_tensor *found = NULL;
  pthread_mutex_lock(&registry_lock);
  for (dsrt_swap *s = registry; s && !found; s = s->next) {
    for (int64_t k = 0; k < s->num_tensors && !found; ++k) {
      int64_t i = (s->last_hit + k) % s->num_tensors;
      swap_tensor *t = &s->tensors[i];
      if (c >= t->key && c < t->key + (t->padded ? t->padded : 1)) {
        found = t;
        s->last_hit = i;
        *owner = s;
      }
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}

int dsrt_swap_holds(const void *p) {
  dsrt_swap *s;
  return p && find_tensor(p, &s) != NULL;
}

/*--- Whole tensors: checkpoints and restores ------------------------------*/

/* pread/pwrite of [off, off + len) in full, through the aligned `buf`. */
static int transfer(const swap_tensor *t, int write, char *buf, int64_t off,
                    int64_t len) {
  while (len > 0) {
    ssize_t n = write ? pwrite(t->fd, buf, (size_t)len, off)
                      : pread(t->fd, buf, (size_t)len, off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return dsrt_fail(DSRT_ERR_IO, "%s: %s of %lld bytes at offset %lld: %s",
                       t->path, write ? "write" : "read", (long long)len,
                       (long long)off,
                       n < 0 ? strerror(errno) : "unexpected end of file");
    buf += n;
    off += n;
    len -= n;
  }
  return DSRT_OK;
}

static int whole_tensor(const void *key, void *mem, int write) {
  dsrt_swap *s = NULL;
  swap_tensor *t = key ? find_tensor(key, &s) : NULL;
  if (!t || (char *)key != t->key)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                     "dsrt_swap_%s: %p is not a swapped tensor's key",
                     write ? "store" : "load", key);
  int64_t piece = s->opt.block_size;
  void *bounce = NULL;
  if (posix_memalign(&bounce, SWAP_ALIGN, (size_t)piece) != 0)
    return dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "dsrt_swap: no memory");
  int status = DSRT_OK;
  for (int64_t off = 0; off < t->bytes && status == DSRT_OK; off += piece) {
    int64_t n = t->bytes - off < piece ? t->bytes - off : piece;
    int64_t io = round_up(n, SWAP_ALIGN);
    if (write) {
      memcpy(bounce, (const char *)mem + off, (size_t)n);
      memset((char *)bounce + n, 0, (size_t)(io - n));
      status = transfer(t, 1, bounce, off, io);
      s->bytes_written += io;
    } else {
      status = transfer(t, 0, bounce, off, io);
      memcpy((char *)mem + off, bounce, (size_t)n);
      s->bytes_read += io;
    }
  }
  free(bounce);
  return status;
}

int dsrt_swap_load(const void *key, void *dst) {
  return whole_tensor(key, dst, 0);
}

int dsrt_swap_store(const void *key, const void *src) {
  return whole_tensor(key, (void *)src, 1);
}

/*--- Requests through the ring --------------------------------------------*/

static void request_done(dsrt_swap *s, swap_req *r, int res) {
  const swap_tensor *t = &s->tensors[r->tensor];
  if (res < 0) {
    if (s->status == DSRT_OK)
      s->status =
          dsrt_fail(DSRT_ERR_IO,
                    "%s: %s of %lld bytes at offset %lld: %s (errno "
                    "%d)",
                    t->path, r->write ? "write" : "read", (long long)r->len,
                    (long long)r->off, strerror(-res), -res);
  } else if (res < r->len && s->status == DSRT_OK) {
    /* A short transfer: the rest, synchronously. */
    int status =
        transfer(t, r->write, r->buf + res, r->off + res, r->len - res);
    if (status != DSRT_OK)
      s->status = status;
  }
  if (r->write)
    s->bytes_written += r->len;
  else
    s->bytes_read += r->len;
  --s->pending[r->slot];
  --s->inflight;
  r->used = 0;
}

static void flush(dsrt_swap *s) {
  if (s->has_ring && s->unsubmitted) {
    io_uring_submit(&s->ring);
    s->unsubmitted = 0;
  }
}

/* Waits for one request to finish. */
static void reap_one(dsrt_swap *s) {
  flush(s);
  struct io_uring_cqe *cqe = NULL;
  int err;
  do
    err = io_uring_wait_cqe(&s->ring, &cqe);
  while (err == -EINTR);
  if (err < 0) {
    /* The ring itself failed: nothing in flight can be trusted. */
    if (s->status == DSRT_OK)
      s->status = dsrt_fail(DSRT_ERR_IO, "%s: io_uring_wait_cqe: %s", s->dir,
                            strerror(-err));
    for (int i = 0; i < s->opt.queue_depth; ++i)
      if (s->reqs[i].used)
        request_done(s, &s->reqs[i], (int)s->reqs[i].len);
    return;
  }
  swap_req *r = io_uring_cqe_get_data(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&s->ring, cqe);
  request_done(s, r, res);
}

static void wait_slot(dsrt_swap *s, int slot) {
  while (s->pending[slot] > 0)
    reap_one(s);
}

/* Queues [off, off + len) of tensor `ti` to or from `buf`, in requests of
 * at most block_size bytes, never more than queue_depth in flight. */
static void queue_io(dsrt_swap *s, int slot, int64_t ti, int write, char *buf,
                     int64_t off, int64_t len) {
  const swap_tensor *t = &s->tensors[ti];
  for (int64_t done = 0; done < len; done += s->opt.block_size) {
    int64_t n = len - done < s->opt.block_size ? len - done : s->opt.block_size;
    if (!s->has_ring) {
      int status = transfer(t, write, buf + done, off + done, n);
      if (status != DSRT_OK && s->status == DSRT_OK)
        s->status = status;
      if (write)
        s->bytes_written += n;
      else
        s->bytes_read += n;
      continue;
    }
    while (s->inflight == s->opt.queue_depth)
      reap_one(s);
    swap_req *r = s->reqs;
    while (r->used)
      ++r;
    *r = (swap_req){.slot = slot,
                    .tensor = (int)ti,
                    .write = write,
                    .used = 1,
                    .buf = buf + done,
                    .off = off + done,
                    .len = n};
    struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
    if (!sqe) { /* every entry taken by unsubmitted requests */
      flush(s);
      sqe = io_uring_get_sqe(&s->ring);
    }
    if (write)
      io_uring_prep_write(sqe, t->fd, r->buf, (unsigned)n, (__u64)r->off);
    else
      io_uring_prep_read(sqe, t->fd, r->buf, (unsigned)n, (__u64)r->off);
    io_uring_sqe_set_data(sqe, r);
    ++s->pending[slot];
    ++s->inflight;
    ++s->unsubmitted;
    if (s->opt.single_submit)
      flush(s);
  }
}

/*--- The streamed update --------------------------------------------------*/

/* A piece of one tensor within a chunk, and where it sits in a slot. */
typedef struct segment {
  int64_t tensor, begin, len, stage_off;
  int64_t m_file, v_file; /* swapped tensor indices */
} segment;

static int64_t dtype_bytes(int dtype) { return dtype == DSRT_F32 ? 4 : 2; }

int dsrt_swap_update(const char *fn, int64_t num_tensors, float *const *params,
                     const void *const *grads, int grad_dtype,
                     float *const *exp_avgs, float *const *exp_avg_sqs,
                     const int64_t *counts, void *const *params16,
                     int param16_dtype, int64_t block, swap_update_fn update,
                     void *ctx) {
  /* Every tensor's both states must be swapped, in one swap, whole. */
  dsrt_swap *s = NULL;
  segment *segs = NULL;
  int64_t *chunk_first = NULL;
  int64_t nsegs = 0, nchunks = 0;
  int status = DSRT_OK;
  for (int64_t t = 0; t < num_tensors; ++t) {
    if (counts[t] == 0)
      continue;
    dsrt_swap *sm = NULL, *sv = NULL;
    swap_tensor *m = find_tensor(exp_avgs[t], &sm);
    swap_tensor *v = find_tensor(exp_avg_sqs[t], &sv);
    if (!m || !v || sm != sv || (s && sm != s) ||
        (char *)exp_avgs[t] != m->key || (char *)exp_avg_sqs[t] != v->key ||
        m->bytes != counts[t] * 4 || v->bytes != counts[t] * 4)
      return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
                       "%s: tensor %lld's exp_avg and exp_avg_sq are not "
                       "both whole swapped tensors of %lld floats (some "
                       "states of the call are swapped, some are not)",
                       fn, (long long)t, (long long)counts[t]);
    s = sm;
  }
  if (!s)
    return DSRT_OK;

  /* Chunks of at most `cap` elements (staged at aligned offsets), cutting
   * a tensor only at multiples of `unit` elements: whole kernel blocks at
   * aligned file offsets. */
  int64_t unit = block;
  while ((unit * 4) % SWAP_ALIGN)
    unit += block;
  int64_t cap = s->opt.buffer_size / unit * unit;
  if (cap < unit)
    cap = unit;
  int64_t maxsegs = 0, capsegs = 0, capchunks = 0, used = 0, largest = 0;
  const int64_t per_align = SWAP_ALIGN / 4;
  for (int64_t t = 0; t < num_tensors && status == DSRT_OK; ++t) {
    dsrt_swap *o;
    int64_t mi = counts[t] ? find_tensor(exp_avgs[t], &o) - s->tensors : 0;
    int64_t vi = counts[t] ? find_tensor(exp_avg_sqs[t], &o) - s->tensors : 0;
    for (int64_t begin = 0; begin < counts[t];) {
      int64_t rest = counts[t] - begin, room = cap - used;
      int64_t len = rest <= room ? rest : room / unit * unit;
      if (len <= 0 || nchunks == 0) {
        if (nchunks == capchunks) {
          capchunks = capchunks ? 2 * capchunks : 16;
          int64_t *grown =
              realloc(chunk_first, (size_t)(capchunks + 1) * sizeof(int64_t));
          if (!grown) {
            status = dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
            break;
          }
          chunk_first = grown;
        }
        chunk_first[nchunks++] = nsegs;
        used = 0;
        if (len <= 0)
          continue;
      }
      if (nsegs == capsegs) {
        capsegs = capsegs ? 2 * capsegs : 64;
        segment *grown = realloc(segs, (size_t)capsegs * sizeof(segment));
        if (!grown) {
          status = dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
          break;
        }
        segs = grown;
      }
      segs[nsegs++] = (segment){.tensor = t,
                                .begin = begin,
                                .len = len,
                                .stage_off = used,
                                .m_file = mi,
                                .v_file = vi};
      used += round_up(len, per_align);
      if (used > largest)
        largest = used;
      begin += len;
    }
  }
  if (status == DSRT_OK && nchunks == 0) {
    free(segs);
    free(chunk_first);
    return DSRT_OK;
  }
  if (status == DSRT_OK)
    chunk_first[nchunks] = nsegs;
  for (int64_t c = 0; c < nchunks && status == DSRT_OK; ++c)
    if (chunk_first[c + 1] - chunk_first[c] > maxsegs)
      maxsegs = chunk_first[c + 1] - chunk_first[c];

  /* Staging: buffer_count slots (no more than there are chunks), each
   * holding a chunk's two states; kept for the next call. */
  int slots = (int)(nchunks < s->opt.buffer_count ? nchunks
                                                  : s->opt.buffer_count);
  if (status == DSRT_OK &&
      (largest > s->stage_elems || slots > s->stage_slots)) {
    free(s->stage);
    s->stage = NULL;
    s->stage_elems = 0;
    s->stage_slots = 0;
    void *stage = NULL;
    if (posix_memalign(&stage, SWAP_ALIGN,
                       (size_t)(2 * slots * largest) * sizeof(float)) != 0)
      status = dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
                         "%s: no memory for %d staging buffers of 2 x %lld "
                         "floats",
                         fn, slots, (long long)largest);
    else {
      s->stage = stage;
      s->stage_elems = largest;
      s->stage_slots = slots;
    }
  }
  float **ptrs = NULL;
  int64_t *lens = NULL;
  if (status == DSRT_OK &&
      (!(ptrs = malloc((size_t)(5 * maxsegs) * sizeof(float *))) ||
       !(lens = malloc((size_t)maxsegs * sizeof(int64_t)))))
    status = dsrt_fail(DSRT_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
  if (status != DSRT_OK) {
    free(ptrs);
    free(segs);
    free(chunk_first);
    return status;
  }

  float *stage = (float *)s->stage;
  int64_t slot_elems = 2 * s->stage_elems;
  s->status = DSRT_OK;
  /* Chunk i uses slot i % slots; reads run `ahead` chunks in front of the
   * kernel, leaving one slot for the writes behind it (one slot: one
   * chunk, nothing ahead). */
  int64_t ahead = slots >= 3 ? slots - 2 : slots - 1, next_read = 0;
  double t0 = dsrt_trace_t0();
  for (int64_t i = 0; i < nchunks && s->status == DSRT_OK; ++i) {
    for (; next_read < nchunks && next_read <= i + ahead; ++next_read) {
      int slot = (int)(next_read % slots);
      wait_slot(s, slot); /* the writes of the chunk it held */
      float *m = stage + slot * slot_elems, *v = m + s->stage_elems;
      for (int64_t k = chunk_first[next_read]; k < chunk_first[next_read + 1];
           ++k) {
        const segment *g = &segs[k];
        int64_t io = round_up(g->len * 4, SWAP_ALIGN), off = g->begin * 4;
        queue_io(s, slot, g->m_file, 0, (char *)(m + g->stage_off), off, io);
        queue_io(s, slot, g->v_file, 0, (char *)(v + g->stage_off), off, io);
      }
      flush(s);
    }
    int slot = (int)(i % slots);
    wait_slot(s, slot);
    if (s->status != DSRT_OK)
      break;
    float *m = stage + slot * slot_elems, *v = m + s->stage_elems;
    int64_t first = chunk_first[i], n = chunk_first[i + 1] - first;
    float **p = ptrs, **mm = ptrs + maxsegs, **vv = ptrs + 2 * maxsegs;
    const void **g = (const void **)(ptrs + 3 * maxsegs);
    void **p16 = (void **)(ptrs + 4 * maxsegs);
    for (int64_t k = 0; k < n; ++k) {
      const segment *sg = &segs[first + k];
      p[k] = params[sg->tensor] + sg->begin;
      g[k] =
          (const char *)grads[sg->tensor] + sg->begin * dtype_bytes(grad_dtype);
      mm[k] = m + sg->stage_off;
      vv[k] = v + sg->stage_off;
      p16[k] = params16 ? (char *)params16[sg->tensor] +
                              sg->begin * dtype_bytes(param16_dtype)
                        : NULL;
      lens[k] = sg->len;
    }
    status = update(ctx, n, p, g, mm, vv, lens, params16 ? p16 : NULL);
    if (status != DSRT_OK)
      break;
    for (int64_t k = 0; k < n; ++k) {
      const segment *sg = &segs[first + k];
      int64_t io = round_up(sg->len * 4, SWAP_ALIGN), off = sg->begin * 4;
      queue_io(s, slot, sg->m_file, 1, (char *)mm[k], off, io);
      queue_io(s, slot, sg->v_file, 1, (char *)vv[k], off, io);
    }
    flush(s);
  }
  /* Nothing in flight outlives the call, error or not. */
  for (int slot = 0; slot < slots; ++slot)
    wait_slot(s, slot);
  dsrt_trace_done(DSRT_TRACE_COMPUTE, "optimizer", "swap", t0, -1);
  if (status == DSRT_OK)
    status = s->status;
  free(ptrs);
  free(lens);
  free(segs);
  free(chunk_first);
  return status;
}
