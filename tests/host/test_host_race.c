/* tests/host/test_host_race.c: the host backend's shared-memory race detector
 * (codegen/runtime/host_race.h). A compiler-generated 32x32 transpose through shared
 * memory runs cleanly with its __syncthreads and, with the sync removed by a lowering
 * hook, stops with the race's exact message; handwritten kernels (accessing shared memory
 * through the recording accessors, as generated kernels do) show a write-write race, a
 * read of what another thread wrote after a missing second barrier, the clean version
 * with both barriers, and CFUSER_HOST_RACECHECK=0 turning the detector off. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "tests/host/host_test_util.h"
#include "tests/lower/tmem_test_util.h"

/* ---- a generated kernel ---------------------------------------------------------------- */

typedef void (*Breaker)(KKernel *k);

/* The lowering hook's cf_kernel_info is the lowered kernel: cast back to break it. */
static void break_kernel(const cf_kernel_info *info, void *user) {
  Breaker b = *(Breaker *)user;
  b((KKernel *)(uintptr_t)(const void *)info);
}

static bool drop_sync(KVisitor *v, KNode *x) {
  x->kind = KN_COMMENT, x->u.comment = "sync removed";
  ++*(int *)v->user;
  return true;
}
static void drop_syncs(KKernel *k) {
  int n = 0;
  KVisitor v = {.pre = {[KN_SYNC] = drop_sync}, .user = &n};
  kir_visit(&v, &k->body);
  cr_assert_gt(n, 0, "the kernel had a sync");
}

/* out = transpose(T1), T1 = in staged in shared memory: thread (x, y) writes T1[y][x]
 * and reads T1[x][y], which thread (y, x) wrote: the RAW sync is required. */
static cf_fusion *transpose_smem(cf_dtype dt) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, dt, 2, (int64_t[]){32, 32});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_transpose(f, t1, 0, 1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_parallelize(f, t1, 0, CF_PT_TIDY);
  cf_parallelize(f, t1, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 0, CF_PT_TIDY);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  return f;
}

/* Compiles on the host backend (optional breaking hook), runs on in[i] = i; returns the
 * status, the message and the number of wrong output elements. */
static cf_status run_transpose(Breaker breaker, char *msg, size_t len, int *wrong) {
  cf_fusion *f = transpose_smem(CF_FLOAT);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  if (breaker) cf_executor_set_lowering_hook(e, break_kernel, &breaker);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){32, 32}), *out = NULL;
  float *in = t->dl_tensor.data;
  for (int i = 0; i < 32 * 32; i++) in[i] = (float)i;
  const DLTensor *ins[1] = {&t->dl_tensor};
  cf_status s = cf_executor_run(e, 1, ins, 1, &out);
  snprintf(msg, len, "%s", cf_executor_error(e));
  *wrong = 0;
  for (int i = 0; s == CF_OK && i < 32 * 32; i++)
    *wrong += ((float *)out->dl_tensor.data)[i] != (float)(i % 32 * 32 + i / 32);
  cf_tensor_free(t);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return s;
}

Test(host_race, generated_kernel_without_its_sync_is_caught) {
  char msg[2048];
  int wrong = 0;
  cr_assert_eq(run_transpose(drop_syncs, msg, sizeof msg, &wrong), CF_ERR_RUNTIME, "%s", msg);
  cr_expect_str_eq(msg, "run: shared-memory race: block (0,0,0) thread (0,1,0) writes T1[32] (byte offset 128 of "
                        "shared memory), which thread (1,0,0) read with no __syncthreads in between");
}

Test(host_race, generated_kernel_with_its_sync_runs_cleanly) {
  char msg[2048];
  int wrong = -1;
  cr_assert_eq(run_transpose(NULL, msg, sizeof msg, &wrong), CF_OK, "%s", msg);
  cr_expect_eq(wrong, 0);
}

/* Threads x and x+1 write the two halves of one 4-byte word: no race on a GPU, none here. */
Test(host_race, neighbouring_half_precision_elements_do_not_race) {
  cf_fusion *f = transpose_smem(CF_HALF);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *t = cf_tensor_host(CF_HALF, 2, (int64_t[]){32, 32}), *out = NULL;
  memset(t->dl_tensor.data, 0, 32 * 32 * 2);
  const DLTensor *ins[1] = {&t->dl_tensor};
  cr_expect_eq(cf_executor_run(e, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cf_tensor_free(t);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

Test(host_race, racecheck_0_turns_the_detector_off) {
  setenv("CFUSER_HOST_RACECHECK", "0", 1);
  char msg[2048];
  int wrong = 0;
  cr_assert_eq(run_transpose(drop_syncs, msg, sizeof msg, &wrong), CF_OK, "%s", msg);
  cr_expect_gt(wrong, 0, "without its sync the transpose reads unwritten shared memory");
}

/* A 128-element copy staged in shared memory T1, one side a vector copy of 4 floats per
 * thread (thread x: elements 4x..4x+3), the other scalar (thread x: x, x+32, x+64, x+96):
 * the mappings differ, so a sync separates them. */
static cf_fusion *vector_staging(bool vector_write) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){128});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a), *out = cf_set(f, t1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_tv *vec = vector_write ? t1 : out, *scalar = vector_write ? out : t1;
  cf_split(f, vec, 0, 4);
  cf_parallelize(f, vec, 0, CF_PT_TIDX);
  cf_parallelize(f, vec, 1, CF_PT_VECTORIZE);
  cf_split(f, scalar, 0, 32);
  cf_parallelize(f, scalar, 1, CF_PT_TIDX);
  return f;
}

