/* tests/host/test_host_tma.c: the host runtime's TMA tile loads (codegen/runtime/
 * host_tma.h), driven by handwritten kernels: a box at the corner of a 10 x 20 float
 * tensor (its elements past the tensor zero), landed when its mbarrier is first waited on
 * and not before (a thread reading the tile earlier sees the block's 0xFF bytes); a box
 * under the 128-byte swizzle, whose 16-byte chunks move as wgmma's descriptors expect;
 * and the map and destination checks, each stopping the launch naming the thread. */
#include <criterion/criterion.h>
#include <math.h>

#include "tests/host/host_test_util.h"

static float in[256], out[256];

static cf_status run_tma(const char *src, const char *name, ExecHostError *err) {
  ExecHostModule *m = compile_ok(src, name);
  for (int i = 0; i < 256; i++) out[i] = -1.0f;
  Arg a[2];
  arg_1d(&a[0], in, 256);
  arg_1d(&a[1], out, 256);
  cf_status s = run1(m, 1, 32, 4096, 2, a, err);
  exec_host_module_free(m);
  return s;
}

/* in as a [10, 20] float tensor; the box of 4 rows x 8 columns at row 8, column 16 (rows
 * 10, 11 and columns 20..23 are outside), loaded by thread 0 into shared offset 128;
 * thread 1 reads the tile's first element before any thread waits (out[40]: thread 0 is
 * parked at the barrier then); after the wait each thread copies one element
 * (out[0..31]). */
static const char *corner_kernel =
    "void corner(T1f in, T1f out);\n"
    "void corner(T1f in, T1f out) {\n"
    "  static cfh_tensor_map map;\n"
    "  uint64_t *bar = (uint64_t *)cfh_smem();\n"
    "  float *tile = (float *)((unsigned char *)cfh_smem() + 128);\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t == 0) {\n"
    "    map = (cfh_tensor_map){in.data, 2, 4, {20, 10}, {4, 80}, {8, 4}, 0};\n"
    "    cfh_mbarrier_init(bar, 1);\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (t == 0) {\n"
    "    const int32_t at[2] = {16, 8};\n"
    "    cfh_mbarrier_arrive_expect_tx(bar, 128);\n"
    "    cfh_tma_load_tile(tile, &map, at, bar);\n"
    "  }\n"
    "  if (t == 1) out.data[40] = tile[0];\n"
    "  __syncthreads();\n"
    "  cfh_mbarrier_wait_parity(bar, 0);\n"
    "  out.data[t] = tile[t];\n"
    "}\n";

Test(host_tma, a_box_past_the_corner_lands_at_the_wait_with_zeros_outside) {
  for (int i = 0; i < 256; i++) in[i] = (float)i;
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run_tma(corner_kernel, "corner", &err), CF_OK, "%s", err.msg);
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 8; c++) {
      int row = 8 + r, col = 16 + c;
      float want = row < 10 && col < 20 ? (float)(row * 20 + col) : 0.0f;
      cr_expect_eq(out[r * 8 + c], want, "box (%d, %d): %g", r, c, out[r * 8 + c]);
    }
  cr_expect(isnan(out[40]), "read before the wait: the block's 0xFF bytes, not %g", out[40]);
  exec_host_error_clear(&err);
}

/* A box of 8 rows of 32 floats (128-byte rows) under the 128-byte swizzle at shared
 * offset 1024; thread t copies the tile's words t, t + 32, ... as they lie. */
static const char *swizzle_kernel =
    "void swz(T1f in, T1f out);\n"
    "void swz(T1f in, T1f out) {\n"
    "  static cfh_tensor_map map;\n"
    "  uint64_t *bar = (uint64_t *)cfh_smem();\n"
    "  float *tile = (float *)((unsigned char *)cfh_smem() + 1024);\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t == 0) {\n"
    "    map = (cfh_tensor_map){in.data, 2, 4, {32, 8}, {4, 128}, {32, 8}, 128};\n"
    "    cfh_mbarrier_init(bar, 1);\n"
    "    const int32_t at[2] = {0, 0};\n"
    "    cfh_mbarrier_arrive_expect_tx(bar, 1024);\n"
    "    cfh_tma_load_tile(tile, &map, at, bar);\n"
    "  }\n"
    "  __syncthreads();\n"
    "  cfh_mbarrier_wait_parity(bar, 0);\n"
    "  for (unsigned i = t; i < 256; i += 32) out.data[i] = tile[i];\n"
    "}\n";

/* Element (r, c) at byte r 128 + 4c, its 16-byte chunk (bits 4..6) XORed with r % 8. */
Test(host_tma, the_128_byte_swizzle_moves_each_rows_chunks) {
  for (int i = 0; i < 256; i++) in[i] = (float)i;
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run_tma(swizzle_kernel, "swz", &err), CF_OK, "%s", err.msg);
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 32; c++) {
      int byte = r * 128 + 4 * c, moved = byte ^ ((r % 8) << 4);
      cr_expect_eq(out[moved / 4], (float)(r * 32 + c), "element (%d, %d) at byte %d", r, c, moved);
    }
  cr_expect_eq(out[4], 4.0f);   /* row 0 unmoved */
  cr_expect_eq(out[36], 32.0f); /* row 1's chunks 0 and 1 swapped */
  cr_expect_eq(out[32], 36.0f);
  exec_host_error_clear(&err);
}

/* The checks: a destination off the swizzle's period, a row wider than the swizzle, a box
 * past the end of shared memory. */
Test(host_tma, maps_and_destinations_are_checked) {
  static const char *const args[3][2] = {
      {"{in.data, 2, 4, {32, 8}, {4, 128}, {32, 8}, 128}", "512"},
      {"{in.data, 2, 4, {64, 4}, {4, 256}, {64, 4}, 128}", "1024"},
      {"{in.data, 2, 4, {32, 8}, {4, 128}, {32, 8}, 0}", "3584"}};
  static const char *const want[3] = {
      "block (0,0,0) thread (0,0,0): cp.async.bulk.tensor: the box's destination at shared offset 512 is not aligned "
      "to 1024 bytes",
      "block (0,0,0) thread (0,0,0): cp.async.bulk.tensor: the box's inner row of 256 bytes is wider than the "
      "128-byte swizzle",
      "block (0,0,0) thread (0,0,0): cp.async.bulk.tensor: the 1024-byte box at "};
  for (int i = 0; i < 3; i++) {
    char src[1024];
    snprintf(src, sizeof src,
             "void bad(T1f in, T1f out);\nvoid bad(T1f in, T1f out) {\n  static cfh_tensor_map map;\n"
             "  uint64_t *bar = (uint64_t *)cfh_smem();\n  if (threadIdx.x != 0) return;\n"
             "  map = (cfh_tensor_map)%s;\n  cfh_mbarrier_init(bar, 1);\n  const int32_t at[2] = {0, 0};\n"
             "  cfh_tma_load_tile((unsigned char *)cfh_smem() + %s, &map, at, bar);\n}\n",
             args[i][0], args[i][1]);
    ExecHostError err = {{0}, NULL, NULL};
    cr_assert_eq(run_tma(src, "bad", &err), CF_ERR_RUNTIME, "case %d", i);
    cr_expect(!strncmp(err.msg, want[i], strlen(want[i])), "case %d: %s", i, err.msg);
    exec_host_error_clear(&err);
  }
}
