/* host_mbarrier.h: Hopper's shared-memory barriers (mbarrier) on cfuser's host backend; a
 * part of the host runtime, prepended after host_async.h. What TMA loads complete on
 * (cp.async.bulk.tensor's complete_tx; the kernels of lower/tma.c init, expect_tx and wait
 * through it), and tcgen05.commit's arrive (host_tcgen05.h); tests/host/test_host_mbarrier.c drives it
 * directly too.
 *
 * An mbarrier is 8 bytes of shared memory, 8-byte aligned (PTX ISA, "mbarrier"): a phase
 * completes when its pending arrival count and its transaction count are both zero; the
 * barrier then moves to the next phase with the expected count pending again. Threads wait
 * for a phase by its parity (mbarrier.try_wait.parity: the phase of that parity has
 * completed, i.e. the current phase's parity differs). The emulation keeps the state in
 * the 8 bytes themselves (the hardware's encoding is opaque; this one is the runtime's own):
 *   bits 0..19 pending arrivals, 20..39 expected arrivals (1 to 2^20 - 1), 40..61 the
 *   transaction count (bytes expected and not yet completed, two's complement in 22 bits:
 *   a complete_tx may come before its expect_tx), bit 63 the current phase's parity.
 * Waiting parks the thread (CFH_AT_MBARRIER) until an arrival or a completed transaction
 * completes the phase, which wakes every thread waiting on that barrier; a block whose
 * threads all wait or exited is a deadlock, reported with the barrier's shared-memory
 * offset, the phase and what it still waits for. Errors (a count out of range, a barrier
 * outside shared memory or misaligned, a transaction count out of range) stop the launch
 * naming the thread. Key decision: waiting blocks rather than spins (CUDA's try_wait loop
 * becomes one call here), so a phase that never completes is a reported deadlock, not an
 * endless loop. Left for the lowering that uses it: the race detector (host_race.h) orders
 * shared-memory accesses by __syncthreads epochs only, not by mbarrier phases. */
#ifndef CFH_HOST_MBARRIER_H
#define CFH_HOST_MBARRIER_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_mbarrier.h goes after host_runtime.h"
#endif

enum { CFH_MBAR_COUNT_MAX = (1 << 20) - 1, CFH_MBAR_TX_MAX = (1 << 20) - 1 };

CFH_INLINE uint32_t cfh__mbar_pending(uint64_t s) { return (uint32_t)(s & 0xFFFFFu); }
CFH_INLINE uint32_t cfh__mbar_expected(uint64_t s) { return (uint32_t)((s >> 20) & 0xFFFFFu); }
CFH_INLINE int32_t cfh__mbar_tx(uint64_t s) {
  int32_t tx = (int32_t)((s >> 40) & 0x3FFFFFu);
  return tx >= (1 << 21) ? tx - (1 << 22) : tx;
}
CFH_INLINE uint32_t cfh__mbar_phase(uint64_t s) { return (uint32_t)(s >> 63); }
CFH_INLINE uint64_t cfh__mbar_state(uint32_t pending, uint32_t expected, int32_t tx, uint32_t phase) {
  return (uint64_t)pending | (uint64_t)expected << 20 | (uint64_t)((uint32_t)tx & 0x3FFFFFu) << 40 |
         (uint64_t)phase << 63;
}

/* The barrier's offset in the block's shared memory, after checking it lies there. */
CFH_FN size_t cfh__mbar_offset(const uint64_t *bar, const char *what) {
  cfh_launch_state *L = cfh__L;
  uintptr_t p = (uintptr_t)bar, lo = (uintptr_t)L->smem;
  cfh_check(p >= lo && p + 8 <= lo + L->smem_bytes, "%s: the mbarrier at %p is not in the block's shared memory",
            what, (const void *)bar);
  cfh_check(p % 8 == 0, "%s: the mbarrier at shared offset %zu is not 8-byte aligned", what, (size_t)(p - lo));
  return (size_t)(p - lo);
}

/* A phase whose arrivals and transactions are all in is complete: the next phase begins
 * and every thread waiting on the barrier runs again. */
CFH_FN void cfh__mbar_settle(uint64_t *bar) {
  uint64_t s = *bar;
  if (cfh__mbar_pending(s) || cfh__mbar_tx(s)) return;
  *bar = cfh__mbar_state(cfh__mbar_expected(s), cfh__mbar_expected(s), 0, cfh__mbar_phase(s) ^ 1u);
  cfh_launch_state *L = cfh__L;
  for (unsigned int i = 0; i < L->nthreads; i++)
    if (L->fibers[i].state == CFH_AT_MBARRIER && L->fibers[i].wait_bar == bar) {
      L->fibers[i].state = CFH_RUNNABLE;
      cfh__push(L, i);
    }
}

/* mbarrier.init.shared.b64 [bar], count: phase 0, count arrivals expected. */
CFH_FN void cfh_mbarrier_init(uint64_t *bar, unsigned int count) {
  cfh__mbar_offset(bar, "mbarrier.init");
  cfh_check(count >= 1 && count <= CFH_MBAR_COUNT_MAX, "mbarrier.init: count %u is out of range (1 to %d)", count,
            CFH_MBAR_COUNT_MAX);
  *bar = cfh__mbar_state(count, count, 0, 0);
}

