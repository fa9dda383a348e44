/* tests/host/test_host_tmem.c: the host backend's tensor-memory emulation, on handwritten
 * kernels compiled through executor/host.c. Round trips through TMEM checked exactly (on 1-D
 * and 3-D blocks, and across warps sharing a sub-partition), then one deliberately wrong
 * kernel per hardware rule the runtime enforces, each asserting the exact message of its
 * run-time check: wrong sub-partition, partial warp (missing and diverged lanes), lanes
 * passing different addresses or reaching different instructions, columns not allocated,
 * dealloc of columns never allocated, a CTA ending with columns allocated, bad column
 * counts, alloc after relinquish, and a __syncthreads deadlock. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "executor/exec_host.h"
#include "tests/host/host_test_util.h"

/* Warp 0 allocates NCOLS columns into the shared-memory slot and relinquishes the permit. */
#define PROLOGUE(ncols)                                                                         \
  "  uint32_t *slot = (uint32_t *)cfh_smem();\n"                                                \
  "  unsigned tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n" \
  "  unsigned warp = tid / 32, lane = tid % 32;\n"                                              \
  "  (void)lane;\n"                                                                             \
  "  if (warp == 0) { cfh_tcgen05_alloc(slot, " #ncols "); cfh_tcgen05_relinquish_alloc_permit(); }\n" \
  "  __syncthreads();\n"                                                                        \
  "  uint32_t base = *slot;\n"

/* Launches a kernel of no parameters on `threads` threads of one (or `blocks`) blocks and
 * returns its status, with the message in msg. */
static cf_status run_rule(const char *kernel, int64_t blocks, int64_t threads, char *msg, size_t n) {
  ExecHostModule *m = compile_ok(kernel, "rule");
  ExecHostError err = {{0}, NULL, NULL};
  cf_status st = run1(m, blocks, threads, 16, 0, NULL, &err);
  snprintf(msg, n, "%s", err.msg);
  exec_host_module_free(m);
  return st;
}

#define EXPECT_RULE(kernel, blocks, threads, message)                   \
  do {                                                                  \
    char msg_[2048];                                                    \
    cr_assert_eq(run_rule(kernel, blocks, threads, msg_, sizeof msg_), \
                 CF_ERR_RUNTIME, "ran without error: %s", msg_);        \
    cr_assert_str_eq(msg_, message);                                    \
  } while (0)

/* ---- round trips ------------------------------------------------------------------------------ */

/* Each of 4 warps stores 4 words per thread at columns 32..35 of its sub-partition, then
 * loads them back (x4), and column 35 alone (x1); a 64-column allocation. */
static const char *round_trip_kernel =
    "void rt(T1u in, T1u out);\n"
    "void rt(T1u in, T1u out) {\n" PROLOGUE(64)
    "  int64_t b = blockIdx.x * 128;\n"
    "  uint32_t regs[4], back[4], last;\n"
    "  for (int j = 0; j < 4; j++) regs[j] = in.data[(b + tid) * 4 + j];\n"
    "  uint32_t addr = cfh_tmem_add(base, 32 * (warp % 4), 32);\n"
    "  cfh_tcgen05_st_32x32b(addr, 4, regs);\n"
    "  cfh_tcgen05_wait_st();\n"
    "  __syncthreads();\n"
    "  cfh_tcgen05_ld_32x32b(addr, 4, back);\n"
    "  cfh_tcgen05_ld_32x32b(cfh_tmem_add(addr, 0, 3), 1, &last);\n"
    "  cfh_tcgen05_wait_ld();\n"
    "  for (int j = 0; j < 4; j++) out.data[(b + tid) * 5 + j] = back[j];\n"
    "  out.data[(b + tid) * 5 + 4] = last;\n"
    "  __syncthreads();\n"
    "  if (warp == 0) cfh_tcgen05_dealloc(base, 64);\n"
    "}\n";

static void round_trip(int64_t bx, int64_t by, int64_t bz) {
  enum { BLOCKS = 3, T = 128 };
  ExecHostModule *m = compile_ok(round_trip_kernel, "rt");
  uint32_t *in = malloc(sizeof(uint32_t) * BLOCKS * T * 4), *out = calloc(BLOCKS * T * 5, 4);
  for (int i = 0; i < BLOCKS * T * 4; i++) in[i] = 0x9E3779B9u * (uint32_t)(i + 1);
  Arg a[2];
  arg_1d(&a[0], in, BLOCKS * T * 4);
  arg_1d(&a[1], out, BLOCKS * T * 5);
  int64_t g[3] = {BLOCKS, 1, 1}, b[3] = {bx, by, bz};
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(exec_host_launch(m, g, b, 4, 2, (ExecHostParam[]){a[0].p, a[1].p},
                                (void *[]){a[0].buf, a[1].buf}, &err), CF_OK, "%s", err.msg);
  for (int t = 0; t < BLOCKS * T; t++) {
    for (int j = 0; j < 4; j++) cr_assert_eq(out[t * 5 + j], in[t * 4 + j], "thread %d word %d", t, j);
    cr_assert_eq(out[t * 5 + 4], in[t * 4 + 3], "thread %d, column 35 alone", t);
  }
  free(in);
  free(out);
  exec_host_module_free(m);
}

