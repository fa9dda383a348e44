/* scheduler/registry.h: the scheduler registry, which owns define and run's automatic
 * path (internal header, prefix sched_; the executor's side is executor/fusion_plan.c).
 *
 * Every way a segment of a fusion can run is a row of one table (registry.c), asked in
 * order of preference: the reduction, normalization, transpose and pointwise schedulers,
 * the Welford translation (a rewrite handed to the inner persistent scheduler), the
 * reshape view (no kernel), and last the fallback, a parallel schedule of any one op.
 * A row answers three questions about an unscheduled segment copy and a call:
 *   can_schedule  whether it takes the segment (the reason when not);
 *   plan          its parameters for this call: a value (SchedParams), printed for
 *                 CFUSER_DUMP=segments and compared, computed without touching the copy;
 *   apply         schedules a copy with those parameters. The copy may have symbolic
 *                 sizes where the plan's did not (define and run reuses a kernel across
 *                 sizes, executor/fusion_reuse.c); apply reports the parameters it used,
 *                 and a row that must re-derive them (a wrapped scheduler) says so when
 *                 they differ, so the caller falls back to the concrete copy.
 * Invariant (tests/scheduler/test_registry.c): a row that accepts a segment schedules it,
 * and lowering accepts the schedule. A row whose can_schedule is not yet exact is marked
 * trial, and the registry then accepts its segment only when lowering accepts a trial
 * schedule (define and run hands lowering down as SchedLowers). Define and run never retries a refused schedule
 * with a finer cut; a failure there is an internal error naming the row.
 *
 * Segmentation (segment.c) is nvFuser's greedy merge: start from one group per op (a
 * Welford reduction with its fields, which read its states), merge neighbouring groups
 * while some row accepts the merged group, best merge first (the one removing the most
 * bytes of intermediates), never making the groups' graph cyclic. The fallback accepts
 * every single op, so every fusion the evaluator computes gets a parallel schedule. */
#ifndef CFUSER_SCHED_REGISTRY_H
#define CFUSER_SCHED_REGISTRY_H

#include <stdio.h>

#include "scheduler/heuristic.h"

/* ---- plans ------------------------------------------------------------------------------ */

/* SCHED_PARAM_WORDS: numeric parameters a row keeps beside its text (the pointwise
 * scheduler's break point, vector width and rows per block). */
enum { SCHED_PARAM_WORDS = 8 };

/* A row's parameters for one call: numbers, and the text they print as (wrapped
 * schedulers have only the text their schedule printed). Two plans agree when the row,
 * the words and the text are equal. */
typedef struct SchedParams {
  int nwords;
  int64_t w[SCHED_PARAM_WORDS];
  char text[SCHED_PARAMS_MAX];
} SchedParams;

typedef enum SchedRowKind {
  SCHED_ROW_KERNEL, /* apply schedules the copy; the executor compiles it into one kernel */
  SCHED_ROW_VIEW    /* no kernel: a reshape's output is a view of its input's memory */
} SchedRowKind;

typedef struct SchedRow {
  const char *name;
  SchedRowKind kind;
  /* Not yet exact: the registry accepts this row's segment only when lowering (the
   * caller's SchedLowers) accepts a trial schedule of it. The rows wrapping schedulers
   * whose owners have not split them into plan and apply (reduction, the persistent ones
   * and the Welford translation, which hands its copy to one). */
  bool trial;
  /* Whether the row takes f (unscheduled, not modified) for this call; otherwise false
   * with the reason in why (NUL-terminated, at most SCHED_WHY_MAX bytes, starting with the
   * row's name). */
  bool (*can_schedule)(cf_fusion *f, const SchedCall *call, char *why);
  /* The parameters for f and this call (f not modified); false with why when refused. */
  bool (*plan)(cf_fusion *f, const SchedCall *call, SchedParams *p, char *why);
  /* Schedules *f (an unscheduled copy of what plan saw, possibly with symbolic sizes) with
   * p, and writes the parameters it used into *used. A row may replace *f by a rewritten
   * copy (the Welford translation), destroying the old one. A status with f's error on
   * failure. */
  cf_status (*apply)(cf_fusion **f, const SchedCall *call, const SchedParams *p, SchedParams *used);
} SchedRow;

/* Whether lowering accepts a scheduled fusion (false with the reason in why); define and
 * run hands it down (scheduler/ sits below lower/). NULL: rows are taken at their word. */
typedef bool (*SchedLowers)(cf_fusion *scheduled, char *why);

/* A segment's plan: the row and its parameters. */
typedef struct SchedPlan {
  const SchedRow *row;
  SchedParams params;
} SchedPlan;

