/* ir/verify.c: the IR verifier (cf_fusion_verify), which checks the invariants every
 * later layer relies on.
 *
 * Tests run it after building and scheduling a fusion, and lowering may run it on entry,
 * so a bug in an op, a transform or a scheduler shows up where it is made rather than as
 * a wrong kernel. Key decision: it checks the graph as data, trusting none of the code
 * that built it: dense ids, def/use links in both directions, tensor expressions over
 * TensorViews of this fusion, and for each TensorView that its loop and allocation
 * domains derive from its root/logical domain through its own transform history, that
 * every logical axis reaches the loop domain, and that its positions (compute-at,
 * max-producer, tensor-memory dim-sep) and contiguity are in range. A violation is
 * CF_ERR_INTERNAL with a message naming the invariant and the tensor. It also refuses
 * what a user can get wrong and no builder call catches (the executor runs it before
 * lowering): an output or operand neither computed nor an input, a tensor both input
 * and output (CF_ERR_INVALID_ARGUMENT), an allocation domain that does not cover a
 * logical axis (CF_ERR_INVALID_SCHEDULE). Linear in the fusion's size: marks are cleared
 * one by one and walks use a scratch arena. */
#include <stdlib.h>

#include "ir/ir.h"

/* Records "verify: <message>" on f with status s. Broken invariants are CF_ERR_INTERNAL
 * (fail); the user's own mistakes carry the status that says what they are. */
static cf_status user_error(cf_fusion *f, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_status user_error(cf_fusion *f, cf_status s, const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_puts(&b, "verify: ");
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  cf_status r = ir_error(f, s, "%s", b.data ? b.data : "");
  sb_free(&b);
  return r;
}
#define fail(f, ...) user_error((f), CF_ERR_INTERNAL, __VA_ARGS__)

static bool has_ptr(Val *const *v, int n, const void *p) {
  for (int i = 0; i < n; i++)
    if (v[i] == p) return true;
  return false;
}

/* ---- the graph ------------------------------------------------------------------------ */

static cf_status check_ids(cf_fusion *f) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->id != i) return fail(f, "value at index %d has id %d", i, v->id);
    if (v->fusion != f) return fail(f, "value %d belongs to another fusion", i);
  }
  for (int i = 0; i < f->exprs.len; i++)
    if (((Expr *)f->exprs.items[i])->id != i)
      return fail(f, "expression at index %d has id %d", i, ((Expr *)f->exprs.items[i])->id);
  return CF_OK;
}

static cf_status check_links(cf_fusion *f) {
  for (int i = 0; i < f->exprs.len; i++) {
    Expr *e = f->exprs.items[i];
    for (int j = 0; j < e->nout; j++)
      if (e->out[j]->def != e)
        return fail(f, "output %d of %s expression %d does not name it as its definition", j, ir_op_name(e->op), e->id);
    for (int j = 0; j < e->nin; j++)
      if (!ptrvec_contains(&e->in[j]->uses, e))
        return fail(f, "input %d of %s expression %d does not list it among its uses", j, ir_op_name(e->op), e->id);
  }
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->def && !has_ptr(v->def->out, v->def->nout, v))
      return fail(f, "value %d names %s expression %d as its definition but is not its output", v->id,
                  ir_op_name(v->def->op), v->def->id);
    for (int u = 0; u < v->uses.len; u++) {
      Expr *e = v->uses.items[u];
      if (!has_ptr(e->in, e->nin, v))
        return fail(f, "value %d lists %s expression %d as a use but is not its input", v->id, ir_op_name(e->op),
                    e->id);
    }
  }
  return CF_OK;
}

static bool is_tv_of(cf_fusion *f, const Val *v) { return v && v->kind == VAL_TV && v->fusion == f; }

static bool touches_tv(const Expr *e) {
  for (int j = 0; j < e->nin; j++)
    if (e->in[j] && e->in[j]->kind == VAL_TV) return true;
  for (int j = 0; j < e->nout; j++)
    if (e->out[j] && e->out[j]->kind == VAL_TV) return true;
  return false;
}

/* Every expression over tensors has one TensorView output and TensorView inputs, all of
 * this fusion. Checked over f's own list, before any walk that would follow a foreign
 * tensor into another fusion. */
