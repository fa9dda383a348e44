/* tests/layout/test_layout_swizzle.c: CuTe's Swizzle<B,M,S> (cf_swizzle_apply: CuTe's
 * values, a bijection and its own inverse), the swizzle chosen for rows of 16-byte chunks
 * (cf_swizzle_for_rows, the exact choices and refusals), and the property it is chosen
 * for, on the tensor-core schedule's operand tile (128 rows of 32 half, scheduler/
 * matmul_mma.c): every ldmatrix phase (8 lanes, each a 16-byte row of one 8x8 matrix)
 * touches 32 distinct banks, where the unswizzled tile puts 4 lanes on each bank. */
#include "layout_test_util.h"

static cf_swizzle chosen(int64_t elem, int64_t row) {
  cf_swizzle s = {-1, -1, -1};
  cf_layout_err e;
  cr_assert_eq(cf_swizzle_for_rows(elem, row, &s, &e), CF_OK, "%s", e.message);
  return s;
}

static const char *name(cf_swizzle s) {
  static char b[32];
  cf_swizzle_snprint(b, sizeof b, s);
  return b;
}

Test(layout_swizzle, apply_matches_cute) {
  cf_swizzle s = {2, 3, 3}; /* Sw<2,3,3>: bits 6..7 into bits 3..4 */
  cr_expect_eq(cf_swizzle_apply(s, 0), 0);
  cr_expect_eq(cf_swizzle_apply(s, 7), 7);          /* within a chunk: kept */
  cr_expect_eq(cf_swizzle_apply(s, 64), 64 + 8);    /* row 2, chunk 0 -> chunk 1 */
  cr_expect_eq(cf_swizzle_apply(s, 64 + 8), 64);    /* and back */
  cr_expect_eq(cf_swizzle_apply(s, 192 + 24 + 5), 192 + 0 + 5); /* (3 ^ 3) = 0 */
  for (int64_t o = 0; o < 4096; o++) cr_assert_eq(cf_swizzle_apply(s, cf_swizzle_apply(s, o)), o);
  bool hit[4096] = {false};
  for (int64_t o = 0; o < 4096; o++) hit[cf_swizzle_apply(s, o)] = true;
  for (int64_t o = 0; o < 4096; o++) cr_assert(hit[o], "offset %lld not reached", (long long)o);
  cr_expect_str_eq(name(s), "Sw<2,3,3>");
}

Test(layout_swizzle, chosen_for_rows_of_chunks) {
  cr_expect_str_eq(name(chosen(2, 64)), "Sw<2,3,3>");  /* 32 half: the schedule's tile */
  cr_expect_str_eq(name(chosen(2, 128)), "Sw<3,3,3>"); /* 64 half */
  cr_expect_str_eq(name(chosen(2, 32)), "Sw<1,3,3>");
  cr_expect_str_eq(name(chosen(2, 16)), "Sw<0,3,3>");  /* one chunk a row: nothing to do */
  cr_expect_str_eq(name(chosen(2, 256)), "Sw<3,3,4>");
  cr_expect_str_eq(name(chosen(4, 64)), "Sw<2,2,3>");  /* float: 4 elements a chunk */
  cf_swizzle s;
  cf_layout_err e;
  cr_expect_eq(cf_swizzle_for_rows(2, 48, &s, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "swizzle: rows of 48 bytes of 2-byte elements are not whole 16-byte chunks, a power of 2 "
                              "of them (no swizzle makes their 16-byte reads conflict free)");
  cr_expect_eq(cf_swizzle_for_rows(3, 64, &s, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_swizzle_check((cf_swizzle){3, 3, 2}, &e), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(e.message, "swizzle: Sw<3,3,2> is not a bijection CuTe allows (need B >= 0, M >= 0, S >= B, M + S + B <= 62)");
  cr_expect_eq(cf_swizzle_check((cf_swizzle){2, 3, 3}, &e), CF_OK);
}

/* The most lanes of one ldmatrix phase on one bank over every phase of a [rows, cols] tile
 * of half stored through s (identity: B = 0): each phase reads rows r0..r0+7 (r0 a multiple
 * of 8) at the same 16-byte chunk. */
static int worst_phase(cf_swizzle s, int rows, int cols) {
  int worst = 0;
  for (int r0 = 0; r0 < rows; r0 += 8)
    for (int c = 0; c < cols / 8; c++) {
      int bank[32] = {0};
      for (int q = 0; q < 8; q++) {
        int64_t byte = 2 * cf_swizzle_apply(s, (int64_t)(r0 + q) * cols + 8 * c);
        for (int w = 0; w < 4; w++) {
          int b = (int)((byte / 4 + w) % 32);
          if (++bank[b] > worst) worst = bank[b];
        }
      }
    }
  return worst;
}

Test(layout_swizzle, ldmatrix_phases_of_the_operand_tile_are_conflict_free) {
  cr_expect_eq(worst_phase(chosen(2, 64), 128, 32), 1);
  cr_expect_eq(worst_phase((cf_swizzle){0, 3, 3}, 128, 32), 4); /* unswizzled: 4-way */
  cr_expect_eq(worst_phase(chosen(2, 128), 128, 64), 1);
  cr_expect_eq(worst_phase(chosen(2, 32), 64, 16), 1);
  cr_expect_eq(worst_phase(chosen(2, 256), 64, 128), 1);
}
