/* lower/tmem_pattern.c: the tmem_pattern pass. Validates every tensor-memory load and store against the
 * tcgen05 32x32b data path (DESIGN.md section 6, reference notes section 3.4): the
 * access is warp-collective, thread l of warp w touches lane 32 * (w % 4) + l (lanes
 * consecutive with stride 1, each warp in its own sub-partition), all threads of a warp
 * touch the same columns, every thread of the block takes part (tcgen05 instructions are
 * not predicated), and a vector moves whole 32-bit words (.x1 to .x128) of consecutive
 * columns and registers.
 *
 * Requires: the loop nest (each op with its expression), TvInfo, the launch extents in
 * c->pdim and the index pass's propagation (lower_index_access). Establishes: nothing in
 * the kernel IR; a violation is a compile error beginning
 * `Invalid data access pattern in TMem load/store: ` with the reason. With
 * opts->skip_tmem_validation only the op kinds and the vector width are checked, so that
 * the host backend's emulation can be tested on patterns the hardware would reject.
 * Key decision: the structural checks (warp-collectiveness, strides of the outer thread
 * dimensions) follow nvFuser's grouping of contiguous thread dimensions; the lane checks
 * are a brute force over every thread of the CTA (tid = x + y*bdx + z*bdx*bdy) and over a
 * sample of each serial loop's iterations, evaluating the op's own lane, column and
 * register indices with the loop indices replaced by probes. That needs constant block
 * dimensions, which every tensor-memory kernel has; it is exact where nvFuser's proofs are
 * conservative, and it also catches a serial loop that moves a warp off its sub-partition. */
#include <string.h>

#include "lower/lower.h"

#define PREFIX "Invalid data access pattern in TMem load/store: "

enum { MAX_VARS = 64, SAMPLE = 16 };

/* One op under test: its probe variables, the indices to evaluate, the thread lattice. */
typedef struct Probe {
  LowerCtx *c;
  const char *var[MAX_VARS];
  int64_t ext[MAX_VARS]; /* -1: symbolic, 0: absent from the indices (probed at 0 only) */
  int64_t val[MAX_VARS];
  int nvars;
  int vec_var;           /* the Vectorize axis' probe, or -1 */
  int64_t dim[3];        /* launch extents of TIDx, TIDy, TIDz */
  int64_t limit[3];      /* the op's own extent on each thread dimension */
  int64_t tid[3];
  KExpr *lane, *col, *reg;
} Probe;

/* Evaluates an index with the probe's thread and loop values (block indices 0). */
static bool eval(const Probe *p, const KExpr *e, int64_t *out) {
  int64_t x, y, z;
  switch (e->kind) {
  case KX_CONST: *out = e->value; return true;
  case KX_VAR:
    for (int i = 0; i < p->nvars; i++)
      if (p->var[i] == e->name) return *out = p->val[i], true; /* the probe's own names */
    return false;
  case KX_THREAD:
    if (ir_ptype_is_thread(e->pt)) return *out = e->is_dim ? p->dim[e->pt - CF_PT_TIDX] : p->tid[e->pt - CF_PT_TIDX], true;
    if (ir_ptype_is_block(e->pt) && !e->is_dim) return *out = 0, true;
    return false;
  case KX_BINARY: return eval(p, e->a, &x) && eval(p, e->b, &y) && ir_int_apply(e->op, x, y, out);
  case KX_SELECT: return eval(p, e->a, &x) && eval(p, e->b, &y) && eval(p, e->c, &z) && (*out = x ? y : z, true);
  default: return false;
  }
}

static int64_t must_eval(Probe *p, const KExpr *e, const char *what, const char *tv) {
  int64_t v;
  if (!eval(p, e, &v))
    lower_fail(p->c, CF_ERR_UNSUPPORTED, "compile: the %s index of the tensor-memory access of %s depends on a "
               "symbolic size; cfuser validates tensor-memory accesses of constant thread and loop extents only",
               what, tv);
  return v;
}

/* ---- which ops access tensor memory, and how ------------------------------------------ */

static bool is_tmem(const Val *v) { return v->kind == VAL_TV && TV((Val *)v)->mem == CF_MEM_TENSOR; }
static bool is_local(const Val *v) { return v->kind == VAL_TV && TV((Val *)v)->mem == CF_MEM_LOCAL; }

