/* lower/vectorize.c: the validate_vectorize pass. Validates vectorized axes before loops are built:
 * a Vectorize axis must be the innermost loop axis of a copy (set), of constant extent,
 * made by a divisible split, at most 16 bytes (tensor-memory accesses go up to 512 bytes
 * and are checked by the tmem_pattern pass), and over global memory it must walk the
 * innermost, contiguous logical axis.
 * Requires: TvInfo from the tensors pass. Establishes: KTensor.vector_bytes of parameters
 * (the executor checks their alignment), or a compile error / run-time check naming the
 * tensor and axis.
 * Key decision: divisibility of a symbolic extent becomes a run-time check, not a
 * predicate: a vector access is all or nothing. */
#include "lower/lower.h"

static void fail_axis(LowerCtx *c, Val *tv, int axis, const char *why) {
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: cannot vectorize axis %d (%s) of %s: %s", axis,
             lower_id_str(c, TV(tv)->loop[axis]), lower_tv_str(c, tv), why);
}

/* Does `id` (a vector of v elements) walk tv's innermost logical axis with unit stride?
 * Up its history: the inner output of a split, or the output of a merge whose inner input
 * v divides (a vector then never straddles two rows of the merge), down to that axis. */
static bool walks_innermost(Val *tv, Val *id, int64_t v) {
  TensorView *t = TV(tv);
  Val *last = t->nlogical ? t->logical[t->nlogical - 1] : NULL;
  while (id && id != last) {
    Expr *d = id->def;
    int64_t inner;
    if (d && d->op == OP_SPLIT && d->out[1] == id) {
      id = d->in[0];
    } else if (d && d->op == OP_MERGE && ir_scalar_const_value(ID(d->in[1])->extent, &inner) && inner % v == 0) {
      id = d->in[1];
    } else {
      return false;
    }
  }
  return id == last && !t->has_strides && t->contiguity[t->nlogical - 1] == 1;
}

static void check_global_side(LowerCtx *c, Val *tv, Val *vid, int64_t v, Val *global, int axis, int bytes) {
  Val *g_id = vid;
  if (global != tv) {
    /* the producer's axis that pairs with the consumer's vectorized axis */
    Val **p_ids, **c_ids;
    int n = lower_pairwise(c, global, tv, &p_ids, &c_ids);
    g_id = NULL;
    for (int i = 0; i < n; i++)
      if (walks_innermost(tv, vid, v) && c_ids[i] == TV(tv)->logical[TV(tv)->nlogical - 1]) g_id = p_ids[i];
    if (!g_id || TV(global)->logical[TV(global)->nlogical - 1] != g_id || TV(global)->has_strides ||
        TV(global)->contiguity[TV(global)->nlogical - 1] != 1)
      fail_axis(c, tv, axis, "the global tensor it reads is not contiguous along it");
  } else if (!walks_innermost(tv, vid, v)) {
    fail_axis(c, tv, axis, "it is not the innermost contiguous axis of the global tensor");
  }
  KTensor *kt = lower_info(c, global)->kt;
  if (bytes > kt->vector_bytes) kt->vector_bytes = bytes;
}

static void check_tv(LowerCtx *c, Val *tv) {
  TensorView *t = TV(tv);
  for (int i = 0; i < t->nloop; i++) {
    Val *id = t->loop[i];
    if (ID(id)->ptype != CF_PT_VECTORIZE) continue;
    if (i != t->nloop - 1) fail_axis(c, tv, i, "it is not the innermost loop axis");
    int64_t v;
    if (!ir_scalar_const_value(ID(id)->extent, &v)) fail_axis(c, tv, i, "its extent is not a constant");
    Expr *def = tv->def;
    if (!def || def->op != OP_SET) fail_axis(c, tv, i, "only copies (set) are vectorized");
    Val *in = def->in[0];
    bool tmem = t->mem == CF_MEM_TENSOR || TV(in)->mem == CF_MEM_TENSOR;
    int bytes = (int)(v * (int64_t)cf_dtype_size(tv->dtype));
    if (!tmem && (bytes > 16 || (v & (v - 1))))
      fail_axis(c, tv, i, "a vector access is a power of two of at most 16 bytes");
    if (id->def && id->def->op == OP_SPLIT) {
      KExpr *in_ext = lower_extent(c, id->def->in[0]);
      lower_validate(c, kx_bin(c->a, OP_EQ, kx_bin(c->a, OP_MOD, in_ext, kx_const(c->a, v)), kx_const(c->a, 0)),
                     "compile: cannot vectorize axis %d of %s: the split it comes from is not divisible by %lld", i,
                     t->display_name, (long long)v);
    }
    if (t->mem == CF_MEM_GLOBAL) check_global_side(c, tv, id, v, tv, i, bytes);
    if (TV(in)->mem == CF_MEM_GLOBAL) check_global_side(c, tv, id, v, in, i, bytes);
  }
}

void lower_validate_vectorize(LowerCtx *c) {
  for (int i = 0; i < c->ntvs; i++)
    if (!ir_tv_is_input(c->f, c->tvs[i])) check_tv(c, c->tvs[i]);
}
