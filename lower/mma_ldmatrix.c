/* lower/mma_ldmatrix.c: ldmatrix for a tensor-core instruction's operand fragments, a
 * part of the mma pass (lower/mma.c builds each KN_MMA, then asks here per operand).
 *
 * ldmatrix.sync.aligned.m8n8.x<n>[.trans].shared.b16 loads n 8x8 matrices of 16-bit
 * elements for the warp: lane q of each group of 8 (lanes 8j..8j+7 for matrix j) gives the
 * address of row q of matrix j, 16 contiguous bytes in shared memory; lane l receives in
 * its register j the two elements at row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of
 * matrix j (of its transpose with .trans). mma.sync's operand fragments are exactly such
 * registers: element 2j + p of a lane lies at (g, 2t + p) plus register pair j's origin
 * in one direction of the tile (g = lane / 4 along one coordinate, t = lane % 4 along the
 * other: ir/mma.h's table says which), so register j is matrix j whose rows run along g
 * (non-transposed: the t direction is contiguous in the tile) or along t (.trans).
 *
 * Requires: the KN_MMA's per-element accesses (a[i], b[i]) and the loops around it.
 * Establishes: n->u.mma.ldm[op] = number of matrices (0: per-lane loads stay), the lane's
 * row address ldm_row[op] and ldm_trans[op].
 * Key decision: the instruction is used only where it provably delivers each element the
 * fragment needs: every index involved (compiled once: kx_program, lower/kx_program.c) is
 * evaluated for every lane and every value of the
 * loops and thread indices of constant extent around the instruction (block indices and
 * loops of run-time extent at two joint samples, as they enter a shared tile's index only
 * through its block tile), checking that the element ldmatrix hands lane l for its
 * register j is the one a[2j + p] reads, and that rows are 16-byte aligned; otherwise the
 * per-lane loads stay (correct for any layout). A loop whose variable shifts every index
 * by one common drift (a multiple of 8) over a period shorter than its extent is
 * evaluated over that period only (kx_period, lower/kx_period.c): the answer is the same
 * at i and i + period, so the proof of a matmul's tiles costs the same for every K. The host emulation checks the same
 * addresses again at run time (codegen/runtime/host_mma.h). Masks still apply after the
 * load: rows out of bounds of M, N or K are read (inside the tile) and zeroed. */
#include <string.h>

#include "lower/lower.h"

enum { LDM_MAX_VARS = 16, LDM_MAX_COMBOS = 1 << 14 };
/* The joint samples of the values not enumerated: a variable of run-time extent, a block
 * index, an extent not known when lowering (leaf_range says which values these give). */
static const int64_t ldm_samples[] = {0, 5};
enum { LDM_SAMPLE_MAX = 5 };
/* Value slots: the variables, then each parallel type's index, then its extent. */
enum { LDM_PT = LDM_MAX_VARS, LDM_DIM = LDM_PT + CF_PT_COUNT, LDM_SLOTS = LDM_DIM + CF_PT_COUNT };

/* Values of the variables an index reads. */
typedef struct LdmEnv {
  const char *var[LDM_MAX_VARS];
  int64_t ext[LDM_MAX_VARS]; /* 0: of run-time extent (sampled) */
  int64_t span[LDM_MAX_VARS]; /* the values of each enumerated: ext, or one period (var_span) */
  int nvar;
  int64_t pt_ext[CF_PT_COUNT]; /* thread extents enumerated (1: index not read) */
  int64_t dim[CF_PT_COUNT];    /* launch extents known when lowering (0: sampled) */
  int64_t slot[LDM_SLOTS];
} LdmEnv;

static int var_slot(const LdmEnv *v, const char *name) {
  for (int i = 0; i < v->nvar; i++)
    if (!strcmp(v->var[i], name)) return i;
  return -1;
}

/* A leaf's slot (kx_program's leaf_slot): a variable's, or a thread index's or extent's. */
static int leaf_slot(void *user, const KExpr *e) {
  const LdmEnv *v = user;
  if (e->kind == KX_VAR) return var_slot(v, e->name);
  return (e->is_dim ? LDM_DIM : LDM_PT) + (int)e->pt;
}

