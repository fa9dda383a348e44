/* lower/kir.h: the kernel IR, what lowering produces and the code generators print.
 *
 * A lowered kernel is a tree of nodes (loops, ifs, ops, syncs, tensor-memory management)
 * over kernel tensors (parameters and allocations), with index arithmetic as KExpr trees.
 * It lives in its own arena and refers to nothing of the Fusion, so a compiled executor
 * can outlive the fusion. KExprs are folded at construction, so a kernel of concrete
 * sizes has constant extents everywhere and printed indices stay short. */
#ifndef CFUSER_KIR_H
#define CFUSER_KIR_H

#include "ir/ir.h"
#include "ir/mma.h"

/* ---- scalar expressions of the kernel ------------------------------------------------ */

typedef enum KxKind {
  KX_CONST,        /* integer constant */
  KX_VAR,          /* a named variable: loop index, hoisted temporary */
  KX_THREAD,       /* threadIdx.* / blockIdx.* / blockDim.* / gridDim.* (pt + dim flag) */
  KX_PARAM_SIZE,   /* kernel parameter `param`'s logical size along `axis` */
  KX_PARAM_STRIDE, /* kernel parameter `param`'s allocation stride along `axis` */
  KX_BINARY,       /* op in {ADD SUB MUL DIV MOD CEILDIV MAX MIN LT LE GT GE EQ NE AND XOR} */
  KX_SELECT,       /* a ? b : c */
  KX_BLOCK_ALL     /* whether a != 0 in every thread of the block: a barrier every thread of
                    * the block must reach (__syncthreads_and); its value is the same in all */
} KxKind;

typedef struct KExpr KExpr;
struct KExpr {
  KxKind kind;
  IrOp op;
  int64_t value;           /* KX_CONST */
  const char *name;        /* KX_VAR */
  cf_parallel_type pt;     /* KX_THREAD */
  bool is_dim;             /* KX_THREAD: blockDim/gridDim instead of threadIdx/blockIdx */
  int param, axis;         /* KX_PARAM_SIZE / KX_PARAM_STRIDE */
  KExpr *a, *b, *c;
};

KExpr *kx_const(Arena *a, int64_t v);
KExpr *kx_var(Arena *a, const char *name);
KExpr *kx_thread(Arena *a, cf_parallel_type pt, bool is_dim);
KExpr *kx_param_size(Arena *a, int param, int axis);
KExpr *kx_param_stride(Arena *a, int param, int axis);
/* Folds constants and identities (x*1, x+0, x*0, x/1, x%1, ceilDiv(x,1), c1<c2, a&&0, and
 * 1&&a where a is 0 or 1 by its form). */
KExpr *kx_bin(Arena *a, IrOp op, KExpr *x, KExpr *y);
KExpr *kx_select(Arena *a, KExpr *c, KExpr *x, KExpr *y);
/* The block vote over x (a constant folds to itself). */
KExpr *kx_block_all(Arena *a, KExpr *x);
bool kx_is_const(const KExpr *e, int64_t *v);
/* Whether e's value depends on the index of pt (reads threadIdx/blockIdx of pt, not its
 * extent, outside a block vote). */
bool kx_uses_thread(const KExpr *e, cf_parallel_type pt);
/* Structural equality (for hoisting and predicate de-duplication). */
bool kx_equal(const KExpr *x, const KExpr *y);
/* e with the variable `var` replaced by val (e itself where it does not occur). */
KExpr *kx_subst(Arena *a, KExpr *e, const char *var, KExpr *val);

/* Values a KExpr may read at run time: sizes and strides of the parameters. */
typedef struct KxEnv {
  int nparams;
  const int64_t *const *sizes;   /* sizes[param][axis] */
  const int64_t *const *strides; /* strides[param][axis] */
  /* The value of any other leaf (a variable, a thread index or extent), or NULL: false
   * when it has none (tests evaluate indices at points of their ranges). */
  bool (*leaf)(void *user, const KExpr *leaf, int64_t *out);
  void *user;
} KxEnv;
/* Evaluates an expression over parameters (launch dims, run-time checks) and the leaves
 * env->leaf gives; false if it reads another leaf, or divides by zero. */
