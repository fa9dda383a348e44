/* lower/mma.c: the tensor-core pass. A sum whose last three loop axes are on CF_PT_MMA
 * (cf_mma_tile: [lane (threadIdx.x), M-registers, N-registers, K]) ran so far as ordinary
 * loops: for M-regs { for N-regs { for K { a = cast(x); b = cast(y); p = a * b; r += p } } }
 * inside the lane's thread loop. This pass replaces that loop nest by one KN_MMA node: the
 * warp's instruction, with the lane's fragment of each operand read from the tiles x and y
 * and the accumulator's registers of r, each an access computed from the ops' own indices.
 *
 * Requires: indices, predicates, syncs (runs after the sync pass, which judged the tile
 * reads on the ops as they were). Establishes: no op runs in an MMA loop; each KN_MMA
 * reads, for element i of its lane's A fragment at tile position (m, k) of the instruction
 * (ir/mma.h's layout), the index the cast of x computed, with the loop variables and the
 * lane index replaced by those of (m, k): M-regs = m / acc_m_inner, lane = (m % acc_m_inner)
 * * (N / acc_n_inner) + (n / acc_n_inner), N-regs = n % acc_n_inner, K = k. The cast's
 * predicate, substituted alike, is the element's mask: out of bounds of M or K the element
 * is 0; a zero-filled tile (KTensor.zero_filled: a circular-buffered one, predicate.c) is
 * 0 there already and its elements get no mask; B likewise over (k, n); the
 * accumulator is never guarded (rows and columns out of bounds are computed and not stored).
 * Key decision: the instruction is the loop nest's replacement, not a fusion op: the
 * evaluator, the schedulers and every pass before this one see the plain product, so the
 * matmul it computes is checked against the evaluator like any other kernel; the fragment
 * mapping is derived from the cast ops' indices, so a wrong layout fails on the host
 * backend, whose emulation (codegen/runtime/host_mma.h) follows the hardware's.
 * tcgen05.mma (a sum in tensor memory, its [M{128}, N, K{16}] on MMA): one KN_MMA whose
 * accumulator is r's element (0, 0) in tensor memory and whose operands are read through
 * descriptors found as wgmma's are; lower/mma_tcgen05.c validates it, finishes the node and
 * adds its commit and mbarrier wait. */
#include <string.h>

#include "lower/lower.h"

/* What the nest under an MMA loop holds: the four ops and the conjunction of the ifs
 * around each (NULL: none). */
typedef struct MmaNest {
  KNode *op[4];
  KExpr *cond[4];
} MmaNest;

enum { NEST_CAST_A, NEST_CAST_B, NEST_MUL, NEST_SUM };

/* Loop variables and the lane index replaced by expressions of the lane's own index. */
typedef struct Subst {
  const char *var[3]; /* M-regs, N-regs, K */
  KExpr *val[3];
  KExpr *lane;
} Subst;

static KExpr *subst(Arena *a, KExpr *e, const Subst *s) {
  if (!e) return NULL;
  switch (e->kind) {
  case KX_VAR:
    for (int i = 0; i < 3; i++)
      if (s->var[i] && !strcmp(e->name, s->var[i])) return s->val[i];
    return e;
  case KX_THREAD: return !e->is_dim && e->pt == CF_PT_TIDX ? s->lane : e;
  case KX_BINARY: return kx_bin(a, e->op, subst(a, e->a, s), subst(a, e->b, s));
  case KX_SELECT: return kx_select(a, subst(a, e->a, s), subst(a, e->b, s), subst(a, e->c, s));
  case KX_BLOCK_ALL: return kx_block_all(a, subst(a, e->a, s));
  default: return e;
  }
}

typedef struct MmaCtx {
  LowerCtx *c;
  const IrMmaInstr *in;
  IrMmaPattern p;
  const char *var[3];
} MmaCtx;

