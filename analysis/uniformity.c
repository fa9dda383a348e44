/* analysis/uniformity.c: per-thread uniformity, which launch types (threadIdx.x..z,
 * blockIdx.x..z, one bit each) the values of each tensor depend on, and which the place
 * of its last write depends on. Lowering's predicate pass records every op in program
 * order with the facts only its indices know (the launch types the op's read indices and
 * its write place use); the rule that turns them into a tensor's dependences is here, and
 * the predicate and sync passes read the results.
 *
 * The rule: an op's value depends on the types its read indices use and on the
 * dependences of the tensors it reads, less the types it reduces across (a block or grid
 * reduction over p combines every index of p: its result is the same for all of them). A
 * reader of the output gets the value's dependences less the types the write place spells
 * out (an element written at a place that depends on p is picked by the reader's own
 * index of p; a private local copy per thread carries its thread's value, so it keeps p).
 *
 * Key decision: dependences are accumulated per tensor over its writes (a reduction's
 * initialization and update), as nvFuser's thread predicate map does per tensor. */
#include <string.h>

#include "analysis/analysis.h"

bool an_uniformity_init(Uniformity *u, Arena *a, int nvals) {
  u->n = nvals;
  u->varies = ARENA_ARRAY(a, unsigned, nvals + 1);
  u->spans = ARENA_ARRAY(a, unsigned, nvals + 1);
  return u->varies && u->spans;
}

unsigned an_value_varies(const LoopModel *m, const Uniformity *u, const Expr *e, unsigned reads) {
  unsigned v = reads;
  for (int i = 0; i < e->nin; i++)
    if (e->in[i]->kind == VAL_TV && e->in[i]->id < u->n) v |= u->varies[e->in[i]->id];
  Val *out = e->out[0];
  for (int j = 0; j < TV(out)->nloop; j++) {
    cf_parallel_type p = an_ptype(m, TV(out)->loop[j]);
    if (ID(TV(out)->loop[j])->iter_type == CF_ITER_REDUCTION && (ir_ptype_is_thread(p) || ir_ptype_is_block(p)))
      v &= ~(1u << p);
  }
  return v;
}

void an_uniformity_record(Uniformity *u, const Expr *e, unsigned value, unsigned spans) {
  int k = e->out[0]->id;
  if (k >= u->n) return;
  u->varies[k] |= value & ~spans;
  u->spans[k] = spans;
}

bool an_write_spans(const Uniformity *u, const Val *tv, cf_parallel_type p) {
  return tv->id < u->n && (u->spans[tv->id] & (1u << p));
}
