/*
> [!NOTE]
> This file is both C and Markdown: `tutorial/layout.c` is a Criterion test suite, and
> `tutorial/layout.md` is rendered from it by `tools/render_tutorial.py`. Every example
> here runs in cfuser's test suite (`ctest -R tutorial_layout`).

# CuTe layouts and tensors in cfuser

cfuser implements CuTe's layout algebra in C (`#include <cfuser/layout.h>`). This
tutorial goes through every example of the CuTe documents cfuser was started from, in
their order: the layout basics (seed 004), tensors (seeds 000 and 001) and a Python
notebook that simulates tensors and `local_tile` (seed 002); part 4 adds more of CuTe's
API (`filter`, `append`, tuple `idx2crd`, `_` in tilers) and pictures of layouts. Each printed result is the
one CuTe prints, asserted exactly. Where a document disagrees with what CuTe computes,
CuTe wins, and the example says so.

A layout prints as `Shape:Stride`. An integer written `_4` is *static* (CuTe's
`Int<4>{}`, known when the program is written), `4` is *dynamic* (an `int`). cfuser
tracks staticness through every operation the way CuTe's types do, which is why
composing static layouts prints `(_5,(_2,_2)):(_16,(_80,_4))` while the same dynamic
layouts print `((5,1),(2,2)):((16,4),(80,4))`.

The same operations are on the command line: `cfuser layout composition
'(12,(4,8)):(59,(13,1))' '<_3:_4,_8:_2>'` prints `(_3,(2,4)):(236,(26,1))`.

Layouts, IntTuples and tiles are plain C values: they live on the stack, are copied by
assignment and need no freeing. Functions that can fail return a `cf_status` and fill a
`cf_layout_err`. The helpers below parse CuTe notation and print results:
*/
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cfuser.h>

static cf_layout_err err;
#define OK(call) cr_assert_eq((call), CF_OK, "%s", err.message)

static cf_layout L(const char *text) { /* a layout: "(_4,8):(_1,_4)", or a shape */
  cf_layout l;
  OK(cf_layout_parse(text, &l, &err));
  return l;
}
static cf_layout T(const char *text) { /* a tiler: "<3:4,8:2>", or a shape "(4,8)" */
  cf_layout l;
  OK(cf_layout_parse_tiler(text, &l, &err));
  return l;
}
static cf_int_tuple C(const char *text) { /* an IntTuple or a coordinate, "(1,_)" */
  cf_int_tuple t;
  OK(cf_tuple_parse(text, &t, &err));
  return t;
}
static const char *S(const cf_layout *l) { /* printed, as CuTe prints it */
  static char bufs[4][CF_LAYOUT_TEXT_MAX];
  static int next;
  char *b = bufs[next++ % 4];
  cf_layout_snprint(b, CF_LAYOUT_TEXT_MAX, l);
  return b;
}
static int64_t at(const cf_layout *l, const char *coord) { /* l(coord) */
  cf_int_tuple c = C(coord);
  cf_tuple_int i;
  OK(cf_layout_crd2idx(l, &c, &i, &err));
  return i.value;
}
/* The rows of a rank-2 layout, "0 1 2 / 3 4 5", as print2D shows them. */
static const char *rows(const cf_layout *l, int m, int n) {
  static char b[1024];
  b[0] = '\0';
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      char c[32];
      snprintf(c, sizeof c, "(%d,%d)", i, j);
      snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", j ? " " : (i ? " / " : ""),
               (long long)at(l, c));
    }
  return b;
}

/*
## Part 1: layouts (seed 004)

### Layout in PyTorch

A PyTorch tensor of shape `[3, 4]` is row-major with strides `[4, 1]` and column-major
with strides `[1, 3]`; the physical index is the sum of coordinate times stride. In CuTe
the two are `make_layout(shape, LayoutRight{})` and `make_layout(shape)` (LayoutLeft is
the default): the stride of the innermost mode is the static `_1`.
*/
Test(layout_part1, strides_as_in_pytorch) {
  cf_int_tuple shape = C("(3,4)");
  cf_layout row, col;
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_RIGHT, &row, &err));
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_LEFT, &col, &err));
  cr_expect_str_eq(S(&row), "(3,4):(4,_1)");
  cr_expect_str_eq(S(&col), "(3,4):(_1,3)");
  cr_expect_eq(at(&row, "(1,2)"), 1 * 4 + 2 * 1);
  cr_expect_eq(at(&col, "(1,2)"), 1 * 1 + 2 * 3);
}

/*
### Hierarchical layouts

In the seed's figure (c) the rows have shape 4 and stride 2, and the columns are split
into blocks: 2 adjacent columns (stride 1) make a block, 4 blocks (stride 8) make the
columns. In figure (d) the rows are also split: 2 blocks of 2 rows (strides 1 and 4),
and the columns are 4 blocks of 2 (strides 2 and 8). A 2-D coordinate still indexes
them; the column coordinate is split across the blocks.
*/
Test(layout_part1, hierarchical_layouts) {
  cf_layout c = L("(4,(2,4)):(2,(1,8))");
  cr_expect_str_eq(rows(&c, 4, 8), "0 1 8 9 16 17 24 25 / 2 3 10 11 18 19 26 27 / "
                                   "4 5 12 13 20 21 28 29 / 6 7 14 15 22 23 30 31");
  cf_layout d = L("((2,2),(2,4)):((1,4),(2,8))");
  cr_expect_str_eq(rows(&d, 4, 8), "0 2 8 10 16 18 24 26 / 1 3 9 11 17 19 25 27 / "
                                   "4 6 12 14 20 22 28 30 / 5 7 13 15 21 23 29 31");
}

/*
### Shape, Stride, Layout

An IntTuple is an integer or a tuple of IntTuples: `2`, `_3`, `(2,_3)`,
`(42,(_1,3),_17)`. Its rank is its number of top-level elements, its depth its nesting.
*/
Test(layout_part1, int_tuples) {
  const char *examples[] = {"2", "_3", "(2,_3)", "(42,(_1,3),_17)"};
  int rank[] = {1, 1, 2, 3}, depth[] = {0, 0, 1, 2};
  for (int k = 0; k < 4; k++) {
    cf_int_tuple t = C(examples[k]);
    char b[64];
    cf_tuple_snprint(b, sizeof b, &t);
    cr_expect_str_eq(b, examples[k]);
    cr_expect_eq(cf_tuple_rank(&t), rank[k]);
    cr_expect_eq(cf_tuple_depth(&t), depth[k]);
  }
}

