/* analysis/analysis.h: the analyses of a fusion that the scheduler and lowering both read
 * (internal header, prefix an_), computed in one place so that neither re-derives them
 * (DESIGN.md 4a: one analysis, many readers).
 *
 *   id_graph.c        the pairwise map (what one tensor Expr says about axes) and IdMap, a
 *                     union-find over every IterDomain: "exact" (equal extent and index)
 *                     or "permissive" (a broadcast axis joins the concrete axis it meets);
 *   loop_graph.c      the loop graph: which IterDomains share one for-loop under the
 *                     compute-at positions, and the legality rules it decides alone;
 *   loop_model.c      the loop model of one lowering: the graphs above, the promoted
 *                     IterDomain of every loop, and each IterDomain's effective parallel
 *                     type (parallel_types.c), built once and handed to the passes;
 *   positional.c      the positional reading of promoted loops (indexing asks it);
 *   uniformity.c      per-thread uniformity: which launch types each tensor's values
 *                     depend on, and which its writes spell out (predicates, syncs);
 *   vector_access.c   the rule for a vector access of global memory (the schedulers ask
 *                     it before they vectorize, lowering's validate_vectorize after);
 *   broadcast_readers.c  where a broadcast axis is concretized: one class of axes, or two
 *                     that one loop cannot iterate (the pointwise and transpose rows).
 *
 * Dependencies: ir/ only. scheduler/ (inlining legality, propagation, parallelize-all-like,
 * the automatic schedulers) and lower/ (loop nests, indexing, allocation, predicates,
 * syncs) include this header; analysis/ includes neither. */
#ifndef CFUSER_ANALYSIS_H
#define CFUSER_ANALYSIS_H

#include "ir/ir.h"

/* ---- small tables keyed by Val id (id_graph.c) ------------------------------------------ */

/* A map from Vals to pointers, indexed by the dense Val id and grown on demand, so that it
 * accepts Vals created after it was made (replay creates IterDomains as it goes). Storage
 * lives in the arena given at the first put. A NULL value means "absent". */
typedef struct ValTab {
  Arena *arena;
  void **v;
  int cap;
} ValTab;
/* false only when out of memory */
bool an_tab_put(ValTab *t, const Val *k, void *value);
void *an_tab_get(const ValTab *t, const Val *k);

/* ---- the pairwise map (id_graph.c) ------------------------------------------------------- */

/* By Expr id, 1 for the tensor ops some fusion output depends on (the live ops; the only
 * ones lowering computes, so the only ones the maps, the loop graph and inlining read),
 * 0 for the rest: dead ops, transforms. malloc'd (caller frees); NULL when out of memory. */
char *an_live_exprs(cf_fusion *f);

/* True when p is a TensorView input of c's defining tensor Expr. */
bool an_is_producer_of(const Val *p, const Val *c);

/* Pairs producer p's logical axes with consumer c's root axes through c's definition:
 * elementwise ops, cast, where, reductions and permute pair the producer's i-th
 * non-reduction logical axis with the consumer's i-th root axis; broadcast skips the
 * consumer's new broadcast axes. Writes up to `cap` pairs to p_ids/c_ids (either may be
 * NULL to only count) and returns the count, or -1 when p is not a producer of c. */
int an_pairwise_map(const Val *p, const Val *c, Val **p_ids, Val **c_ids, int cap);

/* The partner of `id` (an axis of `from`) in the adjacent tensor `to` through the
 * pairwise map, whichever of the two is the producer; NULL when it has none. */
Val *an_pairwise_partner(const Val *from, const Val *to, const Val *id);

/* ---- IdMap: equivalence classes of IterDomains (id_graph.c) ------------------------------ */

/* A union-find over every IterDomain of a fusion, a snapshot taken at build time.
 * Built in two steps:
 *  1. pairwise-mapped axes of every live producer/consumer pair are joined; a broadcast
 *     axis is joined with a non-broadcast axis only when `permissive`; a join that would
 *     put two logical or root axes of one tensor in one class (a transpose added to its
 *     own input: `x^T + x`) is left out, so no tensor ever maps onto itself;
 *  2. forward propagation to a fixpoint: two splits with joined inputs, equal factors
 *     and equal inner flags join their outputs pairwise; likewise merges (inputs joined
 *     pairwise) and swizzles of the same type. When `permissive`, a merge with a
 *     broadcast input is also joined with its other input (broadcast forwarding: merging
 *     with a size-1 axis does not change which loop it is).
 * The exact map relates axes of provably equal extent and index; the permissive map
 * relates axes that may share a loop (what inlining and parallelize_all_like use; lowering
 * promotes a loop to its concrete, non-broadcast member). The permissive map may be
 * loose: through a broadcast it can relate a merge of i0 and b1 to both i0 and i0*i1. */
typedef struct IdMap IdMap;
/* NULL when out of memory (also recorded on f). */
IdMap *an_idmap_build(cf_fusion *f, bool permissive);
/* The first join the build left out because it would map a tensor onto itself: op
 * pairs axes that other ops already relate to tensor tv's axes a and b (a tensor read in
 * two orders, x^T + x). False when there was none. */
