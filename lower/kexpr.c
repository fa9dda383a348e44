/* lower/kexpr.c: the kernel's scalar expressions (indices, extents, predicates, launch
 * dimensions): construction with folding, structural equality, evaluation over parameter
 * sizes, and printing in C syntax.
 *
 * Key decision: fold at construction (constants, x*1, x+0, x*0, x/1, x%1, ceilDiv(x,1),
 * (x*c)/c and (x*c)%c for inner-split indices of known extent), so that a divisible
 * schedule of concrete sizes prints as short index arithmetic with no dead terms.
 * Thread and block leaves print as the bare builtins (threadIdx.x, blockDim.x, ...), with
 * no cast in any expression: their type is the kernel's, int where the code generators
 * shadow them for a 32-bit kernel with a tensor of run-time strides
 * (KKernel.signed_coords, set in lower/tensors.c), else CUDA's unsigned. A contiguous
 * 32-bit kernel keeps them unsigned by that rule, which is about correctness alone: a
 * negative stride makes an offset itself negative, which unsigned arithmetic wraps (x[::-1]
 * read gigabytes away), while a contiguous tensor's offsets are never negative, and 32-bit
 * unsigned arithmetic is modular, so an intermediate below zero (a pad's `- 10`) still
 * ends at the right offset. Its speed with int leaves: the one timing (stop 39's note, an
 * H200, bench/norm_rows.py) had RMS norm float32 512 x 131071 20% slower with the shadow in
 * every 32-bit kernel, gone without it; compiled for sm_90a, a row sum, a column sum, a
 * softmax and a transpose of 4096 x 8191 floats had 9-13% fewer instructions with it, a
 * pointwise kernel as many: worth timing over a sweep before changing the rule. A schedule
 * may ask for them (cf_fusion.signed_coords: the outer persistent block form, measured
 * faster). */
#include <string.h>

#include "lower/kir.h"

static KExpr *node(Arena *a, KxKind kind) {
  KExpr *e = ARENA_NEW(a, KExpr);
  e->kind = kind;
  return e;
}

KExpr *kx_const(Arena *a, int64_t v) {
  KExpr *e = node(a, KX_CONST);
  e->value = v;
  return e;
}
KExpr *kx_var(Arena *a, const char *name) {
  KExpr *e = node(a, KX_VAR);
  e->name = name;
  return e;
}
KExpr *kx_thread(Arena *a, cf_parallel_type pt, bool is_dim) {
  KExpr *e = node(a, KX_THREAD);
  e->pt = pt;
  e->is_dim = is_dim;
  return e;
}
KExpr *kx_param_size(Arena *a, int param, int axis) {
  KExpr *e = node(a, KX_PARAM_SIZE);
  e->param = param;
  e->axis = axis;
  return e;
}
KExpr *kx_param_stride(Arena *a, int param, int axis) {
  KExpr *e = node(a, KX_PARAM_STRIDE);
  e->param = param;
  e->axis = axis;
  return e;
}

bool kx_is_const(const KExpr *e, int64_t *v) {
  if (!e || e->kind != KX_CONST) return false;
  if (v) *v = e->value;
  return true;
}

static bool is_c(const KExpr *e, int64_t c) {
  int64_t v;
  return kx_is_const(e, &v) && v == c;
}

/* (x * c) / c == x and (x * c) % c == 0, for the split-index patterns of indexing. */
static KExpr *fold_mul_divmod(IrOp op, KExpr *x, KExpr *y) {
  if (x->kind != KX_BINARY || x->op != OP_MUL || !kx_is_const(y, NULL)) return NULL;
  if (!kx_equal(x->b, y)) return NULL;
  return op == OP_DIV ? x->a : NULL;
}

/* (x / c) * c + x % c == x: what a merge's backward index followed by the linearization
 * of a contiguous pair gives. */
static KExpr *fold_div_mod_sum(KExpr *x, KExpr *y) {
  if (x->kind != KX_BINARY || x->op != OP_MUL || y->kind != KX_BINARY || y->op != OP_MOD) return NULL;
  KExpr *d = x->a;
  if (d->kind != KX_BINARY || d->op != OP_DIV) return NULL;
  if (!kx_equal(d->b, x->b) || !kx_equal(d->b, y->b) || !kx_equal(d->a, y->a)) return NULL;
  return y->a;
}

/* Whether e's value is 0 or 1 by its form (a comparison, a conjunction, such a constant),
 * or e is a block vote, which only conditions read: 1 && e is e itself only then. */
static bool is_flag(const KExpr *e) {
  if (e->kind == KX_CONST) return e->value == 0 || e->value == 1;
  if (e->kind == KX_BLOCK_ALL) return true;
  if (e->kind != KX_BINARY) return false;
  switch (e->op) {
  case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE: case OP_AND: return true;
  default: return false;
  }
}

