/* ir/layout_algebra.c: the four primitive operations of CuTe's layout algebra:
 * coalesce, composition, complement and the right and left inverses. The divides and
 * products of ir/layout_tiling.c are built from them.
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
#include "ir/layout_internal.h"

/* ---- coalesce ---------------------------------------------------------------------- */

/* CuTe's bw_coalesce: walks the modes right to left keeping a front mode, which a mode
 * of static size 1 leaves alone, a static-1 front gives way to, and a mode s:d whose
 * s*d statically equals the front's stride merges into. With `keep_outside` (CuTe's
 * coalesce_x, used by composition) a static-1 last mode counts as _2, so that the
 * function is kept outside the domain too. */
static void coalesce_flat(const IrFlat *in, IrFlat *out, bool keep_outside, cf_layout_err *e)
{
  ir_layout_flat_init(out);
  out->tuple = false;
  if (in->n == 0) {
    ir_layout_flat_push(out, ir_layout_s(1), ir_layout_s(0), e);
    return;
  }
  IrInt rs[CF_LAYOUT_MAX_NODES], rd[CF_LAYOUT_MAX_NODES]; /* reversed: front at [n-1] */
  int n = 1;
  rs[0] = in->s[in->n - 1];
  rd[0] = in->d[in->n - 1];
  if (keep_outside && ir_layout_is_const(rs[0], 1))
    rs[0] = ir_layout_s(2);
  for (int i = in->n - 2; i >= 0; i--) {
    IrInt s = in->s[i], d = in->d[i];
    if (ir_layout_is_const(s, 1))
      continue;
    if (!out->tuple && ir_layout_is_const(rs[0], 1)) {
      rs[0] = s;
      rd[0] = d;
      continue;
    }
    IrInt sd = ir_layout_mul(s, d, e);
    if (rs[n - 1].is_static && sd.is_static && rd[n - 1].is_static && sd.value == rd[n - 1].value) {
      rs[n - 1] = ir_layout_mul(s, rs[n - 1], e);
      rd[n - 1] = d;
      continue;
    }
    rs[n] = s;
    rd[n] = d;
    n++;
    out->tuple = true;
  }
  if (!out->tuple && ir_layout_is_const(rs[0], 1)) {
    ir_layout_flat_push(out, ir_layout_s(1), ir_layout_s(0), e);
    return;
  }
  for (int k = n - 1; k >= 0; k--)
    ir_layout_flat_push(out, rs[k], rd[k], e);
}

static void coalesce_at(const cf_tuple_tree *l, int i, IrFlat *out, bool keep_outside,
                        cf_layout_err *e)
{
  IrFlat f;
  ir_layout_flat_of(l, i, &f, e);
  coalesce_flat(&f, out, keep_outside, e);
}

void ir_layout_coalesce_tree(const cf_tuple_tree *l, cf_tuple_tree *out, cf_layout_err *e)
{
  IrFlat c;
  coalesce_at(l, 0, &c, false, e);
  ir_layout_flat_to_tree(&c, out, e);
}

