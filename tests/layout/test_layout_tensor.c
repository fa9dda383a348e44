/* tests/layout/test_layout_tensor.c: CuTe tensors: owning and non-owning, printing as
 * CuTe prints them, element access by natural, 1-D and mixed coordinates, slicing (the
 * pointer moves), tiling, the partitioning patterns (local_tile, outer_partition,
 * local_partition, thread-value) with the layouts and offsets CuTe computes, and errors. */
#include "layout_test_util.h"

static float buf[4096];

static cf_ctensor tensor_on(void *data, cf_ctensor_space space, const char *layout)
{
  cf_layout l = lt_layout(layout);
  cf_ctensor t;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_make(data, sizeof(float), space, &l, &t, &e), CF_OK, "%s", e.message);
  return t;
}

static const char *tstr(const cf_ctensor *t)
{
  char *b = lt_buf();
  cf_ctensor_snprint(b, CF_LAYOUT_TEXT_MAX, t);
  return b;
}

/* "ptr[32b](0x...) o L": the prefix, a pointer, then the layout. */
static void expect_print(const cf_ctensor *t, const char *prefix, const char *layout)
{
  char want[256];
  snprintf(want, sizeof want, "%s(%p) o %s", prefix, t->data, layout);
  cr_expect_str_eq(tstr(t), want);
}

static int64_t offset_of(const cf_ctensor *t) { return (float *)t->data - buf; }

/* Seed 000: the owning tensors (static layouts only), each with its own array. */
Test(layout_tensor, owning_tensors)
{
  static const struct {
    const char *layout, *want;
  } rows[] = {{"(_4,_8)", "(_4,_8):(_1,_4)"},
              {"(_4,_8):(_8,_1)", "(_4,_8):(_8,_1)"},
              {"(_4,_8):(_32,_2)", "(_4,_8):(_32,_2)"}};
  cf_ctensor t[4];
  cf_layout_err e;
  for (int k = 0; k < 3; k++) {
    cf_layout l = lt_layout(rows[k].layout);
    cr_assert_eq(cf_ctensor_make_owning(sizeof(float), &l, &t[k], &e), CF_OK, "%s", e.message);
    cr_expect(t[k].owning);
    expect_print(&t[k], "ptr[32b]", rows[k].want);
  }
  cr_assert_eq(cf_ctensor_make_like(&t[2], &t[3], &e), CF_OK);
  expect_print(&t[3], "ptr[32b]", "(_4,_8):(_8,_1)");
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      cr_expect_neq(t[i].data, t[j].data, "each owning tensor has its own array");
  float *last;
  cr_assert_eq(cf_ctensor_at_index(&t[2], 31, (void **)&last, &e), CF_OK);
  cr_expect_eq(last - (float *)t[2].data, 3 * 32 + 7 * 2);
  cr_expect_eq(*last, 0.0f, "the array starts zeroed");
  for (int k = 0; k < 4; k++)
    cf_ctensor_destroy(&t[k]);
  cr_expect_null(t[0].data);
}

