/* scheduler/persistent.h: what the two persistent normalization schedulers share
 * (scheduler/persistent.c; internal header, prefix sched_). The inner one
 * (norm_sched.c) keeps a row per block, the outer one (outer_persistent_sched.c) a
 * column group per block; both accept elementwise ops, broadcasts and reductions of one
 * N-D shape, plan in a scratch arena, read the vector width from the call, and cache the
 * tensors of the full shape (and the parameters) that persist in registers. */
#ifndef CFUSER_SCHED_PERSISTENT_H
#define CFUSER_SCHED_PERSISTENT_H

#include "ir/checked.h"
#include "scheduler/heuristic.h"
#include "scheduler/sched.h"

enum { SCHED_VECTOR_BYTES = 16 }; /* the widest vector access */
/* Elements of a row (column) one thread of a full block of 1024 threads keeps in
 * registers: both persistent schedulers refuse rows (columns) beyond it. */
enum { SCHED_FULL_BLOCK_PER_THREAD = 16 };

/* A set of logical axes of a tensor: bit x is axis x (CF_MAX_RANK of them fit). */
typedef uint32_t SchedAxes;
_Static_assert(CF_MAX_RANK <= 31, "SchedAxes holds a bit per axis");
/* Axes first to first + n - 1. */
static inline SchedAxes sched_axis_range(int first, int n) {
  return n <= 0 ? 0 : (((SchedAxes)1 << n) - 1) << first;
}
static inline bool sched_axis_in(SchedAxes s, int x) { return (s >> x) & 1u; }

/* The reductions a persistent scheduler found; the first member of its plan struct. */
typedef struct SchedReductions {
  Val **reds; /* the reductions' outputs, in topological order */
  int nreds;
  int rank; /* N: logical rank of the reduced tensors */
  int nred; /* k: reduced axes of each (innermost or outermost ones; inner: any, the last one among them) */
  SchedAxes reduced; /* which axes those are (the same for every reduction) */
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
/* tv's non-reduction axes are, in order, in the classes of ref's logical axes `axes` (a
 * reduced result, or a parameter of that part of the shape). */
bool sched_kept_shape(const IdMap *m, Val *ref, SchedAxes axes, Val *tv);
/* The position of the first fusion input of ref's shape, -1 if none. */
int sched_input_like(cf_fusion *f, const IdMap *m, Val *ref);
/* Per fusion input: read once and kept (cached after): used, without broadcast axes, of
 * ref's shape or of the shape of ref's logical axes `axes`. NULL when out of memory. */
bool *sched_cached_inputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes axes);
/* Per fusion output: of ref's shape (true) or a reduced result with ref's logical axes
 * `kept` kept (false; its reduced axes dropped or kept as broadcast axes, keepdim). NULL
 * when out of memory (*bad -1) or when output *bad is neither. */
bool *sched_full_outputs(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes kept, int *bad);

/* The vector width in elements: SCHED_VECTOR_BYTES over the widest element of the cached
 * inputs and of the outputs, halved until it divides inner and the call's pointers of
 * the cached inputs are aligned; 1 when one of them is strided. */
int64_t sched_vector_width(cf_fusion *f, const SchedCall *call, const bool *cached, int64_t inner);
/* Caches the cached inputs after and, with cache_outputs (vector stores), the outputs of
 * the full shape before; caches (room for every input and output) receives the tensors
 * to vectorize, *n their count. */
void sched_persistent_caches(cf_fusion *f, const bool *cached, const bool *full_out, bool cache_outputs,
                             Val **caches, int *n);

/* ---- the inner persistent scheduler's parameters (norm_sched.c, norm_apply.c) ---------- */

/* Where the rows live while their reductions complete. */
typedef enum SchedNormMode {
  SCHED_NORM_REGISTERS, /* per thread, p*v elements of each kept tensor */
  SCHED_NORM_SHARED,    /* the inputs' rows in shared memory, read through register copies */
  SCHED_NORM_MULTIPASS  /* nowhere: each pass over the row reads the inputs again */
} SchedNormMode;

/* What sched_inner_persistent_plan chose for a call; sched_inner_persistent_apply
 * schedules a copy of the fusion with it. */
