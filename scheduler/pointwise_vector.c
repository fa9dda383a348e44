/* scheduler/pointwise_vector.c: the vector widths the pointwise scheduler chooses from
 * (scheduler/pointwise.c reads them in its plan).
 *   - along rows (sched_pw_row_vector): the vector walks the innermost axis and never
 *     straddles a row, so it must divide the innermost extent (a constant): a [8191,
 *     8191] cast runs scalar;
 *   - along the flat tensor (sched_pw_flat_vector, issue 22): when every tensor the tile
 *     vectorizes lies in memory as one contiguous run, the 1-D tile's merge of all axes
 *     is the tensors' flat index and a vector may straddle rows (analysis/'s rule for
 *     vector accesses takes such a merge). Its width is 16 bytes over the widest element
 *     whatever the extents: where it does not divide the element count, lowering ends
 *     the last vector in a tail (lower/vectorize.c). Inputs broadcast along some of the
 *     reference's axes (a bias) are not vectorized: each element is read at its index.
 * Key decision: fp4 (packed, written by even vectors along rows) keeps the row rule
 * whole: any packed tensor in the fusion turns the flat width off. */
#include "ir/dtype.h"
#include "scheduler/pointwise.h"

bool sched_pw_full_rank_input(Val *in, Val *ref) {
  int r = TV(ref)->nlogical;
  return TV(in)->nlogical == r && r > 0 && ID(TV(in)->logical[r - 1])->iter_type == CF_ITER_ITERATION;
}

/* Written only by vectors of an even width (one thread writes a byte whole,
 * lower/vectorize.c), its innermost extent (the reference's) even by its own rule,
 * checked at run time when symbolic. */
bool sched_pw_packed_output(cf_fusion *f) {
  for (int o = 0; o < f->outputs.len; o++)
    if (ir_dtype_is_packed(((Val *)f->outputs.items[o])->dtype)) return true;
  return false;
}

int64_t sched_pw_row_vector(cf_fusion *f, Val *ref) {
  int r = TV(ref)->nlogical;
  int64_t inner;
  bool packed = sched_pw_packed_output(f);
  bool constant = r > 0 && ir_scalar_const_value(ID(TV(ref)->logical[r - 1])->extent, &inner);
  if (r == 0 || (!constant && !packed)) return 1;
  size_t widest = 1;
  for (int i = 0; i < f->inputs.len + f->outputs.len; i++) {
    Val *t = i < f->inputs.len ? f->inputs.items[i] : f->outputs.items[i - f->inputs.len];
    if (i < f->inputs.len && !sched_pw_full_rank_input(t, ref)) continue;
    /* a symbolic innermost extent (an input the output's constant one is checked against
     * at run time) proves no divisibility, but a packed output's evenness; with a packed
     * output, a tensor the rule for vector accesses refuses stays scalar (vectorize_split) */
    int64_t e;
    if (!an_innermost_unit_stride(t) || !ir_scalar_const_value(ID(TV(t)->logical[TV(t)->nlogical - 1])->extent, &e)) {
      if (packed) continue;
      return 1;
    }
    if (cf_dtype_size(t->dtype) > widest) widest = cf_dtype_size(t->dtype);
  }
  if (!constant) return 2;
  int64_t v = (int64_t)(16 / widest);
  while (v > 1 && inner % v) v /= 2;
  return packed && v < 2 ? 2 : v; /* wider elements than 8 bytes stay scalar (vectorize_split) */
}

/* Whether t has the reference's rank and broadcasts along exactly its broadcast axes: it
 * varies along the whole flat tensor. */
static bool full_size(Val *t, Val *ref) {
  if (t->kind != VAL_TV || TV(t)->nlogical != TV(ref)->nlogical) return false;
  for (int a = 0; a < TV(ref)->nlogical; a++)
    if ((ID(TV(t)->logical[a])->iter_type == CF_ITER_BROADCAST) != (ID(TV(ref)->logical[a])->iter_type == CF_ITER_BROADCAST))
      return false;
  return true;
}

/* Whether the reference's element count is a known multiple of v: its constant extents'
 * product (taken modulo v) is; a symbolic extent counts 1. */
static bool count_divisible(Val *ref, int64_t v) {
  int64_t m = 1, e;
  for (int a = 0; a < TV(ref)->nlogical; a++)
    if (ID(TV(ref)->logical[a])->iter_type != CF_ITER_BROADCAST && ir_scalar_const_value(ID(TV(ref)->logical[a])->extent, &e))
      m = m * (e % v) % v;
  return m == 0;
}

int64_t sched_pw_flat_vector(cf_fusion *f, Val *ref, bool *tail) {
  size_t widest = 0;
  *tail = false;
  for (int i = 0; i < f->inputs.len + f->outputs.len; i++) {
    Val *t = i < f->inputs.len ? f->inputs.items[i] : f->outputs.items[i - f->inputs.len];
    if (t->kind != VAL_TV) continue;
    if (ir_dtype_is_packed(t->dtype)) return 0;
    bool out = i >= f->inputs.len;
    if (!out && !full_size(t, ref)) continue; /* read element by element at its index */
    if ((out && !full_size(t, ref)) || !an_flat_contiguous(t)) return 0;
    if (cf_dtype_size(t->dtype) > widest) widest = cf_dtype_size(t->dtype);
  }
  if (widest == 0 || widest > 8) return widest ? 1 : 0; /* a 16-byte element is its own vector */
  int64_t v = (int64_t)(16 / widest);
  *tail = !count_divisible(ref, v);
  return v;
}