Test(host_tmem, round_trip_by_four_warps) { round_trip(128, 1, 1); }
Test(host_tmem, round_trip_on_a_3d_block_uses_linear_thread_ids) { round_trip(8, 4, 4); }

/* Warps 4..7 read what warps 0..3 wrote: warp w and w + 4 share sub-partition w % 4. Their
 * second column was allocated but never written: it holds the 0xFF.. fill. */
Test(host_tmem, warps_of_two_warp_groups_share_sub_partitions) {
  ExecHostModule *m = compile_ok(
      "void share(T1u out);\n"
      "void share(T1u out) {\n" PROLOGUE(32)
      "  uint32_t v = 1000 + tid, got[2];\n"
      "  uint32_t addr = cfh_tmem_add(base, 32 * (warp % 4), 7);\n"
      "  if (warp < 4) { cfh_tcgen05_st_32x32b(addr, 1, &v); cfh_tcgen05_wait_st(); }\n"
      "  __syncthreads();\n"
      "  if (warp >= 4) { cfh_tcgen05_ld_32x32b(addr, 2, got); cfh_tcgen05_wait_ld();\n"
      "                   out.data[2 * (tid - 128)] = got[0]; out.data[2 * (tid - 128) + 1] = got[1]; }\n"
      "  __syncthreads();\n"
      "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n"
      "}\n", "share");
  uint32_t out[256];
  Arg a;
  arg_1d(&a, out, 256);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 256, 4, 1, &a, &err), CF_OK, "%s", err.msg);
  for (int t = 0; t < 128; t++) {
    cr_assert_eq(out[2 * t], 1000u + (uint32_t)t, "lane %d", t);
    cr_assert_eq(out[2 * t + 1], 0xFFFFFFFFu, "lane %d, unwritten column", t);
  }
  exec_host_module_free(m);
}

/* ---- the rules ---------------------------------------------------------------------------------- */

Test(host_tmem, warp_on_the_wrong_sub_partition) {
  /* Every warp stores at lane 0: right for warp 0, wrong for warp 1. */
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r = tid;\n"
              "  cfh_tcgen05_st_32x32b(base, 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 64,
              "tcgen05.st: block (0,0,0) warp 1 accessed lanes 0..31, but warp 1 may only access "
              "sub-partition 1 (lanes 32..63)");
  /* Warp 4 addresses lanes 128..159 with 32 * warp instead of 32 * (warp % 4). */
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r;\n"
              "  cfh_tcgen05_ld_32x32b(cfh_tmem_add(base, 32 * warp, 0), 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 160,
              "tcgen05.ld: block (0,0,0) warp 4 accessed lanes 128..159, but warp 4 may only "
              "access sub-partition 0 (lanes 0..31)");
}

Test(host_tmem, partial_warp_of_a_block_of_48_threads) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r = tid;\n"
              "  cfh_tcgen05_st_32x32b(cfh_tmem_add(base, 32 * warp, 0), 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 48,
              "tcgen05.st: block (0,0,0) warp 1: partial warp: the instruction needs lanes 0..31, "
              "but lanes 16..31 do not exist (the block has 48 threads)");
}

Test(host_tmem, partial_warp_of_16_diverged_lanes) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r = tid;\n"
              "  if (lane < 16) cfh_tcgen05_st_32x32b(base, 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 32,
              "tcgen05.st: block (0,0,0) warp 0: partial warp: the instruction needs lanes 0..31, "
              "but only lanes 0..15 took part (lanes 16..31 wait at __syncthreads)");
}

Test(host_tmem, partial_warp_when_lanes_exited) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r = tid;\n"
              "  if (lane >= 8) return;\n"
              "  cfh_tcgen05_st_32x32b(base, 1, &r);\n}\n",
              1, 32,
              "tcgen05.st: block (0,0,0) warp 0: partial warp: the instruction needs lanes 0..31, "
              "but only lanes 0..7 took part (lanes 8..31 exited)");
}