static cf_status check_tensor_exprs(cf_fusion *f) {
  for (int i = 0; i < f->inputs.len; i++) {
    Val *v = f->inputs.items[i];
    if (!is_tv_of(f, v)) return fail(f, "input %d is not a TensorView of this fusion", i);
    if (v->def) return fail(f, "input %s has a definition", TV(v)->display_name);
  }
  for (int i = 0; i < f->outputs.len; i++)
    if (!is_tv_of(f, f->outputs.items[i])) return fail(f, "output %d is not a TensorView of this fusion", i);
  for (int i = 0; i < f->exprs.len; i++) {
    Expr *e = f->exprs.items[i];
    if (!touches_tv(e)) continue;
    if (e->nout != 1 || !is_tv_of(f, e->out[0]))
      return fail(f, "%s expression %d does not have one TensorView output of this fusion", ir_op_name(e->op), e->id);
    for (int j = 0; j < e->nin; j++)
      if (!is_tv_of(f, e->in[j]))
        return fail(f, "input %d of %s expression %d (defining %s) is not a TensorView of this fusion", j,
                    ir_op_name(e->op), e->id, TV(e->out[0])->display_name);
  }
  return CF_OK;
}

/* The mistakes a user can make while building (not broken invariants, so not internal
 * errors): an output or an operand that nothing computes and that is not an input, and
 * a tensor that is both an input and an output. Outputs come first so the message names
 * what the user asked for. */
cf_status ir_verify_sources(cf_fusion *f) {
  for (int i = 0; i < f->outputs.len; i++) {
    Val *v = f->outputs.items[i];
    if (ir_tv_is_input(f, v))
      return user_error(f, CF_ERR_INVALID_ARGUMENT, "%s is both an input and an output", TV(v)->display_name);
    if (!v->def)
      return user_error(f, CF_ERR_INVALID_ARGUMENT, "output %s is not computed by any expression and is not an input",
                        TV(v)->display_name);
  }
  Arena *scratch = arena_create();
  int n;
  if (!scratch) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "verify: out of memory");
  Expr **exprs = ir_fusion_tensor_exprs_in(scratch, f, &n);
  cf_status s = CF_OK;
  for (int i = 0; !s && i < n; i++) {
    Expr *e = exprs[i];
    for (int j = 0; !s && j < e->nin; j++)
      if (!e->in[j]->def && !ir_tv_is_input(f, e->in[j]))
        s = user_error(f, CF_ERR_INVALID_ARGUMENT,
                       "%s, operand %d of the %s defining %s, is not computed by any expression and is not an "
                       "input; add it with cf_fusion_add_input",
                       TV(e->in[j])->display_name, j, ir_op_name(e->op), TV(e->out[0])->display_name);
  }
  arena_destroy(scratch);
  return s;
}

/* ---- one TensorView -------------------------------------------------------------------- */

static char *id_str(const Val *id) {
  StrBuf b = {0};
  ir_print_id(&b, id);
  return b.data;
}

static cf_status fail_id(cf_fusion *f, Val *tv, const char *what, const Val *id, const char *why) {
  char *s = id_str(id);
  cf_status r = fail(f, "%s: %s %s %s", TV(tv)->display_name, what, s ? s : "?", why);
  free(s);
  return r;
}

static cf_status check_domain(cf_fusion *f, Val *tv, const char *what, Val *const *dom, int n) {
  if (n < 0 || (n > 0 && !dom)) return fail(f, "%s: %s domain is missing", TV(tv)->display_name, what);
  for (int i = 0; i < n; i++) {
    Val *id = dom[i];
    if (!id || id->kind != VAL_ID || id->fusion != f)
      return fail(f, "%s: %s axis %d is not an IterDomain of this fusion", TV(tv)->display_name, what, i);
    if (!ID(id)->extent || ID(id)->extent->kind != VAL_SCALAR) return fail_id(f, tv, what, id, "has no scalar extent");
    if (has_ptr(dom, i, id)) return fail_id(f, tv, what, id, "appears twice");
  }
  return CF_OK;
}