CF_API cf_status cf_layout_coalesce(const cf_layout *l, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  if (ir_layout_require_layout(&l->tree, "coalesce", e))
    ir_layout_coalesce_tree(&l->tree, &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

/* coalesce at the terminals of the profile; modes past the profile's rank are kept. */
static void coalesce_by_at(const cf_tuple_tree *l, int li, const cf_tuple_tree *p, int pi,
                           IrBuild *b)
{
  if (!ir_layout_ok(b->e))
    return;
  if (ir_layout_is_leaf(p, pi)) {
    IrFlat c;
    coalesce_at(l, li, &c, false, b->e);
    ir_layout_build_flat(b, &c);
    return;
  }
  int rl = ir_layout_rank_at(l, li), rp = p->node[pi].arity;
  if (rp > rl) {
    ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT, "coalesce: profile of rank %d for a mode of rank %d",
                   rp, rl);
    return;
  }
  ir_layout_build_open(b, 0);
  for (int k = 0; k < rl; k++) {
    int lk = ir_layout_child(l, li, k);
    if (k < rp)
      coalesce_by_at(l, lk, p, ir_layout_child(p, pi, k), b);
    else
      ir_layout_build_copy(b, l, lk);
  }
  ir_layout_build_close(b);
}

CF_API cf_status cf_layout_coalesce_by(const cf_layout *l, const cf_int_tuple *profile,
                                       cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  IrBuild b;
  ir_layout_build_init(&b, &t, e);
  if (ir_layout_require_layout(&l->tree, "coalesce", e))
    coalesce_by_at(&l->tree, 0, &profile->tree, 0, &b);
  return ir_layout_finish_layout(e, &t, out);
}

/* ---- composition ------------------------------------------------------------------- */

/* lhs (coalesced, flat) o rs:rd for one integral mode of the right-hand side: divide the
 * stride out of lhs's modes from the left, then keep rs elements. */
static void compose_mode(const IrFlat *lhs, IrInt rs, IrInt rd, IrBuild *b)
{
  cf_layout_err *e = b->e;
  if (rd.value == 0) { /* CuTe's shortcut for a static 0; a dynamic 0 would divide by 0 */
    ir_layout_build_leaf(b, rs, rd, 0);
    return;
  }
  if (!lhs->tuple) {
    ir_layout_build_leaf(b, rs, ir_layout_mul(rd, lhs->d[0], e), 0);
    return;
  }
  IrFlat res;
  ir_layout_flat_init(&res);
  IrInt rest_shape = rs, rest_stride = rd;
  for (int i = 0; i + 1 < lhs->n && ir_layout_ok(e); i++) {
    IrInt cs = lhs->s[i], cd = lhs->d[i], ars = ir_layout_abs(rest_stride, e);
    IrInt next_shape = ir_layout_ceil_div(cs, ars, e);
    IrInt next_stride = ir_layout_mul(ir_layout_ceil_div(ars, cs, e), ir_layout_signum(rest_stride), e);
    if (rest_shape.value > 1 && ars.value % cs.value != 0 &&
        (ars.value > cs.value || (cs.value % ars.value != 0 && rest_shape.value > next_shape.value)))
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "composition: stride divisibility condition "
                     "violated: stride %lld and shape %lld do not divide each other%s",
                     (long long)ars.value, (long long)cs.value,
                     ars.value > cs.value ? "" : ", and the elements do not fit in one mode");
    if (ir_layout_is_const(next_shape, 1) || ir_layout_is_const(rest_shape, 1)) {
      rest_stride = next_stride;
      continue;
    }
    IrInt new_shape = ir_layout_min(next_shape, rest_shape);
    if (rest_shape.value % new_shape.value != 0)
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "composition: shape divisibility condition "
                     "violated: shape %lld is not a multiple of %lld",
                     (long long)rest_shape.value, (long long)new_shape.value);
    ir_layout_flat_push(&res, new_shape, ir_layout_mul(rest_stride, cd, e), e);
    rest_shape = ir_layout_div(rest_shape, new_shape, e);
    rest_stride = next_stride;
  }
  IrInt last = ir_layout_mul(rest_stride, lhs->d[lhs->n - 1], e);
  if (res.n == 0) {
    ir_layout_build_leaf(b, rest_shape, last, 0);
    return;
  }
  if (!ir_layout_is_const(rest_shape, 1))
    ir_layout_flat_push(&res, rest_shape, last, e);
  res.tuple = res.n > 1; /* CuTe unwraps a single mode */
  ir_layout_build_flat(b, &res);
}

/* Right-distributivity: a tuple on the right is composed mode by mode. */
static void compose_tree(const IrFlat *lhs, const cf_tuple_tree *r, int ri, IrBuild *b)
{
  if (ir_layout_is_leaf(r, ri)) {
    compose_mode(lhs, ir_layout_leaf(r, ri, 0), ir_layout_leaf(r, ri, 1), b);
    return;
  }
  ir_layout_build_open(b, 0);
  for (int k = 0; k < r->node[ri].arity; k++)
    compose_tree(lhs, r, ir_layout_child(r, ri, k), b);
  ir_layout_build_close(b);
}

/* a's mode ai composed with the tiler node ti: by mode through tiler tuples (dropping
 * modes of a past the tiler's rank), as functions of integers at layouts. */
static void compose_at(const cf_tuple_tree *a, int ai, const cf_tuple_tree *t, int ti,
                       IrBuild *b)
{
  if (!ir_layout_ok(b->e))
    return;
  if (t->node[ti].flags & CF_TUPLE_NODE_TILER) {
    int rt = t->node[ti].arity, ra = ir_layout_rank_at(a, ai);
    if (rt > ra) {
      ir_layout_fail(b->e, CF_ERR_INVALID_ARGUMENT,
                     "composition: tiler of rank %d for a layout of rank %d", rt, ra);
      return;
    }
    ir_layout_build_open(b, 0);
    for (int k = 0; k < rt; k++)
      compose_at(a, ir_layout_child(a, ai, k), t, ir_layout_child(t, ti, k), b);
    ir_layout_build_close(b);
    return;
  }
  IrFlat lhs;
  coalesce_at(a, ai, &lhs, true, b->e);
  cf_tuple_tree r;
  ir_layout_tiler_leaf(t, ti, true, &r, b->e);
  if (ir_layout_ok(b->e))
    compose_tree(&lhs, &r, 0, b);
}

