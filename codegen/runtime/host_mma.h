/* host_mma.h: the tensor-core instructions of cfuser's host backend; a part of the host
 * runtime, prepended after host_tmem.h.
 *
 * mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 is a warp collective:
 * through host_runtime.h's rendezvous each lane parks its fragments (the generated code
 * passes the operand elements widened to float, exact for half and bfloat16, and the
 * addresses of its four accumulator registers), and the last lane to arrive calls
 * cfh__mma_execute, which gathers the warp's A (16 x 16), B (16 x 8) and C (16 x 8) from
 * the lanes by the PTX ISA's fragment layout (g = lane / 4, t = lane % 4):
 *   A: a0 a1 at (g, 2t + 0..1), a2 a3 at (g + 8, ..), a4 a5 at (g, 2t + 8..9), a6 a7 at (g + 8, ..)
 *   B: b0 b1 at (k = 2t + 0..1, n = g), b2 b3 at (2t + 8..9, g)
 *   C: c0 c1 at (g, 2t + 0..1), c2 c3 at (g + 8, ..)
 * computes D = A x B + C and writes each lane's four registers back. Key decision: this
 * layout is written here again, not read from ir/mma.c's table: it is the model of the
 * hardware that the lowering's fragment loads are checked against, so a mistake in the
 * table shows as a wrong result instead of hiding. Accumulation order (documented, as the
 * hardware's is unspecified): for each element, the 16 products (exact in float) are
 * added to C one by one in increasing k, in float. */
#ifndef CFH_HOST_MMA_H
#define CFH_HOST_MMA_H
#ifndef CFH_HOST_RUNTIME_H
#error "host_mma.h goes after host_runtime.h"
#endif

/* What one lane brings. */
typedef struct cfh_mma_lane {
  const float *a, *b;
  float *const *d;
} cfh_mma_lane;

CFH_FN void cfh__mma_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  float A[16][16], B[16][8], C[16][8];
  char bd[48];
  for (unsigned int l = 0; l < 32; l++)
    if (W->lane[l].taddr != W->lane[0].taddr) {
      cfh__error(L, CFH_ERR_RUNTIME, "mma.sync: block %s warp %u: lane %u issued shape %u, lane 0 shape %u",
                 cfh__dim(bd, L->bid), w, l, W->lane[l].taddr, W->lane[0].taddr);
      cfh__stop(L);
    }
  for (unsigned int l = 0; l < 32; l++) {
    const cfh_mma_lane *m = (const cfh_mma_lane *)W->lane[l].ptr;
    unsigned int g = l / 4, t = l % 4;
    for (unsigned int i = 0; i < 8; i++) A[g + 8 * ((i >> 1) & 1)][2 * t + (i & 1) + 8 * (i >> 2)] = m->a[i];
    for (unsigned int i = 0; i < 4; i++) B[2 * t + (i & 1) + 8 * (i >> 1)][g] = m->b[i];
    for (unsigned int i = 0; i < 4; i++) C[g + 8 * (i >> 1)][2 * t + (i & 1)] = *m->d[i];
  }
  for (unsigned int r = 0; r < 16; r++)
    for (unsigned int c = 0; c < 8; c++)
      for (unsigned int k = 0; k < 16; k++) C[r][c] += A[r][k] * B[k][c];
  for (unsigned int l = 0; l < 32; l++) {
    const cfh_mma_lane *m = (const cfh_mma_lane *)W->lane[l].ptr;
    unsigned int g = l / 4, t = l % 4;
    for (unsigned int i = 0; i < 4; i++) *m->d[i] = C[g + 8 * (i >> 1)][2 * t + (i & 1)];
  }
}

/* mma.sync.aligned.m<m>n<n>k<k>.row.col.f32.*.*.f32 by the calling lane: a and b its
 * operand elements, d its accumulator registers. Only m16n8k16 exists here. */
CFH_INLINE void cfh_mma_sync(int m, int n, int k, const float *a, const float *b, float *const *d) {
  if (m != 16 || n != 8 || k != 16) {
    cfh__error(cfh__L, CFH_ERR_RUNTIME, "mma.sync: shape m%dn%dk%d is not emulated (m16n8k16 is)", m, n, k);
    cfh__stop(cfh__L);
  }
  cfh_mma_lane lane = {a, b, d};
  cfh_lane_args args = {(uint32_t)(m << 16 | n << 8 | k), 0, &lane, 0, NULL};
  cfh__warp_collective(CFH_OP_MMA, 0xFFFFFFFFu, &args);
}

/* ldmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16: what one lane brings. */
typedef struct cfh_ldm_lane {
  const uint16_t *row;                /* the row of its matrix this lane addresses */
  const uint16_t *const *expect;      /* the element each of its 2 num halves must be */
  uint16_t *out;                      /* its 2 num halves, register j's low half first */
} cfh_ldm_lane;

/* Lane l's register j holds matrix j's elements at row l / 4, columns 2 (l % 4) + 0..1
 * (of the transposed matrix with .trans), matrix j's row q being the 16 bytes lane 8j + q
 * addressed (PTX ISA, "Warp-level matrix load instruction: ldmatrix"). The lowering claims
 * those are the fragment's elements: each is checked against the address the lane's
 * per-element load would have read, so a wrong claim is an error naming the lane. */
CFH_FN void cfh__ldmatrix_execute(cfh_launch_state *L, unsigned int w, cfh_warp *W) {
  unsigned int num = W->lane[0].taddr & 0xFF, trans = W->lane[0].taddr >> 8;
  char bd[48];
  for (unsigned int l = 0; l < 32; l++) {
    const cfh_ldm_lane *m = (const cfh_ldm_lane *)W->lane[l].ptr;
    for (unsigned int j = 0; j < num; j++)
      for (unsigned int p = 0; p < 2; p++) {
        unsigned int src = trans ? 8 * j + 2 * (l % 4) + p : 8 * j + l / 4, off = trans ? l / 4 : 2 * (l % 4) + p;
        const uint16_t *got = ((const cfh_ldm_lane *)W->lane[src].ptr)->row + off;
        if (got != m->expect[2 * j + p]) {
          cfh__error(L, CFH_ERR_RUNTIME, "ldmatrix.x%u%s: block %s warp %u lane %u register %u half %u gets the "
                     "element %td elements away from the one its fragment needs", num, trans ? ".trans" : "",
                     cfh__dim(bd, L->bid), w, l, j, p, got - m->expect[2 * j + p]);
          cfh__stop(L);
        }
        m->out[2 * j + p] = *got;
      }
  }
}

/* The calling lane's part of ldmatrix: row its row address (16 bytes, 16-byte aligned),
 * expect the elements its registers must receive, out where they go. */
CFH_INLINE void cfh_ldmatrix(int num, int trans, const void *row, const void *const *expect, void *out) {
  if ((uintptr_t)row % 16) {
    cfh__error(cfh__L, CFH_ERR_RUNTIME, "ldmatrix: a row address is not 16-byte aligned");
    cfh__stop(cfh__L);
  }
  cfh_ldm_lane lane = {(const uint16_t *)row, (const uint16_t *const *)expect, (uint16_t *)out};
  cfh_lane_args args = {(uint32_t)(num | trans << 8), 0, &lane, 0, NULL};
  cfh__warp_collective(CFH_OP_LDMATRIX, 0xFFFFFFFFu, &args);
}

#endif