bool kx_eval(const KExpr *e, const KxEnv *env, int64_t *out);
/* e compiled for evaluating it many times (kx_program.c): its distinct subexpressions
 * once each, its leaves (KX_VAR, KX_THREAD) read from slots, leaf_slot(user, leaf) giving
 * a leaf's slot or -1 (unknown, as a parameter's size or stride and a block vote are).
 * kx_program_run gives what kx_eval gives with those values in the slots: false where it
 * reads an unknown leaf or divides by zero on the way to its value. A program keeps its
 * scratch inside: one run at a time. */
typedef struct KxProgram KxProgram;
KxProgram *kx_program(Arena *a, const KExpr *e, int (*leaf_slot)(void *user, const KExpr *leaf), void *user);
bool kx_program_run(KxProgram *p, const int64_t *slots, int64_t *out);
/* Its instructions (the distinct subexpressions). */
int kx_program_length(const KxProgram *p);
/* The values a leaf of an expression (a variable, a thread index or extent, a parameter's
 * size) takes where the caller evaluates it, as [lo, hi]; false when unknown. */
typedef bool (*KxRangeFn)(void *user, const KExpr *leaf, int64_t *lo, int64_t *hi);
/* Whether all n expressions shift by one common drift when the leaf `var` (a KX_VAR or
 * KX_THREAD) grows by a common period: e(var + period) = e(var) + drift for each of them,
 * wherever var and var + period both lie in var's range and every other leaf anywhere in
 * its range, in exact arithmetic (nothing wraps there). A property of the n values that
 * such a shift keeps then holds over var's whole range once it holds for `period`
 * consecutive values of var (kx_period.c: the rules, and what makes it fail). */
bool kx_period(const KExpr *const *es, int n, const KExpr *var, KxRangeFn range, void *user, int64_t *period,
               int64_t *drift);
/* Value ranges and simplification (kx_range.c, kx_simplify.c). A scope says where
 * expressions are evaluated: the ranges of their leaves, pushed and popped as a walk
 * enters and leaves loops and branches (a leaf nobody pushed: a parameter's size >= 0, a
 * launch extent >= 1, a thread index >= 0, anything else unknown). */
typedef struct KxScope KxScope;
KxScope *kx_scope_new(Arena *a);
/* From now until the matching pop: `leaf` (a KX_VAR, or a KX_THREAD index or extent) lies
 * in [lo, hi] (INT64_MIN / INT64_MAX: unbounded on that side), and below `bound` when not
 * NULL (a comparison leaf < bound is then true). */
void kx_scope_push(KxScope *s, const KExpr *leaf, int64_t lo, int64_t hi, const KExpr *bound);
void kx_scope_pop(KxScope *s);
/* The launch's ranges, for a walk over the whole kernel: for each thread and block index
 * (dims[pt], its launch extent; NULL: 1), the extent in its range (at least 1) and the
 * index in [0, extent - 1] below the extent. Popped with six pairs of kx_scope_pop, or
 * never (a scope made for one walk). */
void kx_scope_push_launch(KxScope *s, KExpr *const dims[CF_PT_COUNT]);
/* The values e takes over the scope's ranges, [lo, hi] (C semantics, unbounded sides as
 * above; a computation that may wrap is unknown). */
void kx_range(KxScope *s, const KExpr *e, int64_t *lo, int64_t *hi);
/* e rewritten by the rules of kx_simplify.c where the scope's ranges prove them: the same
 * value at every point of the ranges, wherever e is defined. New nodes live in the arena
 * the scope was made in; e itself is returned when no rule applies. */
KExpr *kx_simplify(KxScope *s, KExpr *e);
/* Whether bound term u (a comparison) implies bound term t over the scope's ranges, by
 * the rules of kx_implies.c (a split's, a merge's and a modulo's bound); false when no
 * rule proves it. */
bool kx_implies(KxScope *s, const KExpr *u, const KExpr *t);
/* Prints in C syntax; `param_name(i)` gives the parameter's name ("T0"). */
void kx_print(StrBuf *b, const KExpr *e, const char *const *param_names);

