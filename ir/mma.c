/* ir/mma.c: the table of tensor-core instructions (ir/mma.h). Ampere's warp-wide
 * mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: A row-major 16 x 16 (8
 * halves a lane), B column-major 16 x 8 (4 a lane), a float 16 x 8 accumulator (4 a lane);
 * Hopper's warpgroup wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}: A
 * 64 x 16 and B 16 x N read from shared memory through descriptors, a float 64 x N
 * accumulator of N / 2 registers a thread, warp w holding rows 16w.. in mma.sync's C layout
 * repeated every 8 columns (PTX ISA, "Register fragments and shared memory matrix layouts"
 * of wgmma: d[4j + i] at row g + 8 (i / 2), column 8j + 2t + i % 2); Blackwell's
 * tcgen05.mma.cta_group::1.kind::f16 m128nNk16 (N a multiple of 16 up to 256), issued by
 * one thread, A (128 x 16) and B (16 x N) read through shared-memory descriptors and a
 * float 128 x N accumulator in tensor memory, row m in lane m and column n in column n
 * (PTX ISA, "tcgen05 Matrix fragments", layout D for M = 128). Key decision: the fragment layouts are data (coefficients of the
 * lane's group and thread index), so the lowering, the code generators and the tests read
 * one description; the host runtime's emulation (codegen/runtime/host_mma.h) keeps its own
 * copy on purpose: it is the model of the hardware the generated loads are checked
 * against, and a shared mistake would hide itself. */
#include <stdarg.h>
#include <stdio.h>

#include "ir/mma.h"

static const IrMmaInstr instrs[] = {
    {CF_MMA_M16N8K16, "m16n8k16", 16, 8, 16, 32, 80,
     /* A: a0 a1 (g, 2t..2t+1), a2 a3 (g+8, ..), a4 a5 (g, 2t+8..), a6 a7 (g+8, 2t+8..) */
     {8, 1, 0, 0, 2, {0, 0, 8, 8, 0, 0, 8, 8}, {0, 1, 0, 1, 8, 9, 8, 9}},
     /* B (k, n): b0 b1 (2t..2t+1, g), b2 b3 (2t+8.., g) */
     {4, 0, 2, 1, 0, {0, 1, 8, 9}, {0, 0, 0, 0}},
     /* accumulator: c0 c1 (g, 2t..2t+1), c2 c3 (g+8, ..) */
     {4, 1, 0, 0, 2, {0, 0, 8, 8}, {0, 1, 0, 1}},
     8, 2, 0, false},
    {CF_MMA_WGMMA_M64NK16, "m64nNk16", 64, 8, 16, 128, 90,
     {0, 0, 0, 0, 0, {0}, {0}}, {0, 0, 0, 0, 0, {0}, {0}}, /* by descriptor */
     /* accumulator, per 8 columns: as mma.sync's, within the warp's 16 rows */
     {4, 1, 0, 0, 2, {0, 0, 8, 8}, {0, 1, 0, 1}},
     8, 2, 256, false},
    {CF_MMA_TCGEN05_M128NK16, "m128nNk16", 128, 16, 16, 1, 100,
     {0, 0, 0, 0, 0, {0}, {0}}, {0, 0, 0, 0, 0, {0}, {0}}, /* by descriptor */
     {0, 0, 0, 0, 0, {0}, {0}},                             /* in tensor memory */
     1, 1, 256, true},
};

const IrMmaInstr *ir_mma_instr(cf_mma_macro macro) {
  for (size_t i = 0; i < sizeof instrs / sizeof instrs[0]; i++)
    if (instrs[i].macro == macro) return &instrs[i];
  return NULL;
}

bool ir_mma_takes(const IrMmaInstr *in, cf_dtype dt) {
  (void)in;
  return dt == CF_HALF || dt == CF_BFLOAT16;
}

