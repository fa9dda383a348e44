/* lower/ptype_propagate.c: pass 2. Axes that share a loop share its parallel type: a
 * serial axis inlined into (or hosting) a thread- or block-parallel axis runs on that
 * thread or block index. This pass gives every loop axis its effective parallel type, so
 * that the allocation rule, the synchronization analysis and the validations judge what
 * the kernel will run, not what the tensor declared.
 * Requires: c->exprs. Establishes: c->ptype (effective type by Val id; lower_ptype()).
 * Key decision: nvFuser's propagation within loop groups, computed on the pairs that
 * share loops here (axis j of a producer and of its consumer for j < the producer's
 * compute-at position), to a fixpoint; conflicting launch types are left for
 * validate_parallel.c to report. */
#include "lower/lower.h"

static bool launch(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

cf_parallel_type lower_ptype(const LowerCtx *c, const Val *id) { return c->ptype[id->id]; }

/* `to` takes `from`'s launch type. */
static bool adopt(LowerCtx *c, const Val *to, const Val *from) {
  cf_parallel_type t = c->ptype[to->id], s = c->ptype[from->id];
  if (!launch(s) || launch(t) || t == CF_PT_VECTORIZE) return false;
  c->ptype[to->id] = s;
  return true;
}

void lower_ptype_propagate(LowerCtx *c) {
  c->ptype = ARENA_ARRAY(c->a, cf_parallel_type, c->f->vals.len + 1);
  for (int i = 0; i < c->f->vals.len; i++) {
    Val *v = c->f->vals.items[i];
    /* a broadcast axis runs on nothing, whatever type it carries: it has one element */
    c->ptype[i] = v->kind == VAL_ID && ID(v)->iter_type != CF_ITER_BROADCAST ? ID(v)->ptype : CF_PT_SERIAL;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < c->nexprs; i++) {
      const Expr *e = c->exprs[i];
      Val *cv = e->out[0];
      for (int k = 0; k < e->nin; k++) {
        Val *p = e->in[k];
        if (p->kind != VAL_TV || ir_tv_is_input(c->f, p)) continue;
        for (int j = 0; j < TV(p)->ca_pos && j < TV(cv)->nloop; j++) {
          changed |= adopt(c, TV(p)->loop[j], TV(cv)->loop[j]);
          changed |= adopt(c, TV(cv)->loop[j], TV(p)->loop[j]);
        }
      }
    }
  }
}
