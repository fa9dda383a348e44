/* scheduler/sched.h: the scheduler's internal toolkit (internal header, prefix sched_).
 *
 * The tools the public scheduling calls of include/cfuser/schedule.h are built on, each
 * in its own file (the IterDomain graphs they ask, pairwise, exact, permissive and loop,
 * live below in analysis/, which lowering reads too):
 *   span_tree.c  the maximum-information spanning tree of the tensor graph from a
 *                reference tensor (nvFuser's MaxLogicalDomainInfoSpanningTree);
 *   replay.c     replaying one tensor's transforms onto an adjacent tensor;
 *   propagate.c, parallelize.c, inline.c, rfactor.c, cache.c, domain.c: the public
 *                calls built on them.
 *
 * Scratch memory: every public call makes one scratch Arena and destroys it on return,
 * so nothing but the IR the call means to create grows the fusion's arena. */
#ifndef CFUSER_SCHED_H
#define CFUSER_SCHED_H

#include "analysis/analysis.h"
#include "ir/ir.h"

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
  bool *whole; /* every tracked reference axis reached tvs[i] whole (see sched_span_forest) */
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
/* The same grown from several roots at once: ref and the nroots tensors roots (of ref's
 * rank, each standing for ref position by position: a tensor tiled as ref is), every
 * tensor reached from the best edge of any of them; from[i] is NULL for each root.
 * whole[i] says whether each tracked reference axis reached tvs[i] with its full extent
 * (or as a broadcast axis of tvs[i]): false for a tensor reached with part of them (a
 * second lookup's result, through its index or a bias broadcast) or none. */
bool sched_span_forest(Arena *scratch, Val *ref, int ref_pos, int nroots, Val *const *roots, SpanSelect sel,
                       void *ctx, SpanTree *out);

/* Replays along tree (propagate.c): each tensor from its tree parent, matching the
 * position the parent reached (at[0] = pos for the reference); at (tree->n entries)
 * receives each tensor's position. */
cf_status sched_replay_along(cf_fusion *f, Arena *a, const SpanTree *tree, int pos, const char *what, int *at);
/* cf_propagate_transforms from ref and the nroots tensors roots at once (sched_span_forest):
 * each root keeps its loop domain (scheduled as ref's, position by position) and every
 * other tensor replays its tree parent's. */
cf_status sched_propagate_from_roots(cf_fusion *f, Val *ref, int nroots, Val *const *roots);

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

/* Shared entry checks: f usable, tv a tensor of f (ir_check_tv) and pos (possibly
 * negative, counting from nloop+1) a valid loop position of tv; returns the wrapped
 * position or -1 with the error recorded. */
int sched_wrap_pos(cf_fusion *f, const char *what, cf_tv *tv, int pos);

/* circular_buffer.c: whether tile tv may be circular-buffered with `stages` stages (the
 * rule cf_circular_buffer and the lowering check); false with the violated rule in why. */
bool sched_cb_check(cf_fusion *f, Val *tv, int stages, int prefetch, char *why, size_t nwhy);

#endif
