/* host_tcgen05.h: Blackwell's tcgen05.mma on cfuser's host backend; a part of the host
 * runtime, prepended after host_wgmma.h (it converts half and bfloat16, reads tensor
 * memory as host_tmem.h keeps it and arrives on host_mbarrier.h's barriers).
 *
 * tcgen05.mma.cta_group::1.kind::f16 [d], a-desc, b-desc, idesc, enable-input-d: one
 * thread issues it; D (M x N float, M 128) is tensor memory from address d (lane 0, a
 * column), row m in lane m and column n in column col(d) + n; D = A x B (+ D when
 * enable-input-d), A (M x 16) and B (16 x N) read from shared memory through 64-bit
 * descriptors, decoded here as the hardware does (PTX ISA, "Shared Memory Descriptor"):
 *   bits 0..13 start >> 4, 16..29 LBO >> 4, 32..45 SBO >> 4, 46..48 the fixed 0b001,
 *   49..51 base offset, 52 LBO mode, 53..60 zero, 61..63 the layout: 2 128-byte, 4
 *   64-byte, 6 32-byte swizzle (0 none and 1 128-byte with 32-byte atoms: not emulated);
 *   in 16-byte chunks, W the chunks of a swizzle row (8, 4, 2), element (mn, k) at
 *     K-major  ((8, m), (8 elements, 2)) : ((W chunks, SBO), (1 element, 1 chunk))
 *     MN-major ((8, W, m), (8, k)) : ((1 element, 1 chunk, LBO), (W chunks, SBO))
 *   from the start, the byte address's bits 4.. XORed with its bits 7.. (log2 W of them),
 *   on the address in the block's shared memory (1024-byte aligned, as on CUDA);
 * and the 32-bit instruction descriptor (PTX ISA, "Instruction descriptor", kind::f16):
 *   bits 4..5 D's format (1: f32), 7..9 A's and 10..12 B's (0 f16, 1 bf16, the same),
 *   15 and 16 A and B MN-major, 17..22 N >> 3, 24..28 M >> 4; sparsity (0..2), saturate
 *   (3), negation (13, 14), the reserved bits and the .ws shift (30, 31) must be 0 here.
 * tcgen05.commit.cta_group::1.mbarrier::arrive::one [bar]: the barrier gets one arrival
 * once every tcgen05.mma issued before the commit is done.
 * Key decision: as cp.async (host_async.h), wgmma (host_wgmma.h) and TMA (host_tma.h), the
 * instructions complete as late as the program allows: issuing one queues it (its fields
 * checked), a commit queues its arrival behind them, and only a thread's wait on the
 * commit's barrier (cfh_mbarrier_wait_parity) performs them, in issue order, reading the
 * operands from shared memory then and writing tensor memory, and then arrives (a commit
 * is performed at once when a thread already waits on its barrier). So a kernel that
 * refills a stage before the wait, or reads the accumulator (tcgen05.ld) before it, differs
 * from the evaluator; instructions no wait ever completed are an error at the block's end.
 * The operand reads are recorded by the race detector (host_race.h) as the issuing
 * thread's, in the epoch of the wait. Accumulation order (the hardware's is unspecified):
 * each element's 16 products (exact in float) added in increasing k, in float, after D. */
#ifndef CFH_HOST_TCGEN05_H
#define CFH_HOST_TCGEN05_H
#ifndef CFH_HOST_WGMMA_H
#error "host_tcgen05.h goes after host_wgmma.h"
#endif

enum { CFH_TC05_MAX = 256 /* instructions and commits a block may have queued */, CFH_TC05_M = 128 };

/* A queued instruction (bar NULL) or commit (its barrier). */
typedef struct cfh_tc05_op {
  uint64_t da, db;
  uint64_t *bar;
  uint32_t d, idesc;
  unsigned int thread; /* the issuing thread's linear id + 1 (the race detector's) */
  bool accumulate;
} cfh_tc05_op;

typedef struct cfh_tc05_q {
  cfh_tc05_op op[CFH_TC05_MAX];
  unsigned int n;
  float a[CFH_TC05_M * 16], b[256 * 16]; /* the operands of the instruction being performed */
} cfh_tc05_q;

CFH_FN void cfh__tc05_block_start(cfh_launch_state *L) {
  if (L->tc05) L->tc05->n = 0;
}

/* A block's end: an instruction no wait completed is an error. */
CFH_FN void cfh__tc05_block_end(cfh_launch_state *L) {
  char bd[48];
  for (unsigned int i = 0; L->tc05 && i < L->tc05->n; i++)
    if (!L->tc05->op[i].bar) {
      cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.mma: block %s: %u tcgen05 operations issued and never completed "
                 "(no thread waited on the mbarrier of a tcgen05.commit after them): the accumulator is undefined",
                 cfh__dim(bd, L->bid), L->tc05->n);
      return;
    }
}

/* ---- the descriptors ------------------------------------------------------------------- */

/* The swizzle's log2 W of a descriptor's layout type, 0 for one not emulated. */
CFH_INLINE uint32_t cfh__tc05_bits(uint64_t desc) {
  uint32_t t = (uint32_t)(desc >> 61);
  return t == 2 ? 3 : t == 4 ? 2 : t == 6 ? 1 : 0;
}

