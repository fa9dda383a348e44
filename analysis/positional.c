/* analysis/positional.c: the positional reading of promoted loops, part of the loop model
 * that indexing asks (lower/index.c) so that the writer and every reader of a tensor agree.
 *
 * A loop axis whose loop is promoted to another tensor's IterDomain (the loop iterates
 * that tensor's axis, of a larger or different domain) is indexed through the promoting
 * tensor's history. An axis of a tensor that is not itself promoted may instead *stand
 * for* a promoting tensor's axis position by position: the two are one axis up to
 * broadcasts (permissive map) but not exactly, have equal extents, and every consumer
 * reads the tensor in a loop over the promoting tensor's axis (a cache of a broadcast's
 * input, vectorized like the concrete tensor it feeds), directly or through consumers of
 * its own that stand for it too; a tensor nothing reads stands for nothing. Such an axis
 * is written and read at the loop's index: its logical index, computed through the
 * promoting tensor's history, may repeat within the loop.
 *
 * Key decision: every answer is a pure function of the loop model (exact and permissive
 * maps, promotion) and of the IR's extents (compared as scalar expressions), computed the
 * same way for the writer and each reader. */
#include "analysis/analysis.h"

bool an_same_extent(const Val *a, const Val *b) {
  int64_t x, y;
  if (a == b) return true;
  if (ir_scalar_const_value(a, &x) || ir_scalar_const_value(b, &y))
    return ir_scalar_const_value(a, &x) && ir_scalar_const_value(b, &y) && x == y;
  const Expr *d = a->def, *e = b->def;
  if (!d || !e || d->op != e->op || d->nin != e->nin) return false;
  for (int i = 0; i < d->nin; i++)
    if (!an_same_extent(d->in[i], e->in[i])) return false;
  return true;
}

Val *an_promoting_tensor(const LoopModel *m, Val *tv, int j) {
  Val *id = TV(tv)->loop[j], *p = an_promoted(m, id);
  return p == id || an_idmap_same(m->exact, p, id) ? NULL : ID(p)->tv;
}

bool an_stands_for(const LoopModel *m, Val *tv, Val *ref, int j) {
  if (j >= TV(ref)->nloop || an_promoting_tensor(m, tv, j)) return false;
  Val *id = TV(tv)->loop[j], *rid = TV(ref)->loop[j];
  if (an_idmap_same(m->exact, rid, id) || !an_idmap_same(m->permissive, rid, id) ||
      !an_same_extent(ID(rid)->extent, ID(id)->extent))
    return false;
  bool read = false;
  for (int u = 0; u < tv->uses.len; u++) {
    const Expr *e = tv->uses.items[u];
    if (ir_op_kind(e->op) == OPK_TRANSFORM || e->out[0]->kind != VAL_TV) continue;
    Val *cv = e->out[0];
    if (j >= TV(cv)->nloop) return false;
    /* tv computed in the consumer's loop j, which itself stands for ref's axis: the loop
     * runs ref's positions for both (an op inlined into a positional cache) */
    if (!an_idmap_same(m->exact, an_promoted(m, TV(cv)->loop[j]), rid) &&
        !(j < TV(tv)->ca_pos && an_stands_for(m, cv, ref, j)))
      return false;
    read = true;
  }
  /* A tensor nothing reads (an output) runs its own axis: standing for ref needs a loop over
   * ref's axis at the end of the chain of consumers. Vacuously true, it made every tensor
   * inlined towards an output stand for a tensor the output merely shares a loop with (DAG
   * seed 41400113 of define and run: at the pointwise row's break point 1, u [1, 2, 64]
   * and the tensors computed from it stood for broadcast(c) [9, 2, 1], whose inner tile
   * merges [2, 1], while a broadcast [1, 1, 64] inlined into u ran the loop's own [2, 64]:
   * lowering refused the shared loop as two domains, an internal error). */
  return read;
}

Val *an_positional_ref(const LoopModel *m, Val *tv, int j) {
  for (int k = 0; k < TV(tv)->nloop; k++) {
    Val *ref = an_promoting_tensor(m, tv, k);
    if (ref && an_stands_for(m, tv, ref, j)) return ref;
  }
  return NULL;
}

Val *an_iterated_domain(const LoopModel *m, Val *tv, int j) {
  if (an_promoting_tensor(m, tv, j)) return an_promoted(m, TV(tv)->loop[j]);
  Val *ref = an_positional_ref(m, tv, j);
  return ref ? TV(ref)->loop[j] : TV(tv)->loop[j];
}
