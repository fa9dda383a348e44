/* scheduler/matmul_sched.c: the automatic scheduler of matmuls (the registry's row
 * "matmul", issue 24), a client of the public scheduling calls.
 * Heuristic, in order:
 *   1. accepts the pattern cf_matmul and cf_linear build (ir/ops_matmul.c), nvFuser's
 *      MmaOp pattern: one sum P -> R over one axis K of a mul P of two operands, each a
 *      prologue chain (casts, sets, permutes, broadcasts: single-use) of one fusion input,
 *      the first broadcast along the axis N the second iterates and the second along the
 *      axis M the first iterates; the other axes of P are batch axes (both iterate them or
 *      both broadcast). Everything after R is an epilogue of elementwise ops and
 *      broadcasts of other inputs (bias, residual), with outputs of R's kept rank;
 *   2. R is reordered to [batch.., M, N, K] (each role merged into one axis) and handed to
 *      a schedule: the tensor-core one (matmul_mma.c) when the operands are casts of half
 *      or bfloat16 tensors (several M or N axes, a batch of one operand alone among them,
 *      merged into one: its tiles cross from one into the next), else the SIMT one (matmul_simt.c:
 *      128 x 128 x 16 block tiles of 16 x 16 threads, 8 x 8 registers each, operands in
 *      shared memory, double-buffered); each names its tile and the operand tiles' fills
 *      in the params, decided from the sizes so that the plan and the schedule agree.
 * Non-divisible M, N, K (and symbolic ones) are predicated tiles. Vector operands (no M or
 * no N) are matrix-vector products, left to the reduction scheduler.
 * Key decision: the row matches and canonicalizes; the schedules own their tiles, so
 * adding one (wgmma) is a branch here and a file of its own. */
#include <string.h>

#include "scheduler/matmul_mma.h"
#include "scheduler/matmul_simt.h"
#include "scheduler/registry.h"
#include "scheduler/sched.h"

enum { MM_BATCH, MM_M, MM_N, MM_K };

/* What the pattern match found. */
typedef struct MmMatch {
  Expr *sum, *mul;
  Val *op[2]; /* the mul's operands: A (broadcast along N), B (along M) */
  int rank;   /* R's logical axes, the reduction axis included */
  int role[CF_MAX_RANK + 1];
  int count[4]; /* axes of each role */
} MmMatch;

static bool mm_why(char *why, const char *fmt, const char *name) {
  snprintf(why, SCHED_WHY_MAX, fmt, name);
  return false;
}

/* The single sum of f whose input is a mul; false (why) when none or several. */
static bool mm_find(Expr **ex, int n, MmMatch *m, char *why) {
  m->sum = NULL;
  for (int i = 0; i < n; i++) {
    if (ir_op_kind(ex[i]->op) != OPK_REDUCTION) continue;
    if (m->sum || ex[i]->op != OP_SUM) return mm_why(why, "matmul: %s is a second reduction", TV(ex[i]->out[0])->display_name);
    m->sum = ex[i];
  }
  if (!m->sum) return mm_why(why, "matmul: %s", "no sum of a product");
  Val *p = m->sum->in[0];
  m->mul = p->def;
  if (!m->mul || m->mul->op != OP_MUL || p->uses.len != 1)
    return mm_why(why, "matmul: the sum's input %s is not a mul read only by it", TV(p)->display_name);
  if (m->mul->nin != 2 || m->mul->in[0]->kind != VAL_TV || m->mul->in[1]->kind != VAL_TV)
    return mm_why(why, "matmul: %s multiplies by a scalar", TV(p)->display_name);
  m->op[0] = m->mul->in[0], m->op[1] = m->mul->in[1];
  return true;
}

/* The roles of R's axes (from the mul's operands' broadcasts): at least one M and one N
 * (batch axes of one operand only are M or N axes, as nvFuser folds them), one K. */
static bool mm_roles(MmMatch *m, char *why) {
  Val *r = m->sum->out[0], *a = m->op[0], *b = m->op[1];
  m->rank = TV(r)->nlogical;
  if (TV(a)->nlogical != m->rank || TV(b)->nlogical != m->rank)
    return mm_why(why, "matmul: the operands of %s do not have its rank", TV(m->mul->out[0])->display_name);
  for (int k = 0; k < 4; k++) m->count[k] = 0;
  for (int i = 0; i < m->rank; i++) {
    bool ab = ID(TV(a)->logical[i])->iter_type == CF_ITER_BROADCAST;
    bool bb = ID(TV(b)->logical[i])->iter_type == CF_ITER_BROADCAST;
    int role = ID(TV(r)->logical[i])->iter_type == CF_ITER_REDUCTION ? MM_K : ab && !bb ? MM_N : bb && !ab ? MM_M : MM_BATCH;
    if (role == MM_K && (ab || bb)) return mm_why(why, "matmul: an operand of %s broadcasts K", TV(r)->display_name);
    m->role[i] = role, m->count[role]++;
  }
  if (m->count[MM_K] != 1 || m->count[MM_M] < 1 || m->count[MM_N] < 1)
    return mm_why(why, "matmul: %s is not a product with M, N and one K axis (a vector operand is a "
                  "reduction)", TV(r)->display_name);
  return true;
}

