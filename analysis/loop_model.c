/* analysis/loop_model.c: the loop model, computed once per lowering (DESIGN.md 4a) and
 * read by every pass through analysis.h's helpers: the exact and permissive IterDomain
 * maps, the loop graph (loop_graph.c: which IterDomains share one for-loop), for every
 * loop axis the IterDomain its loop really iterates (its promotion), and the effective
 * parallel type of every IterDomain (parallel_types.c).
 *
 * Promotion. A loop group may mix a producer's axis that derives from a broadcast (alone,
 * or merged with concrete axes) with a consumer's axis over the concrete domain that
 * broadcast stands for. The loop runs over the member that covers the most: each axis
 * covers the exact classes of the concrete root axes it derives from (a broadcast root
 * covers nothing), and the promoted member covers every other member's classes. The
 * derivation goes through exact classes, not only the axis' own tensor: a consumer's root
 * axis that stands for an rfactor tensor's logical axis (made by a split of its root)
 * covers what that split's input covers, as the producers' replayed splits do. A group
 * where no member does (a broadcast concretized to two different domains inside one
 * loop, nvFuser's non-unique broadcast concretization) is refused, naming two members.
 *
 * Checks, each a refusal naming the tensors and axes: one tensor's two axes in one loop;
 * a loop that is a reduction axis of s and runs a tensor computed from s (the reduction
 * is complete only after the loop).
 *
 * Key decision: a refusal unwinds with longjmp to an_loop_model_build, which returns it
 * as a status and a message; everything made on the way lives in the caller's arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

typedef struct Build {
  LoopModel *m;
  Arena *a;
  jmp_buf unwind;
  cf_status status;
  char *error;      /* malloc'd */
  Expr **class_def; /* by exact class: a transform making one of its members, or NULL */
} Build;