void ir_layout_composition_tree(const cf_tuple_tree *a, const cf_tuple_tree *b,
                                cf_tuple_tree *out, cf_layout_err *e)
{
  IrBuild bd;
  ir_layout_build_init(&bd, out, e);
  compose_at(a, 0, b, 0, &bd);
}

CF_API cf_status cf_layout_composition(const cf_layout *a, const cf_layout *b, cf_layout *out,
                                       cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  if (ir_layout_require_layout(&a->tree, "composition", e))
    ir_layout_composition_tree(&a->tree, &b->tree, &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

/* ---- complement -------------------------------------------------------------------- */

/* CuTe's coalesce of a shape: flatten, then merge neighbours that are both static or
 * both dynamic. The result is integral when everything merged. */
static void coalesce_shape(const IrInt *v, int n, IrFlat *out, cf_layout_err *e)
{
  ir_layout_flat_init(out);
  for (int k = 0; k < n; k++) {
    IrInt *back = out->n > 0 ? &out->s[out->n - 1] : NULL;
    if (back && back->is_static == v[k].is_static)
      *back = ir_layout_mul(*back, v[k], e);
    else
      ir_layout_flat_push(out, v[k], ir_layout_s(0), e);
  }
  out->tuple = out->n > 1;
}

/* Compact column-major strides from `start` (static-1 sizes get _0). */
static void compact_flat(IrFlat *f, IrInt start, cf_layout_err *e)
{
  for (int k = 0; k < f->n; k++) {
    f->d[k] = ir_layout_is_const(f->s[k], 1) ? ir_layout_s(0) : start;
    if (!ir_layout_is_const(f->s[k], 1))
      start = ir_layout_mul(start, f->s[k], e);
  }
}

/* The complement of a filtered layout: sort the strides, fill each gap between one
 * mode's extent and the next stride, then repeat up to the cotarget. */
static void complement_flat(const IrFlat *lay, const IrInt *cot, int ncot, IrFlat *out,
                            cf_layout_err *e)
{
  IrFlat rem = *lay, res, rest;
  ir_layout_flat_init(&res);
  IrInt prev = ir_layout_s(1); /* the last result stride */
  for (int k = 0; k < rem.n; k++)
    if (rem.d[k].value <= 0 || (rem.n > 1 && !rem.d[k].is_static))
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, rem.d[k].value <= 0
                     ? "complement: stride %lld is not positive"
                     : "complement: dynamic stride %lld in a layout of rank > 1",
                     (long long)rem.d[k].value);
  IrInt new_stride = ir_layout_s(1);
  while (rem.n > 0 && ir_layout_ok(e)) {
    int m = 0; /* CuTe's find(stride, min(stride)): the first smallest */
    for (int k = 1; k < rem.n; k++)
      if (rem.d[k].value < rem.d[m].value)
        m = k;
    IrInt min = rem.d[m];
    IrInt new_shape = ir_layout_div(min, prev, e);
    if (new_shape.value <= 0)
      ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "complement: non-injective layout "
                     "(stride %lld repeats an earlier index)", (long long)min.value);
    new_stride = ir_layout_mul(min, rem.s[m], e);
    ir_layout_flat_push(&res, new_shape, prev, e);
    prev = new_stride;
    ir_layout_flat_remove(&rem, m);
  }
  /* the rest: ceil_div(cotarget, new_stride) folded over the cotarget's integers */
  IrInt rest_v[CF_LAYOUT_MAX_NODES], r = new_stride;
  for (int k = 0; k < ncot; k++) {
    rest_v[k] = ir_layout_ceil_div(cot[k], r, e);
    r = ir_layout_ceil_div(r, cot[k], e);
  }
  coalesce_shape(rest_v, ncot, &rest, e);
  compact_flat(&rest, new_stride, e);
  for (int k = 0; k < rest.n; k++)
    ir_layout_flat_push(&res, rest.s[k], rest.d[k], e);
  coalesce_flat(&res, out, false, e);
}

/* CuTe's filter: static-0 strides become size _1, then coalesce. */
static void filter_flat(const cf_tuple_tree *a, IrFlat *out, cf_layout_err *e)
{
  IrFlat f;
  ir_layout_flat_of(a, 0, &f, e);
  for (int k = 0; k < f.n; k++)
    if (ir_layout_is_const(f.d[k], 0))
      f.s[k] = ir_layout_s(1);
  coalesce_flat(&f, out, false, e);
}

