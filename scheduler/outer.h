/* scheduler/outer.h: what the outer persistent scheduler's two files share (internal to
 * outer_persistent_sched.c, which checks a fusion and plans the parameters, and
 * outer_apply.c, which schedules a copy with them). */
#ifndef CFUSER_SCHED_OUTER_H
#define CFUSER_SCHED_OUTER_H

#include "scheduler/persistent.h"

/* Rule 3 (wide rows, outer_persistent_sched.c): the blocks an SM holds, half of each
 * thread's rows in shared memory (the kernel's __launch_bounds__ minimum, cf_fusion.blocks_per_sm). */
enum { OUTER_WIDE_BLOCKS_PER_SM = 2 };

/* What the checks found in a fusion, and the sizes of the call. */
typedef struct OuterPlan {
  SchedReductions r; /* first (persistent.h): the reductions, all of rank N, reducing k axes */
  Val *full_input;   /* an input of the full shape */
  int full_index;    /* its position among the fusion's inputs */
  bool *full_out;    /* per fusion output: of the full shape (else a reduced result) */
  bool *cached;      /* per fusion input: cached after (full shape or a column parameter) */
  bool *full_in;     /* per fusion input: of the full shape */
  SchedBuffers buf;  /* bytes per element kept, as computed or projected to the inputs */
  int64_t clones;    /* ops sched_recompute adds cloning the caches (multipass) */
  int64_t rows, cols; /* R and I for this call */
  int64_t inner;      /* the innermost extent (what a vector must divide) */
  bool symbolic_rows; /* R is not a constant of the fusion */
  bool symbolic_inner;
  SchedOuterParams q;
} OuterPlan;

/* Runs the checks on f for the call and plans the parameters into p->q: returns the
 * planning arena (the caller destroys it), or NULL with f's error set. */
Arena *sched_outer_begin(cf_fusion *f, const SchedCall *call, OuterPlan *p);

#endif
