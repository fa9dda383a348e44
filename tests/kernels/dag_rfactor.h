/* tests/kernels/dag_rfactor.h: mode 5 of the random-DAG generator (dag_gen.h), hand
 * schedules through every scheduling primitive: mode 3's fusions (sums, maxes and Welford
 * reductions, broadcasts back) scheduled as mode 1 schedules them (a reference's transforms
 * propagated, reduction axes parallelized too: block and grid reductions), plus
 *   - cache_after of inputs and intermediates and cache_before of outputs, both before the
 *     reference is transformed and after (on scheduled tensors);
 *   - rfactors of the reductions: random splits of their axes (iteration axes included)
 *     before, the rfactored subset at random, sometimes a second rfactor of what is left;
 *   - random parallelization of the partial tensors, and more inlining calls, so that
 *     compute_at and inlining go through and into the partials and caches.
 * Each new tensor is recorded as a value of the case (its ancestors updated), so the
 * inlining calls pick it like any other. Header-only; test_random_dags.c includes it. */
#ifndef CFUSER_DAG_RFACTOR_H
#define CFUSER_DAG_RFACTOR_H

#include "dag_gen.h"

enum { DG_RFACTOR = 5 };

/* Records tv, made next to the value at index `at`: as its new producer (before: tv takes
 * over at's ancestors) or its new consumer (after: between at and at's consumers). Every
 * value computed from at is then computed from tv too. Returns tv's index or -1. */
static inline int dr_insert(DgCase *c, cf_tv *tv, int at, bool before) {
  if (!tv || c->nv == DG_MAX_VALS) return -1;
  uint64_t at_bit = 1ULL << at, bit = 1ULL << c->nv;
  for (int i = 0; i < c->nv; i++)
    if (i != at && (c->v[i].anc & at_bit)) c->v[i].anc |= bit;
  DgVal *v = &c->v[c->nv];
  *v = (DgVal){tv, bit, c->v[at].mask, false, false, true, c->v[at].states, false};
  v->anc |= before ? c->v[at].anc & ~at_bit : c->v[at].anc;
  if (before) c->v[at].anc |= bit;
  return c->nv++;
}

/* cache_after of some inputs and intermediates, cache_before of some outputs (values
 * below nv0, the math's own). */
static inline void dr_caches(DgCase *c, int nv0) {
  for (int i = 0; i < nv0 && cf_fusion_status(c->f) == CF_OK; i++) {
    DgVal *v = &c->v[i];
    if (v->output && dg_rnd(&c->r, 6) == 0) {
      dr_insert(c, cf_cache_before(c->f, v->tv), i, true);
    } else if (v->used && !v->output && dg_rnd(&c->r, v->input ? 5 : 8) == 0) {
      int k = dr_insert(c, cf_cache_after(c->f, v->tv), i, false);
      if (k >= 0 && !v->input && dg_rnd(&c->r, 3) == 0) cf_set_memory_type(c->f, c->v[k].tv, CF_MEM_SHARED);
    }
  }
}

/* The loop axes of tv that are reduction axes; returns how many (into ax). */
static inline int dr_reduction_axes(cf_tv *tv, int *ax) {
  int n = 0;
  for (int i = 0; i < cf_tv_naxes(tv) && i < DG_MAX_AXES; i++)
    if (cf_id_iter_type(cf_tv_axis(tv, i)) == CF_ITER_REDUCTION) ax[n++] = i;
  return n;
}

/* Splits some axes of the reduction at index i (iteration axes too, before the rfactor)
 * and rfactors a random proper subset of its reduction axes; sometimes once more. */
static inline void dr_rfactor(DgCase *c, int i) {
  cf_tv *t = c->v[i].tv;
  int ax[DG_MAX_AXES], nred = dr_reduction_axes(t, ax);
  if (!nred) return; /* a sum over a broadcast axis is a squeeze */
  int splits = (int)dg_rnd(&c->r, 3);
  for (int k = 0; k < splits && cf_tv_naxes(t) < DG_MAX_AXES - 2; k++)
    cf_split(c->f, t, (int)dg_rnd(&c->r, (uint32_t)cf_tv_naxes(t)), 1 + (int64_t)dg_rnd(&c->r, 8));
  for (int round = 0; round < 2 && cf_fusion_status(c->f) == CF_OK; round++) {
    nred = dr_reduction_axes(t, ax);
    if (nred < 2 && cf_tv_naxes(t) < DG_MAX_AXES - 1) {
      cf_split(c->f, t, ax[dg_rnd(&c->r, (uint32_t)nred)], 2 + (int64_t)dg_rnd(&c->r, 7));
      nred = dr_reduction_axes(t, ax);
    }
    int pick[DG_MAX_AXES], np = 0, skip = (int)dg_rnd(&c->r, (uint32_t)nred);
    for (int k = 0; k < nred; k++)
      if (k != skip && (np == 0 || dg_rnd(&c->r, 2))) pick[np++] = ax[k];
    if (!np) return;
    cf_tv *p = cf_rfactor(c->f, t, np, pick);
    if (!p || dr_insert(c, p, i, true) < 0 || dg_rnd(&c->r, 4)) return;
  }
}

/* Mode 5's schedule (see the top of this file). */
static inline void dr_schedule(DgCase *c) {
  int nv0 = c->nv;
  unsigned track[DG_MAX_AXES];
  dr_caches(c, nv0);
  int ref = dg_schedule_transforms(c, track);
  for (int i = 0; i < nv0 && cf_fusion_status(c->f) == CF_OK; i++)
    if (c->v[i].red && dg_rnd(&c->r, 4)) dr_rfactor(c, i);
  dr_caches(c, nv0);
  for (int i = nv0; i < c->nv; i++)
    if (dg_rnd(&c->r, 6) == 0) dg_parallelize(c, c->v[i].tv, NULL);
  dg_schedule_finish(c, ref, track);
  int calls = 1 + (int)dg_rnd(&c->r, 3);
  for (int i = 0; i < calls; i++) dg_inline_call(c, ref);
}

/* dg_build_extra, and mode 5: mode 3's math (reductions parallelized, Welford) with
 * dr_schedule; extra: issue 28's options (DG_X_*). */
static inline void dg_build_any(DgCase *c, cf_fusion *f, uint64_t seed, int mode, unsigned extra) {
  if (mode != DG_RFACTOR) {
    dg_build_extra(c, f, seed, mode, extra);
    return;
  }
  dg_build_extra(c, f, seed, DG_UNSCHEDULED, extra);
  if (cf_fusion_status(f) == CF_OK) dr_schedule(c);
}

#endif
