/* ir/printer.c: prints the IR in nvFuser's notation, so that users can compare with
 * nvFuser's output: IterDomains as iS0{4}, ithreadIdx.x3{8}, rS5{i1}, bS2{1}; TensorViews
 * as T2_s_float[iS4{2}, iblockIdx.x5{4}] ca_pos( 1 ); the math one expression per line;
 * the transforms as each tensor's history from logical to loop domain.
 *
 * Key decision: every printer writes into a StrBuf; the public FILE* functions and the
 * error messages (which embed a tensor's domain) share the same code. */
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "ir/ir.h"

static bool is_infix(IrOp op) { return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV || op == OP_MOD; }

static void print_scalar_inner(StrBuf *b, const Val *v) {
  const Scalar *s = &v->u.scalar;
  if (s->is_const) {
    if (v->dtype == CF_DOUBLE || v->dtype == CF_FLOAT)
      sb_printf(b, "%g", s->d);
    else if (v->dtype == CF_BOOL)
      sb_puts(b, s->i ? "true" : "false");
    else
      sb_printf(b, "%lld", (long long)s->i);
    return;
  }
  if (!v->def) {
    sb_puts(b, s->sym_name ? s->sym_name : "?");
    return;
  }
  const Expr *e = v->def;
  if (is_infix(e->op)) {
    static const char *const sym[] = {[OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_MOD] = "%"};
    ir_print_scalar(b, e->in[0]);
    sb_printf(b, " %s ", sym[e->op]);
    ir_print_scalar(b, e->in[1]);
    return;
  }
  sb_printf(b, "%s(", ir_op_name(e->op));
  for (int i = 0; i < e->nin; i++) {
    if (i) sb_puts(b, ", ");
    ir_print_scalar(b, e->in[i]);
  }
  sb_puts(b, ")");
}

/* Derived scalars are wrapped in "( ... )", as nvFuser prints extents of split axes. */
void ir_print_scalar(StrBuf *b, const Val *v) {
  if (!v) {
    sb_puts(b, "?");
    return;
  }
  bool wrap = !v->u.scalar.is_const && v->def;
  if (wrap) sb_puts(b, "( ");
  print_scalar_inner(b, v);
  if (wrap) sb_puts(b, " )");
}

void ir_print_id(StrBuf *b, const Val *id) {
  const IterDomain *d = &id->u.id;
  static const char letters[] = {[CF_ITER_ITERATION] = 'i', [CF_ITER_REDUCTION] = 'r', [CF_ITER_BROADCAST] = 'b'};
  sb_printf(b, "%c%s%d{", letters[d->iter_type], cf_parallel_type_name(d->ptype), id->name);
  ir_print_scalar(b, d->extent);
  sb_puts(b, d->rfactor ? "}rf" : "}");
}

static void print_ids(StrBuf *b, Val *const *ids, int n) {
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(b, ", ");
    ir_print_id(b, ids[i]);
  }
}

static const char *mem_letter(cf_memory_type m) {
  static const char *const letters[] = {
#define CF_X(e, letter) letter,
      CF_MEMORY_TYPE_TABLE(CF_X)
#undef CF_X
  };
  return (unsigned)m < CF_MEM_COUNT ? letters[m] : "?";
}

void ir_print_tv(StrBuf *b, const Val *tv) {
  const TensorView *t = &tv->u.tv;
  sb_printf(b, "T%d_%s_%s[", tv->name, mem_letter(t->mem), cf_dtype_name(tv->dtype));
  print_ids(b, t->loop, t->nloop);
  sb_puts(b, "]");
  if (t->mesh) ir_print_mesh(b, t->mesh);
}

static void print_tv_with_positions(StrBuf *b, const Val *tv) {
  ir_print_tv(b, tv);
  if (tv->u.tv.ca_pos > 0) sb_printf(b, " ca_pos( %d )", tv->u.tv.ca_pos);
  if (tv->u.tv.max_producer_pos > 0) sb_printf(b, " produce_pos( %d )", tv->u.tv.max_producer_pos);
}

char *ir_tv_str(const Val *tv) {
  StrBuf b = {0};
  ir_print_tv(&b, tv);
  return sb_take(&b);
}

static void print_operand(StrBuf *b, const Val *v) {
  if (v->kind == VAL_TV)
    ir_print_tv(b, v);
  else
    ir_print_scalar(b, v);
}

/* slice: ", starts {0, 2}, steps {1, 1}"; pad: ", widths {{0, 0}, {1, 2}}, 0"; cat: ", axis 1". */
static void print_resize(StrBuf *b, const Expr *e) {
  if (e->op == OP_CAT) {
    sb_printf(b, ", axis %d", e->attr.cat.axis);
    return;
  }
  if (e->op == OP_SLICE) {
    sb_puts(b, ", starts {");
    for (int i = 0; i < e->attr.slice.rank; i++) {
      if (i) sb_puts(b, ", ");
      ir_print_scalar(b, e->attr.slice.start[i]);
    }
    sb_puts(b, "}, steps {");
    for (int i = 0; i < e->attr.slice.rank; i++) sb_printf(b, "%s%lld", i ? ", " : "", (long long)e->attr.slice.step[i]);
    sb_puts(b, "}");
    return;
  }
  sb_puts(b, ", widths {");
  for (int i = 0; i < e->attr.pad.rank; i++)
    sb_printf(b, "%s{%lld, %lld}", i ? ", " : "", (long long)e->attr.pad.left[i], (long long)e->attr.pad.right[i]);
  if (ir_dtype_is_inexact(e->out[0]->dtype))
    sb_printf(b, "}, %g", e->attr.pad.value);
  else
    sb_printf(b, "}, %lld", (long long)e->attr.pad.ivalue);
}