/* The substitution for tile position (m, n, k) of the instruction, each an expression of
 * the lane index (NULL m or n: the operand does not depend on it, 0). mma.sync: M-regs =
 * m / 8, N-regs = n % 2, lane = (m % 8) (N / 2) + n / 2; wgmma (mma_tile.c's layout):
 * M-regs = m / 8 % 2, N-regs = 2 (n / 8) + n % 2, lane = 32 (m / 16) + 4 (m % 8) + n % 8 / 2. */
static Subst at(MmaCtx *x, KExpr *m, KExpr *n, KExpr *k) {
  Arena *a = x->c->a;
  KExpr *zero = kx_const(a, 0);
  KExpr *mi = kx_const(a, x->in->acc_m_inner), *ni = kx_const(a, x->in->acc_n_inner);
  m = m ? m : zero, n = n ? n : zero;
  if (ir_mma_is_tcgen05(x->in)) /* the M, N and K loops at (m, n, k) themselves */
    return (Subst){{x->var[0], x->var[1], x->var[2]}, {m, n, k}, kx_thread(a, CF_PT_TIDX, false)};
  if (ir_mma_is_wgmma(x->in)) {
    KExpr *c2 = kx_const(a, 2), *c8 = kx_const(a, 8);
    Subst s = {{x->var[0], x->var[1], x->var[2]},
               {kx_bin(a, OP_MOD, kx_bin(a, OP_DIV, m, c8), c2),
                kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, kx_bin(a, OP_DIV, n, c8), c2), kx_bin(a, OP_MOD, n, c2)), k},
               NULL};
    KExpr *warp = kx_bin(a, OP_MUL, kx_bin(a, OP_DIV, m, kx_const(a, 16)), kx_const(a, 32));
    KExpr *g = kx_bin(a, OP_MUL, kx_bin(a, OP_MOD, m, c8), kx_const(a, 4));
    s.lane = kx_bin(a, OP_ADD, kx_bin(a, OP_ADD, warp, g), kx_bin(a, OP_DIV, kx_bin(a, OP_MOD, n, c8), c2));
    return s;
  }
  KExpr *lanes_n = kx_const(a, x->in->n / x->in->acc_n_inner);
  Subst s = {{x->var[0], x->var[1], x->var[2]}, {kx_bin(a, OP_DIV, m, mi), kx_bin(a, OP_MOD, n, ni), k}, NULL};
  s.lane = kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, kx_bin(a, OP_MOD, m, mi), lanes_n), kx_bin(a, OP_DIV, n, ni));
  return s;
}

/* Row and column of element i of fragment fr for the running lane, as expressions. */
static void frag_pos(Arena *a, const IrMmaFrag *fr, int i, KExpr **row, KExpr **col) {
  KExpr *lane = kx_thread(a, CF_PT_TIDX, false);
  KExpr *g = kx_bin(a, OP_DIV, lane, kx_const(a, 4)), *t = kx_bin(a, OP_MOD, lane, kx_const(a, 4));
  *row = kx_bin(a, OP_ADD, kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, g, kx_const(a, fr->row_g)),
                                  kx_bin(a, OP_MUL, t, kx_const(a, fr->row_t))), kx_const(a, fr->row_off[i]));
  *col = kx_bin(a, OP_ADD, kx_bin(a, OP_ADD, kx_bin(a, OP_MUL, g, kx_const(a, fr->col_g)),
                                  kx_bin(a, OP_MUL, t, kx_const(a, fr->col_t))), kx_const(a, fr->col_off[i]));
}

static KAccess moved(Arena *a, const KAccess *src, const Subst *s) {
  KAccess r = *src;
  r.index = subst(a, src->index, s);
  r.lane = subst(a, src->lane, s), r.col = subst(a, src->col, s); /* tensor memory (tcgen05's accumulator) */
  return r;
}

/* Operand op's tile access at fragment position (row, col) (for mma_ldmatrix.c). */
typedef struct MovedCtx {
  MmaCtx *x;
  const MmaNest *nest;
} MovedCtx;

