/* scheduler/matmul_operands.c: the matmul row's operand chains put in load order
 * (sched_matmul_operand_order), applied by the row (matmul_sched.c) before it schedules, so
 * each operand tile is loaded straight from its fusion input. Below the row, above the IR
 * (it edits expressions and use lists, as hoist_broadcasts.c does).
 *
 * An operand of the product's mul is a chain of moves and casts of one fusion input x
 * (sets, permutes, broadcasts, casts, in any order: linear(set(x), w), matmul(x^T, w), a
 * prologue cast to half). Every op of the chain moves or converts elements one for one, so
 * the operand is x read at a fixed index map, converted by the chain's casts. The chain is
 * rebuilt in the order the tile's load has: broadcast(x) to the product's rank, one
 * permute into the product's axis order, the casts in their order; sets and casts to the
 * dtype already there are dropped. Why: loops are shared position by position
 * (scheduler/inline.c), so a tensor of lower rank than the tile (a permute of x before the
 * broadcast) cannot be inlined into it, and a copy that is not inlined is a statement of
 * its own: computed for the whole K panel by every thread (a per-thread array that grows
 * with K), or, in the K loop of a circular-buffered tile, a statement the prefetch reads
 * before it is written. Rebuilt, every tensor of the chain has the tile's rank, takes its
 * transforms and is inlined into its writes; a chain of one broadcast and casts is the
 * tile itself reading x.
 * A cast back to the dtype before the previous cast, which holds its every value
 * (ir_dtype_embeds: bfloat16 -> float -> bfloat16), is the identity and is dropped with it:
 * the tile is then a copy of the input, which its fill moves 16 bytes at a time.
 * Key decisions: the rebuilt chain computes the same elements bit for bit (moves are
 * exact, the casts keep their order, a dropped round trip changes no value); a chain
 * already in that order, or without a
 * broadcast or permute (an input that has the product's axes: its tensors have the tile's
 * axes already), is left alone, so the rewrite is idempotent. */
#include <string.h>

#include "analysis/analysis.h"
#include "ir/dtype.h"
#include "scheduler/matmul_mma.h"

/* The operand's index map: axis i of the operand is axis src[i] of x, or a broadcast (-1);
 * the dtypes its casts convert to, in order. */
typedef struct Chain {
  Val *x;
  int rank, src[CF_MAX_RANK + 1];
  int ncasts;
  cf_dtype *casts; /* as many as the chain has ops */
  bool canonical;  /* already broadcast?, permute?, casts to new dtypes (no set) */
  bool folded;     /* a cast round trip was dropped */
} Chain;

/* Order of a canonical chain: each op's stage may not be below the previous one's. */
enum { STAGE_BROADCAST, STAGE_PERMUTE, STAGE_CAST };

static void apply_op(Chain *c, const Expr *e, int *stage, cf_dtype *dt) {
  int old[CF_MAX_RANK + 1], n = c->rank;
  memcpy(old, c->src, sizeof old);
  if (e->op == OP_BROADCAST) {
    c->rank = e->attr.broadcast.rank;
    for (int i = 0, k = 0; i < c->rank; i++) c->src[i] = e->attr.broadcast.is_broadcast[i] ? -1 : old[k++];
    c->canonical &= *stage <= STAGE_BROADCAST;
    *stage = STAGE_PERMUTE;
  } else if (ir_op_kind(e->op) == OPK_PERMUTE) {
    for (int i = 0; i < n; i++) c->src[i] = old[e->attr.permute.perm[i]];
    c->canonical &= *stage <= STAGE_PERMUTE;
    *stage = STAGE_CAST;
  } else if (ir_op_kind(e->op) == OPK_CAST && e->out[0]->dtype != *dt) {
    /* a cast back to the dtype before the last one, which held its every value, undoes
     * it (bfloat16 -> float -> bfloat16 is bfloat16): both are dropped */
    cf_dtype before = c->ncasts >= 2 ? c->casts[c->ncasts - 2] : c->x->dtype;
    if (c->ncasts && e->out[0]->dtype == before && ir_dtype_embeds(before, *dt)) {
      c->ncasts--, *dt = before, c->canonical = false, c->folded = true;
      return;
    }
    c->casts[c->ncasts++] = *dt = e->out[0]->dtype;
    *stage = STAGE_CAST;
  } else {
    c->canonical = false; /* a set, or a cast to the dtype already there */
  }
}

/* Reads the chain from x to v (ops of one input each, as the row matched it); false when
 * out of memory. */