static KExpr *fold_identity(Arena *a, IrOp op, KExpr *x, KExpr *y) {
  switch (op) {
  case OP_ADD:
    if (is_c(x, 0)) return y;
    if (is_c(y, 0)) return x;
    return fold_div_mod_sum(x, y);
  case OP_SUB: return is_c(y, 0) ? x : NULL;
  case OP_MUL:
    if (is_c(x, 0) || is_c(y, 0)) return kx_const(a, 0);
    return is_c(x, 1) ? y : is_c(y, 1) ? x : NULL;
  case OP_DIV:
    if (is_c(x, 0)) return x;
    return is_c(y, 1) ? x : fold_mul_divmod(op, x, y);
  case OP_CEILDIV: return is_c(y, 1) ? x : NULL;
  case OP_MOD:
    if (is_c(y, 1) || is_c(x, 0)) return kx_const(a, 0);
    if (x->kind == KX_BINARY && x->op == OP_MUL && kx_equal(x->b, y)) return kx_const(a, 0);
    return NULL;
  case OP_AND:
    if (is_c(x, 0) || is_c(y, 0)) return kx_const(a, 0);
    return is_c(x, 1) && is_flag(y) ? y : is_c(y, 1) && is_flag(x) ? x : NULL;
  case OP_XOR: return is_c(x, 0) ? y : is_c(y, 0) ? x : NULL;
  case OP_MIN:
  case OP_MAX: return kx_equal(x, y) ? x : NULL;
  default: return NULL;
  }
}

KExpr *kx_bin(Arena *a, IrOp op, KExpr *x, KExpr *y) {
  int64_t u, v, r;
  if (kx_is_const(x, &u) && kx_is_const(y, &v) && ir_int_apply(op, u, v, &r)) return kx_const(a, r);
  KExpr *f = fold_identity(a, op, x, y);
  if (f) return f;
  KExpr *e = node(a, KX_BINARY);
  e->op = op;
  e->a = x;
  e->b = y;
  return e;
}

KExpr *kx_select(Arena *a, KExpr *c, KExpr *x, KExpr *y) {
  int64_t v;
  if (kx_is_const(c, &v)) return v ? x : y;
  KExpr *e = node(a, KX_SELECT);
  e->a = c;
  e->b = x;
  e->c = y;
  return e;
}

KExpr *kx_block_all(Arena *a, KExpr *x) {
  if (kx_is_const(x, NULL)) return x;
  KExpr *e = node(a, KX_BLOCK_ALL);
  e->a = x;
  return e;
}

KExpr *kx_subst(Arena *a, KExpr *e, const char *var, KExpr *val) {
  if (!e) return NULL;
  switch (e->kind) {
  case KX_VAR: return !strcmp(e->name, var) ? val : e;
  case KX_BINARY: return kx_bin(a, e->op, kx_subst(a, e->a, var, val), kx_subst(a, e->b, var, val));
  case KX_SELECT: return kx_select(a, kx_subst(a, e->a, var, val), kx_subst(a, e->b, var, val), kx_subst(a, e->c, var, val));
  case KX_BLOCK_ALL: return kx_block_all(a, kx_subst(a, e->a, var, val));
  default: return e;
  }
}

bool kx_equal(const KExpr *x, const KExpr *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind) return false;
  switch (x->kind) {
  case KX_CONST: return x->value == y->value;
  case KX_VAR: return strcmp(x->name, y->name) == 0;
  case KX_THREAD: return x->pt == y->pt && x->is_dim == y->is_dim;
  case KX_PARAM_SIZE:
  case KX_PARAM_STRIDE: return x->param == y->param && x->axis == y->axis;
  case KX_BINARY: return x->op == y->op && kx_equal(x->a, y->a) && kx_equal(x->b, y->b);
  case KX_SELECT: return kx_equal(x->a, y->a) && kx_equal(x->b, y->b) && kx_equal(x->c, y->c);
  case KX_BLOCK_ALL: return kx_equal(x->a, y->a);
  }
  return false;
}

bool kx_eval(const KExpr *e, const KxEnv *env, int64_t *out) {
  int64_t x, y, c;
  switch (e->kind) {
  case KX_CONST: *out = e->value; return true;
  case KX_PARAM_SIZE:
    if (!env || e->param >= env->nparams) return false;
    *out = env->sizes[e->param][e->axis];
    return true;
  case KX_PARAM_STRIDE:
    if (!env || e->param >= env->nparams) return false;
    *out = env->strides[e->param][e->axis];
    return true;
  case KX_BINARY:
    return kx_eval(e->a, env, &x) && kx_eval(e->b, env, &y) && ir_int_apply(e->op, x, y, out);
  case KX_SELECT:
    if (!kx_eval(e->a, env, &c)) return false;
    return kx_eval(c ? e->b : e->c, env, out);
  case KX_VAR:
  case KX_THREAD: return env && env->leaf && env->leaf(env->user, e, out);
  case KX_BLOCK_ALL: return false;
  }
  return false;
}