/* The attribute suffix of an op line: ", 2.5" or ", {false, true}" or ", __half". */
static void print_attrs(StrBuf *b, const Expr *e) {
  switch (ir_op_kind(e->op)) {
  case OPK_BINARY:
    if (e->attr.scalar_rhs.is_scalar_rhs && e->attr.scalar_rhs.val) {
      sb_puts(b, ", ");
      ir_print_scalar(b, e->attr.scalar_rhs.val);
    } else if (e->attr.scalar_rhs.is_scalar_rhs) {
      sb_printf(b, ", %g", e->attr.scalar_rhs.value);
    }
    break;
  case OPK_CAST: sb_printf(b, ", %s", cf_dtype_name(e->attr.cast.to)); break;
  case OPK_RESIZE: print_resize(b, e); break;
  case OPK_INDEXED: sb_printf(b, ", dim %d", e->attr.indexed.axis); break;
  case OPK_BROADCAST:
    sb_puts(b, ", {");
    for (int i = 0; i < e->attr.broadcast.rank; i++) sb_printf(b, "%s%s", i ? ", " : "", e->attr.broadcast.is_broadcast[i] ? "true" : "false");
    sb_puts(b, "}");
    break;
  case OPK_SQUEEZE:
    sb_puts(b, ", {");
    for (int i = 0; i < e->attr.squeeze.rank; i++) sb_printf(b, "%s%s", i ? ", " : "", e->attr.squeeze.is_squeezed[i] ? "true" : "false");
    sb_puts(b, "}");
    break;
  case OPK_SET:
  case OPK_RESHAPE:
  case OPK_FULL:
    if (e->op == OP_SET) break;
    /* expand, reshape, full and iota: the output's sizes (full: then its value and dtype) */
    sb_puts(b, e->nin ? ", {" : "{");
    for (int i = 0; i < TV(e->out[0])->nlogical; i++) {
      if (i) sb_puts(b, ", ");
      ir_print_scalar(b, ID(TV(e->out[0])->logical[i])->extent);
    }
    sb_puts(b, "}");
    if (e->op == OP_FULL && ir_dtype_is_complex(e->out[0]->dtype)) /* nvFuser's complex(3, 0.5) */
      sb_printf(b, ", complex(%g, %g), %s", e->attr.full.value, e->attr.full.imag, cf_dtype_name(e->out[0]->dtype));
    else if (e->op == OP_FULL && ir_dtype_is_float(e->out[0]->dtype))
      sb_printf(b, ", %g, %s", e->attr.full.value, cf_dtype_name(e->out[0]->dtype));
    else if (e->op == OP_FULL)
      sb_printf(b, ", %lld, %s", (long long)e->attr.full.ivalue, cf_dtype_name(e->out[0]->dtype));
    else if (e->op == OP_IOTA && ir_dtype_is_float(e->out[0]->dtype)) /* iota: start, step, dtype, axis */
      sb_printf(b, ", %g, %g, %s, axis=%d", e->attr.iota.start, e->attr.iota.step, cf_dtype_name(e->out[0]->dtype),
                e->attr.iota.axis);
    else if (e->op == OP_IOTA)
      sb_printf(b, ", %lld, %lld, %s, axis=%d", (long long)e->attr.iota.istart, (long long)e->attr.iota.istep,
                cf_dtype_name(e->out[0]->dtype), e->attr.iota.axis);
    break;
  case OPK_PERMUTE:
    sb_puts(b, ", {");
    for (int i = 0; i < e->attr.permute.rank; i++) sb_printf(b, "%s%d", i ? ", " : "", e->attr.permute.perm[i]);
    sb_puts(b, "}");
    break;
  default: break;
  }
}

void ir_print_expr(StrBuf *b, const Expr *e) {
  for (int i = 0; i < e->nout; i++) {
    if (i) sb_puts(b, ", ");
    print_operand(b, e->out[i]);
  }
  sb_printf(b, "\n   = %s( ", ir_op_name(e->op));
  for (int i = 0; i < e->nin; i++) {
    if (i) sb_puts(b, ",\n        ");
    print_operand(b, e->in[i]);
  }
  print_attrs(b, e);
  sb_puts(b, " );\n");
}

