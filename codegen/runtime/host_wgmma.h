/* host_wgmma.h: Hopper's warpgroup MMA on cfuser's host backend; a part of the host
 * runtime, prepended after host_math.h (it converts half and bfloat16).
 *
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}: the 128 threads of a
 * warpgroup (4 consecutive warps, the first a multiple of 4) compute D (64 x N, float) +=
 * A (64 x 16) x B (16 x N), A and B read from shared memory through 64-bit matrix
 * descriptors, which this file decodes as the hardware does (PTX ISA, "Matrix Descriptor
 * Format", "Shared Memory Matrix Layout"):
 *   bits 0..13 the start address >> 4, 16..29 the leading byte offset (LBO) >> 4, 32..45
 *   the stride byte offset (SBO) >> 4, 49..51 the base offset (0 here), 62..63 the
 *   swizzle: 1 128-byte, 2 64-byte, 3 32-byte rows (0, interleaved, is not emulated);
 *   in 16-byte chunks, with W the chunks of a row (8, 4, 2) and T = 8 16-bit elements a
 *   chunk, element (mn, k) is at chunk
 *     K-major  ((8, m), (T, 2)) : ((W, SBO), (1 element, 1 chunk))
 *     MN-major ((T, W, m), (8, k)) : ((1 element, 1 chunk, LBO), (W chunks, SBO))
 *   from the start, and the byte address's bits 4.. are XORed with its bits 7.. (as many
 *   as the swizzle's rows have chunk bits: 3, 2, 1), the address absolute in the block's
 *   shared memory (its base here is 1024-byte aligned, as the CUDA kernel's is).
 * The accumulator: warp q of the warpgroup holds rows 16q..16q+15; lane l (g = l / 4, t =
 * l % 4) register 4j + i at row 16q + g + 8 (i / 2), column 8j + 2t + i % 2. Each warp is a
 * rendezvous of its own (host_runtime.h's warp collective): its rows depend on A's rows of
 * its own and on all of B. The instruction is asynchronous (PTX ISA, "wgmma.mma_async",
 * "wgmma.commit_group", "wgmma.wait_group"): issuing it queues the warp's quarter in the
 * warp's open group (descriptors checked, the lanes' accumulator addresses kept);
 * commit_group closes the group; wait_group N performs, in issue order, every wgmma of the
 * committed groups but the N newest, reading the operands from shared memory and adding
 * into the accumulator registers then. Key decision: as cp.async's copies (host_async.h),
 * a wgmma completes exactly at the wait that retires it, never earlier (the hardware may
 * read any time in between), so a kernel that overwrites an operand tile or reads the
 * accumulator before waiting differs from the evaluator instead of passing by luck, and
 * one that never waits is an error at the block's end. The reads are recorded by the race
 * detector at the wait. Accumulation order (documented; the hardware's is unspecified):
 * each element's 16 products (exact in float) added to it in increasing k, in float.
 * Key decision: the decode is written here from the PTX ISA's form, not shared with the
 * lowering (lower/mma_wgmma.c), which finds the descriptor from the tiles' indices: a
 * wrong field or swizzle on either side reads other elements, and the kernel then
 * differs from the evaluator. */
#ifndef CFH_HOST_WGMMA_H
#define CFH_HOST_WGMMA_H
#ifndef CFH_HOST_MATH_H
#error "host_wgmma.h goes after host_math.h"
#endif

/* What one lane brings: the two descriptors and its N / 2 accumulator registers. */
typedef struct cfh_wgmma_lane {
  uint64_t da, db;
  float *const *d;
} cfh_wgmma_lane;

/* The byte address in shared memory of element (mn, k) of the operand desc describes. */
CFH_FN uint32_t cfh_wgmma_address(uint64_t desc, uint32_t mn, uint32_t k, int mn_major) {
  uint32_t start = (uint32_t)(desc & 0x3FFFu) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFFu) << 4;
  uint32_t sbo = (uint32_t)((desc >> 32) & 0x3FFFu) << 4, mode = (uint32_t)(desc >> 62);
  uint32_t bits = mode == 1 ? 3 : mode == 2 ? 2 : 1, w = 1u << bits, chunk, elem;
  if (mn_major) {
    chunk = (mn / 8) % w * 1 + (k % 8) * w, elem = mn % 8;
    chunk = chunk * 16 + (mn / (8 * w)) * lbo + (k / 8) * sbo;
  } else {
    chunk = (mn % 8) * w + (k / 8), elem = k % 8;
    chunk = chunk * 16 + (mn / 8) * sbo;
  }
  uint32_t addr = start + chunk + 2 * elem;
  return addr ^ (((addr >> 7) & (w - 1u)) << 4);
}