typedef struct SchedInnerParams {
  SchedNormMode mode;
  bool project;   /* registers: the kept tensors are the inputs' (the rest recomputed) */
  bool symbolic;  /* the row's length is symbolic: split outer by persist (registers) */
  bool online;    /* multipass: softmax's max and sum of exponentials in one pass (online_softmax.c) */
  int64_t vec;    /* vector width in elements */
  int64_t persist; /* vectors of a row per thread (multipass: chunks of the row) */
  int64_t threads; /* threads of a row (threadIdx.x) */
  int64_t rows_y;  /* rows per block on threadIdx.y */
  int64_t grid;        /* blocks of a row (blockIdx.y, grid all-reduces); 1: a block per row */
  int64_t unroll;      /* multipass rows of scalars: chunks loaded together per pass (1: none) */
} SchedInnerParams;

/* Checks f and plans its parameters for the call (norm_sched.c's rules); false with the
 * reason in why. f is not modified. */
bool sched_inner_persistent_plan(cf_fusion *f, const SchedCall *call, SchedInnerParams *q, char *why);
/* Schedules f (accepted by the plan for this call) with q, printing the parameters. */
cf_status sched_inner_persistent_apply(cf_fusion *f, const SchedCall *call, const SchedInnerParams *q, char *params);
/* Whether the plan keeps the rows in one block each (registers or shared memory, not
 * multipass, not split over the grid): define and run's Welford translation pays off only
 * then. */
bool sched_inner_persistent_resident(cf_fusion *f, const SchedCall *call, char *why);

/* ---- the outer persistent scheduler's parameters (outer_persistent_sched.c, outer_apply.c) */

/* How a column's rows are spread and where they live while the statistics complete. */
typedef enum SchedOuterMode {
  SCHED_OUTER_BLOCK,           /* a block per column group, the rows in its registers */
  SCHED_OUTER_BLOCK_MULTIPASS, /* a block per column group, each pass reading the rows again */
  SCHED_OUTER_GRID,            /* blocks of rows (blockIdx.y) in registers, grid all-reduces */
  SCHED_OUTER_GRID_MULTIPASS   /* blocks of rows, each pass reading them again, grid all-reduces */
} SchedOuterMode;

/* What sched_outer_persistent_plan chose for a call. */
typedef struct SchedOuterParams {
  SchedOuterMode mode;
  bool project;       /* registers: the kept tensors are the inputs' (the rest recomputed) */
  bool symbolic_rows; /* rows split outer by persist (a symbolic count, block registers) */
  int64_t vec, tx, ty, persist;
  int64_t grid_y;     /* blocks of rows (grid modes), 1 otherwise */
  int64_t spill;      /* block registers, wide rows: of each thread's persist rows, those
                       * kept in shared memory (cf_spill_to_shared), 0: none */
} SchedOuterParams;

/* The blocks of one row (or column) group of a grid all-reduce at most: every block folds
 * all of its group's partials after the grid sync, so the folds grow as the square of the
 * group's blocks. Measured on the H200 (bench/sweep, batch norm channels-last, GB/s, with
 * every thread of the GPU resident allowed): 1056 blocks a group made bfloat16 over 64
 * channels 45% slower than 256; 256 instead of 512 made [1048576, 3] 0.63x and
 * [100352, 100] 0.8x; [1048576, 256] float32 gained 1252 -> 1894 from the lifted
 * residency (264 blocks a group). */
enum { SCHED_GRID_MAX_GROUP_BLOCKS = 512 };

/* The most blocks of `threads` threads a cooperative launch (grid modes) may have beside
 * k x SMs in each group: the device's max_coop_threads / threads (no limit where it has
 * none), and SCHED_GRID_MAX_GROUP_BLOCKS. */
int64_t sched_coop_block_cap(const SchedDevice *d, int64_t threads);

bool sched_outer_persistent_plan(cf_fusion *f, const SchedCall *call, SchedOuterParams *q, char *why);
cf_status sched_outer_persistent_apply(cf_fusion *f, const SchedCall *call, const SchedOuterParams *q, char *params);

