/* codegen/emit.c: the one walker over the kernel IR shared by both code generators.
 * It prints loops (serial ones as for-loops, unrolled ones with #pragma unroll, thread
 * ones as nothing: their index is the thread index), ifs with their else branches, ops as assignments with their
 * indexed operands and the op's expression template, reductions as accumulations, and
 * delegates language-specific pieces to the Dialect.
 * Key decision: one static function per node kind, called from the shared walk
 * (kir_visit.c) before and after a node's blocks; indices are printed inline from their
 * folded KExprs, with named loop variables, so the kernel reads like hand-written code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

void cg_line(Emitter *e, const char *fmt, ...) {
  for (int i = 0; i < e->indent; i++) sb_puts(&e->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&e->out, fmt, ap);
  va_end(ap);
  sb_puts(&e->out, "\n");
}

char *cg_expr(Emitter *e, const KExpr *x) {
  StrBuf b = {0};
  kx_print(&b, x, e->param_names);
  return sb_take(&b);
}

void cg_smem_offset_decl(Emitter *e, const KTensor *t) {
  if (!t->smem_offset_def) return;
  char *def = cg_expr(e, t->smem_offset_def), *name = cg_expr(e, t->smem_offset);
  cg_line(e, "const cf_index_t %s = %s;", name, def);
  free(def), free(name);
}

const char *cg_ctype(cf_dtype t) {
  static const char *const names[] = {
#define CF_X(e, name, size, ctype, dlcode, dlbits) ctype,
      CF_DTYPE_TABLE(CF_X)
#undef CF_X
  };
  return (unsigned)t < CF_DTYPE_COUNT ? names[t] : "void";
}

/* The suffix of ops_math.h's saturating conversion to integer dtype t ("s32"), or NULL
 * when t is not an integer dtype (bool converts as C and C++ do: nonzero is true). */
static const char *int_conversion(cf_dtype t) {
  switch (t) {
  case CF_INT8: return "s8";
  case CF_INT32: return "s32";
  case CF_INT64: return "s64";
  case CF_UINT32: return "u32";
  default: return NULL;
  }
}

/* The runtime's conversions of a storage-only float type (ir_dtype_is_narrow_float) to
 * and from float: CUDA's intrinsics for half and bfloat16 (host_math.h gives them the
 * same names), nvFuser's names for the 8-bit floats (ir/fp8.h, both dialects). */
static const char *narrow_to_float(cf_dtype t) {
  switch (t) {
  case CF_HALF: return "__half2float";
  case CF_BFLOAT16: return "__bfloat162float";
  case CF_FLOAT8_E4M3FN: return "__e4m32float";
  case CF_FLOAT4_E2M1FN: return "__e2m12float";
  default: return "__e5m22float";
  }
}
static const char *narrow_from_float(cf_dtype t) {
  switch (t) {
  case CF_HALF: return "__float2half";
  case CF_BFLOAT16: return "__float2bfloat16";
  case CF_FLOAT8_E4M3FN: return "__float2e4m3";
  case CF_FLOAT4_E2M1FN: return "__float2e2m1";
  default: return "__float2e5m2";
  }
}

/* Conversions are spelled alike in CUDA C++ and in the host runtime (the narrow types'
 * conversions above; ops_math.h the conversions from floating types to integers, which
 * saturate instead of C's undefined behaviour; complex.h's cf_creal and cf_cbool, and a
 * cast to CfComplexF/CfComplexD, C's conversion and the CUDA struct's constructors). A narrow type converts to anything
 * through float (exact), and anything converts to it through float (torch's rounding of
 * a double to an 8-bit float). */