Test(layout_tensor, owning_tensors_need_static_non_negative_layouts)
{
  cf_layout d = lt_layout("(8,_4)"), n = lt_layout("(_4,_8):(_1,_-4)");
  cf_ctensor t;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_make_owning(sizeof(float), &d, &t, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "make_tensor: an owning tensor needs a static layout, got (8,_4):(_1,8)");
  cr_assert_eq(cf_ctensor_make_owning(sizeof(float), &n, &t, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "make_tensor: an owning tensor needs non-negative strides, got (_4,_8):(_1,_-4)");
  cr_assert_eq(cf_ctensor_make_owning(0, &d, &t, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "make_tensor: not a tensor (no element size)");
}

/* Seed 000: non-owning tensors over one array, untagged, gmem and smem. */
Test(layout_tensor, non_owning_tensors_share_the_pointer)
{
  static const struct {
    cf_ctensor_space space;
    const char *prefix, *layout, *want;
  } rows[] = {
      {CF_CTENSOR_PTR, "ptr[32b]", "_8:_1", "_8:_1"},
      {CF_CTENSOR_PTR, "ptr[32b]", "_8", "_8:_1"},
      {CF_CTENSOR_PTR, "ptr[32b]", "8:2", "8:2"},
      {CF_CTENSOR_GMEM, "gmem_ptr[32b]", "_8", "_8:_1"},
      {CF_CTENSOR_GMEM, "gmem_ptr[32b]", "8", "8:_1"},
      {CF_CTENSOR_GMEM, "gmem_ptr[32b]", "(_8,16)", "(_8,16):(_1,_8)"},
      {CF_CTENSOR_GMEM, "gmem_ptr[32b]", "(8,_16):(_16,_1)", "(8,_16):(_16,_1)"},
      {CF_CTENSOR_SMEM, "smem_ptr[32b]", "(_4,_8)", "(_4,_8):(_1,_4)"},
      {CF_CTENSOR_SMEM, "smem_ptr[32b]", "(_4,_8):(_8,_1)", "(_4,_8):(_8,_1)"},
  };
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_ctensor t = tensor_on(buf, rows[k].space, rows[k].layout);
    cr_expect_eq(t.data, (void *)buf);
    cr_expect_not(t.owning);
    expect_print(&t, rows[k].prefix, rows[k].want);
    cf_ctensor_destroy(&t); /* frees nothing */
  }
}

/* Seed 001, "Accessing a Tensor": fill A by natural coordinates, transpose it into B with
 * 2-D coordinates, copy B back into A as 1-D arrays. */
Test(layout_tensor, element_access_by_coordinates)
{
  cf_layout la = lt_layout("((_4,_5),_13):((_12,_1),_64)");
  cf_ctensor a, b = tensor_on(buf, CF_CTENSOR_PTR, "(13,20)");
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_make_owning(sizeof(float), &la, &a, &e), CF_OK);
  for (int m0 = 0; m0 < 4; m0++)
    for (int m1 = 0; m1 < 5; m1++)
      for (int n = 0; n < 13; n++) {
        char c[32];
        snprintf(c, sizeof c, "((%d,%d),%d)", m0, m1, n);
        cf_int_tuple crd = lt_tuple(c);
        float *p;
        cr_assert_eq(cf_ctensor_at(&a, &crd, (void **)&p, &e), CF_OK);
        *p = (float)(n + 2 * m0);
      }
  for (int m = 0; m < 20; m++)
    for (int n = 0; n < 13; n++) {
      char cb[32], ca[32];
      snprintf(cb, sizeof cb, "(%d,%d)", n, m);
      snprintf(ca, sizeof ca, "(%d,%d)", m, n);
      cf_int_tuple tb = lt_tuple(cb), ta = lt_tuple(ca);
      float *pb, *pa;
      cr_assert_eq(cf_ctensor_at(&b, &tb, (void **)&pb, &e), CF_OK);
      cr_assert_eq(cf_ctensor_at(&a, &ta, (void **)&pa, &e), CF_OK);
      *pb = *pa;
      cr_expect_eq(*pb, (float)(n + 2 * (m % 4)), "B(%d,%d)", n, m);
    }
  for (int i = 0; i < 260; i++) {
    float *pa, *pb;
    cr_assert_eq(cf_ctensor_at_index(&a, i, (void **)&pa, &e), CF_OK);
    cr_assert_eq(cf_ctensor_at_index(&b, i, (void **)&pb, &e), CF_OK);
    *pa = *pb;
    cr_expect_eq(*pa, buf[i]);
  }
  cf_ctensor_destroy(&a);
}

/* Seed 000: slicing moves the pointer by the layout's offset of the coordinate. */
Test(layout_tensor, slicing_moves_the_pointer)
{
  cf_ctensor a = tensor_on(buf, CF_CTENSOR_PTR, "((_3,2),(2,_5,_2)):((4,1),(_2,13,100))"), s;
  cf_layout_err e;
  static const struct {
    const char *coord, *want;
    int64_t offset;
  } rows[] = {{"(2,_)", "((2,_5,_2)):((_2,13,100))", 8},
              {"(_,5)", "((_3,2)):((4,1))", 28},
              {"((_,_),5)", "(_3,2):(4,1)", 28},
              {"((_,1),(0,_,1))", "(_3,_5):(4,13)", 101},
              {"((2,_),(_,3,_))", "(2,2,_2):(1,_2,100)", 47}};
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    cf_int_tuple c = lt_tuple(rows[k].coord);
    cr_assert_eq(cf_ctensor_slice(&a, &c, &s, &e), CF_OK, "%s", e.message);
    cr_expect_str_eq(lt_str(&s.layout), rows[k].want, "A%s", rows[k].coord);
    cr_expect_eq(offset_of(&s), rows[k].offset, "A%s", rows[k].coord);
  }
}

/* Seed 000/004: an 8x24 tensor by 4x8 tiles; tile (1,2) of the blocks, and the elements of
 * thread 5 across the tiles. Layouts and offsets as CuTe computes them. */
