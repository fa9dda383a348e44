/* host_tma.h: the Tensor Memory Accelerator's tile loads (cp.async.bulk.tensor, Hopper's
 * TMA) on cfuser's host backend; a part of the host runtime, prepended after
 * host_mbarrier.h. The kernels of lower/tma.c (cf_tma_load's tiles) call it with the
 * tensor map their host code builds from the parameter; tests/host/test_host_tma.c drives
 * it directly too. It does not model the race of a box landing in a stage a thread still
 * reads (what orders that is the lowering's: the __syncthreads after the reads, or a
 * producer's wait on the readers' release, lower/warp_specialize.c).
 *
 * A tensor map describes a global tensor of rank 1 to 5 (sizes innermost first, byte
 * strides of the outer dimensions, the element's bytes), the box a load copies (elements
 * per dimension) and the shared-memory swizzle (PTX ISA, "Tensor Map", "Tensor copy";
 * CUDA's CUtensorMap, which the host does not have: cfh_tensor_map is the runtime's own,
 * holding the same fields cuTensorMapEncodeTiled takes). A load of the box at integer
 * coordinates (any, negative or past the end) writes the box packed innermost first into
 * shared memory, each element out of the tensor's bounds as zero bytes, every 16-byte
 * chunk of the destination moved by the swizzle (128-byte: byte address bits 4..6 XORed
 * with bits 7..9, the pattern of wgmma's descriptors; 64-byte: bits 4..5 with 7..8;
 * 32-byte: bit 4 with 7, on the address in shared memory, whose base is 1024-byte
 * aligned), and then completes the box's bytes on the mbarrier it names (complete_tx).
 * Checks, each stopping the launch naming the thread: the map's fields (rank, box of 1 to
 * 256 elements a dimension, an inner box row of at most the swizzle's span, 16-byte
 * multiples), the destination's alignment (128 bytes, or the swizzle's 1024-byte period)
 * and its bounds in shared memory.
 * Key decision: as cp.async's copies (host_async.h), a load lands as late as the program
 * allows: when a thread first waits on its mbarrier's phase (cfh_mbarrier_wait_parity),
 * in issue order; at issue only when a thread already waits on that barrier (a producer
 * warpgroup's load, issued while its readers wait: lower/warp_specialize.c). Until then shared memory holds what it held (0xFF
 * bytes at block start), so a kernel that reads a tile before waiting for it differs from
 * the evaluator instead of passing by luck. test_parity never lands one (a CUDA try_wait
 * loop becomes a wait here). Loads not landed when the block ends are dropped. */
#ifndef CFH_HOST_TMA_H
#define CFH_HOST_TMA_H
#ifndef CFH_HOST_MBARRIER_H
#error "host_tma.h goes after host_mbarrier.h"
#endif

enum { CFH_TMA_MAX_RANK = 5, CFH_TMA_MAX = 64 /* loads a block may have in flight */ };

typedef struct cfh_tensor_map {
  const void *base;                     /* the tensor's element 0 in global memory */
  unsigned int rank, elem_bytes;        /* 1..5; 1, 2, 4 or 8 */
  uint64_t size[CFH_TMA_MAX_RANK];      /* elements, innermost first */
  uint64_t stride[CFH_TMA_MAX_RANK];    /* bytes between consecutive indices of each
                                           dimension (stride[0] is elem_bytes) */
  unsigned int box[CFH_TMA_MAX_RANK];   /* elements a load copies, innermost first */
  unsigned int swizzle;                 /* span in bytes: 0 (none), 32, 64 or 128 */
} cfh_tensor_map;

typedef struct cfh_tma_load {
  unsigned char *dst;
  const cfh_tensor_map *map;
  int64_t coord[CFH_TMA_MAX_RANK];
  uint64_t *bar;
} cfh_tma_load;

typedef struct cfh_tma_q {
  cfh_tma_load l[CFH_TMA_MAX];
  unsigned int n;
} cfh_tma_q;

CFH_FN void cfh__tma_block_start(cfh_launch_state *L) {
  if (L->tma) L->tma->n = 0;
}

/* The box's bytes, after checking the map's fields. */
CFH_FN uint64_t cfh__tma_box_bytes(const cfh_tensor_map *m) {
  cfh_check(m->rank >= 1 && m->rank <= CFH_TMA_MAX_RANK, "cp.async.bulk.tensor: the tensor map's rank %u is out of "
            "range (1 to %d)", m->rank, CFH_TMA_MAX_RANK);
  cfh_check(m->elem_bytes == 1 || m->elem_bytes == 2 || m->elem_bytes == 4 || m->elem_bytes == 8,
            "cp.async.bulk.tensor: the tensor map's element of %u bytes (1, 2, 4 or 8)", m->elem_bytes);
  cfh_check(m->swizzle == 0 || m->swizzle == 32 || m->swizzle == 64 || m->swizzle == 128,
            "cp.async.bulk.tensor: the tensor map's swizzle of %u bytes (0, 32, 64 or 128)", m->swizzle);
  uint64_t bytes = m->elem_bytes;
  for (unsigned int d = 0; d < m->rank; d++) {
    cfh_check(m->box[d] >= 1 && m->box[d] <= 256, "cp.async.bulk.tensor: the box's dimension %u of %u elements "
              "(1 to 256)", d, m->box[d]);
    bytes *= m->box[d];
  }
  uint64_t row = (uint64_t)m->box[0] * m->elem_bytes;
  cfh_check(row % 16 == 0, "cp.async.bulk.tensor: the box's inner row of %llu bytes is not a multiple of 16",
            (unsigned long long)row);
  cfh_check(!m->swizzle || row <= m->swizzle, "cp.async.bulk.tensor: the box's inner row of %llu bytes is wider "
            "than the %u-byte swizzle", (unsigned long long)row, m->swizzle);
  return bytes;
}