void cg_convert(Emitter *e, cf_dtype from, cf_dtype to, const char *v) {
  bool from_float = ir_dtype_is_float(from);
  if (ir_dtype_is_complex(from) && !ir_dtype_is_complex(to)) { /* the real part (bool: either part nonzero) */
    StrBuf r = {0};
    sb_printf(&r, "%s(%s)", to == CF_BOOL ? "cf_cbool" : "cf_creal", v);
    char *rv = sb_take(&r);
    if (to == CF_BOOL) sb_puts(&e->out, rv);
    else cg_convert(e, ir_dtype_real_of(from), to, rv);
    free(rv);
  } else if (ir_dtype_is_welford(to)) { /* an element folded into a Welford reduction: its one-element state */
    sb_printf(&e->out, "%s(", to == CF_WELFORD_DOUBLE ? "cf_welford_of_d" : "cf_welford_of_f");
    cg_convert(e, from, ir_welford_scalar(to), v);
    sb_puts(&e->out, ")");
  } else if (from_float && int_conversion(to)) {
    sb_printf(&e->out, "cf_f2%s(", int_conversion(to));
    if (ir_dtype_is_narrow_float(from))
      cg_convert(e, from, CF_FLOAT, v);
    else
      sb_puts(&e->out, v);
    sb_puts(&e->out, ")");
  } else if (ir_dtype_is_narrow_float(from) && ir_dtype_is_narrow_float(to) && from != to) {
    StrBuf f = {0};
    sb_printf(&f, "%s(%s)", narrow_to_float(from), v);
    char *fv = sb_take(&f);
    cg_convert(e, CF_FLOAT, to, fv);
    free(fv);
  } else if (ir_dtype_is_narrow_float(from) && from != to)
    sb_printf(&e->out, "(%s)%s(%s)", cg_ctype(to), narrow_to_float(from), v);
  else if (ir_dtype_is_narrow_float(to) && from != to)
    sb_printf(&e->out, "%s((float)(%s))", narrow_from_float(to), v);
  else
    sb_printf(&e->out, "(%s)(%s)", cg_ctype(to), v);
}

void cg_sync(Emitter *e) { cg_line(e, "__syncthreads();"); }

void cg_grid_sync(Emitter *e) {
  StrBuf save = e->out;
  e->out = (StrBuf){0};
  e->d->element(e, e->k->grid_sem, "0", true);
  char *sem = sb_take(&e->out);
  e->out = save;
  cg_line(e, "cf_grid_sync(&%s);", sem);
  free(sem);
}

/* A packed parameter (float4_e2m1fn in global memory, two elements per byte) is read one
 * nibble at a time (ir/fp8.h's cf_fp4_get) and written only by vector copies
 * (cg_packed_copy; lowering refuses any other write, lower/vectorize.c); registers and
 * shared memory hold one element per byte and are indexed as any type. */
void cg_element(Emitter *e, const KTensor *t, const char *index, bool is_write) {
  if (t->param >= 0 && !t->data_used && !e->unmarked) e->unmarked = t;
  if (t->param >= 0 && ir_dtype_is_packed(t->dtype))
    sb_printf(&e->out, "cf_fp4_get(%s.data, %s)%s", t->name, index, is_write ? " /* refused by lowering */" : "");
  else if (t->param >= 0)
    sb_printf(&e->out, "%s.data[%s]", t->name, index);
  else
    sb_printf(&e->out, "%s[%s]", t->name, index);
}

bool cg_packed_copy(Emitter *e, const KNode *op, const char *dst, const char *src) {
  const KAccess *out = &op->u.op.out, *in = &op->u.op.in[0];
  bool pout = out->t->param >= 0 && ir_dtype_is_packed(out->t->dtype);
  bool pin = in->t && in->t->param >= 0 && ir_dtype_is_packed(in->t->dtype);
  if (!pout && !pin) return false;
  const KAccess *g = pout ? out : in;
  if (!g->t->data_used && !e->unmarked) e->unmarked = g->t;
  char *idx = cg_expr(e, g->index);
  if (pout && pin) /* global to global: whole bytes */
    cg_line(e, "for (int cf_k = 0; cf_k < %d; cf_k += 2) %s.data[((%s) + cf_k) / 2] = %s.data[((%s) + cf_k) / 2];",
            op->u.op.vector, out->t->name, idx, in->t->name, idx);
  else if (pout)
    cg_line(e, "cf_fp4_pack(%s.data, %s, &%s, %d);", out->t->name, idx, src, op->u.op.vector);
  else
    cg_line(e, "cf_fp4_unpack(&%s, %s.data, %s, %d);", dst, in->t->name, idx, op->u.op.vector);
  free(idx);
  return true;
}

const char *cg_param_note(const KTensor *t) { return t->data_used ? "" : " /* sizes only */"; }

static bool is_floating(cf_dtype t) { return ir_dtype_is_float(t); }

