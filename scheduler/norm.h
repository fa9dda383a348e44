/* scheduler/norm.h: what the inner persistent scheduler's two files share (internal to
 * norm_sched.c, which checks a fusion and plans the parameters, and norm_apply.c, which
 * schedules a copy with them). */
#ifndef CFUSER_SCHED_NORM_H
#define CFUSER_SCHED_NORM_H

#include "scheduler/persistent.h"

/* What the checks found in a fusion, and the sizes of the call. */
typedef struct NormPlan {
  SchedReductions r; /* first (persistent.h): the reductions, all of rank N, reducing k axes */
  Val *row_input;    /* an input of the rows' shape */
  int row_index;     /* its position among the fusion's inputs */
  bool *row_out;     /* per fusion output: of the rows' shape (else a reduced result) */
  bool *vec_in;      /* per fusion input: of the rows' shape or a row parameter (cacheable) */
  bool *full_in;     /* per fusion input: of the rows' shape */
  SchedBuffers buf;  /* bytes per row element kept, as computed or projected to inputs */
  int64_t clones[2]; /* ops sched_recompute adds: keeping the caches, cloning them */
  bool recompute_math; /* keeping the caches, it would compute a math function again (exp) */
  int online;        /* softmax chains the online rewrite would merge */
  int64_t row;       /* R for this call */
  int64_t inner;     /* the innermost extent (what a vector must divide) */
  int64_t outer;     /* I: rows of this call (the outer extents' product); 0 when unknown */
  bool symbolic;     /* R is not a constant of the fusion */
  SchedInnerParams q;
} NormPlan;

/* The kept axes (rows): those the reductions do not reduce. */
static inline SchedAxes sched_norm_kept(const NormPlan *p) {
  return sched_axis_range(0, p->r.rank) & ~p->r.reduced;
}

/* Runs the checks on f for the call and plans the parameters into p->q: returns the
 * planning arena (the caller destroys it), or NULL with f's error set. */
Arena *sched_norm_begin(cf_fusion *f, const SchedCall *call, NormPlan *p);

#endif
