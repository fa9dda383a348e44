/* analysis/vector_access.c: the rule for a vector access of global memory, one rule asked
 * in two places: by the automatic schedulers before they vectorize an axis (so that a
 * schedule they make is never refused for it) and by lowering's validate_vectorize pass,
 * which words its compile error from the reason returned here.
 * A vector of v elements along loop axis `id` of a copy tv moves v adjacent elements of a
 * global tensor g (tv itself when tv is in global memory, or the operand the copy reads
 * from global memory) only when
 *   1. id walks tv's innermost logical axis (trailing broadcast axes aside): up its
 *      history, the inner output of a split,
 *      or the output of a merge whose constant inner input v divides (a vector then never
 *      straddles two rows of the merge), down to that axis; and tv's innermost axis has
 *      unit stride (contiguous, not a strided input);
 *   2. for g other than tv: tv's innermost logical axis pairs (the copy's pairwise map)
 *      with g's innermost logical axis, which has unit stride in memory.
 * A merge that v does not divide (or of a symbolic inner extent) is walked too when it is
 * the tensor's *flat whole*: every non-broadcast logical axis of tv merged in order, and
 * both tv and g lie in memory as one contiguous run in that order (an_flat_contiguous): a
 * vector straddling two rows then still moves adjacent elements (issue 22: a [8191, 8191]
 * cast runs as one flat axis). an_vector_flat says when a vector's own split divides such
 * a flat whole: lowering may then end it in a partial vector (a tail) instead of asking
 * the split to divide, since every vector starts at a multiple of v of the flat index.
 * Key decision: a vector axis whose extent merely equals v is not enough; the pointwise
 * row once vectorized a [4, 32] input's row axis of 4, reached by a propagation through a
 * broadcast [32] that left the rows unmerged innermost (DAG seed 12000229 of define and
 * run: lowering refused the schedule, an internal error). Depends on ir/ only. */
#include <stdlib.h>

#include "analysis/analysis.h"

bool an_innermost_unit_stride(Val *tv) {
  const TensorView *t = TV(tv);
  return t->nlogical > 0 && !t->has_strides && t->contiguity[t->nlogical - 1] == 1;
}

int an_innermost_axis(Val *tv) {
  const TensorView *t = TV(tv);
  int i = t->nlogical - 1;
  while (i >= 0 && ID(t->logical[i])->iter_type == CF_ITER_BROADCAST) i--;
  return i;
}

bool an_flat_contiguous(Val *tv) {
  const TensorView *t = TV(tv);
  if (t->has_strides || (t->alloc && t->nalloc != t->nlogical)) return false;
  for (int i = 0; i < t->nlogical; i++) {
    cf_iter_type it = ID(t->logical[i])->iter_type;
    if ((t->alloc && t->alloc[i] != t->logical[i]) || it == CF_ITER_REDUCTION) return false;
    if (it != CF_ITER_BROADCAST && t->contiguity[i] != 1) return false;
  }
  return an_innermost_axis(tv) >= 0;
}

/* Appends to leaves (from *n, at most cap) the axes x is merged from, in order: x itself
 * when no merge made it. False past cap. */
static bool merge_leaves(const Val *x, const Val **leaves, int *n, int cap) {
  const Expr *d = x->def;
  if (d && d->op == OP_MERGE) return merge_leaves(d->in[0], leaves, n, cap) && merge_leaves(d->in[1], leaves, n, cap);
  if (*n >= cap) return false;
  leaves[(*n)++] = x;
  return true;
}

/* Whether x is tv's flat whole: its non-broadcast logical axes merged in order (or the one
 * such axis itself), contiguous in memory in that order. */
static bool flat_whole(Val *tv, const Val *x) {
  const TensorView *t = TV(tv);
  const Val *leaves[CF_MAX_RANK];
  int n = 0, k = 0;
  if (!an_flat_contiguous(tv) || !merge_leaves(x, leaves, &n, CF_MAX_RANK)) return false;
  for (int i = 0; i < t->nlogical; i++)
    if (ID(t->logical[i])->iter_type != CF_ITER_BROADCAST && (k >= n || leaves[k++] != t->logical[i])) return false;
  return k == n;
}

