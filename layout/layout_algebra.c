/* layout/layout_algebra.c: the primitive operations of CuTe's layout algebra:
 * coalesce and filter, composition, complement and the right and left inverses. The divides and
 * products of layout/layout_tiling.c are built from them.
 *
 * Key decision: each function follows the steps of CuTe's implementation (the same
 * backward merge in coalesce, the same divide-out/mod-out walk in composition, the same
 * stride sort in complement and the inverses), because the staticness of a result, and
 * therefore how it prints, depends on the exact sequence of operations and on which
 * merges are statically provable. Where CuTe only checks a precondition at compile time
 * (static operands) we check it always, whatever the staticness, and composition also
 * rejects the case CuTe's weak stride check lets through with a wrong result: a stride
 * smaller than a mode that does not divide it, with more elements than fit in the mode
 * (CuTe computes (6,2):(1,7) o 4:4 = (2,2):(4,7), which maps 2 to 7 instead of 9). A
 * mode of size 1 needs no divisibility, so it is never rejected. */
#include "layout/layout_internal.h"

/* ---- coalesce ---------------------------------------------------------------------- */

/* CuTe's bw_coalesce: walks the modes right to left keeping a front mode, which a mode
 * of static size 1 leaves alone, a static-1 front gives way to, and a mode s:d whose
 * s*d statically equals the front's stride merges into. With `keep_outside` (CuTe's
 * coalesce_x, used by composition) a static-1 last mode counts as _2, so that the
 * function is kept outside the domain too. */
static void coalesce_flat(const LayFlat *in, LayFlat *out, bool keep_outside, cf_layout_err *e)
{
  lay_flat_init(out);
  out->tuple = false;
  if (in->n == 0) {
    lay_flat_push(out, lay_s(1), lay_s(0), e);
    return;
  }
  LayInt rs[CF_LAYOUT_MAX_NODES], rd[CF_LAYOUT_MAX_NODES]; /* reversed: front at [n-1] */
  int n = 1;
  rs[0] = in->s[in->n - 1];
  rd[0] = in->d[in->n - 1];
  if (keep_outside && lay_is_const(rs[0], 1))
    rs[0] = lay_s(2);
  for (int i = in->n - 2; i >= 0; i--) {
    LayInt s = in->s[i], d = in->d[i];
    if (lay_is_const(s, 1))
      continue;
    if (!out->tuple && lay_is_const(rs[0], 1)) {
      rs[0] = s;
      rd[0] = d;
      continue;
    }
    LayInt sd = lay_mul(s, d, e);
    if (rs[n - 1].is_static && sd.is_static && rd[n - 1].is_static && sd.value == rd[n - 1].value) {
      rs[n - 1] = lay_mul(s, rs[n - 1], e);
      rd[n - 1] = d;
      continue;
    }
    rs[n] = s;
    rd[n] = d;
    n++;
    out->tuple = true;
  }
  if (!out->tuple && lay_is_const(rs[0], 1)) {
    lay_flat_push(out, lay_s(1), lay_s(0), e);
    return;
  }
  for (int k = n - 1; k >= 0; k--)
    lay_flat_push(out, rs[k], rd[k], e);
}

static void coalesce_at(const cf_tuple_tree *l, int i, LayFlat *out, bool keep_outside,
                        cf_layout_err *e)
{
  LayFlat f;
  lay_flat_of(l, i, &f, e);
  coalesce_flat(&f, out, keep_outside, e);
}

/* CuTe's filter: modes of static stride 0 become size _1 (filter_zeros), then coalesce,
 * which drops every mode of static size 1. */
static void filter_at(const cf_tuple_tree *l, int i, LayFlat *out, cf_layout_err *e)
{
  LayFlat f;
  lay_flat_of(l, i, &f, e);
  for (int k = 0; k < f.n; k++)
    if (lay_is_const(f.d[k], 0))
      f.s[k] = lay_s(1);
  coalesce_flat(&f, out, false, e);
}