void ir_mma_frag_at(const IrMmaFrag *fr, int lane, int i, int *row, int *col) {
  int g = lane / 4, t = lane % 4;
  *row = fr->row_g * g + fr->row_t * t + fr->row_off[i];
  *col = fr->col_g * g + fr->col_t * t + fr->col_off[i];
}

static bool why_fail(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool why_fail(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return false;
}

/* The input of cast v, when v is a cast of a tensor the instruction takes. */
static Val *cast_source(Val *v, const IrMmaInstr *in) {
  Expr *e = v->def;
  if (!e || ir_op_kind(e->op) != OPK_CAST || e->nin != 1 || e->in[0]->kind != VAL_TV) return NULL;
  return ir_mma_takes(in, e->in[0]->dtype) ? e->in[0] : NULL;
}

static bool is_bcast(Val *tv, int i) { return ID(TV(tv)->logical[i])->iter_type == CF_ITER_BROADCAST; }

bool ir_mma_match(Val *r, const IrMmaInstr *in, int m_root, IrMmaPattern *p, char *why, size_t nwhy, const char *what) {
  const char *rn = TV(r)->display_name;
  p->sum = r->def;
  if (!p->sum || p->sum->op != OP_SUM || r->dtype != CF_FLOAT)
    return why_fail(why, nwhy, "%s: %s is not a float sum (an %s instruction accumulates in float)", what, rn, in->name);
  Val *prod = p->sum->in[0];
  p->mul = prod->def;
  if (!p->mul || p->mul->op != OP_MUL || p->mul->nin != 2 || p->mul->in[0]->kind != VAL_TV ||
      p->mul->in[1]->kind != VAL_TV)
    return why_fail(why, nwhy, "%s: %s sums %s, which is not a mul of two tensors", what, rn, TV(prod)->display_name);
  Val *u = p->mul->in[0], *v = p->mul->in[1], *su = cast_source(u, in), *sv = cast_source(v, in);
  if (!su || !sv || su->dtype != sv->dtype)
    return why_fail(why, nwhy, "%s: the operands of %s are not casts of two half or two bfloat16 tensors (%s takes "
                    "half or bfloat16)", what, TV(prod)->display_name, in->name);
  int n = TV(prod)->nlogical, kk = -1;
  for (int i = 0; i < TV(r)->nroot; i++)
    if (ID(TV(r)->root[i])->iter_type == CF_ITER_REDUCTION) kk = kk < 0 ? i : -2;
  if (kk < 0) return why_fail(why, nwhy, "%s: %s reduces more than one axis", what, rn);
  /* a is the operand that iterates the M axis (b broadcasts it) */
  if (m_root < 0 || m_root >= n || is_bcast(u, m_root) == is_bcast(v, m_root))
    return why_fail(why, nwhy, "%s: %s's M axis is not one of its root axes that exactly one operand of %s "
                    "broadcasts", what, rn, TV(prod)->display_name);
  bool swap = is_bcast(u, m_root);
  p->a = swap ? v : u, p->b = swap ? u : v;
  p->x = swap ? sv : su, p->y = swap ? su : sv;
  p->k_axis = kk;
  return true;
}

int ir_mma_root_axes(Val *r, Val *id, int *out, int max) {
  for (int i = 0; i < TV(r)->nroot; i++)
    if (TV(r)->root[i] == id) {
      if (max < 1) return -1;
      out[0] = i;
      return 1;
    }
  if (id->def && id->def->op == OP_SPLIT) return ir_mma_root_axes(r, id->def->in[0], out, max);
  if (!id->def || id->def->op != OP_MERGE) return -1;
  int n = ir_mma_root_axes(r, id->def->in[0], out, max);
  int m = n < 0 ? -1 : ir_mma_root_axes(r, id->def->in[1], out + n, max - n);
  return m < 0 ? -1 : n + m;
}

int ir_mma_root_axis(Val *r, Val *id) {
  int roots[CF_MAX_RANK + 1];
  int n = ir_mma_root_axes(r, id, roots, CF_MAX_RANK + 1);
  return n > 0 ? roots[n - 1] : -1;
}