void ir_print_transform(StrBuf *b, const Expr *e) {
  switch (e->op) {
  case OP_SPLIT:
    sb_puts(b, e->attr.split.inner ? "Split: " : "Outer split: ");
    ir_print_id(b, e->in[0]);
    sb_puts(b, " by factor ");
    ir_print_scalar(b, e->attr.split.factor);
    sb_puts(b, " -> ");
    ir_print_id(b, e->out[0]);
    sb_puts(b, ", ");
    ir_print_id(b, e->out[1]);
    break;
  case OP_MERGE:
    sb_puts(b, "Merge: ");
    ir_print_id(b, e->in[0]);
    sb_puts(b, " and ");
    ir_print_id(b, e->in[1]);
    sb_puts(b, " -> ");
    ir_print_id(b, e->out[0]);
    break;
  case OP_SWIZZLE:
    sb_puts(b, "Swizzle: ");
    ir_print_id(b, e->in[0]);
    sb_puts(b, ", ");
    ir_print_id(b, e->in[1]);
    sb_puts(b, " by XOR -> ");
    ir_print_id(b, e->out[0]);
    sb_puts(b, ", ");
    ir_print_id(b, e->out[1]);
    break;
  default: sb_puts(b, ir_op_name(e->op)); break;
  }
}

static cf_status emit(cf_fusion *f, StrBuf *b, FILE *out) {
  (void)f;
  if (!out) {
    sb_free(b);
    return CF_ERR_INVALID_ARGUMENT;
  }
  if (b->len) fwrite(b->data, 1, b->len, out);
  sb_free(b);
  return CF_OK;
}

/* Printing is read-only, so it works after an error too (that is when it helps most). */
cf_status cf_fusion_print_math(cf_fusion *f, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  StrBuf b = {0};
  sb_puts(&b, "Inputs:\n");
  for (int i = 0; i < f->inputs.len; i++) {
    sb_puts(&b, "  ");
    ir_print_tv(&b, f->inputs.items[i]);
    sb_puts(&b, "\n");
  }
  sb_puts(&b, "Outputs:\n");
  for (int i = 0; i < f->outputs.len; i++) {
    sb_puts(&b, "  ");
    ir_print_tv(&b, f->outputs.items[i]);
    sb_puts(&b, "\n");
  }
  sb_puts(&b, "\n%kernel_math {\n");
  int n;
  Expr **exprs = ir_fusion_tensor_exprs(f, &n);
  for (int i = 0; i < n; i++) ir_print_expr(&b, exprs[i]);
  sb_puts(&b, "} // %kernel_math\n");
  return emit(f, &b, out);
}

static void print_contiguity(StrBuf *b, const TensorView *t) {
  int n = t->alloc ? t->nalloc : t->nlogical;
  sb_puts(b, " contiguity:");
  for (int i = 0; i < n; i++) sb_puts(b, t->contiguity[i] > 0 ? " t" : t->contiguity[i] == 0 ? " f" : " n");
  sb_puts(b, "\n");
}

static void print_tv_transforms(cf_fusion *f, StrBuf *b, Val *tv) {
  TensorView *t = TV(tv);
  print_tv_with_positions(b, tv);
  sb_puts(b, "\n");
  int nrf = 0;
  Expr **rf = ir_tv_root_to_logical(f->arena, tv, &nrf);
  if (t->root != t->logical) {
    sb_puts(b, " root domain : (");
    print_ids(b, t->root, t->nroot);
    sb_puts(b, ")\n");
  }
  for (int i = 0; i < nrf; i++) { /* an rfactor tensor: root -> logical */
    sb_puts(b, "  ");
    ir_print_transform(b, rf[i]);
    sb_puts(b, "\n");
  }
  sb_puts(b, " logical domain : (");
  print_ids(b, t->logical, t->nlogical);
  sb_puts(b, ")\n");
  if (t->alloc) {
    sb_puts(b, " allocation domain : (");
    print_ids(b, t->alloc, t->nalloc);
    sb_puts(b, ")\n");
  }
  print_contiguity(b, t);
  if (t->mem == CF_MEM_TENSOR) sb_printf(b, " tmem dim-sep : %d\n", t->tmem_dim_sep);
  int n;
  Expr **hist = ir_tv_history(f, tv, &n);
  for (int i = 0; i < n; i++) {
    bool before_logical = false;
    for (int k = 0; k < nrf; k++) before_logical |= rf[k] == hist[i];
    if (before_logical) continue;
    sb_puts(b, "  ");
    ir_print_transform(b, hist[i]);
    sb_puts(b, "\n");
  }
  sb_puts(b, " loop domain : (");
  print_ids(b, t->loop, t->nloop);
  sb_puts(b, ")\n");
}

cf_status cf_fusion_print_transforms(cf_fusion *f, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  StrBuf b = {0};
  int n;
  Val **tvs = ir_fusion_all_tvs(f, &n);
  for (int i = 0; i < n; i++) print_tv_transforms(f, &b, tvs[i]);
  return emit(f, &b, out);
}

cf_status cf_tv_print(cf_fusion *f, const cf_tv *t, FILE *out) {
  if (!f || !t || ir_tv(t)->fusion != f) return CF_ERR_INVALID_ARGUMENT;
  StrBuf b = {0};
  print_tv_with_positions(&b, ir_tv(t));
  sb_puts(&b, "\n");
  return emit(f, &b, out);
}
