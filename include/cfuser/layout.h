/* cfuser/layout.h: CuTe's layout algebra and tensors, in C.
 *
 * A *layout* is a function from coordinates to indices, written `Shape:Stride`, where Shape
 * and Stride are congruent *IntTuples* (an integer, or a tuple of IntTuples). Every
 * integer is either static (known when the program is written, printed `_4`) or dynamic
 * (printed `4`), and every operation keeps a result static exactly where CuTe keeps it
 * static, so results print as CuTe prints them: `(_4,(_3,_6)):(_1,(_4,_12))`.
 *
 * Values, not handles. cf_int_tuple and cf_layout are plain structs of fixed capacity
 * (CF_LAYOUT_MAX_NODES tree nodes, far more than any real layout needs): they live on the
 * stack or inside other structs, are copied by assignment, and are never freed. Outputs
 * may alias inputs. The only allocation in this header is an owning cf_ctensor's array.
 *
 * Errors. A function that can fail returns a cf_status and takes a last `cf_layout_err *`,
 * which may be NULL; on failure the struct receives the status and a message such as
 * `composition: stride divisibility condition violated: stride 3 does not divide
 * shape 4 (and is not smaller)`, and the output argument is left unchanged. Nothing here
 * aborts or exits.
 *
 * Tilers. A tiler (CuTe's `Tile`) is a cf_layout whose top tuple nodes are marked
 * "by-mode": `<3:4,(2,4):(1,8)>` applies 3:4 to mode 0 and (2,4):(1,8) to mode 1 of the
 * layout it is used with. A shape used as a tiler, `(4,8)`, means `<4,8>`: by-mode, each
 * integer n standing for the layout n:_1. An element may be `_` (CuTe's Underscore,
 * cf_layout_underscore): that mode is kept whole, so logical_divide(A, <_,4:1>) divides
 * only mode 1 and composition(A, <_2:_1,_>) leaves mode 1 of A as it is. Every function
 * that takes a tiler also takes a plain layout. Tilers print with angle brackets
 * (`<_3:_4,_8:_2>`), the notation of CuTe's documentation; CuTe's own print() shows
 * `(_3:_4,_8:_2)`, and that form is accepted too wherever a tiler is expected.
 *
 * Preconditions. Where CuTe only asserts a precondition at compile time (static values)
 * or not at all, so that its post-conditions fail silently on bad input (composition's
 * stride and shape divisibility, left_inverse's, complement's injectivity), cfuser checks
 * it always and refuses the input with a message naming the condition, e.g.
 * `composition: stride divisibility condition violated: ...`: a result is either CuTe's
 * or an error, never a layout that breaks CuTe's stated laws. */
#ifndef CFUSER_LAYOUT_H
#define CFUSER_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- values ------------------------------------------------------------------------ */

/* Most nodes (integers and tuples) one IntTuple or layout may hold. */
#define CF_LAYOUT_MAX_NODES 128
/* A buffer of this many bytes always holds a printed IntTuple, layout or tensor. */
#define CF_LAYOUT_TEXT_MAX 8192

/* An integer of an IntTuple: its value and whether it is static (CuTe's Int<N>). */
typedef struct cf_tuple_int {
  int64_t value;
  bool is_static;
} cf_tuple_int;

/* Node flags (cf_tuple_node.flags). */
enum {
  CF_TUPLE_NODE_STATIC0 = 1,    /* leaf: v[0] (the integer, or the shape) is static */
  CF_TUPLE_NODE_STATIC1 = 2,    /* leaf: v[1] (the stride) is static */
  CF_TUPLE_NODE_UNDERSCORE = 4, /* leaf of a coordinate: CuTe's `_` (slice this mode) */
  CF_TUPLE_NODE_TILER = 8,      /* tuple of a tiler: applied mode by mode */
  CF_TUPLE_NODE_SHAPE = 16      /* leaf of a tiler written as a bare integer n (n:_1) */
};

/* One node of a tree stored in preorder. Internal: use the functions below. */
typedef struct cf_tuple_node {
  int64_t v[2];   /* leaf payload: integer or shape, and stride (layouts only) */
  int16_t arity;  /* -1 for a leaf (an integer), else the number of children */
  uint16_t span;  /* number of nodes in this subtree, itself included */
  uint8_t flags;  /* CF_TUPLE_NODE_* */
} cf_tuple_node;