CFH_FN float cfh__wgmma_load(cfh_launch_state *L, uint64_t desc, uint32_t mn, uint32_t k, int mn_major, int bf16,
                             char op, unsigned int w) {
  uint32_t a = cfh_wgmma_address(desc, mn, k, mn_major);
  char bd[48];
  if ((desc >> 62) == 0 || ((desc >> 49) & 7u) || a + 2 > L->smem_bytes) {
    cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s warp %u: operand %c's descriptor 0x%016llx %s", cfh__dim(bd, L->bid),
               w, op, (unsigned long long)desc, a + 2 > L->smem_bytes ? "reads outside the block's shared memory"
               : "has an interleaved layout or a base offset, which are not emulated");
    cfh__stop(L);
  }
  if (L->race) cfh__smem_record(L, L->smem, L->smem + a, 1, 2, false, "wgmma operand");
  uint16_t x;
  memcpy(&x, L->smem + a, 2);
  return bf16 ? __bfloat162float((__nv_bfloat16){x}) : __half2float((__half){x});
}

/* The shape word each lane passes: N, the dtype and the transpose bits. */
#define CFH_WGMMA_SHAPE(n, bf16, ta, tb) ((uint32_t)(n) | (uint32_t)(bf16) << 9 | (uint32_t)(ta) << 10 | (uint32_t)(tb) << 11)

enum { CFH_WGMMA_MAX = 64 }; /* wgmmas one warp may have issued and not yet waited for */

/* A warp's quarter of an issued wgmma: descriptors, shape, group, and the addresses of
 * every lane's N / 2 accumulator registers (lane l's at acc[l * N / 2 ..]). */
typedef struct cfh_wgmma_op {
  uint64_t da, db;
  uint32_t shape, group;
  float **acc;
} cfh_wgmma_op;

typedef struct cfh_wgmma_q {
  cfh_wgmma_op op[CFH_WGMMA_MAX];
  unsigned int n;    /* issued, not yet performed */
  unsigned int open; /* the group issued wgmmas join (groups before it are committed) */
} cfh_wgmma_q;

/* A block starts with nothing pending (what a failed block left is freed). */
CFH_FN void cfh__wgmma_block_start(cfh_launch_state *L) {
  for (unsigned int w = 0; L->wgmma && w < L->nwarps; w++) {
    for (unsigned int i = 0; i < L->wgmma[w].n; i++) free(L->wgmma[w].op[i].acc);
    L->wgmma[w].n = L->wgmma[w].open = 0;
  }
}

/* A block's end: a wgmma never waited for is an error naming its warp. */
CFH_FN void cfh__wgmma_block_end(cfh_launch_state *L) {
  char bd[48];
  for (unsigned int w = 0; L->wgmma && w < L->nwarps; w++)
    if (L->wgmma[w].n) {
      cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s warp %u: %u wgmma.mma_async issued and never waited for "
                 "(wgmma.wait_group): the accumulator is undefined", cfh__dim(bd, L->bid), w, L->wgmma[w].n);
      return;
    }
}

/* A descriptor the emulation decodes (a swizzle mode, no base offset), else an error. */
CFH_FN void cfh__wgmma_check_desc(cfh_launch_state *L, uint64_t desc, char op, unsigned int w) {
  if ((desc >> 62) != 0 && !((desc >> 49) & 7u)) return;
  char bd[48];
  cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s warp %u: operand %c's descriptor 0x%016llx has an interleaved "
             "layout or a base offset, which are not emulated", cfh__dim(bd, L->bid), w, op, (unsigned long long)desc);
  cfh__stop(L);
}

/* Issue: the lanes agree on shape and descriptors; the warp's quarter is queued. */
CFH_FN void cfh__wgmma_issue(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  uint32_t shape = W->lane[0].taddr, n = shape & 0x1FFu;
  const cfh_wgmma_lane *l0 = (const cfh_wgmma_lane *)W->lane[0].ptr;
  char bd[48];
  for (unsigned int l = 1; l < 32; l++) {
    const cfh_wgmma_lane *m = (const cfh_wgmma_lane *)W->lane[l].ptr;
    if (W->lane[l].taddr != shape || m->da != l0->da || m->db != l0->db) {
      cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s warp %u: lane %u issued another shape or descriptor than lane 0",
                 cfh__dim(bd, L->bid), w, l);
      cfh__stop(L);
    }
  }
  if (L->nthreads % 128) {
    cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s has %u threads, not whole warpgroups of 128", cfh__dim(bd, L->bid),
               L->nthreads);
    cfh__stop(L);
  }
  cfh__wgmma_check_desc(L, l0->da, 'A', w);
  cfh__wgmma_check_desc(L, l0->db, 'B', w);
  if (!L->wgmma) L->wgmma = (cfh_wgmma_q *)calloc(L->nwarps, sizeof *L->wgmma);
  cfh_wgmma_q *q = L->wgmma ? &L->wgmma[w] : NULL;
  float **acc = q && q->n < CFH_WGMMA_MAX ? (float **)malloc(32 * (n / 2) * sizeof *acc) : NULL;
  if (!acc) {
    if (q && q->n == CFH_WGMMA_MAX)
      cfh__error(L, CFH_ERR_RUNTIME, "wgmma: block %s warp %u has %d wgmma.mma_async in flight (the emulation's limit)",
                 cfh__dim(bd, L->bid), w, CFH_WGMMA_MAX);
    else cfh__error(L, CFH_ERR_NOMEM, "out of memory: wgmma queues");
    cfh__stop(L);
  }
  for (unsigned int l = 0; l < 32; l++)
    memcpy(acc + l * (n / 2), ((const cfh_wgmma_lane *)W->lane[l].ptr)->d, (n / 2) * sizeof *acc);
  q->op[q->n++] = (cfh_wgmma_op){l0->da, l0->db, shape, q->open, acc};
}

