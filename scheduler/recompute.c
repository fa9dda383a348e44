/* scheduler/recompute.c: recomputing a normalization's row tensors at each reader, the
 * rewrite the persistent schedulers apply to an unscheduled copy before they schedule it
 * when the rows they keep should be the inputs' (sched_recompute), and the register copies
 * a shared-memory buffer is read through (sched_copy_reads). Below norm_sched.c, above the
 * IR (it edits expression operands and use lists, as scheduler/cache.c does).
 *
 * A computed row tensor read by several ops would be computed once and kept for all of
 * them; when its readers run in different passes over the row (before and after a
 * reduction) it is then a persistent buffer. Cloning its defining op for every reader
 * but the first, consumers first (reverse topological order), leaves every computed row
 * tensor with one reader, so it is computed inside its reader's loop: what persists is
 * only what is still read by several passes, the inputs' caches (SCHED_KEEP_CACHES, the
 * projection of persistent buffers to inputs), or nothing, every pass reading the
 * inputs again from global memory (SCHED_CLONE_CACHES: the multi-pass schedule).
 * Key decision: the clones are counted before anything is changed (sched_recompute_count)
 * and refused past SCHED_RECOMPUTE_MAX_OPS, since a DAG of shared subexpressions can need
 * exponentially many; a clone gets fresh IterDomains of the original's extents, mapped to
 * its operands' by its own expression, as any op's output. */
#include "scheduler/persistent.h"

/* An input's cache: a copy (Set) of a fusion input. */
static bool is_cache(cf_fusion *f, const Val *tv) {
  return tv->def && tv->def->op == OP_SET && ir_tv_is_input(f, tv->def->in[0]);
}

/* Whether tv's defining op is cloned for its extra readers. */
static bool clonable(cf_fusion *f, const bool *row, int nrow, const Val *tv, SchedRecompute mode) {
  if (!tv->def || ir_tv_is_input(f, tv) || (!sched_elementwise(tv->def) && ir_op_kind(tv->def->op) != OPK_BROADCAST))
    return false;
  if (tv->id < nrow && !row[tv->id]) return false;
  return mode == SCHED_CLONE_CACHES || !is_cache(f, tv);
}

static int tensor_uses(const Val *tv) {
  int n = 0;
  for (int i = 0; i < tv->uses.len; i++) n += ir_op_kind(((Expr *)tv->uses.items[i])->op) != OPK_TRANSFORM;
  return n;
}

int64_t sched_recompute_count(cf_fusion *f, Arena *a, const bool *row, SchedRecompute mode, bool *math) {
  int n;
  if (math) *math = false;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  int64_t *copies = ARENA_ARRAY(a, int64_t, f->vals.len), added = 0;
  if (!exprs || !copies) return -1;
  for (int i = n - 1; i >= 0; i--) {
    Val *t = exprs[i]->out[0];
    if (!clonable(f, row, f->vals.len, t, mode)) continue;
    int64_t c = 0;
    for (int u = 0; u < t->uses.len; u++) {
      Expr *e = t->uses.items[u];
      if (ir_op_kind(e->op) == OPK_TRANSFORM) continue;
      c += clonable(f, row, f->vals.len, e->out[0], mode) ? copies[e->out[0]->id] : 1;
      if (c > SCHED_RECOMPUTE_MAX_OPS) return c;
    }
    copies[t->id] = c > 0 ? c : 1;
    added += copies[t->id] - 1;
    if (math && copies[t->id] > 1 && ir_op_is_math_function(t->def->op)) *math = true;
    if (added > SCHED_RECOMPUTE_MAX_OPS) return added;
  }
  return added;
}

/* A new tensor computed by a copy of tv's defining op, reading the same operands. */
static Val *clone_def(cf_fusion *f, Val *tv) {
  Expr *e = tv->def;
  Val *ids[CF_MAX_RANK];
  for (int x = 0; x < TV(tv)->nlogical; x++) {
    Val *l = TV(tv)->logical[x];
    if (!(ids[x] = ir_id_new(f, ID(l)->extent, ID(l)->iter_type))) return NULL;
  }
  Val *n = ir_tv_new(f, tv->dtype, TV(tv)->nlogical, ids);
  Expr *c = n ? ir_expr_new(f, e->op, e->nin, e->in, 1, &n) : NULL;
  if (!c) return NULL;
  c->attr = e->attr; /* arrays (broadcast flags) are shared: the fusion's arena owns both */
  return n;
}

/* Reader u of `from` reads `to` instead. */
static void retarget(cf_fusion *f, Expr *u, Val *from, Val *to) {
  for (int i = 0; i < u->nin; i++)
    if (u->in[i] == from) u->in[i] = to;
  for (int i = 0; i < from->uses.len; i++)
    if (from->uses.items[i] == u) {
      from->uses.items[i] = from->uses.items[--from->uses.len];
      break;
    }
  if (!ptrvec_contains(&to->uses, u)) ptrvec_push(f->arena, &to->uses, u);
}

/* The first tensor reader of tv other than `keep`, or NULL. */
static Expr *other_reader(Val *tv, const Expr *keep) {
  for (int i = 0; i < tv->uses.len; i++) {
    Expr *u = tv->uses.items[i];
    if (u != keep && ir_op_kind(u->op) != OPK_TRANSFORM) return u;
  }
  return NULL;
}

static Expr *first_reader(Val *tv) { return other_reader(tv, NULL); }

cf_status sched_recompute(cf_fusion *f, Arena *a, const bool *row, SchedRecompute mode) {
  int n, nrow = f->vals.len;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  if (!exprs) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "recompute: out of memory");
  for (int i = n - 1; i >= 0 && !f->status; i--) {
    Val *t = exprs[i]->out[0];
    if (!clonable(f, row, nrow, t, mode) || tensor_uses(t) < 2) continue;
    Expr *keep = first_reader(t), *u;
    while ((u = other_reader(t, keep)) != NULL) {
      Val *c = clone_def(f, t);
      if (!c) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "recompute: out of memory");
      retarget(f, u, t, c);
    }
  }
  return f->status;
}

cf_status sched_copy_reads(cf_fusion *f, Val *tv, Val **copies, int *ncopies) {
  int n = 0;
  Expr **readers = ARENA_ARRAY(f->arena, Expr *, tv->uses.len);
  if (!readers) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "copy reads: out of memory");
  for (int i = 0; i < tv->uses.len; i++) /* a snapshot: each copy made below reads tv too */
    if (ir_op_kind(((Expr *)tv->uses.items[i])->op) != OPK_TRANSFORM) readers[n++] = tv->uses.items[i];
  for (int i = 0; i < n; i++) {
    Val *c = ir_tv_like(f, tv, tv->dtype);
    if (!c || !ir_expr_new(f, OP_SET, 1, &tv, 1, &c))
      return ir_error(f, CF_ERR_OUT_OF_MEMORY, "copy reads: out of memory");
    retarget(f, readers[i], tv, c);
    copies[(*ncopies)++] = c;
  }
  return f->status;
}