/* The byte address in shared memory of element (mn, k) of the operand desc describes. */
CFH_FN uint32_t cfh_tcgen05_address(uint64_t desc, uint32_t mn, uint32_t k, int mn_major) {
  uint32_t start = (uint32_t)(desc & 0x3FFFu) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFFu) << 4;
  uint32_t sbo = (uint32_t)((desc >> 32) & 0x3FFFu) << 4, bits = cfh__tc05_bits(desc), w = 1u << bits, off;
  if (mn_major) off = (mn % (8 * w)) / 8 * 16 + mn % 8 * 2 + mn / (8 * w) * lbo + k % 8 * 16 * w + k / 8 * sbo;
  else off = mn % 8 * 16 * w + mn / 8 * sbo + k / 8 * 16 + k % 8 * 2;
  uint32_t addr = start + off;
  return addr ^ (((addr >> 7) & (w - 1u)) << 4);
}

/* Why desc is not one the emulation decodes, or NULL. */
CFH_FN const char *cfh__tc05_desc_error(uint64_t desc) {
  if (((desc >> 46) & 7u) != 1u) return "lacks the fixed 0b001 at bits 46..48";
  if ((desc >> 53) & 0xFFu) return "has bits 53..60 set (fixed zero)";
  if ((desc >> 49) & 7u) return "has a base offset, which is not emulated";
  if ((desc >> 52) & 1u) return "has the absolute LBO mode, which is not emulated";
  if (!cfh__tc05_bits(desc)) return "has no swizzle or the 32-byte-atom one, which are not emulated";
  return NULL;
}

/* Why idesc is not a kind::f16 descriptor of M 128 the emulation runs, or NULL. */
CFH_FN const char *cfh__tc05_idesc_error(uint32_t idesc) {
  uint32_t n = ((idesc >> 17) & 0x3Fu) << 3, m = ((idesc >> 24) & 0x1Fu) << 4;
  if (idesc & 0xFu) return "asks for sparsity or saturation, which kind::f16 with f32 D does not have here";
  if (((idesc >> 4) & 3u) != 1u) return "has a D format other than f32 (1)";
  if (((idesc >> 7) & 7u) > 1u || ((idesc >> 10) & 7u) != ((idesc >> 7) & 7u))
    return "has A and B formats other than two f16 (0) or two bf16 (1)";
  if (idesc & (1u << 6 | 1u << 13 | 1u << 14 | 1u << 23 | 1u << 29 | 3u << 30))
    return "has a negation, a reserved bit or a .ws shift set";
  if (m != CFH_TC05_M) return "has an M other than 128 (M 64 is not emulated)";
  if (n < 16 || n > 256 || n % 16) return "has an N that m128nNk16 does not have (a multiple of 16 up to 256)";
  return NULL;
}

/* The calling thread's check of an instruction's fields, stopping the launch on an error. */
CFH_FN void cfh__tc05_check(cfh_launch_state *L, uint32_t d, uint64_t da, uint64_t db, uint32_t idesc) {
  const char *why = cfh__tc05_idesc_error(idesc);
  cfh_check(!why, "tcgen05.mma: the instruction descriptor 0x%08x %s", idesc, why);
  why = cfh__tc05_desc_error(da);
  cfh_check(!why, "tcgen05.mma: operand A's descriptor 0x%016llx %s", (unsigned long long)da, why);
  why = cfh__tc05_desc_error(db);
  cfh_check(!why, "tcgen05.mma: operand B's descriptor 0x%016llx %s", (unsigned long long)db, why);
  uint32_t n = ((idesc >> 17) & 0x3Fu) << 3, col = d & 0xFFFFu;
  cfh_check(d >> 16 == 0, "tcgen05.mma: D at tensor-memory lane %u: an M of 128 takes lanes 0..127", d >> 16);
  for (uint32_t c = col; c < col + n; c++) {
    char cols[160];
    cfh_check(c < CFH_TMEM_COLS && L->col_owner[c], "tcgen05.mma: D's columns %u..%u: column %u is not allocated "
              "(allocated: %s)", col, col + n - 1, c, cfh__allocated(cols, sizeof cols, L));
  }
}

/* ---- performing ------------------------------------------------------------------------ */

/* Element (mn, k) of an operand as float, its read recorded as thread t's. */
CFH_FN float cfh__tc05_load(cfh_launch_state *L, uint64_t desc, uint32_t mn, uint32_t k, int mn_major, int bf16,
                            unsigned int t, char op) {
  uint32_t a = cfh_tcgen05_address(desc, mn, k, mn_major);
  char bd[48];
  if (a + 2 > L->smem_bytes) {
    cfh__error(L, CFH_ERR_RUNTIME, "tcgen05.mma: block %s: operand %c's descriptor 0x%016llx reads byte %u, outside "
               "the block's %zu bytes of shared memory", cfh__dim(bd, L->bid), op, (unsigned long long)desc, a,
               L->smem_bytes);
    cfh__stop(L);
  }
  if (L->race) cfh__race_cell(L, &L->race[a], t, false, L->smem, L->smem + a, 2, "tcgen05.mma operand");
  uint16_t x;
  memcpy(&x, L->smem + a, 2);
  return bf16 ? __bfloat162float((__nv_bfloat16){x}) : __half2float((__half){x});
}