bool an_idmap_self_mapping(const IdMap *m, const Expr **op, const Val **tv, const Val **a, const Val **b);
/* Whether two IterDomains are in one class. Vals made after the build are in classes of
 * their own. */
bool an_idmap_same(const IdMap *m, const Val *a, const Val *b);
/* A representative of id's class (the Val id of one member); stable for the map's
 * lifetime, so it can key per-class tables (loop groups, parallel-dimension map). */
int an_idmap_class(const IdMap *m, const Val *id);
/* Joins the classes of a and b and re-runs forward propagation to a fixpoint. For
 * clients building a finer or coarser relation on top (e.g. lowering's loop groups). */
void an_idmap_join(IdMap *m, const Val *a, const Val *b);
void an_idmap_free(IdMap *m);

/* ---- where broadcast axes are concretized (broadcast_readers.c) ------------------------ */
/* A broadcast axis (tv's axis `axis`) that its readers, followed through elementwise ops of
 * its rank, permutes and broadcasts, concretize against two axes unrelated in the exact
 * map: first's axis first_axis and second's axis second_axis. */
typedef struct AnBroadcastConflict {
  Val *tv, *first, *second;
  int axis, first_axis, second_axis;
} AnBroadcastConflict;
/* The axis of e's operand that e's output axis oa reads, for an elementwise op (the same
 * axis), a permute or a broadcast; -1 for oa < 0 or an axis the broadcast adds. */
int an_operand_axis(const Expr *e, int oa);
/* 1 with *c filled at the first broadcast axis of f concretized against two axes
 * unrelated in f's exact map (built here, only when f has a broadcast axis), 0 when
 * there is none, -1 out of memory (scratch from a). */
int an_broadcast_conflict(Arena *a, cf_fusion *f, AnBroadcastConflict *c);
/* prefix, then "T3 is broadcast along axis 0, which T5 and T6 read against unrelated axes
 * (one loop cannot iterate both)". */
void an_broadcast_conflict_str(const AnBroadcastConflict *c, const char *prefix, char *buf, size_t size);

/* ---- the loop graph (loop_graph.c) -------------------------------------------------- */
/* Which IterDomains share one for-loop under the current compute-at positions: producer
 * loop axis j and consumer loop axis j for j < the producer's compute-at position (fusion
 * inputs never), and the outputs of one expression, closed transitively. A snapshot
 * taken at build time; IterDomains made later are groups of their own. */
typedef struct LoopGraph LoopGraph;
/* NULL when out of memory (also recorded on f). */
LoopGraph *an_loop_graph_build(cf_fusion *f);
/* A representative of id's loop group (the Val id of one member). */
int an_loop_group(const LoopGraph *g, const Val *id);
bool an_same_loop(const LoopGraph *g, const Val *a, const Val *b);
void an_loop_graph_free(LoopGraph *g);
/* Joins the loop groups of a and b (a producer inlined further, for callers that keep one
 * graph across several inlining steps). */
void an_loop_graph_join(LoopGraph *g, const Val *a, const Val *b);
/* Whether the loop groups of ids, joined into one, would run a reduction axis of some
 * tensor *s together with a loop axis of *reader, a tensor computed from s (which cannot
 * be: s is complete only after that loop). tvs: the fusion's TensorViews. */
bool an_loop_conflict(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids, Val **s, Val **reader);
/* A tensor computed from one member of the joined loop groups of ids and used (maybe
 * through others) by another, with no axis in them: it would have to run inside that loop
 * and outside it at once. NULL when there is none. */
Val *an_loop_between(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids);

/* ---- the loop model (loop_model.c, parallel_types.c) ------------------------------------ */

/* What one lowering (or a scheduler that asks what lowering will do) knows about loops:
 * built once by an_loop_model_build and read by every pass through the helpers below.
 * Tables are indexed by Val id and cover the Vals that existed at build time. */
typedef struct LoopModel {
  cf_fusion *f;
  Val **tvs;                 /* every TensorView of f */
  int ntvs;
  IdMap *exact;              /* exact IterDomain map */
  IdMap *permissive;         /* permissive map */
  LoopGraph *loops;          /* which loop axes share one for-loop */
  Val **promoted;            /* by Val id of a loop axis: the IterDomain its loop iterates */
  cf_parallel_type *ptype;   /* by Val id: the effective parallel type of every IterDomain */
} LoopModel;

/* Builds the loop model of f in arena a (the tables; the maps are malloc'd and released
 * by an_loop_model_free). Refuses, with a message naming the tensors and axes in *error
 * (malloc'd), a schedule whose loops cannot be built: one tensor's two axes in one loop;
 * a loop over a reduction axis of s that runs a tensor computed from s; a broadcast
 * concretized to two domains in one loop; a loop whose promoted domain overlaps another
 * axis of a tensor, or is read outside it; two members of a loop group on different
 * launch types. Returns CF_OK, CF_ERR_INVALID_SCHEDULE or CF_ERR_OUT_OF_MEMORY. */