/* Whether op is a prologue op: a move or cast of one tensor. */
static bool mm_prologue_op(const Expr *e) {
  OpKind k = ir_op_kind(e->op);
  return e->nin == 1 && (k == OPK_CAST || k == OPK_SET || k == OPK_BROADCAST || k == OPK_PERMUTE) && e->op != OP_EXPAND;
}

/* Marks the prologue chain of operand v (back to a fusion input), each tensor read once;
 * v itself is computed (it becomes the shared-memory tile). */
static bool mm_chain(cf_fusion *f, Val *v, bool *in_chain, char *why) {
  if (ir_tv_is_input(f, v))
    return mm_why(why, "matmul: operand %s is a fusion input (no prologue op writes its tile)", TV(v)->display_name);
  while (!ir_tv_is_input(f, v)) {
    if (!v->def || !mm_prologue_op(v->def) || v->uses.len != 1 || ir_tv_is_output(f, v))
      return mm_why(why, "matmul: operand %s is not a cast, permute or broadcast of an input read once",
                    TV(v)->display_name);
    in_chain[v->def->id] = true;
    v = v->def->in[0];
  }
  return true;
}

/* Every expr but the prologue chains, the mul and the sum is an epilogue op after the sum,
 * and the outputs have the sum's kept rank. */
static bool mm_epilogue(cf_fusion *f, Expr **ex, int n, const MmMatch *m, bool *in_chain, char *why) {
  for (int i = 0; i < n; i++) {
    Expr *e = ex[i];
    if (e == m->sum || e == m->mul || in_chain[e->id]) continue;
    if (!ir_op_is_elementwise(e->op) && ir_op_kind(e->op) != OPK_BROADCAST)
      return mm_why(why, "matmul: %s is not an elementwise epilogue op", TV(e->out[0])->display_name);
  }
  /* every output reads the sum: the tiles propagated from it reach the whole segment */
  bool *after = in_chain + f->exprs.len + 1; /* by Val id */
  after[m->sum->out[0]->id] = true;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < ex[i]->nin; j++)
      if (after[ex[i]->in[j]->id]) after[ex[i]->out[0]->id] = true;
  for (int k = 0; k < f->outputs.len; k++) {
    Val *o = f->outputs.items[k];
    if (!after[o->id]) return mm_why(why, "matmul: output %s does not read the product's sum", TV(o)->display_name);
    if (TV(o)->nlogical != m->rank - 1 && o != m->sum->out[0])
      return mm_why(why, "matmul: output %s does not have the product's kept axes", TV(o)->display_name);
  }
  return true;
}

static bool mm_match(Arena *a, cf_fusion *f, MmMatch *m, char *why) {
  int n;
  Expr **ex = ir_fusion_tensor_exprs_in(a, f, &n);
  /* by Expr id, then (mm_epilogue) by Val id */
  bool *in_chain = ex ? ARENA_ARRAY(a, bool, f->exprs.len + 1 + f->vals.len) : NULL;
  if (!in_chain) return mm_why(why, "matmul: %s", "out of memory");
  return mm_find(ex, n, m, why) && mm_roles(m, why) && mm_chain(f, m->op[0], in_chain, why) &&
         mm_chain(f, m->op[1], in_chain, why) && mm_epilogue(f, ex, n, m, in_chain, why);
}

static bool mm_accepts(cf_fusion *f, const SchedCall *call, char *why) {
  (void)call;
  Arena *a = arena_create();
  MmMatch m;
  bool ok = a ? mm_match(a, f, &m, why) : mm_why(why, "matmul: %s", "out of memory");
  arena_destroy(a);
  return ok;
}

/* R [..] -> [batch?, M, N, K]: the axes of each role in order, merged into one. */
static void mm_canonical(cf_fusion *f, cf_tv *r, const MmMatch *m) {
  int new_pos[CF_MAX_RANK + 1], start[4] = {0}, next[4];
  for (int k = 1; k < 4; k++) start[k] = start[k - 1] + m->count[k - 1];
  memcpy(next, start, sizeof next);
  for (int i = 0; i < m->rank; i++) new_pos[i] = next[m->role[i]]++;
  cf_reorder_all(f, r, m->rank, new_pos);
  int at = 0;
  for (int k = 0; k < 3; k++) { /* batch, M, N (K is one axis) */
    for (int j = 1; j < m->count[k]; j++) cf_merge(f, r, at);
    at += m->count[k] > 0;
  }
}

/* The product of the extents of role k's axes of the product r; 0 when one is symbolic. */
static int64_t mm_role_extent(const MmMatch *m, int k) {
  Val *r = m->sum->out[0];
  int64_t n = 1, e;
  for (int i = 0; i < m->rank; i++) {
    if (m->role[i] != k) continue;
    if (!ir_scalar_const_value(ID(TV(r)->logical[i])->extent, &e)) return 0;
    n *= e;
  }
  return n;
}