/* The Welford state type among an op's output and operands, or CF_DTYPE_COUNT. */
static cf_dtype welford_type(const KNode *op) {
  if (ir_dtype_is_welford(op->u.op.out_dtype)) return op->u.op.out_dtype;
  for (int i = 0; i < op->u.op.nin; i++) {
    const KAccess *a = &op->u.op.in[i];
    if (a->t && ir_dtype_is_welford(a->t->dtype)) return a->t->dtype;
  }
  return CF_DTYPE_COUNT;
}

/* Whether every operand of a move (set, broadcast, permute, ...) is an element of the
 * output's dtype: the move is then a plain assignment, no round trip through float (a
 * bfloat16 weight's broadcast was __float2bfloat16(__bfloat162float(w)) per element). */
static bool moves_its_own_dtype(const KNode *op) {
  for (int i = 0; i < op->u.op.nin; i++) {
    const KAccess *a = &op->u.op.in[i];
    cf_dtype t = a->t ? a->t->dtype : a->var ? a->var_dtype : CF_DTYPE_COUNT;
    if (t != op->u.op.out_dtype) return false; /* a scalar (a pad value) or another dtype */
  }
  return op->u.op.nin > 0;
}

/* The type arithmetic is done in: the output's own dtype for a move of elements of that
 * dtype; a Welford state type if the op has one (elements are
 * folded in as one-element states, and states are read by the field ops), a complex type if
 * any operand or the result is complex (complex_double if anything holds a double), double if any
 * operand is double, float for other floating types, else 64-bit integers. */
cf_dtype cg_compute_type(const KNode *op) {
  cf_dtype w = welford_type(op);
  if (w != CF_DTYPE_COUNT) return w;
  IrTypeRule r = ir_op_type_rule(op->u.op.op);
  if (r == TR_MOVE && moves_its_own_dtype(op)) return op->u.op.out_dtype;
  if (r == TR_MAKE || r == TR_RANDOM || r == TR_RANDOM64) /* iota's double or int64; seeds in int64 */
    return ir_op_compute_dtype(op->u.op.op, op->u.op.out_dtype, op->u.op.out_dtype);
  cf_dtype out = op->u.op.out_dtype;
  bool any_double = ir_dtype_real_of(out) == CF_DOUBLE, any_float = is_floating(out);
  bool any_complex = ir_dtype_is_complex(out);
  for (int i = 0; i < op->u.op.nin; i++) {
    const KAccess *a = &op->u.op.in[i];
    if (!a->t && !a->var) {
      any_complex |= a->scalar_complex;
      continue;
    }
    cf_dtype t = a->t ? a->t->dtype : a->var_dtype;
    any_double |= ir_dtype_real_of(t) == CF_DOUBLE;
    any_float |= is_floating(t);
    any_complex |= ir_dtype_is_complex(t);
  }
  if (any_complex) return any_double ? CF_COMPLEX_DOUBLE : CF_COMPLEX_FLOAT;
  if (any_double) return CF_DOUBLE;
  if (any_float) return CF_FLOAT;
  return CF_INT64; /* integers compute in 64 bits: one overload set for the helpers */
}

/* A scalar constant both dialects compile and keep exactly: "%.17g" round-trips finite
 * values, but prints NaN and infinities as undeclared names and -0.0 as the integer -0;
 * those are rebuilt from their bits by cf_f64_from_bits (in both runtimes). */
static void print_constant(StrBuf *b, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  if (isfinite(v) && !(v == 0 && signbit(v)))
    sb_printf(b, "%.17g", v);
  else
    sb_printf(b, "cf_f64_from_bits(0x%016llxULL)", (unsigned long long)bits);
}

/* An int64 literal, exact (INT64_MIN has no literal of its own). */
static char *int64_literal(int64_t v) {
  StrBuf b = {0};
  if (v == INT64_MIN)
    sb_puts(&b, "(-9223372036854775807LL - 1)");
  else
    sb_printf(&b, "%lldLL", (long long)v);
  return sb_take(&b);
}

