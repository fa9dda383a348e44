/* lower/vectorize.c: the validate_vectorize pass. Validates vectorized axes before loops are built:
 * a Vectorize axis must be the innermost loop axis of a copy (set, broadcast, permute), of constant
 * extent, made by divisible splits (the one it comes from and those above it up to the
 * logical axis), at most 16 bytes (tensor-memory accesses go up to 512 bytes
 * and are checked by the tmem_pattern pass), and over global memory it must walk the
 * innermost, contiguous logical axis (analysis/vector_access.c's rule, which the
 * automatic schedulers ask before they vectorize).
 * A packed tensor (float4_e2m1fn) written in global memory must be written by such a copy
 * of an even width (one thread writes both halves of each byte).
 * Requires: TvInfo from the tensors pass. Establishes: KTensor.vector_bytes of parameters
 * (the executor checks their alignment), TvInfo.vector_tail, or a compile error / run-time
 * check naming the tensor and axis.
 * Key decisions: divisibility of a symbolic extent becomes a run-time check, not a
 * predicate: a vector access is all or nothing; except a *tail* (issue 22): a copy between
 * global memory and registers whose vector splits the tensors' flat whole (analysis/'s
 * an_vector_flat: every vector starts at a multiple of its width of the flat index, so it
 * is aligned wherever the base pointer is) needs no divisible split. Its last vector may
 * pass the end: the predicate pass runs the vector where the whole of it is in bounds
 * and its lanes one by one, each under its own bound, where it is not. */
#include "ir/dtype.h"
#include "lower/lower.h"

static void fail_axis(LowerCtx *c, Val *tv, int axis, const char *why) {
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: cannot vectorize axis %d (%s) of %s: %s", axis,
             lower_id_str(c, TV(tv)->loop[axis]), lower_tv_str(c, tv), why);
}

/* The global side of a vector access, by analysis/'s rule (an_vector_refusal: the one the
 * automatic schedulers ask before they vectorize); records the vector's bytes on each
 * global parameter (the executor checks their alignment), but a packed one's: its vectors
 * are moved byte by byte (cf_fp4_pack, cf_fp4_unpack), at any address. */
static void check_global_sides(LowerCtx *c, Val *tv, Val *vid, int64_t v, int axis, int bytes) {
  Val *globals[2];
  int n = an_vector_globals(tv, globals);
  for (int g = 0; g < n; g++) {
    const char *why = an_vector_refusal(tv, vid, v, globals[g]);
    if (why) fail_axis(c, tv, axis, why);
    KTensor *kt = lower_info(c, globals[g])->kt;
    if (!ir_dtype_is_packed(globals[g]->dtype) && bytes > kt->vector_bytes) kt->vector_bytes = bytes;
  }
}

/* Whether v divides e by its form: a constant multiple of v, or a product with such a
 * factor (a symbolic row count times a constant row). */
static bool divides(int64_t v, const KExpr *e) {
  int64_t x;
  if (kx_is_const(e, &x)) return x % v == 0;
  return e->kind == KX_BINARY && e->op == OP_MUL && (divides(v, e->a) || divides(v, e->b));
}

/* Whether copy tv's vector along id may end in a partial vector (the header's tail): it
 * moves between global memory and registers, neither side packed (a packed byte is
 * written whole by one vector: lower/vectorize.c keeps those even), along the flat whole
 * of every global side. */
static bool tail_allowed(Val *tv, Val *id) {
  Val *in = tv->def && tv->def->nin > 0 && tv->def->in[0]->kind == VAL_TV ? tv->def->in[0] : NULL;
  if (!in || (TV(tv)->mem != CF_MEM_GLOBAL && TV(in)->mem != CF_MEM_GLOBAL)) return false;
  for (int i = 0; i < 2; i++) {
    Val *t = i ? in : tv;
    if ((TV(t)->mem != CF_MEM_GLOBAL && TV(t)->mem != CF_MEM_LOCAL) || ir_dtype_is_packed(t->dtype)) return false;
  }
  return an_vector_flat(tv, id);
}