void lay_coalesce_tree(const cf_tuple_tree *l, cf_tuple_tree *out, cf_layout_err *e)
{
  LayFlat c;
  coalesce_at(l, 0, &c, false, e);
  lay_flat_to_tree(&c, out, e);
}

CF_API cf_status cf_layout_coalesce(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  if (lay_require_layout(&l->tree, "coalesce", e))
    lay_coalesce_tree(&l->tree, &t, e);
  return lay_finish_layout(e, &t, out);
}

/* coalesce (or filter) at the terminals of the profile; modes past the profile's rank
 * are kept. */
static void coalesce_by_at(const cf_tuple_tree *l, int li, const cf_tuple_tree *p, int pi,
                           bool filter, LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_leaf(p, pi)) {
    LayFlat c;
    if (filter)
      filter_at(l, li, &c, b->e);
    else
      coalesce_at(l, li, &c, false, b->e);
    lay_build_flat(b, &c);
    return;
  }
  int rl = lay_rank_at(l, li), rp = p->node[pi].arity;
  if (rp > rl) {
    lay_fail(b->e, CF_ERR_INVALID_ARGUMENT, "%s: profile of rank %d for a mode of rank %d",
             filter ? "filter" : "coalesce", rp, rl);
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < rl; k++) {
    int lk = lay_child(l, li, k);
    if (k < rp)
      coalesce_by_at(l, lk, p, lay_child(p, pi, k), filter, b);
    else
      lay_build_copy(b, l, lk);
  }
  lay_build_close(b);
}

