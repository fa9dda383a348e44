/* scheduler/reduction_heuristic.h: the reduction scheduler's plan (internal header,
 * prefix sched_). The reduction scheduler is three steps, each in its own file:
 *   reduction_plan.c       what the fusion is (sched_reduction_shape: which reduction,
 *                          its layout, its sizes in this call) or why it is refused;
 *   reduction_heuristic.c  the parameters for that shape on a device
 *                          (sched_reduction_heuristic_for: the rule, in its header);
 *   reduction_sched.c      applying them (sched_reduction_apply) and the SchedHeuristic
 *                          entry points built on plan + apply.
 * Key decision: a plan (RedParams) is a value: numbers only, no pointer into the fusion,
 * so it can be printed, compared and kept; apply finds the reduction again in the fusion
 * it is given (the same unscheduled fusion, or a copy of it). */
#ifndef CFUSER_SCHED_REDUCTION_HEURISTIC_H
#define CFUSER_SCHED_REDUCTION_HEURISTIC_H

#include "scheduler/heuristic.h"

/* Where the reduced axes are. INNER: the innermost axis (of extent > 1) is reduced: rows
 * reduced along their contiguous direction, kept axes (if any) moved first; a full
 * reduction is INNER. OUTER: the innermost axis is kept: columns ([r, i]) and middle axes
 * ([a, r, b] over r, a batched column form), the reduced axes moved first. */
typedef enum RedLayout { RED_INNER, RED_OUTER } RedLayout;

/* What the heuristic reads of a fusion and a call (sched_reduction_shape). */
typedef struct RedShape {
  RedLayout layout;
  int rank, nkept;            /* logical axes of the reduction, and how many it keeps */
  int8_t order[CF_MAX_RANK];  /* new position of each logical axis (INNER: kept first;
                               * OUTER: reduced first), each group in logical order */
  bool reordered;             /* order is not the identity */
  int64_t iter, red;          /* elements kept and reduced per output (-1: unknown) */
  int64_t inner;              /* the innermost logical extent (a vector divides it; -1: unknown) */
  bool can_vectorize;         /* inputs contiguous, the innermost extent a constant of the
                               * fusion and the vector axis contiguous after the reorder */
  int elem_bytes;             /* the widest input element */
  int ninputs;                /* tensor inputs read */
} RedShape;

/* The parameters (the plan): RedShape's layout and order, then the schedule. For INNER,
 * x reduces the row and y takes rows; for OUTER, x takes columns and y reduces rows. */
typedef struct RedParams {
  RedLayout layout;
  int rank, nkept;
  int8_t order[CF_MAX_RANK];
  bool reordered;
  int vec;        /* vector width of the loads: INNER along the row, OUTER along the columns */
  int unroll;     /* INNER: vectors per thread per step; OUTER: rows per thread per step */
  int bdimx, bdimy;
  int64_t blocks; /* blocks over the kept axes */
  int64_t grid;   /* blocks splitting the reduction: a grid reduction when > 1 */
} RedParams;

/* The reduction of f and its shape for this call (call may be NULL or give no inputs:
 * symbolic sizes are then unknown); false with the reason in why (at most SCHED_WHY_MAX
 * bytes, "reduction: ..."). f is not modified. */
bool sched_reduction_shape(cf_fusion *f, const SchedCall *call, RedShape *s, char *why);

/* The parameters for a shape on a device (the rule: reduction_heuristic.c's header). */
RedParams sched_reduction_heuristic_for(const RedShape *s, const SchedDevice *dev);

/* shape + heuristic: the plan of f for this call; false with the reason in why. */
bool sched_reduction_plan(cf_fusion *f, const SchedCall *call, RedParams *p, char *why);

/* Schedules f (unscheduled, the fusion or a copy of the one p was planned for). */
cf_status sched_reduction_apply(cf_fusion *f, const RedParams *p);

/* "inner vector=4 unroll=2 block=128x1 grid=100x5 kept-axes-first" (at most
 * SCHED_PARAMS_MAX bytes): the layout, vector, unroll, threads (x by y), blocks (over the
 * kept axes by over the reduction), and whether the axes were reordered. */
void sched_reduction_params_print(const RedParams *p, char *out);
bool sched_reduction_params_equal(const RedParams *a, const RedParams *b);

#endif
