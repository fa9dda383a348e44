/* host_async.h: cp.async, the asynchronous global -> shared copies of cfuser's host
 * backend; a part of the host runtime, prepended after host_race.h.
 *
 * cp.async.cg.shared.global [dst], [src], 16, src_size queues a copy in the issuing
 * thread's open group (src_size bytes read, the rest of the 16 zero-filled); cp.async.commit_group closes the group; cp.async.wait_group N returns once at
 * most the N most recently committed groups are pending (PTX ISA, "cp.async",
 * "cp.async.wait_group"). Key decision: the emulation performs a group's copies exactly at
 * the wait that completes it, in issue order, never earlier (the hardware may land them
 * any time in between): until then shared memory holds what it held (0xFF bytes at block
 * start), so a kernel that reads a tile before waiting for it, or overwrites a stage still
 * in flight, reads stale bytes and differs from the evaluator instead of passing by luck.
 * The shared-memory write is recorded for the race detector at that wait, by the thread
 * that issued it. Copies never completed when a block ends are dropped, as on a GPU. */
#ifndef CFH_HOST_ASYNC_H
#define CFH_HOST_ASYNC_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_async.h goes after host_runtime.h"
#endif

enum { CFH_ASYNC_MAX = 64 }; /* copies one thread may have in flight */

typedef struct cfh_async_copy {
  void *base, *dst; /* the shared tensor and the copy's destination in it */
  const void *src;
  unsigned int bytes, src_bytes, elem, group; /* src_bytes read, the rest of bytes zeros */
  const char *name;
} cfh_async_copy;

typedef struct cfh_async_q {
  cfh_async_copy c[CFH_ASYNC_MAX];
  unsigned int n;    /* copies pending */
  unsigned int open; /* the group copies issued now join (groups before it are committed) */
} cfh_async_q;

CFH_FN void cfh__async_block_start(cfh_launch_state *L) {
  if (L->async) memset(L->async, 0, L->nthreads * sizeof *L->async);
}

/* The calling thread's queue (the launch's queues made on first use). */
CFH_FN cfh_async_q *cfh__async_q(void) {
  cfh_launch_state *L = cfh__L;
  if (!L->async) L->async = (cfh_async_q *)calloc(L->nthreads, sizeof *L->async);
  if (!L->async) {
    cfh__error(L, CFH_ERR_NOMEM, "out of memory: cp.async queues for %u threads", L->nthreads);
    cfh__stop(L);
  }
  return &L->async[L->cur->linear];
}

/* cp.async of `bytes` to dst in shared tensor base (elements of elem bytes): the first
 * src_bytes from global src, zeros after them (the PTX src-size operand: 0 reads nothing
 * and writes zeros, the zero fill of a tile's elements out of bounds). */
CFH_INLINE void cfh_cp_async(void *base, void *dst, const void *src, unsigned int bytes, unsigned int src_bytes,
                             unsigned int elem, const char *name) {
  cfh_async_q *q = cfh__async_q();
  if (q->n == CFH_ASYNC_MAX) {
    char b[48];
    cfh__error(cfh__L, CFH_ERR_RUNTIME, "cp.async: thread %s has %d copies in flight (the emulation's limit)",
               cfh__dim(b, cfh__L->cur->tid), CFH_ASYNC_MAX);
    cfh__stop(cfh__L);
  }
  q->c[q->n++] = (cfh_async_copy){base, dst, src, bytes, src_bytes < bytes ? src_bytes : bytes, elem, q->open, name};
}

CFH_INLINE void cfh_cp_async_commit(void) { cfh__async_q()->open++; }

/* Completes, in issue order, the copies of every committed group but the newest `pending`. */
CFH_INLINE void cfh_cp_async_wait(unsigned int pending) {
  cfh_async_q *q = cfh__async_q();
  unsigned int keep = 0;
  for (unsigned int i = 0; i < q->n; i++) {
    cfh_async_copy *c = &q->c[i];
    if (c->group + pending < q->open) {
      void *d = cfh__smem_touch(c->base, c->dst, c->bytes / c->elem, c->elem, true, c->name);
      if (c->src_bytes) memcpy(d, c->src, c->src_bytes);
      memset((char *)d + c->src_bytes, 0, c->bytes - c->src_bytes);
    } else {
      q->c[keep++] = *c;
    }
  }
  q->n = keep;
}

#endif
