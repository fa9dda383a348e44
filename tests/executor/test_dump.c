/* tests/executor/test_dump.c: CFUSER_DUMP. An unknown name fails the compile with the
 * list of valid names; `source` prints the whole generated source once per compile,
 * `ptx` NVRTC's PTX once per compile, `launch` the launch configuration and time of each
 * run, a pass's name the kernel IR after it. Everything goes to stderr, captured here
 * into a file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* out[4, 8] = a + 1, one block per row, one thread per element. */
static cf_fusion *row_per_block(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_add_scalar(f, a, 1.0);
  cf_fusion_add_output(f, b);
  cf_parallelize(f, b, 0, CF_PT_BIDX);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  return f;
}

static int saved_fd = -1;
static FILE *captured;

static void capture_stderr(void) {
  fflush(stderr);
  captured = tmpfile();
  cr_assert_not_null(captured);
  saved_fd = dup(2);
  dup2(fileno(captured), 2);
}

/* Restores stderr and returns what was written to it (caller frees). */
static char *captured_text(void) {
  fflush(stderr);
  dup2(saved_fd, 2);
  close(saved_fd);
  long n = ftell(captured);
  char *text = calloc(1, (size_t)n + 1);
  rewind(captured);
  cr_assert_eq(fread(text, 1, (size_t)n, captured), (size_t)n);
  fclose(captured);
  return text;
}

static int occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Compiles f for the host backend and runs it `runs` times; returns the dump. */
static char *host_dump(cf_fusion *f, int runs) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tensor_fill_iota(&in->dl_tensor);
  const DLTensor *ins[1] = {&in->dl_tensor};
  capture_stderr();
  cf_status s = cf_executor_compile(e, f);
  for (int i = 0; s == CF_OK && i < runs; i++) {
    DLManagedTensor *out = NULL;
    s = cf_executor_run(e, 1, ins, 1, &out);
    cf_tensor_free(out);
  }
  char *text = captured_text();
  cr_assert_eq(s, CF_OK, "%s", cf_executor_error(e));
  cf_tensor_free(in);
  cf_executor_destroy(e);
  return text;
}

Test(dump, an_unknown_name_is_an_error_listing_the_valid_ones) {
  setenv("CFUSER_DUMP", "source,indx", 1);
  cf_fusion *f = row_per_block();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e),
                   "CFUSER_DUMP: unknown name \"indx\"; the valid names are all, source, ptx, launch, segments, times, loop_model, "
                   "sort_exprs, parallel_dims, tensors, extent_checks, validate_vectorize, "
                   "tmem_info, loop_nest, tmem_pattern, validate_parallel, index, predicate, reduction, group_reductions, sync, "
                   "circular_buffer, mma, warp_specialize, tmem_lifetime, unswitch, simplify, shared_spill, local_reuse, smem_layout, param_use");
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

Test(dump, source_is_printed_once_per_compile) {
  setenv("CFUSER_DUMP", "source", 1);
  cf_fusion *f = row_per_block();
  char *text = host_dump(f, 2);
  cr_expect_eq(occurrences(text, "=== host C source of cfuser_kernel ===\n"), 1, "%s", text);
  cr_expect_eq(occurrences(text, "cfh_launch("), 2, "the whole source, runtime included");
  cr_expect_eq(occurrences(text, "void cfuser_kernel("), 1);
  cr_expect_eq(occurrences(text, "=== launch"), 0);
  free(text);
  cf_fusion_destroy(f);
}

Test(dump, launch_is_printed_for_each_run) {
  setenv("CFUSER_DUMP", "launch", 1);
  cf_fusion *f = row_per_block();
  char *text = host_dump(f, 3);
  cr_expect_eq(occurrences(text, "=== launch of cfuser_kernel (host): grid (4, 1, 1), block (8, 1, 1), 0 bytes "
                                 "of dynamic shared memory: "), 3, "%s", text);
  cr_expect_eq(occurrences(text, " us ===\n"), 3, "%s", text);
  cr_expect_eq(occurrences(text, "source of"), 0);
  free(text);
  cf_fusion_destroy(f);
}

Test(dump, a_pass_name_prints_the_kernel_ir_after_it) {
  setenv("CFUSER_DUMP", "index,launch", 1);
  cf_fusion *f = row_per_block();
  char *text = host_dump(f, 1);
  cr_expect_eq(occurrences(text, "=== kernel IR after index ===\n"), 1, "%s", text);
  cr_expect_eq(occurrences(text, "=== kernel IR after"), 1, "%s", text);
  cr_expect_eq(occurrences(text, "=== launch of"), 1, "%s", text);
  free(text);
  cf_fusion_destroy(f);
}

Test(dump, ptx_is_printed_once_per_compile) {
  TU_SKIP_WITHOUT_NVRTC();
  setenv("CFUSER_DUMP", "ptx", 1);
  cf_fusion *f = row_per_block();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_90a"});
  capture_stderr();
  cf_status s = cf_executor_compile(e, f);
  char *text = captured_text();
  cr_assert_eq(s, CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(occurrences(text, "=== PTX of cfuser_kernel (sm_90a) ===\n"), 1, "%s", text);
  cr_expect_eq(occurrences(text, ".target sm_90a"), 1, "%s", text);
  cr_expect_eq(occurrences(text, ".entry cfuser_kernel("), 1, "%s", text);
  free(text);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