typedef struct cf_tuple_tree {
  uint16_t count;
  cf_tuple_node node[CF_LAYOUT_MAX_NODES];
} cf_tuple_tree;

/* An IntTuple: a shape, a stride, a coordinate (which may contain `_`) or a profile. */
typedef struct cf_int_tuple {
  cf_tuple_tree tree;
} cf_int_tuple;

/* A layout Shape:Stride, or a tiler (see above). */
typedef struct cf_layout {
  cf_tuple_tree tree;
} cf_layout;

/* The error of a failed call: its status and a message. */
typedef struct cf_layout_err {
  cf_status status;
  char message[256];
} cf_layout_err;

/* ---- integers and IntTuples -------------------------------------------------------- */

/* A static integer (printed _v) and a dynamic one (printed v). */
CF_API cf_tuple_int cf_tuple_static(int64_t v);
CF_API cf_tuple_int cf_tuple_dynamic(int64_t v);

/* The IntTuple made of one integer. */
CF_API cf_int_tuple cf_tuple_from_int(cf_tuple_int v);
/* The coordinate `_` (CuTe's Underscore): keeps a mode when slicing. */
CF_API cf_int_tuple cf_tuple_underscore(void);
/* The tuple (elems[0], ..., elems[n-1]); n may be 0 (the empty tuple `()`). */
CF_API cf_status cf_tuple_make(const cf_int_tuple *elems, int n, cf_int_tuple *out,
                               cf_layout_err *err);
/* Parses CuTe notation: `_4`, `4`, `-2`, `(_4,(3,_6))`, `()`, and `_` in coordinates.
 * Errors name the offset: `expected ',' or ')' at offset 4 in "(4,8"`. */
CF_API cf_status cf_tuple_parse(const char *text, cf_int_tuple *out, cf_layout_err *err);

/* Whether t is a single integer (not a tuple), and that integer (value 0 for a tuple). */
CF_API bool cf_tuple_is_int(const cf_int_tuple *t);
CF_API cf_tuple_int cf_tuple_value(const cf_int_tuple *t);
/* Rank: number of top-level elements (1 for an integer). Depth: 0 for an integer, 1 for a
 * tuple of integers, and so on. */
CF_API int cf_tuple_rank(const cf_int_tuple *t);
CF_API int cf_tuple_depth(const cf_int_tuple *t);
/* The element at an index path: get<path[0],path[1],...>(t); get<0> of an integer is the
 * integer itself, as in CuTe. npath may be 0 (t itself). */
CF_API cf_status cf_tuple_get(const cf_int_tuple *t, const int *path, int npath,
                              cf_int_tuple *out, cf_layout_err *err);
/* The product of all integers (static when CuTe's is); fails on overflow or on `_`. */
CF_API cf_status cf_tuple_size(const cf_int_tuple *t, cf_tuple_int *out, cf_layout_err *err);
/* Same tree, values and staticness. */
CF_API bool cf_tuple_equal(const cf_int_tuple *a, const cf_int_tuple *b);
/* CuTe's congruent (same profile) and compatible (same size, every coordinate of a is
 * a coordinate of b: 24 is compatible with (4,6), (24) is not compatible with 24). */
CF_API bool cf_tuple_congruent(const cf_int_tuple *a, const cf_int_tuple *b);
CF_API bool cf_tuple_compatible(const cf_int_tuple *a, const cf_int_tuple *b);
/* The colexicographic index of a coordinate within a shape (CuTe's crd2idx(c, s)), and
 * back: the natural coordinate of an index (CuTe's idx2crd(i, s)). */
CF_API cf_status cf_tuple_crd2idx(const cf_int_tuple *coord, const cf_int_tuple *shape,
                                  cf_tuple_int *out, cf_layout_err *err);
CF_API cf_status cf_tuple_idx2crd(cf_tuple_int idx, const cf_int_tuple *shape,
                                  cf_int_tuple *out, cf_layout_err *err);
