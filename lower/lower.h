/* lower/lower.h: the lowering pipeline's shared context and its passes (internal).
 *
 * lower_fusion() runs the pass table of lower.c in order over one LowerCtx. Each pass is
 * one file exporting one function `void lower_<name>(LowerCtx *c)`; its header comment
 * says what it requires and what it establishes. A pass that finds an error calls
 * lower_fail, which unwinds with longjmp to lower_fusion: everything made so far lives in
 * arenas, so nothing leaks. */
#ifndef CFUSER_LOWER_H
#define CFUSER_LOWER_H

#include <stdio.h>
#include <setjmp.h>

#include "cfuser/executor.h"
#include "lower/kir.h"
#include "analysis/analysis.h"
#include "scheduler/sched.h"

typedef struct LowerOptions {
  bool skip_tmem_validation; /* tests of the host backend's run-time checks */
  cf_index_type index_type; /* the executor's (tensors.c: k->index32) */
  /* Called after the passes, before code generation. */
  void (*hook)(const KKernel *k, void *user);
  void *hook_user;
} LowerOptions;

/* Per-TensorView facts the passes share, indexed by the TensorView's Val id. */
typedef struct TvInfo {
  KTensor *kt;          /* its kernel tensor (parameter or allocation) */
  bool *allocated;      /* per axis of its allocation domain: allocated by the rule */
  Val **alloc_ids;      /* its allocation domain (loop domain for non-global without one) */
  int nalloc_ids;
  KExpr **strides;      /* per allocation axis, in elements (allocated axes only) */
  Expr **history;        /* ir_tv_history, computed once */
  int nhistory;
  bool is_tmem;
  int dim_sep;          /* tensor memory: lane axes are alloc_ids[0 .. dim_sep) */
  bool vector_tail;     /* its vector copy may end in a partial vector (vectorize.c) */
} TvInfo;

enum { LOWER_WS_MAX_OUTER = 4 }; /* serial loops around a warp-specialized loop */

typedef struct LowerCtx {
  cf_fusion *f;
  const LowerOptions *opts;
  KKernel *k;
  Arena *a;               /* the kernel's arena */
  jmp_buf unwind;
  cf_status status;
  char *error;            /* malloc'd */
  LoopModel model;        /* analysis/: maps, loop graph, promotion, parallel types (loop_model.c) */
  Expr **exprs;           /* tensor exprs in the order their loop nests are built */
  int nexprs;
  Val **tvs;
  int ntvs;
  TvInfo *info;           /* by Val id */
  KExpr *pdim[CF_PT_COUNT];   /* launch extent of each parallel type, NULL if unused */
  bool pdim_exact[CF_PT_COUNT];
  Uniformity uniform;          /* per-thread uniformity (analysis/uniformity.c), recorded by predicate.c */
  int next_var;
  struct IndexMaps *index_maps; /* index.c's scratch maps, made on first use */
  /* A warp-specialized loop (circular_buffer.c records it for warp_specialize.c): the
   * loop its TMA tiles circulate over, the block holding it, stages, prefetch distance,
   * the producer's thread dimension; where serial loops enclose it (a persistent
   * kernel's tile loop), their iteration linearized times L's extent (`base`: iteration
   * i of L is the barriers' base + i, so stages and phases run on across them) and, when
   * they alone enclose it, the loops, outermost first. loop NULL: none. */
  struct {
    KNode *loop;
    KBlock *parent;
    int stages, prefetch;
    cf_parallel_type pt;
    KExpr *base;
    KNode *chain[LOWER_WS_MAX_OUTER];
    int nchain; /* -1: something else encloses L too */
  } ws;
} LowerCtx;

