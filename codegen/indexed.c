/* codegen/indexed.c: the code of the indexed ops (gather, take_along_axis, scatter and
 * the scans cumsum, cumprod, cummax, cummin) for both dialects, called by emit.c's op
 * emitter.
 *
 * Lowering gives each operand read along the op's axis its element at position 0 of that
 * axis, the axis's stride and extent (KAccess.along_*), and the op its output's position
 * and extent along the axis (KNode.op.along_*). Each op prints as one scope:
 *   gather, take_along_axis: the index read once, made a position (cf_index_clamp: a
 *     negative index counts from the end, one still outside the axis is clamped into it, so
 *     no kernel reads outside the tensor), then the lookup read there;
 *   a scan: its reduction's identity, then a serial loop over positions 0..p folding the
 *     reduction's combine (IR_SCAN_TABLE) in the compute type (the accumulation dtype), in
 *     index order, as the evaluator folds;
 *   scatter: a loop over the index along the axis keeping the last element naming this
 *     output's position (within the index's other extents), then src there or x.
 * Key decision: correctness first. Every output element is computed on its own from
 * global memory (a scan re-folds its prefix: O(n) per element, O(n^2) per row), so any
 * schedule the pointwise scheduler or the fallback makes of the output is correct, and
 * the sums are the evaluator's bit for bit; a block-parallel scan is not done. */
#include <stdlib.h>

#include "codegen/codegen.h"

/* Operand a's element at position `pos` (a C expression) along the op's axis. */
static char *element_at(Emitter *e, const KAccess *a, const char *pos) {
  char *base = cg_expr(e, a->index), *st = cg_expr(e, a->along_stride);
  StrBuf ix = {0};
  sb_printf(&ix, "%s + (cf_index_t)(%s) * %s", base, pos, st);
  StrBuf save = e->out;
  e->out = (StrBuf){0};
  e->d->element(e, a->t, ix.data, false);
  char *s = sb_take(&e->out);
  e->out = save;
  sb_free(&ix);
  free(base), free(st);
  return s;
}

/* "cf_index_clamp((int64_t)(<index element>), <extent>)" */
static char *position_of(Emitter *e, const char *index, const KExpr *extent) {
  char *n = cg_expr(e, extent);
  StrBuf b = {0};
  sb_printf(&b, "cf_index_clamp((int64_t)(%s), (int64_t)(%s))", index, n);
  free(n);
  return sb_take(&b);
}

static void emit_lookup(Emitter *e, const KNode *n, const char *out) {
  const KAccess *x = &n->u.op.in[0];
  char *idx = cg_access_str(e, &n->u.op.in[1], false), *pos = position_of(e, idx, x->along_extent);
  cg_line(e, "const cf_index_t cf_pos = (cf_index_t)%s;", pos);
  char *v = element_at(e, x, "cf_pos"), *c = cg_converted(e, x->t->dtype, n->u.op.out_dtype, v);
  cg_line(e, "%s = %s;", out, c);
  free(idx), free(pos), free(v), free(c);
}

/* A scan: its reduction's identity (in the compute type), then the combine folded serially. */
static void emit_scan(Emitter *e, const KNode *n, const char *out) {
  const KAccess *x = &n->u.op.in[0];
  IrOp red = ir_scan_reduction(n->u.op.op);
  cf_dtype ct = ir_op_compute_dtype(n->u.op.op, n->u.op.out_dtype, n->u.op.out_dtype);
  char *p = cg_expr(e, n->u.op.along_pos), *v = element_at(e, x, "cf_j"), *cv = cg_converted(e, x->t->dtype, ct, v);
  char *args[3] = {"cf_acc", cv, NULL}, *step = cg_op_form(e, ir_reduction_combine(red), args);
  char *init = cg_reduction_init(e, red, ct, ct);
  cg_line(e, "%s cf_acc = %s;", cg_ctype(ct), init);
  cg_line(e, "for (cf_index_t cf_j = 0; cf_j <= %s; ++cf_j) cf_acc = %s;", p, step);
  char *r = cg_converted(e, ct, n->u.op.out_dtype, "cf_acc");
  cg_line(e, "%s = %s;", out, r);
  free(p), free(v), free(cv), free(step), free(init), free(r);
}

static void emit_scatter(Emitter *e, const KNode *n, const char *out) {
  const KAccess *x = &n->u.op.in[0], *idx = &n->u.op.in[1], *src = &n->u.op.in[2];
  char *g = cg_expr(e, n->u.op.along_guard), *m = cg_expr(e, idx->along_extent), *p = cg_expr(e, n->u.op.along_pos);
  char *iv = element_at(e, idx, "cf_j"), *pos = position_of(e, iv, n->u.op.along_size);
  cg_line(e, "cf_index_t cf_w = -1;");
  cg_line(e, "for (cf_index_t cf_j = 0; (%s) && cf_j < %s; ++cf_j)", g, m);
  cg_line(e, "  if (%s == (int64_t)(%s)) cf_w = cf_j;", pos, p);
  char *xv = cg_access_str(e, x, false), *xc = cg_converted(e, x->t ? x->t->dtype : x->var_dtype, n->u.op.out_dtype, xv);
  char *sv = element_at(e, src, "cf_w"), *sc = cg_converted(e, src->t->dtype, n->u.op.out_dtype, sv);
  cg_line(e, "%s = cf_w < 0 ? %s : %s;", out, xc, sc);
  free(g), free(m), free(p), free(iv), free(pos), free(xv), free(xc), free(sv), free(sc);
}

void cg_indexed_op(Emitter *e, const KNode *n) {
  char *out = cg_access_str(e, &n->u.op.out, true);
  cg_line(e, "{");
  e->indent++;
  if (ir_op_is_scan(n->u.op.op))
    emit_scan(e, n, out);
  else if (n->u.op.op == OP_SCATTER)
    emit_scatter(e, n, out);
  else
    emit_lookup(e, n, out);
  e->indent--;
  cg_line(e, "}");
  free(out);
}
