/* tests/host/test_host_wgmma.c: wgmma's matrix descriptors, exactly. The lowering's
 * encoding of the constant fields (lower/mma_wgmma.c: LBO and SBO >> 4 at bits 16 and 32,
 * the swizzle mode at 62), layout/'s swizzle as the rule both the tile's storage (on
 * elements) and the hardware (on bytes) follow, and the host runtime's decode
 * (codegen/runtime/host_wgmma.h, cfh_wgmma_address) against addresses computed by hand
 * from the PTX ISA's canonical layouts, K-major and MN-major, 128- and 64-byte swizzles;
 * a descriptor the emulation does not model (no swizzle) is an error naming it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cfuser/layout.h"
#include "lower/lower.h"
#include "tests/host/host_test_util.h"

Test(host_wgmma, descriptor_fields) {
  /* K-major 128-byte rows: LBO 16 (unused, 1 by convention), SBO 1024 (8 rows of 128 B) */
  cr_expect_eq(lower_wgmma_desc_bits(16, 1024, 3), 0x4000004000010000ull);
  /* MN-major 128-byte rows of a [2][64][64] tile: LBO 8192 between 64-column blocks */
  cr_expect_eq(lower_wgmma_desc_bits(8192, 1024, 3), 0x4000004002000000ull);
  cr_expect_eq(lower_wgmma_desc_bits(16, 512, 2), 0x8000002000010000ull);  /* 64-byte rows */
  cr_expect_eq(lower_wgmma_desc_bits(16, 256, 1), 0xC000001000010000ull);  /* 32-byte rows */
}

/* The 128-byte swizzle: chunk bits 4..6 of a byte address XORed with its row bits 7..9. */
Test(host_wgmma, swizzle_128b_on_bytes_and_elements) {
  cf_swizzle bytes = {3, 4, 3}, elems;
  cr_expect_eq(cf_swizzle_apply(bytes, 1152), 1168);  /* row 1 (of 9), chunk 0 -> 1 */
  cr_expect_eq(cf_swizzle_apply(bytes, 1426), 1442);  /* row 3, chunk 1 -> 2 */
  cr_expect_eq(cf_swizzle_apply(bytes, 2176), 2192);  /* row 17 = 1 of its 8 */
  cr_expect_eq(cf_swizzle_apply(bytes, 1023), 1023 ^ (7 << 4)); /* row 7, chunk 7 -> 0 */
  /* the tile's rows of 64 16-bit elements are stored through layout/'s Sw<3,3,3> on
   * element offsets: the same map as the hardware's Sw<3,4,3> on byte addresses */
  cr_assert_eq(cf_swizzle_for_rows(2, 128, &elems, NULL), CF_OK);
  cr_expect(elems.bits == 3 && elems.base == 3 && elems.shift == 3);
  for (int64_t o = 0; o < 4096; o++) cr_assert_eq(2 * cf_swizzle_apply(elems, o), cf_swizzle_apply(bytes, 2 * o));
}

/* cfh_wgmma_address of each (descriptor, mn, k, MN-major) row, written by thread 0. */
static const char *address_kernel =
    "void addr(T1u out);\n"
    "void addr(T1u out) {\n"
    "  static const unsigned long long d[3] = {0x4000004000010040ull, 0x4000004002000000ull, 0x8000002000010000ull};\n"
    "  static const unsigned q[14][4] = {{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 3, 9, 0}, {0, 9, 0, 0}, {0, 63, 15, 0},\n"
    "      {1, 0, 0, 1}, {1, 8, 0, 1}, {1, 64, 0, 1}, {1, 5, 3, 1}, {1, 17, 9, 1}, {1, 127, 15, 1},\n"
    "      {2, 1, 0, 0}, {2, 2, 0, 0}, {2, 3, 5, 0}};\n"
    "  if (threadIdx.x == 0)\n"
    "    for (int i = 0; i < 14; i++) out.data[i] = cfh_wgmma_address(d[q[i][0]], q[i][1], q[i][2], (int)q[i][3]);\n"
    "}\n";

/* By hand: K-major 128 B from 1024 (start field 64): (m, k) at 1024 + (m % 8) 128 + (m / 8)
 * 1024 + 2k, then bits 4..6 ^= bits 7..9: (1, 0) 1152 -> 1168; (3, 9) 1024 + 384 + 18 = 1426
 * -> 1442; (9, 0) 2176 -> 2192; (63, 15) 9182 -> 9198. MN-major 128 B, LBO 8192, SBO 1024:
 * (n, k) at 2 (n % 64) + (n / 64) 8192 + (k % 8) 128 + (k / 8) 1024: (8, 0) 16; (64, 0) 8192;
 * (5, 3) 394 -> 442; (17, 9) 1186 -> 1202; (127, 15) 10126. K-major 64 B, SBO 512, bits
 * 4..5 ^= bits 7..8: (1, 0) 64; (2, 0) 128 -> 144; (3, 5) 202 -> 218. */
Test(host_wgmma, runtime_decodes_descriptors) {
  static const uint32_t want[14] = {1024, 1168, 1442, 2192, 9198, 0, 16, 8192, 442, 1202, 10126, 64, 144, 218};
  ExecHostModule *m = compile_ok(address_kernel, "addr");
  uint32_t out[14] = {0};
  Arg a;
  arg_1d(&a, out, 14);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 32, 0, 1, &a, &err), CF_OK, "%s", err.msg);
  for (int i = 0; i < 14; i++) cr_expect_eq(out[i], want[i], "row %d: %u, by hand %u", i, out[i], want[i]);
  exec_host_module_free(m);
}

