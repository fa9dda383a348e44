/* host_tmem.h: tensor memory and the tcgen05 instructions of cfuser's host backend; the
 * second part of the host runtime, prepended after host_runtime.h.
 *
 * Each CTA has 128 lanes x 512 columns of 32-bit cells. tcgen05.alloc, .dealloc,
 * .relinquish_alloc_permit, .ld and .st are warp collectives (`.sync.aligned`): they go
 * through host_runtime.h's rendezvous, and the last lane of the warp to arrive calls
 * cfh__tmem_execute, which checks the hardware rules for the whole warp and then does the
 * work for every lane. The rules, as the PTX ISA states them and nvFuser's lowering relies
 * on them: every lane passes the same operands; an allocation is a power of two of 32..512
 * columns, made before the CTA relinquishes its permit, and its address (lane 0, first
 * column) is written to a word of shared memory; a dealloc names exactly an allocation; in
 * the 32x32b shape warp w touches lanes 32*(w % 4) .. +31 only, lane l of the warp the
 * TMEM lane base + l, columns col .. col+N-1, all allocated; a CTA frees all it allocated.
 * Loads and stores complete immediately, so wait::ld and wait::st have nothing to do. */
#ifndef CFH_HOST_TMEM_H
#define CFH_HOST_TMEM_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_tmem.h goes after host_runtime.h"
#endif

CFH_FN void cfh__tmem_block_start(cfh_launch_state *L) {
  memset(L->col_owner, 0, sizeof L->col_owner);
  memset(L->alloc_cols, 0, sizeof L->alloc_cols);
  L->relinquished = false;
}

CFH_FN void cfh__tmem_block_end(cfh_launch_state *L) {
  unsigned int cols = 0;
  char b[48];
  for (unsigned int k = 0; k < CFH_TMEM_MAX_ALLOCS; k++) cols += L->alloc_cols[k];
  if (cols)
    cfh__error(L, CFH_ERR_RUNTIME, "block %s ended with %u tensor-memory columns still allocated",
               cfh__dim(b, L->bid), cols);
}

static bool cfh__col_allocated(const void *L, unsigned int c) {
  return ((const cfh_launch_state *)L)->col_owner[c] != 0;
}
CFH_FN const char *cfh__allocated(char *buf, size_t n, const cfh_launch_state *L) {
  return cfh__ranges(buf, n, CFH_TMEM_COLS, cfh__col_allocated, L);
}

CFH_INLINE bool cfh__pow2_in(uint32_t v, uint32_t lo, uint32_t hi) {
  return v >= lo && v <= hi && !(v & (v - 1));
}

/* Every lane of a tcgen05 collective must pass the same operands. */
CFH_FN void cfh__tmem_uniform(cfh_launch_state *L, unsigned int w, const cfh_warp *W) {
  const cfh_lane_args *a0 = &W->lane[0];
  const char *op = cfh__op_names[W->op];
  char b[48];
  for (unsigned int l = 1; l < 32; l++) {
    const cfh_lane_args *a = &W->lane[l];
    if (a->taddr != a0->taddr)
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: threads of one warp passed different "
                 "addresses (lane 0: tmem lane %u column %u; lane %u: tmem lane %u column %u)", op,
                 cfh__dim(b, L->bid), w, a0->taddr >> 16, a0->taddr & 0xFFFFu, l, a->taddr >> 16,
                 a->taddr & 0xFFFFu);
    else if (a->n != a0->n)
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: threads of one warp passed different "
                 "%s (lane 0: %u; lane %u: %u)", op, cfh__dim(b, L->bid), w,
                 W->op == CFH_OP_LD || W->op == CFH_OP_ST ? "repetition counts" : "column counts",
                 a0->n, l, a->n);
    else if (W->op == CFH_OP_ALLOC && a->ptr != a0->ptr)
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: threads of one warp passed different "
                 "destination slots (lane 0: %p; lane %u: %p)", op, cfh__dim(b, L->bid), w,
                 a0->ptr, l, a->ptr);
    else
      continue;
    cfh__stop(L);
  }
}

/* The first run of `ncols` free columns at a multiple of 32, or -1. */
CFH_FN int cfh__tmem_find(const cfh_launch_state *L, uint32_t ncols) {
  for (uint32_t s = 0; s + ncols <= CFH_TMEM_COLS; s += 32) {
    uint32_t c = s;
    while (c < s + ncols && !L->col_owner[c]) c++;
    if (c == s + ncols) return (int)s;
  }
  return -1;
}

