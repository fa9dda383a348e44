/* ir/clone.c: deep copies of a fusion's math (cf_fusion_copy, ir_fusion_copy_part), the
 * unscheduled fusions the define-and-run executor hands to its schedulers.
 *
 * A copy holds the inputs (same dtypes, sizes, strides, contiguity and allocation order),
 * every tensor op with its attributes and the outputs, in the same order, and nothing of a
 * schedule: loop domains are the logical ones, every axis serial, intermediates local.
 * Every Val keeps its name (T3, iS5, i0), so the copy prints the same math.
 * A part of a fusion (a segment) is copied the same way from a list of its expressions;
 * a computed tensor the part reads becomes an input of the copy, with its logical axes
 * less the reduced ones, contiguous.
 * Key decision: a copy may be concrete: given the call's input tensors, every symbolic
 * size becomes the constant it has in this call (strides stay symbolic). The executor
 * cache keys kernels on exact sizes anyway, so nothing is lost, constant kernels index
 * and vectorize better, and a segment input computed by another segment needs no symbol
 * bound from an input it does not have. */
#include <dlpack/dlpack.h>
#include <stdlib.h>

#include "ir/ir.h"

typedef struct Copier {
  const cf_fusion *src;
  cf_fusion *dst;
  Val **map;                     /* source Val id -> copy */
  const DLTensor *const *sizes;  /* the source inputs' tensors, or NULL: stay symbolic */
} Copier;

static cf_status copy_fail(Copier *c, const char *what, Val *tv) {
  return ir_error(c->dst, CF_ERR_UNSUPPORTED,
                  "fusion_copy: %s %s; only the math of an unscheduled fusion is copied", TV(tv)->display_name, what);
}

static int input_index(const cf_fusion *f, const Val *tv) {
  for (int i = 0; i < f->inputs.len; i++)
    if (f->inputs.items[i] == tv) return i;
  return -1;
}

/* A Val of dst made with the source's kind, dtype and name. */
static Val *twin(Copier *c, const Val *v) {
  int saved = c->dst->next_name[v->kind];
  c->dst->next_name[v->kind] = v->name;
  Val *n = ir_val_new(c->dst, v->kind, v->dtype);
  c->dst->next_name[v->kind] = saved;
  if (n) n->name = v->name;
  return n;
}

static Val *copy_scalar(Copier *c, Val *v) {
  if (c->map[v->id]) return c->map[v->id];
  const Scalar *s = SC(v);
  if (v->def && v->def->nin == 2 && ir_op_kind(v->def->op) == OPK_BINARY && v->def->out[0] == v) {
    /* arithmetic on sizes (a reshape's inferred extent): copied operand by operand, so it
     * folds to a constant when the sizes are given */
    Val *a = copy_scalar(c, v->def->in[0]), *b = a ? copy_scalar(c, v->def->in[1]) : NULL;
    return b ? (c->map[v->id] = ir_scalar_op(c->dst, v->def->op, a, b)) : NULL;
  }
  if (v->def) {
    ir_error(c->dst, CF_ERR_UNSUPPORTED, "fusion_copy: a derived extent (made by a split or merge) is not copied");
    return NULL;
  }
  int in = s->input_tv ? input_index(c->src, s->input_tv) : -1;
  if (c->sizes && !s->is_const && !s->stride_of && in >= 0) {
    const DLTensor *t = c->sizes[in];
    return c->map[v->id] = ir_const_int(c->dst, t->shape[s->input_axis]);
  }
  Val *n = twin(c, v);
  if (!n) return NULL;
  *SC(n) = *s;
  SC(n)->input_tv = NULL; /* set once the tensor is copied (copy_tv) */
  if (s->sym_name) SC(n)->sym_name = arena_strdup(c->dst->arena, s->sym_name);
  return c->map[v->id] = n;
}

static Val *copy_id(Copier *c, Val *id, cf_iter_type type) {
  if (c->map[id->id]) return c->map[id->id];
  Val *ext = copy_scalar(c, ID(id)->extent);
  Val *n = ext ? twin(c, id) : NULL;
  if (!n) return NULL;
  ID(n)->extent = ext;
  ID(n)->iter_type = type;
  ID(n)->ptype = CF_PT_SERIAL;
  return c->map[id->id] = n;
}

/* The allocation order of an input: a permutation of its logical axes, or refused. */
static cf_status copy_alloc(Copier *c, Val *tv, Val *n) {
  TensorView *t = TV(tv), *u = TV(n);
  if (!t->alloc) {
    for (int a = 0; a < t->nlogical; a++) u->contiguity[a] = t->contiguity[a];
    return CF_OK;
  }
  u->alloc = ARENA_ARRAY(c->dst->arena, Val *, t->nalloc);
  u->contiguity = arena_memdup(c->dst->arena, t->contiguity, (size_t)t->nalloc);
  u->nalloc = t->nalloc;
  for (int a = 0; a < t->nalloc; a++) {
    Val *m = c->map[t->alloc[a]->id];
    if (!m || ID(m)->tv != n) return copy_fail(c, "has an allocation domain that is not made of its logical axes", tv);
    u->alloc[a] = m;
  }
  return CF_OK;
}