/*
A layout maps a coordinate to an index by CuTe's three rules for `crd2idx(c, s, d)`:

1. integer coordinate, shape and stride: `c * d`;
2. integer coordinate into a tuple mode: split it, innermost mode first
   (`c % size(s0)` goes into mode 0, `c / size(s0)` on to the rest);
3. tuple coordinate into a tuple mode: mode by mode, summed.

The rules mix: `(2,7)` is a 2-D coordinate of the shape `(3,(2,4))`, whose 7 is split
into `(1,3)` inside the second mode.
*/
Test(layout_part1, crd2idx_rules) {
  cf_layout l = L("(3,(2,4)):(1,(3,6))");
  cr_expect_eq(at(&l, "2"), 2);                     /* rule 1 inside rule 2 */
  cr_expect_eq(at(&l, "17"), 2 + 1 * 3 + 2 * 6);    /* rule 2: 17 -> (2,(1,2)) */
  cr_expect_eq(at(&l, "(2,(1,3))"), 2 + 3 + 18);    /* rule 3, natural coordinate */
  cr_expect_eq(at(&l, "(2,7)"), 2 + 1 * 3 + 3 * 6); /* rules 3 then 2 */
}

/*
The other way round, `idx2crd(i, shape)` splits an index into the natural coordinate of
a shape, colexicographically, and `idx2crd(i, shape, stride)` finds the coordinate of an
index of a compact layout.
*/
Test(layout_part1, idx2crd) {
  cf_int_tuple shape = C("(3,(2,4))"), crd;
  OK(cf_tuple_idx2crd(cf_tuple_dynamic(17), &shape, &crd, &err));
  char b[64];
  cf_tuple_snprint(b, sizeof b, &crd);
  cr_expect_str_eq(b, "(2,(1,2))");
  cf_layout row = L("(3,(2,4)):(8,(4,1))");
  OK(cf_layout_idx2crd(&row, 13, &crd, &err));
  cf_tuple_snprint(b, sizeof b, &crd);
  cr_expect_str_eq(b, "(1,(1,1))");
}

/*
### Sublayouts

`layout<I...>(a)` picks the sublayout at an index path. The seed writes the results
without the static marks; CuTe prints `Layout<Shape<_4,Shape<_3,_6>>>{}` with them.
*/
Test(layout_part1, sublayouts) {
  cf_int_tuple shape = C("(_4,(_3,_6))");
  cf_layout a, r;
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_LEFT, &a, &err));
  cr_expect_str_eq(S(&a), "(_4,(_3,_6)):(_1,(_4,_12))");
  OK(cf_layout_get(&a, (int[]){0}, 1, &r, &err));
  cr_expect_str_eq(S(&r), "_4:_1");
  OK(cf_layout_get(&a, (int[]){1}, 1, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,_6):(_4,_12)");
  OK(cf_layout_get(&a, (int[]){1, 0}, 2, &r, &err));
  cr_expect_str_eq(S(&r), "_3:_4");
  OK(cf_layout_get(&a, (int[]){1, 1}, 2, &r, &err));
  cr_expect_str_eq(S(&r), "_6:_12");
}