CFH_FN void cfh__tmem_alloc(cfh_launch_state *L, unsigned int w, const cfh_warp *W) {
  uint32_t ncols = W->lane[0].n, *slot = (uint32_t *)W->lane[0].ptr;
  unsigned char *p = (unsigned char *)slot;
  char b[48], cols[160];
  int start = -1;
  unsigned int k = 0;
  cfh__dim(b, L->bid);
  if (L->relinquished)
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.alloc: block %s warp %u: allocation after "
               "tcgen05.relinquish_alloc_permit (the CTA gave up its allocation permit)", b, w);
  else if (!cfh__pow2_in(ncols, 32, CFH_TMEM_COLS))
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.alloc: block %s warp %u: cannot allocate %u columns: "
               "the column count must be a power of two from 32 to 512", b, w, ncols);
  else if (p < L->smem || p + 4 > L->smem + L->smem_bytes || (uintptr_t)p % 4)
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.alloc: block %s warp %u: the destination %p is not an "
               "aligned 32-bit word of the block's %zu bytes of shared memory", b, w, (void *)p,
               L->smem_bytes);
  else if ((start = cfh__tmem_find(L, ncols)) < 0)
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.alloc: block %s warp %u: cannot allocate %u columns: "
               "no %u contiguous columns are free (allocated: %s) and no other CTA can free "
               "any, so the allocation would wait forever", b, w, ncols, ncols,
               cfh__allocated(cols, sizeof cols, L));
  else if (!L->tmem && !(L->tmem = (uint32_t *)malloc(sizeof(uint32_t) * CFH_TMEM_LANES *
                                                       CFH_TMEM_COLS)))
    cfh__error(L, CFH_ERR_NOMEM, "out of memory: cannot emulate tensor memory");
  if (L->code != CFH_OK) cfh__stop(L);
  while (L->alloc_cols[k]) k++;
  L->alloc_start[k] = (uint16_t)start;
  L->alloc_cols[k] = (uint16_t)ncols;
  memset(L->col_owner + start, (int)(k + 1), ncols);
  for (unsigned int lane = 0; lane < CFH_TMEM_LANES; lane++)
    memset(L->tmem + lane * CFH_TMEM_COLS + start, 0xFF, ncols * sizeof(uint32_t));
  *slot = (uint32_t)start; /* lane 0, first column */
}

CFH_FN void cfh__tmem_dealloc(cfh_launch_state *L, unsigned int w, const cfh_warp *W) {
  uint32_t taddr = W->lane[0].taddr, ncols = W->lane[0].n;
  uint32_t lane = taddr >> 16, col = taddr & 0xFFFFu, any = 0;
  char b[48], cols[160];
  cfh__dim(b, L->bid);
  if (!cfh__pow2_in(ncols, 32, CFH_TMEM_COLS)) {
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.dealloc: block %s warp %u: cannot deallocate %u "
               "columns: the column count must be a power of two from 32 to 512", b, w, ncols);
    cfh__stop(L);
  }
  for (unsigned int k = 0; k < CFH_TMEM_MAX_ALLOCS; k++)
    if (lane == 0 && L->alloc_cols[k] == ncols && L->alloc_start[k] == col) {
      memset(L->col_owner + col, 0, ncols);
      L->alloc_cols[k] = 0;
      return;
    }
  for (uint32_t c = col; c < col + ncols && c < CFH_TMEM_COLS; c++) any |= L->col_owner[c];
  if (!any)
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.dealloc: block %s warp %u: dealloc of columns never "
               "allocated: columns %u..%u (allocated: %s)", b, w, col, col + ncols - 1,
               cfh__allocated(cols, sizeof cols, L));
  else
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.dealloc: block %s warp %u: lane %u columns %u..%u "
               "are not one allocation made by tcgen05.alloc (allocated: %s)", b, w, lane, col,
               col + ncols - 1, cfh__allocated(cols, sizeof cols, L));
  cfh__stop(L);
}