static cf_status copy_strides(Copier *c, Val *tv, Val *n) {
  TensorView *t = TV(tv), *u = TV(n);
  u->has_strides = t->has_strides;
  if (!t->has_strides) return CF_OK;
  u->strides = ARENA_ARRAY(c->dst->arena, Val *, t->nlogical);
  for (int a = 0; a < t->nlogical; a++)
    if (!(u->strides[a] = copy_scalar(c, t->strides[a]))) return c->dst->status;
  return CF_OK;
}

/* A source input: its axes, strides, contiguity and allocation order. */
static Val *copy_input(Copier *c, Val *tv) {
  TensorView *t = TV(tv);
  Val *ids[CF_MAX_RANK];
  for (int a = 0; a < t->nlogical; a++)
    if (!(ids[a] = copy_id(c, t->logical[a], ID(t->logical[a])->iter_type))) return NULL;
  int saved = c->dst->next_name[VAL_TV];
  c->dst->next_name[VAL_TV] = tv->name;
  Val *n = ir_tv_new(c->dst, tv->dtype, t->nlogical, ids);
  c->dst->next_name[VAL_TV] = saved;
  if (!n) return NULL;
  c->map[tv->id] = n;
  TV(n)->is_scalar = t->is_scalar;
  if (copy_alloc(c, tv, n) || copy_strides(c, tv, n)) return NULL;
  return n;
}

/* A computed tensor read by a part as its input: its kept axes, contiguous. */
static Val *copy_boundary(Copier *c, Val *tv) {
  TensorView *t = TV(tv);
  Val *ids[CF_MAX_RANK];
  int k = 0;
  for (int a = 0; a < t->nlogical; a++)
    if (ID(t->logical[a])->iter_type != CF_ITER_REDUCTION &&
        !(ids[k++] = copy_id(c, t->logical[a], ID(t->logical[a])->iter_type)))
      return NULL;
  int saved = c->dst->next_name[VAL_TV];
  c->dst->next_name[VAL_TV] = tv->name;
  Val *n = ir_tv_new(c->dst, tv->dtype, k, ids);
  c->dst->next_name[VAL_TV] = saved;
  return n ? c->map[tv->id] = n : NULL;
}

/* A tensor computed by a copied expression: root and logical domains. */
static Val *copy_computed(Copier *c, Val *tv) {
  TensorView *t = TV(tv);
  int nrf = 0;
  Arena *scratch = arena_create();
  if (scratch) ir_tv_root_to_logical(scratch, tv, &nrf);
  arena_destroy(scratch);
  if (nrf > 0) {
    copy_fail(c, "has an rfactor domain", tv);
    return NULL;
  }
  Val *ids[CF_MAX_RANK];
  for (int a = 0; a < t->nlogical; a++)
    if (!(ids[a] = copy_id(c, t->logical[a], ID(t->logical[a])->iter_type))) return NULL;
  int saved = c->dst->next_name[VAL_TV];
  c->dst->next_name[VAL_TV] = tv->name;
  Val *n = ir_tv_new(c->dst, tv->dtype, t->nlogical, ids);
  c->dst->next_name[VAL_TV] = saved;
  if (!n) return NULL;
  if (t->root != t->logical) {
    TV(n)->root = ARENA_ARRAY(c->dst->arena, Val *, t->nroot);
    TV(n)->nroot = t->nroot;
    for (int a = 0; a < t->nroot; a++) TV(n)->root[a] = c->map[t->root[a]->id];
  }
  return c->map[tv->id] = n;
}

/* Operands are inputs of the part or outputs of earlier copied expressions. */
static Val *copy_operand(Copier *c, Val *v) {
  if (c->map[v->id]) return c->map[v->id];
  if (v->kind == VAL_SCALAR) return copy_scalar(c, v);
  ir_error(c->dst, CF_ERR_INTERNAL, "internal error: fusion_copy: %s is read before it is copied; please report this bug",
           TV(v)->display_name);
  return NULL;
}