char *cg_access_str(Emitter *e, const KAccess *a, bool is_write) {
  StrBuf b = {0};
  if (!a->t && a->var) return strdup(a->var); /* a register: a reduction's accumulator */
  int64_t c;
  if (!a->t && a->scalar_expr && kx_is_const(a->scalar_expr, &c)) return int64_literal(c);
  if (!a->t && a->scalar_expr) { /* an integer known at run time (a mean's count) */
    char *x = cg_expr(e, a->scalar_expr);
    sb_printf(&b, "(int64_t)(%s)", x);
    free(x);
    return sb_take(&b);
  }
  if (!a->t && a->scalar_complex) { /* a complex constant: both parts, each exactly */
    sb_puts(&b, "cf_complex_d(");
    print_constant(&b, a->scalar);
    sb_puts(&b, ", ");
    print_constant(&b, a->scalar_im);
    sb_puts(&b, ")");
    return sb_take(&b);
  }
  if (!a->t) {
    print_constant(&b, a->scalar);
    return sb_take(&b);
  }
  char *idx = cg_expr(e, a->index);
  StrBuf save = e->out;
  e->out = b;
  e->d->element(e, a->t, idx, is_write);
  b = e->out;
  e->out = save;
  free(idx);
  return sb_take(&b);
}

char *cg_converted(Emitter *e, cf_dtype from, cf_dtype to, const char *v) {
  if (from == to) return strdup(v);
  StrBuf save = e->out;
  e->out = (StrBuf){0};
  e->d->convert(e, from, to, v);
  char *s = sb_take(&e->out);
  e->out = save;
  return s;
}

char *cg_op_form(const Emitter *e, IrOp op, char *const *args) {
  StrBuf b = {0};
  for (const char *p = ir_op_form(op, e->d->is_cuda); *p; p++) {
    if (p[0] == '%' && p[1] >= '0' && p[1] <= '2') {
      sb_puts(&b, args[p[1] - '0']);
      p++;
    } else {
      sb_printf(&b, "%c", *p);
    }
  }
  return sb_take(&b);
}

/* The lowest and highest value of an integer dtype, as C literals. */
static const char *int_limit(cf_dtype t, bool highest) {
  switch (t) {
  case CF_INT8: return highest ? "127" : "(-128)";
  case CF_INT32: return highest ? "2147483647" : "(-2147483647 - 1)";
  case CF_UINT32: return highest ? "4294967295u" : "0u";
  case CF_BOOL: return highest ? "1" : "0";
  default: return highest ? "9223372036854775807LL" : "(-9223372036854775807LL - 1)";
  }
}

/* The start of a reduction's accumulator of dtype t (the op table's identity column),
 * printed in the compute type ct for floating types and as t's own limits for integers
 * (the compute type of integers is int64, whose limits would not fit t). */
char *cg_reduction_init(Emitter *e, IrOp op, cf_dtype ct, cf_dtype t) {
  const char *v = "0";
  switch (ir_reduction_identity(op)) {
  case RID_ZERO: v = "0"; break;
  case RID_ONE: v = "1"; break;
  case RID_LOWEST: v = is_floating(t) ? "-INFINITY" : int_limit(t, false); break;
  case RID_HIGHEST: v = is_floating(t) ? "INFINITY" : int_limit(t, true); break;
  case RID_EMPTY: return strdup(t == CF_WELFORD_DOUBLE ? "cf_welford_empty_d()" : "cf_welford_empty_f()");
  }
  return is_floating(t) ? cg_converted(e, ct, t, v) : cg_converted(e, CF_INT64, t, v);
}

/* The line `out = v;`, or `out = zfill ? v : 0;` for an op that zero-fills where its
 * bounds fail (a circular-buffered tile's fill: its operand's index was made safe there). */
static void emit_store(Emitter *e, const KNode *n, const char *out, const char *v) {
  if (!n->u.op.zfill) {
    cg_line(e, "%s = %s;", out, v);
    return;
  }
  char *c = cg_expr(e, n->u.op.zfill), *zero = cg_converted(e, CF_INT64, n->u.op.out_dtype, "0");
  cg_line(e, "%s = (%s) ? %s : %s;", out, c, v, zero);
  free(c), free(zero);
}