/* A warpgroup's wgmma whose A descriptor has no swizzle mode: an error naming it. */
Test(host_wgmma, unmodelled_descriptor_is_an_error) {
  ExecHostModule *m = compile_ok("void bad(T1f out);\n"
                                 "void bad(T1f out) {\n"
                                 "  float d[4] = {0, 0, 0, 0};\n"
                                 "  float *const acc[4] = {&d[0], &d[1], &d[2], &d[3]};\n"
                                 "  cfh_wgmma(8, 1, 0, 0, 0x0000004000010000ull, 0x4000004000010000ull, acc);\n"
                                 "  out.data[threadIdx.x] = d[0];\n"
                                 "}\n", "bad");
  float out[128];
  Arg a;
  arg_1d(&a, out, 128);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 2048, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "wgmma: block (0,0,0) warp 0: operand A's descriptor 0x0000004000010000 has an "
                            "interleaved layout or a base offset, which are not emulated");
  exec_host_module_free(m);
}

/* A wgmma reads its operands and adds into its accumulator at the wait that retires it,
 * not when issued: shared memory rewritten between commit and wait (ones, then twos) gives
 * 16 products of 2 x 2, and the accumulator read before the wait still holds 0. */
Test(host_wgmma, a_wgmma_completes_at_its_wait) {
  ExecHostModule *m = compile_ok("void late(T1f out);\n"
                                 "void late(T1f out) {\n"
                                 "  unsigned short *s = (unsigned short *)cfh_smem();\n"
                                 "  for (unsigned i = threadIdx.x; i < 4608; i += 128) s[i] = 0x3F80; /* bf16 1 */\n"
                                 "  __syncthreads();\n"
                                 "  float d[4] = {0, 0, 0, 0};\n"
                                 "  float *const acc[4] = {&d[0], &d[1], &d[2], &d[3]};\n"
                                 "  cfh_wgmma(8, 1, 0, 0, 0x4000004000010000ull, 0x4000004000010200ull, acc);\n"
                                 "  cfh_wgmma_commit();\n"
                                 "  __syncthreads();\n"
                                 "  for (unsigned i = threadIdx.x; i < 4608; i += 128) s[i] = 0x4000; /* bf16 2 */\n"
                                 "  __syncthreads();\n"
                                 "  out.data[threadIdx.x] = d[0];\n"
                                 "  cfh_wgmma_wait(0);\n"
                                 "  out.data[128 + threadIdx.x] = d[3];\n"
                                 "}\n", "late");
  float out[256];
  Arg a;
  arg_1d(&a, out, 256);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 16384, 1, &a, &err), CF_OK, "%s", err.msg);
  for (int i = 0; i < 128; i++) {
    cr_expect_eq(out[i], 0.0f, "thread %d read %g before the wait", i, out[i]);
    cr_expect_eq(out[128 + i], 64.0f, "thread %d: %g after the wait", i, out[128 + i]);
  }
  exec_host_module_free(m);
}

/* A wgmma issued and committed but never waited for: an error at the block's end. */
Test(host_wgmma, a_wgmma_never_waited_for_is_an_error) {
  ExecHostModule *m = compile_ok("void never(T1f out);\n"
                                 "void never(T1f out) {\n"
                                 "  float d[4] = {0, 0, 0, 0};\n"
                                 "  float *const acc[4] = {&d[0], &d[1], &d[2], &d[3]};\n"
                                 "  cfh_wgmma(8, 1, 0, 0, 0x4000004000010000ull, 0x4000004000010200ull, acc);\n"
                                 "  cfh_wgmma_commit();\n"
                                 "  out.data[threadIdx.x] = d[0];\n"
                                 "}\n", "never");
  float out[128];
  Arg a;
  arg_1d(&a, out, 128);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 16384, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "wgmma: block (0,0,0) warp 0: 1 wgmma.mma_async issued and never waited for "
                            "(wgmma.wait_group): the accumulator is undefined");
  exec_host_module_free(m);
}

/* More wgmmas in flight than the emulation keeps (64 a warp, none waited for): an error
 * naming the warp and the limit. */
Test(host_wgmma, too_many_wgmmas_in_flight_is_an_error) {
  ExecHostModule *m = compile_ok("void many(T1f out);\n"
                                 "void many(T1f out) {\n"
                                 "  float d[4] = {0, 0, 0, 0};\n"
                                 "  float *const acc[4] = {&d[0], &d[1], &d[2], &d[3]};\n"
                                 "  for (int i = 0; i < 65; i++)\n"
                                 "    cfh_wgmma(8, 1, 0, 0, 0x4000004000010000ull, 0x4000004000010200ull, acc);\n"
                                 "  out.data[threadIdx.x] = d[0];\n"
                                 "}\n", "many");
  float out[128];
  Arg a;
  arg_1d(&a, out, 128);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 16384, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "wgmma: block (0,0,0) warp 0 has 64 wgmma.mma_async in flight (the emulation's limit)");
  exec_host_module_free(m);
}
