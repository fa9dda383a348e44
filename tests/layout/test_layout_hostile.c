/* tests/layout/test_layout_hostile.c: hostile input to the layout library (issue 16):
 * tensor offsets whose byte offset or address would overflow are refused (checked
 * arithmetic, never a wrapped pointer), local_partition with a rank-0 tile is refused
 * (it read uninitialized memory), and the parser survives very deep and very long text
 * (offsets are size_t; nesting is bounded with an error, not the stack). */
#include <stdlib.h>

#include "layout_test_util.h"

static cf_ctensor tensor_at(uintptr_t address, size_t elem_bytes, const char *layout)
{
  cf_layout l = lt_layout(layout);
  cf_ctensor t;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_make((void *)address, elem_bytes, CF_CTENSOR_PTR, &l, &t, &e), CF_OK,
               "%s", e.message);
  return t;
}

Test(layout_hostile, byte_offsets_that_overflow_are_refused)
{
  /* 2^62 elements of 8 bytes: the index fits in int64_t, the byte offset does not */
  cf_ctensor t = tensor_at(0x1000, 8, "(2,2):(4611686018427387904,1)");
  void *p = (void *)1;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_at_index(&t, 1, &p, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "tensor(i): offset of 4611686018427387904 elements of 8 bytes "
                              "from 0x1000 overflows the address space");
  cr_expect_eq(p, (void *)1, "no pointer comes back");
  cf_int_tuple c = lt_tuple("(1,0)");
  cr_assert_eq(cf_ctensor_at(&t, &c, &p, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "tensor(coord): offset of 4611686018427387904 elements of 8 "
                              "bytes from 0x1000 overflows the address space");
  cf_ctensor v;
  c = lt_tuple("(1,_)");
  cr_assert_eq(cf_ctensor_slice(&t, &c, &v, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "slice: offset of 4611686018427387904 elements of 8 bytes from "
                              "0x1000 overflows the address space");
  /* in range, the same tensor works */
  cr_assert_eq(cf_ctensor_at_index(&t, 2, &p, &e), CF_OK, "%s", e.message);
  cr_expect_eq((uintptr_t)p, 0x1008);
}

Test(layout_hostile, addresses_that_wrap_are_refused)
{
  cf_ctensor low = tensor_at(0x10, 8, "4:-1"), high = tensor_at(UINTPTR_MAX - 15, 8, "4:1");
  void *p = NULL;
  cf_layout_err e;
  cr_assert_eq(cf_ctensor_at_index(&low, 3, &p, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "tensor(i): offset of -3 elements of 8 bytes from 0x10 overflows "
                              "the address space");
  cr_assert_eq(cf_ctensor_at_index(&low, 1, &p, &e), CF_OK, "%s", e.message);
  cr_expect_eq((uintptr_t)p, 0x8);
  cr_assert_eq(cf_ctensor_at_index(&high, 2, &p, &e), CF_ERR_INVALID_ARGUMENT);
  cr_assert_eq(cf_ctensor_at_index(&high, 1, &p, &e), CF_OK, "%s", e.message);
  cr_expect_eq((uintptr_t)p, UINTPTR_MAX - 7);
}

Test(layout_hostile, local_partition_with_a_rank0_tile_is_refused)
{
  static float data[64];
  cf_ctensor t = tensor_at((uintptr_t)data, sizeof(float), "(_8,_8)"), r;
  cf_layout tile = lt_layout("():()");
  cf_layout_err e;
  cr_assert_eq(cf_layout_rank(&tile), 0);
  cr_assert_eq(cf_ctensor_local_partition(&t, &tile, 0, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "local_partition: the tile has rank 0 (no mode to partition by)");
  cf_layout tiler = lt_tiler("<_2,_2>");
  cr_assert_eq(cf_ctensor_local_partition(&t, &tiler, 0, &r, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "local_partition: expected a layout, got the tiler <_2,_2>");
}

/* n copies of c, then tail. */
static char *repeat(char c, size_t n, const char *tail)
{
  char *s = malloc(n + strlen(tail) + 1);
  cr_assert_not_null(s);
  memset(s, c, n);
  strcpy(s + n, tail);
  return s;
}

Test(layout_hostile, deep_and_long_text_is_an_error_not_a_crash)
{
  cf_layout l;
  cf_int_tuple t;
  cf_layout_err e;
  char *deep = repeat('(', 1000000, "");
  cr_expect_eq(cf_layout_parse_tiler(deep, &l, &e), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(e.message, "tuples nested deeper than 32 levels");
  cr_expect_eq(cf_tuple_parse(deep, &t, &e), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(e.message, "tuples nested deeper than 32 levels");
  free(deep);
  /* a long text: the offset of the error is exact past 2^16 */
  char *spaces = repeat(' ', 100000, "(4,8");
  cr_expect_eq(cf_layout_parse(spaces, &l, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect(strstr(e.message, "expected ',' or ')' at offset 100004 in") == e.message, "%s",
            e.message);
  free(spaces);
  char *wide = repeat('1', 100000, "");
  cr_expect_eq(cf_tuple_parse(wide, &t, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect(strstr(e.message, "integer at offset 0 in") == e.message, "%s", e.message);
  free(wide);
}