/* Every split the vector walks up through (as its inner output, toward the logical axis:
 * analysis/'s walk) divides by v, so that no vector straddles the end of an axis: the
 * split it comes from, and those above it (a matmul tile's K chunk of 8 is the inner part
 * of a split of BK, itself the inner part of K's split by BK: K itself must divide by 8).
 * Constant extents at compile time, symbolic ones at run time; the split it comes from
 * need not where the copy takes a tail (tail_allowed), unless v divides it by its form. A
 * tensor-memory access (registers <-> columns, no global side) checks the split it comes
 * from only. */
static void check_splits(LowerCtx *c, Val *tv, Val *id, int64_t v, int axis, bool tmem) {
  for (Val *w = id; w && w->def && (!tmem || w == id);) {
    Expr *d = w->def;
    if (d->op == OP_SPLIT && d->out[1] == w) {
      KExpr *in_ext = lower_extent(c, d->in[0]);
      if (w == id && !divides(v, in_ext) && tail_allowed(tv, id)) {
        lower_info(c, tv)->vector_tail = true;
        w = d->in[0];
        continue;
      }
      lower_validate(c, kx_bin(c->a, OP_EQ, kx_bin(c->a, OP_MOD, in_ext, kx_const(c->a, v)), kx_const(c->a, 0)),
                     "compile: cannot vectorize axis %d of %s: the split it comes from is not divisible by %lld", axis,
                     TV(tv)->display_name, (long long)v);
      w = d->in[0];
    } else if (d->op == OP_MERGE && d->out[0] == w) {
      w = d->in[1];
    } else {
      break;
    }
  }
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
    if (!def || !ir_op_is_vector_copy(def->op))
      fail_axis(c, tv, i, "only copies (set, broadcast, permute) are vectorized");
    Val *in = def->in[0];
    bool tmem = t->mem == CF_MEM_TENSOR || TV(in)->mem == CF_MEM_TENSOR;
    int bytes = (int)(v * (int64_t)cf_dtype_size(tv->dtype));
    if (!tmem && (bytes > 16 || (v & (v - 1))))
      fail_axis(c, tv, i, "a vector access is a power of two of at most 16 bytes");
    check_splits(c, tv, id, v, i, tmem);
    check_global_sides(c, tv, id, v, i, (int)cf_dtype_storage_bytes(tv->dtype, (size_t)v));
  }
}

/* A packed tensor (float4_e2m1fn) written in global memory: two elements share a byte, so
 * one thread must write both; the one write cfuser proves does is a vector copy of an even
 * width (cf_fp4_pack), which the rule above keeps on the innermost contiguous axis. */
static void check_packed_write(LowerCtx *c, Val *tv) {
  TensorView *t = TV(tv);
  if (!ir_dtype_is_packed(tv->dtype) || t->mem != CF_MEM_GLOBAL || t->nloop == 0) return;
  Val *id = t->loop[t->nloop - 1];
  int64_t v;
  if (ID(id)->ptype == CF_PT_VECTORIZE && ir_scalar_const_value(ID(id)->extent, &v) && v % 2 == 0) return;
  lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s has dtype %s in global memory, two elements per byte: one thread "
             "must write both elements of a byte, so its innermost loop axis (%s) must be vectorized by an even width "
             "(cache it before and vectorize the copy)", lower_tv_str(c, tv), cf_dtype_name(tv->dtype),
             lower_id_str(c, id));
}

void lower_validate_vectorize(LowerCtx *c) {
  for (int i = 0; i < c->ntvs; i++)
    if (!ir_tv_is_input(c->f, c->tvs[i])) {
      check_tv(c, c->tvs[i]);
      check_packed_write(c, c->tvs[i]);
    }
}