/* "T3 = add(T2, T1)", for messages. */
static const char *expr_text(LowerCtx *c, const Expr *e) {
  StrBuf b = {0};
  sb_printf(&b, "%s = %s(", TV(e->out[0])->display_name, ir_op_name(e->op));
  for (int i = 0; i < e->nin; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", e->in[i]->kind == VAL_TV ? TV(e->in[i])->display_name : "scalar");
  sb_puts(&b, ")");
  char *s = arena_strdup(c->a, b.data);
  sb_free(&b);
  return s;
}

/* Whether e is a sum tiled for tcgen05.mma (its MMA axes: the mma pass checks it). */
static bool tcgen05_sum(const Expr *e) {
  Val *out = e->out[0];
  if (e->op != OP_SUM || !is_tmem(out)) return false;
  for (int j = 0; j < TV(out)->nloop; j++)
    if (ID(TV(out)->loop[j])->ptype == CF_PT_MMA) return true;
  return false;
}

/* The tensor-memory side of op's expression (NULL if none); *store: it is the output.
 * Only copies between registers and tensor memory touch it (there is no path between
 * tensor memory and global or shared memory, and no arithmetic on it), and tcgen05.mma's
 * accumulation (a sum on MMA axes, which lower/mma.c replaces by the instruction). */
static Val *tmem_side(LowerCtx *c, const Expr *e, bool *store) {
  Val *out = e->out[0], *tm = NULL;
  if (tcgen05_sum(e)) return NULL;
  for (int i = 0; i < e->nin; i++)
    if (is_tmem(e->in[i])) tm = e->in[i];
  if (!is_tmem(out) && !tm) return NULL;
  *store = is_tmem(out);
  if (*store && (e->op != OP_SET || e->nin != 1 || !is_local(e->in[0])))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s writes tensor memory; tensor memory is only written by a copy "
               "(set) from registers (a local tensor)", expr_text(c, e));
  if (!*store && ((e->op != OP_SET && e->op != OP_PERMUTE) || e->nin != 1 || !is_local(out)))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s reads tensor memory; tensor memory is only read by a copy "
               "(set or transpose) into registers (a local tensor)", expr_text(c, e));
  return *store ? out : e->in[0];
}

/* The number of 32-bit words one thread moves: vector elements x dtype bytes / 4. */
static int words_of(LowerCtx *c, const KNode *op, Val *tm) {
  int v = op->u.op.vector > 1 ? op->u.op.vector : 1;
  int d = (int)cf_dtype_size(tm->dtype), bytes = v * d;
  if (bytes % 4)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE,
               PREFIX "Vectorize size is not a multiple of 4 bytes. vec_size: %d, dtype_size: %d, vec_size_in_bytes: %d",
               v, d, bytes);
  int w = bytes / 4;
  if (w > 128 || (w & (w - 1)))
    lower_fail(c, CF_ERR_INVALID_SCHEDULE,
               PREFIX "Vectorize size of %d words (vec_size: %d, dtype_size: %d) is not a power of two from 1 to 128.",
               w, v, d);
  return w;
}

/* ---- the thread lattice: warp-collectiveness and outer strides ---------------------- */

/* Launch extents and the op's own extent on each thread dimension. */
static void lattice(Probe *p, Val *cv, const char *tv) {
  for (int d = 0; d < 3; d++) {
    KExpr *e = p->c->pdim[CF_PT_TIDX + d];
    p->dim[d] = 1;
    if (e && !kx_is_const(e, &p->dim[d]))
      lower_fail(p->c, CF_ERR_UNSUPPORTED, "compile: the tensor-memory access of %s runs in a block of symbolic size "
                 "(%s); tensor-memory accesses need constant thread extents", tv, cf_parallel_type_name(CF_PT_TIDX + d));
    p->limit[d] = p->dim[d];
    for (int i = 0; i < TV(cv)->nloop; i++) {
      Val *id = TV(cv)->loop[i];
      int64_t x;
      if (ID(id)->ptype == (cf_parallel_type)(CF_PT_TIDX + d) && ID(id)->iter_type != CF_ITER_BROADCAST &&
          ir_scalar_const_value(ID(id)->extent, &x))
        p->limit[d] = x;
    }
  }
}

/* nvFuser's grouping: thread dimensions (x innermost) merge with the next outer one while
 * the inner one is exact (the op spans its whole launch extent). The innermost group must
 * span whole warps; each outer group must start at a multiple of 32 threads. */
