/* Reproducers (include/cfuser/repro.h): a failing compile and a failing define-and-run call
 * under $CFUSER_REPRO_DIR each write a C program that, compiled and run alone against the
 * built libcfuser.so, fails the same way (the same status and message); a hand schedule
 * comes back exactly (the program's --print shows the same math and transforms), and a
 * correct fusion's reproducer says "repro: ok". */
#include <criterion/criterion.h>
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfuser.h"

static char g_dir[64];

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (g_dir[0] && !getenv("CFUSER_TEST_KEEP") && system(cmd) != 0) cr_log_warn("could not remove %s", g_dir);
}

TestSuite(repro, .fini = cleanup);

static void fresh_dir(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cfuser-repro-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
  setenv("CFUSER_REPRO_DIR", g_dir, 1);
}

/* The one reproducer written into g_dir. */
static void the_repro(char *path, size_t len) {
  DIR *d = opendir(g_dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (!strncmp(e->d_name, "repro-", 6)) n++, snprintf(path, len, "%s/%s", g_dir, e->d_name);
  if (d) closedir(d);
  cr_assert_eq(n, 1, "one reproducer in %s", g_dir);
}

/* Compiles the program at path against the built library (with the library's sanitizers,
 * CFUSER_CC_FLAGS) and runs it (with args); the run's output into out (the compiler's only
 * when it fails: a linker's warnings are not the program's output). */
static int compile_and_run(const char *path, const char *args, char *out, size_t len) {
  const char *bin = getenv("CFUSER_BIN"), *src = getenv("CFUSER_SOURCE_DIR"), *flags = getenv("CFUSER_CC_FLAGS");
  if (!bin || !src) cr_skip_test("CFUSER_BIN and CFUSER_SOURCE_DIR are not set (run through ctest)");
  char libdir[4096], cmd[16384];
  snprintf(libdir, sizeof libdir, "%s", bin);
  dirname(libdir);
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 %s -I'%s/include' '%s' '%s/libcfuser.so' -o '%s.exe' >'%s.log' 2>&1 || { cat '%s.log'; exit 99; }; "
           "env -u CFUSER_REPRO_DIR LD_LIBRARY_PATH='%s' '%s.exe' %s",
           flags ? flags : "", src, path, libdir, path, path, path, libdir, path, args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* x[4, 6] -> reshape [24] -> relu: a kernel refuses the reshape (define and run runs it as a view). */
static cf_fusion *reshape_fusion(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 6});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_relu(f, cf_reshape(f, x, 1, (int64_t[]){24})));
  return f;
}

Test(repro, a_failing_compile_writes_a_reproducer_that_fails_the_same_way) {
  fresh_dir();
  cf_fusion *f = reshape_fusion();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_status s = cf_executor_compile(e, f);
  cr_assert_neq(s, CF_OK, "the kernel refuses a reshape");
  char want[2048], path[4200], out[8192];
  snprintf(want, sizeof want, "repro: %s: %s\n", cf_status_name(s), cf_executor_error(e));
  the_repro(path, sizeof path);
  cr_expect_eq(compile_and_run(path, "", out, sizeof out), 1, "%s", out);
  cr_expect_str_eq(out, want);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

Test(repro, a_failing_define_and_run_call_writes_a_reproducer_of_its_shapes) {
  fresh_dir();
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *y = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, y);
  cf_fusion_add_output(f, cf_add(f, cf_sum(f, x, 1, (int[]){1}), cf_sum(f, y, 1, (int[]){1})));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *a = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 5}), *b = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 5});
  const DLTensor *ins[2] = {&a->dl_tensor, &b->dl_tensor};
  DLManagedTensor *o = NULL;
  cf_status s = cf_fusion_execute(c, 2, ins, 1, &o);
  cr_assert_neq(s, CF_OK, "rows 3 and 4 do not add");
  char want[2048], path[4200], out[8192];
  snprintf(want, sizeof want, "repro: %s: %s\n", cf_status_name(s), cf_fusion_cache_error(c));
  the_repro(path, sizeof path);
  cr_expect_eq(compile_and_run(path, "", out, sizeof out), 1, "%s", out);
  cr_expect_str_eq(out, want);
  cf_tensor_free(a), cf_tensor_free(b);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}

/* A hand schedule (split, merge, reorder, parallel types, a shared-memory intermediate,
 * inlining) is rebuilt exactly: the same math and transforms, and it runs. */
Test(repro, a_hand_schedule_comes_back_exactly) {
  fresh_dir();
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){16, 24});
  cf_fusion_add_input(f, x);
  cf_tv *t1 = cf_mul_scalar(f, x, 2.0), *t2 = cf_sum(f, cf_exp(f, t1), 1, (int[]){1});
  cf_fusion_add_output(f, t2);
  cf_split(f, t2, 0, 4);
  cf_parallelize(f, t2, 0, CF_PT_BIDX);
  cf_parallelize(f, t2, 1, CF_PT_TIDX);
  cf_split(f, t1, 1, 8);
  cf_merge(f, t1, 0);
  cf_reorder_all(f, t1, 2, (int[]){1, 0});
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  char path[4200], out[16384], *want = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/repro-scheduled.c", g_dir);
  FILE *fp = fopen(path, "w");
  cr_assert_eq(cf_fusion_write_repro(f, 0, NULL, false, CF_BACKEND_HOST, fp), CF_OK, "%s", cf_fusion_error(f));
  fclose(fp);
  FILE *m = open_memstream(&want, &n);
  cf_fusion_print_math(f, m);
  cf_fusion_print_transforms(f, m);
  fclose(m);
  int rc = compile_and_run(path, "--print", out, sizeof out);
  cr_expect_eq(rc, 0, "%s", out);
  char *verdict = strstr(out, "repro: ");
  cr_assert_not_null(verdict, "%s", out);
  cr_expect_str_eq(verdict, "repro: ok\n");
  *verdict = 0;
  cr_expect_str_eq(out, want);
  free(want);
  cf_fusion_destroy(f);
}