/* cp.async.bulk.tensor.<rank>d.shared::cluster.global.mbarrier::complete_tx::bytes
 * [dst], [map, {coord}], [bar]: queued for the barrier's first wait (above). */
CFH_FN void cfh_tma_load_tile(void *dst, const cfh_tensor_map *map, const int32_t *coord, uint64_t *bar) {
  cfh_launch_state *L = cfh__L;
  uint64_t bytes = cfh__tma_box_bytes(map);
  uintptr_t p = (uintptr_t)dst, lo = (uintptr_t)L->smem;
  cfh_check(p >= lo && p + bytes <= lo + L->smem_bytes, "cp.async.bulk.tensor: the %llu-byte box at %p is not in "
            "the block's shared memory", (unsigned long long)bytes, dst);
  cfh_check((p - lo) % (map->swizzle == 128 ? 1024 : map->swizzle ? (uintptr_t)map->swizzle * 8 : 128) == 0,
            "cp.async.bulk.tensor: the box's destination at shared offset %zu is not aligned to %u bytes",
            (size_t)(p - lo), map->swizzle ? map->swizzle * 8 : 128);
  cfh__mbar_offset(bar, "cp.async.bulk.tensor");
  if (!L->tma && !(L->tma = (cfh_tma_q *)calloc(1, sizeof *L->tma))) {
    cfh__error(L, CFH_ERR_NOMEM, "out of memory: the TMA queue");
    cfh__stop(L);
  }
  cfh_check(L->tma->n < CFH_TMA_MAX, "cp.async.bulk.tensor: the block has %d loads in flight (the emulation's limit)",
            CFH_TMA_MAX);
  cfh_tma_load *l = &L->tma->l[L->tma->n++];
  *l = (cfh_tma_load){(unsigned char *)dst, map, {0}, bar};
  for (unsigned int d = 0; d < map->rank; d++) l->coord[d] = coord[d];
  for (unsigned int i = 0; i < L->nthreads; i++) /* a thread already waits on it: its first wait came first */
    if (L->fibers[i].state == CFH_AT_MBARRIER && L->fibers[i].wait_bar == bar) {
      cfh__tma_land(bar);
      break;
    }
}

/* The byte offset in shared memory after the map's swizzle (on the absolute offset). */
CFH_INLINE size_t cfh__tma_swizzle(size_t off, unsigned int swizzle) {
  size_t bits = swizzle == 128 ? 7 : swizzle == 64 ? 3 : swizzle == 32 ? 1 : 0;
  return off ^ (((off >> 7) & bits) << 4);
}

/* Lands one load: the box element by element, zeros out of bounds, then complete_tx. */
CFH_FN void cfh__tma_land_one(const cfh_tma_load *l) {
  cfh_launch_state *L = cfh__L;
  const cfh_tensor_map *m = l->map;
  uint64_t n = 1, bytes = cfh__tma_box_bytes(m);
  for (unsigned int d = 0; d < m->rank; d++) n *= m->box[d];
  size_t base = (size_t)(l->dst - L->smem);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t rest = i, src = 0;
    bool in = true;
    for (unsigned int d = 0; d < m->rank; d++) {
      int64_t c = l->coord[d] + (int64_t)(rest % m->box[d]);
      rest /= m->box[d];
      in = in && c >= 0 && (uint64_t)c < m->size[d];
      if (in) src += (uint64_t)c * (d ? m->stride[d] : m->elem_bytes);
    }
    unsigned char *to = L->smem + cfh__tma_swizzle(base + i * m->elem_bytes, m->swizzle);
    if (in) memcpy(to, (const unsigned char *)m->base + src, m->elem_bytes);
    else memset(to, 0, m->elem_bytes);
  }
  cfh_mbarrier_complete_tx(l->bar, (unsigned int)bytes);
}

/* Lands, in issue order, every queued load on bar (cfh_mbarrier_wait_parity asks). */
CFH_FN void cfh__tma_land(uint64_t *bar) {
  cfh_launch_state *L = cfh__L;
  if (!L->tma) return;
  unsigned int n = L->tma->n;
  cfh_tma_load pending[CFH_TMA_MAX];
  for (unsigned int i = 0; i < n; i++) pending[i] = L->tma->l[i];
  L->tma->n = 0; /* the others stay queued, in order */
  for (unsigned int i = 0; i < n; i++)
    if (pending[i].bar == bar) cfh__tma_land_one(&pending[i]);
    else L->tma->l[L->tma->n++] = pending[i];
}

#endif
