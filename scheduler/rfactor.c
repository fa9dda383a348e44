/* scheduler/rfactor.c: cf_rfactor, nvFuser's rFactor. Splits a reduction T1 = op(T0)
 * whose loop domain holds several reduction axes into a partial reduction T2 = op(T0)
 * over the chosen loop axes and the final T1 = op(T2) over the others, whatever T1's
 * schedule (iteration axes split, merged or reordered included).
 *
 * The rfactored axes S depend on some of T1's transforms: those on the paths from T1's
 * root to S (the "static" transforms: they decide which elements each partial sum
 * covers). T2 is new: its root copies T1's root (reduction axes S derives from stay
 * reduction axes, the other reduction axes become iteration axes), T1's whole history is
 * replayed on it, its logical domain is its root with only the static transforms applied
 * (marked "rf", printed as nvFuser does), and its loop domain is T1's loop replayed, S
 * still reduction axes and the other reduction axes iteration axes. T1 keeps its handle
 * (so it stays the fusion's output) and gets a fresh domain: one root axis per
 * non-reduction axis of T2's logical domain, with T1's transforms replayed on them where
 * their inputs exist, and T1's loop domain minus S.
 *
 * Key decision: the root copies and both replays are made once, here, from T1's history
 * in topological order; nothing is searched for afterwards, so the two tensors' loops
 * correspond position by position (T2's loop is T1's, T1's loses only S) and anything
 * inlined into T1 before stays inlined into T2 at the same positions. */
#include <string.h>

#include "ir/dtype.h"
#include "scheduler/sched.h"

typedef struct Rf {
  cf_fusion *f;
  Arena *a;
  Val *tv, *t2;
  Expr **hist; /* T1's transforms, root to loop and allocation, inputs first */
  int nh;
  ValTab dep;  /* T1 IterDomains some rfactored axis derives from (the axes included) */
  ValTab p;    /* T1 IterDomain -> T2's */
  ValTab c;    /* T1 IterDomain -> T1's new one */
} Rf;

static bool oom(cf_fusion *f) { return ir_error(f, CF_ERR_OUT_OF_MEMORY, "rfactor: out of memory"), false; }

/* Marks the loop axes to rfactor in rf->dep; false after recording an error. */
static bool rfactor_axes(Rf *rf, int naxes, const int *axes) {
  cf_fusion *f = rf->f;
  Val *tv = rf->tv;
  TensorView *t = TV(tv);
  if (naxes <= 0 || !axes)
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: give at least one axis (naxes is %d%s)", naxes,
                       axes ? "" : ", axes is NULL"), false;
  for (int i = 0; i < naxes; i++) {
    int a = ir_wrap_axis(axes[i], t->nloop);
    if (a < 0 || an_tab_get(&rf->dep, t->loop[a]))
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: axis %d %s", axes[i],
                         a < 0 ? "out of range" : "given twice"), false;
    if (ID(t->loop[a])->iter_type != CF_ITER_REDUCTION)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: axis %d is not a reduction axis", axes[i]), false;
    if (!an_tab_put(&rf->dep, t->loop[a], tv)) return oom(f);
  }
  for (int a = 0; a < t->nloop; a++)
    if (ID(t->loop[a])->iter_type == CF_ITER_REDUCTION && !an_tab_get(&rf->dep, t->loop[a])) return true;
  return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: every reduction axis is rfactored; leave at least one "
                     "for %s", t->display_name), false;
}

static bool check_reduction(cf_fusion *f, Val *tv) {
  TensorView *t = TV(tv);
  if (!tv->def || !ir_op_is_reduction(tv->def->op))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: %s is not the output of a reduction",
                       t->display_name), false;
  for (int i = 0; i < t->nlogical; i++)
    if (ID(t->logical[i])->rfactor)
      return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "rfactor: %s is the partial result of an rfactor already; "
                           "rfactor the tensor it feeds instead", t->display_name), false;
  return true;
}

/* Closes rf->dep over the history: an input of a transform with a marked output is marked
 * (the IterDomains between the root and the rfactored axes). A broadcast axis merged into
 * them (cf_merge lets a reduction absorb one; nvFuser refuses such merges) would vanish
 * from both tensors' shapes: refused. */