static bool read_chain(Arena *a, cf_fusion *f, Val *v, Chain *c) {
  int n = 0;
  for (Val *w = v; !ir_tv_is_input(f, w); w = w->def->in[0]) n++;
  const Expr **ops = ARENA_ARRAY(a, const Expr *, n + 1);
  *c = (Chain){.casts = ARENA_ARRAY(a, cf_dtype, n + 1), .canonical = true};
  if (!ops || !c->casts) return false;
  for (int k = 0; !ir_tv_is_input(f, v); v = v->def->in[0]) ops[k++] = v->def;
  c->x = v, c->rank = TV(v)->nlogical;
  for (int i = 0; i < c->rank; i++) c->src[i] = i;
  int stage = STAGE_BROADCAST;
  cf_dtype dt = v->dtype;
  for (int i = n - 1; i >= 0; i--) apply_op(c, ops[i], &stage, &dt);
  /* without a broadcast or permute every tensor of the chain has the tile's axes already */
  bool moves = c->rank != TV(c->x)->nlogical;
  for (int i = 0; i < c->rank; i++) moves |= c->src[i] != i;
  c->canonical |= !moves && !c->folded;
  return true;
}

/* broadcast(x) with x's axes in their order, then the permute into the operand's order,
 * then the casts. */
static cf_tv *rebuild(cf_fusion *f, const Chain *c) {
  cf_tv *t = ir_tv_handle(c->x);
  bool flags[CF_MAX_RANK + 1];
  int slot[CF_MAX_RANK + 1], perm[CF_MAX_RANK + 1], nb = 0;
  for (int i = 0, k = 0; i < c->rank; i++) {
    flags[i] = c->src[i] < 0;
    nb += flags[i];
    if (!flags[i]) slot[k++] = i; /* broadcast(x) holds x's axis k at slot[k] */
  }
  if (nb) t = cf_broadcast(f, t, c->rank, flags);
  bool identity = true;
  for (int i = 0; i < c->rank; i++) identity &= (perm[i] = c->src[i] < 0 ? i : slot[c->src[i]]) == i;
  if (!identity) t = cf_permute(f, t, c->rank, perm);
  for (int i = 0; i < c->ncasts; i++) t = cf_cast(f, t, c->casts[i]);
  return t;
}

/* Removes v's definition and so on up the chain while nothing reads the tensor. */
static void drop_chain(cf_fusion *f, Val *v) {
  while (v->def && !ir_tv_is_input(f, v) && v->uses.len == 0 && !ir_tv_is_output(f, v)) {
    Expr *e = v->def;
    ir_expr_drop(f, e);
    v = e->in[0];
  }
}

/* The mul reads t instead of its operand i. */
static cf_status reread(cf_fusion *f, Expr *mul, int i, cf_tv *t) {
  Val *in[2] = {mul->in[0], mul->in[1]}, *out = mul->out[0];
  in[i] = ir_tv(t);
  ir_expr_drop(f, mul); /* kept in the arena: its attributes are copied below */
  Expr *e = ir_expr_new(f, mul->op, 2, in, 1, &out);
  if (!e) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  e->attr = mul->attr;
  return CF_OK;
}

bool sched_matmul_operand_fill(cf_fusion *f, Val *operand, MmaOperandFill *out) {
  Arena *a = arena_create();
  Chain c;
  if (!a || !read_chain(a, f, operand, &c)) {
    arena_destroy(a);
    return false;
  }
  int inner = an_innermost_axis(c.x);
  bool ordered = true;
  *out = (MmaOperandFill){c.x, -1, false, c.ncasts != 1, c.ncasts};
  for (int i = 0, last = -1; i < c.rank; i++) {
    if (c.src[i] < 0) continue;
    ordered &= c.src[i] > last, last = c.src[i];
    if (c.src[i] == inner) out->contig = i;
  }
  /* the tile is the operand before its last cast (to the accumulation dtype) */
  out->permuted = !ordered;
  arena_destroy(a);
  return true;
}

cf_status sched_matmul_operand_order(cf_fusion *f, Expr *mul, int i) {
  Arena *a = arena_create();
  Chain c;
  Val *v = mul->in[i];
  if (!a || !read_chain(a, f, v, &c)) {
    arena_destroy(a);
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "matmul: out of memory");
  }
  cf_tv *t = f->status || c.canonical ? NULL : rebuild(f, &c);
  arena_destroy(a);
  if (!t || reread(f, mul, i, t)) return f->status;
  drop_chain(f, v); /* v lost its reader */
  return f->status;
}