/* idx2crd of a tuple index: mode by mode, idx2crd((3,5), (4,(2,4))) is (3,(1,2)); an
 * integer index is the function above. */
CF_API cf_status cf_tuple_idx2crd_tuple(const cf_int_tuple *idx, const cf_int_tuple *shape,
                                        cf_int_tuple *out, cf_layout_err *err);
/* Prints in CuTe notation, like snprintf: returns the length of the whole text, writes at
 * most n bytes (NUL included). */
CF_API int cf_tuple_snprint(char *buf, size_t n, const cf_int_tuple *t);

/* ---- building layouts -------------------------------------------------------------- */

typedef enum cf_layout_major {
  CF_LAYOUT_LEFT, /* CuTe's LayoutLeft, the default: generalized column-major */
  CF_LAYOUT_RIGHT /* CuTe's LayoutRight: generalized row-major */
} cf_layout_major;

/* make_layout(shape, stride): the two must be congruent; shapes must be >= 1. */
CF_API cf_status cf_layout_make(const cf_int_tuple *shape, const cf_int_tuple *stride,
                                cf_layout *out, cf_layout_err *err);
/* make_layout(shape) and make_layout(shape, LayoutRight{}): compact strides, the
 * exclusive prefix product of the shape (a static 1 gets stride _0, as in CuTe). */
CF_API cf_status cf_layout_from_shape(const cf_int_tuple *shape, cf_layout_major major,
                                      cf_layout *out, cf_layout_err *err);
/* Concatenation, make_layout(l0, l1, ...): the layout of layouts (l0,...):(...).
 * n == 1 wraps: make_layout(3:1) is (3):(1). */
CF_API cf_status cf_layout_concat(const cf_layout *elems, int n, cf_layout *out,
                                  cf_layout_err *err);
/* Parses `S:D` (`(_4,8):(_1,_4)`); a bare shape `S` is make_layout(S). Tilers are
 * refused: see cf_layout_parse_tiler. */
CF_API cf_status cf_layout_parse(const char *text, cf_layout *out, cf_layout_err *err);
/* Parses a tiler: `<L0,L1,...>` whose elements are layouts, shapes or tilers; a shape
 * `(4,8)` (by-mode `<4,8>`); or a layout. */
CF_API cf_status cf_layout_parse_tiler(const char *text, cf_layout *out, cf_layout_err *err);
/* The tiler <elems[0], ..., elems[n-1]> (CuTe's make_tile), and a shape as a tiler. */
CF_API cf_status cf_layout_make_tiler(const cf_layout *elems, int n, cf_layout *out,
                                      cf_layout_err *err);
CF_API cf_status cf_layout_tiler_from_shape(const cf_int_tuple *shape, cf_layout *out,
                                            cf_layout_err *err);
/* The tiler element `_`: keeps its mode whole (an element of cf_layout_make_tiler, or a
 * tiler by itself: composition(A, _) is A). */
CF_API cf_layout cf_layout_underscore(void);
/* make_layout_like: same shape, compact strides in the order of l's strides (static-0
 * strides stay _0); used by make_tensor_like. */
CF_API cf_status cf_layout_make_like(const cf_layout *l, cf_layout *out, cf_layout_err *err);

/* ---- inspecting layouts ------------------------------------------------------------ */

CF_API bool cf_layout_is_tiler(const cf_layout *l);
/* Every shape and stride static (what an owning tensor needs). */
CF_API bool cf_layout_is_static(const cf_layout *l);
CF_API int cf_layout_rank(const cf_layout *l);
CF_API int cf_layout_depth(const cf_layout *l);
/* size: the number of coordinates; cosize: A(size-1)+1 for the usual layouts, precisely
 * 1 + sum((s-1)*|d|). Both are static when CuTe's are. */
CF_API cf_tuple_int cf_layout_size(const cf_layout *l);
CF_API cf_tuple_int cf_layout_cosize(const cf_layout *l);
CF_API void cf_layout_shape(const cf_layout *l, cf_int_tuple *out);
CF_API void cf_layout_stride(const cf_layout *l, cf_int_tuple *out);
/* Same tree, values, staticness and tiler marks. */
CF_API bool cf_layout_equal(const cf_layout *a, const cf_layout *b);
/* Prints `(_4,8):(_1,_4)`, or a tiler `<_3:_4,_8:_2>`; snprintf conventions. */
CF_API int cf_layout_snprint(char *buf, size_t n, const cf_layout *l);