static KAccess moved_at(void *ctx, int op, KExpr *row, KExpr *col) {
  MovedCtx *mc = ctx;
  Subst s = op ? at(mc->x, NULL, col, row) : at(mc->x, row, NULL, col);
  return moved(mc->x->c->a, &mc->nest->op[op ? NEST_CAST_B : NEST_CAST_A]->u.op.in[0], &s);
}

/* Operand k's element mask: none when its tile is zero-filled (predicate.c: every element
 * of the stage written, zeros out of bounds of M, N or K, so the element read there is 0
 * already), else the cast's predicate at the element's position. */
static KExpr *unless_zero_filled(Arena *a, const MmaNest *nest, int k, const Subst *s) {
  const KTensor *t = nest->op[k]->u.op.in[0].t;
  return t && t->zero_filled ? NULL : subst(a, nest->cond[k], s);
}

/* wgmma's accumulator register i (PTX ISA: d[4j + 2mr + p] at row g + 8 mr, column 8j + 2t
 * + p of the warp's rows) is r's element at M-regs = mr, N-regs = 2j + p: the lane's own. */
static void wgmma_acc(MmaCtx *x, const MmaNest *nest, KNode *n) {
  Arena *a = x->c->a;
  for (int i = 0; i < n->u.mma.nacc; i++) {
    Subst s = {{x->var[0], x->var[1], x->var[2]},
               {kx_const(a, i % 4 / 2), kx_const(a, i / 4 * 2 + i % 2), kx_const(a, 0)},
               kx_thread(a, CF_PT_TIDX, false)};
    n->u.mma.acc[i] = moved(a, &nest->op[NEST_SUM]->u.op.out, &s);
  }
}

/* An instruction reading operands by descriptor reads whole tiles: a tile whose cast is
 * predicated must be zero-filled there. */
static void whole_tiles(MmaCtx *x, const MmaNest *nest) {
  for (int k = NEST_CAST_A; k <= NEST_CAST_B; k++) {
    const KTensor *t = nest->op[k]->u.op.in[0].t;
    if (nest->cond[k] && !(t && t->zero_filled))
      lower_fail(x->c, CF_ERR_INVALID_SCHEDULE, "compile: %s reads whole tiles, but %s is not zero-filled where its "
                 "reads are out of bounds (circular-buffer the tile: its fill writes the zeros)",
                 ir_mma_is_wgmma(x->in) ? "wgmma" : "tcgen05.mma", t ? t->name : "a tile");
  }
}

static KNode *build(MmaCtx *x, const MmaNest *nest, int64_t n_ext) {
  Arena *a = x->c->a;
  KNode *n = ARENA_NEW(a, KNode);
  n->kind = KN_MMA;
  n->u.mma.instr = x->in;
  n->u.mma.in_dtype = x->p.x->dtype;
  const IrMmaInstr *in = x->in;
  n->u.mma.n = (int)n_ext;
  n->u.mma.nacc = ir_mma_is_tcgen05(in) ? 1 : in->acc.n * (int)(n_ext / in->n);
  n->u.mma.acc = ARENA_ARRAY(a, KAccess, n->u.mma.nacc);
  if (ir_mma_by_descriptor(in)) whole_tiles(x, nest);
  if (ir_mma_is_tcgen05(in)) { /* the accumulator's element (0, 0) in tensor memory */
    Subst s = at(x, kx_const(a, 0), kx_const(a, 0), kx_const(a, 0));
    n->u.mma.acc[0] = moved(a, &nest->op[NEST_SUM]->u.op.out, &s);
    return n;
  }
  if (ir_mma_is_wgmma(in)) {
    wgmma_acc(x, nest, n);
    return n;
  }
  for (int i = 0; i < in->a.n; i++) {
    KExpr *m, *k;
    frag_pos(a, &in->a, i, &m, &k);
    Subst s = at(x, m, NULL, k);
    n->u.mma.a[i] = moved(a, &nest->op[NEST_CAST_A]->u.op.in[0], &s);
    n->u.mma.a_mask[i] = unless_zero_filled(a, nest, NEST_CAST_A, &s);
  }
  for (int i = 0; i < in->b.n; i++) {
    KExpr *k, *col;
    frag_pos(a, &in->b, i, &k, &col);
    Subst s = at(x, NULL, col, k);
    n->u.mma.b[i] = moved(a, &nest->op[NEST_CAST_B]->u.op.in[0], &s);
    n->u.mma.b_mask[i] = unless_zero_filled(a, nest, NEST_CAST_B, &s);
  }
  for (int i = 0; i < in->acc.n; i++) {
    KExpr *m, *col;
    frag_pos(a, &in->acc, i, &m, &col);
    Subst s = at(x, m, col, kx_const(a, 0));
    n->u.mma.acc[i] = moved(a, &nest->op[NEST_SUM]->u.op.out, &s);
  }
  return n;
}