/* Adds bytes to the transaction count of the current phase (mbarrier.expect_tx). */
CFH_FN void cfh_mbarrier_expect_tx(uint64_t *bar, unsigned int bytes) {
  size_t off = cfh__mbar_offset(bar, "mbarrier.expect_tx");
  uint64_t s = *bar;
  int64_t tx = (int64_t)cfh__mbar_tx(s) + bytes;
  cfh_check(tx <= CFH_MBAR_TX_MAX, "mbarrier.expect_tx: the mbarrier at shared offset %zu would expect %lld "
            "transaction bytes (at most %d)", off, (long long)tx, CFH_MBAR_TX_MAX);
  *bar = cfh__mbar_state(cfh__mbar_pending(s), cfh__mbar_expected(s), (int32_t)tx, cfh__mbar_phase(s));
}

/* mbarrier.arrive: one arrival on the current phase; returns the phase's parity (the
 * state token a thread may wait on). */
CFH_FN unsigned int cfh_mbarrier_arrive(uint64_t *bar) {
  size_t off = cfh__mbar_offset(bar, "mbarrier.arrive");
  uint64_t s = *bar;
  unsigned int phase = cfh__mbar_phase(s);
  cfh_check(cfh__mbar_pending(s) > 0, "mbarrier.arrive: the mbarrier at shared offset %zu has all %u arrivals of its "
            "phase (which waits for %d transaction bytes)", off, cfh__mbar_expected(s), (int)cfh__mbar_tx(s));
  *bar = cfh__mbar_state(cfh__mbar_pending(s) - 1u, cfh__mbar_expected(s), cfh__mbar_tx(s), phase);
  cfh__mbar_settle(bar);
  return phase;
}

/* mbarrier.arrive.expect_tx: expect bytes, then arrive. */
CFH_FN unsigned int cfh_mbarrier_arrive_expect_tx(uint64_t *bar, unsigned int bytes) {
  cfh_mbarrier_expect_tx(bar, bytes);
  return cfh_mbarrier_arrive(bar);
}

/* What an asynchronous copy does when its bytes land (complete_tx::bytes). */
CFH_FN void cfh_mbarrier_complete_tx(uint64_t *bar, unsigned int bytes) {
  size_t off = cfh__mbar_offset(bar, "mbarrier.complete_tx");
  uint64_t s = *bar;
  int64_t tx = (int64_t)cfh__mbar_tx(s) - bytes;
  cfh_check(tx >= -CFH_MBAR_TX_MAX, "mbarrier.complete_tx: the mbarrier at shared offset %zu would have %lld "
            "transaction bytes (at least -%d)", off, (long long)tx, CFH_MBAR_TX_MAX);
  *bar = cfh__mbar_state(cfh__mbar_pending(s), cfh__mbar_expected(s), (int32_t)tx, cfh__mbar_phase(s));
  cfh__mbar_settle(bar);
}

/* Whether the phase of this parity has completed (mbarrier.test_wait.parity). */
CFH_FN bool cfh_mbarrier_test_parity(const uint64_t *bar, unsigned int parity) {
  cfh__mbar_offset(bar, "mbarrier.test_wait");
  return cfh__mbar_phase(*bar) != (parity & 1u);
}

CFH_FN void cfh__tma_land(uint64_t *bar); /* host_tma.h */
CFH_FN void cfh__tc05_land(uint64_t *bar); /* host_tcgen05.h */

/* Returns once the phase of this parity has completed (CUDA: a loop of
 * mbarrier.try_wait.parity); parks the thread until then. The TMA loads queued on bar
 * land first (host_tma.h), and the tcgen05.mmas of a commit to it (host_tcgen05.h). */
CFH_FN void cfh_mbarrier_wait_parity(uint64_t *bar, unsigned int parity) {
  if (cfh_mbarrier_test_parity(bar, parity)) return;
  cfh__tma_land(bar);
  cfh__tc05_land(bar);
  if (cfh_mbarrier_test_parity(bar, parity)) return;
  cfh_launch_state *L = cfh__L;
  L->cur->state = CFH_AT_MBARRIER;
  L->cur->wait_bar = bar;
  L->cur->wait_parity = parity & 1u;
  cfh__to_scheduler(L);
}

/* The deadlock's report when a thread waits on an mbarrier (host_runtime.h's
 * cfh__diagnose_deadlock asks first): the first such barrier, its waiters and what its
 * phase lacks. */
CFH_FN bool cfh__mbarrier_diagnose(cfh_launch_state *L) {
  for (unsigned int i = 0; i < L->nthreads; i++) {
    const cfh_fiber *f = &L->fibers[i];
    if (f->state != CFH_AT_MBARRIER) continue;
    uint64_t s = *f->wait_bar;
    char b[48], m1[160], m2[160];
    cfh__error(L, CFH_ERR_RUNTIME, "block %s: deadlock: threads %s wait on mbarriers; thread %u waits on the one at "
               "shared offset %zu for its phase of parity %u, which still lacks %u of %u arrivals and %d transaction "
               "bytes (threads exited: %s)", cfh__dim(b, L->bid), cfh__threads(m1, sizeof m1, L, CFH_AT_MBARRIER), i,
               (size_t)((const unsigned char *)f->wait_bar - L->smem), f->wait_parity, cfh__mbar_pending(s),
               cfh__mbar_expected(s), (int)cfh__mbar_tx(s), cfh__threads(m2, sizeof m2, L, CFH_EXITED));
    return true;
  }
  return false;
}

#endif