static bool mark_dependencies(Rf *rf) {
  for (int k = rf->nh - 1; k >= 0; k--) {
    Expr *e = rf->hist[k];
    bool any = false;
    for (int o = 0; o < e->nout; o++) any |= an_tab_get(&rf->dep, e->out[o]) != NULL;
    for (int i = 0; any && i < e->nin; i++) {
      if (ID(e->in[i])->iter_type == CF_ITER_BROADCAST) {
        StrBuf b = {0};
        ir_print_id(&b, e->in[i]);
        ir_error_tv(rf->f, CF_ERR_UNSUPPORTED, rf->tv, "rfactor: the broadcast axis %s of %s is merged into the axes "
                    "the rfactored ones derive from; merge it after the rfactor", b.data ? b.data : "",
                    TV(rf->tv)->display_name);
        sb_free(&b);
        return false;
      }
      if (!an_tab_put(&rf->dep, e->in[i], rf->tv)) return oom(rf->f);
    }
  }
  return true;
}

static bool is_static(const Rf *rf, const Expr *e) {
  for (int o = 0; o < e->nout; o++)
    if (an_tab_get(&rf->dep, e->out[o])) return true;
  return false;
}

/* The iteration type of T1's IterDomain x in T2: reductions S does not derive from are
 * computed per element there (iteration axes), the others keep their type. */
static cf_iter_type partial_type(const Rf *rf, Val *x) {
  cf_iter_type t = ID(x)->iter_type;
  return t == CF_ITER_REDUCTION && !an_tab_get(&rf->dep, x) ? CF_ITER_ITERATION : t;
}

/* Makes transform e of T1 again on the images of its inputs in `map`, mapping its outputs;
 * false when an input has no image (skipped) or on OOM (recorded). */
static bool replay_one(Rf *rf, const Expr *e, ValTab *map, bool *oom_out) {
  Val *in[2] = {NULL, NULL}, *o[2] = {NULL, NULL};
  for (int i = 0; i < e->nin; i++)
    if (!(in[i] = an_tab_get(map, e->in[i]))) return false;
  bool ok = false;
  switch (e->op) {
  case OP_SPLIT: ok = ir_id_split(rf->f, in[0], e->attr.split.factor, e->attr.split.inner, &o[0], &o[1]); break;
  case OP_MERGE: ok = (o[0] = ir_id_merge(rf->f, in[0], in[1])) != NULL; break;
  case OP_SWIZZLE: ok = ir_id_swizzle(rf->f, e->attr.swizzle.type, in[0], in[1], &o[0], &o[1]); break;
  default: return false;
  }
  for (int k = 0; ok && k < e->nout; k++) ok = an_tab_put(map, e->out[k], o[k]);
  if (!ok) *oom_out = true;
  return ok;
}

/* T2's root: a copy of T1's root with partial_type; T1's history replayed on it. */
static bool make_partial_domain(Rf *rf) {
  TensorView *t = TV(rf->tv);
  bool failed = false;
  for (int i = 0; i < t->nroot; i++) {
    Val *r = t->root[i], *id = ir_id_new(rf->f, ID(r)->extent, partial_type(rf, r));
    if (!id || !an_tab_put(&rf->p, r, id)) return oom(rf->f);
  }
  for (int k = 0; k < rf->nh; k++) {
    Expr *e = rf->hist[k];
    if (!replay_one(rf, e, &rf->p, &failed)) return failed ? oom(rf->f) : (IR_INTERNAL(rf->f, replayed), false);
    for (int o = 0; o < e->nout; o++) {
      Val *x = an_tab_get(&rf->p, e->out[o]);
      ID(x)->iter_type = partial_type(rf, e->out[o]);
      ID(x)->rfactor = is_static(rf, e);
    }
  }
  return true;
}

/* T2's logical domain: T1's root with the static transforms applied in place (a split's
 * outputs replace its input, a merge's output replaces its outer input), mapped to T2. */
