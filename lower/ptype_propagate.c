/* lower/ptype_propagate.c: axes that share a loop share its parallel type: a serial axis
 * in a loop group with a thread- or block-parallel axis runs on that thread or block
 * index. This pass gives every loop axis its effective parallel type, so that the
 * allocation rule, the synchronization analysis and the validations judge what the kernel
 * will run, not what the tensor declared.
 * Requires: the loop model. Establishes: c->ptype (effective type by Val id; lower_ptype()).
 * Key decision: one pass over the loop groups of the loop model (nvFuser's propagation
 * within loop groups): a group's type is the launch type of its non-broadcast members;
 * two members declared on different launch types are refused, naming both. */
#include "lower/lower.h"

static bool launch(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

cf_parallel_type lower_ptype(const LowerCtx *c, const Val *id) { return c->ptype[id->id]; }

static bool single_element(Val *id) {
  int64_t e;
  return ID(id)->iter_type == CF_ITER_BROADCAST ||
         (ID(id)->iter_type == CF_ITER_REDUCTION && ir_scalar_const_value(ID(id)->extent, &e) && e == 1);
}

static int axis_pos(Val *id) {
  Val *tv = ID(id)->tv;
  for (int j = 0; tv && j < TV(tv)->nloop; j++)
    if (TV(tv)->loop[j] == id) return j;
  return -1;
}

static _Noreturn void refuse_conflict(LowerCtx *c, Val *a, Val *b) {
  lower_fail(c, CF_ERR_INVALID_SCHEDULE,
             "compile: axis %d of %s (on %s) and axis %d of %s (on %s) share a loop; axes that share a loop need the "
             "same parallel type", axis_pos(a), TV(ID(a)->tv)->display_name, cf_parallel_type_name(ID(a)->ptype),
             axis_pos(b), TV(ID(b)->tv)->display_name, cf_parallel_type_name(ID(b)->ptype));
}

void lower_ptype_propagate(LowerCtx *c) {
  int n = c->f->vals.len;
  c->ptype = ARENA_ARRAY(c->a, cf_parallel_type, n + 1);
  Val **group_axis = ARENA_ARRAY(c->a, Val *, n + 1); /* by group: a member on a launch type */
  for (int i = 0; i < n; i++) {
    Val *v = c->f->vals.items[i];
    /* a broadcast axis runs on nothing, whatever type it carries: it has one element; nor
     * does a reduction over one element (a sum over a broadcast axis), which a block
     * reduction would count once per thread */
    c->ptype[i] = v->kind == VAL_ID && !single_element(v) ? ID(v)->ptype : CF_PT_SERIAL;
    if (!launch(c->ptype[i])) continue;
    Val **held = &group_axis[sched_loop_group(c->loops, v)];
    if (*held && ID(*held)->ptype != c->ptype[i]) refuse_conflict(c, *held, v);
    *held = v;
  }
  for (int i = 0; i < n; i++) {
    Val *held = group_axis[sched_loop_group(c->loops, c->f->vals.items[i])];
    cf_parallel_type g = held ? ID(held)->ptype : CF_PT_SERIAL;
    if (launch(g) && !launch(c->ptype[i]) && c->ptype[i] != CF_PT_VECTORIZE && ((Val *)c->f->vals.items[i])->kind == VAL_ID &&
        !single_element(c->f->vals.items[i]))
      c->ptype[i] = g;
  }
}