/* The extent of the innermost axis of role k where the role is several axes (-1 when
 * symbolic); 0 where it is one. */
static int64_t mm_role_span(const MmMatch *m, int k) {
  int64_t e = 0;
  for (int i = m->rank - 1; i >= 0 && m->count[k] > 1; i--)
    if (m->role[i] == k) return ir_scalar_const_value(ID(TV(m->sum->out[0])->logical[i])->extent, &e) ? e : -1;
  return 0;
}

/* Whether the product runs on tensor cores (matmul_mma.c): half or bfloat16 operands. */
static bool mm_uses_mma(const MmMatch *m, const SchedCall *call, MmaTiles *t) {
  t->batch = m->count[MM_BATCH] > 0;
  const SchedDevice *dev = call && call->dev ? call->dev : sched_device_default();
  t->size_m = mm_role_extent(m, MM_M), t->size_n = mm_role_extent(m, MM_N), t->size_b = mm_role_extent(m, MM_BATCH);
  t->size_k = mm_role_extent(m, MM_K);
  t->m_span = mm_role_span(m, MM_M), t->n_span = mm_role_span(m, MM_N);
  int last = m->rank - 1;
  while (last > 0 && m->role[last] == MM_K) last--;
  t->n_innermost = m->role[last] == MM_N;
  t->sm_count = dev->sm_count, t->l2_bytes = dev->l2_bytes;
  return sched_matmul_mma_fits(m->sum->out[0], m->count[MM_M], m->count[MM_N], dev, t);
}

/* The SIMT schedule's plan (matmul_simt.c: float and double operands). */
static bool mm_simt(const MmMatch *m, SimtTiles *s) { return sched_matmul_simt_plan(m->sum->out[0], m->count[MM_BATCH] > 0, s); }

static cf_status mm_schedule_match(cf_fusion *f, const MmMatch *m, const SchedCall *call) {
  cf_tv *r = ir_tv_handle(m->sum->out[0]);
  MmaTiles t;
  SimtTiles s;
  mm_canonical(f, r, m);
  if (mm_uses_mma(m, call, &t)) return f->status ? f->status : sched_matmul_mma(f, &t);
  if (!mm_simt(m, &s)) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  return f->status ? f->status : sched_matmul_simt(f, &s);
}

/* The row's parameter text: the tensor-core schedule's, else the SIMT one's; false when
 * out of memory. */
static bool mm_params(const MmMatch *m, const SchedCall *call, char *text) {
  MmaTiles t;
  SimtTiles s;
  if (mm_uses_mma(m, call, &t)) sched_matmul_mma_params(&t, text);
  else if (mm_simt(m, &s)) sched_matmul_simt_params(&s, text);
  else return false;
  return true;
}

/* ---- as a row of the registry ---------------------------------------------------------- */

static bool mm_row_plan(cf_fusion *f, const SchedCall *call, SchedParams *out, char *why) {
  *out = (SchedParams){0};
  Arena *a = arena_create();
  MmMatch m;
  bool ok = a ? mm_match(a, f, &m, why) : mm_why(why, "matmul: %s", "out of memory");
  ok = ok && (mm_params(&m, call, out->text) || mm_why(why, "matmul: %s", "out of memory"));
  arena_destroy(a);
  return ok;
}

/* The operand chains rebuilt in load order (matmul_operands.c: each chain tensor of the
 * tile's rank, so it is inlined into the tile's writes), then matched again. */
static bool mm_load_order(Arena *a, cf_fusion *f, MmMatch *m, char *why) {
  for (int i = 0; i < 2 && !f->status; i++) sched_matmul_operand_order(f, m->sum->in[0]->def, i);
  return !f->status && mm_match(a, f, m, why);
}

/* The plan depends on the fusion's structure only: derived again here. */
static cf_status mm_row_apply(cf_fusion **pf, const SchedCall *call, const SchedParams *in, SchedParams *used) {
  cf_fusion *f = *pf;
  char why[SCHED_WHY_MAX];
  (void)in;
  *used = (SchedParams){0};
  Arena *a = arena_create();
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  MmMatch m;
  /* A computed tensor of lower rank broadcast into the epilogue (a bias cast to float)
   * would get only part of the accumulator's layout (no M axes: in the fragment layout,
   * 4 of a warp's 32 lanes) and could not be inlined into its broadcast; define and run
   * hoists such broadcasts onto the inputs before any row is asked, and a row applied
   * directly does the same (idempotent, bit for bit the same values). */
  bool ok = sched_hoist_broadcasts(f) == CF_OK && mm_match(a, f, &m, why) && mm_load_order(a, f, &m, why);
  ok = ok && (mm_params(&m, call, used->text) || mm_why(why, "matmul: %s", "out of memory"));
  cf_status s = f->status ? f->status : ok ? mm_schedule_match(f, &m, call) : ir_error(f, CF_ERR_UNSUPPORTED, "%s", why);
  arena_destroy(a);
  return s;
}

const SchedRow sched_matmul_row = {"matmul", SCHED_ROW_KERNEL, false, mm_accepts, mm_row_plan, mm_row_apply};