/* ---- tensors of the kernel -------------------------------------------------------------- */

typedef struct KTensor {
  const char *name;      /* "T1" */
  int fusion_tv_name;    /* 1 for T1 */
  cf_memory_type mem;
  cf_dtype dtype;
  int param;             /* index among the kernel parameters, or -1 for an allocation */
  bool is_output;
  bool is_workspace;     /* parameters: a buffer the executor provides (an intermediate in global memory, a grid reduction's) */
  int rank;              /* parameters: logical rank */
  int alloc_rank;        /* parameters: number of allocation strides passed */
  KExpr **extents;       /* parameters: logical extents (constants or input sizes) */
  bool *broadcast;       /* parameters: per logical axis, a broadcast axis (size 1) */
  bool contiguous;       /* parameters: promised dense row-major (strides are checked) */
  KExpr *size;           /* allocations: elements (Local, Shared); columns x lanes for Tensor */
  KExpr *smem_offset;    /* Shared: byte offset in dynamic shared memory (a constant, or a named variable) */
  KExpr *smem_offset_def; /* Shared, symbolic offset: the variable's definition, in terms of the previous one */
  int64_t smem_align;    /* Shared: the byte alignment its offset needs beyond 16 (0: 16): a wgmma
                          * operand tile's swizzle repeats every 8 rows of its width (mma_wgmma.c) */
  int vector_bytes;      /* parameters: widest vector access (data must be aligned to it) */
  int cb_slack;          /* Shared, circular-buffered: stages - prefetch distance (1 when the fill
                          * runs stages - 1 ahead): a stage is refilled that many iterations
                          * after it is read; 2 and more let its reader finish an iteration late */
  struct KTensor *spill; /* Local, cf_spill_to_shared: the shared part (elements reg_elems and
                          * on of each thread, in 16-byte chunks; lower/shared_spill.c) */
  int64_t reg_elems;     /* with spill: the elements each thread keeps in registers */
  int64_t spill_threads; /* with spill: the block's threads (each its own chunks) */
  bool zero_filled;      /* Shared: every element of the tile is written, zero where its fill's
                          * bounds fail (predicate.c), so a reader needs no mask of its own */
  bool data_used;        /* parameters: the kernel loads, stores or takes the address of an
                          * element (param_use.c); false: it reads only the sizes and strides,
                          * so the data may be anywhere (a size scalar in host memory on CUDA) */
  /* Tensor memory: the region, and this tensor's lane and column offset in it. */
  int tmem_region;
  int64_t tmem_lanes, tmem_columns;
  int64_t tmem_lane_offset, tmem_col_offset;
} KTensor;

/* ---- nodes ---------------------------------------------------------------------------- */

/* X(kind, collective): a collective node is reached by every thread of the block (or of a
 * warp) together: a barrier, a block reduction, a warp-collective tcgen05 instruction. A
 * condition around one must be the same for all those threads (kir_verify, unswitch.c). */
