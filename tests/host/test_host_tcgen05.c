/* tests/host/test_host_tcgen05.c: Blackwell's tcgen05.mma on the host backend
 * (codegen/runtime/host_tcgen05.h), driven by handwritten kernels. Its shared-memory
 * descriptors decoded (cfh_tcgen05_address) against addresses computed by hand from the
 * PTX ISA's canonical layouts, K-major and MN-major, 128- and 64-byte swizzles (the same
 * addresses as wgmma's, in tcgen05's encoding); an instruction performed only at the wait
 * on its commit's mbarrier (tensor memory read before it holds what tcgen05.alloc left,
 * shared memory rewritten before it is what it reads), D = A x B without enable-input-d
 * and D += A x B with it; an instruction never completed, and fields the emulation does
 * not run, are errors naming them. */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/host/host_test_util.h"

/* cfh_tcgen05_address of each (descriptor, mn, k, MN-major) row, written by thread 0. */
static const char *address_kernel =
    "void addr(T1u out);\n"
    "void addr(T1u out) {\n"
    "  static const unsigned long long d[3] = {0x4000404000010040ull, 0x4000404002000000ull, 0x8000402000010000ull};\n"
    "  static const unsigned q[14][4] = {{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 3, 9, 0}, {0, 9, 0, 0}, {0, 63, 15, 0},\n"
    "      {1, 0, 0, 1}, {1, 8, 0, 1}, {1, 64, 0, 1}, {1, 5, 3, 1}, {1, 17, 9, 1}, {1, 127, 15, 1},\n"
    "      {2, 1, 0, 0}, {2, 2, 0, 0}, {2, 3, 5, 0}};\n"
    "  if (threadIdx.x == 0)\n"
    "    for (int i = 0; i < 14; i++) out.data[i] = cfh_tcgen05_address(d[q[i][0]], q[i][1], q[i][2], (int)q[i][3]);\n"
    "}\n";

/* By hand (as tests/host/test_host_wgmma.c: the layouts are wgmma's): K-major 128 B from
 * 1024 (start field 64): (m, k) at 1024 + (m % 8) 128 + (m / 8) 1024 + 2k, then bits 4..6
 * ^= bits 7..9: (1, 0) 1152 -> 1168; (3, 9) 1426 -> 1442; (9, 0) 2176 -> 2192; (63, 15)
 * 9182 -> 9198. MN-major 128 B, LBO 8192, SBO 1024: (n, k) at 2 (n % 64) + (n / 64) 8192 +
 * (k % 8) 128 + (k / 8) 1024: (8, 0) 16; (64, 0) 8192; (5, 3) 394 -> 442; (17, 9) 1186 ->
 * 1202; (127, 15) 10126. K-major 64 B (layout type 4), SBO 512, bits 4..5 ^= bits 7..8:
 * (1, 0) 64; (2, 0) 128 -> 144; (3, 5) 202 -> 218. */
Test(host_tcgen05, runtime_decodes_descriptors) {
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

/* Shared memory: the mbarrier at 0, the tensor-memory slot at 8, A (128 rows of 128 bytes,
 * K-major, 128-byte swizzle) at 1024, B (16 rows) at 17408; an m128n16k16 bf16 instruction
 * (idesc 0x08040490) into the 32 columns tcgen05.alloc gave. */
#define TC05_SETUP                                                                                 \
  "  unsigned char *sm = (unsigned char *)cfh_smem();\n"                                           \
  "  uint64_t *bar = (uint64_t *)sm;\n"                                                            \
  "  uint32_t *slot = (uint32_t *)(sm + 8);\n"                                                     \
  "  unsigned short *s = (unsigned short *)(sm + 1024);\n"                                         \
  "  for (unsigned i = threadIdx.x; i < 9216; i += 128) s[i] = 0x3F80; /* bf16 1 */\n"             \
  "  if (threadIdx.x < 32) cfh_tcgen05_alloc(slot, 32);\n"                                         \
  "  if (threadIdx.x < 32) cfh_tcgen05_relinquish_alloc_permit();\n"                               \
  "  if (threadIdx.x == 0) cfh_mbarrier_init(bar, 1);\n"                                           \
  "  __syncthreads();\n"                                                                           \
  "  const uint64_t da = 0x4000404000010040ull, db = 0x4000404000010440ull;\n"                     \
  "  const uint32_t lane = (threadIdx.x / 32 * 32) << 16;\n"                                       \
  "  uint32_t r[1];\n"

#define TC05_TEARDOWN                                                                              \
  "  __syncthreads();\n"                                                                           \
  "  if (threadIdx.x < 32) cfh_tcgen05_dealloc(slot[0], 32);\n"

/* The instruction is performed at the wait on its commit's barrier: before it, tensor
 * memory still holds tcgen05.alloc's 0xFF bytes; shared memory rewritten between commit
 * and wait (ones, then twos) gives 16 products of 2 x 2 = 64; a second instruction with
 * enable-input-d adds 16 x 4 x 4 = 256 more (fours by then), after the phase of parity 1. */
Test(host_tcgen05, an_instruction_completes_at_the_wait_on_its_commit) {
  ExecHostModule *m = compile_ok("void late(T1u out);\n"
                                 "void late(T1u out) {\n" TC05_SETUP
                                 "  if (threadIdx.x == 0) {\n"
                                 "    cfh_tcgen05_mma(slot[0], da, db, 0x08040490u, 0);\n"
                                 "    cfh_tcgen05_commit(bar);\n"
                                 "  }\n"
                                 "  __syncthreads();\n"
                                 "  for (unsigned i = threadIdx.x; i < 9216; i += 128) s[i] = 0x4000; /* bf16 2 */\n"
                                 "  __syncthreads();\n"
                                 "  cfh_tcgen05_ld_32x32b(slot[0] + lane + 3, 1, r);\n"
                                 "  out.data[threadIdx.x] = r[0];\n"
                                 "  cfh_mbarrier_wait_parity(bar, 0);\n"
                                 "  cfh_tcgen05_ld_32x32b(slot[0] + lane + 15, 1, r);\n"
                                 "  out.data[128 + threadIdx.x] = r[0];\n"
                                 "  __syncthreads();\n"
                                 "  for (unsigned i = threadIdx.x; i < 9216; i += 128) s[i] = 0x4080; /* bf16 4 */\n"
                                 "  __syncthreads();\n"
                                 "  if (threadIdx.x == 0) {\n"
                                 "    cfh_tcgen05_mma(slot[0], da, db, 0x08040490u, 1);\n"
                                 "    cfh_tcgen05_commit(bar);\n"
                                 "  }\n"
                                 "  cfh_mbarrier_wait_parity(bar, 1);\n"
                                 "  cfh_tcgen05_ld_32x32b(slot[0] + lane, 1, r);\n"
                                 "  out.data[256 + threadIdx.x] = r[0];\n" TC05_TEARDOWN "}\n",
                                 "late");
  uint32_t out[384];
  Arg a;
  arg_1d(&a, out, 384);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 20480, 1, &a, &err), CF_OK, "%s", err.msg);
  for (int i = 0; i < 128; i++) {
    cr_expect_eq(out[i], 0xFFFFFFFFu, "thread %d read 0x%08x before the wait", i, out[i]);
    cr_expect_eq(out[128 + i], 0x42800000u, "thread %d: 0x%08x after the wait (64.0f: 0x42800000)", i, out[128 + i]);
    cr_expect_eq(out[256 + i], 0x43A00000u, "thread %d: 0x%08x accumulated (320.0f: 0x43A00000)", i, out[256 + i]);
  }
  exec_host_module_free(m);
}