Test(layout_tensor, inner_and_outer_partitions)
{
  cf_ctensor a = tensor_on(buf, CF_CTENSOR_GMEM, "(8,24)"), z, r;
  cf_layout tiler = lt_tiler("(_4,_8)");
  cf_int_tuple c12 = lt_tuple("(1,2)"), c3 = lt_tuple("3"), c5 = lt_tuple("5"), c11 = lt_tuple("(1,1)");
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_tile(&a, CF_LAYOUT_OP_ZIPPED_DIVIDE, &tiler, &z, &e), CF_OK);
  cr_expect_str_eq(lt_str(&z.layout), "((_4,_8),(2,3)):((_1,8),(_4,64))");
  cr_assert_eq(cf_ctensor_local_tile(&a, &tiler, &c12, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(_4,_8):(_1,8)");
  cr_expect_eq(offset_of(&r), 132);
  cr_expect_eq(r.space, CF_CTENSOR_GMEM);
  cr_assert_eq(cf_ctensor_inner_partition(&a, &tiler, &c3, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(_4,_8):(_1,8)");
  cr_expect_eq(offset_of(&r), 68);
  cr_assert_eq(cf_ctensor_outer_partition(&a, &tiler, &c5, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(2,3):(_4,64)");
  cr_expect_eq(offset_of(&r), 9);
  cr_assert_eq(cf_ctensor_outer_partition(&a, &tiler, &c11, &r, &e), CF_OK);
  cr_expect_eq(offset_of(&r), 9);
}

Test(layout_tensor, local_tile_keeps_trailing_modes)
{
  cf_ctensor a = tensor_on(buf, CF_CTENSOR_PTR, "(8,24,3)"), r;
  cf_layout tiler = lt_tiler("(_4,_8)");
  cf_int_tuple c = lt_tuple("(1,2)"), bad = lt_tuple("(1,2,0,0)");
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_local_tile(&a, &tiler, &c, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(_4,_8,3):(_1,8,192)");
  cr_expect_eq(offset_of(&r), 132);
  cr_assert_eq(cf_ctensor_local_tile(&a, &tiler, &bad, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "partition: coordinate of rank 4 for a mode of rank 3");
}

/* CuTe's local_partition: a (_16,_64) tensor over a 2x16 layout of threads. */
Test(layout_tensor, local_partition_by_thread_index)
{
  cf_ctensor data = tensor_on(buf, CF_CTENSOR_PTR, "(_16,_64)"), r;
  cf_layout threads = lt_layout("(_2,_16)");
  cf_layout_err e;
  static const int64_t offs[][2] = {{0, 0}, {1, 1}, {5, 33}, {31, 241}};
  for (int k = 0; k < 4; k++) {
    cr_assert_eq(cf_ctensor_local_partition(&data, &threads, offs[k][0], &r, &e), CF_OK, "%s", e.message);
    cr_expect_str_eq(lt_str(&r.layout), "(_8,_4):(_2,_256)");
    cr_expect_eq(offset_of(&r), offs[k][1], "thread %lld", (long long)offs[k][0]);
  }
  cf_ctensor b3 = tensor_on(buf, CF_CTENSOR_PTR, "(8,24,3)");
  cf_layout row = lt_layout("(_2,_4):(_4,_1)");
  cr_assert_eq(cf_ctensor_local_partition(&b3, &row, 5, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(4,6,3):(_2,32,192)");
  cr_expect_eq(offset_of(&r), 9);
  cf_layout line = lt_layout("_8");
  cr_assert_eq(cf_ctensor_local_partition(&data, &line, 5, &r, &e), CF_OK);
  cr_expect_str_eq(lt_str(&r.layout), "(_2,_64):(_8,_16)");
  cr_expect_eq(offset_of(&r), 5);
}

/* Seed 000/001: thread-value partitioning of a 4x8 row-major tensor. CuTe's tv(t, _) is
 * ((_2,_2)):((_1,_4)): slicing keeps the `_` mode as one mode. */
Test(layout_tensor, thread_value_partitioning)
{
  cf_ctensor a = tensor_on(buf, CF_CTENSOR_PTR, "(_4,_8):(_8,_1)"), tv, v;
  cf_layout tvl = lt_layout("((_2,_4),(_2,_2)):((_8,_1),(_4,_16))");
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_tile(&a, CF_LAYOUT_OP_COMPOSITION, &tvl, &tv, &e), CF_OK);
  cr_expect_str_eq(lt_str(&tv.layout), "((_2,_4),(_2,_2)):((_2,_8),(_1,_4))");
  static const int64_t offs[][2] = {{0, 0}, {3, 10}, {7, 26}};
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(cf_ctensor_tv_partition(&a, &tvl, offs[k][0], &v, &e), CF_OK);
    cr_expect_str_eq(lt_str(&v.layout), "((_2,_2)):((_1,_4))");
    cr_expect_eq(offset_of(&v), offs[k][1], "thread %lld", (long long)offs[k][0]);
  }
}

Test(layout_tensor, products_do_not_tile_tensors)
{
  cf_ctensor a = tensor_on(buf, CF_CTENSOR_PTR, "(_4,_8)"), r;
  cf_layout b = lt_layout("_2:_1");
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_tile(&a, CF_LAYOUT_OP_LOGICAL_PRODUCT, &b, &r, &e), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(e.message, "tensors are tiled by composition and divides only, not by "
                              "logical_product (a product would reach outside the tensor)");
}

Test(layout_tensor, a_tiler_is_not_a_tensor_layout)
{
  cf_layout t = lt_tiler("<_4,_8>");
  cf_ctensor r;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_make(buf, 4, CF_CTENSOR_PTR, &t, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "make_tensor: expected a layout, got the tiler <_4,_8>");
}
