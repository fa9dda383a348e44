/* scheduler/sched.h: the scheduler's internal toolkit (internal header, prefix sched_).
 *
 * Four tools, each in its own file, used by the public scheduling calls of
 * include/cfuser/schedule.h and reused by lowering:
 *   id_map.c     the pairwise map between a producer's logical axes and a consumer's root
 *                axes through one tensor Expr, and IdMap, a union-find over every
 *                IterDomain of a fusion ("exact" or "permissive");
 *   span_tree.c  the maximum-information spanning tree of the tensor graph from a
 *                reference tensor (nvFuser's MaxLogicalDomainInfoSpanningTree);
 *   replay.c     replaying one tensor's transforms onto an adjacent tensor;
 *   propagate.c, parallelize.c, inline.c: the public calls built on them.
 *
 * Scratch memory: every public call makes one scratch Arena and destroys it on return,
 * so nothing but the IR the call means to create grows the fusion's arena. */
#ifndef CFUSER_SCHED_H
#define CFUSER_SCHED_H

#include "ir/ir.h"

/* ---- small tables keyed by Val id (id_map.c) ------------------------------------------ */

/* A map from Vals to pointers, indexed by the dense Val id and grown on demand, so that it
 * accepts Vals created after it was made (replay creates IterDomains as it goes). Storage
 * lives in the arena given at the first put. A NULL value means "absent". */
typedef struct ValTab {
  Arena *arena;
  void **v;
  int cap;
} ValTab;
/* false only when out of memory */
bool sched_tab_put(ValTab *t, const Val *k, void *value);
void *sched_tab_get(const ValTab *t, const Val *k);

/* ---- the pairwise map (id_map.c) ------------------------------------------------------- */

/* True when p is a TensorView input of c's defining tensor Expr. */
bool sched_is_producer_of(const Val *p, const Val *c);

/* Pairs producer p's logical axes with consumer c's root axes through c's definition:
 * elementwise ops, cast, where, reductions and permute pair the producer's i-th
 * non-reduction logical axis with the consumer's i-th root axis; broadcast skips the
 * consumer's new broadcast axes. Writes up to `cap` pairs to p_ids/c_ids (either may be
 * NULL to only count) and returns the count, or -1 when p is not a producer of c. */
int sched_pairwise_map(const Val *p, const Val *c, Val **p_ids, Val **c_ids, int cap);

/* The partner of `id` (an axis of `from`) in the adjacent tensor `to` through the
 * pairwise map, whichever of the two is the producer; NULL when it has none. */
Val *sched_pairwise_partner(const Val *from, const Val *to, const Val *id);

/* ---- IdMap: equivalence classes of IterDomains (id_map.c) ------------------------------ */

/* A union-find over every IterDomain of a fusion, a snapshot taken at build time.
 * Built in two steps:
 *  1. pairwise-mapped axes of every producer/consumer pair are joined; a broadcast axis
 *     is joined with a non-broadcast axis only when `permissive`;
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
IdMap *sched_idmap_build(cf_fusion *f, bool permissive);
/* Whether two IterDomains are in one class. Vals made after the build are in classes of
 * their own. */
bool sched_idmap_same(const IdMap *m, const Val *a, const Val *b);
/* A representative of id's class (the Val id of one member); stable for the map's
 * lifetime, so it can key per-class tables (loop groups, parallel-dimension map). */
int sched_idmap_class(const IdMap *m, const Val *id);
/* Joins the classes of a and b and re-runs forward propagation to a fixpoint. For
 * clients building a finer or coarser relation on top (e.g. lowering's loop groups). */
void sched_idmap_join(IdMap *m, const Val *a, const Val *b);
void sched_idmap_free(IdMap *m);

/* ---- the loop graph (loop_graph.c) -------------------------------------------------- */
/* Which IterDomains share one for-loop under the current compute-at positions: producer
 * loop axis j and consumer loop axis j for j < the producer's compute-at position (fusion
 * inputs never), and the outputs of one expression, closed transitively. A snapshot
 * taken at build time; IterDomains made later are groups of their own. */
typedef struct LoopGraph LoopGraph;
/* NULL when out of memory (also recorded on f). */
LoopGraph *sched_loop_graph_build(cf_fusion *f);
/* A representative of id's loop group (the Val id of one member). */
int sched_loop_group(const LoopGraph *g, const Val *id);
bool sched_same_loop(const LoopGraph *g, const Val *a, const Val *b);
void sched_loop_graph_free(LoopGraph *g);
/* Joins the loop groups of a and b (a producer inlined further, for callers that keep one
 * graph across several inlining steps). */