static Val **partial_logical(Rf *rf, int *n) {
  TensorView *t = TV(rf->tv);
  PtrVec dom = {0};
  for (int i = 0; i < t->nroot; i++) ptrvec_push(rf->a, &dom, t->root[i]);
  for (int k = 0; k < rf->nh; k++) {
    Expr *e = rf->hist[k];
    if (!is_static(rf, e)) continue;
    int at = -1;
    for (int i = 0; i < dom.len && at < 0; i++)
      if (dom.items[i] == e->in[0]) at = i;
    if (at < 0) return IR_INTERNAL(rf->f, static_input_in_logical), NULL;
    for (int i = 1; i < e->nin; i++) { /* merge: the inner input leaves */
      int j = 0;
      while (j < dom.len && dom.items[j] != e->in[i]) j++;
      if (j == dom.len) return IR_INTERNAL(rf->f, merge_inner_in_logical), NULL;
      memmove(&dom.items[j], &dom.items[j + 1], sizeof(void *) * (size_t)(dom.len - j - 1));
      dom.len--;
      if (j < at) at--;
    }
    dom.items[at] = e->out[0];
    for (int o = 1; o < e->nout; o++) {
      ptrvec_push(rf->a, &dom, NULL);
      memmove(&dom.items[at + o + 1], &dom.items[at + o], sizeof(void *) * (size_t)(dom.len - at - o - 1));
      dom.items[at + o] = e->out[o];
    }
  }
  Val **out = ARENA_ARRAY(rf->a, Val *, dom.len);
  for (int i = 0; out && i < dom.len; i++) out[i] = dom.items[i];
  *n = dom.len;
  return out;
}

/* Builds T2 from its root, logical (T1's IterDomains, mapped) and loop. */
static Val *make_partial(Rf *rf) {
  cf_fusion *f = rf->f;
  TensorView *t = TV(rf->tv);
  int nl;
  Val **l1 = make_partial_domain(rf) ? partial_logical(rf, &nl) : NULL;
  if (!l1) return NULL;
  Val **logical = ARENA_ARRAY(f->arena, Val *, nl), **root = ARENA_ARRAY(f->arena, Val *, t->nroot),
      **loop = ARENA_ARRAY(f->arena, Val *, t->nloop);
  if (!logical || !root || !loop) return oom(f), NULL;
  for (int i = 0; i < nl; i++) {
    logical[i] = an_tab_get(&rf->p, l1[i]);
    /* every axis that was a reduction of T1 is part of the rfactor (nvFuser's "rf") */
    ID(logical[i])->rfactor |= ID(l1[i])->iter_type == CF_ITER_REDUCTION;
  }
  for (int i = 0; i < t->nroot; i++) root[i] = an_tab_get(&rf->p, t->root[i]);
  for (int a = 0; a < t->nloop; a++) {
    loop[a] = an_tab_get(&rf->p, t->loop[a]);
    ID(loop[a])->ptype = ID(t->loop[a])->ptype;
  }
  /* The partials are sums in the accumulation type (float for half and bfloat16). */
  Val *t2 = ir_tv_new(f, ir_dtype_accumulate(rf->tv->dtype), nl, logical);
  if (!t2) return oom(f), NULL;
  TV(t2)->root = root;
  TV(t2)->nroot = t->nroot;
  TV(t2)->loop = loop;
  TV(t2)->nloop = t->nloop;
  TV(t2)->max_producer_pos = t->max_producer_pos;
  for (int i = 0; i < t->nroot; i++) ID(root[i])->tv = t2;
  for (int k = 0; k < rf->nh; k++)
    for (int o = 0; o < rf->hist[k]->nout; o++) ID((Val *)an_tab_get(&rf->p, rf->hist[k]->out[o]))->tv = t2;
  return t2;
}

/* T1's allocation domain mapped to its new IterDomains: reduction axes (never allocated)
 * without an image are dropped; false (recorded) when another axis has none. */
static bool final_alloc(Rf *rf, Val ***alloc, int8_t **contig, int *n) {
  TensorView *t = TV(rf->tv);
  *alloc = NULL;
  *n = 0;
  if (!t->alloc) return true;
  *alloc = ARENA_ARRAY(rf->f->arena, Val *, t->nalloc);
  *contig = ARENA_ARRAY(rf->f->arena, int8_t, t->nalloc);
  if (!*alloc || !*contig) return oom(rf->f);
  for (int i = 0; i < t->nalloc; i++) {
    Val *x = an_tab_get(&rf->c, t->alloc[i]);
    if (!x && ID(t->alloc[i])->iter_type == CF_ITER_REDUCTION) continue;
    if (!x)
      return ir_error_tv(rf->f, CF_ERR_UNSUPPORTED, rf->tv, "rfactor: allocation axis %d of %s derives from the "
                         "rfactored axes; set the allocation domain after rfactor", i, t->display_name), false;
    (*contig)[*n] = t->contiguity[i];
    (*alloc)[(*n)++] = x;
  }
  return true;
}