static cf_status by_profile(const cf_layout *l, const cf_int_tuple *profile, bool filter,
                            cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayBuild b;
  lay_build_init(&b, &t, e);
  if (lay_require_layout(&l->tree, filter ? "filter" : "coalesce", e))
    coalesce_by_at(&l->tree, 0, &profile->tree, 0, filter, &b);
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_coalesce_by(const cf_layout *l, const cf_int_tuple *profile,
                                       cf_layout *out, cf_layout_err *err)
{
  return by_profile(l, profile, false, out, err);
}

CF_API cf_status cf_layout_filter(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  LayFlat f;
  if (lay_require_layout(&l->tree, "filter", e)) {
    filter_at(&l->tree, 0, &f, e);
    lay_flat_to_tree(&f, &t, e);
  }
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_filter_by(const cf_layout *l, const cf_int_tuple *profile,
                                     cf_layout *out, cf_layout_err *err)
{
  return by_profile(l, profile, true, out, err);
}

/* ---- composition ------------------------------------------------------------------- */

/* lhs (coalesced, flat) o rs:rd for one integral mode of the right-hand side: divide the
 * stride out of lhs's modes from the left, then keep rs elements. */
static void compose_mode(const LayFlat *lhs, LayInt rs, LayInt rd, LayBuild *b)
{
  cf_layout_err *e = b->e;
  if (rd.value == 0) { /* CuTe's shortcut for a static 0; a dynamic 0 would divide by 0 */
    lay_build_leaf(b, rs, rd, 0);
    return;
  }
  if (!lhs->tuple) {
    lay_build_leaf(b, rs, lay_mul(rd, lhs->d[0], e), 0);
    return;
  }
  LayFlat res;
  lay_flat_init(&res);
  LayInt rest_shape = rs, rest_stride = rd;
  for (int i = 0; i + 1 < lhs->n && lay_ok(e); i++) {
    LayInt cs = lhs->s[i], cd = lhs->d[i], ars = lay_abs(rest_stride, e);
    LayInt next_shape = lay_ceil_div(cs, ars, e);
    LayInt next_stride = lay_mul(lay_ceil_div(ars, cs, e), lay_signum(rest_stride), e);
    if (rest_shape.value > 1 && ars.value % cs.value != 0 &&
        (ars.value > cs.value || (cs.value % ars.value != 0 && rest_shape.value > next_shape.value)))
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "composition: stride divisibility condition "
                     "violated: stride %lld and shape %lld do not divide each other%s",
                     (long long)ars.value, (long long)cs.value,
                     ars.value > cs.value ? "" : ", and the elements do not fit in one mode");
    if (lay_is_const(next_shape, 1) || lay_is_const(rest_shape, 1)) {
      rest_stride = next_stride;
      continue;
    }
    LayInt new_shape = lay_min(next_shape, rest_shape);
    if (rest_shape.value % new_shape.value != 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "composition: shape divisibility condition "
                     "violated: shape %lld is not a multiple of %lld",
                     (long long)rest_shape.value, (long long)new_shape.value);
    lay_flat_push(&res, new_shape, lay_mul(rest_stride, cd, e), e);
    rest_shape = lay_div(rest_shape, new_shape, e);
    rest_stride = next_stride;
  }
  LayInt last = lay_mul(rest_stride, lhs->d[lhs->n - 1], e);
  if (res.n == 0) {
    lay_build_leaf(b, rest_shape, last, 0);
    return;
  }
  if (!lay_is_const(rest_shape, 1))
    lay_flat_push(&res, rest_shape, last, e);
  res.tuple = res.n > 1; /* CuTe unwraps a single mode */
  lay_build_flat(b, &res);
}

/* Right-distributivity: a tuple on the right is composed mode by mode. */
static void compose_tree(const LayFlat *lhs, const cf_tuple_tree *r, int ri, LayBuild *b)
{
  if (lay_is_leaf(r, ri)) {
    compose_mode(lhs, lay_leaf(r, ri, 0), lay_leaf(r, ri, 1), b);
    return;
  }
  lay_build_open(b, 0);
  for (int k = 0; k < r->node[ri].arity; k++)
    compose_tree(lhs, r, lay_child(r, ri, k), b);
  lay_build_close(b);
}

/* a's mode ai composed with the tiler node ti: by mode through tiler tuples (dropping
 * modes of a past the tiler's rank), as functions of integers at layouts, unchanged at `_`. */
static void compose_at(const cf_tuple_tree *a, int ai, const cf_tuple_tree *t, int ti,
                       LayBuild *b)
{
  if (!lay_ok(b->e))
    return;
  if (lay_is_underscore(t, ti)) { /* CuTe: composition(l, _) is l */
    lay_build_copy(b, a, ai);
    return;
  }
  if (t->node[ti].flags & CF_TUPLE_NODE_TILER) {
    int rt = t->node[ti].arity, ra = lay_rank_at(a, ai);
    if (rt > ra) {
      lay_fail(b->e, CF_ERR_INVALID_ARGUMENT,
                     "composition: tiler of rank %d for a layout of rank %d", rt, ra);
      return;
    }
    lay_build_open(b, 0);
    for (int k = 0; k < rt; k++)
      compose_at(a, lay_child(a, ai, k), t, lay_child(t, ti, k), b);
    lay_build_close(b);
    return;
  }
  LayFlat lhs;
  coalesce_at(a, ai, &lhs, true, b->e);
  cf_tuple_tree r;
  lay_tiler_leaf(t, ti, true, &r, b->e);
  if (lay_ok(b->e))
    compose_tree(&lhs, &r, 0, b);
}

void lay_composition_tree(const cf_tuple_tree *a, const cf_tuple_tree *b,
                                cf_tuple_tree *out, cf_layout_err *e)
{
  LayBuild bd;
  lay_build_init(&bd, out, e);
  compose_at(a, 0, b, 0, &bd);
}

CF_API cf_status cf_layout_composition(const cf_layout *a, const cf_layout *b, cf_layout *out,
                                       cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  if (lay_require_layout(&a->tree, "composition", e))
    lay_composition_tree(&a->tree, &b->tree, &t, e);
  return lay_finish_layout(e, &t, out);
}

/* ---- complement -------------------------------------------------------------------- */

/* CuTe's coalesce of a shape: flatten, then merge neighbours that are both static or
 * both dynamic. The result is integral when everything merged. */
static void coalesce_shape(const LayInt *v, int n, LayFlat *out, cf_layout_err *e)
{
  lay_flat_init(out);
  for (int k = 0; k < n; k++) {
    LayInt *back = out->n > 0 ? &out->s[out->n - 1] : NULL;
    if (back && back->is_static == v[k].is_static)
      *back = lay_mul(*back, v[k], e);
    else
      lay_flat_push(out, v[k], lay_s(0), e);
  }
  out->tuple = out->n > 1;
}

/* Compact column-major strides from `start` (static-1 sizes get _0). */
static void compact_flat(LayFlat *f, LayInt start, cf_layout_err *e)
{
  for (int k = 0; k < f->n; k++) {
    f->d[k] = lay_is_const(f->s[k], 1) ? lay_s(0) : start;
    if (!lay_is_const(f->s[k], 1))
      start = lay_mul(start, f->s[k], e);
  }
}

/* The complement of a filtered layout: sort the strides, fill each gap between one
 * mode's extent and the next stride, then repeat up to the cotarget. */
static void complement_flat(const LayFlat *lay, const LayInt *cot, int ncot, LayFlat *out,
                            cf_layout_err *e)
{
  LayFlat rem = *lay, res, rest;
  lay_flat_init(&res);
  LayInt prev = lay_s(1); /* the last result stride */
  for (int k = 0; k < rem.n; k++)
    if (rem.d[k].value <= 0 || (rem.n > 1 && !rem.d[k].is_static))
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, rem.d[k].value <= 0
                     ? "complement: stride %lld is not positive"
                     : "complement: dynamic stride %lld in a layout of rank > 1",
                     (long long)rem.d[k].value);
  LayInt new_stride = lay_s(1);
  while (rem.n > 0 && lay_ok(e)) {
    int m = 0; /* CuTe's find(stride, min(stride)): the first smallest */
    for (int k = 1; k < rem.n; k++)
      if (rem.d[k].value < rem.d[m].value)
        m = k;
    LayInt min = rem.d[m];
    LayInt new_shape = lay_div(min, prev, e);
    if (new_shape.value <= 0)
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "complement: non-injective layout "
                     "(stride %lld repeats an earlier index)", (long long)min.value);
    new_stride = lay_mul(min, rem.s[m], e);
    lay_flat_push(&res, new_shape, prev, e);
    prev = new_stride;
    lay_flat_remove(&rem, m);
  }
  /* the rest: ceil_div(cotarget, new_stride) folded over the cotarget's integers */
  LayInt rest_v[CF_LAYOUT_MAX_NODES], r = new_stride;
  for (int k = 0; k < ncot; k++) {
    rest_v[k] = lay_ceil_div(cot[k], r, e);
    r = lay_ceil_div(r, cot[k], e);
  }
  coalesce_shape(rest_v, ncot, &rest, e);
  compact_flat(&rest, new_stride, e);
  for (int k = 0; k < rest.n; k++)
    lay_flat_push(&res, rest.s[k], rest.d[k], e);
  coalesce_flat(&res, out, false, e);
}