void sched_loop_graph_join(LoopGraph *g, const Val *a, const Val *b);
/* Whether the loop groups of ids, joined into one, would run a reduction axis of some
 * tensor *s together with a loop axis of *reader, a tensor computed from s (which cannot
 * be: s is complete only after that loop). tvs: the fusion's TensorViews. */
bool sched_loop_conflict(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids, Val **s, Val **reader);
/* A tensor computed from one member of the joined loop groups of ids and used (maybe
 * through others) by another, with no axis in them: it would have to run inside that loop
 * and outside it at once. NULL when there is none. */
Val *sched_loop_between(const LoopGraph *g, Val **tvs, int ntvs, Val *const *ids, int nids);

/* ---- transform histories (replay.c) ----------------------------------------------------- */

/* Whether id is in tv's root or logical domain (where its transform history starts). */
bool sched_is_base_id(Val *tv, const Val *id);
/* The transform Exprs between tv's root/logical domain and the given axes, in
 * topological order (inputs before uses); allocated in `scratch`; n receives the count,
 * or -1 when out of memory. */
Expr **sched_history_to(Arena *scratch, Val *tv, Val *const *ids, int nids, int *n);
/* Whether id is, or derives from, a broadcast axis of its tensor's root/logical domain. */
bool sched_derives_from_broadcast(Val *tv, const Val *id);

/* Replays the transforms that produce src's first src_pos loop axes onto dst, a producer
 * or consumer of src, reusing any identical transform dst already has (same kind, same
 * factor and inner flag, same inputs), so that repeated replays create nothing and keep
 * allocation domains intact. dst's new loop domain: the images of src's loop axes in
 * src's order (first those left of src_pos), then dst's other axes in their previous
 * relative order; dst keeps its own transforms of axes the replay does not cover.
 * Parallel types are not copied. A replay that would change dst's axes left of its
 * compute-at or max-producer position is refused with an error naming the axis (prefix
 * `what`). *dst_pos receives how many leading dst axes are images of src's first src_pos
 * axes. */
cf_status sched_replay(cf_fusion *f, Arena *scratch, Val *src, Val *dst, int src_pos, const char *what,
                       int *dst_pos);

/* ---- the maximum-information spanning tree (span_tree.c) ------------------------------ */

/* A selector restricts the tree: called for each candidate edge from -> to
 * (to_is_producer says which way the edge goes); false excludes the edge. */
typedef bool (*SpanSelect)(void *ctx, Val *from, Val *to, bool to_is_producer);

/* Tensors in the order Prim's algorithm reached them: tvs[0] is the reference and
 * from[i] the tree parent of tvs[i] (NULL for the reference). */
typedef struct SpanTree {
  int n;
  Val **tvs;
  Val **from;
} SpanTree;

/* Grows a spanning tree from ref over producer<->consumer edges, always taking next the
 * edge that keeps the most information about ref: the information of a tensor is, for
 * each of ref's logical axes that the first ref_pos loop axes of ref derive from, its
 * mapped axis in the tensor (found through the pairwise maps along the tree path), and
 * whether that axis still carries the full extent (not a broadcast standing in for an
 * iteration axis). Edges compare by (complete axes, mapped axes); ties go to the edge
 * found first (earlier-reached tensor, producers before consumers). Allocated in
 * scratch; false when out of memory. */
bool sched_span_tree(Arena *scratch, Val *ref, int ref_pos, SpanSelect sel, void *ctx, SpanTree *out);

/* ---- checks shared by the public calls (propagate.c, inline.c) ------------------------- */

/* Checks that every tensor of the tree from ref has a loop domain that matches its tree
 * parent where they map (TransformPropagatorWithCheck): the axes that map to the parent's
 * loop axes come first, in the parent's order, with equal constant extents where no
 * broadcast is involved; and every parent axis whose logical axes all reach the tensor has
 * a counterpart. The first mismatch is recorded as an error prefixed by `what`. */
cf_status sched_check_transforms(cf_fusion *f, Val *ref, const char *what);

/* The number of leading loop axes of `to` mapped (in m) to any of the first from_pos loop
 * axes of `from` (the position of `to` matching from's position from_pos). */
int sched_matched_pos(const IdMap *m, Val *from, int from_pos, Val *to);
/* The largest legal inline position of tv (before broadcast hoisting). */
int sched_max_inline_pos(const IdMap *m, Val *tv, bool best_effort);

/* Shared entry checks: f usable and pos (possibly negative, counting from nloop+1) a
 * valid loop position of tv; returns the wrapped position or -1 with the error recorded. */
int sched_wrap_pos(cf_fusion *f, const char *what, Val *tv, int pos);

#endif