/* Collects the ops under `b` and the ifs around each; fails on anything else. */
static void collect(MmaCtx *x, KBlock *b, KExpr *cond, MmaNest *nest, Val *r) {
  LowerCtx *c = x->c;
  const Expr *want[4] = {x->p.a->def, x->p.b->def, x->p.mul, x->p.sum};
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_FOR) collect(x, &n->u.loop.body, cond, nest, r);
    else if (n->kind == KN_IF && !n->u.cond.otherwise.len)
      collect(x, &n->u.cond.then, cond ? kx_bin(c->a, OP_AND, cond, n->u.cond.cond) : n->u.cond.cond, nest, r);
    else if (n->kind == KN_OP && !n->u.op.reduction_init) {
      int k = 0;
      while (k < 4 && n->u.op.src != want[k]) k++;
      if (k == 4)
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s runs inside the MMA loops of %s; only the casts of the "
                   "operands, their product and the sum may (inline nothing else at %s's MMA axes)",
                   TV(n->u.op.src->out[0])->display_name, TV(r)->display_name, TV(r)->display_name);
      nest->op[k] = n, nest->cond[k] = cond;
    } else if (n->kind != KN_COMMENT) {
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the MMA loops of %s hold a %s node (a sync, a block "
                 "reduction or an else branch), which a tensor-core instruction cannot", TV(r)->display_name,
                 n->kind == KN_SYNC ? "sync" : "non-op");
    }
  }
}

/* The instruction whose fragment shape the MMA axes have (M-regs, N-regs, K extents) under
 * a lane axis of `lanes` (wgmma: 2, N / 4, 16 under 128 lanes). */
static const IrMmaInstr *instr_of(const int64_t ext[3], int64_t lanes) {
  for (int m = 0;; m++) {
    const IrMmaInstr *in = ir_mma_instr((cf_mma_macro)m);
    if (!in) return NULL;
    if (lanes != in->lanes || ext[2] != in->k || ir_mma_is_tcgen05(in)) continue; /* tcgen05: lower_tcgen05_validate */
    if (ir_mma_is_wgmma(in) && ext[0] == 2 && ext[1] * 4 % in->n == 0 && ext[1] * 4 <= in->n_max) return in;
    if (!ir_mma_is_wgmma(in) && ext[0] == in->m / in->acc_m_inner && ext[1] == in->acc_n_inner) return in;
  }
}

static bool is_split(const Val *id, int out, const Val *other, int other_pos) {
  const Expr *d = id->def;
  return d && d->op == OP_SPLIT && d->out[out] == id && d->out[other_pos] == other;
}

/* The lane axis is merge(lane groups, lanes of a group), the lane groups the inner part of
 * M-regs' split and the lanes the outer part of N-regs' (cf_mma_tile's layout). */