/* ---- register budgets (persistent.c) ------------------------------------------------------ */

/* Registers per thread besides the buffers (indices, pointers, a reduction's values): 1024
 * threads then keep 16 floats each (the limit measured spill-free on an H200). */
enum { SCHED_REG_RESERVE = 48 };
/* Elements of `bytes` bytes one thread of a block of `threads` keeps in registers:
 * (min(max_regs_per_thread, regs_per_sm / threads) - SCHED_REG_RESERVE) x 4 / bytes. */
int64_t sched_reg_elems(const SchedDevice *d, int64_t threads, int64_t bytes);
/* Blocks of `threads` threads using `regs_each` registers and `smem` bytes of shared
 * memory each that one SM holds (at least 1). */
int64_t sched_blocks_per_sm(const SchedDevice *d, int64_t threads, int64_t regs_each, int64_t smem);

/* ---- what persists (buffers.c) ----------------------------------------------------------- */

/* A named limit of the analysis: reductions are bits of a 64-bit set. */
enum { SCHED_MAX_PERSISTENT_REDUCTIONS = 64 };

/* Bytes per element of a row (column) that a persistent schedule keeps (buffers.c). */
typedef struct SchedBuffers {
  int64_t live;      /* the tensors as computed: most bytes live across one reduction */
  int64_t projected; /* every computed tensor recomputed: the inputs read across a reduction */
  int64_t params;    /* cached row parameters (a weight), kept by every thread too */
} SchedBuffers;

/* Per Val id: a tensor with an iteration axis in the classes of ref's logical axes `axes`
 * (the reduced ones: it holds a row). NULL when out of memory. */
bool *sched_row_tensors(cf_fusion *f, Arena *a, const IdMap *m, Val *ref, SchedAxes axes);
/* The buffers of f: reductions r, row tensors row (sched_row_tensors), per fusion input
 * whether it has the full shape and whether it is cached. False when out of memory. */
bool sched_buffers(cf_fusion *f, Arena *a, const SchedReductions *r, const bool *row, const bool *full_input,
                   const bool *cached, SchedBuffers *b);
/* Per Val id: a row tensor live across some reduction (read before and after it). */
bool *sched_live_tensors(cf_fusion *f, Arena *a, const SchedReductions *r, const bool *row, const bool *full_input);

/* ---- recomputation (recompute.c) --------------------------------------------------------- */

/* The most ops sched_recompute may add (a DAG of shared subexpressions can need
 * exponentially many clones). */
enum { SCHED_RECOMPUTE_MAX_OPS = 1024 };

typedef enum SchedRecompute {
  SCHED_KEEP_CACHES,  /* computed row tensors recomputed; the inputs' caches persist */
  SCHED_CLONE_CACHES, /* the caches too: every pass reads the inputs again */
} SchedRecompute;

/* How many ops sched_recompute would add (past SCHED_RECOMPUTE_MAX_OPS: some count above
 * it); -1 when out of memory. row: by Val id (tensors made later count as rows). *math
 * (may be NULL): whether an op it computes again is a math function (ir_op_is_math_function). */
int64_t sched_recompute_count(cf_fusion *f, Arena *a, const bool *row, SchedRecompute mode, bool *math);
/* Clones the defining op of every computed row tensor (elementwise or broadcast) for each
 * of its readers but the first, consumers first, so that each is read once. */
cf_status sched_recompute(cf_fusion *f, Arena *a, const bool *row, SchedRecompute mode);
/* Every reader of tv reads a register copy of its own (a Set) instead; copies (room for
 * tv's readers) receives them after *ncopies. */
cf_status sched_copy_reads(cf_fusion *f, Val *tv, Val **copies, int *ncopies);

/* ---- the online softmax (online_softmax.c) ------------------------------------------------ */

/* How many max -> exp(x - max) -> sum chains of float tensors exprs (a fusion's tensor
 * exprs) hold; sched_online_softmax rewrites each into one online softmax reduction. */
int sched_online_softmax_count(Expr *const *exprs, int n);
cf_status sched_online_softmax(cf_fusion *f, Arena *a);

#endif