/* A vector copy that zero-fills: the copy where zfill holds, else a zero into each element. */
static void zero_filled_vector(Emitter *e, const KNode *n, const char *out, const char *src) {
  char *c = cg_expr(e, n->u.op.zfill), *zero = cg_converted(e, CF_INT64, n->u.op.out_dtype, "0");
  cg_line(e, "if (%s) {", c);
  e->indent++;
  e->d->vector_copy(e, n, out, src);
  e->indent--;
  cg_line(e, "} else {");
  e->indent++;
  for (int v = 0; v < n->u.op.vector; v++) {
    KAccess o = n->u.op.out;
    o.index = kx_bin(e->k->arena, OP_ADD, o.index, kx_const(e->k->arena, v));
    char *el = cg_access_str(e, &o, true);
    cg_line(e, "%s = %s;", el, zero);
    free(el);
  }
  e->indent--;
  cg_line(e, "}");
  free(c), free(zero);
}

static void emit_op(Emitter *e, const KNode *n) {
  if (ir_op_kind(n->u.op.op) == OPK_INDEXED && !n->u.op.reduction_init) {
    cg_indexed_op(e, n);
    return;
  }
  cf_dtype ct = cg_compute_type(n);
  char *out = cg_access_str(e, &n->u.op.out, true);
  if (n->u.op.reduction_init) {
    char *v = cg_reduction_init(e, n->u.op.op, ct, n->u.op.out_dtype);
    cg_line(e, "%s = %s;", out, v);
    free(v), free(out);
    return;
  }
  char *args[3] = {NULL, NULL, NULL};
  int k = 0;
  if (ir_op_kind(n->u.op.op) == OPK_REDUCTION) args[k++] = cg_converted(e, n->u.op.out_dtype, ct, out);
  for (int i = 0; i < n->u.op.nin && k < 3; i++) {
    const KAccess *in = &n->u.op.in[i];
    bool int_constant = !in->t && !in->var && !in->scalar_expr && !ir_dtype_is_inexact(ct) && !ir_dtype_is_welford(ct);
    /* a double constant of an integer op: its type rule made it integral (ir_scalar_rhs_dtype) */
    char *a = int_constant ? int64_literal(ir_elem_convert((IrElem){.d = in->scalar}, CF_DOUBLE, CF_INT64).i)
                           : cg_access_str(e, in, false);
    cf_dtype from = in->t           ? in->t->dtype
                    : in->var       ? in->var_dtype
                    : in->scalar_complex ? CF_COMPLEX_DOUBLE
                    : int_constant || in->scalar_expr ? CF_INT64
                                                      : CF_DOUBLE;
    /* where's condition stays a bool; everything else goes to the compute type */
    args[k++] = (n->u.op.op == OP_WHERE && i == 0) ? a : cg_converted(e, from, ct, a);
    if (args[k - 1] != a) free(a);
  }
  if (n->u.op.vector > 1) {
    char *src = cg_access_str(e, &n->u.op.in[0], false);
    if (n->u.op.async) e->d->cp_async(e, n, out, src); /* its zfill is the copy's source size */
    else if (n->u.op.zfill) zero_filled_vector(e, n, out, src);
    else e->d->vector_copy(e, n, out, src);
    free(src);
  } else {
    char *val = cg_op_form(e, n->u.op.op, args);
    /* the form's value type: predicates and comparisons give bool, a Welford field its scalar */
    char *v = cg_converted(e, ir_op_value_dtype(n->u.op.op, ct), n->u.op.out_dtype, val);
    emit_store(e, n, out, v);
    free(val), free(v);
  }
  for (int i = 0; i < 3; i++) free(args[i]);
  free(out);
}

char *cg_mma_operand(Emitter *e, const KNode *n, bool b, int i, const char *wrap, const char *value) {
  const KAccess *x = b ? &n->u.mma.b[i] : &n->u.mma.a[i];
  const KExpr *mask = b ? n->u.mma.b_mask[i] : n->u.mma.a_mask[i];
  char *v = value ? strdup(value) : cg_access_str(e, x, false), *m = mask ? cg_expr(e, mask) : NULL;
  StrBuf s = {0}, w = {0};
  if (wrap) sb_printf(&w, wrap, v);
  else w.data = cg_converted(e, n->u.mma.in_dtype, CF_FLOAT, v);
  if (m) sb_printf(&s, "((%s) ? %s : %s)", m, w.data, wrap ? "0u" : "0.0f");
  else sb_puts(&s, w.data);
  free(v), free(m), sb_free(&w);
  return sb_take(&s);
}