Test(host_tmem, lanes_passing_different_addresses) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(64)
              "  uint32_t r = tid;\n"
              "  cfh_tcgen05_st_32x32b(cfh_tmem_add(base, 0, lane == 5 ? 32 : 0), 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 64);\n}\n",
              1, 32,
              "tcgen05.st: block (0,0,0) warp 0: threads of one warp passed different addresses "
              "(lane 0: tmem lane 0 column 0; lane 5: tmem lane 0 column 32)");
}

Test(host_tmem, lanes_reaching_different_instructions) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r = tid;\n"
              "  if (lane < 16) cfh_tcgen05_st_32x32b(base, 1, &r);\n"
              "  else cfh_tcgen05_ld_32x32b(base, 1, &r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 32,
              "block (0,0,0) warp 0: threads of one warp reached different warp-collective "
              "instructions: lanes 0..15 wait at tcgen05.st (mask 0xffffffff), lane 16 reached "
              "tcgen05.ld (mask 0xffffffff)");
}

Test(host_tmem, access_to_columns_not_allocated) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  uint32_t r[4];\n"
              "  cfh_tcgen05_ld_32x32b(cfh_tmem_add(base, 0, 30), 4, r);\n"
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n",
              1, 32,
              "tcgen05.ld: block (0,0,0) warp 0 accessed columns 30..33 of lanes 0..31, but "
              "column 32 is not allocated (allocated: 0..31)");
}

Test(host_tmem, dealloc_of_columns_never_allocated) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  __syncthreads();\n"
              "  if (warp == 0) cfh_tcgen05_dealloc(cfh_tmem_add(base, 0, 32), 32);\n}\n",
              1, 64,
              "tcgen05.dealloc: block (0,0,0) warp 0: dealloc of columns never allocated: "
              "columns 32..63 (allocated: 0..31)");
}

Test(host_tmem, cta_ending_with_columns_still_allocated) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32) "  (void)base;\n}\n", 2, 64,
              "block (0,0,0) ended with 32 tensor-memory columns still allocated");
}

Test(host_tmem, alloc_of_a_non_power_of_two) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(48) "  (void)base;\n}\n", 1, 32,
              "tcgen05.alloc: block (0,0,0) warp 0: cannot allocate 48 columns: the column "
              "count must be a power of two from 32 to 512");
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(1024) "  (void)base;\n}\n", 1, 32,
              "tcgen05.alloc: block (0,0,0) warp 0: cannot allocate 1024 columns: the column "
              "count must be a power of two from 32 to 512");
}

Test(host_tmem, alloc_after_relinquish) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n" PROLOGUE(32)
              "  if (warp == 0) cfh_tcgen05_alloc(slot + 1, 32);\n}\n",
              1, 32,
              "tcgen05.alloc: block (0,0,0) warp 0: allocation after "
              "tcgen05.relinquish_alloc_permit (the CTA gave up its allocation permit)");
}

Test(host_tmem, alloc_beyond_512_columns_would_wait_forever) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n"
              "  uint32_t *slot = (uint32_t *)cfh_smem();\n"
              "  cfh_tcgen05_alloc(slot, 256);\n"
              "  cfh_tcgen05_alloc(slot + 1, 512);\n}\n",
              1, 32,
              "tcgen05.alloc: block (0,0,0) warp 0: cannot allocate 512 columns: no 512 "
              "contiguous columns are free (allocated: 0..255) and no other CTA can free any, "
              "so the allocation would wait forever");
}

Test(host_tmem, syncthreads_deadlock) {
  EXPECT_RULE("void rule(void);\nvoid rule(void) {\n"
              "  if (threadIdx.x >= 32) return;\n"
              "  __syncthreads();\n}\n",
              1, 64,
              "block (0,0,0): deadlock at __syncthreads: threads 0..31 wait at the barrier, but "
              "threads 32..63 exited without reaching it");
}

/* A failed launch leaves the module usable: the next launch runs from a clean state. */
Test(host_tmem, a_failed_launch_leaves_the_module_usable) {
  ExecHostModule *m = compile_ok("void rule(T1u out);\nvoid rule(T1u out) {\n" PROLOGUE(32)
                                 "  uint32_t r = tid;\n"
                                 "  if (out.data[0] == 7) cfh_tcgen05_st_32x32b(base, 1, &r);\n"
                                 "  __syncthreads();\n"
                                 "  if (warp == 0) cfh_tcgen05_dealloc(base, 32);\n}\n", "rule");
  uint32_t flag = 7;
  Arg a;
  arg_1d(&a, &flag, 1);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 64, 4, 1, &a, &err), CF_ERR_RUNTIME);
  flag = 0;
  cr_assert_eq(run1(m, 1, 64, 4, 1, &a, &err), CF_OK, "%s", err.msg);
  exec_host_module_free(m);
}