/* tcgen05.ld / tcgen05.st .32x32b.xN: warp w, lane l <-> TMEM lane 32*(w%4) + l. */
CFH_FN void cfh__tmem_ldst(cfh_launch_state *L, unsigned int w, const cfh_warp *W) {
  const char *op = cfh__op_names[W->op];
  uint32_t taddr = W->lane[0].taddr, n = W->lane[0].n;
  uint32_t lane = taddr >> 16, col = taddr & 0xFFFFu, base = 32u * (w % 4u);
  char b[48], cols[160];
  cfh__dim(b, L->bid);
  if (!cfh__pow2_in(n, 1, 128)) {
    cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u: .x%u is not a valid repetition count: "
               "it must be a power of two from 1 to 128", op, b, w, n);
    cfh__stop(L);
  }
  if (lane != base) {
    cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u accessed lanes %u..%u, but warp %u may "
               "only access sub-partition %u (lanes %u..%u)", op, b, w, lane, lane + 31, w, w % 4u,
               base, base + 31);
    cfh__stop(L);
  }
  for (uint32_t c = col; c < col + n; c++)
    if (c >= CFH_TMEM_COLS || !L->col_owner[c]) {
      cfh__error(L, CFH_ERR_RUNTIME, "%s: block %s warp %u accessed columns %u..%u of lanes "
                 "%u..%u, but column %u is not allocated (allocated: %s)", op, b, w, col,
                 col + n - 1, base, base + 31, c, cfh__allocated(cols, sizeof cols, L));
      cfh__stop(L);
    }
  for (unsigned int l = 0; l < 32; l++) {
    uint32_t *cell = L->tmem + (base + l) * CFH_TMEM_COLS + col;
    if (W->op == CFH_OP_ST) memcpy(cell, W->lane[l].ptr, n * sizeof(uint32_t));
    else memcpy(W->lane[l].ptr, cell, n * sizeof(uint32_t));
  }
}

CFH_FN void cfh__tmem_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  cfh__tmem_uniform(L, w, W);
  switch (W->op) {
  case CFH_OP_ALLOC: cfh__tmem_alloc(L, w, W); break;
  case CFH_OP_DEALLOC: cfh__tmem_dealloc(L, w, W); break;
  case CFH_OP_RELINQUISH: L->relinquished = true; break;
  default: cfh__tmem_ldst(L, w, W); break;
  }
}

/* ---- what generated code calls ----------------------------------------------------- */

/* TMEM addresses: lane in the upper 16 bits, column in the lower 16. */
CFH_INLINE uint32_t cfh_tmem_addr(uint32_t lane, uint32_t col) { return lane << 16 | col; }
CFH_INLINE uint32_t cfh_tmem_add(uint32_t taddr, uint32_t lane, uint32_t col) {
  return taddr + (lane << 16) + col;
}

CFH_INLINE void cfh__tmem_collective(int op, uint32_t taddr, uint32_t n, void *ptr) {
  cfh_lane_args a = {taddr, n, ptr, 0, NULL};
  cfh__warp_collective(op, 0xFFFFFFFFu, &a);
}

/* tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem_slot], ncols */
CFH_INLINE void cfh_tcgen05_alloc(uint32_t *smem_slot, uint32_t ncols) {
  cfh__tmem_collective(CFH_OP_ALLOC, 0, ncols, smem_slot);
}
/* tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned */
CFH_INLINE void cfh_tcgen05_relinquish_alloc_permit(void) {
  cfh__tmem_collective(CFH_OP_RELINQUISH, 0, 0, NULL);
}
/* tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols */
CFH_INLINE void cfh_tcgen05_dealloc(uint32_t taddr, uint32_t ncols) {
  cfh__tmem_collective(CFH_OP_DEALLOC, taddr, ncols, NULL);
}
/* tcgen05.ld.sync.aligned.32x32b.x<n>.b32 {regs[0..n-1]}, [taddr] */
CFH_INLINE void cfh_tcgen05_ld_32x32b(uint32_t taddr, int n, uint32_t *regs) {
  cfh__tmem_collective(CFH_OP_LD, taddr, (uint32_t)n, regs);
}
/* tcgen05.st.sync.aligned.32x32b.x<n>.b32 [taddr], {regs[0..n-1]} */
CFH_INLINE void cfh_tcgen05_st_32x32b(uint32_t taddr, int n, const uint32_t *regs) {
  cfh__tmem_collective(CFH_OP_ST, taddr, (uint32_t)n, (void *)(uintptr_t)regs);
}
/* tcgen05.wait::ld / wait::st: emulated loads and stores are complete on return. */
CFH_INLINE void cfh_tcgen05_wait_ld(void) {}
CFH_INLINE void cfh_tcgen05_wait_st(void) {}

#endif