static cf_status copy_expr(Copier *c, const Expr *e) {
  Val *in[3 * CF_MAX_RANK + 1], *out[4]; /* a dynamic slice: its operand and 3 bounds per axis */
  if (e->nin > 3 * CF_MAX_RANK + 1 || e->nout > 4) return IR_INTERNAL(c->dst, e->nin <= 3 * CF_MAX_RANK + 1 && e->nout <= 4);
  for (int i = 0; i < e->nin; i++)
    if (!(in[i] = copy_operand(c, e->in[i]))) return c->dst->status;
  for (int i = 0; i < e->nout; i++)
    if (!(out[i] = copy_computed(c, e->out[i]))) return c->dst->status;
  Expr *n = ir_expr_new(c->dst, e->op, e->nin, in, e->nout, out);
  if (!n) return ir_error(c->dst, CF_ERR_OUT_OF_MEMORY, "fusion_copy: out of memory");
  n->attr = e->attr;
  n->ndyn = e->ndyn;
  if (e->op == OP_FULL && e->attr.full.extent && !(n->attr.full.extent = copy_scalar(c, e->attr.full.extent)))
    return c->dst->status;
  if (ir_op_kind(e->op) == OPK_BROADCAST)
    n->attr.broadcast.is_broadcast = arena_memdup(c->dst->arena, e->attr.broadcast.is_broadcast,
                                                  sizeof(bool) * (size_t)e->attr.broadcast.rank);
  if (ir_op_kind(e->op) == OPK_SQUEEZE)
    n->attr.squeeze.is_squeezed = arena_memdup(c->dst->arena, e->attr.squeeze.is_squeezed,
                                               sizeof(bool) * (size_t)(e->attr.squeeze.rank > 0 ? e->attr.squeeze.rank : 1));
  if (e->op == OP_SLICE) {
    size_t k = (size_t)(e->attr.slice.rank > 0 ? e->attr.slice.rank : 1);
    n->attr.slice.start = ARENA_ARRAY(c->dst->arena, Val *, k);
    if (!n->attr.slice.start) return ir_error(c->dst, CF_ERR_OUT_OF_MEMORY, "fusion_copy: out of memory");
    for (int i = 0; i < e->attr.slice.rank; i++)
      if (!(n->attr.slice.start[i] = copy_scalar(c, e->attr.slice.start[i]))) return c->dst->status;
    n->attr.slice.step = arena_memdup(c->dst->arena, e->attr.slice.step, sizeof(int64_t) * k);
    n->attr.slice.resized = arena_memdup(c->dst->arena, e->attr.slice.resized, sizeof(bool) * k);
  }
  if (e->op == OP_PAD) {
    size_t k = (size_t)(e->attr.pad.rank > 0 ? e->attr.pad.rank : 1);
    n->attr.pad.left = arena_memdup(c->dst->arena, e->attr.pad.left, sizeof(int64_t) * k);
    n->attr.pad.right = arena_memdup(c->dst->arena, e->attr.pad.right, sizeof(int64_t) * k);
  }
  if (ir_op_kind(e->op) == OPK_BINARY && e->attr.scalar_rhs.is_scalar_rhs && e->attr.scalar_rhs.val &&
      !(n->attr.scalar_rhs.val = copy_scalar(c, e->attr.scalar_rhs.val)))
    return c->dst->status;
  if (ir_op_kind(e->op) == OPK_PERMUTE)
    n->attr.permute.perm = arena_memdup(c->dst->arena, e->attr.permute.perm, sizeof(int) * (size_t)e->attr.permute.rank);
  return CF_OK;
}

/* Symbols bound from a tensor point at its copy (tensors are copied after their sizes). */
static void bind_symbols(Copier *c) {
  for (int i = 0; i < c->src->vals.len; i++) {
    Val *v = c->src->vals.items[i], *n = c->map[i];
    if (n && v->kind == VAL_SCALAR && SC(v)->input_tv) SC(n)->input_tv = c->map[SC(v)->input_tv->id];
  }
}

cf_fusion *ir_fusion_copy_part(const cf_fusion *f, int nexprs, Expr *const *exprs, int nin, Val *const *ins, int nout,
                               Val *const *outs, const DLTensor *const *sizes, Val **map) {
  cf_fusion *g = cf_fusion_create();
  if (!g) return NULL;
  Copier c = {f, g, map ? map : calloc((size_t)f->vals.len + 1, sizeof(Val *)), sizes};
  if (!c.map) {
    cf_fusion_destroy(g);
    return NULL;
  }
  for (int i = 0; i < nin && !g->status; i++) {
    Val *n = ins[i]->def ? copy_boundary(&c, ins[i]) : copy_input(&c, ins[i]);
    if (n) cf_fusion_add_input(g, ir_tv_handle(n));
    else if (!g->status) ir_error(g, CF_ERR_OUT_OF_MEMORY, "fusion_copy: out of memory");
  }
  for (int i = 0; i < nexprs && !g->status; i++) copy_expr(&c, exprs[i]);
  for (int i = 0; i < nout && !g->status; i++) {
    Val *n = c.map[outs[i]->id];
    if (!n) IR_INTERNAL(g, n);
    else cf_fusion_add_output(g, ir_tv_handle(n));
  }
  if (!g->status) bind_symbols(&c);
  for (int k = 0; k < 3; k++)
    if (f->next_name[k] > g->next_name[k]) g->next_name[k] = f->next_name[k];
  if (!map) free(c.map);
  return g;
}

cf_fusion *cf_fusion_copy(const cf_fusion *f) {
  if (!f) return NULL;
  if (f->status) {
    cf_fusion *g = cf_fusion_create();
    if (g) ir_error(g, f->status, "fusion_copy: the fusion has an error: %s", f->error ? f->error : "");
    return g;
  }
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, (cf_fusion *)(uintptr_t)f, &n) : NULL;
  cf_fusion *g = scratch ? ir_fusion_copy_part(f, n, exprs, f->inputs.len, (Val *const *)f->inputs.items,
                                               f->outputs.len, (Val *const *)f->outputs.items, NULL, NULL)
                         : NULL;
  arena_destroy(scratch);
  return g;
}