static _Noreturn void fail_status(Build *c, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void fail_status(Build *c, cf_status s, const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  c->error = sb_take(&b);
  c->status = s;
  longjmp(c->unwind, 1);
}
#define fail(c, ...) fail_status((c), CF_ERR_INVALID_SCHEDULE, __VA_ARGS__)

/* An IterDomain printed for a message, in the arena (a refusal that follows unwinds past
 * any free). */
static const char *id_str(Build *c, const Val *id) {
  StrBuf b = {0};
  ir_print_id(&b, id);
  char *s = arena_strdup(c->a, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

/* The exact classes of the concrete root axes id derives from: a sorted set. */
typedef struct Cover {
  int *cls;
  int n;
} Cover;

static void cover_add(Build *c, Cover *s, int x) {
  for (int i = 0; i < s->n; i++)
    if (s->cls[i] == x) return;
  int *v = ARENA_ARRAY(c->a, int, s->n + 1);
  if (s->n) memcpy(v, s->cls, sizeof(int) * (size_t)s->n);
  v[s->n++] = x;
  s->cls = v;
}

/* A transform making each exact class, so that an axis another tensor makes by a transform
 * (an rfactor tensor's logical axes, which its consumer's root axes stand for) covers what
 * that transform's inputs cover. */
static void find_class_defs(Build *c) {
  cf_fusion *f = c->m->f;
  c->class_def = ARENA_ARRAY(c->a, Expr *, f->vals.len + 1);
  for (int i = 0; i < f->exprs.len; i++) {
    Expr *e = f->exprs.items[i];
    if (ir_op_kind(e->op) != OPK_TRANSFORM) continue;
    for (int o = 0; o < e->nout; o++) {
      int k = an_idmap_class(c->m->exact, e->out[o]);
      if (k < f->vals.len && !c->class_def[k]) c->class_def[k] = e;
    }
  }
}

static const Expr *def_of(Build *c, Val *id) {
  if (id->def && ir_op_kind(id->def->op) == OPK_TRANSFORM) return id->def;
  int k = an_idmap_class(c->m->exact, id);
  return k < c->m->f->vals.len ? c->class_def[k] : NULL;
}

static const Cover *cover_of(Build *c, Cover **memo, Val *id) {
  if (memo[id->id]) return memo[id->id];
  Cover *s = ARENA_NEW(c->a, Cover);
  memo[id->id] = s; /* a cycle through the classes (none is expected) ends here */
  const Expr *d = def_of(c, id);
  if (d) {
    for (int i = 0; i < d->nin; i++) {
      const Cover *in = cover_of(c, memo, d->in[i]);
      for (int k = 0; k < in->n; k++) cover_add(c, s, in->cls[k]);
    }
  } else if (ID(id)->iter_type != CF_ITER_BROADCAST) {
    cover_add(c, s, an_idmap_class(c->m->exact, id));
  }
  return s;
}

static int axis_pos(Val *id) {
  for (int j = 0; j < TV(ID(id)->tv)->nloop; j++)
    if (TV(ID(id)->tv)->loop[j] == id) return j;
  return -1;
}

static bool covers(const Cover *big, const Cover *small) {
  for (int i = 0; i < small->n; i++) {
    bool found = false;
    for (int k = 0; k < big->n && !found; k++) found = big->cls[k] == small->cls[i];
    if (!found) return false;
  }
  return true;
}

/* Loop axes of the kernel's tensors (fusion inputs have no loops in the kernel). */
#define FOR_LOOP_AXES(c, tv, j, ...)                                    \
  for (int t_ = 0; t_ < (c)->m->ntvs; t_++) {                              \
    Val *tv = (c)->m->tvs[t_];                                             \
    if (ir_tv_is_input((c)->m->f, tv)) continue;                           \
    for (int j = 0; j < TV(tv)->nloop; j++) __VA_ARGS__                 \
  }

/* Loop axes a and b share one loop but neither covers the other: name the member that
 * joins them (covered by both, e.g. the broadcast inlined into both). */
static _Noreturn void refuse_two_domains(Build *c, Cover **memo, Val *a, Val *b) {
  Val *join = NULL;
  int g = an_loop_group(c->m->loops, a);
  FOR_LOOP_AXES(c, tv, j, {
    Val *id = TV(tv)->loop[j];
    if (!join && an_loop_group(c->m->loops, id) == g && ID(id)->tv != ID(a)->tv && ID(id)->tv != ID(b)->tv &&
        covers(cover_of(c, memo, a), cover_of(c, memo, id)) && covers(cover_of(c, memo, b), cover_of(c, memo, id)))
      join = id;
  })
  if (!join) join = a;
  fail(c,
             "compile: %s's axis %d (%s) shares one loop with %s's axis %d (%s) and %s's axis %d (%s), which iterate "
             "different domains (a broadcast concretized to two extents in one loop); lower %s's compute-at position",
             TV(ID(join)->tv)->display_name, axis_pos(join), id_str(c, join), TV(ID(a)->tv)->display_name,
             axis_pos(a), id_str(c, a), TV(ID(b)->tv)->display_name, axis_pos(b), id_str(c, b),
             TV(ID(join)->tv)->display_name);
}

static bool intersects(const Cover *a, const Cover *b) {
  for (int i = 0; i < a->n; i++)
    for (int k = 0; k < b->n; k++)
      if (a->cls[i] == b->cls[k]) return true;
  return false;
}

/* The loop of tv's axis j may iterate more than that axis (its promoted domain), but never
 * a domain another axis of tv iterates: tv would run over it twice. (A loose permissive
 * pairing can inline an axis into a loop over a merge that includes another axis.) */
static void check_no_overlap(Build *c, Cover **memo, Val *tv, int j) {
  Val *id = TV(tv)->loop[j], *p = c->m->promoted[id->id];
  if (p == id) return;
  const Cover *own = cover_of(c, memo, id), *all = cover_of(c, memo, p);
  Cover extra = {0};
  for (int i = 0; i < all->n; i++)
    if (!covers(own, &(Cover){&all->cls[i], 1})) cover_add(c, &extra, all->cls[i]);
  for (int k = 0; k < TV(tv)->nloop; k++)
    if (k != j && intersects(&extra, cover_of(c, memo, TV(tv)->loop[k])))
      fail(c,
                 "compile: %s's axis %d (%s) runs in a loop over %s's axis %d (%s), which also iterates %s's axis %d "
                 "(%s); lower the compute-at position of %s's producer", TV(tv)->display_name, j, id_str(c, id),
                 TV(ID(p)->tv)->display_name, axis_pos(p), id_str(c, p), TV(tv)->display_name, k,
                 id_str(c, TV(tv)->loop[k]), TV(tv)->display_name);
}

/* Whether every element of tv has a place of its own in tv's buffer: nothing inlined
 * into a consumer and no axis on a thread or block index (nor a loop it shares). */
static bool fully_allocated(Build *c, Val *tv) {
  if (TV(tv)->ca_pos > 0) return false;
  for (int j = 0; j < TV(tv)->nloop; j++) {
    cf_parallel_type a = ID(TV(tv)->loop[j])->ptype, b = ID(an_promoted(c->m, TV(tv)->loop[j]))->ptype;
    if (ir_ptype_is_thread(a) || ir_ptype_is_block(a) || ir_ptype_is_thread(b) || ir_ptype_is_block(b)) return false;
  }
  return true;
}

/* tv's axis j right of its compute-at position runs in a loop tv shares with producers
 * only. When that loop iterates more than the axis (promoted to a larger domain), and
 * tv's buffer holds only part of tv (a slice per iteration of the outer shared loops, or
 * per thread), two iterations of the larger domain may land on one element of the slice
 * with different values, and a consumer, reading outside the loop, picks elements by
 * tv's own domain: refused, unless the consumer runs in that loop too. A global tensor, or one with a place for every element, is
 * written at its own coordinates whatever the loop, so it is exempt. */
static void check_read_outside_promoted_loop(Build *c, Cover **memo, Val *tv, int j) {
  Val *id = TV(tv)->loop[j], *p = c->m->promoted[id->id];
  if (p == id || j < TV(tv)->ca_pos || TV(tv)->mem == CF_MEM_GLOBAL || fully_allocated(c, tv)) return;
  if (covers(cover_of(c, memo, id), cover_of(c, memo, p))) return;
  Val *reader = NULL;
  for (int u = 0; !reader && u < tv->uses.len; u++) {
    Expr *e = tv->uses.items[u];
    Val *r = e->nout > 0 && e->out[0]->kind == VAL_TV ? e->out[0] : NULL;
    /* a consumer that runs in this very loop (joined through other tensors) reads each
     * element right after it is written */
    if (r && !(j < TV(r)->nloop && an_same_loop(c->m->loops, id, TV(r)->loop[j]))) reader = r;
  }
  if (!reader) return;
  fail(c,
             "compile: %s's axis %d (%s) runs in a loop over %s's axis %d (%s), a larger domain, but %s reads %s "
             "outside that loop; inline %s into %s there, or lower the compute-at position of %s's producers",
             TV(tv)->display_name, j, id_str(c, id), TV(ID(p)->tv)->display_name, axis_pos(p),
             id_str(c, p), TV(reader)->display_name, TV(tv)->display_name, TV(tv)->display_name,
             TV(reader)->display_name, TV(tv)->display_name);
}

/* For each group, the member whose cover contains every other member's. */
static void promote(Build *c) {
  int n = c->m->f->vals.len;
  Cover **memo = ARENA_ARRAY(c->a, Cover *, n + 1);
  find_class_defs(c);
  Val **best = ARENA_ARRAY(c->a, Val *, n + 1); /* by group */
  FOR_LOOP_AXES(c, tv, j, {
    Val *id = TV(tv)->loop[j];
    int g = an_loop_group(c->m->loops, id);
    if (!best[g] || cover_of(c, memo, id)->n > cover_of(c, memo, best[g])->n) best[g] = id;
  })
  c->m->promoted = ARENA_ARRAY(c->a, Val *, n + 1);
  FOR_LOOP_AXES(c, tv, j, {
    Val *id = TV(tv)->loop[j];
    Val *p = best[an_loop_group(c->m->loops, id)];
    if (!covers(cover_of(c, memo, p), cover_of(c, memo, id))) refuse_two_domains(c, memo, p, id);
    c->m->promoted[id->id] = p;
  })
  FOR_LOOP_AXES(c, tv, j, { check_no_overlap(c, memo, tv, j); })
  FOR_LOOP_AXES(c, tv, j, { check_read_outside_promoted_loop(c, memo, tv, j); })
}

static void check_groups(Build *c) {
  int n = c->m->f->vals.len;
  char *checked = arena_alloc(c->a, (size_t)n + 1);
  FOR_LOOP_AXES(c, tv, j, {
    Val *id = TV(tv)->loop[j];
    int g = an_loop_group(c->m->loops, id);
    for (int k = 0; k < j; k++)
      if (an_loop_group(c->m->loops, TV(tv)->loop[k]) == g)
        fail(c, "compile: axes %d and %d of %s would run in one loop", k, j,
                   TV(tv)->display_name);
    if (checked[g] || ID(id)->iter_type != CF_ITER_REDUCTION) continue;
    checked[g] = 1;
    Val *s = NULL, *reader = NULL;
    if (an_loop_conflict(c->m->loops, c->m->tvs, c->m->ntvs, &id, 1, &s, &reader))
      fail(c,
                 "compile: %s reads the result of the reduction %s inside the loop of its reduction axis %s; "
                 "lower the compute-at position of the tensor that joins them",
                 TV(reader)->display_name, TV(s)->display_name, id_str(c, id));
  })
}

/* A tensor read in two orders in one kernel (x^T + x: x's axis 0 is the sum's axis 0
 * through the add and its axis 1 through the transpose) has no loop, index or parallel
 * type that is right for both reads: refused, as nvFuser refuses a self mapping. */
static void check_self_mapping(Build *c) {
  const Expr *op;
  const Val *tv, *a, *b;
  if (!an_idmap_self_mapping(c->m->exact, &op, &tv, &a, &b) && !an_idmap_self_mapping(c->m->permissive, &op, &tv, &a, &b))
    return;
  fail_status(c, CF_ERR_UNSUPPORTED,
              "compile: %s's axes %s and %s are one axis through %s = %s(...) and the ops before it: the kernel "
              "reads %s in two orders (as in x^T + x), which no loop nest computes; compute the transposed value in "
              "a kernel of its own (define and run cuts the fusion there)",
              TV((Val *)tv)->display_name, id_str(c, a), id_str(c, b), TV(op->out[0])->display_name,
              ir_op_name(op->op), TV((Val *)tv)->display_name);
}

static void build(Build *c, cf_fusion *f) {
  LoopModel *m = c->m;
  m->tvs = ir_fusion_all_tvs_in(c->a, f, &m->ntvs);
  m->exact = an_idmap_build(f, false);
  m->permissive = an_idmap_build(f, true);
  m->loops = an_loop_graph_build(f);
  if (!m->exact || !m->permissive || !m->loops || (f->vals.len && !m->tvs))
    fail_status(c, CF_ERR_OUT_OF_MEMORY, "compile: out of memory");
  check_self_mapping(c);
  check_groups(c);
  promote(c);
  char *err = NULL;
  if (!an_parallel_types(m, c->a, &err)) {
    c->error = err;
    c->status = err ? CF_ERR_INVALID_SCHEDULE : CF_ERR_OUT_OF_MEMORY;
    longjmp(c->unwind, 1);
  }
}

cf_status an_loop_model_build(cf_fusion *f, Arena *a, LoopModel *m, char **error) {
  *m = (LoopModel){.f = f};
  *error = NULL;
  Build *c = ARENA_NEW(a, Build);
  if (!c) return CF_ERR_OUT_OF_MEMORY;
  c->m = m;
  c->a = a;
  if (setjmp(c->unwind) == 0) build(c, f);
  if (c->status != CF_OK) {
    *error = c->error;
    an_loop_model_free(m);
    return c->status;
  }
  return CF_OK;
}

void an_loop_model_free(LoopModel *m) {
  an_idmap_free(m->exact);
  an_idmap_free(m->permissive);
  an_loop_graph_free(m->loops);
  m->exact = m->permissive = NULL;
  m->loops = NULL;
}

Val *an_promoted(const LoopModel *m, const Val *id) {
  Val *p = m->promoted && id->id < m->f->vals.len ? m->promoted[id->id] : NULL;
  return p ? p : (Val *)id;
}

cf_parallel_type an_ptype(const LoopModel *m, const Val *id) {
  return m->ptype && id->id < m->f->vals.len ? m->ptype[id->id] : ID((Val *)id)->ptype;
}
