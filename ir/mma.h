/* ir/mma.h: the tensor-core instructions cfuser can run a sum of a product as, one row of
 * a table each (ir/mma.c): the instruction's tile shape M x N x K, the operand and
 * accumulator dtypes, the architecture it needs, and each operand's fragment layout (which
 * element of the tile lane l's register element i holds). The scheduling call cf_mma_tile
 * (scheduler/mma_tile.c), the lowering pass (lower/mma.c) and both code generators read
 * the row; nothing else knows an instruction's shape. Rows: mma.sync (sm_80), wgmma
 * (sm_90a) and tcgen05.mma (sm_100a, the accumulator in tensor memory). */
#ifndef CFUSER_IR_MMA_H
#define CFUSER_IR_MMA_H

#include "ir/ir.h"

enum { IR_MMA_MAX_FRAG = 8 }; /* the most elements a lane holds of one operand */

/* Element i of lane l (g = l / 4, t = l % 4 its group and thread in the group) holds the
 * tile element (row, col) = (row_g * g + row_t * t + row_off[i], col_g * g + col_t * t +
 * col_off[i]); A is M x K, B is K x N, the accumulator M x N (PTX ISA, "Matrix
 * Fragments for mma.m16n8k16 with floating point type"). */
typedef struct IrMmaFrag {
  int n;
  int row_g, row_t, col_g, col_t;
  int row_off[IR_MMA_MAX_FRAG], col_off[IR_MMA_MAX_FRAG];
} IrMmaFrag;

typedef struct IrMmaInstr {
  cf_mma_macro macro;
  const char *name;   /* "m16n8k16" */
  int m, n, k;        /* the tile */
  int lanes;          /* threads issuing it together: a warp */
  int min_sm;         /* 80: sm_80 and later */
  IrMmaFrag a, b, acc;
  /* The accumulator's layout as a schedule: M split by acc_m_inner (rows of one lane
   * group), N by acc_n_inner (adjacent columns of one lane); cf_mma_tile turns [M, N] into
   * [lane{M/acc_m_inner... }, M-registers, N-registers] with it. */
  int acc_m_inner, acc_n_inner;
  /* 0: N is n. Else N is the N tile's extent, a multiple of n (8) up to n_max (wgmma's
   * m64nNk16): the accumulator is `acc` repeated N / n times along N, and the operands come
   * from shared memory through matrix descriptors (a and b have no per-lane fragment). */
  int n_max;
  /* Blackwell's tcgen05.mma (m128nNk16, N a multiple of 16): the accumulator lives in
   * tensor memory (row m in lane m, column n in column n), the operands come from shared
   * memory through descriptors, and one thread issues it (lanes 1). */
  bool tmem_acc;
} IrMmaInstr;

/* Whether the operands come from shared memory through descriptors (wgmma, tcgen05.mma). */
static inline bool ir_mma_by_descriptor(const IrMmaInstr *in) { return in->n_max > 0; }
/* Whether in is a warpgroup instruction (wgmma: 128 threads, operands by descriptor). */
static inline bool ir_mma_is_wgmma(const IrMmaInstr *in) { return in->n_max > 0 && !in->tmem_acc; }
/* Whether in is tcgen05.mma (one thread issues it, the accumulator in tensor memory). */
static inline bool ir_mma_is_tcgen05(const IrMmaInstr *in) { return in->tmem_acc; }

/* The row of macro, or NULL for an unknown one. */
const IrMmaInstr *ir_mma_instr(cf_mma_macro macro);
/* Whether the instruction multiplies operands of dtype dt (half, bfloat16). */
bool ir_mma_takes(const IrMmaInstr *in, cf_dtype dt);
/* The row and column of element i of lane `lane` in fragment fr. */
void ir_mma_frag_at(const IrMmaFrag *fr, int lane, int i, int *row, int *col);

/* The product an instruction computes: r = sum(mul(a, b), K) with a = cast(x), b = cast(y),
 * x and y of one dtype the instruction takes, r of its accumulator dtype (float). a
 * iterates M and broadcasts N, b the reverse (the mul's operands come in either order). */
typedef struct IrMmaPattern {
  Expr *sum, *mul;
  Val *a, *b;     /* the casts' outputs, read by the mul */
  Val *x, *y;     /* what they cast: the operand tiles */
  int k_axis;     /* r's reduced root axis */
} IrMmaPattern;

/* Matches r against the pattern, its M axis being root axis m_root of r; false with a
 * message in why (`what`-prefixed, naming the tensors and the rule) when it does not hold. */
bool ir_mma_match(Val *r, const IrMmaInstr *in, int m_root, IrMmaPattern *p, char *why, size_t nwhy, const char *what);
/* The root axes of r that axis id of r derives from through splits and merges, outer to
 * inner, written to out; their count, or -1 (another transform, or more than max). */
int ir_mma_root_axes(Val *r, Val *id, int *out, int max);
/* The innermost of them (a merged M: a batch of A alone with M), or -1. */
int ir_mma_root_axis(Val *r, Val *id);

#endif