static bool layout_ok(Val *r, int j0, const IrMmaInstr *in) {
  Val **l = TV(r)->loop;
  const Expr *d = l[j0 - 1]->def;
  if (ir_mma_is_wgmma(in)) { /* lane = merge(merge(w, g), t), N-regs = merge(j, p) */
    const Expr *wg = d && d->op == OP_MERGE ? d->in[0]->def : NULL, *jp = l[j0 + 1]->def;
    return wg && wg->op == OP_MERGE && jp && jp->op == OP_MERGE && is_split(d->in[1], 1, jp->in[0], 0) &&
           is_split(wg->in[0], 0, l[j0], 1);
  }

  return d && d->op == OP_MERGE && d->nin == 2 && is_split(d->in[0], 1, l[j0], 0) && is_split(d->in[1], 0, l[j0 + 1], 1);
}

static void fail_axes(LowerCtx *c, Val *r, const char *rule) {
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: the MMA axes of %s %s (schedule them with cf_mma_tile)",
             lower_tv_str(c, r), rule);
}

/* Checks r's MMA axes and finds its instruction and product. */
static void validate(MmaCtx *x, Val *r) {
  LowerCtx *c = x->c;
  int nl = TV(r)->nloop, j0 = nl - 3, nmma = 0;
  for (int j = 0; j < nl; j++) nmma += ID(TV(r)->loop[j])->ptype == CF_PT_MMA;
  int64_t ext[3] = {0, 0, 0}, lanes, lane_ext = 0;
  for (int j = 0; j < 3 && j0 >= 1; j++)
    if (ID(TV(r)->loop[j0 + j])->ptype != CF_PT_MMA || !ir_scalar_const_value(ID(TV(r)->loop[j0 + j])->extent, &ext[j]))
      ext[0] = -1;
  if (nmma != 3 || j0 < 1 || ext[0] < 0) fail_axes(c, r, "must be its last three loop axes, of constant extents");
  if (j0 >= 1) ir_scalar_const_value(ID(TV(r)->loop[j0 - 1])->extent, &lane_ext);
  if (!(x->in = instr_of(ext, lane_ext)))
    fail_axes(c, r, "have no instruction's fragment shape (m16n8k16: 2, 2, 16 under 32 lanes; m64nNk16: 2, N / 4, 16 "
              "under 128 lanes)");
  if (lower_ptype(c, TV(r)->loop[j0 - 1]) != CF_PT_TIDX || !layout_ok(r, j0, x->in))
    fail_axes(c, r, "do not follow the lane axis of the accumulator's fragment layout on threadIdx.x");
  if (!c->pdim[CF_PT_TIDX] || !kx_is_const(c->pdim[CF_PT_TIDX], &lanes) || lanes != x->in->lanes)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s runs %s as a warp's instruction, so threadIdx.x must be "
               "exactly the %d lanes of a %s; it is launched %s wide", TV(r)->display_name, x->in->name,
               x->in->lanes, ir_mma_is_wgmma(x->in) ? "warpgroup" : "warp", c->pdim[CF_PT_TIDX] ? "a different size" : "1");
  char why[512];
  if (!ir_mma_match(r, x->in, ir_mma_root_axis(r, TV(r)->loop[j0]), &x->p, why, sizeof why, "compile"))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "%s", why);
}

static bool has_mma_axis(const Val *tv) {
  for (int j = 0; j < TV((Val *)tv)->nloop; j++)
    if (ID(TV((Val *)tv)->loop[j])->ptype == CF_PT_MMA) return true;
  return false;
}