static void check_lattice(LowerCtx *c, const Probe *p) {
  int64_t group = 1, stride = 1;
  bool innermost = true, any = false;
  for (int d = 0; d < 3; d++) {
    if (p->dim[d] <= 1) continue;
    any = true;
    group *= p->limit[d];
    bool exact = p->limit[d] == p->dim[d];
    bool last = true;
    for (int e = d + 1; e < 3; e++) last &= p->dim[e] <= 1;
    if (exact && !last) continue; /* the next outer dimension joins this group */
    if (innermost && group % 32)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE,
                 PREFIX "TMem load/store must be warp-collective, but the innermost extent is not a multiple of 32.");
    if (!innermost && group != 1 && stride % 32)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "Outer parallel types' strides must be a multiple of 32.");
    innermost = false;
    stride = 1;
    for (int e = 0; e <= d; e++) stride *= p->dim[e];
    group = 1;
  }
  if (!any)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "TMem load/store must be warp-collective, but CTA size is one.");
}

/* tcgen05 instructions are not predicated, so every thread of the block takes part (this
 * is also what lets the predicate pass leave tensor-memory accesses unguarded: their
 * indices stay inside the tile the allocation covers). */
static void check_whole_block(LowerCtx *c, const Probe *p, const char *tv) {
  for (int d = 0; d < 3; d++)
    if (p->limit[d] < p->dim[d])
      lower_fail(c, CF_ERR_INVALID_SCHEDULE,
                 PREFIX "%s spans %lld of the %lld threads on %s; every thread of the block must take part in a TMem "
                 "load/store, which cannot be predicated.", tv, (long long)p->limit[d], (long long)p->dim[d],
                 cf_parallel_type_name(CF_PT_TIDX + d));
}

/* ---- the probe: the op's indices with its loop indices replaced by variables ----------- */

static bool uses_var(const KExpr *e, const char *name) {
  if (!e) return false;
  if (e->kind == KX_VAR) return e->name == name;
  return uses_var(e->a, name) || uses_var(e->b, name) || uses_var(e->c, name);
}

static void make_probe(Probe *p, const KNode *op, Val *tm, Val *reg) {
  LowerCtx *c = p->c;
  Val *cv = op->u.op.src->out[0];
  int n = TV(cv)->nloop;
  KNode probe = *op;
  probe.u.op.loop_index = ARENA_ARRAY(c->a, KExpr *, n);
  p->vec_var = -1;
  for (int j = 0; j < n; j++) {
    Val *id = TV(cv)->loop[j];
    cf_parallel_type pt = ID(id)->ptype;
    if (ID(id)->iter_type == CF_ITER_BROADCAST) {
      probe.u.op.loop_index[j] = kx_const(c->a, 0);
    } else if (ir_ptype_is_thread(pt) || ir_ptype_is_block(pt)) {
      probe.u.op.loop_index[j] = kx_thread(c->a, pt, false);
    } else if (p->nvars < MAX_VARS) {
      int v = p->nvars++;
      p->var[v] = arena_printf(c->a, "tmem_probe%d", j);
      if (!ir_scalar_const_value(ID(id)->extent, &p->ext[v])) p->ext[v] = -1;
      if (pt == CF_PT_VECTORIZE && j == n - 1 && op->u.op.vector > 1) p->vec_var = v;
      probe.u.op.loop_index[j] = kx_var(c->a, p->var[v]);
    } else {
      probe.u.op.loop_index[j] = kx_const(c->a, 0);
    }
  }
  KAccess t = lower_index_access(c, &probe, tm), r = lower_index_access(c, &probe, reg);
  p->lane = t.lane;
  p->col = t.col;
  p->reg = r.index;
  for (int v = 0; v < p->nvars; v++)
    if (v != p->vec_var && !uses_var(p->lane, p->var[v]) && !uses_var(p->col, p->var[v]) &&
        !uses_var(p->reg, p->var[v]))
      p->ext[v] = 0;
}

/* The loop values probed: all zero, then each variable the indices use alone over a
 * sample of its range (its first SAMPLE values and its last). Returns false past the last
 * configuration. */
static bool probe_config(Probe *p, int k) {
  memset(p->val, 0, sizeof p->val);
  if (k == 0) return true;
  k--;
  for (int v = 0; v < p->nvars; v++) {
    int64_t e = p->ext[v], n = e <= 1 ? 0 : e - 1 < SAMPLE ? e - 1 : SAMPLE;
    if (k < n) {
      p->val[v] = k + 1 == SAMPLE ? e - 1 : k + 1;
      return true;
    }
    k -= (int)n;
  }
  return false;
}

/* ---- the brute force over the threads of the CTA ------------------------------------ */

typedef struct Warp {
  int64_t lane[32], col[32], reg[32];
} Warp;