#define KN_KIND_TABLE(X)                                                                      \
  X(KN_FOR, false)             /* a loop; thread-parallel "loops" are kept (trivial, not emitted) */ \
  X(KN_IF, false)              /* if (cond) { then } else { otherwise } */                       \
  X(KN_OP, false)              /* one elementwise/reduction/copy computation */                  \
  X(KN_TMEM_LD, true)          /* tcgen05.ld 32x32b: registers <- tensor memory */               \
  X(KN_TMEM_ST, true)          /* tcgen05.st 32x32b: tensor memory <- registers */               \
  X(KN_ALLOC, false)           /* declaration of a Local/Shared/Tensor buffer */                 \
  X(KN_SYNC, true)             /* __syncthreads, or a grid-wide sync (u.sync.grid) */                                               \
  X(KN_TMEM_ALLOC, true)       /* warp 0: tcgen05.alloc of a region into its shared slot */      \
  X(KN_TMEM_RELINQUISH, true)  /* warp 0: tcgen05.relinquish_alloc_permit */                     \
  X(KN_TMEM_DEALLOC, true)     /* warp 0: tcgen05.dealloc of a region */                         \
  X(KN_COMMENT, false)                                                                        \
  X(KN_ACC_DECL, false)        /* a reduction's register accumulator: `T var = identity;` */    \
  X(KN_BLOCK_REDUCE, true)     /* all-reduce of an accumulator across thread dimensions (reduction.c) */ \
  X(KN_MMA, true)              /* a warp's tensor-core instruction (mma.c): accumulator += A x B */ \
  X(KN_ASYNC_COMMIT, false)    /* cp.async.commit_group: the thread's copies issued since form a group */ \
  X(KN_ASYNC_WAIT, false)      /* cp.async.wait_group u.async.pending: all but that many newest groups done */ \
  X(KN_WGMMA_FENCE, true)      /* wgmma.fence: the accumulators' registers written before are seen by the wgmmas after */ \
  X(KN_WGMMA_COMMIT, true)     /* wgmma.commit_group: the warpgroup's wgmmas issued since form a group */ \
  X(KN_WGMMA_WAIT, true)       /* wgmma.wait_group u.async.pending: all but that many newest groups done */ \
  X(KN_TMA_LOAD, false)        /* cp.async.bulk.tensor: a box of a global tensor into shared memory, its bytes completing on an mbarrier (tma.c) */ \
  X(KN_MBAR_INIT, false)       /* mbarrier.init of u.mbar.bar with u.mbar.value arrivals */ \
  X(KN_MBAR_EXPECT_TX, false)  /* mbarrier.arrive.expect_tx: this thread's arrival, u.mbar.value bytes to come */ \
  X(KN_MBAR_WAIT, false)       /* waits until u.mbar.bar's phase of parity u.mbar.parity completes */ \
  X(KN_MBAR_ARRIVE, false)     /* mbarrier.arrive: this thread's arrival on u.mbar.bar */ \
  X(KN_SETMAXNREG, true)       /* setmaxnreg: the warpgroup's registers a thread become u.mbar.value (warp_specialize.c) */ \
  X(KN_TC05_COMMIT, false)     /* the elected thread's tcgen05.commit: u.mbar.bar's arrival once its tcgen05.mmas are done (mma_tcgen05.c) */ \
  X(KN_TC05_FENCE, false)      /* tcgen05.fence::after_thread_sync (u.mbar.value 0) or ::before_thread_sync (1) */

typedef enum KnKind {
#define KN_X(kind, collective) kind,
  KN_KIND_TABLE(KN_X)
#undef KN_X
} KnKind;
/* Outside the enum, so that switches over the kinds need no case for it. */
#define KN_X(kind, collective) +1
enum { KN_KIND_COUNT = 0 KN_KIND_TABLE(KN_X) };
#undef KN_X

/* The table's collective column. */
bool kn_is_collective(KnKind k);

enum { KN_TMA_MAX_RANK = 5 }; /* cp.async.bulk.tensor's dimensions */

typedef struct KNode KNode;
typedef struct KBlock {
  KNode **items;
  int len, cap;
} KBlock;
void kb_push(Arena *a, KBlock *b, KNode *n);
void kb_insert(Arena *a, KBlock *b, int pos, KNode *n);
/* Removes b->items[pos], keeping the order of the others. */
void kb_remove(KBlock *b, int pos);
/* The position of n among b's items, -1 when it is not one of them. */
int kb_index_of(const KBlock *b, const KNode *n);

typedef struct KAccess {
  KTensor *t;       /* NULL: a scalar constant operand */
  KExpr *index;     /* linear element index (not for Tensor memory) */
  KExpr *lane, *col; /* Tensor memory: lane (rounded to the warp's base) and column */
  double scalar;    /* scalar constant operand */
  double scalar_im; /* its imaginary part when scalar_complex (a complex full's value) */
  bool scalar_complex;
  KExpr *scalar_expr; /* when t and var are NULL and this is set: an integer scalar (a mean's
                       * count of symbolic extents, an integer full's value), an int64 */
  const char *var;  /* when t is NULL: a named register (a reduction's accumulator) */
  cf_dtype var_dtype;
  /* An indexed op's operand read along the op's axis (IR_INDEXED_TABLE): `index` is its
   * element at position 0 of that axis; the element at position p is index + p *
   * along_stride, p < along_extent. NULL otherwise. */
  KExpr *along_stride, *along_extent;
} KAccess;