static cf_status run_vector(bool vector_write, Breaker breaker, char *msg, size_t len) {
  cf_fusion *f = vector_staging(vector_write);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  if (breaker) cf_executor_set_lowering_hook(e, break_kernel, &breaker);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){128}), *out = NULL;
  for (int i = 0; i < 128; i++) ((float *)t->dl_tensor.data)[i] = (float)i;
  const DLTensor *ins[1] = {&t->dl_tensor};
  cf_status s = cf_executor_run(e, 1, ins, 1, &out);
  snprintf(msg, len, "%s", cf_executor_error(e));
  for (int i = 0; s == CF_OK && i < 128; i++) cr_expect_eq(((float *)out->dl_tensor.data)[i], (float)i, "element %d", i);
  cf_tensor_free(t);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return s;
}

/* Every element of a vector access is recorded, not only the first: T1[1] is the second
 * element of thread 0's vector. */
Test(host_race, vector_copies_into_and_out_of_shared_memory) {
  char msg[2048];
  for (int w = 0; w < 2; w++) cr_assert_eq(run_vector(w, NULL, msg, sizeof msg), CF_OK, "%s", msg);
  cr_assert_eq(run_vector(true, drop_syncs, msg, sizeof msg), CF_ERR_RUNTIME, "%s", msg);
  cr_expect_str_eq(msg, "run: shared-memory race: block (0,0,0) thread (1,0,0) reads T1[1] (byte offset 4 of "
                        "shared memory), which thread (0,0,0) wrote with no __syncthreads in between");
  cr_assert_eq(run_vector(false, drop_syncs, msg, sizeof msg), CF_ERR_RUNTIME, "%s", msg);
  cr_expect_str_eq(msg, "run: shared-memory race: block (0,0,0) thread (1,0,0) writes T1[1] (byte offset 4 of "
                        "shared memory), which thread (0,0,0) read with no __syncthreads in between");
}

/* ---- handwritten kernels ----------------------------------------------------------------- */

/* Every thread writes s[1]; thread 0 then reads it. */
static const char *write_write_kernel =
    "void ww(T1f out);\n"
    "void ww(T1f out) {\n"
    "  float *s = (float *)cfh_smem();\n"
    "  cfh_smem_w(s, 1) = (float)threadIdx.x;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) out.data[0] = cfh_smem_r(s, 1);\n"
    "}\n";

/* Two rounds of reversing through shared memory; the second barrier of a round (the WAR
 * sync) only when `war` is set. Without it, thread 3 writes s[3] for round 1 before
 * thread 4 has read it for round 0. */
static const char *reverse_kernel =
    "void rev(T1f in, T1f out);\n"
    "void rev(T1f in, T1f out) {\n"
    "  float *s = (float *)cfh_smem();\n"
    "  unsigned t = threadIdx.x, n = blockDim.x;\n"
    "  for (int round = 0; round < 2; round++) {\n"
    "    cfh_smem_w(s, t) = in.data[t] + (float)round;\n"
    "    __syncthreads();\n"
    "    out.data[t] = cfh_smem_r(s, n - 1 - t);\n"
    "    if (WAR) __syncthreads();\n"
    "  }\n"
    "}\n";

static cf_status run_reverse(bool war, float *out, char *msg, size_t len) {
  char src[1024];
  snprintf(src, sizeof src, "#define WAR %d\n%s", war, reverse_kernel);
  ExecHostModule *m = compile_ok(src, "rev");
  float in[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  Arg a[2];
  arg_1d(&a[0], in, 8);
  arg_1d(&a[1], out, 8);
  ExecHostError err = {{0}, NULL, NULL};
  cf_status s = run1(m, 1, 8, 8 * sizeof(float), 2, a, &err);
  snprintf(msg, len, "%s", err.msg);
  exec_host_module_free(m);
  return s;
}

Test(host_race, handwritten_write_write_race) {
  ExecHostModule *m = compile_ok(write_write_kernel, "ww");
  float out[1] = {0};
  Arg a[1];
  arg_1d(&a[0], out, 1);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 2, 4, 16, 1, a, &err), CF_ERR_RUNTIME);
  cr_expect_str_eq(err.msg, "shared-memory race: block (0,0,0) thread (1,0,0) writes s[1] (byte offset 4 of shared "
                            "memory), which thread (0,0,0) wrote with no __syncthreads in between");
  exec_host_module_free(m);
}

Test(host_race, handwritten_read_after_a_missing_barrier) {
  float out[8] = {0};
  char msg[2048];
  cr_assert_eq(run_reverse(false, out, msg, sizeof msg), CF_ERR_RUNTIME);
  cr_expect_str_eq(msg, "shared-memory race: block (0,0,0) thread (4,0,0) reads s[3] (byte offset 12 of shared "
                        "memory), which thread (3,0,0) wrote with no __syncthreads in between");
}

Test(host_race, handwritten_kernel_with_both_barriers_runs_cleanly) {
  float out[8] = {0};
  char msg[2048];
  cr_assert_eq(run_reverse(true, out, msg, sizeof msg), CF_OK, "%s", msg);
  for (int i = 0; i < 8; i++) cr_expect_eq(out[i], (float)(7 - i) + 1.0f, "element %d", i);
}

Test(host_race, racecheck_0_turns_the_detector_off_for_handwritten_kernels) {
  setenv("CFUSER_HOST_RACECHECK", "0", 1);
  ExecHostModule *m = compile_ok(write_write_kernel, "ww");
  float out[1] = {0};
  Arg a[1];
  arg_1d(&a[0], out, 1);
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(run1(m, 1, 4, 16, 1, a, &err), CF_OK, "%s", err.msg);
  cr_expect_eq(out[0], 3.0f, "the last thread's write wins on the host");
  exec_host_module_free(m);
}
