/* scheduler/hoist_broadcasts.c: the rewrite that moves a broadcast of a computed tensor
 * onto the fusion inputs it is computed from (sched_hoist_broadcasts), applied once to
 * define and run's concrete copy before any row is asked (executor/fusion_plan.c), so
 * every row and the segmenter see it. Below the registry, above the IR (it edits
 * operands and use lists, as recompute.c does).
 *
 * b = broadcast(c), where c is computed from fusion inputs by elementwise ops alone
 * (casts, unary ops, binary and ternary ops whose other operands are in the same chain,
 * 0-d tensors, scalars or broadcasts of fusion inputs: a 0-d scalar is broadcast to the
 * row it multiplies), becomes b = chain'(broadcast(inputs)): each input of the chain is
 * broadcast as c was (a broadcast leaf's input once, the two broadcasts composed), and
 * the chain is computed again on the broadcast shape, its last op writing b itself (b
 * keeps its name, its axes and its readers). A bias cast to float
 * and broadcast along the rows, gelu(cast(x) + broadcast(cast(bias))), becomes
 * gelu(cast(x) + cast(broadcast(bias))): each element recomputes cast(bias[j]), as
 * nvFuser's inlining recomputes such producers, and no row sees a tensor of lower rank
 * computed in the fusion and broadcast (which the pointwise scheduler must refuse: its
 * own tile would run in other blocks), so the bias's cast no longer costs a kernel.
 * c and its chain stay where something else reads them (an output, a reduction); a chain
 * left with no reader is removed (ir_expr_drop).
 * Key decisions: only chains whose leaves are fusion inputs or their broadcasts (a leaf
 * computed by a reduction, a full or a random op is not recomputed: a random op's value
 * depends on its position); a chain of more than SCHED_HOIST_MAX_OPS ops stays where it is (each op is
 * recomputed for every element of the broadcast shape, and past that the extra kernel
 * costs less); the recomputed ops are the same ops on the same dtypes, so results are
 * bit for bit the evaluator's. */
#include "scheduler/registry.h"

/* Whether e may be recomputed on another shape: elementwise, element for element (not
 * expand, which iterates axes its input broadcasts; not a random op, whose value depends
 * on the position; not a Welford field, read from states). */
static bool recomputable(const Expr *e) {
  IrTypeRule r = ir_op_type_rule(e->op);
  return ir_op_is_elementwise(e->op) && e->op != OP_EXPAND && e->nout == 1 && r != TR_RANDOM && r != TR_RANDOM64 &&
         r != TR_WELFORD;
}

/* Whether an operand of a chain op of rank r is read as it is at any shape (a scalar or
 * a 0-d tensor below rank r) rather than a member of the chain. */
static bool kept_operand(Val *v, int r) { return v->kind != VAL_TV || (TV(v)->nlogical == 0 && r > 0); }

/* The fusion input a chain leaf reads: the leaf itself, or the input a broadcast leaf
 * broadcasts (a 0-d scalar multiplying a row is broadcast to it); NULL for a tensor that
 * is not a leaf. */
static Val *leaf_input(cf_fusion *f, Val *v) {
  if (ir_tv_is_input(f, v)) return v;
  return v->def && v->def->op == OP_BROADCAST && ir_tv_is_input(f, v->def->in[0]) ? v->def->in[0] : NULL;
}

/* Counts the ops of c's chain into *nops (members marked in seen, by Val id); false when
 * c is not such a chain of rank r (a leaf that is not a fusion input, an op that is not
 * recomputable, an operand of another rank) or it has more than SCHED_HOIST_MAX_OPS ops. */
static bool chain(cf_fusion *f, Val *c, int r, char *seen, int *nops) {
  if (seen[c->id]) return true;
  seen[c->id] = 1;
  if (leaf_input(f, c)) return TV(c)->nlogical == r;
  if (!c->def || !recomputable(c->def) || TV(c)->nlogical != r || ++*nops > SCHED_HOIST_MAX_OPS) return false;
  bool member = false;
  for (int i = 0; i < c->def->nin; i++) {
    Val *v = c->def->in[i];
    if (kept_operand(v, r)) continue;
    if (TV(v)->nlogical != r || !chain(f, v, r, seen, nops)) return false;
    member = true;
  }
  return member;
}

/* A tensor of rank `rank` over tv's logical axes with broadcast axes inserted where
 * is_broadcast says (the shape broadcast(tv) has), not yet defined. */