struct KNode {
  KnKind kind;
  union {
    struct {
      const char *var;     /* loop index name, or NULL for thread-parallel loops */
      KExpr *index;        /* the index expression seen inside: var, threadIdx.x, 0 */
      KExpr *extent;
      cf_parallel_type pt; /* SERIAL, UNROLL, VECTORIZE, or a thread type (trivial loop) */
      KBlock body;
      Val *concrete;       /* during lowering: the axis whose extent the loop runs over */
    } loop;
    struct {
      KExpr *cond;         /* a predicate is a value: any integer KExpr, true when non-zero */
      KBlock then;
      KBlock otherwise;    /* the else branch (empty: none) */
      bool concurrent;     /* both branches run, by the threads the condition parts (a producer
                            * and its consumers, warp_specialize.c), ordered by mbarriers: the
                            * verifier checks the else branch after the then branch */
    } cond;
    struct {
      IrOp op;             /* the fusion op (OP_SET, OP_ADD, OP_SUM, ...) */
      cf_dtype out_dtype;  /* for casts and promotion */
      KAccess out;
      KAccess in[3];
      int nin;
      bool reduction_init; /* out = init value of the reduction op */
      /* Indexed ops: the output's position along the op's axis and its extent there;
       * scatter: whether the output element lies within the index's other extents. */
      KExpr *along_pos, *along_size, *along_guard;
      int vector;          /* > 1: a vectorized access of this many elements */
      bool tail;           /* vector > 1: the last vector may pass the end of its axis
                            * (lower/vectorize.c); its bounds are its last lane's, and the
                            * predicate pass adds the lanes one by one where they fail */
      bool async;          /* a 16-byte global -> shared copy issued as cp.async (circular_buffer.c) */
      /* Non-NULL: the op writes its value where zfill holds and zeros where it does not
       * (predicate.c: a circular-buffered tile's fill, its bounds; as cp.async it reads 0
       * bytes there, from element 0 of its source); NULL: an ordinary write. */
      KExpr *zfill;
      /* During lowering only: the fusion expression and the index of each loop axis of
       * its output (what indexing and predicates are computed from). */
      const Expr *src;
      KExpr **loop_index;
      KNode **loops;       /* the loop of each loop axis (NULL for an elided vector axis) */
      int nloop;
      KExpr **bounds;      /* index < extent terms the predicate pass may need */
      int nbounds;
    } op;
    struct {
      KAccess reg;         /* the register side: a Local tensor and its first index */
      KAccess tmem;        /* the tensor-memory side (lane, col) */
      int words;           /* .x<words>: 32-bit words per thread */
      int elems;           /* elements of the register tensor moved per thread */
    } tmem;
    struct {
      KTensor *t;
    } alloc;
    struct {
      int region;
    } region;
    struct {
      int pending;         /* KN_ASYNC_WAIT, KN_WGMMA_WAIT: groups that may stay in flight */
      const struct KNode *mma; /* KN_WGMMA_FENCE, _WAIT: a wgmma of the group, whose
                                * accumulator registers the CUDA code pins there (an empty asm
                                * naming each "+f") so the compiler moves no access across */
      const struct KTensor *issued; /* KN_ASYNC_COMMIT after a spilled tensor's fill
                                * (shared_spill.c): the fill loaded its register part from
                                * global memory too, and the CUDA code makes those loads issue
                                * before the commit (cf_loads_issued) */
    } async;
    const char *comment;
    struct {
      bool grid;           /* every thread of every block (a cooperative launch) */
      bool proxy_async;    /* fence.proxy.async.shared::cta first: the shared writes before it
                            * (st.shared, completed cp.async) become visible to the async proxy
                            * (wgmma's descriptor reads) after the barrier (mma_wgmma.c) */
    } sync;
    struct {
      const char *var;     /* the accumulator */
      cf_dtype dtype;      /* its type: the reduction's compute type */
      IrOp op;             /* the reduction (identity and combine op from its table) */
      bool reduce[3];      /* block reduce: threadIdx.x/y/z reduced */
      bool warp;           /* block reduce: warp shuffles, then one value per warp (below) */
      int warp_stride;     /* warp: lanes between neighbours of the reduced dimension: 1
                            * (only x, a multiple of 32) or blockDim.x (only y, blockDim.x
                            * a power of two below 32 and x * y whole warps) */
      int lanes;           /* warp-local: only x reduced, blockDim.x a constant power of two
                            * up to 32, the block whole warps: xor shuffles within each group
                            * of `lanes` lanes give every lane its row's value, with no
                            * workspace and no barrier (0: the warp or tree form) */
      KTensor *ws;         /* block reduce: shared workspace of blockDim.x*y*z elements (times group) */
      bool grid[3];        /* blockIdx.x/y/z reduced: a grid reduction follows */
      KTensor *work, *sem; /* grid: partials (gridDim x blockDim elements), semaphores */
      KTensor *flag;       /* grid: shared slot saying the block is the group's last */
      KBlock tail;         /* grid: what the last block of a group runs (the store, and the
                            * readers of the value that follow it, moved in by lowering) */
      KExpr *iter;         /* grid: linear index of the serial loops around the reduction */
      bool all_blocks;     /* grid: every block folds the partials after a grid sync (a grid
                            * all-reduce, read in the kernel), instead of the last one */
      /* Grouped (group_reductions.c; 0: not): the reduction of `group` accumulators at
       * once, elements 0 .. group - 1 of the Local array `array` (named like var, which is
       * then no register), each combined as an ungrouped reduction combines it. The tree's
       * workspace holds group x the block's threads (element j of thread t at j * threads +
       * t); a grid part's partials are group per (block, kept thread), at (that slot) *
       * group + j, and a group of blocks counts once on its semaphore for all of them
       * (iter no longer counts the grouped loop). The tail, if any, loops over j itself. */
      int group;
      KTensor *array;
    } acc;
    struct {
      const IrMmaInstr *instr;
      cf_dtype in_dtype;   /* the operands' dtype (half, bfloat16) */
      /* The lane's elements of each fragment, in the instruction's register order: the
       * accumulator's nacc registers (a Local tensor; an array of the arena: wgmma has up
       * to 128), and the operand tiles' elements, each read only where its mask holds
       * (else 0: out of bounds of M, N or K); wgmma has no operand elements (below). */
      KAccess *acc;
      int nacc;
      int n;               /* the instruction's N (wgmma: the tile's; mma.sync: instr->n) */
      KAccess a[IR_MMA_MAX_FRAG], b[IR_MMA_MAX_FRAG];
      KExpr *a_mask[IR_MMA_MAX_FRAG], *b_mask[IR_MMA_MAX_FRAG];
      /* Operand 0 (A) and 1 (B) loaded by one ldmatrix.x<ldm> (mma_ldmatrix.c; 0: the
       * per-lane loads above): the running lane's row address, .trans or not; a[i] and
       * b[i] stay the elements the registers hold (the host checks them), masks after. */
      int ldm[2];
      bool ldm_trans[2];
      KAccess ldm_row[2];
      /* wgmma (mma_wgmma.c): operand 0 (A) and 1 (B) read through a matrix descriptor: the
       * tile's element at the instruction's (0, 0), whose shared address >> 4 is the start
       * field, or'ed with desc[op] (leading and stride byte offsets >> 4, swizzle mode);
       * mn_major[op]: the tile is contiguous along M (A) or N (B), the transpose bit. */
      KAccess desc_start[2];
      uint64_t desc[2];
      bool mn_major[2];
      /* tcgen05.mma (mma_tcgen05.c): acc[0] is the accumulator's element (0, 0) in tensor
       * memory, desc[] the shared-memory descriptors' constant fields in tcgen05's encoding,
       * idesc the 32-bit instruction descriptor, enable_d the accumulate flag (0 on the sum's
       * first K step: D = A x B there, D += A x B after). */
      uint32_t idesc;
      KExpr *enable_d;
    } mma;
    struct {
      int map;             /* the tensor map: KKernel.tmaps[map] */
      KExpr *coord[KN_TMA_MAX_RANK]; /* the box's first element, innermost dimension first */
      KAccess dst;         /* where the box goes: its first element in the shared tile */
      KAccess bar;         /* the mbarrier its bytes complete on */
    } tma;
    struct {
      KAccess bar;         /* the mbarrier: a shared int64 buffer and the element */
      int64_t value;       /* KN_MBAR_INIT: arrivals a phase takes; _EXPECT_TX: bytes;
                            * KN_SETMAXNREG: registers (the warpgroup's count grows to it, or shrinks) */
      KExpr *parity;       /* KN_MBAR_WAIT: the phase waited for (0 or 1) */
    } mbar;
  } u;
};