/* A loop's opening: serial ones as for-loops (a single iteration as a scope binding its
 * variable to 0), unrolled ones after #pragma unroll; a thread-parallel loop prints nothing
 * (its index is the thread index). emit_post closes what this opened. */
static void loop_open(Emitter *e, const KNode *n) {
  int64_t c;
  if (!n->u.loop.var) return;
  if (kx_is_const(n->u.loop.extent, &c) && c == 1) {
    cg_line(e, "{");
    e->indent++;
    cg_line(e, "const cf_index_t %s = 0;", n->u.loop.var);
    return;
  }
  if (n->u.loop.pt == CF_PT_UNROLL || n->u.loop.pt == CF_PT_VECTORIZE) cg_line(e, "#pragma unroll");
  char *ext = cg_expr(e, n->u.loop.extent);
  cg_line(e, "for (cf_index_t %s = 0; %s < %s; ++%s) {", n->u.loop.var, n->u.loop.var, ext, n->u.loop.var);
  free(ext);
  e->indent++;
}

static void close_scope(Emitter *e) {
  e->indent--;
  cg_line(e, "}");
}

/* A TMA load, an mbarrier's init, expect_tx, wait or arrival, or setmaxnreg: one text for
 * both dialects, the functions of runtime/tma.cuh on CUDA and the host preamble's macros
 * over host_tma.h and host_mbarrier.h on the host (codegen/host.c, mbarrier_names). */
static void tma(Emitter *e, const KNode *n) {
  if (n->kind == KN_SETMAXNREG) {
    int64_t v = n->u.mbar.value;
    cg_line(e, "cf_setmaxnreg(%s, %lld);", v > 0 ? "inc" : "dec", (long long)(v > 0 ? v : -v));
    return;
  }
  static const char *const fn[] = {[KN_MBAR_INIT] = "cf_mbar_init", [KN_MBAR_EXPECT_TX] = "cf_mbar_expect_tx",
                                   [KN_MBAR_WAIT] = "cf_mbar_wait", [KN_MBAR_ARRIVE] = "cf_mbar_arrive"};
  const KAccess *bar = n->kind == KN_TMA_LOAD ? &n->u.tma.bar : &n->u.mbar.bar;
  char *bi = bar->index ? cg_expr(e, bar->index) : strdup("0");
  StrBuf args = {0};
  if (n->kind == KN_MBAR_INIT || n->kind == KN_MBAR_EXPECT_TX)
    sb_printf(&args, ", %lldu", (long long)n->u.mbar.value);
  else if (n->kind == KN_MBAR_WAIT) {
    char *p = cg_expr(e, n->u.mbar.parity);
    sb_printf(&args, ", (unsigned)(%s)", p);
    free(p);
  }
  if (n->kind != KN_TMA_LOAD) {
    cg_line(e, "%s(&%s[%s]%s);", fn[n->kind], bar->t->name, bi, args.data ? args.data : "");
  } else {
    for (int d = 0; d < e->k->tmaps[n->u.tma.map].rank; d++) {
      char *x = cg_expr(e, n->u.tma.coord[d]);
      sb_printf(&args, ", (int)(%s)", x);
      free(x);
    }
    char *di = cg_expr(e, n->u.tma.dst.index);
    cg_line(e, "cf_tma_load(&%s[%s], &cf_tmap%d, &%s[%s]%s);", n->u.tma.dst.t->name, di, n->u.tma.map, bar->t->name, bi,
            args.data);
    free(di);
  }
  sb_free(&args);
  free(bi);
}

static void emit_tmem(Emitter *e, const KNode *n) {
  const KAccess *t = &n->u.tmem.tmem, *r = &n->u.tmem.reg;
  const KTensor *tt = t->t;
  size_t bytes = cf_dtype_size(tt->dtype);
  KExpr *lane = t->lane, *col = t->col;
  char *ls = cg_expr(e, lane), *cs = cg_expr(e, col), *ri = cg_expr(e, r->index);
  const KTensor *slot = e->k->regions[tt->tmem_region].slot;
  StrBuf addr = {0};
  sb_printf(&addr, "(%s[0] + ((uint32_t)((%s) / 32 * 32 + %lld) << 16) + (uint32_t)((%s) * %zu / 4 + %lld))",
            slot->name, ls, (long long)tt->tmem_lane_offset, cs, bytes, (long long)tt->tmem_col_offset);
  StrBuf reg = {0};
  sb_printf(&reg, "&%s[%s]", r->t->name, ri);
  e->d->tmem_access(e, n, addr.data, reg.data);
  sb_free(&addr), sb_free(&reg);
  free(ls), free(cs), free(ri);
}