cf_status lower_fusion(cf_fusion *f, const LowerOptions *opts, KKernel **out, char **error);
/* The monotonic clock in seconds, for compile times. */
double lower_seconds_now(void);
/* The pass of k's lowering that took longest (k->pass_times), NULL when none was timed. */
const struct KPassTime *lower_slowest_pass(const KKernel *k);
/* Where dumps go: $CFUSER_DUMP_FILE (appended to), else stderr (lower/dump_file.c). */
FILE *lower_dump_out(void);
/* Is `name` (a pass, "source", "ptx" or "launch") listed in CFUSER_DUMP, or is "all"? */
bool lower_dump_requested(const char *name);
/* A new node of the kernel's arena; an if of one statement. */
KNode *lower_node(LowerCtx *c, KnKind kind);
KNode *lower_if(LowerCtx *c, KExpr *cond, KNode *body);
_Noreturn void lower_fail(LowerCtx *c, cf_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A validation over constants fails now; over parameter sizes it becomes a run-time
 * check with the same message (DESIGN.md section 5, two-level validation). */
void lower_validate(LowerCtx *c, KExpr *cond, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline TvInfo *lower_info(LowerCtx *c, const Val *tv) { return &c->info[tv->id]; }
/* An IterDomain or a TensorView printed for a message, in the kernel's arena (so that a
 * lower_fail that follows, which unwinds past any free, leaks nothing). */
const char *lower_id_str(LowerCtx *c, const Val *id);
const char *lower_tv_str(LowerCtx *c, const Val *tv);
/* The kernel expression of a fusion scalar (extents): constants, and input sizes/strides. */
KExpr *lower_scalar(LowerCtx *c, const Val *v);
/* Extent of an IterDomain as a kernel expression. */
static inline KExpr *lower_extent(LowerCtx *c, const Val *id) { return lower_scalar(c, ID((Val *)id)->extent); }

/* The loop model (analysis/loop_model.c), as the passes ask it: the IterDomain the loop of
 * loop axis `id` iterates (id itself unless promoted), whether two loop axes share one
 * for-loop, and the parallel type an IterDomain runs on. */
static inline Val *lower_promoted(const LowerCtx *c, const Val *id) { return an_promoted(&c->model, id); }
static inline bool lower_same_loop(const LowerCtx *c, const Val *a, const Val *b) {
  return an_same_loop(c->model.loops, a, b);
}
static inline cf_parallel_type lower_ptype(const LowerCtx *c, const Val *id) { return an_ptype(&c->model, id); }
/* The pairwise map of producer p and consumer cv (an_pairwise_map) in the kernel's
 * arena, as long as the tensors' ranks: returns the count (0 when p is no producer of cv). */
int lower_pairwise(LowerCtx *c, const Val *p, const Val *cv, Val ***pids, Val ***cids);

/* The passes, in order (lower.c holds the table). */
void lower_loop_model(LowerCtx *c);       /* loop_model.c: analysis/'s loop model, histories */
void lower_sort_exprs(LowerCtx *c);       /* expr_sort.c */
void lower_parallel_dims(LowerCtx *c);    /* parallel_dims.c */
void lower_tensors(LowerCtx *c);          /* tensors.c: params, allocation rule, sizes */
void lower_extent_checks(LowerCtx *c);    /* extent_checks.c: mapped axes agree */
void lower_validate_vectorize(LowerCtx *c); /* vectorize.c */
void lower_tmem_info(LowerCtx *c);        /* tmem_info.c: regions, lanes, columns */
void lower_loop_nest(LowerCtx *c);        /* loop_nest.c */
void lower_tmem_pattern(LowerCtx *c);     /* tmem_pattern.c: 32x32b validation */
void lower_validate_parallel(LowerCtx *c); /* validate_parallel.c: no cross-thread registers */
/* Whether consumer cv reads global tensor p along a launched block type differently from
 * p's write (validate_parallel.c): some block reads what other blocks wrote, which needs
 * a grid sync between them (sync.c). */
bool lower_reads_across_blocks(LowerCtx *c, Val *p, Val *cv);
/* The kernel's grid-sync counter (one int64 workspace parameter, zero before the first
 * launch; the sync flips its top bit, so it needs no reset), made on first use: the
 * kernel then needs a cooperative launch (reduction.c). */
KTensor *lower_grid_semaphore(LowerCtx *c);
void lower_index(LowerCtx *c);            /* index.c */
/* index.c: the access of `tv` (the output or an input of op's expression) computed from
 * op's loop indices as the index pass does, for analyses that evaluate indices
 * (tmem_pattern substitutes its own loop indices to check the TMem access pattern). */
KAccess lower_index_access(LowerCtx *c, const KNode *op, Val *tv);
/* index.c: the same, per allocation axis of tv before they are linearized with its
 * strides (the TMA box's coordinates, lower/tma.c): their count (at most max), or -1 when
 * an axis has no index in op's loops. */
int lower_index_axes(LowerCtx *c, const KNode *op, Val *tv, KExpr **out, int max);
/* index.c: the scalar op of vector op vec's element `lane` (an index expression below its
 * width), indexed as the index pass indexes ops (accesses and bounds): what the predicate
 * pass runs lane by lane where a vector with a tail passes the end. */
KNode *lower_vector_lane(LowerCtx *c, const KNode *vec, KExpr *lane);
void lower_predicate(LowerCtx *c);        /* predicate.c */
/* Whether a write of tv that does not span launch type p is done by index 0 of p alone
 * (tv's memory is shared across p and p is launched wider than 1): predicate.c guards such
 * writes, sync.c knows other threads then read them. */
bool lower_write_guarded(const LowerCtx *c, const Val *tv, cf_parallel_type p);
/* Whether the place op writes depends on the index of launch type p (predicate.c). */
bool lower_write_spans(const KNode *op, cf_parallel_type p);
/* Whether op is a block reduction over p: every index of p reads its inputs and folds them. */
bool lower_reduces_over(const KNode *op, cf_parallel_type p);
void lower_reduction(LowerCtx *c);        /* reduction.c: block reductions */
/* reduction.c: whether a reduction's output of tv's dtype accumulates in a wider
 * floating type (half, bfloat16 in float): its accumulator is a register. */
bool lower_widened_reduction(const Val *tv);
/* group_reductions.c: a small loop's block reductions as one grouped reduction */
void lower_group_reductions(LowerCtx *c);
void lower_sync(LowerCtx *c);             /* sync.c: RAW/WAR __syncthreads */
/* tma.c: the TMA boxes replacing fill, the fill statement of tv (cf_tma_load) in its
 * loop, with the tile's barriers (`stages` of them) made and initialized; refused naming
 * the rule when the tile is not a box of its input (tma.c's paragraph). */
KNode *lower_tma_fill(LowerCtx *c, Val *tv, KNode *fill, int stages);
/* tma.c: whether n only fills tiles by TMA or waits for them (ifs of TMA loads, their
 * expect_tx and mbarrier waits: nothing a __syncthreads orders); *loads (if given) set
 * when a load is among them. */
bool lower_tma_only(const KNode *n, bool *loads);
/* tma.c: threadIdx.x, .y and .z all 0: the one thread that issues a block's TMA loads. */
KExpr *lower_elected_thread(LowerCtx *c);
void lower_circular_buffer(LowerCtx *c);
/* warp_specialize.c: the loop c->ws names split into a producer slice of threads that
 * issues the TMA fills and the readers, ordered by full and empty mbarriers a stage. */
void lower_warp_specialize(LowerCtx *c);  /* circular_buffer.c: staged shared tiles, prefetched (cp.async) */
void lower_mma(LowerCtx *c);              /* mma.c: MMA loop nests become tensor-core instructions */
/* mma_ldmatrix.c: operand fragments of n loaded by ldmatrix where that provably gives each
 * lane its elements; moved_at(ctx, op, row, col) is operand op's access at a fragment position. */
void lower_mma_ldmatrix(LowerCtx *c, const KPath *path, KNode *n, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                        void *ctx);
/* mma_wgmma.c: a wgmma's matrix descriptors, from its tiles' layout (refused when no
 * descriptor names it); the wgmma groups (fence, commit, wait) and the fence.proxy.async
 * of the barrier before them; the constant bits of a descriptor (LBO, SBO in bytes, the
 * swizzle's B: 3 for 128-byte rows, 2, 1; 0 none). */
void lower_wgmma_operands(LowerCtx *c, const KPath *path, KNode *n, KAccess (*moved_at)(void *, int, KExpr *, KExpr *),
                          void *ctx, const char *rname);
void lower_wgmma_groups(LowerCtx *c);
uint64_t lower_wgmma_desc_bits(int64_t lbo, int64_t sbo, int swizzle_bits);
/* mma_tcgen05.c: tcgen05.mma of a sum r in tensor memory: its row once r's MMA axes and
 * product are checked (p filled); the KN_MMA n built for the sum op `sum` finished (its
 * accumulator's layout checked, the descriptors in tcgen05's encoding, the instruction
 * descriptor, the accumulate flag); at the mma pass's end, the accumulators' initializations
 * dropped and each group of tcgen05.mmas given its commit to an mbarrier and the wait on
 * it. The descriptors' constant bits (LBO, SBO in bytes, swizzle B as above) and the
 * instruction descriptor (kind::f16, float D) for tests. */
const IrMmaInstr *lower_tcgen05_validate(LowerCtx *c, Val *r, IrMmaPattern *p);
void lower_tcgen05_finish(LowerCtx *c, KNode *n, const KNode *sum);
void lower_tcgen05_groups(LowerCtx *c);
uint64_t lower_tcgen05_desc_bits(int64_t lbo, int64_t sbo, int swizzle_bits);
uint32_t lower_tcgen05_idesc(cf_dtype ab, int m, int n, bool a_mn_major, bool b_mn_major);
void lower_tmem_lifetime(LowerCtx *c);    /* tmem_lifetime.c: alloc, relinquish, dealloc */
void lower_unswitch(LowerCtx *c);         /* unswitch.c: Unswitch/Unroll nests: hoisted predicates, fallback copy */
void lower_simplify(LowerCtx *c);         /* simplify.c: indices, extents, conditions simplified with value ranges */
/* circular_buffer.c: whether a vector copy moves 16 bytes of one dtype from a global
 * parameter (what cp.async can do), and a cp.async commit or wait node. */
bool lower_copies_16_bytes_from_global(const KNode *n);
KNode *lower_async_node(LowerCtx *c, KnKind kind, int pending);
void lower_shared_spill(LowerCtx *c);     /* shared_spill.c: a Local tensor's shared part (cf_spill_to_shared) */
void lower_local_reuse(LowerCtx *c);      /* local_reuse.c: local buffers shared by lifetime, the local limit */
void lower_smem_layout(LowerCtx *c);      /* smem_layout.c: offsets, dynamic size */
void lower_param_use(LowerCtx *c);        /* param_use.c: the parameters whose elements the kernel touches */

/* Kernel IR dump for CFUSER_DUMP (kir_print.c). */
void kir_print(StrBuf *b, const KKernel *k);
/* Kernel IR verifier run between passes when CFUSER_VERIFY=1 (kir_verify.c). */
bool kir_verify(const KKernel *k, char *err, size_t errlen);

#endif