/* T1's new domain: a root axis per non-reduction axis of T2's logical domain (with T1's
 * type for it), T1's transforms replayed where their inputs exist, the loop minus S. */
static bool make_final(Rf *rf) {
  cf_fusion *f = rf->f;
  Val *tv = rf->tv, *t2 = rf->t2;
  TensorView *t = TV(tv), *p = TV(t2);
  ValTab back = {.arena = rf->a}; /* T2 IterDomain -> T1's */
  for (int k = 0; k < rf->nh + t->nroot; k++) {
    Expr *e = k < rf->nh ? rf->hist[k] : NULL;
    for (int o = 0; o < (e ? e->nout : 1); o++) {
      Val *x = e ? e->out[o] : t->root[k - rf->nh];
      if (!an_tab_put(&back, an_tab_get(&rf->p, x), x)) return oom(f);
    }
  }
  Val **root = ARENA_ARRAY(f->arena, Val *, p->nlogical > 0 ? p->nlogical : 1);
  int n = 0;
  for (int i = 0; root && i < p->nlogical; i++) {
    if (ID(p->logical[i])->iter_type == CF_ITER_REDUCTION) continue;
    Val *orig = an_tab_get(&back, p->logical[i]);
    Val *id = ir_id_new(f, ID(orig)->extent, ID(orig)->iter_type);
    if (!id || !an_tab_put(&rf->c, orig, id)) return oom(f);
    ID(id)->tv = tv;
    root[n++] = id;
  }
  bool failed = false;
  for (int k = 0; k < rf->nh && !failed; k++)
    if (replay_one(rf, rf->hist[k], &rf->c, &failed))
      for (int o = 0; o < rf->hist[k]->nout; o++) ID((Val *)an_tab_get(&rf->c, rf->hist[k]->out[o]))->tv = tv;
  if (!root || failed) return oom(f);
  Val **loop = ARENA_ARRAY(f->arena, Val *, t->nloop);
  int nloop = 0;
  for (int a = 0; loop && a < t->nloop; a++) {
    if (an_tab_get(&rf->dep, t->loop[a])) continue; /* rfactored: reduced in T2 (no loop axis is another's ancestor) */
    Val *x = an_tab_get(&rf->c, t->loop[a]);
    if (!x)
      return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "rfactor: loop axis %d of %s derives from the rfactored axes and "
                         "from others", a, t->display_name), false;
    ID(x)->ptype = ID(t->loop[a])->ptype;
    loop[nloop++] = x;
  }
  Val **alloc;
  int8_t *acontig = NULL;
  int nalloc;
  if (!loop || !final_alloc(rf, &alloc, &acontig, &nalloc)) return loop ? false : oom(f);
  int8_t *contig = ARENA_ARRAY(f->arena, int8_t, n > 0 ? n : 1); /* a 0-d result: one slot */
  if (!contig) return oom(f);
  for (int i = 0; i < n; i++) contig[i] = ID(root[i])->iter_type == CF_ITER_BROADCAST ? -1 : 1;
  t->root = t->logical = root;
  t->nroot = t->nlogical = n;
  t->loop = loop;
  t->nloop = nloop;
  t->alloc = alloc;
  t->nalloc = nalloc;
  t->contiguity = alloc ? acontig : contig;
  t->max_producer_pos = 0;
  return true;
}

cf_tv *cf_rfactor(cf_fusion *f, cf_tv *t, int naxes, const int *axes) {
  if (ir_check_tv(f, "rfactor", t)) return NULL;
  Val *tv = ir_tv(t);
  if (!check_reduction(f, tv)) return NULL;
  Arena *a = arena_create();
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "rfactor: out of memory"), NULL;
  Rf rf = {.f = f, .a = a, .tv = tv};
  rf.dep.arena = rf.p.arena = rf.c.arena = a;
  rf.hist = ir_tv_history_in(a, tv, &rf.nh);
  Val *t2 = NULL;
  if (rfactor_axes(&rf, naxes, axes) && mark_dependencies(&rf) && (rf.t2 = make_partial(&rf)) && make_final(&rf)) {
    t2 = rf.t2;
    Expr *e = tv->def;
    e->out[0] = t2; /* the partial reduction takes T1's definition */
    t2->def = e;
    tv->def = NULL;
    if (!ir_expr_new(f, e->op, 1, &t2, 1, &tv)) t2 = NULL, oom(f);
  }
  arena_destroy(a);
  return t2 ? ir_tv_handle(t2) : NULL;
}