/* The walk's callbacks (kir_visit.c recurses): each node kind opens what it prints before
 * its blocks, `between` starts an else branch, `post` closes. */
static bool emit_pre(KVisitor *v, KNode *n) {
  Emitter *e = v->user;
  switch (n->kind) {
  case KN_FOR: loop_open(e, n); break;
  case KN_IF: {
    char *c = cg_expr(e, n->u.cond.cond);
    cg_line(e, "if (%s) {", c);
    free(c);
    e->indent++;
    break;
  }
  case KN_OP: emit_op(e, n); break;
  case KN_TMEM_LD:
  case KN_TMEM_ST: emit_tmem(e, n); break;
  case KN_SYNC:
    if (n->u.sync.proxy_async) e->d->cp_async(e, n, NULL, NULL); /* fence.proxy.async first */
    if (n->u.sync.grid) cg_grid_sync(e);
    else e->d->sync(e);
    break;
  case KN_TMEM_ALLOC:
  case KN_TMEM_RELINQUISH:
  case KN_TMEM_DEALLOC: e->d->tmem_admin(e, n); break;
  case KN_COMMENT: cg_line(e, "// %s", n->u.comment); break;
  case KN_ALLOC: break; /* buffers are declared up front by the dialect */
  case KN_ACC_DECL: cg_acc_decl(e, n); break;
  case KN_BLOCK_REDUCE: cg_block_reduce(e, n); break;
  case KN_MMA:
    if (ir_mma_is_tcgen05(n->u.mma.instr)) e->d->tcgen05(e, n);
    else e->d->mma(e, n);
    break;
  case KN_TC05_COMMIT:
  case KN_TC05_FENCE: e->d->tcgen05(e, n); break;
  case KN_ASYNC_COMMIT: e->d->cp_async(e, n, NULL, NULL); break;
  case KN_ASYNC_WAIT:
  case KN_WGMMA_FENCE:
  case KN_WGMMA_COMMIT:
  case KN_WGMMA_WAIT: e->d->cp_async(e, n, NULL, NULL); break;
  case KN_TMA_LOAD:
  case KN_MBAR_INIT:
  case KN_MBAR_EXPECT_TX:
  case KN_MBAR_WAIT:
  case KN_MBAR_ARRIVE:
  case KN_SETMAXNREG: tma(e, n); break;
  }
  return true;
}

static void emit_between(KVisitor *v, KNode *n, int block) {
  Emitter *e = v->user;
  (void)block;
  if (n->kind != KN_IF || !n->u.cond.otherwise.len) return;
  e->indent--;
  cg_line(e, "} else {");
  e->indent++;
}

static void emit_post(KVisitor *v, KNode *n) {
  Emitter *e = v->user;
  if (n->kind == KN_FOR && n->u.loop.var) close_scope(e);
  if (n->kind == KN_IF) close_scope(e);
  if (n->kind == KN_BLOCK_REDUCE) cg_block_reduce_end(e, n);
}

static void emit_block(Emitter *e, const KBlock *b) {
  KVisitor v = {.between = emit_between, .user = e};
  kir_visit_all(&v, emit_pre, emit_post);
  kir_visit(&v, (KBlock *)b); /* printing changes nothing */
}

char *cg_generate(const KKernel *k, const Dialect *d, const char **unmarked) {
  Emitter e = {.k = k, .d = d};
  e.param_names = k->param_names;
  for (int dim = 0; dim < 3; dim++)
    if (!kx_is_const(k->block[dim], &e.block_size[dim])) e.block_size[dim] = 0;
  d->preamble(&e);
  d->signature(&e);
  e.indent = 1;
  d->buffers(&e);
  emit_block(&e, &k->body);
  e.indent = 0;
  d->epilogue(&e);
  if (unmarked) *unmarked = e.unmarked ? e.unmarked->name : NULL;
  return sb_take(&e.out);
}