static Val *broadcast_shape(cf_fusion *f, Val *tv, cf_dtype dtype, int rank, const bool *is_broadcast) {
  Val *ids[CF_MAX_RANK];
  for (int i = 0, k = 0; i < rank; i++) {
    ids[i] = is_broadcast[i] ? ir_id_new(f, ir_const_int(f, 1), CF_ITER_BROADCAST) : ir_id_clone(f, TV(tv)->logical[k++]);
    if (!ids[i]) return NULL;
  }
  return ir_tv_new(f, dtype, rank, ids);
}

/* The clone of chain member v on the broadcast shape of bc (memo: by v's id); `last` is
 * the tensor the clone of the chain's root writes (bc's output). NULL when out of memory. */
static Val *clone_chain(cf_fusion *f, const Expr *bc, Val *v, Val *last, Val **memo) {
  if (memo[v->id]) return memo[v->id];
  const bool *flags = bc->attr.broadcast.is_broadcast;
  int rank = bc->attr.broadcast.rank, r = TV(v)->nlogical;
  Val *in0 = leaf_input(f, v);
  if (in0) {
    bool both[CF_MAX_RANK]; /* bc's flags composed with those of a broadcast leaf */
    for (int i = 0, k = 0; i < rank; i++)
      if (!(both[i] = flags[i])) both[i] = v != in0 && v->def->attr.broadcast.is_broadcast[k++];
    return memo[v->id] = ir_tv(cf_broadcast(f, ir_tv_handle(in0), rank, both));
  }
  Expr *e = v->def;
  Val **in = ARENA_ARRAY(f->arena, Val *, e->nin);
  if (!in) return NULL;
  for (int i = 0; i < e->nin; i++)
    if (!(in[i] = kept_operand(e->in[i], r) ? e->in[i] : clone_chain(f, bc, e->in[i], NULL, memo))) return NULL;
  Val *out = last ? last : broadcast_shape(f, v, v->dtype, rank, flags);
  Expr *c = out ? ir_expr_new(f, e->op, e->nin, in, 1, &out) : NULL;
  if (!c) return NULL;
  c->attr = e->attr; /* arrays are shared: the fusion's arena owns both */
  return memo[v->id] = out;
}

static bool has_reader(const cf_fusion *f, const Val *v) {
  for (int i = 0; i < v->uses.len; i++)
    if (ir_op_kind(((Expr *)v->uses.items[i])->op) != OPK_TRANSFORM) return true;
  return ir_tv_is_output(f, v);
}

/* Removes e (a definition no one reads) from f, and so on up every computed operand e was
 * the last reader of. */
static void drop_dead(cf_fusion *f, Expr *e) {
  ir_expr_drop(f, e);
  for (int i = 0; i < e->nin; i++) {
    Val *v = e->in[i];
    if (v->kind == VAL_TV && v->def && !ir_tv_is_input(f, v) && !has_reader(f, v)) drop_dead(f, v->def);
  }
}

/* Rewrites broadcast bc when its operand is a chain of the header's kind. */
static cf_status hoist(cf_fusion *f, Arena *a, Expr *bc) {
  Val *c = bc->in[0], *b = bc->out[0];
  int nops = 0, nins = 0;
  char *seen = ARENA_ARRAY(a, char, f->vals.len);
  if (!seen) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "hoist broadcasts: out of memory");
  for (int i = 0; i < bc->attr.broadcast.rank; i++) nins += bc->attr.broadcast.is_broadcast[i];
  if (nins == 0 || leaf_input(f, c) || !chain(f, c, TV(c)->nlogical, seen, &nops)) return CF_OK;
  Val **memo = ARENA_ARRAY(a, Val *, f->vals.len);
  if (!memo) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "hoist broadcasts: out of memory");
  ir_expr_drop(f, bc); /* b is defined again by the clone of c's op; c loses this reader */
  if (!clone_chain(f, bc, c, b, memo)) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "hoist broadcasts: out of memory");
  if (!has_reader(f, c)) drop_dead(f, c->def);
  return f->status;
}

cf_status sched_hoist_broadcasts(cf_fusion *f) {
  if (f->status) return f->status;
  Arena *a = arena_create();
  int n;
  Expr **exprs = a ? ir_fusion_tensor_exprs_in(a, f, &n) : NULL;
  if (!exprs) {
    arena_destroy(a);
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "hoist broadcasts: out of memory");
  }
  for (int i = 0; i < n && !f->status; i++)
    if (exprs[i]->op == OP_BROADCAST) hoist(f, a, exprs[i]);
  arena_destroy(a);
  return f->status;
}