cf_status an_loop_model_build(cf_fusion *f, Arena *a, LoopModel *m, char **error);
void an_loop_model_free(LoopModel *m);
/* The IterDomain the loop of loop axis id iterates: id itself unless its loop is
 * promoted to a concrete member of its group. */
Val *an_promoted(const LoopModel *m, const Val *id);
/* The parallel type an IterDomain runs on: its own, or the one of a parallel axis it
 * shares a loop with; serial for broadcast axes and reductions over one element (unless
 * such a reduction runs in a one-iteration loop of a launch type: then that type). */
cf_parallel_type an_ptype(const LoopModel *m, const Val *id);

/* positional.c: the positional reading of promoted loops (what indexing asks; see the
 * file's header). The tensor whose IterDomain the loop of tv's axis j iterates when that
 * is not tv's own axis up to the exact map, else NULL: */
Val *an_promoting_tensor(const LoopModel *m, Val *tv, int j);
/* Whether tv's own (unpromoted) axis j stands, position for position, for axis j of ref, a
 * tensor its promoted loops iterate (then written and read at the loop's index): */
bool an_stands_for(const LoopModel *m, Val *tv, Val *ref, int j);
/* A promoting tensor of tv that its own axis j stands for, or NULL: */
Val *an_positional_ref(const LoopModel *m, Val *tv, int j);
/* The IterDomain whose positions the loop of tv's axis j runs: the promoted one, else the
 * axis of the tensor it stands for, else its own. Two tensors hold the same elements along
 * their axes in one thread only when these are exactly mapped. */
Val *an_iterated_domain(const LoopModel *m, Val *tv, int j);
/* Whether two extents are the same scalar: one Val, equal constants, or the same
 * arithmetic on the same extents. */
bool an_same_extent(const Val *a, const Val *b);

/* uniformity.c: per-thread uniformity (see the file's header). Tables by Val id of the
 * launch types (bit p for cf_parallel_type p) each tensor's values depend on (varies) and
 * the place of its last write depends on (spans). */
typedef struct Uniformity {
  unsigned *varies, *spans;
  int n;
} Uniformity;
/* false when out of memory */
bool an_uniformity_init(Uniformity *u, Arena *a, int nvals);
/* The launch types the value e computes depends on, given those its read indices use. */
unsigned an_value_varies(const LoopModel *m, const Uniformity *u, const Expr *e, unsigned reads);
/* Records a write of e's output (in program order): its value and the types its place uses. */
void an_uniformity_record(Uniformity *u, const Expr *e, unsigned value, unsigned spans);
/* Whether the place of tv's last recorded write depends on p. */
bool an_write_spans(const Uniformity *u, const Val *tv, cf_parallel_type p);

/* parallel_types.c, the second half of the build (an_loop_model_build calls it): fills
 * m->ptype from m->loops, or returns false with the refusal in *error (malloc'd). */
bool an_parallel_types(LoopModel *m, Arena *a, char **error);

/* ---- vector accesses of global memory (vector_access.c) --------------------------------- */

/* Whether tv's innermost logical axis has unit stride in memory: contiguous there, not a
 * strided input (false for a 0-d tensor). */
bool an_innermost_unit_stride(Val *tv);
/* The innermost logical axis of tv that is not a broadcast (-1: none): the one a vector
 * access walks. */
int an_innermost_axis(Val *tv);
/* The global tensors a vectorized copy tv accesses: tv itself when in global memory, then
 * the operand of its definition when in global memory; returns how many (0 to 2). */
int an_vector_globals(Val *tv, Val *globals[2]);
/* Why a vector of v elements along loop axis `id` of tv cannot access `global` (one of
 * an_vector_globals) as v adjacent elements, or NULL when it can (the file's rule). The
 * reason is a static string that names neither tensor ("the global tensor it reads is not
 * contiguous along it"); lowering prefixes the tensor and axis. */
const char *an_vector_refusal(Val *tv, const Val *id, int64_t v, Val *global);
/* The first refusal over every global tensor tv accesses, or NULL when none refuses. */
const char *an_vector_refusal_any(Val *tv, const Val *id, int64_t v);
/* Whether tv's non-broadcast logical axes lie in memory as one contiguous run in logical
 * order (no strides, no other allocation order, no reduction axis, every one contiguous):
 * the tensor may be walked as one flat axis. */
bool an_flat_contiguous(Val *tv);
/* Whether loop axis id of copy tv is the inner output of a split of tv's flat whole (its
 * non-broadcast logical axes merged in order, or the one such axis), contiguous in tv and
 * in every global tensor the copy moves: a vector along id starts at a multiple of its
 * width in each tensor's flat index, so a split that does not divide may end in a partial
 * vector (lower/vectorize.c's tail). */
bool an_vector_flat(Val *tv, const Val *id);

#endif