/* ---- tensor-memory regions --------------------------------------------------------------- */

typedef struct KTMemRegion {
  int ntensors;
  KTensor **tensors;
  int64_t raw_columns;   /* sum over its tensors */
  int64_t num_columns;   /* allocated: max(32, next power of two) */
  int64_t num_lanes;     /* max over its tensors */
  KTensor *slot;         /* the shared-memory uint32 holding its address */
} KTMemRegion;

/* A TMA tensor map the executor builds for each run (cuTensorMapEncodeTiled on CUDA; the
 * host backend's kernel builds its cfh_tensor_map from the parameter itself): parameter
 * `param`'s allocation axes innermost first, the box copied, the shared-memory swizzle in
 * bytes (0, 32, 64, 128). Named cf_tmap<index> in the kernel. */
typedef struct KTmaMap {
  int param;
  int rank;
  int64_t box[KN_TMA_MAX_RANK];
  int swizzle;
} KTmaMap;

/* A run-time check: `cond` over parameter sizes must be non-zero, else `message`. */
typedef struct KCheck {
  KExpr *cond;
  const char *message;
} KCheck;

/* The lowered kernel. Owns its arena. */
typedef struct KKernel {
  Arena *arena;
  const char *name;           /* kernel function name */
  KTensor **params;           /* inputs then outputs */
  const char **param_names;   /* params[i]->name, for kx_print */
  bool synced;                /* the sync pass ran: RAW syncs are in place (kir_verify) */
  int nparams;
  KTensor **allocs;           /* every Local/Shared/Tensor buffer */
  int nallocs;
  KBlock body;
  KExpr *grid[3], *block[3];  /* launch dimensions over parameter sizes */
  KExpr *smem;                /* dynamic shared memory in bytes */
  KTMemRegion *regions;
  int nregions;
  KCheck *checks;
  int nchecks;
  bool index32;               /* every tensor fits in 32-bit indexing */
  bool index32_checked;       /* index32 not proved from constant sizes (CF_INDEX_32): each run
                                 checks its tensors (executor/run.c check_index32) */
  bool signed_coords;         /* index32 with a tensor of run-time strides (a negative stride
                                 times an unsigned threadIdx.x would wrap), or the schedule's
                                 choice (cf_fusion.signed_coords): the thread and block
                                 coordinates read as int (codegen's cf_idim3) */
  KTensor *grid_sem;          /* the grid syncs' counter (a workspace parameter), or NULL: a
                               * kernel with grid syncs needs a cooperative launch */
  int min_blocks_per_sm;      /* CUDA: blocks one SM must hold (set by the executor for a
                               * cooperative grid of constant size: ceil(blocks / SMs), or the
                               * schedule's planned_blocks_per_sm when more), 0 none */
  int planned_blocks_per_sm;  /* the schedule's occupancy (cf_fusion.blocks_per_sm), 0 none */
  bool uses_tmem;
  bool tcgen05_mma;           /* a tcgen05.mma completes on an mbarrier (codegen: tma.cuh's helpers) */
  KTmaMap *tmaps;             /* the TMA loads' tensor maps (lower/tma.c), extra CUDA parameters */
  int ntmaps;
  /* How long each pass of lower.c's table took on this kernel, in table order (what
   * CFUSER_DUMP=times prints and a slow compile's note names); the verifier's time after
   * a pass (CFUSER_VERIFY=1) is not counted. */
  struct KPassTime {
    const char *pass;
    double seconds;
  } *pass_times;
  int npass_times;
} KKernel;