static void eval_warp(Probe *p, int64_t w, Warp *W, const char *tv) {
  for (int l = 0; l < 32; l++) {
    int64_t t = w * 32 + l;
    p->tid[0] = t % p->dim[0];
    p->tid[1] = t / p->dim[0] % p->dim[1];
    p->tid[2] = t / (p->dim[0] * p->dim[1]);
    W->lane[l] = must_eval(p, p->lane, "lane", tv);
    W->col[l] = must_eval(p, p->col, "column", tv);
    W->reg[l] = must_eval(p, p->reg, "register", tv);
  }
}

static const char *const no_path =
    PREFIX "no tcgen05 data path matches the access.\n"
           "  Not 32x32b because warps are not linearly accessing the lane allocation.\n"
           "  Not 16x64b because it is not implemented in cfuser yet.\n"
           "  Not 16x128b because it is not implemented in cfuser yet.\n"
           "  Not 16x256b because it is not implemented in cfuser yet.\n"
           "  Not 16x32bx2 because it is not implemented in cfuser yet.";

/* Thread l must touch lane base + l, all threads the same columns. Returns whether the
 * warp's base is its sub-partition's (checked last, as nvFuser does). */
static bool check_warp(LowerCtx *c, const Warp *W, int64_t w) {
  int64_t s = W->lane[1] - W->lane[0];
  for (int l = 2; l < 32; l++)
    if (W->lane[l] - W->lane[0] != s * l) s = 0;
  if (s == 0) lower_fail(c, CF_ERR_INVALID_SCHEDULE, "%s", no_path);
  if (s != 1) lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "Warp linearly accessing lanes, but not with stride 1.");
  for (int l = 1; l < 32; l++)
    if (W->col[l] != W->col[0])
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "Threads of a warp access different columns.");
  return W->lane[0] == 32 * (w % 4);
}

/* The elements of one vector access are consecutive columns and registers, on one lane. */
static void check_vector(Probe *p, const Warp *W, int64_t w, const char *tv, int dsize) {
  LowerCtx *c = p->c;
  int64_t save = p->val[p->vec_var], vec = p->ext[p->vec_var];
  Warp V;
  for (int64_t v = 1; v < vec; v++) {
    p->val[p->vec_var] = save + v;
    eval_warp(p, w, &V, tv);
    for (int l = 0; l < 32; l++)
      if (V.lane[l] != W->lane[l] || V.col[l] != W->col[l] + v || V.reg[l] != W->reg[l] + v)
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "the vectorized axis of %s does not walk consecutive columns "
                   "of one lane and consecutive registers.", tv);
  }
  p->val[p->vec_var] = save;
  for (int l = 0; l < 32; l++)
    if (W->col[l] * dsize % 4 || W->reg[l] * dsize % 4)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, PREFIX "an access of %s does not start at a 32-bit boundary of tensor "
                 "memory or of its registers (column %lld, register %lld).", tv, (long long)W->col[l],
                 (long long)W->reg[l]);
}

static void brute_force(Probe *p, const char *tv, int dsize) {
  int64_t nthreads = p->dim[0] * p->dim[1] * p->dim[2];
  bool subpartition_ok = true;
  Warp W;
  for (int k = 0; probe_config(p, k); k++) {
    if (p->vec_var >= 0 && p->val[p->vec_var]) continue; /* vector elements: check_vector */
    for (int64_t w = 0; w * 32 < nthreads; w++) {
      eval_warp(p, w, &W, tv);
      subpartition_ok &= check_warp(p->c, &W, w);
      if (p->vec_var >= 0) check_vector(p, &W, w, tv, dsize);
    }
  }
  if (!subpartition_ok)
    lower_fail(p->c, CF_ERR_INVALID_SCHEDULE, PREFIX "Warps are not accessing the correct sub-partition.");
}

static void check_op(LowerCtx *c, const KNode *op) {
  const Expr *e = op->u.op.src;
  bool store;
  Val *tm = tmem_side(c, e, &store);
  if (!tm) return;
  words_of(c, op, tm);
  if (c->opts->skip_tmem_validation) return;
  Val *cv = e->out[0], *reg = store ? e->in[0] : cv;
  Probe p = {.c = c};
  const char *name = TV(cv)->display_name;
  lattice(&p, cv, name);
  check_lattice(c, &p);
  check_whole_block(c, &p, name);
  make_probe(&p, op, tm, reg);
  brute_force(&p, name, (int)cf_dtype_size(tm->dtype));
}

static bool on_op(KVisitor *v, KNode *n) {
  if (!n->u.op.reduction_init) check_op(v->user, n);
  return true;
}

void lower_tmem_pattern(LowerCtx *c) {
  KVisitor v = {.pre = {[KN_OP] = on_op}, .user = c, .arena = c->a};
  kir_visit(&v, &c->k->body);
}