void ir_layout_complement_tree(const cf_tuple_tree *a, const cf_tuple_tree *cotarget,
                               cf_tuple_tree *out, cf_layout_err *e)
{
  IrFlat filt, res;
  filter_flat(a, &filt, e);
  IrInt cot[CF_LAYOUT_MAX_NODES];
  int ncot = 0;
  if (!cotarget) {
    cf_tuple_tree ft;
    ir_layout_flat_to_tree(&filt, &ft, e);
    cot[ncot++] = ir_layout_cosize_at(&ft, 0, e);
  } else {
    for (int i = 0; i < cotarget->count; i++)
      if (ir_layout_is_leaf(cotarget, i)) {
        cot[ncot] = ir_layout_leaf(cotarget, i, 0);
        if (cot[ncot].value < 1 || (cotarget->node[i].flags & CF_TUPLE_NODE_UNDERSCORE))
          ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "complement: cotarget %lld is not positive",
                         (long long)cot[ncot].value);
        ncot++;
      }
  }
  if (!ir_layout_ok(e))
    return;
  if (!filt.tuple && ir_layout_is_const(filt.d[0], 0)) { /* nothing left: all of the cotarget */
    coalesce_shape(cot, ncot, &res, e);
    compact_flat(&res, ir_layout_s(1), e);
  } else {
    complement_flat(&filt, cot, ncot, &res, e);
  }
  ir_layout_flat_to_tree(&res, out, e);
}

CF_API cf_status cf_layout_complement(const cf_layout *a, const cf_int_tuple *cotarget,
                                      cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  if (ir_layout_require_layout(&a->tree, "complement", e))
    ir_layout_complement_tree(&a->tree, cotarget ? &cotarget->tree : NULL, &t, e);
  return ir_layout_finish_layout(e, &t, out);
}

/* ---- inverses ---------------------------------------------------------------------- */

/* The modes of coalesce(a) as a list, their exclusive prefix products, and the order of
 * the modes by stride, sorted the way CuTe sorts (an exchange sort). Modes whose stride
 * is dynamic are left out of the order unless `all`. */
typedef struct Sorted {
  IrFlat c;
  IrInt pre[CF_LAYOUT_MAX_NODES + 1];
  int order[CF_LAYOUT_MAX_NODES], n;
} Sorted;

static void sort_modes(const cf_tuple_tree *a, bool all, Sorted *s, cf_layout_err *e)
{
  coalesce_at(a, 0, &s->c, false, e);
  s->pre[0] = ir_layout_s(1);
  for (int k = 0; k < s->c.n; k++)
    s->pre[k + 1] = ir_layout_mul(s->c.s[k], s->pre[k], e);
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
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  Sorted s;
  IrFlat r, c;
  if (ir_layout_require_layout(&a->tree, "right_inverse", e)) {
    sort_modes(&a->tree, false, &s, e);
    ir_layout_flat_init(&r);
    ir_layout_flat_push(&r, ir_layout_s(1), ir_layout_s(0), e);
    IrInt curr = ir_layout_s(1);
    for (int k = 0; k < s.n; k++) {
      int i = s.order[k];
      if (curr.is_static && curr.value == s.c.d[i].value) {
        ir_layout_flat_push(&r, s.c.s[i], s.pre[i], e);
        curr = ir_layout_mul(s.c.s[i], s.c.d[i], e);
      }
    }
    coalesce_flat(&r, &c, false, e);
    ir_layout_flat_to_tree(&c, &t, e);
  }
  return ir_layout_finish_layout(e, &t, out);
}

CF_API cf_status cf_layout_left_inverse(const cf_layout *a, cf_layout *out, cf_layout_err *err)
{
  cf_layout_err local, *e = ir_layout_err_begin(err, &local);
  cf_tuple_tree t;
  Sorted s;
  IrFlat r, c;
  if (ir_layout_require_layout(&a->tree, "left_inverse", e)) {
    sort_modes(&a->tree, true, &s, e);
    ir_layout_flat_init(&r);
    IrInt size = ir_layout_s(1), stride = ir_layout_s(0);
    for (int k = 0; k < s.n && ir_layout_ok(e); k++) {
      int i = s.order[k];
      IrInt d = s.c.d[i];
      if (!d.is_static)
        ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "left_inverse: needs static strides, "
                       "got the dynamic stride %lld", (long long)d.value);
      if (ir_layout_is_const(d, 0))
        continue;
      if (d.value % size.value != 0)
        ir_layout_fail(e, CF_ERR_INVALID_ARGUMENT, "left_inverse: divisibility condition "
                       "violated: stride %lld is not a multiple of %lld",
                       (long long)d.value, (long long)size.value);
      IrInt q = ir_layout_div(d, size, e);
      ir_layout_flat_push(&r, q, stride, e);
      size = ir_layout_mul(size, q, e);
      stride = s.pre[i];
    }
    ir_layout_flat_push(&r, s.c.s[s.order[s.n - 1]], stride, e);
    coalesce_flat(&r, &c, false, e);
    ir_layout_flat_to_tree(&c, &t, e);
  }
  return ir_layout_finish_layout(e, &t, out);
}