void kkernel_free(KKernel *k);

/* ---- walking and transforming the tree (kir_visit.c) -------------------------------------
 * Every pass and printer that goes over the kernel IR goes through these, so the shape of
 * the tree (which nodes hold blocks: kn_blocks) is known in one place. */

enum { KN_MAX_BLOCKS = 2 };
/* The blocks n holds, in program order: a loop's body; an if's then and else branches; a
 * grid reduction's tail (what the last block of a group runs). Returns how many. */
int kn_blocks(KNode *n, KBlock *out[KN_MAX_BLOCKS]);

/* The tensors whose elements node n itself loads, stores or takes the address of (not those
 * of the nodes in its blocks), each passed to fn once per access: an op's operands and
 * output, a tensor-memory copy's two sides, an MMA's fragments and ldmatrix rows, a block
 * reduction's workspaces, semaphores and flag, a grid sync's semaphore (k->grid_sem, also
 * a grid all-reduce's, whose grid sync is part of its node). The
 * one list of what a node dereferences (param_use.c reads it). */
void kn_data_tensors(const KKernel *k, const KNode *n, void (*fn)(KTensor *t, void *user), void *user);

/* The nodes enclosing the one a callback is called for, outermost first, with the block
 * holding each; node[depth - 1] is that node itself. */
