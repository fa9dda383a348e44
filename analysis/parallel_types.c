/* analysis/parallel_types.c: axes that share a loop share its parallel type: a serial axis
 * in a loop group with a thread- or block-parallel axis runs on that thread or block
 * index. The second half of the loop model (loop_model.c calls it) gives every IterDomain
 * its effective parallel type, so that the allocation rule, the synchronization analysis
 * and the validations judge what the kernel will run, not what the tensor declared.
 * Key decision: one pass over the loop groups (nvFuser's propagation within loop groups):
 * a group's type is the launch type of its non-broadcast members, else the Unroll or
 * Unswitch one of them carries (how the loop runs, ir_ptype_shapes_loop), which its serial
 * members then share; two members declared on different launch types, or on Unroll and
 * Unswitch, are refused, naming both. A launch type wins over Unroll and Unswitch. */
#include "analysis/analysis.h"

static bool launch(cf_parallel_type p) { return ir_ptype_is_thread(p) || ir_ptype_is_block(p); }

static bool single_element(Val *id) {
  int64_t e;
  return ID(id)->iter_type == CF_ITER_BROADCAST ||
         (ID(id)->iter_type == CF_ITER_REDUCTION && ir_scalar_const_value(ID(id)->extent, &e) && e == 1);
}

/* A reduction over one element in a loop of one iteration that runs on a launch type:
 * only index 0 of that type runs it, so it is a block or grid reduction of that type (its
 * result complete there alone, which lowering then handles or refuses), not a serial one
 * every thread or block would start from the empty value (DAG fuzzer mode 5, seed 6905:
 * an rfactor partial on blockIdx.x{1} read by its final reduction in every block). A
 * loop over a larger domain would fold the element once per index: it stays serial. */
static bool in_unit_loop(const LoopModel *m, Val *v) {
  int64_t e;
  return ID(v)->iter_type == CF_ITER_REDUCTION && ir_scalar_const_value(ID(an_promoted(m, v))->extent, &e) && e == 1;
}

static int axis_pos(Val *id) {
  Val *tv = ID(id)->tv;
  for (int j = 0; tv && j < TV(tv)->nloop; j++)
    if (TV(tv)->loop[j] == id) return j;
  return -1;
}

static char *conflict(Val *a, Val *b) {
  StrBuf s = {0};
  sb_printf(&s,
            "compile: axis %d of %s (on %s) and axis %d of %s (on %s) share a loop; axes that share a loop need the "
            "same parallel type", axis_pos(a), TV(ID(a)->tv)->display_name, cf_parallel_type_name(ID(a)->ptype),
            axis_pos(b), TV(ID(b)->tv)->display_name, cf_parallel_type_name(ID(b)->ptype));
  return sb_take(&s);
}

bool an_parallel_types(LoopModel *m, Arena *a, char **error) {
  int n = m->f->vals.len;
  cf_parallel_type *pt = ARENA_ARRAY(a, cf_parallel_type, n + 1);
  Val **group_axis = ARENA_ARRAY(a, Val *, n + 1); /* by group: a member on a launch type */
  Val **group_loop = ARENA_ARRAY(a, Val *, n + 1); /* by group: a member unrolled or unswitched */
  *error = NULL;
  if (!pt || !group_axis || !group_loop) return false;
  for (int i = 0; i < n; i++) {
    Val *v = m->f->vals.items[i];
    /* a broadcast axis runs on nothing, whatever type it carries: it has one element; nor
     * does a reduction over one element (a sum over a broadcast axis), which a block
     * reduction would count once per thread, unless unrolled or unswitched: a loop of one
     * iteration still holds a nest (nvFuser's split by 1 to unswitch) */
    bool keeps = v->kind == VAL_ID && (!single_element(v) || (ID(v)->iter_type == CF_ITER_REDUCTION &&
                                                              ir_ptype_shapes_loop(ID(v)->ptype)));
    pt[i] = keeps ? ID(v)->ptype : CF_PT_SERIAL;
    if (!launch(pt[i]) && !ir_ptype_shapes_loop(pt[i])) continue;
    Val **held = &(launch(pt[i]) ? group_axis : group_loop)[an_loop_group(m->loops, v)];
    if (*held && ID(*held)->ptype != pt[i]) return (*error = conflict(*held, v)), false;
    *held = v;
  }
  for (int i = 0; i < n; i++) {
    Val *v = m->f->vals.items[i];
    int grp = an_loop_group(m->loops, v);
    Val *held = group_axis[grp] ? group_axis[grp] : group_loop[grp];
    cf_parallel_type g = held ? ID(held)->ptype : CF_PT_SERIAL;
    if (g == CF_PT_SERIAL || launch(pt[i]) || pt[i] == CF_PT_VECTORIZE || v->kind != VAL_ID) continue;
    if (single_element(v) && !(launch(g) && in_unit_loop(m, v))) continue;
    if (launch(g) || pt[i] == CF_PT_SERIAL) pt[i] = g;
  }
  m->ptype = pt;
  return true;
}
