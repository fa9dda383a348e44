/* executor/fingerprint.c: the exact fingerprint of a fusion and a target, the key of the
 * in-memory kernel cache (kernel_cache.c).
 * It is a binary serialization of everything lowering reads, in one pass over the fusion's
 * dense arrays of Vals and Exprs: every Val (kind, name, dtype, defining Expr; a scalar's
 * constant bit for bit, its symbol and binding; an IterDomain's extent, IterType and
 * parallel type; a TensorView's root, logical, allocation and loop domains, contiguity,
 * memory type, compute-at, max-producer and TMEM positions, strides and name), every Expr
 * (op, operands, results and the attributes of its op), the inputs, the outputs, the
 * schedule's signed-coordinates choice, the TMEM regions, the backend and the
 * architecture. References are dense ids, so the bytes are linear in the size of the
 * fusion and two fusions built by the same calls have the same bytes. Key decisions: nothing is printed (printing loses constants: %g made 1.0000002
 * and 1.0000001 one kernel, and costs more than lowering for large fusions); the cache
 * compares the whole byte string on a hash match, so a collision cannot return a wrong
 * kernel. */
#include <stdlib.h>
#include <string.h>

#include "executor/disk_cache.h"
#include "executor/executor_internal.h"

/* A growable byte string; on allocation failure `failed` is set and appends stop. */
typedef struct Fp {
  unsigned char *p;
  size_t len, cap;
  bool failed;
} Fp;

