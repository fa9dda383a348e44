/* scheduler/domain.c: the public domain API (include/cfuser/domain.h): a TensorView's
 * root, logical, allocation and loop domains, setting the loop domain to IterDomains of
 * its history (nvFuser's setLoopDomain), and whether two IterDomains are mapped in the
 * exact, permissive or loop graph, asked of analysis/ (the graphs lowering reads too).
 *
 * Key decision: a new loop domain must be a cut of the tensor's transform DAG from its
 * logical domain: walking back from the given IterDomains reaches only logical axes,
 * every transform on the way has all its outputs inside the cut's ancestry (no half of a
 * split left out) and is the only use of its inputs that is (no axis covered twice), and
 * every logical axis is reached. Such a loop domain iterates every element once, which
 * indexing and lowering assume of any loop domain. */
#include "cfuser/domain.h"

#include <stdint.h>

#include "scheduler/sched.h"

static Val **domain_of(const cf_tv *t, cf_domain d, int *n) {
  *n = 0;
  if (!t) return NULL;
  Val *tv = ir_tv(t);
  TensorView *v = TV(tv);
  switch (d) {
  case CF_DOMAIN_ROOT: *n = v->nroot; return v->root;
  case CF_DOMAIN_LOGICAL: *n = v->nlogical; return v->logical;
  case CF_DOMAIN_ALLOCATION: return ir_tv_alloc_domain(tv, n);
  case CF_DOMAIN_LOOP: *n = v->nloop; return v->loop;
  }
  return NULL;
}

int cf_tv_domain_size(const cf_tv *t, cf_domain d) {
  int n;
  domain_of(t, d, &n);
  return n;
}

cf_id *cf_tv_domain_axis(const cf_tv *t, cf_domain d, int i) {
  int n;
  Val **ids = domain_of(t, d, &n);
  int a = ir_wrap_axis(i, n);
  return ids && a >= 0 ? ir_id_handle(ids[a]) : NULL;
}

/* ---- set_loop_domain --------------------------------------------------------------------- */

typedef struct Cut {
  cf_fusion *f;
  Val *tv;
  ValTab given;  /* id -> 1 + its position among the given ones */
  ValTab above;  /* ids the given ones derive from (their ancestors in tv's history) */
  ValTab used;   /* id -> the transform on a path to the given ones that uses it */
} Cut;

static bool is_logical(const Val *tv, const Val *id) {
  for (int i = 0; i < TV((Val *)tv)->nlogical; i++)
    if (TV((Val *)tv)->logical[i] == id) return true;
  return false;
}

static cf_status refuse_axis(Cut *c, int i, Val *id, const char *why) {
  StrBuf b = {0};
  ir_print_id(&b, id);
  cf_status s = ir_error_tv(c->f, CF_ERR_INVALID_ARGUMENT, c->tv, "set_loop_domain: axis %d (%s) %s", i,
                            b.data ? b.data : "", why);
  sb_free(&b);
  return s;
}

/* Walks back from id (given axis i) to the logical domain, marking ancestors and the
 * transforms that use them. */
static cf_status walk_up(Cut *c, int i, Val *id) {
  if (is_logical(c->tv, id)) return CF_OK;
  Expr *e = id->def;
  if (!e || ir_op_kind(e->op) != OPK_TRANSFORM || ID(id)->tv != c->tv)
    return refuse_axis(c, i, id, "is not derived from the logical domain");
  for (int k = 0; k < e->nin; k++) {
    Expr *u = an_tab_get(&c->used, e->in[k]);
    if (u && u != e) return refuse_axis(c, i, id, "covers a logical axis another given axis covers too");
    if (an_tab_get(&c->given, e->in[k])) return refuse_axis(c, i, id, "derives from another given axis");
    bool seen = an_tab_get(&c->above, e->in[k]) != NULL;
    if (!an_tab_put(&c->used, e->in[k], e) || !an_tab_put(&c->above, e->in[k], e))
      return ir_error(c->f, CF_ERR_OUT_OF_MEMORY, "set_loop_domain: out of memory");
    cf_status s = seen ? CF_OK : walk_up(c, i, e->in[k]);
    if (s) return s;
  }
  return CF_OK;
}