/* Loop and allocation axes must derive from the root/logical axes through the history;
 * every logical axis must reach the loop domain. `mark` is scratch indexed by Val id,
 * all zero on entry and on return (only the entries set here are cleared, so verifying a
 * fusion stays linear in its size). */
static cf_status check_derived(cf_fusion *f, Val *tv, char *mark, Expr **hist, int nh) {
  TensorView *t = TV(tv);
  for (int i = 0; i < t->nroot; i++) mark[t->root[i]->id] = 1;
  for (int i = 0; i < t->nlogical; i++) mark[t->logical[i]->id] = 1;
  for (int i = 0; i < nh; i++) {
    for (int j = 0; j < hist[i]->nin; j++)
      if (!mark[hist[i]->in[j]->id])
        return fail_id(f, tv, ir_op_name(hist[i]->op), hist[i]->in[j],
                       "consumes an axis not derived from the logical domain");
    for (int j = 0; j < hist[i]->nout; j++) mark[hist[i]->out[j]->id] = 1;
  }
  for (int i = 0; i < t->nloop; i++)
    if (!mark[t->loop[i]->id]) return fail_id(f, tv, "loop axis", t->loop[i], "is not derived from the logical domain");
  for (int i = 0; t->alloc && i < t->nalloc; i++)
    if (!mark[t->alloc[i]->id])
      return fail_id(f, tv, "allocation axis", t->alloc[i], "is not derived from the logical domain");
  return CF_OK;
}

/* Backwards from `dom`: marks 2 on what reaches it. With `all`, an expression's inputs
 * are reached only when all its outputs are (a split's two halves, both swizzled axes):
 * what an allocation domain covers; without, when any is (what a loop nest visits). */
static void mark_reaching(Val *const *dom, int n, Expr **hist, int nh, char *mark, bool all) {
  for (int i = 0; i < n; i++) mark[dom[i]->id] = 2;
  for (int i = nh - 1; i >= 0; i--) {
    int reached = 0;
    for (int j = 0; j < hist[i]->nout; j++) reached += mark[hist[i]->out[j]->id] == 2;
    if (all ? reached == hist[i]->nout : reached > 0)
      for (int j = 0; j < hist[i]->nin; j++) mark[hist[i]->in[j]->id] = 2;
  }
}

static void clear_marks(TensorView *t, char *mark, Expr **hist, int nh) {
  for (int i = 0; i < t->nroot; i++) mark[t->root[i]->id] = 0;
  for (int i = 0; i < t->nlogical; i++) mark[t->logical[i]->id] = 0;
  for (int i = 0; i < t->nloop; i++) mark[t->loop[i]->id] = 0;
  for (int i = 0; t->alloc && i < t->nalloc; i++) mark[t->alloc[i]->id] = 0;
  for (int i = 0; i < nh; i++) {
    for (int j = 0; j < hist[i]->nin; j++) mark[hist[i]->in[j]->id] = 0;
    for (int j = 0; j < hist[i]->nout; j++) mark[hist[i]->out[j]->id] = 0;
  }
}

/* Every logical axis reaches the loop domain, and every one that holds data (not a
 * broadcast or reduction axis) is covered by an allocation domain the user set: one that
 * misses an axis would be indexed as if it were smaller than the tensor. */
static cf_status check_reach(cf_fusion *f, Val *tv, char *mark, Expr **hist, int nh) {
  TensorView *t = TV(tv);
  mark_reaching(t->loop, t->nloop, hist, nh, mark, false);
  for (int i = 0; i < t->nlogical; i++)
    if (mark[t->logical[i]->id] != 2)
      return fail_id(f, tv, "logical axis", t->logical[i], "does not reach the loop domain");
  if (!t->alloc) return CF_OK;
  clear_marks(t, mark, hist, nh);
  mark_reaching(t->alloc, t->nalloc, hist, nh, mark, true);
  for (int i = 0; i < t->nlogical; i++) {
    Val *id = t->logical[i];
    if (mark[id->id] == 2 || ID(id)->iter_type != CF_ITER_ITERATION) continue;
    char *s = id_str(id);
    cf_status r = user_error(f, CF_ERR_INVALID_SCHEDULE, "%s: the allocation domain does not cover logical axis %s",
                             t->display_name, s ? s : "?");
    free(s);
    return r;
  }
  return CF_OK;
}

