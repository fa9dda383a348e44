/* tests/host/test_host_split.c: the host runtime in two translation units
 * (codegen/host_split.c, executor/host.c's runtime object): the body stripper on each
 * shape of C it meets (a prototype, an attribute before CFH_FN, braces in strings, chars
 * and comments, a directive naming CFH_FN, nested braces); a kernel's unit declares the
 * runtime's functions without their bodies; kernels of that unit compile against one
 * runtime object per compiler command (one cache entry, built once), run barriers and
 * shuffles through it, and keep the cache's hits; `cfuser cache` counts and clears the
 * runtime's object with the kernels. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cfuser/cache.h"
#include "codegen/codegen.h"
#include "executor/exec_host.h"
#include "tests/host/host_test_util.h"

static void expect_stripped(const char *text, const char *want) {
  char *got = cg_host_strip_bodies(text);
  cr_assert_not_null(got);
  cr_expect_str_eq(got, want);
  free(got);
}

Test(host_split, strips_each_cfh_fn_body_and_nothing_else) {
  expect_stripped("CFH_FN int f(int x);\nCFH_FN int f(int x) { return x; }\n",
                  "CFH_FN int f(int x);\nCFH_FN int f(int x) ;\n");
  expect_stripped("__attribute__((format(printf, 1, 2))) CFH_FN void g(const char *f, ...) {\n  h(\"}{\", '}');\n}\n",
                  "__attribute__((format(printf, 1, 2))) CFH_FN void g(const char *f, ...) ;\n");
  expect_stripped("CFH_FN void n(void) { if (a) { b(); } /* } */ // }\n c(); }\nint z;\n",
                  "CFH_FN void n(void) ;\nint z;\n");
  expect_stripped("#define CFH_FN static \\\n  inline\nCFH_INLINE int i(void) { return 1; }\n",
                  "#define CFH_FN static \\\n  inline\nCFH_INLINE int i(void) { return 1; }\n");
  expect_stripped("struct s { int CFH_FNx; };\nstatic int t(void) { return 2; }\n",
                  "struct s { int CFH_FNx; };\nstatic int t(void) { return 2; }\n");
  expect_stripped("/* CFH_FN void c(void) { } */\nchar *q = \"CFH_FN {\";\n",
                  "/* CFH_FN void c(void) { } */\nchar *q = \"CFH_FN {\";\n");
}

Test(host_split, a_kernel_unit_declares_the_runtime_it_links) {
  const char *k = cg_host_kernel_runtime(), *r = cg_host_runtime_unit();
  cr_assert_not_null(k);
  cr_assert_not_null(r);
  cr_expect_eq(strncmp(k, CG_HOST_KERNEL_TU_LINE, strlen(CG_HOST_KERNEL_TU_LINE)), 0);
  cr_expect_eq(strncmp(r, "#define CFH_RUNTIME_TU 1\n", 25), 0);
  cr_expect_not_null(strstr(k, "CFH_FN void cfh__run_block(cfh_launch_state *L) ;"));
  cr_expect_not_null(strstr(r, "CFH_FN void cfh__run_block(cfh_launch_state *L) {"));
  cr_expect_gt(strlen(r) - strlen(k), 20000, "the kernel's unit keeps %zu of %zu bytes", strlen(k), strlen(r));
}

/* A kernel of the kernel unit: every thread's lane sum of a warp, after a barrier. */
static char *kernel_unit(int k, char *name) {
  snprintf(name, 32, "warp_sum%d", k);
  const char *rt = cg_host_kernel_runtime();
  char body[1024];
  snprintf(body, sizeof body,
           "CFH_KERNEL_VAR size_t cfh__kernel_local_bytes = 0u;\n"
           "CFH_KERNEL_VAR int cfh__kernel_cooperative = 0;\n" TENSOR_TYPES
           "void %s(T1f out);\n"
           "void %s(T1f out) {\n  float v = (float)threadIdx.x + %d.0f;\n  __syncthreads();\n"
           "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
           "  out.data[threadIdx.x] = v;\n}\n",
           name, name, k);
  char *s = malloc(strlen(rt) + strlen(body) + 1);
  cr_assert_not_null(s);
  strcpy(s, rt);
  strcat(s, body);
  return s;
}

static int entries_ending(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    n += len > sl && strcmp(e->d_name + len - sl, suffix) == 0;
  }
  closedir(d);
  return n;
}

Test(host_split, kernels_link_one_runtime_object_per_command) {
  char tmpl[] = "/tmp/cfuser-host-split-XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl));
  setenv("CFUSER_CACHE_DIR", tmpl, 1);
  for (int k = 0; k < 3; k++) {
    char name[32];
    char *src = kernel_unit(k % 2, name);
    ExecHostError err = {{0}, NULL, NULL};
    ExecHostModule *m = NULL;
    cr_assert_eq(exec_host_compile(src, name, &m, &err), CF_OK, "%s\n%s", err.msg,
                 err.compiler_output ? err.compiler_output : "");
    cr_expect_eq(exec_host_module_cache_hit(m), k == 2, "kernel %d", k);
    float out[32];
    Arg a;
    arg_1d(&a, out, 32);
    cr_assert_eq(run1(m, 1, 32, 0, 1, &a, &err), CF_OK, "%s", err.msg);
    for (int t = 0; t < 32; t++) cr_expect_eq(out[t], 496.0f + 32.0f * (float)(k % 2), "thread %d", t);
    exec_host_module_free(m);
    exec_host_error_clear(&err);
    free(src);
  }
  cr_expect_eq(entries_ending(tmpl, ".o"), 1, "one runtime object in %s", tmpl);
  cr_expect_eq(entries_ending(tmpl, ".so"), 2, "two kernels in %s", tmpl);
  cf_disk_cache_stats st;
  char err[4800];
  cr_assert_eq(cf_disk_cache_stat(&st, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(st.host_kernels, 2);
  cr_expect_eq(st.host_runtimes, 1);
  int64_t removed = 0;
  cr_assert_eq(cf_disk_cache_clear(&removed, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(removed, 3, "the kernels and the runtime's object are the cache's");
}