/* ---- sublayouts -------------------------------------------------------------------- */

/* layout<path...>(l): the sublayout at an index path (CuTe's layout<1,0>(a)). */
CF_API cf_status cf_layout_get(const cf_layout *l, const int *path, int npath, cf_layout *out,
                               cf_layout_err *err);
/* select<idx...>(l): the listed top-level modes, in that order (always a tuple). */
CF_API cf_status cf_layout_select(const cf_layout *l, const int *idx, int n, cf_layout *out,
                                  cf_layout_err *err);
/* take<b,e>(l): modes [b,e), b < e <= rank. */
CF_API cf_status cf_layout_take(const cf_layout *l, int b, int e, cf_layout *out,
                                cf_layout_err *err);
/* group<b,e>(l): modes [b,e) become one mode; b <= e <= rank (b == e changes nothing). */
CF_API cf_status cf_layout_group(const cf_layout *l, int b, int e, cf_layout *out,
                                 cf_layout_err *err);
/* flatten(l): depth at most 1, same function. */
CF_API cf_status cf_layout_flatten(const cf_layout *l, cf_layout *out, cf_layout_err *err);
/* append(l, x), prepend(l, x): x becomes the last (first) mode; an integral l counts as
 * the rank-1 tuple of itself (append(4:1, 2:4) is (4,2):(1,4)); x NULL is _1:_0. */
CF_API cf_status cf_layout_append(const cf_layout *l, const cf_layout *x, cf_layout *out,
                                  cf_layout_err *err);
CF_API cf_status cf_layout_prepend(const cf_layout *l, const cf_layout *x, cf_layout *out,
                                   cf_layout_err *err);
/* replace<n>(l, x): mode n becomes x, 0 <= n < rank (replace<0> of an integral l is x). */
CF_API cf_status cf_layout_replace(const cf_layout *l, int n, const cf_layout *x, cf_layout *out,
                                   cf_layout_err *err);

/* ---- coordinates ------------------------------------------------------------------- */

/* The index of a coordinate, CuTe's crd2idx: an integer coordinate is split across a
 * tuple mode colexicographically, a tuple coordinate goes mode by mode, and the two mix
 * (`(2,7)` into `(3,(2,4))`); `_` counts as 0. */
CF_API cf_status cf_layout_crd2idx(const cf_layout *l, const cf_int_tuple *coord,
                                   cf_tuple_int *out, cf_layout_err *err);
/* l(i) for a 1-D coordinate i (any integer; past size-1 the last mode keeps counting). */
CF_API cf_status cf_layout_eval(const cf_layout *l, int64_t i, int64_t *out,
                                cf_layout_err *err);
/* The natural coordinate of index idx, CuTe's idx2crd(idx, shape, stride): leaf by leaf
 * (idx / d) % s; exact only for compact layouts, as in CuTe. */
CF_API cf_status cf_layout_idx2crd(const cf_layout *l, int64_t idx, cf_int_tuple *out,
                                   cf_layout_err *err);
/* The same with a tuple index (CuTe's idx2crd(idx, shape, stride) for a tuple idx): mode
 * by mode, each integer of idx into the matching mode of l. */
CF_API cf_status cf_layout_idx2crd_tuple(const cf_layout *l, const cf_int_tuple *idx,
                                         cf_int_tuple *out, cf_layout_err *err);
/* Slicing with `_`: the modes under `_` make the new layout, the others are fixed, and
 * *offset (may be NULL) receives the index of the coordinate with `_` read as 0. */
CF_API cf_status cf_layout_slice(const cf_layout *l, const cf_int_tuple *coord, cf_layout *out,
                                 int64_t *offset, cf_layout_err *err);

/* ---- the algebra ------------------------------------------------------------------- */

/* coalesce(l): fewest modes, same function on [0, size). */
CF_API cf_status cf_layout_coalesce(const cf_layout *l, cf_layout *out, cf_layout_err *err);
/* coalesce(l, profile): coalesce at the terminals of profile, e.g. (1,1) by mode. */
CF_API cf_status cf_layout_coalesce_by(const cf_layout *l, const cf_int_tuple *profile,
                                       cf_layout *out, cf_layout_err *err);