/*
`select<I...>` takes several modes of one level, `take<B,E>` a range of them. An empty
range is not a layout.
*/
Test(layout_part1, select_and_take) {
  cf_layout a = L("(_2,_3,_5,_7)"), r;
  cr_expect_str_eq(S(&a), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  OK(cf_layout_select(&a, (int[]){1, 3}, 2, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,_7):(_2,_30)");
  OK(cf_layout_select(&a, (int[]){0, 1, 3}, 3, &r, &err));
  cr_expect_str_eq(S(&r), "(_2,_3,_7):(_1,_2,_30)");
  OK(cf_layout_select(&a, (int[]){2}, 1, &r, &err));
  cr_expect_str_eq(S(&r), "(_5):(_6)");
  OK(cf_layout_take(&a, 1, 3, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,_5):(_2,_6)");
  OK(cf_layout_take(&a, 1, 4, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,_5,_7):(_2,_6,_30)");
  cr_expect_eq(cf_layout_take(&a, 1, 1, &r, &err), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(err.message, "take<1,1>: bad range for a layout of rank 4 (empty layouts are not allowed)");
}

/*
### Concatenation

`make_layout(a, b, ...)` makes a layout of layouts; with one argument it wraps.
*/
Test(layout_part1, concatenation) {
  cf_layout a = L("_3:_1"), b = L("_4:_3"), row, col, q, aa, aaa, d;
  OK(cf_layout_concat((cf_layout[]){a, b}, 2, &row, &err));
  cr_expect_str_eq(S(&row), "(_3,_4):(_1,_3)");
  OK(cf_layout_concat((cf_layout[]){b, a}, 2, &col, &err));
  cr_expect_str_eq(S(&col), "(_4,_3):(_3,_1)");
  OK(cf_layout_concat((cf_layout[]){row, col}, 2, &q, &err));
  cr_expect_str_eq(S(&q), "((_3,_4),(_4,_3)):((_1,_3),(_3,_1))");
  OK(cf_layout_concat(&a, 1, &aa, &err));
  cr_expect_str_eq(S(&aa), "(_3):(_1)");
  OK(cf_layout_concat(&aa, 1, &aaa, &err));
  cr_expect_str_eq(S(&aaa), "((_3)):((_1))");
  OK(cf_layout_concat((cf_layout[]){a, aa, a}, 3, &d, &err));
  cr_expect_str_eq(S(&d), "(_3,(_3),_3):(_1,(_1),_1)");
}

/*
### Grouping and flattening
*/
Test(layout_part1, group_and_flatten) {
  cf_layout a = L("(_2,_3,_5,_7)"), b, c, f, e;
  OK(cf_layout_group(&a, 0, 2, &b, &err));
  cr_expect_str_eq(S(&b), "((_2,_3),_5,_7):((_1,_2),_6,_30)");
  OK(cf_layout_group(&b, 1, 3, &c, &err));
  cr_expect_str_eq(S(&c), "((_2,_3),(_5,_7)):((_1,_2),(_6,_30))");
  OK(cf_layout_flatten(&b, &f, &err));
  cr_expect_str_eq(S(&f), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
  OK(cf_layout_flatten(&c, &e, &err));
  cr_expect_str_eq(S(&e), "(_2,_3,_5,_7):(_1,_2,_6,_30)");
}

/*
### Coalesce

Coalesce simplifies a layout without changing it as a function of 1-D coordinates. Of
two modes `s0:d0` and `s1:d1`, a static size-1 mode disappears, and `s1:s0*d0` merges
into `s0*s1:d0`; anything else stays. A merge happens only when it is statically
provable, so dynamic layouts keep their modes.
*/
Test(layout_part1, coalesce) {
  cf_layout a = L("(_2,(_1,_6)):(_1,(_6,_2))"), r;
  OK(cf_layout_coalesce(&a, &r, &err));
  cr_expect_str_eq(S(&r), "_12:_1");
  const char *cases[][2] = {{"(_2,_1):(_3,_5)", "_2:_3"},   {"(_1,_4):(_3,_5)", "_4:_5"},
                            {"(_2,_4):(_3,_6)", "_8:_3"},   {"(_2,_4):(_3,_7)", "(_2,_4):(_3,_7)"},
                            {"(2,4):(1,2)", "(2,4):(1,2)"}};
  for (int k = 0; k < 5; k++) {
    cf_layout in = L(cases[k][0]);
    OK(cf_layout_coalesce(&in, &r, &err));
    cr_expect_str_eq(S(&r), cases[k][1]);
  }
}

/*
By mode, with a profile: `coalesce(a, Step<_1,_1>{})` keeps the result rank-2, and is the
same as coalescing each mode.
*/
Test(layout_part1, coalesce_by_mode) {
  cf_layout a = L("(_2,(_1,_6)):(_1,(_6,_2))"), r, m0, m1, same;
  cf_int_tuple step = C("(_1,_1)");
  OK(cf_layout_coalesce_by(&a, &step, &r, &err));
  cr_expect_str_eq(S(&r), "(_2,_6):(_1,_2)");
  cf_layout a0, a1;
  OK(cf_layout_get(&a, (int[]){0}, 1, &a0, &err));
  OK(cf_layout_get(&a, (int[]){1}, 1, &a1, &err));
  OK(cf_layout_coalesce(&a0, &m0, &err));
  OK(cf_layout_coalesce(&a1, &m1, &err));
  OK(cf_layout_concat((cf_layout[]){m0, m1}, 2, &same, &err));
  cr_expect(cf_layout_equal(&r, &same));
}

/*
### Composition

A layout is a function from integers to integers, so two compose: `(A o B)(c) =
A(B(c))` for every coordinate `c` of `B`, and the result is again a layout, compatible
with `B`.
*/
Test(layout_part1, composition_is_function_composition) {
  cf_layout a = L("(_6,_2):(_8,_2)"), b = L("(_4,_3):(_3,_1)"), r;
  OK(cf_layout_composition(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_2),_3):((_24,_2),_8)");
  for (int64_t i = 0; i < 12; i++) {
    int64_t bi, ri, abi;
    OK(cf_layout_eval(&b, i, &bi, &err));
    OK(cf_layout_eval(&a, bi, &abi, &err));
    OK(cf_layout_eval(&r, i, &ri, &err));
    cr_expect_eq(ri, abi);
  }
}

/*
By mode: with a *tiler* `<3:4, 8:2>` (angle brackets distinguish a tiler from a layout of
layouts), `3:4` applies to mode 0 and `8:2` to mode 1. The result is identical to
composing mode by mode.
*/
Test(layout_part1, composition_by_mode) {
  cf_layout a = L("(12,(4,8)):(59,(13,1))"), tiler = T("<_3:_4,_8:_2>"), r;
  cr_expect_str_eq(S(&tiler), "<_3:_4,_8:_2>");
  OK(cf_layout_composition(&a, &tiler, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,(2,4)):(236,(26,1))");
  cf_layout a0, a1, t0 = L("_3:_4"), t1 = L("_8:_2"), r0, r1, same;
  OK(cf_layout_get(&a, (int[]){0}, 1, &a0, &err));
  OK(cf_layout_get(&a, (int[]){1}, 1, &a1, &err));
  OK(cf_layout_composition(&a0, &t0, &r0, &err));
  OK(cf_layout_composition(&a1, &t1, &r1, &err));
  OK(cf_layout_concat((cf_layout[]){r0, r1}, 2, &same, &err));
  cr_expect(cf_layout_equal(&r, &same));
}

/*
### Complement

The complement of a layout describes what it leaves out of its codomain, up to a size:
`complement(4:1, 24)` is `6:4`, since `(4,6):(1,4)` fills 24. The seed says
`complement(6:4, 24) => 6:4`, but its own reason, `(6,4):(4,1)`, shows the typo: CuTe
computes `4:1`. With static integers, as CuTe's documentation assumes:
*/
Test(layout_part1, complement) {
  cf_layout a = L("_4:_1"), b = L("_6:_4"), r;
  cf_int_tuple m = C("_24");
  OK(cf_layout_complement(&a, &m, &r, &err));
  cr_expect_str_eq(S(&r), "_6:_4");
  OK(cf_layout_complement(&b, &m, &r, &err));
  cr_expect_str_eq(S(&r), "_4:_1");
}

/*
### Division (tiling)

`A / B := A o (B, B*)`: the first mode of the result is the tile `B` taken from `A`,
the second mode enumerates the tiles. The seed's figure tiles `(4,2,3):(2,1,8)` by
`4:2`:
*/
Test(layout_part1, logical_divide_1d) {
  cf_layout a = L("(_4,_2,_3):(_2,_1,_8)"), b = L("_4:_2"), r, bstar, bb, direct;
  OK(cf_layout_logical_divide(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))");
  cf_int_tuple m = C("_24");
  OK(cf_layout_complement(&b, &m, &bstar, &err));
  cr_expect_str_eq(S(&bstar), "(_2,_3):(_1,_8)");
  OK(cf_layout_concat((cf_layout[]){b, bstar}, 2, &bb, &err));
  OK(cf_layout_composition(&a, &bb, &direct, &err));
  cr_expect(cf_layout_equal(&r, &direct), "A / B = A o (B, B*)");
}

/*
In 2-D, with the tiler `B = <3:3, (2,4):(1,8)>`, each mode is divided by its tile:
*/
Test(layout_part1, logical_divide_2d) {
  cf_layout a = L("(_9,(_4,_8)):(_59,(_13,_1))"), b = T("<_3:_3,(_2,_4):(_1,_8)>"), r;
  OK(cf_layout_logical_divide(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "((_3,_3),((_2,_4),(_2,_2))):((_177,_59),((_13,_2),(_26,_1)))");
}

/*
The zipped, tiled and flat divides only rearrange the modes of the logical divide:

```
Layout Shape : (M, N, L, ...)
Tiler Shape  : <TileM, TileN>

logical_divide : ((TileM,RestM), (TileN,RestN), L, ...)
zipped_divide  : ((TileM,TileN), (RestM,RestN,L,...))
tiled_divide   : ((TileM,TileN), RestM, RestN, L, ...)
flat_divide    : (TileM, TileN, RestM, RestN, L, ...)
```
*/
Test(layout_part1, zipped_tiled_flat_divides) {
  cf_layout a = L("(_9,(_4,_8),_2):(_59,(_13,_1),_1000)"), b = T("<_3:_3,(_2,_4):(_1,_8)>"), r;
  OK(cf_layout_zipped_divide(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "((_3,(_2,_4)),(_3,(_2,_2),_2)):((_177,(_13,_2)),(_59,(_26,_1),_1000))");
  OK(cf_layout_tiled_divide(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "((_3,(_2,_4)),_3,(_2,_2),_2):((_177,(_13,_2)),_59,(_26,_1),_1000)");
  OK(cf_layout_flat_divide(&a, &b, &r, &err));
  cr_expect_str_eq(S(&r), "(_3,(_2,_4),_3,(_2,_2),_2):(_177,(_13,_2),_59,(_26,_1),_1000)");
}

/*
### Product (tiling)

`A x B := (A, A* o B)`: the first mode is `A`, the second repeats it, in the order `B`
gives. The seed's two 1-D figures reproduce `(2,2):(4,1)` by `6:1` and by `(4,2):(2,1)`:
*/
Test(layout_part1, logical_product_1d) {
  cf_layout a = L("(_2,_2):(_4,_1)"), b1 = L("_6:_1"), b2 = L("(_4,_2):(_2,_1)"), r;
  OK(cf_layout_logical_product(&a, &b1, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))");
  OK(cf_layout_logical_product(&a, &b2, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_2),(_4,_2)):((_4,_1),(_8,_2))");
}

/*
In 2-D, repeating a 2x5 row-major tile 3 times down and 4 times across needs the
unintuitive tiler `<3:5, 4:6>`; `blocked_product` says the same with the 3x4
arrangement itself, and `raked_product` interleaves the tile's elements instead.
*/
Test(layout_part1, products_2d) {
  cf_layout a = L("(_2,_5):(_5,_1)"), tiler = T("<_3:_5,_4:_6>"), arrangement = L("(_3,_4)"), r;
  OK(cf_layout_logical_product(&a, &tiler, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_3),(_5,_4)):((_5,_10),(_1,_30))");
  OK(cf_layout_blocked_product(&a, &arrangement, &r, &err));
  cr_expect_str_eq(S(&r), "((_2,_3),(_5,_4)):((_5,_10),(_1,_30))");
  OK(cf_layout_raked_product(&a, &arrangement, &r, &err));
  cr_expect_str_eq(S(&r), "((_3,_2),(_4,_5)):((_10,_5),(_30,_1))");
}

/*
### Tensors

A tensor is a pointer and a layout. `cf_ctensor_make` wraps memory it does not own;
`cf_ctensor_make_owning` allocates an array of `cosize` elements, and needs a static
layout. Partitioning an 8x24 tensor into 4x8 tiles with `zipped_divide` gives a mode of
tiles and a mode of rests; a block takes its tile by slicing the rest mode (an *inner*
partition, `local_tile`), a thread takes its element of every tile by slicing the tile
mode (an *outer* partition).
*/
static float mem[8 * 24];

Test(layout_part1, tensor_partition) {
  cf_layout la = L("(8,24)"), tiler = T("(_4,_8)");
  cf_ctensor a, tiled, cta, thr;
  OK(cf_ctensor_make(mem, sizeof(float), CF_CTENSOR_GMEM, &la, &a, &err));
  OK(cf_ctensor_tile(&a, CF_LAYOUT_OP_ZIPPED_DIVIDE, &tiler, &tiled, &err));
  cr_expect_str_eq(S(&tiled.layout), "((_4,_8),(2,3)):((_1,8),(_4,64))");
  cf_int_tuple block = C("((_,_),(1,2))"), thread = C("(5,(_,_))");
  OK(cf_ctensor_slice(&tiled, &block, &cta, &err));
  cr_expect_str_eq(S(&cta.layout), "(_4,_8):(_1,8)");
  OK(cf_ctensor_slice(&tiled, &thread, &thr, &err));
  cr_expect_str_eq(S(&thr.layout), "(2,3):(_4,64)");
}

/*
Thread-value partitioning composes a tensor with a layout from (thread, value) to the
tensor's coordinates, then slices one thread.
*/
Test(layout_part1, thread_value_partition) {
  cf_layout tv_layout = L("((_2,_4),(_2,_2)):((_8,_1),(_4,_16))"), la = L("(_4,_8):(_8,_1)");
  cf_ctensor a, tv, v;
  OK(cf_ctensor_make_owning(sizeof(float), &la, &a, &err));
  OK(cf_ctensor_tile(&a, CF_LAYOUT_OP_COMPOSITION, &tv_layout, &tv, &err));
  cr_expect_str_eq(S(&tv.layout), "((_2,_4),(_2,_2)):((_2,_8),(_1,_4))");
  OK(cf_ctensor_tv_partition(&a, &tv_layout, 3, &v, &err));
  cr_expect_str_eq(S(&v.layout), "((_2,_2)):((_1,_4))");
  cf_ctensor_destroy(&a);
}

/*
## Part 2: tensors (seeds 000 and 001)

### Owning tensors

An owning tensor holds its own array (CuTe's register memory; static layouts only). Each
prints as `ptr[32b](address) o layout`, and each has its own address. `make_tensor_like`
keeps the shape and orders the strides like its argument's.

Seed 001 prints the padded tensor as `(_4,_8):(_2,_32)`; the code says
`Stride<_32,_2>`, and CuTe prints `(_4,_8):(_32,_2)`, as seed 000 does.
*/
static const char *tensor_text(const cf_ctensor *t) {
  static char b[CF_LAYOUT_TEXT_MAX];
  cf_ctensor_snprint(b, sizeof b, t);
  return b;
}

static void expect_tensor(const cf_ctensor *t, const char *ptr, const char *layout) {
  char want[256];
  snprintf(want, sizeof want, "%s(%p) o %s", ptr, t->data, layout);
  cr_expect_str_eq(tensor_text(t), want);
}

Test(layout_part2, owning_tensors) {
  cf_int_tuple shape = C("(_4,_8)");
  cf_layout col, row, pad = L("(_4,_8):(_32,_2)");
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_LEFT, &col, &err));
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_RIGHT, &row, &err));
  cf_ctensor rmem_4x8_col, rmem_4x8_row, rmem_4x8_pad, rmem_4x8_like;
  OK(cf_ctensor_make_owning(sizeof(float), &col, &rmem_4x8_col, &err));
  OK(cf_ctensor_make_owning(sizeof(float), &row, &rmem_4x8_row, &err));
  OK(cf_ctensor_make_owning(sizeof(float), &pad, &rmem_4x8_pad, &err));
  OK(cf_ctensor_make_like(&rmem_4x8_pad, &rmem_4x8_like, &err));
  expect_tensor(&rmem_4x8_col, "ptr[32b]", "(_4,_8):(_1,_4)");
  expect_tensor(&rmem_4x8_row, "ptr[32b]", "(_4,_8):(_8,_1)");
  expect_tensor(&rmem_4x8_pad, "ptr[32b]", "(_4,_8):(_32,_2)");
  expect_tensor(&rmem_4x8_like, "ptr[32b]", "(_4,_8):(_8,_1)");
  cr_expect_neq(rmem_4x8_col.data, rmem_4x8_row.data);
  cr_expect_neq(rmem_4x8_pad.data, rmem_4x8_like.data);
  cf_ctensor_destroy(&rmem_4x8_col);
  cf_ctensor_destroy(&rmem_4x8_row);
  cf_ctensor_destroy(&rmem_4x8_pad);
  cf_ctensor_destroy(&rmem_4x8_like);
}

/*
### Non-owning tensors

A non-owning tensor takes a pointer, tagged for global or shared memory or not, and a
layout, a shape, or a shape and a stride. They all print the same address.
*/
static float A[1024];

Test(layout_part2, non_owning_tensors) {
  static const struct {
    const char *name, *layout, *ptr, *want;
    cf_ctensor_space space;
  } rows[] = {
      {"tensor_8", "_8:_1", "ptr[32b]", "_8:_1", CF_CTENSOR_PTR},
      {"tensor_8s", "_8", "ptr[32b]", "_8:_1", CF_CTENSOR_PTR},
      {"tensor_8d2", "8:2", "ptr[32b]", "8:2", CF_CTENSOR_PTR},
      {"gmem_8s", "_8", "gmem_ptr[32b]", "_8:_1", CF_CTENSOR_GMEM},
      {"gmem_8d", "8", "gmem_ptr[32b]", "8:_1", CF_CTENSOR_GMEM},
      {"gmem_8sx16d", "(_8,16)", "gmem_ptr[32b]", "(_8,16):(_1,_8)", CF_CTENSOR_GMEM},
      {"gmem_8dx16s", "(8,_16):(_16,_1)", "gmem_ptr[32b]", "(8,_16):(_16,_1)", CF_CTENSOR_GMEM},
      {"smem_4x8_col", "(_4,_8)", "smem_ptr[32b]", "(_4,_8):(_1,_4)", CF_CTENSOR_SMEM},
      {"smem_4x8_row", "(_4,_8):(_8,_1)", "smem_ptr[32b]", "(_4,_8):(_8,_1)", CF_CTENSOR_SMEM},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_layout l = L(rows[k].layout);
    cf_ctensor t;
    OK(cf_ctensor_make(A, sizeof(float), rows[k].space, &l, &t, &err));
    cr_expect_eq(t.data, (void *)A, "%s", rows[k].name);
    expect_tensor(&t, rows[k].ptr, rows[k].want);
  }
}

/*
### Accessing a tensor (seed 001)

Elements are reached with natural coordinates, with 2-D coordinates, or as a 1-D array.
Fill `A` through its natural coordinates, transpose it into `B`, then copy `B` back into
`A` as if both were arrays:
*/
static float b_mem[13 * 20];

static float *elem(const cf_ctensor *t, const char *coord) {
  cf_int_tuple c = C(coord);
  void *p;
  OK(cf_ctensor_at(t, &c, &p, &err));
  return p;
}

Test(layout_part2, accessing_a_tensor) {
  cf_layout la = L("((_4,_5),_13):((_12,_1),_64)"), lb = L("(13,20)");
  cf_ctensor a, b;
  OK(cf_ctensor_make_owning(sizeof(float), &la, &a, &err));
  OK(cf_ctensor_make(b_mem, sizeof(float), CF_CTENSOR_PTR, &lb, &b, &err));
  char c[64];
  for (int m0 = 0; m0 < 4; ++m0)
    for (int m1 = 0; m1 < 5; ++m1)
      for (int n = 0; n < 13; ++n) {
        snprintf(c, sizeof c, "((%d,%d),%d)", m0, m1, n);
        *elem(&a, c) = (float)(n + 2 * m0);
      }
  for (int m = 0; m < 20; ++m)
    for (int n = 0; n < 13; ++n) {
      char cb[32];
      snprintf(c, sizeof c, "(%d,%d)", m, n);
      snprintf(cb, sizeof cb, "(%d,%d)", n, m);
      *elem(&b, cb) = *elem(&a, c);
    }
  cr_expect_eq(*elem(&b, "(12,6)"), 12 + 2 * (6 % 4));
  for (int i = 0; i < 260; ++i) {
    void *pa, *pb;
    OK(cf_ctensor_at_index(&a, i, &pa, &err));
    OK(cf_ctensor_at_index(&b, i, &pb, &err));
    *(float *)pa = *(float *)pb;
  }
  cr_expect_eq(*elem(&a, "((3,4),12)"), *elem(&b, "(12,19)"));
  cf_ctensor_destroy(&a);
}

/*
### Tiling a tensor

Composition and the divides apply to a tensor's layout and keep its pointer. Products do
not: they would reach outside the tensor.
*/
Test(layout_part2, tiling_a_tensor) {
  cf_layout la = L("(8,24)"), tiler = T("(_4,_8)");
  cf_ctensor a, r;
  OK(cf_ctensor_make(A, sizeof(float), CF_CTENSOR_GMEM, &la, &a, &err));
  static const struct {
    cf_layout_op op;
    const char *want;
  } rows[] = {{CF_LAYOUT_OP_COMPOSITION, "(_4,_8):(_1,8)"},
              {CF_LAYOUT_OP_LOGICAL_DIVIDE, "((_4,2),(_8,3)):((_1,_4),(8,64))"},
              {CF_LAYOUT_OP_ZIPPED_DIVIDE, "((_4,_8),(2,3)):((_1,8),(_4,64))"},
              {CF_LAYOUT_OP_TILED_DIVIDE, "((_4,_8),2,3):((_1,8),_4,64)"},
              {CF_LAYOUT_OP_FLAT_DIVIDE, "(_4,_8,2,3):(_1,8,_4,64)"}};
  for (int k = 0; k < 5; k++) {
    OK(cf_ctensor_tile(&a, rows[k].op, &tiler, &r, &err));
    cr_expect_str_eq(S(&r.layout), rows[k].want, "%s", cf_layout_op_name(rows[k].op));
    cr_expect_eq(r.data, (void *)A);
  }
  cr_expect_eq(cf_ctensor_tile(&a, CF_LAYOUT_OP_LOGICAL_PRODUCT, &tiler, &r, &err), CF_ERR_UNSUPPORTED);
}

/*
### Slicing a tensor

`_` keeps a mode, an integer fixes it. The layout of the kept modes makes the new tensor,
and the pointer moves by the offset of the fixed part: for `B = A(2,_)` from element 0 to
element 8. `C` and `D` hold the same elements with different ranks: `_` against
`(_,_)`. The rank of a slice is the number of `_` in the coordinate.
*/
Test(layout_part2, slicing_a_tensor) {
  cf_layout la = L("((_3,2),(2,_5,_2)):((4,1),(_2,13,100))");
  cf_ctensor a;
  OK(cf_ctensor_make(A, sizeof(float), CF_CTENSOR_PTR, &la, &a, &err));
  static const struct {
    const char *name, *coord, *want;
    long offset;
  } rows[] = {{"B", "(2,_)", "((2,_5,_2)):((_2,13,100))", 8},
              {"C", "(_,5)", "((_3,2)):((4,1))", 28},
              {"D", "((_,_),5)", "(_3,2):(4,1)", 28},
              {"E", "((_,1),(0,_,1))", "(_3,_5):(4,13)", 101},
              {"F", "((2,_),(_,3,_))", "(2,2,_2):(1,_2,100)", 47}};
  for (int k = 0; k < 5; k++) {
    cf_int_tuple c = C(rows[k].coord);
    cf_ctensor s;
    OK(cf_ctensor_slice(&a, &c, &s, &err));
    cr_expect_str_eq(S(&s.layout), rows[k].want, "%s = A%s", rows[k].name, rows[k].coord);
    cr_expect_eq((float *)s.data - A, rows[k].offset, "%s moves the pointer", rows[k].name);
  }
}

/*
### Partitioning a tensor

Seed 001 writes `make_tensor(ptr, make_shape(24,8)); // (8,24)`; the comment and seed
000 say 8x24, which is what the example uses. Tiled by `(_4,_8)`, a block's tile is an
inner partition (`inner_partition` or `local_tile`), a thread's share of every tile an
outer partition (`outer_partition`). `local_partition` builds the outer partition's
tiler and coordinate from a layout of threads and a thread index.
*/
Test(layout_part2, partitioning_a_tensor) {
  cf_layout la = L("(8,24)"), tiler = T("(_4,_8)");
  cf_ctensor a, cta, thr;
  OK(cf_ctensor_make(A, sizeof(float), CF_CTENSOR_GMEM, &la, &a, &err));
  cf_int_tuple block = C("(1,2)"), thread = C("5");
  OK(cf_ctensor_inner_partition(&a, &tiler, &block, &cta, &err));
  cr_expect_str_eq(S(&cta.layout), "(_4,_8):(_1,8)");
  cr_expect_eq((float *)cta.data - A, 1 * 4 + 2 * 64);
  OK(cf_ctensor_local_tile(&a, &tiler, &block, &cta, &err));
  cr_expect_str_eq(S(&cta.layout), "(_4,_8):(_1,8)");
  OK(cf_ctensor_outer_partition(&a, &tiler, &thread, &thr, &err));
  cr_expect_str_eq(S(&thr.layout), "(2,3):(_4,64)");
  cr_expect_eq((float *)thr.data - A, 1 + 1 * 8);
  cf_layout threads = L("(_4,_8)");
  OK(cf_ctensor_local_partition(&a, &threads, 5, &thr, &err));
  cr_expect_str_eq(S(&thr.layout), "(2,3):(_4,64)");
  cr_expect_eq((float *)thr.data - A, 1 + 1 * 8);
}

/*
### Thread-value partitioning

The TV layout `((2,4),(2,2)):((8,1),(4,16))` maps 8 threads and 4 values to the
coordinates of a 4x8 tensor. Composed with a row-major 4x8 tensor it gives each thread's
values in order; slicing thread `t` keeps its 4 values. Seed 000 writes the results
`((2,4),(2,2):(2,8),(1,4))` and `(2,2):(1,4)`; CuTe prints them with static marks, and
the slice `tv(t, _)` keeps the value mode as one mode:
*/
Test(layout_part2, tv_partitioning) {
  cf_layout tv_layout = L("((_2,_4),(_2,_2)):((_8,_1),(_4,_16))"), la = L("(_4,_8):(_8,_1)");
  cf_ctensor a, tv, v;
  OK(cf_ctensor_make_owning(sizeof(float), &la, &a, &err));
  OK(cf_ctensor_tile(&a, CF_LAYOUT_OP_COMPOSITION, &tv_layout, &tv, &err));
  cr_expect_str_eq(S(&tv.layout), "((_2,_4),(_2,_2)):((_2,_8),(_1,_4))");
  for (int t = 0; t < 8; t++) {
    cf_int_tuple c;
    char text[16];
    snprintf(text, sizeof text, "(%d,_)", t);
    c = C(text);
    OK(cf_ctensor_slice(&tv, &c, &v, &err));
    cr_expect_str_eq(S(&v.layout), "((_2,_2)):((_1,_4))");
    cr_expect_eq((float *)v.data - (float *)a.data, (t % 2) * 2 + (t / 2) * 8, "thread %d", t);
  }
  cf_ctensor_destroy(&a);
}

/*
## Part 3: the notebook's simulation in cfuser (seed 002)

The notebook models a layout in Python whose default is row-major (CuTe's default is
column-major: the notebook's `Layout((4, 3))` is CuTe's `make_layout((4,3),
LayoutRight{})`). Its first cell prints the layout, the offset of `(2,1)` and the size:
*/
Test(layout_part3, layout) {
  cf_int_tuple shape = C("(4,3)");
  cf_layout layout;
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_RIGHT, &layout, &err));
  cr_expect_str_eq(S(&layout), "(4,3):(3,_1)");
  cr_expect_eq(at(&layout, "(2,1)"), 7);
  cr_expect_eq(cf_layout_size(&layout).value, 12);
}

/*
A tensor over `arange(12)` reads `tensor[2,1] = 7`, `tensor[0,0] = 0`, `tensor[3,2] =
11`; the same memory seen row-major `(4,3):(3,1)` and column-major `(4,3):(1,4)` gives
two different matrices, and `[1,0]` is at offset 3 in one and 1 in the other.
*/
static float arange[48];

static const char *matrix(const cf_ctensor *t, int m, int n) {
  static char b[512];
  b[0] = '\0';
  for (int i = 0; i < m; i++) {
    strcat(b, "[");
    for (int j = 0; j < n; j++) {
      char c[32];
      snprintf(c, sizeof c, "(%d,%d)", i, j);
      snprintf(b + strlen(b), sizeof b - strlen(b), "%s%.0f", j ? ", " : "", *elem(t, c));
    }
    strcat(b, "]");
  }
  return b;
}

Test(layout_part3, tensor_views_of_one_array) {
  for (int i = 0; i < 48; i++)
    arange[i] = (float)i;
  cf_layout rm = L("(4,3):(3,1)"), cm = L("(4,3):(1,4)");
  cf_ctensor row_major, col_major;
  OK(cf_ctensor_make(arange, sizeof(float), CF_CTENSOR_PTR, &rm, &row_major, &err));
  OK(cf_ctensor_make(arange, sizeof(float), CF_CTENSOR_PTR, &cm, &col_major, &err));
  cr_expect_eq(*elem(&row_major, "(2,1)"), 7);
  cr_expect_eq(*elem(&row_major, "(0,0)"), 0);
  cr_expect_eq(*elem(&row_major, "(3,2)"), 11);
  cr_expect_str_eq(matrix(&row_major, 4, 3), "[0, 1, 2][3, 4, 5][6, 7, 8][9, 10, 11]");
  cr_expect_str_eq(matrix(&col_major, 4, 3), "[0, 4, 8][1, 5, 9][2, 6, 10][3, 7, 11]");
  cr_expect_eq(at(&rm, "(1,0)"), 3);
  cr_expect_eq(at(&cm, "(1,0)"), 1);
}

/*
The notebook's `local_tile` takes a 4x3 tile of an 8x6 row-major tensor without copying:
tile `(0,0)` starts at offset 0 and tile `(1,1)` at offset 27, with the tensor's strides.
CuTe's `local_tile` computes exactly that view:
*/
Test(layout_part3, local_tile) {
  for (int i = 0; i < 48; i++)
    arange[i] = (float)i;
  cf_int_tuple shape = C("(8,6)");
  cf_layout l, tile_shape = T("(_4,_3)");
  OK(cf_layout_from_shape(&shape, CF_LAYOUT_RIGHT, &l, &err));
  cf_ctensor tensor, tile_00, tile_11;
  OK(cf_ctensor_make(arange, sizeof(float), CF_CTENSOR_PTR, &l, &tensor, &err));
  cf_int_tuple c00 = C("(0,0)"), c11 = C("(1,1)");
  OK(cf_ctensor_local_tile(&tensor, &tile_shape, &c00, &tile_00, &err));
  OK(cf_ctensor_local_tile(&tensor, &tile_shape, &c11, &tile_11, &err));
  cr_expect_str_eq(S(&tile_11.layout), "(_4,_3):(6,_1)");
  cr_expect_eq((float *)tile_00.data - arange, 0);
  cr_expect_eq((float *)tile_11.data - arange, 27);
  cr_expect_str_eq(matrix(&tile_00, 4, 3), "[0, 1, 2][6, 7, 8][12, 13, 14][18, 19, 20]");
  cr_expect_str_eq(matrix(&tile_11, 4, 3), "[27, 28, 29][33, 34, 35][39, 40, 41][45, 46, 47]");
}

/*
Finally, FlashAttention's tiling: `mQ` is a `(seqlen, d)` global tensor with a dynamic row
stride and a static unit column stride, `gQ = local_tile(mQ, (128, 64), (m_block, 0))`
is block `m_block`'s `(_128,_64)` tile. With seqlen 2048 and d 64 there are 16 Q blocks
of 128 rows (the size of the rest mode of the tiling), and 32 K/V blocks of 64 rows;
block `m_block` processes `Q[128*m_block : 128*(m_block+1), :]`.
*/
static uint16_t q[2048 * 64]; /* half-precision Q */

Test(layout_part3, flash_attention_tiling) {
  cf_layout mq_layout = L("(2048,64):(64,_1)"), q_tile = T("(_128,_64)"), kv_tile = T("(_64,_64)");
  cf_layout tiled;
  cf_ctensor mq, gq;
  OK(cf_ctensor_make(q, sizeof q[0], CF_CTENSOR_GMEM, &mq_layout, &mq, &err));
  OK(cf_layout_zipped_divide(&mq_layout, &q_tile, &tiled, &err));
  cr_expect_str_eq(S(&tiled), "((_128,_64),(16,1)):((64,_1),(8192,_64))");
  OK(cf_layout_zipped_divide(&mq_layout, &kv_tile, &tiled, &err));
  cr_expect_str_eq(S(&tiled), "((_64,_64),(32,1)):((64,_1),(4096,_64))");
  for (int m_block = 0; m_block < 2; m_block++) {
    char c[16];
    snprintf(c, sizeof c, "(%d,0)", m_block);
    cf_int_tuple coord = C(c);
    OK(cf_ctensor_local_tile(&mq, &q_tile, &coord, &gq, &err));
    cr_expect_str_eq(S(&gq.layout), "(_128,_64):(64,_1)");
    long first_row = (long)((uint16_t *)gq.data - q) / 64;
    cr_expect_eq(first_row, 128 * m_block, "m_block=%d: Q[%ld:%ld, :]", m_block, first_row, first_row + 128);
  }
}

/*
## Part 4: more of CuTe's API, and pictures

### append, prepend, replace

Besides `make_layout(a, b)`, CuTe's `01_layout.md` builds layouts with `append`,
`prepend` and `replace`. An integral layout counts as the rank-1 tuple of itself, and
the layout appended when none is given is `_1:_0`.
*/
Test(layout_part4, append_prepend_replace) {
  cf_layout a = L("_3:_1"), b = L("_4:_3"), ab, ba, c, d, pad;
  OK(cf_layout_append(&a, &b, &ab, &err));
  OK(cf_layout_prepend(&a, &b, &ba, &err));
  OK(cf_layout_append(&ab, &ab, &c, &err));
  OK(cf_layout_replace(&c, 2, &b, &d, &err));
  OK(cf_layout_append(&a, NULL, &pad, &err));
  cr_expect_str_eq(S(&ab), "(_3,_4):(_1,_3)");
  cr_expect_str_eq(S(&ba), "(_4,_3):(_3,_1)");
  cr_expect_str_eq(S(&c), "(_3,_4,(_3,_4)):(_1,_3,(_1,_3))");
  cr_expect_str_eq(S(&d), "(_3,_4,_4):(_1,_3,_3)");
  cr_expect_str_eq(S(&pad), "(_3,_1):(_1,_0)");
}

/*
### filter

`filter` is `coalesce` after every mode of static stride 0 has become size `_1`: what is
left has no stride-0 and no size-1 mode, and reaches exactly the indices the layout
reaches. `complement` starts with it; `coalesce` alone keeps the stride-0 mode.
*/
Test(layout_part4, filter) {
  cf_layout a = L("(_4,(_2,_1),_3):(_1,(_0,_7),_4)"), f, c;
  OK(cf_layout_filter(&a, &f, &err));
  OK(cf_layout_coalesce(&a, &c, &err));
  cr_expect_str_eq(S(&f), "_12:_1");
  cr_expect_str_eq(S(&c), "(_4,_2,_3):(_1,_0,_4)");
}

/*
### idx2crd with a tuple index

`idx2crd(idx, shape)` maps any coordinate of a shape to its natural coordinate; the
index may be an integer or a tuple, each of whose integers is mapped within its mode
(`01_layout.md`, "Coordinate Mapping"). Static integers stay static.
*/
Test(layout_part4, idx2crd_with_tuples) {
  const char *in[] = {"16", "_16", "(1,5)", "(_1,5)", "(1,(1,2))", "(_1,(1,_2))"};
  const char *out[] = {"(1,(1,2))", "(_1,(_1,_2))", "(1,(1,2))",
                       "(_1,(1,2))", "(1,(1,2))", "(_1,(1,_2))"};
  cf_int_tuple shape = C("(_3,(_2,_3))");
  for (int k = 0; k < 6; k++) {
    cf_int_tuple idx = C(in[k]), crd;
    char text[64];
    OK(cf_tuple_idx2crd_tuple(&idx, &shape, &crd, &err));
    cf_tuple_snprint(text, sizeof text, &crd);
    cr_expect_str_eq(text, out[k], "idx2crd(%s, (_3,(_2,_3)))", in[k]);
  }
}

/*
### `_` in tilers, and tilers as CuTe prints them

A tiler element `_` keeps its mode whole: `logical_divide(A, make_tile(_, 4:1))` divides
only mode 1. CuTe's TiledMMA uses it to cut the thread mode of a
((ThrV,FrgV),(RestM,RestN)) tensor further while leaving the atom's mode alone:
`zipped_divide(tv, make_tile(_, make_tile(ThrM, ThrN)))`. Tilers may also be written the
way CuTe prints them, as a tuple `(_,(_2:_1,_2:_1))`; cfuser prints them `<...>`, the
notation of CuTe's documents, and reads both.
*/
Test(layout_part4, underscore_in_tilers) {
  cf_layout a = L("(_4,_8):(_1,_4)"), r;
  cf_layout by_mode1 = T("(_,_4:_1)");
  OK(cf_layout_logical_divide(&a, &by_mode1, &r, &err));
  cr_expect_str_eq(S(&r), "(_4,(_4,_2)):(_1,(_4,_16))");
  cr_expect_str_eq(S(&by_mode1), "<_,_4:_1>");
  cf_layout tv = L("((_32,_4),(_2,_4)):((_1,_32),(_128,_256))");
  cf_layout thr_tile = T("(_,(_2:_1,_2:_1))");
  OK(cf_layout_zipped_divide(&tv, &thr_tile, &r, &err));
  cr_expect_str_eq(S(&r), "((_32,(_2,_2)),(_4,(_1,_2))):((_1,(_128,_256)),(_32,(_0,_512)))");
}

/*
### Pictures

CuTe draws layouts with `print_layout` (a table) and `print_latex` (a colored picture).
cfuser draws them as SVG: `cfuser layout svg A` and `cfuser layout svg-tv TV M`, or
`cf_layout_svg` and `cf_layout_svg_tv` in C. The grid of `01_layout.md`'s
`(2,(2,2)):(4,(2,1))`, each cell (m,n) showing the index A(m,n), colored by index:

![the layout (2,(2,2)):(4,(2,1)) as a grid](layout_grid.svg)

A thread-value layout maps (thread, value) to an index of a tile; its picture shows,
in the cell of each index, which thread holds it and as which of its values. Here is the
accumulator of the SM80 16x8 MMA, `((_4,_8),(_2,_2)):((_32,_1),(_16,_8))` over the
`(_16,_8)` tile: thread t holds rows t/4 and t/4+8, columns 2(t%4) and 2(t%4)+1.

![the SM80 16x8 accumulator's thread-value layout](layout_tv.svg)

Both pictures are made by the test below and must equal the files next to this
tutorial (`CFUSER_WRITE_PICTURES=1` rewrites them).
*/
static char *svg_of(const cf_layout *l, const cf_int_tuple *tile) {
  size_t len = 0;
  OK(tile ? cf_layout_svg_tv(l, tile, NULL, 0, &len, &err) : cf_layout_svg(l, NULL, 0, &len, &err));
  char *svg = malloc(len + 1);
  cr_assert_not_null(svg);
  OK(tile ? cf_layout_svg_tv(l, tile, svg, len + 1, NULL, &err)
          : cf_layout_svg(l, svg, len + 1, NULL, &err));
  return svg;
}

static void expect_picture(const char *svg, const char *name) {
  const char *dir = getenv("CFUSER_SOURCE_DIR");
  if (!dir)
    cr_skip_test("CFUSER_SOURCE_DIR is not set: the pictures cannot be compared");
  char path[4096], text[65536];
  snprintf(path, sizeof path, "%s/tutorial/%s", dir, name);
  bool write = getenv("CFUSER_WRITE_PICTURES") != NULL;
  FILE *f = fopen(path, write ? "w" : "r");
  cr_assert_not_null(f, "cannot open %s", path);
  if (write)
    fputs(svg, f);
  size_t n = write ? 0 : fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  if (!write)
    cr_expect_str_eq(text, svg, "%s is stale: run the tutorial with CFUSER_WRITE_PICTURES=1", path);
}

Test(layout_part4, pictures) {
  cf_layout grid = L("(2,(2,2)):(4,(2,1))"), mma_c = L("((_4,_8),(_2,_2)):((_32,_1),(_16,_8))");
  cf_int_tuple tile = C("(_16,_8)");
  char *a = svg_of(&grid, NULL), *b = svg_of(&mma_c, &tile);
  expect_picture(a, "layout_grid.svg");
  expect_picture(b, "layout_tv.svg");
  free(a);
  free(b);
}