/* The sum under loop n whose first MMA loop n is, or NULL. */
static KNode *sum_of_loop(KBlock *b, const KNode *n) {
  for (int i = 0; i < b->len; i++) {
    KNode *o = b->items[i], *got = NULL;
    if (o->kind == KN_OP && !o->u.op.reduction_init && o->u.op.src->op == OP_SUM && has_mma_axis(o->u.op.src->out[0])) {
      Val *r = o->u.op.src->out[0];
      int j0 = TV(r)->nloop - 3;
      if (j0 >= 0 && j0 < o->u.op.nloop && o->u.op.loops[j0] == n) return o;
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(o, inner);
    for (int k = 0; k < nb && !got; k++) got = sum_of_loop(inner[k], n);
    if (got) return got;
  }
  return NULL;
}

static void on_loop(KMutator *m, KNode *n, KBlock *out) {
  MmaCtx *x = m->user;
  kir_mutate_children(m, n);
  KNode *sum = n->u.loop.var ? sum_of_loop(&n->u.loop.body, n) : NULL;
  if (!sum) {
    kb_push(m->arena, out, n);
    return;
  }
  Val *r = sum->u.op.src->out[0];
  bool tc05 = TV(r)->mem == CF_MEM_TENSOR; /* the accumulator in tensor memory: tcgen05.mma */
  if (tc05) x->in = lower_tcgen05_validate(x->c, r, &x->p);
  else validate(x, r);
  int j0 = TV(r)->nloop - 3;
  for (int j = 0; j < 3; j++) x->var[j] = sum->u.op.loops[j0 + j]->u.loop.var;
  MmaNest nest = {{NULL}, {NULL}};
  collect(x, &n->u.loop.body, NULL, &nest, r);
  for (int k = 0; k < 4; k++)
    if (!nest.op[k])
      lower_fail(x->c, CF_ERR_INVALID_SCHEDULE, "compile: %s of %s's product is not inlined into its MMA loops",
                 k == NEST_CAST_A ? TV(x->p.a)->display_name : k == NEST_CAST_B ? TV(x->p.b)->display_name
                 : k == NEST_MUL ? TV(x->p.mul->out[0])->display_name : TV(r)->display_name, TV(r)->display_name);
  int64_t n_ext = x->in->n;
  if (ir_mma_by_descriptor(x->in))
    ir_scalar_const_value(ID(TV(r)->loop[j0 + 1])->extent, &n_ext), n_ext *= ir_mma_is_wgmma(x->in) ? 4 : 1;
  KNode *mma = build(x, &nest, n_ext);
  MovedCtx mc = {x, &nest};
  if (ir_mma_by_descriptor(x->in)) lower_wgmma_operands(x->c, &m->path, mma, moved_at, &mc, TV(r)->display_name);
  else lower_mma_ldmatrix(x->c, &m->path, mma, moved_at, &mc);
  if (tc05) lower_tcgen05_finish(x->c, mma, sum);
  kb_push(m->arena, out, mma);
}

/* An op left on an MMA axis (not an accumulator's initialization) was not replaced. */
static bool stray(KVisitor *v, KNode *n) {
  LowerCtx *c = v->user;
  Val *tv = n->u.op.src->out[0];
  if (n->u.op.reduction_init && has_mma_axis(tv)) { /* the accumulator's registers zeroed: unrolled */
    for (int j = 0; j < n->u.op.nloop && j < TV(tv)->nloop; j++)
      if (ID(TV(tv)->loop[j])->ptype == CF_PT_MMA && n->u.op.loops[j] && n->u.op.loops[j]->u.loop.var)
        n->u.op.loops[j]->u.loop.pt = CF_PT_UNROLL;
    return true;
  }
  if (!has_mma_axis(tv)) return true;
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s has an axis on MMA but is not the sum of a product tiled by "
             "cf_mma_tile (or one inlined into its instruction)", lower_tv_str(c, tv));
}

void lower_mma(LowerCtx *c) {
  MmaCtx x = {c, NULL, {0}, {NULL}};
  KMutator m = {.arena = c->a, .fn = {[KN_FOR] = on_loop}, .user = &x};
  kir_mutate(&m, &c->k->body);
  lower_tcgen05_groups(c); /* first: the accumulators' initializations in tensor memory go */
  KVisitor v = {.pre = {[KN_OP] = stray}, .user = c, .arena = c->a};
  kir_visit(&v, &c->k->body);
  lower_wgmma_groups(c);
}