/* An instruction committed but never waited for: an error at the block's end. */
Test(host_tcgen05, an_instruction_never_completed_is_an_error) {
  ExecHostModule *m = compile_ok("void never(T1u out);\n"
                                 "void never(T1u out) {\n" TC05_SETUP
                                 "  if (threadIdx.x == 0) {\n"
                                 "    cfh_tcgen05_mma(slot[0], da, db, 0x08040490u, 0);\n"
                                 "    cfh_tcgen05_commit(bar);\n"
                                 "  }\n"
                                 "  out.data[threadIdx.x] = 0;\n" TC05_TEARDOWN "}\n",
                                 "never");
  uint32_t out[128];
  Arg a;
  arg_1d(&a, out, 128);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 20480, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "tcgen05.mma: block (0,0,0): 2 tcgen05 operations issued and never completed (no thread "
                            "waited on the mbarrier of a tcgen05.commit after them): the accumulator is undefined");
  exec_host_module_free(m);
}

/* Fields the emulation does not run: each an error naming the field. */
static void expect_refused(const char *call, const char *want) {
  char kernel[4096];
  snprintf(kernel, sizeof kernel, "void bad(T1u out);\nvoid bad(T1u out) {\n" TC05_SETUP
           "  if (threadIdx.x == 0) %s;\n  out.data[threadIdx.x] = 0;\n" TC05_TEARDOWN "}\n", call);
  ExecHostModule *m = compile_ok(kernel, "bad");
  uint32_t out[128];
  Arg a;
  arg_1d(&a, out, 128);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 128, 20480, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, want);
  exec_host_module_free(m);
}

Test(host_tcgen05, fields_it_does_not_run_are_errors) {
  expect_refused("cfh_tcgen05_mma(slot[0], da, db, 0x04040490u, 0)",
                 "block (0,0,0) thread (0,0,0): tcgen05.mma: the instruction descriptor 0x04040490 has an M other "
                 "than 128 (M 64 is not emulated)");
  expect_refused("cfh_tcgen05_mma(slot[0], da, db, 0x08060490u, 0)",
                 "block (0,0,0) thread (0,0,0): tcgen05.mma: the instruction descriptor 0x08060490 has an N that "
                 "m128nNk16 does not have (a multiple of 16 up to 256)");
  expect_refused("cfh_tcgen05_mma(slot[0], 0x4000004000010040ull, db, 0x08040490u, 0)",
                 "block (0,0,0) thread (0,0,0): tcgen05.mma: operand A's descriptor 0x4000004000010040 lacks the "
                 "fixed 0b001 at bits 46..48");
  expect_refused("cfh_tcgen05_mma(slot[0], da, 0x0000404000010440ull, 0x08040490u, 0)",
                 "block (0,0,0) thread (0,0,0): tcgen05.mma: operand B's descriptor 0x0000404000010440 has no "
                 "swizzle or the 32-byte-atom one, which are not emulated");
  expect_refused("cfh_tcgen05_mma(slot[0] + 32, da, db, 0x08040490u, 0)",
                 "block (0,0,0) thread (0,0,0): tcgen05.mma: D's columns 32..47: column 32 is not allocated "
                 "(allocated: 0..31)");
}