/* Records the variables e reads (loop variables: extents from the loops around). */
static bool collect_vars(const KExpr *e, LdmEnv *v, const KPath *path) {
  if (!e) return true;
  if (e->kind == KX_VAR && var_slot(v, e->name) < 0) {
    if (v->nvar == LDM_MAX_VARS) return false;
    int64_t ext = 0;
    for (int d = 0; d < path->depth; d++) {
      const KNode *n = path->node[d];
      if (n->kind == KN_FOR && n->u.loop.var && !strcmp(n->u.loop.var, e->name) && !kx_is_const(n->u.loop.extent, &ext)) ext = 0;
    }
    v->var[v->nvar] = e->name, v->ext[v->nvar++] = ext;
  }
  return e->kind != KX_BINARY && e->kind != KX_SELECT ? true
         : collect_vars(e->a, v, path) && collect_vars(e->b, v, path) && collect_vars(e->c, v, path);
}

/* The fragment coordinates (row, col) of the row lane `lane` addresses, as expressions. */
static void row_pos(Arena *a, const IrMmaFrag *fr, bool trans, KExpr **row, KExpr **col) {
  KExpr *lane = kx_thread(a, CF_PT_TIDX, false), *nmat = kx_const(a, fr->n / 2);
  KExpr *j = kx_bin(a, OP_MOD, kx_bin(a, OP_DIV, lane, kx_const(a, 8)), nmat), *q = kx_bin(a, OP_MOD, lane, kx_const(a, 8));
  KExpr *orow = kx_const(a, fr->row_off[0]), *ocol = kx_const(a, fr->col_off[0]);
  for (int m = 1; m < fr->n / 2; m++) {
    KExpr *is = kx_bin(a, OP_EQ, j, kx_const(a, m));
    orow = kx_select(a, is, kx_const(a, fr->row_off[2 * m]), orow);
    ocol = kx_select(a, is, kx_const(a, fr->col_off[2 * m]), ocol);
  }
  bool g_rows = fr->row_g != 0; /* g runs along the fragment's rows (A) or columns (B) */
  bool q_on_row = g_rows != trans;
  *row = q_on_row ? kx_bin(a, OP_ADD, orow, q) : orow;
  *col = q_on_row ? ocol : kx_bin(a, OP_ADD, ocol, q);
}

/* Whether, at the current values, ldmatrix hands every lane the elements `want` names. */
static bool delivers(LdmEnv *v, KxProgram *rowp, KxProgram *const *want, int n, bool trans) {
  int64_t rowaddr[32];
  for (int l = 0; l < 32; l++) {
    v->slot[LDM_PT + CF_PT_TIDX] = l;
    if (!kx_program_run(rowp, v->slot, &rowaddr[l]) || rowaddr[l] % 8) return false;
  }
  for (int l = 0; l < 32; l++) {
    v->slot[LDM_PT + CF_PT_TIDX] = l;
    for (int i = 0; i < n; i++) {
      int j = i / 2, p = i % 2, src = trans ? 8 * j + 2 * (l % 4) + p : 8 * j + l / 4, off = trans ? l / 4 : 2 * (l % 4) + p;
      int64_t need;
      if (!kx_program_run(want[i], v->slot, &need) || need != rowaddr[src] + off) return false;
    }
  }
  return true;
}

/* Every combination of the bounded variables (each over its span) and thread indices, the
 * others (variables of run-time extent, block indices, grid extents) at two joint samples. */
static bool holds_everywhere(LdmEnv *v, KxProgram *rowp, KxProgram *const *want, int n, bool trans) {
  int64_t combos = 1;
  for (int i = 0; i < v->nvar; i++) combos *= v->ext[i] ? v->span[i] : 1;
  for (int p = CF_PT_TIDY; p <= CF_PT_TIDZ; p++) combos *= v->pt_ext[p];
  if (combos > LDM_MAX_COMBOS) return false;
  for (size_t s = 0; s < sizeof ldm_samples / sizeof ldm_samples[0]; s++) {
    for (int p = 0; p < CF_PT_COUNT; p++) {
      v->slot[LDM_DIM + p] = v->dim[p] ? v->dim[p] : 1 + ldm_samples[s] + p;
      v->slot[LDM_PT + p] = ldm_samples[s] + p; /* block indices */
    }
    for (int64_t k = 0; k < combos; k++) {
      int64_t r = k;
      for (int i = 0; i < v->nvar; i++) {
        int64_t e = v->ext[i] ? v->span[i] : 0;
        v->slot[i] = e ? r % e : ldm_samples[s] + i; /* distinct run-time values per variable */
        r = e ? r / e : r;
      }
      for (int p = CF_PT_TIDY; p <= CF_PT_TIDZ; p++) v->slot[LDM_PT + p] = r % v->pt_ext[p], r /= v->pt_ext[p];
      if (!delivers(v, rowp, want, n, trans)) return false;
    }
  }
  return true;
}