/* One instruction: D (128 x N) = A x B (+ D), the operands read from shared memory now. */
CFH_FN void cfh__tc05_perform(cfh_launch_state *L, cfh_tc05_q *q, const cfh_tc05_op *o) {
  uint32_t n = ((o->idesc >> 17) & 0x3Fu) << 3, col = o->d & 0xFFFFu;
  int bf16 = (o->idesc >> 7) & 1u, ta = (o->idesc >> 15) & 1u, tb = (o->idesc >> 16) & 1u;
  for (uint32_t m = 0; m < CFH_TC05_M; m++)
    for (uint32_t k = 0; k < 16; k++) q->a[m * 16 + k] = cfh__tc05_load(L, o->da, m, k, ta, bf16, o->thread, 'A');
  for (uint32_t j = 0; j < n; j++)
    for (uint32_t k = 0; k < 16; k++) q->b[j * 16 + k] = cfh__tc05_load(L, o->db, j, k, tb, bf16, o->thread, 'B');
  for (uint32_t m = 0; m < CFH_TC05_M; m++)
    for (uint32_t j = 0; j < n; j++) {
      uint32_t *cell = L->tmem + m * CFH_TMEM_COLS + col + j;
      float acc = 0.0f;
      if (o->accumulate) memcpy(&acc, cell, 4);
      for (uint32_t k = 0; k < 16; k++) acc += q->a[m * 16 + k] * q->b[j * 16 + k];
      memcpy(cell, &acc, 4);
    }
}

/* Performs, in issue order, every queued operation up to the first commit on bar, which
 * then arrives (cfh_mbarrier_wait_parity asks; nothing when no commit names bar). */
CFH_FN void cfh__tc05_land(uint64_t *bar) {
  cfh_launch_state *L = cfh__L;
  cfh_tc05_q *q = L->tc05;
  unsigned int upto = 0;
  while (q && upto < q->n && q->op[upto].bar != bar) upto++;
  if (!q || upto == q->n) return;
  cfh_tc05_op done[CFH_TC05_MAX];
  unsigned int nd = upto + 1;
  memcpy(done, q->op, nd * sizeof *done);
  memmove(q->op, q->op + nd, (q->n - nd) * sizeof *q->op);
  q->n -= nd;
  for (unsigned int i = 0; i < nd; i++)
    if (done[i].bar) cfh_mbarrier_arrive(done[i].bar);
    else cfh__tc05_perform(L, q, &done[i]);
}

/* Queues one operation of the calling thread. */
CFH_FN void cfh__tc05_queue(cfh_launch_state *L, cfh_tc05_op o) {
  if (!L->tc05 && !(L->tc05 = (cfh_tc05_q *)calloc(1, sizeof *L->tc05))) {
    cfh__error(L, CFH_ERR_NOMEM, "out of memory: the tcgen05 queue");
    cfh__stop(L);
  }
  cfh_check(L->tc05->n < CFH_TC05_MAX, "tcgen05.mma: the block has %d tcgen05 operations queued (the emulation's "
            "limit): commit them and wait on the barrier", CFH_TC05_MAX);
  o.thread = L->cur->linear + 1;
  L->tc05->op[L->tc05->n++] = o;
}

/* ---- what generated code calls ----------------------------------------------------- */

/* tcgen05.mma.cta_group::1.kind::f16 [d], da, db, idesc, accumulate: queued. */
CFH_FN void cfh_tcgen05_mma(uint32_t d, uint64_t da, uint64_t db, uint32_t idesc, int accumulate) {
  cfh_launch_state *L = cfh__L;
  cfh__tc05_check(L, d, da, db, idesc);
  cfh__tc05_queue(L, (cfh_tc05_op){da, db, NULL, d, idesc, 0, accumulate != 0});
}

/* tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar]: queued
 * behind the instructions; performed now when a thread already waits on bar. */
CFH_FN void cfh_tcgen05_commit(uint64_t *bar) {
  cfh_launch_state *L = cfh__L;
  cfh__mbar_offset(bar, "tcgen05.commit");
  cfh__tc05_queue(L, (cfh_tc05_op){0, 0, bar, 0, 0, 0, false});
  for (unsigned int i = 0; i < L->nthreads; i++)
    if (L->fibers[i].state == CFH_AT_MBARRIER && L->fibers[i].wait_bar == bar) {
      cfh__tc05_land(bar);
      break;
    }
}

/* A descriptor: the constant fields or'ed with the start address of p >> 4 (bits 0..13). */
CFH_INLINE uint64_t cfh_tcgen05_desc(uint64_t bits, const void *p) {
  uint32_t a = (uint32_t)((const unsigned char *)p - cfh__L->smem);
  return bits | (uint64_t)((a >> 4) & 0x3FFFu);
}

#endif
