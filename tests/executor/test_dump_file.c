/* CFUSER_DUMP to a file: with CFUSER_DUMP_FILE set, the dumps (here CFUSER_DUMP=times,
 * every kernel's compile time by stage, then by lowering pass) are appended to that file,
 * not standard error; the exact text of those lines and of a slow compile's note. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfuser.h"
#include "executor/executor_internal.h"
#include "test_util.h"

Test(dump_file, compile_times_go_to_the_dump_file) {
  char path[] = "/tmp/cfuser-dump-XXXXXX";
  tu_dump_times_to_temp(path);
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){32});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_relu(f, cf_mul_scalar(f, x, 3.0)));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  FILE *in = fopen(path, "r");
  char line[512] = "", passes[2048] = "";
  cr_assert_not_null(fgets(line, sizeof line, in), "the dump file holds a line");
  cr_assert_not_null(fgets(passes, sizeof passes, in), "the dump file holds a second line");
  fclose(in);
  unlink(path);
  const char *head = "=== compile of ";
  cr_expect_eq(strncmp(line, head, strlen(head)), 0, "%s", line);
  cr_expect_not_null(strstr(line, " (host): lowering "), "%s", line);
  cr_expect_not_null(strstr(line, " ms, codegen "), "%s", line);
  cr_expect_not_null(strstr(line, " ms, C compiler "), "%s", line);
  cr_expect(strstr(line, " ms ===\n") || strstr(line, " ms (disk cache hit) ===\n"), "%s", line);
  /* every pass of lower.c's table, in its order */
  static const char *const names[] = {"loop_model", "sort_exprs", "parallel_dims", "tensors", "extent_checks",
                                      "validate_vectorize", "tmem_info", "loop_nest", "tmem_pattern",
                                      "validate_parallel", "index", "predicate", "reduction", "sync",
                                      "circular_buffer", "mma", "tmem_lifetime", "unswitch", "local_reuse",
                                      "smem_layout", "param_use"};
  const char *p = strstr(passes, " by pass:");
  cr_assert(p && !strncmp(passes, "=== lowering of ", 16), "%s", passes);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char want[64];
    snprintf(want, sizeof want, "%s %s ", i ? "," : ":", names[i]);
    const char *q = strstr(p, want);
    cr_assert(q, "no %s after %s", names[i], p);
    p = q + strlen(want);
  }
  cr_expect(strstr(p, " ms ===\n") && !strchr(p, ','), "%s", passes);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/* The two lines of times and the note of a slow compile, from a kernel's recorded times. */
Test(dump_file, times_text_and_the_slow_note_name_the_slowest_pass) {
  struct KPassTime t[3] = {{"loop_model", 0.0012}, {"mma", 5.31}, {"index", 0.5}};
  KKernel k = {.name = "cfuser_kernel", .pass_times = t, .npass_times = 3};
  const double at[4] = {10.0, 15.8, 15.9, 16.5};
  StrBuf b = {0};
  exec_times_text(&b, &k, true, false, at);
  cr_expect_str_eq(b.data, "=== compile of cfuser_kernel (CUDA): lowering 5800.0 ms, codegen 100.0 ms, NVRTC 600.0 ms ===\n"
                           "=== lowering of cfuser_kernel by pass: loop_model 1.2 ms, mma 5310.0 ms, index 500.0 ms ===\n");
  sb_free(&b);
  exec_times_text(&b, &k, false, true, at);
  cr_expect(strstr(b.data, "(host): lowering 5800.0 ms, codegen 100.0 ms, C compiler 600.0 ms (disk cache hit) ===\n"),
            "%s", b.data);
  sb_free(&b);
  exec_slow_note_text(&b, &k, true, at);
  cr_expect_str_eq(b.data, "cfuser: note: compiling cfuser_kernel took 6.5 s (lowering 5.8 s, its slowest pass mma 5.3 s; "
                           "codegen 0.1 s, NVRTC 0.6 s); CFUSER_DUMP=times reports every compile\n");
  sb_free(&b);
}