/* Performs one queued wgmma: the warp's rows of D += A x B, read from shared memory now. */
CFH_FN void cfh__wgmma_perform(cfh_launch_state *L, unsigned int w, const cfh_wgmma_op *o) {
  uint32_t n = o->shape & 0x1FFu;
  int bf16 = (o->shape >> 9) & 1, ta = (o->shape >> 10) & 1, tb = (o->shape >> 11) & 1;
  unsigned int q = w % 4;
  for (unsigned int l = 0; l < 32; l++) {
    float *const *d = o->acc + l * (n / 2);
    unsigned int g = l / 4, t = l % 4;
    for (unsigned int i = 0; i < n / 2; i++) {
      unsigned int row = 16 * q + g + 8 * (i % 4 / 2), col = 8 * (i / 4) + 2 * t + i % 2;
      float acc = *d[i];
      for (unsigned int k = 0; k < 16; k++)
        acc += cfh__wgmma_load(L, o->da, row, k, ta, bf16, 'A', w) * cfh__wgmma_load(L, o->db, col, k, tb, bf16, 'B', w);
      *d[i] = acc;
    }
  }
}

/* wait_group N: every wgmma of the committed groups but the N newest, in issue order. */
CFH_FN void cfh__wgmma_wait(cfh_launch_state *L, unsigned int w, unsigned int pending) {
  cfh_wgmma_q *q = L->wgmma ? &L->wgmma[w] : NULL;
  unsigned int keep = 0;
  for (unsigned int i = 0; q && i < q->n; i++) {
    cfh_wgmma_op *o = &q->op[i];
    if (o->group + pending < q->open) {
      cfh__wgmma_perform(L, w, o);
      free(o->acc);
    } else {
      q->op[keep++] = *o;
    }
  }
  if (q) q->n = keep;
}

CFH_FN void cfh__wgmma_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  if (W->op == CFH_OP_WGMMA) cfh__wgmma_issue(L, w, W);
  else if (W->op == CFH_OP_WGMMA_COMMIT && L->wgmma) L->wgmma[w].open++;
  else if (W->op == CFH_OP_WGMMA_WAIT) cfh__wgmma_wait(L, w, W->lane[0].taddr);
}

/* wgmma.mma_async m64n<n>k16 by the calling thread: its descriptors and accumulator
 * registers (n / 2 of them), queued in its warp's open group. The fence is a no-op here. */
CFH_INLINE void cfh_wgmma(int n, int bf16, int trans_a, int trans_b, uint64_t da, uint64_t db, float *const *d) {
  if (n < 8 || n > 256 || n % 8) {
    cfh__error(cfh__L, CFH_ERR_RUNTIME, "wgmma: shape m64n%dk16 does not exist (N a multiple of 8 up to 256)", n);
    cfh__stop(cfh__L);
  }
  cfh_wgmma_lane lane = {da, db, d};
  cfh_lane_args args = {CFH_WGMMA_SHAPE(n, bf16, trans_a, trans_b), 0, &lane, 0, NULL};
  cfh__warp_collective(CFH_OP_WGMMA, 0xFFFFFFFFu, &args);
}

/* wgmma.commit_group and wgmma.wait_group N, by every lane of the warp. */
CFH_INLINE void cfh_wgmma_commit(void) {
  cfh_lane_args args = {0, 0, NULL, 0, NULL};
  cfh__warp_collective(CFH_OP_WGMMA_COMMIT, 0xFFFFFFFFu, &args);
}

CFH_INLINE void cfh_wgmma_wait(unsigned int pending) {
  cfh_lane_args args = {pending, 0, NULL, 0, NULL};
  cfh__warp_collective(CFH_OP_WGMMA_WAIT, 0xFFFFFFFFu, &args);
}

/* A descriptor: the constant fields or'ed with the start address of p >> 4 (bits 0..13). */
CFH_INLINE uint64_t cfh_wgmma_desc(uint64_t bits, const void *p) {
  uint32_t a = (uint32_t)((const unsigned char *)p - cfh__L->smem);
  return bits | (uint64_t)((a >> 4) & 0x3FFFu);
}

#endif
