/* scheduler/persistent.h: what the two persistent normalization schedulers share
 * (scheduler/persistent.c; internal header, prefix sched_). The inner one
 * (norm_sched.c) keeps a row per block, the outer one (outer_persistent_sched.c) a
 * column group per block; both accept elementwise ops, broadcasts and reductions of one
 * N-D shape, plan in a scratch arena, read the vector width from the call, and cache the
 * tensors of the full shape (and the parameters) that persist in registers. */
#ifndef CFUSER_SCHED_PERSISTENT_H
#define CFUSER_SCHED_PERSISTENT_H

#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum { SCHED_VECTOR_BYTES = 16 }; /* the widest vector access */
/* Elements of a row (column) one thread of a full block of 1024 threads keeps in
 * registers: both persistent schedulers refuse rows (columns) beyond it. */
enum { SCHED_FULL_BLOCK_PER_THREAD = 16 };

/* The reductions a persistent scheduler found; the first member of its plan struct. */
typedef struct SchedReductions {
  Val **reds; /* the reductions' outputs, in topological order */
  int nreds;
  int rank; /* N: logical rank of the reduced tensors */
  int nred; /* k: reduced axes of each (innermost or outermost ones) */
} SchedReductions;

/* The checks of one persistent scheduler, run in order by its accepts() and schedule()
 * on a plan: the scheduler's own struct, zeroed by the caller, whose first member is a
 * SchedReductions. First every op must be elementwise, a broadcast or a reduction, every
 * reduction reduce the axes reduced_axes counts and all the same ones of one shape (the
 * first reduction's, axis by axis in its exact classes); then broadcast, then shapes. Each
 * returns false with the reason in why (prefixed with who). */
typedef struct SchedPersistent {
  const char *who;  /* the scheduler's name: "inner_persistent", "outer_persistent" */
  const char *unit; /* what a reduction reduces: "rows", "columns" */
  /* The number of reduced axes of a reduction's output out; -1 with the reason in why. */
  int (*reduced_axes)(Val *out, char *why);
  /* Whether broadcast e (of f's, in topological order, once the reductions are found)
   * puts back axes this scheduler takes. */
  bool (*broadcast)(const Expr *e, const void *plan, char *why);
  /* The tensors' shapes (m: f's exact IdMap), the call's sizes, the parameters. */
  bool (*shapes)(cf_fusion *f, Arena *a, const IdMap *m, const SchedCall *call, void *plan, char *why);
} SchedPersistent;

/* accepts(): plans in a scratch arena; f is not modified. */
bool sched_persistent_accepts(const SchedPersistent *s, cf_fusion *f, const SchedCall *call, void *plan, char *why);
/* The start of schedule(): plans in an arena returned to the caller (who destroys it), or
 * NULL with f's error set (out of memory, or unsupported with the reason). */
Arena *sched_persistent_begin(const SchedPersistent *s, cf_fusion *f, const SchedCall *call, void *plan);

/* An op computed element by element: set, unary, binary, ternary, cast. */
bool sched_elementwise(const Expr *e);
/* Whether tv has a broadcast axis in its logical domain. */
bool sched_has_broadcast(Val *tv);
/* tv has ref's logical shape: the same rank, axis by axis in ref's exact classes. */
bool sched_same_shape(const IdMap *m, Val *ref, Val *tv);
/* tv's non-reduction axes are, in order, in the classes of ref's logical axes first to
 * first + n - 1 (a reduced result, or a parameter of that part of the shape). */
bool sched_kept_shape(const IdMap *m, Val *ref, int first, int n, Val *tv);
/* The position of the first fusion input of ref's shape, -1 if none. */
int sched_input_like(cf_fusion *f, const IdMap *m, Val *ref);
/* Per fusion input: read once and kept (cached after): used, without broadcast axes, of
 * ref's shape or of the shape of ref's logical axes first to first + n - 1. NULL when out
 * of memory. */
bool *sched_cached_inputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, int first, int n);
/* Per fusion output: of ref's shape (true) or a reduced result with ref's logical axes
 * first to first + n - 1 kept (false), without or (keepdim) with broadcast axes in place
 * of the reduced ones. NULL when out of memory (*bad -1) or when output *bad is neither. */
bool *sched_full_outputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, int first, int n, int *bad);

/* The vector width in elements: SCHED_VECTOR_BYTES over the widest element of the cached
 * inputs and of the outputs, halved until it divides inner and the call's pointers of
 * the cached inputs are aligned; 1 when one of them is strided. */
int64_t sched_vector_width(cf_fusion *f, const SchedCall *call, const bool *cached, int64_t inner);
/* Caches the cached inputs after and, with cache_outputs (vector stores), the outputs of
 * the full shape before; caches (room for every input and output) receives the tensors
 * to vectorize, *n their count. */
void sched_persistent_caches(cf_fusion *f, const bool *cached, const bool *full_out, bool cache_outputs,
                             Val **caches, int *n);

static inline int64_t sched_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