/* "pointwise (vector=4 threads=128)". */
void sched_plan_print(const SchedPlan *p, char *out, size_t cap);
bool sched_plan_equal(const SchedPlan *a, const SchedPlan *b);
bool sched_params_equal(const SchedParams *a, const SchedParams *b);
/* Sets p's text (printf-style) and no words. */
void sched_params_text(SchedParams *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the table (registry.c) -------------------------------------------------------------- */

/* Every row, in the order they are asked; *n receives the count. */
const SchedRow *const *sched_rows(int *n);
/* The row of that name, or NULL. */
const SchedRow *sched_row_named(const char *name);
/* Plans f with the first row that accepts it (true, *out filled), else false with every
 * row's reason, separated by "; ", appended to refusals. */
bool sched_choose(cf_fusion *f, const SchedCall *call, SchedLowers lowers, SchedPlan *out, StrBuf *refusals);
/* Whether row r takes f for this call: its can_schedule, then for a trial row a plan, a
 * schedule of a scratch copy and lowers' answer on it ("name: its schedule is refused by
 * lowering: ..." in why when not). */
bool sched_row_accepts(const SchedRow *r, cf_fusion *f, const SchedCall *call, SchedLowers lowers, char *why);
/* Whether some row takes f (segmentation's question; no plan is made). */
bool sched_any_accepts(cf_fusion *f, const SchedCall *call, SchedLowers lowers);

/* The rows defined beside their schedulers. */
extern const SchedRow sched_matmul_row;            /* matmul_sched.c */
extern const SchedRow sched_pointwise_row;         /* pointwise.c */
extern const SchedRow sched_transpose_row;         /* transpose_sched.c */
extern const SchedRow sched_welford_row;           /* welford_translate.c */
extern const SchedRow sched_view_row;              /* view_sched.c */
extern const SchedRow sched_fallback_row;          /* fallback_sched.c */

/* The fallback's schedule on its own (fallback_sched.c): any fusion of one tensor op (a
 * Welford reduction with the fields read from it counts as one), parallel over its
 * output's kept elements; f must be unscheduled. */
bool sched_fallback_accepts(cf_fusion *f, char *why);
cf_status sched_fallback_schedule(cf_fusion *f);

/* Makes every reshape of f (define and run's concrete copy of the user's fusion) a view
 * the view row takes for this call (view_sched.c): a copy (set) is put before a reshape
 * whose input is a fusion output, or a call input (in: one per fusion input) that is not
 * contiguous, and after one whose output is a fusion output. f is modified in place. */
cf_status sched_prepare_views(cf_fusion *f, const DLTensor *const *in);

/* Moves each broadcast of a tensor computed from fusion inputs by elementwise ops alone
 * onto those inputs, the ops computed again on the broadcast shape (hoist_broadcasts.c):
 * define and run's concrete copy, before any row is asked, so that a parameter's cast
 * runs in its consumer's kernel. The broadcast's result keeps its name and readers; the
 * original chain stays where something else reads it. A chain of more ops than this
 * stays where it is (each is recomputed per element of the broadcast shape). */
enum { SCHED_HOIST_MAX_OPS = 32 };
cf_status sched_hoist_broadcasts(cf_fusion *f);

/* Splits the K of a product of few output tiles and a deep K into slices summed by a
 * second reduction (split_k.c): define and run's concrete copy for dev, before the
 * reshapes become views. f is modified in place; nothing happens where the rule does not
 * split. */
cf_status sched_split_k(cf_fusion *f, const SchedDevice *dev);

/* ---- segmentation (segment.c) -------------------------------------------------------------- */

/* A part of a fusion scheduled and run as one kernel (or a view): its tensor Exprs in
 * topological order, the tensors it reads that it does not compute (fusion inputs first,
 * in the fusion's order, then tensors of other segments), and the tensors it computes
 * that are fusion outputs or read by a later segment. */
typedef struct SchedSegment {
  int nexprs, nin, nout;
  Expr **exprs;
  Val **ins, **outs;
} SchedSegment;

/* The whole fusion as one segment (every fusion input, every output). */
SchedSegment sched_whole(Arena *a, cf_fusion *f);

/* The question segmentation asks of a candidate group: whether some row takes it. */
typedef bool (*SchedGroupAccepts)(void *ctx, const SchedSegment *group);

/* Segments f by the greedy merge (see the top of this file), asking accepts of each
 * candidate merge; a reshape stays alone (a view). Arrays in arena a; *out receives the
 * segments in an order that runs (producers first); returns their number, or -1 when out
 * of memory. */
int sched_segment(Arena *a, cf_fusion *f, SchedGroupAccepts accepts, void *ctx, SchedSegment **out);

#endif
