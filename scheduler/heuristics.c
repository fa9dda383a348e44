/* scheduler/heuristics.c: the table of automatic schedulers the define-and-run executor
 * asks, in order, for each segment of a fusion (see heuristic.h), and helpers about the
 * call that several of them share.
 * Key decision: the order is the preference: a scheduler specialized for a pattern comes
 * before a general one that would also take it (transpose before pointwise); a new
 * scheduler is one line here. Alignment is not theirs to check: the executor
 * devectorizes a schedule made for a call with a misaligned tensor (sched_devectorize). */
#include "ir/ir.h"
#include "scheduler/heuristic.h"

static const SchedHeuristic *const table[] = {
    &sched_reduction_heuristic,
    &sched_inner_persistent_heuristic, /* normalizations: several reductions broadcast back */
    &sched_outer_persistent_heuristic, /* the same over outer axes (batch norm); after the two
                                        * above, which refuse outer normalizations */
    &sched_transpose_heuristic,        /* before pointwise, which would write uncoalesced */
    &sched_pointwise_heuristic,
};

const SchedHeuristic *const *sched_heuristics(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

const SchedDevice sched_device_h100 = {
    .sm_count = 132,
    .max_threads_per_block = 1024,
    .max_threads_per_sm = 2048,
    .regs_per_sm = 65536,
    .max_regs_per_thread = 255,
    .smem_per_block = 227 * 1024,
    .smem_per_sm = 228 * 1024,
    .l2_bytes = 50 * 1024 * 1024,
    .max_cluster = 8,
};

const SchedDevice *sched_device_default(void) { return &sched_device_h100; }

bool sched_aligned16(int n, const DLTensor *const *t) {
  for (int i = 0; i < n; i++)
    if (t[i] && ((uintptr_t)t[i]->data + t[i]->byte_offset) % 16) return false;
  return true;
}

bool sched_dl_contiguous(const DLTensor *t) {
  if (!t->strides) return true;
  int64_t want = 1;
  for (int x = t->ndim - 1; x >= 0; x--) {
    if (t->shape[x] != 1 && t->strides[x] != want) return false;
    want *= t->shape[x];
  }
  return true;
}

void sched_devectorize(cf_fusion *f) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind == VAL_ID && ID(v)->ptype == CF_PT_VECTORIZE) ID(v)->ptype = CF_PT_SERIAL;
  }
}
