/* tests/host/test_host_mbarrier.c: the host runtime's mbarriers (codegen/runtime/
 * host_mbarrier.h), driven by handwritten kernels: a phase completes when its arrivals
 * and its transaction bytes are all in, waiting threads park until then and run again
 * after it (three rounds of 32 producers and 32 waiters: parity 0, 1, 0), a transaction
 * count holds a phase open after the last arrival, and a phase that can never complete
 * is a deadlock reported with the barrier and what it lacks; misuse stops the launch with
 * the thread named. The values exchanged go through global memory: the race detector
 * knows only __syncthreads' ordering (host_mbarrier.h). */
#include <criterion/criterion.h>

#include "tests/host/host_test_util.h"

static float out[256];

static cf_status run_kernel(const char *src, const char *name, int threads, ExecHostError *err) {
  ExecHostModule *m = compile_ok(src, name);
  for (int i = 0; i < 256; i++) out[i] = -1.0f;
  Arg a;
  arg_1d(&a, out, 256);
  cf_status s = run1(m, 1, threads, 64, 1, &a, err);
  exec_host_module_free(m);
  return s;
}

/* Threads 32..63 write their value and arrive; threads 0..31 wait for the round's phase
 * (its parity: 0, 1, 0) and copy a producer's value. The waiters run first (round-robin
 * from thread 0), so a wait that did not park would read -1. */
static const char *rounds_kernel =
    "void rounds(T1f out);\n"
    "void rounds(T1f out) {\n"
    "  uint64_t *bar = (uint64_t *)cfh_smem();\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t == 0) cfh_mbarrier_init(bar, 32);\n"
    "  __syncthreads();\n"
    "  for (unsigned r = 0; r < 3; r++) {\n"
    "    if (t >= 32) {\n"
    "      out.data[64 * r + t] = (float)(100 * r + t);\n"
    "      cfh_mbarrier_arrive(bar);\n"
    "    } else {\n"
    "      cfh_mbarrier_wait_parity(bar, r & 1u);\n"
    "      out.data[64 * r + t] = out.data[64 * r + 32 + t] + 0.5f;\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "}\n";

Test(host_mbarrier, waiters_run_after_the_last_arrival_of_each_phase) {
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run_kernel(rounds_kernel, "rounds", 64, &err), CF_OK, "%s", err.msg);
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 32; j++) {
      cr_expect_eq(out[64 * r + 32 + j], (float)(100 * r + 32 + j));
      cr_expect_eq(out[64 * r + j], (float)(100 * r + 32 + j) + 0.5f, "round %d waiter %d", r, j);
    }
  exec_host_error_clear(&err);
}

/* One arrival expecting 256 bytes, completed as two 128-byte transactions: the phase stays
 * open after the arrival and after the first half (test_parity 0), thread 2 waits, thread
 * 3 writes 41 and completes the rest, then thread 2 reads it (42) and the phase is over. */
static const char *tx_kernel =
    "void tx(T1f out);\n"
    "void tx(T1f out) {\n"
    "  uint64_t *bar = (uint64_t *)cfh_smem();\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t == 0) cfh_mbarrier_init(bar, 1);\n"
    "  __syncthreads();\n"
    "  if (t == 0) { cfh_mbarrier_arrive_expect_tx(bar, 256); out.data[0] = cfh_mbarrier_test_parity(bar, 0); }\n"
    "  if (t == 1) { cfh_mbarrier_complete_tx(bar, 128); out.data[1] = cfh_mbarrier_test_parity(bar, 0); }\n"
    "  if (t == 2) { cfh_mbarrier_wait_parity(bar, 0); out.data[2] = out.data[3] + 1.0f; }\n"
    "  if (t == 3) {\n"
    "    out.data[3] = 41.0f;\n"
    "    cfh_mbarrier_complete_tx(bar, 128);\n"
    "    out.data[4] = cfh_mbarrier_test_parity(bar, 0);\n"
    "  }\n"
    "}\n";

Test(host_mbarrier, transaction_bytes_hold_the_phase_open) {
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run_kernel(tx_kernel, "tx", 32, &err), CF_OK, "%s", err.msg);
  static const float want[5] = {0, 0, 42, 41, 1};
  for (int i = 0; i < 5; i++) cr_expect_eq(out[i], want[i], "out[%d] = %g", i, out[i]);
  exec_host_error_clear(&err);
}

/* Two arrivals expected, one made (thread 5), threads 0..3 waiting: a deadlock. */
static const char *stuck_kernel =
    "void stuck(T1f out);\n"
    "void stuck(T1f out) {\n"
    "  uint64_t *bar = (uint64_t *)cfh_smem() + 1;\n"
    "  unsigned t = threadIdx.x;\n"
    "  if (t == 0) cfh_mbarrier_init(bar, 2);\n"
    "  __syncthreads();\n"
    "  if (t < 4) cfh_mbarrier_wait_parity(bar, 0);\n"
    "  if (t == 5) cfh_mbarrier_arrive(bar);\n"
    "}\n";

Test(host_mbarrier, a_phase_that_never_completes_is_a_deadlock) {
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run_kernel(stuck_kernel, "stuck", 8, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "block (0,0,0): deadlock: threads 0..3 wait on mbarriers; thread 0 waits on the one at "
                            "shared offset 8 for its phase of parity 0, which still lacks 1 of 2 arrivals and 0 "
                            "transaction bytes (threads exited: 4..7)");
  exec_host_error_clear(&err);
}

/* Misuse, each with its message: a count of 0, a barrier outside shared memory, one
 * arrival too many. */
Test(host_mbarrier, misuse_stops_the_launch_naming_the_thread) {
  static const char *const kernels[3] = {
      "void bad(T1f out);\nvoid bad(T1f out) {\n  if (threadIdx.x == 1) cfh_mbarrier_init((uint64_t *)cfh_smem(), 0);\n}\n",
      "void bad(T1f out);\nvoid bad(T1f out) {\n  uint64_t b;\n  if (threadIdx.x == 0) cfh_mbarrier_init(&b, 1);\n}\n",
      "void bad(T1f out);\nvoid bad(T1f out) {\n  uint64_t *bar = (uint64_t *)cfh_smem();\n"
      "  if (threadIdx.x == 0) { cfh_mbarrier_init(bar, 1); cfh_mbarrier_expect_tx(bar, 16); cfh_mbarrier_arrive(bar); "
      "cfh_mbarrier_arrive(bar); }\n}\n"};
  static const char *const want[3] = {
      "block (0,0,0) thread (1,0,0): mbarrier.init: count 0 is out of range (1 to 1048575)",
      "block (0,0,0) thread (0,0,0): mbarrier.init: the mbarrier at ",
      "block (0,0,0) thread (0,0,0): mbarrier.arrive: the mbarrier at shared offset 0 has all 1 arrivals of its "
      "phase (which waits for 16 transaction bytes)"};
  for (int i = 0; i < 3; i++) {
    ExecHostError err = {{0}, NULL, NULL};
    cr_assert_eq(run_kernel(kernels[i], "bad", 4, &err), CF_ERR_RUNTIME, "kernel %d", i);
    cr_expect(!strncmp(err.msg, want[i], strlen(want[i])), "kernel %d: %s", i, err.msg);
    exec_host_error_clear(&err);
  }
}