static cf_status check_history(cf_fusion *f, Val *tv, char *mark, Arena *scratch) {
  int nh;
  Expr **hist = ir_tv_history_in(scratch, tv, &nh);
  cf_status s = check_derived(f, tv, mark, hist, nh);
  if (!s) {
    clear_marks(TV(tv), mark, hist, nh);
    s = check_reach(f, tv, mark, hist, nh);
  }
  clear_marks(TV(tv), mark, hist, nh);
  return s;
}

static cf_status check_positions(cf_fusion *f, Val *tv) {
  TensorView *t = TV(tv);
  const char *name = t->display_name;
  if (t->ca_pos < 0 || t->ca_pos > t->nloop)
    return fail(f, "%s: compute-at position %d is outside 0..%d", name, t->ca_pos, t->nloop);
  if (t->max_producer_pos < 0 || t->max_producer_pos > t->nloop)
    return fail(f, "%s: max producer position %d is outside 0..%d", name, t->max_producer_pos, t->nloop);
  int na;
  Val **alloc = ir_tv_alloc_domain(tv, &na);
  if (t->mem != CF_MEM_TENSOR && t->tmem_dim_sep != 0)
    return fail(f, "%s: dim-sep position %d set on %s memory", name, t->tmem_dim_sep, cf_memory_type_name(t->mem));
  if (t->tmem_dim_sep < 0 || t->tmem_dim_sep > na)
    return fail(f, "%s: dim-sep position %d is outside 0..%d", name, t->tmem_dim_sep, na);
  if (na > 0 && !t->contiguity) return fail(f, "%s: allocation domain has no contiguity", name);
  for (int i = 0; i < na; i++) {
    int c = t->contiguity[i];
    bool bcast = ID(alloc[i])->iter_type == CF_ITER_BROADCAST;
    if (c < -1 || c > 1 || bcast != (c == -1))
      return fail_id(f, tv, "allocation axis", alloc[i],
                     bcast ? "is broadcast but has a contiguity" : "has no valid contiguity (0 or 1)");
  }
  return CF_OK;
}

static cf_status check_tv(cf_fusion *f, Val *tv, char *mark, Arena *scratch) {
  TensorView *t = TV(tv);
  cf_status s;
  if ((s = check_domain(f, tv, "root", t->root, t->nroot)) ||
      (s = check_domain(f, tv, "logical", t->logical, t->nlogical)) ||
      (s = check_domain(f, tv, "loop", t->loop, t->nloop)) ||
      (t->alloc && (s = check_domain(f, tv, "allocation", t->alloc, t->nalloc))))
    return s;
  /* An rfactor tensor's logical axes derive from its root through transforms. */
  bool rfactor = false;
  for (int i = 0; i < t->nlogical; i++) rfactor |= ID(t->logical[i])->rfactor;
  if (t->nroot != t->nlogical && !rfactor)
    return fail(f, "%s: root has %d axes but logical has %d", t->display_name, t->nroot, t->nlogical);
  for (int i = 0; i < t->nlogical; i++) {
    if (!rfactor && !has_ptr(t->root, t->nroot, t->logical[i]))
      return fail_id(f, tv, "logical axis", t->logical[i], "is not in the root domain");
    if (ID(t->logical[i])->tv != tv) return fail_id(f, tv, "logical axis", t->logical[i], "belongs to another tensor");
  }
  if ((s = check_history(f, tv, mark, scratch))) return s;
  return check_positions(f, tv);
}

cf_status cf_fusion_verify(cf_fusion *f) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  cf_status s;
  if ((s = check_ids(f)) || (s = check_links(f)) || (s = check_tensor_exprs(f)) || (s = ir_verify_sources(f))) return s;
  Arena *scratch = arena_create();
  int n;
  Val **tvs = scratch ? ir_fusion_all_tvs_in(scratch, f, &n) : NULL;
  char *mark = calloc((size_t)f->vals.len + 1, 1);
  if (!scratch || !mark) s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "verify: out of memory");
  for (int i = 0; !s && i < n; i++) s = check_tv(f, tvs[i], mark, scratch);
  free(mark);
  arena_destroy(scratch);
  return s;
}