/* filter(l): coalesce after the modes of static stride 0 become size _1, i.e. without the
 * stride-0 and size-1 modes; same image as l. filter_by: at the terminals of profile. */
CF_API cf_status cf_layout_filter(const cf_layout *l, cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_filter_by(const cf_layout *l, const cf_int_tuple *profile,
                                     cf_layout *out, cf_layout_err *err);
/* composition(a, b) = a o b: out(c) = a(b(c)) for every coordinate c of b. b may be a
 * tiler, applied by mode (modes of a past the tiler's rank are dropped, as in CuTe). */
CF_API cf_status cf_layout_composition(const cf_layout *a, const cf_layout *b, cf_layout *out,
                                       cf_layout_err *err);
/* complement(a, cotarget): the ordered layout of what a does not reach, up to
 * size(cotarget); cotarget NULL means cosize(a). */
CF_API cf_status cf_layout_complement(const cf_layout *a, const cf_int_tuple *cotarget,
                                      cf_layout *out, cf_layout_err *err);
/* right_inverse(a): a(out(i)) == i for i < size(out) (dynamic strides are skipped).
 * left_inverse(a): out(a(i)) == i when a is injective; needs static strides. */
CF_API cf_status cf_layout_right_inverse(const cf_layout *a, cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_left_inverse(const cf_layout *a, cf_layout *out, cf_layout_err *err);

/* Divides, a / t = a o (t, complement(t, size(a))), mode by mode for a tiler:
 *   logical_divide ((TileM,RestM),(TileN,RestN),L,...)
 *   zipped_divide  ((TileM,TileN),(RestM,RestN,L,...))
 *   tiled_divide   ((TileM,TileN),RestM,RestN,L,...)
 *   flat_divide    (TileM,TileN,RestM,RestN,L,...) */
CF_API cf_status cf_layout_logical_divide(const cf_layout *a, const cf_layout *tiler,
                                          cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_zipped_divide(const cf_layout *a, const cf_layout *tiler,
                                         cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_tiled_divide(const cf_layout *a, const cf_layout *tiler,
                                        cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_flat_divide(const cf_layout *a, const cf_layout *tiler,
                                       cf_layout *out, cf_layout_err *err);
/* Products, a x b = (a, complement(a, size(a)*cosize(b)) o b), mode by mode for a tiler,
 * and rearranged like the divides: ((M,TileM),...), ((M,N),(TileM,TileN,...)), ... */
CF_API cf_status cf_layout_logical_product(const cf_layout *a, const cf_layout *tiler,
                                           cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_zipped_product(const cf_layout *a, const cf_layout *tiler,
                                          cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_tiled_product(const cf_layout *a, const cf_layout *tiler,
                                         cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_flat_product(const cf_layout *a, const cf_layout *tiler,
                                        cf_layout *out, cf_layout_err *err);
/* Rank-sensitive products of two layouts: mode k of the result is (a_k, b'_k) for
 * blocked_product (a's blocks laid out by b) and (b'_k, a_k) for raked_product (a's
 * elements interleaved across the blocks). */
CF_API cf_status cf_layout_blocked_product(const cf_layout *a, const cf_layout *b,
                                           cf_layout *out, cf_layout_err *err);
CF_API cf_status cf_layout_raked_product(const cf_layout *a, const cf_layout *b,
                                         cf_layout *out, cf_layout_err *err);

/* The binary operations by name, for tools and tables. */
typedef enum cf_layout_op {
  CF_LAYOUT_OP_COMPOSITION,
  CF_LAYOUT_OP_LOGICAL_DIVIDE,
  CF_LAYOUT_OP_ZIPPED_DIVIDE,
  CF_LAYOUT_OP_TILED_DIVIDE,
  CF_LAYOUT_OP_FLAT_DIVIDE,
  CF_LAYOUT_OP_LOGICAL_PRODUCT,
  CF_LAYOUT_OP_ZIPPED_PRODUCT,
  CF_LAYOUT_OP_TILED_PRODUCT,
  CF_LAYOUT_OP_FLAT_PRODUCT,
  CF_LAYOUT_OP_BLOCKED_PRODUCT,
  CF_LAYOUT_OP_RAKED_PRODUCT,
  CF_LAYOUT_OP_COUNT
} cf_layout_op;

/* "composition", "logical_divide", ...; NULL for a bad op. */
CF_API const char *cf_layout_op_name(cf_layout_op op);
/* The op of a name; false if there is none. */
CF_API bool cf_layout_op_from_name(const char *name, cf_layout_op *op);
/* Whether op's second operand is a tiler (composition, divides, logical/zipped/tiled/flat
 * products) rather than a layout (blocked and raked products). */
CF_API bool cf_layout_op_takes_tiler(cf_layout_op op);
/* Applies op to (a, b). */
CF_API cf_status cf_layout_apply(cf_layout_op op, const cf_layout *a, const cf_layout *b,
                                 cf_layout *out, cf_layout_err *err);

/* ---- pictures ---------------------------------------------------------------------- */

/* SVG pictures, as CuTe's print_layout/print_latex draw them, with snprintf's contract:
 * up to n bytes (NUL included) go to buf, and *len (may be NULL) receives the length of
 * the whole picture, so a first call with n == 0 sizes the buffer.
 * cf_layout_svg: the grid of a rank-2 layout (rank 1: one column), cell (m,n) showing
 * l(m,n), colored by index. cf_layout_svg_tv: a thread-value layout (thread, value) ->
 * index drawn over the tile shape (M,N): the cell of index i (row i % M, column i / M)
 * shows its thread and value, colored by thread; an index outside the tile is an error.
 * At most 4096 cells. */
CF_API cf_status cf_layout_svg(const cf_layout *l, char *buf, size_t n, size_t *len,
                               cf_layout_err *err);
CF_API cf_status cf_layout_svg_tv(const cf_layout *tv, const cf_int_tuple *tile, char *buf,
                                  size_t n, size_t *len, cf_layout_err *err);

/* ---- tensors ----------------------------------------------------------------------- */

/* The memory a tensor's pointer is tagged with; only printing depends on it. */
typedef enum cf_ctensor_space {
  CF_CTENSOR_PTR,  /* untagged: ptr[32b](0x...) */
  CF_CTENSOR_GMEM, /* gmem_ptr[32b](0x...) */
  CF_CTENSOR_SMEM  /* smem_ptr[32b](0x...) */
} cf_ctensor_space;

/* A CuTe tensor: a pointer and a layout; element c is at data + layout(c) * elem_bytes.
 * A non-owning tensor only borrows data. An owning one (cf_ctensor_make_owning) holds a
 * zeroed array of cosize elements that cf_ctensor_destroy frees; tensors sliced or tiled
 * from it borrow that array. */
typedef struct cf_ctensor {
  void *data;
  size_t elem_bytes;
  cf_ctensor_space space;
  bool owning;
  cf_layout layout;
} cf_ctensor;

/* make_tensor(ptr, layout): non-owning. */
CF_API cf_status cf_ctensor_make(void *data, size_t elem_bytes, cf_ctensor_space space,
                                 const cf_layout *layout, cf_ctensor *out, cf_layout_err *err);
/* make_tensor<T>(layout): owning; the layout must be static with non-negative strides. */
CF_API cf_status cf_ctensor_make_owning(size_t elem_bytes, const cf_layout *layout,
                                        cf_ctensor *out, cf_layout_err *err);
/* make_tensor_like(t): an owning tensor shaped like t, compact, strides ordered like t's. */
CF_API cf_status cf_ctensor_make_like(const cf_ctensor *t, cf_ctensor *out, cf_layout_err *err);
/* Frees an owning tensor's array (nothing for a non-owning one); t becomes empty. */
CF_API void cf_ctensor_destroy(cf_ctensor *t);

/* The address of the element at a coordinate (natural, 1-D or mixed). */
CF_API cf_status cf_ctensor_at(const cf_ctensor *t, const cf_int_tuple *coord, void **elem,
                               cf_layout_err *err);
/* The address of the element at 1-D coordinate i. */
CF_API cf_status cf_ctensor_at_index(const cf_ctensor *t, int64_t i, void **elem,
                                     cf_layout_err *err);
/* Slicing with `_`: the pointer moves by the offset of the coordinate, the `_` modes
 * make the layout. The result borrows t's data. */
CF_API cf_status cf_ctensor_slice(const cf_ctensor *t, const cf_int_tuple *coord,
                                  cf_ctensor *out, cf_layout_err *err);
/* composition or a divide applied to the layout (CuTe has no products of tensors). */
CF_API cf_status cf_ctensor_tile(const cf_ctensor *t, cf_layout_op op, const cf_layout *tiler,
                                 cf_ctensor *out, cf_layout_err *err);
/* inner_partition (local_tile): zipped_divide by the tiler, then keep the tile at coord
 * of the rest mode. A tuple coord shorter than the rest mode keeps the trailing modes. */
CF_API cf_status cf_ctensor_inner_partition(const cf_ctensor *t, const cf_layout *tiler,
                                            const cf_int_tuple *coord, cf_ctensor *out,
                                            cf_layout_err *err);
CF_API cf_status cf_ctensor_local_tile(const cf_ctensor *t, const cf_layout *tiler,
                                       const cf_int_tuple *coord, cf_ctensor *out,
                                       cf_layout_err *err);
/* outer_partition: zipped_divide by the tiler, then fix coord within the tile mode,
 * keeping the rest mode: what one of the tile's agents owns. */
CF_API cf_status cf_ctensor_outer_partition(const cf_ctensor *t, const cf_layout *tiler,
                                            const cf_int_tuple *coord, cf_ctensor *out,
                                            cf_layout_err *err);
/* local_partition(t, tile, index): outer_partition by the mode sizes of the layout tile
 * at the flat coordinate of index in tile (thread index -> its elements). */
CF_API cf_status cf_ctensor_local_partition(const cf_ctensor *t, const cf_layout *tile,
                                            int64_t index, cf_ctensor *out, cf_layout_err *err);
/* Thread-value partitioning: composition(t, tv) sliced at (thread, _). */
CF_API cf_status cf_ctensor_tv_partition(const cf_ctensor *t, const cf_layout *tv,
                                         int64_t thread, cf_ctensor *out, cf_layout_err *err);
/* Prints `ptr[32b](0x7ff...) o (_4,_8):(_1,_4)` as CuTe does; snprintf conventions. */
CF_API int cf_ctensor_snprint(char *buf, size_t n, const cf_ctensor *t);

/* ---- swizzles ------------------------------------------------------------------------ */

/* CuTe's Swizzle<B, M, S> (printed `Sw<B,M,S>`): offset o -> o ^ ((o & yyy) >> S) with yyy
 * = ((1 << B) - 1) << (M + S), the bits [M + S, M + S + B) XORed into [M, M + B). Only
 * S >= B (a bijection, its own inverse). */
typedef struct cf_swizzle {
  int bits, base, shift; /* B, M, S */
} cf_swizzle;
CF_API int64_t cf_swizzle_apply(cf_swizzle s, int64_t offset);
/* Refuses a swizzle that is not a bijection (B < 0, M < 0, S < B, or bits beyond 62). */
CF_API cf_status cf_swizzle_check(cf_swizzle s, cf_layout_err *err);
/* The swizzle of element offsets of a row-major tile whose rows are row_bytes long (a
 * power of 2, at least 16) and 128-byte aligned, under which 8 lanes reading the same
 * 16-byte chunk of 8 consecutive rows (an ldmatrix phase) touch 32 distinct banks:
 * Sw<min(c, 3), log2(16 / elem_bytes), max(c, 3)>, c = log2(row_bytes / 16); 64-byte rows
 * of half give Sw<2,3,3>, 128-byte rows Sw<3,3,3>. */
CF_API cf_status cf_swizzle_for_rows(int64_t elem_bytes, int64_t row_bytes, cf_swizzle *out,
                                     cf_layout_err *err);
/* `Sw<2,3,3>`; snprintf conventions. */
CF_API int cf_swizzle_snprint(char *buf, size_t n, cf_swizzle s);

#ifdef __cplusplus
}
#endif
#endif