static void fp_bytes(Fp *b, const void *s, size_t n) {
  if (b->failed || n == 0) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void fp_i64(Fp *b, int64_t v) { fp_bytes(b, &v, sizeof v); }
static void fp_f64(Fp *b, double v) { fp_bytes(b, &v, sizeof v); } /* the bits, -0.0 and NaNs kept */
static void fp_ref(Fp *b, const Val *v) { fp_i64(b, v ? v->id : -1); }
static void fp_eref(Fp *b, const Expr *e) { fp_i64(b, e ? e->id : -1); }

static void fp_str(Fp *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  fp_i64(b, s ? (int64_t)n : -1);
  fp_bytes(b, s, n);
}

static void fp_refs(Fp *b, Val *const *v, int n) {
  fp_i64(b, v ? n : -1);
  for (int i = 0; v && i < n; i++) fp_ref(b, v[i]);
}

static void fp_tv(Fp *b, const TensorView *t) {
  fp_refs(b, t->root, t->nroot);
  fp_refs(b, t->logical, t->nlogical);
  fp_refs(b, t->alloc, t->nalloc);
  int nc = t->alloc ? t->nalloc : t->nlogical;
  fp_i64(b, t->contiguity ? nc : -1);
  if (t->contiguity) fp_bytes(b, t->contiguity, (size_t)nc);
  fp_refs(b, t->loop, t->nloop);
  int64_t pos[11] = {t->mem,        t->ca_pos,   t->max_producer_pos, t->tmem_dim_sep, t->has_strides, t->nlogical,
                     t->cb_stages, t->cb_prefetch, t->tma_load,      t->ws_pt,        t->reg_elems};
  fp_bytes(b, pos, sizeof pos);
  if (t->has_strides) fp_refs(b, t->strides, t->nlogical);
  fp_str(b, t->display_name);
}

static void fp_val(Fp *b, const Val *v) {
  int64_t head[4] = {v->kind, v->name, v->dtype, v->def ? v->def->id : -1};
  fp_bytes(b, head, sizeof head);
  switch (v->kind) {
  case VAL_SCALAR: {
    const Scalar *s = &v->u.scalar;
    int64_t w[4] = {s->is_const, s->i, s->input_axis, s->stride_of};
    fp_bytes(b, w, sizeof w);
    fp_f64(b, s->d);
    fp_str(b, s->sym_name);
    fp_ref(b, s->input_tv);
    return;
  }
  case VAL_ID: {
    const IterDomain *d = &v->u.id;
    int64_t w[2] = {d->iter_type, d->ptype};
    fp_bytes(b, w, sizeof w);
    fp_ref(b, d->extent);
    fp_ref(b, d->tv);
    return;
  }
  case VAL_TV: fp_tv(b, &v->u.tv); return;
  }
  fp_i64(b, -2); /* an unknown kind still changes the key */
}

/* The attributes of e's op: only the union member that op uses. */
static void fp_attrs(Fp *b, const Expr *e) {
  switch (e->op) {
  case OP_SPLIT:
    fp_ref(b, e->attr.split.factor);
    fp_i64(b, e->attr.split.inner);
    return;
  case OP_SWIZZLE: fp_i64(b, e->attr.swizzle.type); return;
  case OP_CAST: fp_i64(b, e->attr.cast.to); return;
  case OP_BROADCAST:
    fp_i64(b, e->attr.broadcast.rank);
    for (int i = 0; i < e->attr.broadcast.rank; i++) fp_i64(b, e->attr.broadcast.is_broadcast[i]);
    return;
  case OP_SQUEEZE:
    fp_i64(b, e->attr.squeeze.rank);
    for (int i = 0; i < e->attr.squeeze.rank; i++) fp_i64(b, e->attr.squeeze.is_squeezed[i]);
    return;
  case OP_SLICE:
    for (int i = 0; i < e->attr.slice.rank; i++) fp_ref(b, e->attr.slice.start[i]), fp_i64(b, e->attr.slice.step[i]);
    return;
  case OP_PAD:
    for (int i = 0; i < e->attr.pad.rank; i++) fp_i64(b, e->attr.pad.left[i]), fp_i64(b, e->attr.pad.right[i]);
    fp_f64(b, e->attr.pad.value), fp_i64(b, e->attr.pad.ivalue);
    return;
  case OP_CAT: fp_i64(b, e->attr.cat.axis); return;
  case OP_IOTA:
    fp_f64(b, e->attr.iota.start), fp_f64(b, e->attr.iota.step);
    fp_i64(b, e->attr.iota.istart), fp_i64(b, e->attr.iota.istep), fp_i64(b, e->attr.iota.axis);
    return;
  case OP_FULL: /* an integer full is exact in ivalue (2^62 + 1 and 2^62 are one double) */
    fp_f64(b, e->attr.full.value);
    fp_i64(b, e->attr.full.ivalue);
    fp_f64(b, e->attr.full.imag);
    return;
  case OP_PERMUTE:
    fp_i64(b, e->attr.permute.rank);
    for (int i = 0; i < e->attr.permute.rank; i++) fp_i64(b, e->attr.permute.perm[i]);
    return;
  default:
    if (ir_op_kind(e->op) == OPK_INDEXED) fp_i64(b, e->attr.indexed.axis); /* gather, scatter, the scans */
    if (ir_op_kind(e->op) != OPK_BINARY) return;
    fp_i64(b, e->attr.scalar_rhs.is_scalar_rhs);
    fp_f64(b, e->attr.scalar_rhs.is_scalar_rhs ? e->attr.scalar_rhs.value : 0.0);
    if (e->attr.scalar_rhs.is_scalar_rhs && e->attr.scalar_rhs.val) fp_ref(b, e->attr.scalar_rhs.val);
  }
}

static void fp_expr(Fp *b, const Expr *e) {
  fp_i64(b, e->op);
  fp_eref(b, e);
  fp_refs(b, e->in, e->nin);
  fp_refs(b, e->out, e->nout);
  fp_attrs(b, e);
}

static void fp_fusion(Fp *b, cf_fusion *f) {
  fp_i64(b, f->vals.len);
  for (int i = 0; i < f->vals.len; i++) fp_val(b, f->vals.items[i]);
  fp_i64(b, f->exprs.len);
  for (int i = 0; i < f->exprs.len; i++) fp_expr(b, f->exprs.items[i]);
  fp_refs(b, (Val *const *)f->inputs.items, f->inputs.len);
  fp_refs(b, (Val *const *)f->outputs.items, f->outputs.len);
  fp_i64(b, f->signed_coords);
  fp_i64(b, f->blocks_per_sm);
  fp_i64(b, f->tmem_regions.len);
  for (int r = 0; r < f->tmem_regions.len; r++) {
    const TMemRegionSpec *spec = f->tmem_regions.items[r];
    fp_refs(b, spec->tvs, spec->ntvs);
  }
}


cf_status exec_fingerprint(cf_fusion *f, cf_backend backend, const cf_executor_options *opts, ExecFingerprint *out) {
  Fp b = {0};
  size_t guess = 64 * ((size_t)f->vals.len + (size_t)f->exprs.len) + 256; /* about the final size */
  if ((b.p = malloc(guess))) b.cap = guess;
  fp_i64(&b, backend);
  fp_str(&b, opts && opts->arch ? opts->arch : "device");
  fp_i64(&b, opts ? opts->index_type : CF_INDEX_AUTO);
  fp_fusion(&b, f);
  if (b.failed) {
    free(b.p);
    *out = (ExecFingerprint){0};
    return CF_ERR_OUT_OF_MEMORY;
  }
  *out = (ExecFingerprint){b.p, b.len, exec_hash64(b.p, b.len)};
  return CF_OK;
}