void lay_complement_tree(const cf_tuple_tree *a, const cf_tuple_tree *cotarget,
                               cf_tuple_tree *out, cf_layout_err *e)
{
  LayFlat filt, res;
  filter_at(a, 0, &filt, e);
  LayInt cot[CF_LAYOUT_MAX_NODES];
  int ncot = 0;
  if (!cotarget) {
    cf_tuple_tree ft;
    lay_flat_to_tree(&filt, &ft, e);
    cot[ncot++] = lay_cosize_at(&ft, 0, e);
  } else {
    for (int i = 0; i < cotarget->count; i++)
      if (lay_is_leaf(cotarget, i)) {
        cot[ncot] = lay_leaf(cotarget, i, 0);
        if (cot[ncot].value < 1 || (cotarget->node[i].flags & CF_TUPLE_NODE_UNDERSCORE))
          lay_fail(e, CF_ERR_INVALID_ARGUMENT, "complement: cotarget %lld is not positive",
                         (long long)cot[ncot].value);
        ncot++;
      }
  }
  if (!lay_ok(e))
    return;
  if (!filt.tuple && lay_is_const(filt.d[0], 0)) { /* nothing left: all of the cotarget */
    coalesce_shape(cot, ncot, &res, e);
    compact_flat(&res, lay_s(1), e);
  } else {
    complement_flat(&filt, cot, ncot, &res, e);
  }
  lay_flat_to_tree(&res, out, e);
}

