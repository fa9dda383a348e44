/* layout/layout_internal.h: what the files of the layout module share (internal header).
 *
 * The layout module (layout/layout_*.c) implements include/cfuser/layout.h. Trees are stored
 * in preorder in fixed-size arrays (cf_tuple_tree), so every value is a plain struct:
 * no allocation, no ownership, and an operation that runs out of room fails cleanly.
 * Errors are sticky: internal functions take a cf_layout_err that is never NULL, record
 * the first failure in it and keep going without effect, so algorithms read straight
 * through and each public entry point checks the status once, at the end. Integers carry
 * their staticness, and the arithmetic below applies CuTe's rules for it, which is what
 * makes every printed result match CuTe's. */
#ifndef CFUSER_LAYOUT_INTERNAL_H
#define CFUSER_LAYOUT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cfuser/layout.h"

typedef cf_tuple_int LayInt;

#define LAY_MAX_DEPTH 32

/* ---- errors ------------------------------------------------------------------------ */

/* The error a public entry point works with: err itself, or local when err is NULL. The
 * status is reset to CF_OK. */
cf_layout_err *lay_err_begin(cf_layout_err *err, cf_layout_err *local);
/* Records the first failure only. */
void lay_fail(cf_layout_err *e, cf_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes a failure's message with "what: " unless it already names `what`: the context
 * of an error raised by an operation another one is built from. */
void lay_err_context(cf_layout_err *e, const char *what);
static inline bool lay_ok(const cf_layout_err *e) { return e->status == CF_OK; }
/* Copies tree into out when e is OK (a layout result is first checked: positive shapes,
 * size and cosize representable); returns e's status. */
cf_status lay_finish_layout(cf_layout_err *e, const cf_tuple_tree *tree, cf_layout *out);
cf_status lay_finish_tuple(cf_layout_err *e, const cf_tuple_tree *tree, cf_int_tuple *out);
/* Fails with "<what>: expected a layout, got the tiler ..." when l is a tiler. */
bool lay_require_layout(const cf_tuple_tree *l, const char *what, cf_layout_err *e);

/* ---- integers, with CuTe's staticness rules ---------------------------------------- */

static inline LayInt lay_s(int64_t v) { return (LayInt){v, true}; }
static inline LayInt lay_d(int64_t v) { return (LayInt){v, false}; }
static inline bool lay_is_const(LayInt a, int64_t v) { return a.is_static && a.value == v; }
/* Static when both are; a static 0 factor makes a product static 0, a static 0 dividend
 * a static 0 quotient and remainder, a static +-1 divisor a static 0 remainder. */
LayInt lay_add(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_sub(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_mul(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_div(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_mod(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_min(LayInt a, LayInt b);
LayInt lay_ceil_div(LayInt a, LayInt b, cf_layout_err *e);
LayInt lay_abs(LayInt a, cf_layout_err *e);
LayInt lay_signum(LayInt a);

/* ---- trees ------------------------------------------------------------------------- */

static inline bool lay_is_leaf(const cf_tuple_tree *t, int i) { return t->node[i].arity < 0; }
static inline LayInt lay_leaf(const cf_tuple_tree *t, int i, int which)
{
  return (LayInt){t->node[i].v[which],
                 (t->node[i].flags & (which ? CF_TUPLE_NODE_STATIC1 : CF_TUPLE_NODE_STATIC0)) != 0};
}
static inline bool lay_is_tiler_node(const cf_tuple_tree *t, int i)
{
  return (t->node[i].flags & (CF_TUPLE_NODE_TILER | CF_TUPLE_NODE_SHAPE | CF_TUPLE_NODE_UNDERSCORE)) != 0;
}
/* A `_` of a tiler or a coordinate: CuTe's Underscore, "this mode, whole". */
static inline bool lay_is_underscore(const cf_tuple_tree *t, int i)
{
  return (t->node[i].flags & CF_TUPLE_NODE_UNDERSCORE) != 0;
}
/* Rank of node i (1 for a leaf). */
int lay_rank_at(const cf_tuple_tree *t, int i);
/* Index of child k of node i; child 0 of a leaf is the leaf itself (CuTe's get<0> of an
 * integer); -1 when k is out of range. */
int lay_child(const cf_tuple_tree *t, int i, int k);
int lay_depth_at(const cf_tuple_tree *t, int i);
/* Product of the leaves' v[which] (size of a shape); sum of (s-1)*|d| + 1 (cosize). */
LayInt lay_product(const cf_tuple_tree *t, int i, int which, cf_layout_err *e);
LayInt lay_cosize_at(const cf_tuple_tree *t, int i, cf_layout_err *e);
/* Same shape of tree (leaves, tuples, arities) below nodes ia and ib. */
bool lay_congruent(const cf_tuple_tree *a, int ia, const cf_tuple_tree *b, int ib);

/* Builds a tree in preorder: open/close tuples, add leaves or copies of subtrees. */
typedef struct LayBuild {
  cf_tuple_tree *t;
  int open[LAY_MAX_DEPTH];
  int depth;
  cf_layout_err *e;
} LayBuild;
void lay_build_init(LayBuild *b, cf_tuple_tree *t, cf_layout_err *e);
void lay_build_open(LayBuild *b, uint8_t flags);
void lay_build_close(LayBuild *b);
void lay_build_leaf(LayBuild *b, LayInt s, LayInt d, uint8_t flags);
/* An IntTuple leaf: v[1] stays a dynamic 0, so that equal tuples compare equal. */
void lay_build_int(LayBuild *b, LayInt v, uint8_t flags);
void lay_build_copy(LayBuild *b, const cf_tuple_tree *src, int i);
/* Adds the children of node i (node i itself if it is a leaf) as separate elements. */
void lay_build_splice(LayBuild *b, const cf_tuple_tree *src, int i);

/* A flat list of modes: what coalesce, complement and the inverses work on. tuple false
 * means the single mode is an integral layout s:d rather than the tuple (s):(d). */
typedef struct LayFlat {
  int n;
  bool tuple;
  LayInt s[CF_LAYOUT_MAX_NODES], d[CF_LAYOUT_MAX_NODES];
} LayFlat;
void lay_flat_init(LayFlat *f);
void lay_flat_push(LayFlat *f, LayInt s, LayInt d, cf_layout_err *e);
void lay_flat_remove(LayFlat *f, int k);
/* The leaves of subtree i in order; tuple is false when i is a leaf. */
void lay_flat_of(const cf_tuple_tree *t, int i, LayFlat *f, cf_layout_err *e);
/* Adds a flat list as one element: s:d when !tuple, else (s0,...):(d0,...). */
void lay_build_flat(LayBuild *b, const LayFlat *f);
void lay_flat_to_tree(const LayFlat *f, cf_tuple_tree *out, cf_layout_err *e);

/* ---- shared layout algorithms (layout/layout_core.c, layout/layout_algebra.c) --------------- */

/* Fills the strides of a tree whose leaves hold shapes (v[0]) with compact strides
 * starting at `current` (CuTe's compact_major); returns the product reached. */
LayInt lay_compact(cf_tuple_tree *t, cf_layout_major major, LayInt current,
                        cf_layout_err *e);
/* The layout of congruent shape and stride IntTuple trees. */
void lay_zip(const cf_tuple_tree *shape, const cf_tuple_tree *stride, cf_tuple_tree *out);
/* make_layout(l0, l1, ...) of the subtrees, and the common "pad to rank r with _1:_0". */
void lay_concat2(const cf_tuple_tree *a, const cf_tuple_tree *b, cf_tuple_tree *out,
                       cf_layout_err *e);
/* A shape as a tiler: tuples become by-mode tiler nodes, integers n the leaf n:_1. */
void lay_build_shape_tiler(LayBuild *b, const cf_tuple_tree *shape, int i);
void lay_append_to_rank(const cf_tuple_tree *l, int r, cf_tuple_tree *out,
                              cf_layout_err *e);
/* Slicing of a layout tree by a coordinate tree; see cf_layout_slice. */
void lay_slice_tree(const cf_tuple_tree *l, const cf_tuple_tree *c, cf_tuple_tree *out,
                          cf_layout_err *e);
LayInt lay_crd2idx_at(const cf_tuple_tree *c, int ci, const cf_tuple_tree *l, int li,
                           cf_layout_err *e);
void lay_coalesce_tree(const cf_tuple_tree *l, cf_tuple_tree *out, cf_layout_err *e);
void lay_composition_tree(const cf_tuple_tree *a, const cf_tuple_tree *b,
                                cf_tuple_tree *out, cf_layout_err *e);
void lay_complement_tree(const cf_tuple_tree *a, const cf_tuple_tree *cotarget,
                               cf_tuple_tree *out, cf_layout_err *e);
/* A tiler leaf written as a bare integer n becomes make_layout(n) in divides and
 * products (n:_1, or _1:_0 for a static 1) but n:_1 in composition, as in CuTe. */
void lay_tiler_leaf(const cf_tuple_tree *t, int i, bool for_composition,
                          cf_tuple_tree *out, cf_layout_err *e);

/* Parsing (layout/layout_parse.c): kind selects what the text may be. */
typedef enum LayParseKind { LAY_PARSE_TUPLE, LAY_PARSE_LAYOUT, LAY_PARSE_TILER } LayParseKind;
void lay_parse(const char *text, LayParseKind kind, cf_tuple_tree *out, cf_layout_err *e);

/* Printing (layout/layout_print.c): appends the text of node i to a bounded buffer. */
typedef struct LayText {
  char *buf;
  size_t cap, len;
} LayText;
void lay_text_printf(LayText *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lay_print_tuple(LayText *x, const cf_tuple_tree *t, int i, int which);
void lay_print_layout(LayText *x, const cf_tuple_tree *t, int i);

#endif