static const char *thread_name(cf_parallel_type pt, bool is_dim) {
  static const char *const idx[] = {[CF_PT_TIDX] = "threadIdx.x", [CF_PT_TIDY] = "threadIdx.y",
                                    [CF_PT_TIDZ] = "threadIdx.z", [CF_PT_BIDX] = "blockIdx.x",
                                    [CF_PT_BIDY] = "blockIdx.y",  [CF_PT_BIDZ] = "blockIdx.z"};
  static const char *const dim[] = {[CF_PT_TIDX] = "blockDim.x", [CF_PT_TIDY] = "blockDim.y",
                                    [CF_PT_TIDZ] = "blockDim.z", [CF_PT_BIDX] = "gridDim.x",
                                    [CF_PT_BIDY] = "gridDim.y",  [CF_PT_BIDZ] = "gridDim.z"};
  const char *s = is_dim ? dim[pt] : idx[pt];
  return s ? s : "0";
}

static const char *infix(IrOp op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_MUL: return "*";
  case OP_DIV: return "/";
  case OP_MOD: return "%";
  case OP_LT: return "<";
  case OP_LE: return "<=";
  case OP_GT: return ">";
  case OP_GE: return ">=";
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_AND: return "&&";
  case OP_XOR: return "^";
  default: return NULL;
  }
}

void kx_print(StrBuf *b, const KExpr *e, const char *const *param_names) {
  switch (e->kind) {
  case KX_CONST: sb_printf(b, "%lld", (long long)e->value); return;
  case KX_VAR: sb_puts(b, e->name); return;
  case KX_THREAD: sb_puts(b, thread_name(e->pt, e->is_dim)); return;
  case KX_PARAM_SIZE: sb_printf(b, "%s.logical_size[%d]", param_names[e->param], e->axis); return;
  case KX_PARAM_STRIDE: sb_printf(b, "%s.alloc_stride[%d]", param_names[e->param], e->axis); return;
  case KX_SELECT:
    sb_puts(b, "(");
    kx_print(b, e->a, param_names);
    sb_puts(b, " ? ");
    kx_print(b, e->b, param_names);
    sb_puts(b, " : ");
    kx_print(b, e->c, param_names);
    sb_puts(b, ")");
    return;
  case KX_BLOCK_ALL: /* CUDA's builtin; the host runtime defines it */
    sb_puts(b, "__syncthreads_and(");
    kx_print(b, e->a, param_names);
    sb_puts(b, ")");
    return;
  case KX_BINARY: break;
  }
  const char *op = infix(e->op);
  if (op) {
    sb_puts(b, "(");
    kx_print(b, e->a, param_names);
    sb_printf(b, " %s ", op);
    kx_print(b, e->b, param_names);
    sb_puts(b, ")");
    return;
  }
  sb_printf(b, "%s(", e->op == OP_CEILDIV ? "ceilDiv" : e->op == OP_MAX ? "max" : "min");
  kx_print(b, e->a, param_names);
  sb_puts(b, ", ");
  kx_print(b, e->b, param_names);
  sb_puts(b, ")");
}

void kb_push(Arena *a, KBlock *b, KNode *n) { kb_insert(a, b, b->len, n); }

void kb_remove(KBlock *b, int pos) {
  for (int i = pos; i + 1 < b->len; i++) b->items[i] = b->items[i + 1];
  b->len--;
}

int kb_index_of(const KBlock *b, const KNode *n) {
  for (int i = 0; i < b->len; i++)
    if (b->items[i] == n) return i;
  return -1;
}

void kb_insert(Arena *a, KBlock *b, int pos, KNode *n) {
  if (b->len == b->cap) {
    int cap = b->cap ? b->cap * 2 : 4;
    KNode **items = ARENA_ARRAY(a, KNode *, cap);
    if (b->len) memcpy(items, b->items, sizeof(KNode *) * (size_t)b->len);
    b->items = items;
    b->cap = cap;
  }
  memmove(b->items + pos + 1, b->items + pos, sizeof(KNode *) * (size_t)(b->len - pos));
  b->items[pos] = n;
  b->len++;
}

void kkernel_free(KKernel *k) {
  if (k) arena_destroy(k->arena); /* the kernel struct itself lives in its arena */
}

bool kx_uses_thread(const KExpr *e, cf_parallel_type pt) {
  if (!e || e->kind == KX_BLOCK_ALL) return false; /* a vote's value is the block's */
  if (e->kind == KX_THREAD && !e->is_dim && e->pt == pt) return true;
  return kx_uses_thread(e->a, pt) || kx_uses_thread(e->b, pt) || kx_uses_thread(e->c, pt);
}
