/* tests/host/test_host_grid.c: the host backend's cooperative launches (host_grid.h), on
 * handwritten kernels that call cf_grid_sync as generated ones do: every block resident at
 * once, the grid sync a barrier of the whole grid (each block reads what all the others
 * wrote, over several syncs, with more blocks than the one the host runs at a time
 * otherwise), shared memory kept per block across syncs, the deadlocks a grid sync can
 * cause (a thread that exits before it, a block waiting at __syncthreads) reported with
 * their exact messages, and a grid too large to be resident refused before it runs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "tests/host/host_test_util.h"

/* Three rounds: each thread writes (its block + round) at its place, syncs the grid, and
 * adds up what every block wrote at its thread index; the block's shared memory keeps the
 * running total across the syncs. */
static const char *rounds_kernel =
    "static int cfh__kernel_cooperative = 1;\n"
    "void rounds(T1f buf, T1f out, T1u sem);\n"
    "void rounds(T1f buf, T1f out, T1u sem) {\n"
    "  float *total = (float *)cfh_smem();\n"
    "  unsigned t = threadIdx.x, n = blockDim.x, b = blockIdx.x, nb = gridDim.x;\n"
    "  cfh_smem_w(total, t) = 0.f;\n"
    "  for (int r = 0; r < 3; r++) {\n"
    "    buf.data[(r * nb + b) * n + t] = (float)(b + r);\n"
    "    cf_grid_sync((int64_t *)sem.data);\n"
    "    for (unsigned k = 0; k < nb; k++)\n"
    "      cfh_smem_w(total, t) = cfh_smem_r(total, t) + buf.data[(r * nb + k) * n + t];\n"
    "  }\n"
    "  out.data[b * n + t] = cfh_smem_r(total, t);\n"
    "}\n";

Test(host_grid, every_block_sees_every_other_blocks_writes) {
  enum { NB = 12, NT = 48 };
  ExecHostModule *m = compile_ok(rounds_kernel, "rounds");
  float *buf = calloc(3 * NB * NT, sizeof(float)), *out = calloc(NB * NT, sizeof(float));
  uint32_t sem[2] = {0, 0};
  Arg a[3];
  arg_1d(&a[0], buf, 3 * NB * NT);
  arg_1d(&a[1], out, NB * NT);
  arg_1d(&a[2], sem, 2);
  a[2].p.dtype = CF_UINT32;
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, NB, NT, NT * sizeof(float), 3, a, &err), CF_OK, "%s", err.msg);
  float want = 0;
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < NB; k++) want += (float)(k + r);
  for (int i = 0; i < NB * NT; i++) cr_assert_eq(out[i], want, "element %d: %g", i, (double)out[i]);
  free(buf), free(out);
  exec_host_module_free(m);
}

/* Thread 5 of block 2 returns before the sync: the others wait for it forever. */
static const char *early_exit_kernel =
    "static int cfh__kernel_cooperative = 1;\n"
    "void early(T1u sem);\n"
    "void early(T1u sem) {\n"
    "  if (blockIdx.x == 2 && threadIdx.x == 5) return;\n"
    "  cf_grid_sync((int64_t *)sem.data);\n"
    "}\n";

/* Block 1 waits at __syncthreads, which its thread 0 skips to wait at the grid sync. */
static const char *mixed_kernel =
    "static int cfh__kernel_cooperative = 1;\n"
    "void mixed(T1u sem);\n"
    "void mixed(T1u sem) {\n"
    "  if (blockIdx.x == 1 && threadIdx.x != 0) __syncthreads();\n"
    "  cf_grid_sync((int64_t *)sem.data);\n"
    "}\n";

static void expect_deadlock(const char *kernel, const char *name, const char *want) {
  ExecHostModule *m = compile_ok(kernel, name);
  uint32_t sem[2] = {0, 0};
  Arg a;
  arg_1d(&a, sem, 2);
  a.p.dtype = CF_UINT32;
  ExecHostError err = {{0}, NULL, NULL};
  cr_expect_eq(run1(m, 4, 8, 0, 1, &a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, want);
  exec_host_error_clear(&err);
  exec_host_module_free(m);
}

Test(host_grid, a_thread_that_exits_before_the_grid_sync_is_a_deadlock) {
  expect_deadlock(early_exit_kernel, "early",
                  "block (2,0,0): deadlock at the grid sync: threads 0..4, 6..7 wait there, but threads 5 exited "
                  "without reaching it");
}

Test(host_grid, a_block_waiting_at_syncthreads_is_a_deadlock) {
  expect_deadlock(mixed_kernel, "mixed",
                  "block (1,0,0): deadlock: threads 1..7 wait at __syncthreads while threads 0 wait at the grid sync");
}

/* 80 blocks of 1024 threads: more than the host keeps resident; refused before running. */
Test(host_grid, a_grid_too_large_to_be_resident_is_refused) {
  ExecHostModule *m = compile_ok(early_exit_kernel, "early");
  uint32_t sem[2] = {0, 0};
  Arg a;
  arg_1d(&a, sem, 2);
  a.p.dtype = CF_UINT32;
  ExecHostError err = {{0}, NULL, NULL};
  cr_expect_eq(run1(m, 80, 1024, 0, 1, &a, &err), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(err.msg, "cooperative launch: grid (80,1,1) of blocks (1024,1,1) has 81920 threads, "
                            "but the host backend keeps at most 65536 resident at once (a grid sync needs every "
                            "block resident)");
  exec_host_error_clear(&err);
  exec_host_module_free(m);
}