CF_API cf_status cf_layout_complement(const cf_layout *a, const cf_int_tuple *cotarget,
                                      cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  if (lay_require_layout(&a->tree, "complement", e))
    lay_complement_tree(&a->tree, cotarget ? &cotarget->tree : NULL, &t, e);
  return lay_finish_layout(e, &t, out);
}

/* ---- inverses ---------------------------------------------------------------------- */

/* The modes of coalesce(a) as a list, their exclusive prefix products, and the order of
 * the modes by stride, sorted the way CuTe sorts (an exchange sort). Modes whose stride
 * is dynamic are left out of the order unless `all`. */
typedef struct Sorted {
  LayFlat c;
  LayInt pre[CF_LAYOUT_MAX_NODES + 1];
  int order[CF_LAYOUT_MAX_NODES], n;
} Sorted;

static void sort_modes(const cf_tuple_tree *a, bool all, Sorted *s, cf_layout_err *e)
{
  coalesce_at(a, 0, &s->c, false, e);
  s->pre[0] = lay_s(1);
  for (int k = 0; k < s->c.n; k++)
    s->pre[k + 1] = lay_mul(s->c.s[k], s->pre[k], e);
  s->n = 0;
  for (int k = 0; k < s->c.n; k++)
    if (all || s->c.d[k].is_static)
      s->order[s->n++] = k;
  for (int i = 0; i < s->n; i++)
    for (int j = i + 1; j < s->n; j++)
      if (s->c.d[s->order[j]].value < s->c.d[s->order[i]].value) {
        int x = s->order[i];
        s->order[i] = s->order[j];
        s->order[j] = x;
      }
}

/* Walks the modes up from stride 1, each taken only if its stride is (statically) the
 * extent reached so far. */
CF_API cf_status cf_layout_right_inverse(const cf_layout *a, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  Sorted s;
  LayFlat r, c;
  if (lay_require_layout(&a->tree, "right_inverse", e)) {
    sort_modes(&a->tree, false, &s, e);
    lay_flat_init(&r);
    lay_flat_push(&r, lay_s(1), lay_s(0), e);
    LayInt curr = lay_s(1);
    for (int k = 0; k < s.n; k++) {
      int i = s.order[k];
      if (curr.is_static && curr.value == s.c.d[i].value) {
        lay_flat_push(&r, s.c.s[i], s.pre[i], e);
        curr = lay_mul(s.c.s[i], s.c.d[i], e);
      }
    }
    coalesce_flat(&r, &c, false, e);
    lay_flat_to_tree(&c, &t, e);
  }
  return lay_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_left_inverse(const cf_layout *a, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  cf_tuple_tree t;
  Sorted s;
  LayFlat r, c;
  if (lay_require_layout(&a->tree, "left_inverse", e)) {
    sort_modes(&a->tree, true, &s, e);
    lay_flat_init(&r);
    LayInt size = lay_s(1), stride = lay_s(0);
    for (int k = 0; k < s.n && lay_ok(e); k++) {
      int i = s.order[k];
      LayInt d = s.c.d[i];
      if (!d.is_static)
        lay_fail(e, CF_ERR_INVALID_ARGUMENT, "left_inverse: needs static strides, "
                       "got the dynamic stride %lld", (long long)d.value);
      if (lay_is_const(d, 0))
        continue;
      if (d.value % size.value != 0)
        lay_fail(e, CF_ERR_INVALID_ARGUMENT, "left_inverse: divisibility condition "
                       "violated: stride %lld is not a multiple of %lld",
                       (long long)d.value, (long long)size.value);
      LayInt q = lay_div(d, size, e);
      lay_flat_push(&r, q, stride, e);
      size = lay_mul(size, q, e);
      stride = s.pre[i];
    }
    lay_flat_push(&r, s.c.s[s.order[s.n - 1]], stride, e);
    coalesce_flat(&r, &c, false, e);
    lay_flat_to_tree(&c, &t, e);
  }
  return lay_finish_layout(e, &t, out);
}