static cf_status refuse_id(Cut *c, Val *id, const char *why) {
  StrBuf b = {0};
  ir_print_id(&b, id);
  cf_status s = ir_error_tv(c->f, CF_ERR_INVALID_ARGUMENT, c->tv, "set_loop_domain: %s of %s %s", b.data ? b.data : "",
                            TV(c->tv)->display_name, why);
  sb_free(&b);
  return s;
}

/* Every logical axis is reached, and every output of a transform on the paths from it is
 * given or above a given one (no half of a split left out). */
static cf_status check_covered(Cut *c) {
  TensorView *t = TV(c->tv);
  for (int k = 0; k < t->nlogical; k++)
    if (!an_tab_get(&c->given, t->logical[k]) && !an_tab_get(&c->above, t->logical[k]))
      return refuse_id(c, t->logical[k], "(a logical axis) is not covered");
  for (int i = 0; i < c->f->exprs.len; i++) {
    Expr *e = c->f->exprs.items[i];
    if (ir_op_kind(e->op) != OPK_TRANSFORM || an_tab_get(&c->used, e->in[0]) != e) continue;
    for (int o = 0; o < e->nout; o++)
      if (!an_tab_get(&c->given, e->out[o]) && !an_tab_get(&c->above, e->out[o]))
        return refuse_id(c, e->out[o], "is not covered (the given axes take only part of the transform making it)");
  }
  return CF_OK;
}

cf_status cf_set_loop_domain(cf_fusion *f, cf_tv *t, int n, cf_id *const *ids) {
  const char *what = "set_loop_domain";
  cf_status s = ir_check_tv(f, what, t);
  if (s) return s;
  Val *tv = ir_tv(t);
  if (n < 0 || (n > 0 && !ids)) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: %d axes given%s", what, n,
                                                   ids ? "" : " and ids is NULL");
  if (TV(tv)->ca_pos > 0 || TV(tv)->max_producer_pos > 0)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, tv, "%s: %s is inlined already; set its loop domain before "
                       "inlining", what, TV(tv)->display_name);
  Arena *a = arena_create();
  if (!a) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  Cut c = {.f = f, .tv = tv, .given = {.arena = a}, .above = {.arena = a}, .used = {.arena = a}};
  Val **v = ARENA_ARRAY(a, Val *, n);
  for (int i = 0; v && i < n && !s; i++) {
    v[i] = ir_idv(ids[i]);
    if (!v[i] || v[i]->kind != VAL_ID || v[i]->fusion != f)
      s = ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, tv, "%s: axis %d is not an IterDomain of this fusion", what, i);
    else if (an_tab_get(&c.given, v[i]))
      s = refuse_axis(&c, i, v[i], "is given twice");
    else if (!an_tab_put(&c.given, v[i], (void *)(intptr_t)(i + 1)))
      s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  if (!v) s = ir_error(f, CF_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  for (int i = 0; i < n && !s; i++) s = walk_up(&c, i, v[i]);
  if (!s) s = check_covered(&c);
  if (!s) ir_tv_set_loop(f, tv, n, v);
  arena_destroy(a);
  return s;
}

/* ---- mapping queries ---------------------------------------------------------------------- */

cf_status cf_ids_mapped(cf_fusion *f, cf_id_map m, const cf_id *a, const cf_id *b, bool *mapped) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (f->status) return f->status;
  Val *x = ir_idv(a), *y = ir_idv(b);
  if (!mapped) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "ids_mapped: mapped is NULL");
  if (!x || !y || x->kind != VAL_ID || y->kind != VAL_ID || x->fusion != f || y->fusion != f)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "ids_mapped: %s is not an IterDomain of this fusion",
                    !x || x->kind != VAL_ID || x->fusion != f ? "a" : "b");
  if ((unsigned)m > CF_MAP_LOOP) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "ids_mapped: unknown map %d", (int)m);
  if (m == CF_MAP_LOOP) {
    LoopGraph *g = an_loop_graph_build(f);
    if (!g) return f->status;
    *mapped = an_same_loop(g, x, y);
    an_loop_graph_free(g);
    return CF_OK;
  }
  IdMap *map = an_idmap_build(f, m == CF_MAP_PERMISSIVE);
  if (!map) return f->status;
  *mapped = an_idmap_same(map, x, y);
  an_idmap_free(map);
  return CF_OK;
}