typedef struct KPath {
  KNode **node;
  KBlock **block;
  int depth, cap;
} KPath;

/* A walk, depth first in program order, that may change nodes' fields but not the tree's
 * shape, except that `pre` may rewrite the node's own blocks (they are walked after it
 * returns). Callbacks are per node kind (NULL: nothing); `pre` returning false skips the
 * node's blocks. `between` runs before block i >= 1 of a node (an if's else branch). A
 * callback ends the walk by setting `stop`. */
typedef struct KVisitor KVisitor;
struct KVisitor {
  bool (*pre[KN_KIND_COUNT])(KVisitor *v, KNode *n);
  void (*post[KN_KIND_COUNT])(KVisitor *v, KNode *n);
  void (*between)(KVisitor *v, KNode *n, int block);
  void *user;
  /* Where the path grows: a lowering pass gives the kernel's arena (a lower_fail from a
   * callback unwinds past the walk); NULL: malloc'd and freed when the walk returns. */
  Arena *arena;
  bool stop;
  bool oom;     /* the path could not grow: the walk stopped */
  KPath path;   /* kept by the walk */
};
/* Walks b; false when a callback (or running out of memory) stopped the walk. */
bool kir_visit(KVisitor *v, KBlock *b);
/* Sets the same pre and post callback for every kind (a printer's switch). */
void kir_visit_all(KVisitor *v, bool (*pre)(KVisitor *, KNode *), void (*post)(KVisitor *, KNode *));

/* A rewrite in the spirit of Halide's IRMutator. For each node of a block, the callback of
 * its kind appends to `out` what takes its place: nothing (the node is removed), the node
 * itself (kept; call kir_mutate_children first to rewrite inside it), another node, or
 * several. Kinds without a callback have their blocks mutated and are kept. Nodes keep
 * their identity (an op's `loops` stay valid); a block's items are rebuilt only when one
 * of them changed, so a pass that changes nothing rebuilds nothing. Replacements are not
 * mutated again. */
typedef struct KMutator KMutator;
struct KMutator {
  Arena *arena;
  void (*fn[KN_KIND_COUNT])(KMutator *m, KNode *n, KBlock *out);
  void *user;
  KPath path;   /* the enclosing nodes, as for the visitor */
};
/* Mutates b in place; returns whether b's own items changed (blocks below it may have
 * changed in place either way). */
bool kir_mutate(KMutator *m, KBlock *b);
/* The default recursion: mutates each block of n. */
void kir_mutate_children(KMutator *m, KNode *n);

/* Deep copies in arena a: nodes and blocks are copied, KExprs and tensors shared; an op's
 * `loops` that lie inside the copy point to their copies. */
KNode *kir_clone(Arena *a, const KNode *n);
void kir_clone_block(Arena *a, const KBlock *src, KBlock *dst);

#endif