/* The values holds_everywhere gives a leaf of an index, as a range (kx_period's). */
static bool leaf_range(void *user, const KExpr *e, int64_t *lo, int64_t *hi) {
  const LdmEnv *v = user;
  int i = e->kind == KX_VAR ? var_slot(v, e->name) : -1;
  if (i >= 0) return *lo = 0, *hi = v->ext[i] ? v->ext[i] - 1 : LDM_SAMPLE_MAX + i, true;
  if (e->kind != KX_THREAD) return false;
  int p = (int)e->pt;
  if (e->is_dim) *lo = v->dim[p] ? v->dim[p] : 1 + p, *hi = v->dim[p] ? v->dim[p] : 1 + LDM_SAMPLE_MAX + p;
  else if (p == CF_PT_TIDX) *lo = 0, *hi = 31; /* the lane */
  else if (p == CF_PT_TIDY || p == CF_PT_TIDZ) *lo = 0, *hi = v->pt_ext[p] - 1;
  else *lo = p, *hi = LDM_SAMPLE_MAX + p;
  return true;
}

/* How many values of variable i (of constant extent) stand for all of them: one period
 * when every index (the row address and the n fragment elements) shifts by one common
 * drift as it grows by that period, and the drift keeps rows 16-byte aligned (then
 * delivers() answers the same at i and i + period); else its whole extent. A K loop of a
 * circular-buffered tile has period `stages`, so the proof's cost does not grow with K. */
static int64_t var_span(Arena *a, const LdmEnv *v, int i, const KAccess *r, const KAccess *el, int n) {
  const KExpr *es[1 + IR_MMA_MAX_FRAG];
  int64_t period, drift;
  es[0] = r->index;
  for (int k = 0; k < n; k++) es[1 + k] = el[k].index;
  if (!kx_period(es, 1 + n, kx_var(a, v->var[i]), leaf_range, (void *)v, &period, &drift) || drift % 8)
    return v->ext[i];
  return period < v->ext[i] ? period : v->ext[i];
}

/* Tries operand op (0: A, 1: B) of n with and without .trans. */
static void try_operand(LowerCtx *c, const KPath *path, KNode *n, int op, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                        void *ctx) {
  const IrMmaFrag *fr = op ? &n->u.mma.instr->b : &n->u.mma.instr->a;
  KAccess *el = op ? n->u.mma.b : n->u.mma.a;
  if (!el[0].t || el[0].t->mem != CF_MEM_SHARED || cf_dtype_size(n->u.mma.in_dtype) != 2 || fr->n % 2 || fr->n > 8) return;
  for (int trans = 0; trans < 2; trans++) {
    KExpr *row, *col;
    row_pos(c->a, fr, trans, &row, &col);
    KAccess r = moved_at(ctx, op, row, col);
    LdmEnv v = {.nvar = 0};
    KxProgram *rowp = NULL, *want[IR_MMA_MAX_FRAG];
    bool ok = r.t == el[0].t && collect_vars(r.index, &v, path);
    for (int i = 0; i < fr->n && ok; i++) ok = el[i].t == r.t && collect_vars(el[i].index, &v, path);
    for (int p = CF_PT_TIDY; p <= CF_PT_TIDZ; p++) { /* only the thread indices read vary */
      int64_t e = 1;
      bool read = kx_uses_thread(r.index, (cf_parallel_type)p);
      for (int i = 0; i < fr->n; i++) read = read || kx_uses_thread(el[i].index, (cf_parallel_type)p);
      if (read && !(c->pdim[p] && kx_is_const(c->pdim[p], &e))) ok = false;
      v.pt_ext[p] = read ? e : 1;
    }
    for (int p = 0; p < CF_PT_COUNT; p++)
      if (c->pdim[p] && !kx_is_const(c->pdim[p], &v.dim[p])) v.dim[p] = 0;
    for (int i = 0; i < v.nvar && ok; i++) v.span[i] = v.ext[i] ? var_span(c->a, &v, i, &r, el, fr->n) : 0;
    if (ok) rowp = kx_program(c->a, r.index, leaf_slot, &v);
    for (int i = 0; i < fr->n && ok; i++) want[i] = kx_program(c->a, el[i].index, leaf_slot, &v);
    if (ok && holds_everywhere(&v, rowp, want, fr->n, trans)) {
      n->u.mma.ldm[op] = fr->n / 2, n->u.mma.ldm_trans[op] = trans, n->u.mma.ldm_row[op] = r;
      return;
    }
  }
}

void lower_mma_ldmatrix(LowerCtx *c, const KPath *path, KNode *n, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                        void *ctx) {
  for (int op = 0; op < 2; op++) try_operand(c, path, n, op, moved_at, ctx);
}
