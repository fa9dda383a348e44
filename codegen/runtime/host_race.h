/* host_race.h: the shared-memory race detector of cfuser's host backend; the third part of
 * the host runtime, prepended after host_tmem.h.
 *
 * The host backend runs a block's threads as cooperative fibers, so a kernel in which two
 * threads touch one shared-memory address between two __syncthreads (at least one of them
 * writing) gives the same answer every time here and a wrong one, sometimes, on a GPU.
 * This header finds such races. Every shared-memory element access of a generated kernel
 * goes through cfh_smem_r / cfh_smem_w (or cfh_smem_rn / cfh_smem_wn for a vector of n
 * elements), which record it in a shadow of the block's shared memory before returning
 * the element's address. Each shadow cell holds the barrier epoch of its accesses (the
 * launch's epoch counter advances at every __syncthreads and at every block start, so the
 * shadow needs no reset between blocks), the thread that last wrote it in that epoch and
 * up to two distinct threads that read it. A write by thread t to a cell written or read
 * by another thread in the same epoch, or a read by t of a cell another thread wrote in
 * the same epoch, stops the launch with a message naming the block, both threads, the
 * tensor element and its byte offset.
 * Key decision: the shadow has one cell per byte of shared memory but an access records
 * only the first byte of each element: a tensor's elements are aligned and never overlap
 * another buffer's, so this finds exactly the races between elements, and half-precision
 * neighbours sharing a 4-byte word (no race on a GPU) are not reported. The tensor-memory
 * address slot is written by the tcgen05.alloc collective inside the runtime and read by
 * the emitted tcgen05 calls directly, so it is not tracked (host_tmem.h checks it).
 * CFUSER_HOST_RACECHECK=0 turns the detector off (no shadow; the accessors only return
 * the address). */
#ifndef CFH_HOST_RACE_H
#define CFH_HOST_RACE_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_race.h goes after host_runtime.h"
#endif

#define CFH_RACE_MANY 0xFFFFu

/* Stops the launch: thread `t` (1 + linear id) `write`s element p of tensor `name`
 * (NULL: unnamed), which thread `u` `u_wrote` (else read) in the same epoch. */
CFH_FN _Noreturn void cfh__race(cfh_launch_state *L, const void *base, const void *p, size_t size,
                                const char *name, bool write, unsigned int u, bool u_wrote) {
  char b[48], t[48], o[48], what[160];
  size_t off = (size_t)((const unsigned char *)p - L->smem);
  if (name)
    snprintf(what, sizeof what, "%s[%zu] (byte offset %zu of shared memory)", name,
             (size_t)((const unsigned char *)p - (const unsigned char *)base) / size, off);
  else
    snprintf(what, sizeof what, "byte offset %zu of shared memory", off);
  cfh__error(L, CFH_ERR_RUNTIME, "shared-memory race: block %s thread %s %s %s, which thread %s "
             "%s with no __syncthreads in between", cfh__dim(b, L->bid),
             cfh__dim(t, L->cur->tid), write ? "writes" : "reads", what,
             cfh__dim(o, L->fibers[u - 1].tid), u_wrote ? "wrote" : "read");
  cfh__stop(L);
}

/* Records thread t's access to one element's first byte, cell c. */
CFH_INLINE void cfh__race_cell(cfh_launch_state *L, cfh_race_cell *c, unsigned int t, bool write,
                               const void *base, const void *p, size_t size, const char *name) {
  if (c->epoch != L->race_epoch) {
    *c = (cfh_race_cell){L->race_epoch, (uint16_t)(write ? t : 0), (uint16_t)(write ? 0 : t), 0};
    return;
  }
  if (c->writer && c->writer != t) cfh__race(L, base, p, size, name, write, c->writer, true);
  if (write) {
    unsigned int r = c->reader != t ? c->reader : c->reader2;
    if (r) cfh__race(L, base, p, size, name, true, r, false);
    c->writer = (uint16_t)t;
  } else if (!c->reader) {
    c->reader = (uint16_t)t;
  } else if (c->reader != t && !c->reader2) {
    c->reader2 = (uint16_t)t;
  }
}

/* Records the current thread's access to n elements of `size` bytes at p, in tensor
 * `name` starting at base. Addresses outside shared memory are not tracked. Not inlined:
 * one call per access keeps the generated kernels quick to compile. */
__attribute__((noinline)) CFH_FN void cfh__smem_record(cfh_launch_state *L, const void *base,
                                                       void *p, size_t n, size_t size,
                                                       bool write, const char *name) {
  size_t off = (size_t)((unsigned char *)p - L->smem);
  if ((unsigned char *)p < L->smem || off + n * size > L->smem_bytes) return;
  unsigned int t = L->cur->linear + 1;
  for (size_t i = 0; i < n; i++)
    cfh__race_cell(L, &L->race[off + i * size], t, write, base, (unsigned char *)p + i * size,
                   size, name);
}

/* The accessors' entry: records the access when the detector is on; returns p. */
CFH_INLINE void *cfh__smem_touch(const void *base, void *p, size_t n, size_t size, bool write,
                                 const char *name) {
  cfh_launch_state *L = cfh__L;
  if (L->race) cfh__smem_record(L, base, p, n, size, write, name);
  return p;
}

/* Element i (or n elements from i) of shared tensor T, a pointer into shared memory, as an
 * lvalue (or a pointer) whose access is recorded. */
#define cfh_smem_rn(T, i, n) \
  ((__typeof__(&(T)[0]))cfh__smem_touch((T), (void *)&(T)[i], (n), sizeof (T)[0], false, #T))
#define cfh_smem_wn(T, i, n) \
  ((__typeof__(&(T)[0]))cfh__smem_touch((T), (void *)&(T)[i], (n), sizeof (T)[0], true, #T))
#define cfh_smem_r(T, i) (*cfh_smem_rn(T, i, 1))
#define cfh_smem_w(T, i) (*cfh_smem_wn(T, i, 1))

/* n elements from element i of a Local tensor spilled to shared memory (cf_spill_to_shared,
 * lower/shared_spill.c), as the CUDA kernel places them (cuda_helpers.cuh's cf_spill_at):
 * i < K in the thread's register array R, the others in 16-byte chunks of V elements of S
 * (NS elements in all), chunk j of thread `tid` of NT at (j * NT + tid) * V; those accesses
 * are recorded for the race detector, and one outside S stops the kernel with a message. */
CFH_FN void *cfh__spill_at(void *regs, void *smem, size_t size, long long k, long long v, long long nt, long long i,
                           long long ns, long long n, unsigned tid, bool write, const char *name) {
  if (i < k) return (char *)regs + (size_t)i * size;
  long long j = (((i - k) / v) * nt + (long long)tid) * v + (i - k) % v;
  if (j < 0 || j + n > ns)
    cfh_fail("%s: elements %lld..%lld of a spilled tensor's shared part lie outside its %lld elements", name, j, j + n - 1,
             ns);
  return cfh__smem_touch(smem, (char *)smem + (size_t)j * size, (size_t)n, size, write, name);
}
#define cfh_spill_at(R, S, K, V, NT, i, NS, n, w) \
  ((__typeof__(&(R)[0]))cfh__spill_at((R), (S), sizeof (R)[0], (K), (V), (NT), (i), (NS), (n), cf_linear_tid(), (w), #S))

#endif