/* Rule 1: id (a vector of v elements) walks tv's innermost logical axis with unit stride
 * (the innermost but broadcast axes: of extent 1, they move no address; a matmul's
 * operand tile [M, K, 1] walks K), or a merge that is tv's flat whole, then *flat
 * receives that merge's output (else NULL). */
static bool walks_innermost(Val *tv, const Val *id, int64_t v, const Val **flat) {
  const TensorView *t = TV(tv);
  int in = an_innermost_axis(tv);
  *flat = NULL;
  if (in < 0 || t->has_strides || t->contiguity[in] != 1) return false;
  const Val *last = t->logical[in];
  while (id && id != last) {
    const Expr *d = id->def;
    int64_t inner;
    if (d && d->op == OP_SPLIT && d->out[1] == id) {
      id = d->in[0];
    } else if (d && d->op == OP_MERGE && ir_scalar_const_value(ID(d->in[1])->extent, &inner) && inner % v == 0) {
      id = d->in[1];
    } else if (d && d->op == OP_MERGE && flat_whole(tv, id)) {
      *flat = id;
      return true;
    } else {
      return false;
    }
  }
  return id == last;
}

/* Whether the global operand g of copy tv holds tv's flat whole `flat` as its own: each
 * axis merged into it pairs with g's non-broadcast logical axes in order, and g is
 * contiguous in that order too. */
static bool flat_in_operand(Val *tv, const Val *flat, Val *g) {
  const Val *leaves[CF_MAX_RANK];
  int n = 0, k = 0;
  if (!an_flat_contiguous(g) || !merge_leaves(flat, leaves, &n, CF_MAX_RANK)) return false;
  for (int i = 0; i < TV(g)->nlogical; i++) {
    Val *gi = TV(g)->logical[i];
    if (ID(gi)->iter_type != CF_ITER_BROADCAST && (k >= n || an_pairwise_partner(tv, g, leaves[k++]) != gi)) return false;
  }
  return k == n;
}

int an_vector_globals(Val *tv, Val *globals[2]) {
  int n = 0;
  if (TV(tv)->mem == CF_MEM_GLOBAL) globals[n++] = tv;
  const Expr *d = tv->def;
  if (d && d->nin > 0 && d->in[0]->kind == VAL_TV && TV(d->in[0])->mem == CF_MEM_GLOBAL) globals[n++] = d->in[0];
  return n;
}

const char *an_vector_refusal(Val *tv, const Val *id, int64_t v, Val *global) {
  const Val *flat;
  if (global == tv)
    return walks_innermost(tv, id, v, &flat) ? NULL : "it is not the innermost contiguous axis of the global tensor";
  static const char *const not_contiguous = "the global tensor it reads is not contiguous along it";
  if (!walks_innermost(tv, id, v, &flat)) return not_contiguous;
  if (flat) return flat_in_operand(tv, flat, global) ? NULL : not_contiguous;
  const TensorView *g = TV(global);
  /* the operand's axis that pairs with tv's innermost logical axis (the copy's map) */
  const Val *g_id = an_pairwise_partner(tv, global, TV(tv)->logical[an_innermost_axis(tv)]);
  int gi = an_innermost_axis(global);
  if (!g_id || gi < 0 || g->logical[gi] != g_id || g->has_strides || g->contiguity[gi] != 1) return not_contiguous;
  return NULL;
}

bool an_vector_flat(Val *tv, const Val *id) {
  const Expr *d = id->def;
  if (!d || d->op != OP_SPLIT || d->out[1] != id || !flat_whole(tv, d->in[0])) return false;
  Val *globals[2];
  int n = an_vector_globals(tv, globals);
  for (int i = 0; i < n; i++)
    if (globals[i] != tv && !flat_in_operand(tv, d->in[0], globals[i])) return false;
  return true;
}

const char *an_vector_refusal_any(Val *tv, const Val *id, int64_t v) {
  Val *globals[2];
  int n = an_vector_globals(tv, globals);
  for (int i = 0; i < n; i++) {
    const char *why = an_vector_refusal(tv, id, v, globals[i]);
    if (why) return why;
  }
  return NULL;
}
