/* tests/host/test_host_compile.c: the host backend's compiler driver and disk cache
 * (executor/host.c), the kernel-parameter packing for libffi, and the backend choice
 * (executor/backend.c). A broken source keeps the compiler's output and the source; a
 * second compile of the same source hits the cache (and is timed); a different compile
 * command misses it; 32-bit index structs are laid out as C lays them out. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/exec_host.h"
#include "tests/host/host_test_util.h"

static const char *tiny_kernel =
    "void tiny(T1f out);\n"
    "void tiny(T1f out) { out.data[threadIdx.x] = 2.0f * (float)threadIdx.x; }\n";

/* A fresh, empty cache directory for this test process. */
static void fresh_cache_dir(void) {
  char tmpl[] = "/tmp/cfuser-host-cache-XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl));
  setenv("CFUSER_CACHE_DIR", tmpl, 1);
}

Test(host_compile, broken_source_keeps_compiler_output_and_source) {
  char *src = with_runtime("void broken(T1f out) { out.data[0] = undeclared_thing; }\n");
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = (ExecHostModule *)1;
  cr_assert_eq(exec_host_compile(src, "broken", &m, &err), CF_ERR_COMPILE);
  cr_assert_null(m);
  cr_assert_not_null(err.compiler_output);
  cr_assert_not_null(strstr(err.compiler_output, "undeclared_thing"), "%s", err.compiler_output);
  cr_assert_not_null(strstr(err.compiler_output, "error"), "%s", err.compiler_output);
  cr_assert_str_eq(err.source, src);
  cr_assert_not_null(strstr(err.msg, "the host C compiler failed (exit status 1): "), "%s", err.msg);
  cr_assert_not_null(strstr(err.msg, "undeclared_thing"), "first error line in: %s", err.msg);
  exec_host_error_clear(&err);
  cr_assert_null(err.compiler_output);
  free(src);
}

Test(host_compile, missing_kernel_or_runtime) {
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  char *src = with_runtime(tiny_kernel);
  cr_assert_eq(exec_host_compile(src, "nonesuch", &m, &err), CF_ERR_COMPILE);
  cr_assert_not_null(strstr(err.msg, "has no function nonesuch (it must be defined, and not static)"),
                     "%s", err.msg);
  free(src);
  cr_assert_eq(exec_host_compile("void k(void);\nvoid k(void) {}\n", "k", &m, &err), CF_ERR_COMPILE);
  cr_assert_not_null(strstr(err.msg, "has no cfh_launch: the host runtime was not prepended"), "%s",
                     err.msg);
}

Test(host_compile, second_compile_hits_the_disk_cache) {
  fresh_cache_dir();
  char *src = with_runtime(tiny_kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m1 = NULL, *m2 = NULL, *m3 = NULL;
  cr_assert_eq(exec_host_compile(src, "tiny", &m1, &err), CF_OK, "%s", err.msg);
  cr_assert_not(exec_host_module_cache_hit(m1));
  cr_assert_eq(exec_host_compile(src, "tiny", &m2, &err), CF_OK, "%s", err.msg);
  cr_assert(exec_host_module_cache_hit(m2));
  double miss = exec_host_module_compile_seconds(m1), hit = exec_host_module_compile_seconds(m2);
  cr_log_info("host compile: miss %.1f ms, cache hit %.2f ms", miss * 1e3, hit * 1e3);
  cr_assert_lt(hit * 5, miss, "a hit (%.4f s) should be far faster than a compile (%.4f s)", hit, miss);
  cr_assert_str_eq(exec_host_module_path(m1), exec_host_module_path(m2));
  /* One file per kernel, named by the SHA-256 of the compile command and the source (which
   * is not stored). */
  char cpath[4200];
  snprintf(cpath, sizeof cpath, "%.*s.c", (int)(strlen(exec_host_module_path(m1)) - 3),
           exec_host_module_path(m1));
  cr_assert_neq(access(cpath, F_OK), 0, "%s", cpath);
  const char *base = strrchr(exec_host_module_path(m1), '/') + 1;
  cr_assert_eq(strlen(base), 64 + 3, "%s", base);
  const void *bin;
  size_t size = 0;
  cr_assert_eq(exec_host_module_binary(m2, &bin, &size, &err), CF_OK);
  cr_assert_gt(size, 4);
  cr_assert_eq(memcmp(bin, "\177ELF", 4), 0);
  /* Another compile command is another cache entry (flags added to whatever ctest gives). */
  const char *flags = getenv("CFUSER_HOST_CFLAGS");
  char other[256];
  snprintf(other, sizeof other, "%s -DCFUSER_TEST_OTHER_COMMAND", flags ? flags : "");
  setenv("CFUSER_HOST_CFLAGS", other, 1);
  cr_assert_eq(exec_host_compile(src, "tiny", &m3, &err), CF_OK, "%s", err.msg);
  cr_assert_not(exec_host_module_cache_hit(m3));
  cr_assert_str_neq(exec_host_module_path(m3), exec_host_module_path(m1));
  exec_host_module_free(m1);
  exec_host_module_free(m2);
  exec_host_module_free(m3);
  free(src);
}

Test(host_compile, a_corrupt_cached_object_is_rebuilt) {
  fresh_cache_dir();
  char *src = with_runtime(tiny_kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  cr_assert_eq(exec_host_compile(src, "tiny", &m, &err), CF_OK, "%s", err.msg);
  char path[4200];
  snprintf(path, sizeof path, "%s", exec_host_module_path(m));
  exec_host_module_free(m);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fputs("not an object", f);
  fclose(f);
  cr_assert_eq(exec_host_compile(src, "tiny", &m, &err), CF_OK, "%s", err.msg);
  cr_assert_not(exec_host_module_cache_hit(m));
  float out[8];
  Arg a;
  arg_1d(&a, out, 8);
  cr_assert_eq(run1(m, 1, 8, 0, 1, &a, &err), CF_OK, "%s", err.msg);
  cr_assert_eq(out[7], 14.0f);
  exec_host_module_free(m);
  free(src);
}

Test(host_compile, compiler_that_does_not_exist) {
  fresh_cache_dir();
  setenv("CC", "/nonexistent/cc", 1);
  char *src = with_runtime(tiny_kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  cr_assert_eq(exec_host_compile(src, "tiny", &m, &err), CF_ERR_COMPILE);
  cr_assert_not_null(strstr(err.msg, "exit status 127"), "%s", err.msg);
  cr_assert_not_null(strstr(err.compiler_output, "/nonexistent/cc"), "%s", err.compiler_output);
  exec_host_error_clear(&err);
  free(src);
}

/* ---- parameters --------------------------------------------------------------------------- */

Test(host_compile, index32_tensor_structs_and_scalars) {
  ExecHostModule *m = compile_ok(
      "typedef struct { float *data; int32_t logical_size[3]; int32_t alloc_stride[2]; } T3i;\n"
      "void p32(T3i t, double scale, __half h, int8_t k, T1f out);\n"
      "void p32(T3i t, double scale, __half h, int8_t k, T1f out) {\n"
      "  out.data[0] = (float)(t.logical_size[0] * 100 + t.logical_size[1] * 10 + t.logical_size[2]);\n"
      "  out.data[1] = (float)(t.alloc_stride[0] * 10 + t.alloc_stride[1]);\n"
      "  out.data[2] = t.data[1] * (float)scale + __half2float(h) + (float)k;\n"
      "}\n", "p32");
  ExecHostParam p[5] = {{true, CF_FLOAT, 3, 2, true}, {false, CF_DOUBLE, 0, 0, false},
                        {false, CF_HALF, 0, 0, false}, {false, CF_INT8, 0, 0, false},
                        {true, CF_FLOAT, 1, 1, false}};
  cr_assert_eq(exec_host_param_size(&p[0]), 8 + 5 * 4 + 4); /* padded to 8 like C */
  float data[2] = {0, 3}, out[3] = {0};
  int64_t sizes[3] = {1, 2, 3}, strides[2] = {4, 5}, n = 3, one = 1;
  unsigned char t[64], o[64];
  double scale = 0.5;
  uint16_t h = 0x3C00; /* 1.0 */
  int8_t k = -2;
  ExecHostError err = {{0}, NULL, NULL};
  cr_assert_eq(exec_host_pack_tensor(&p[0], data, sizes, strides, t, &err), CF_OK);
  cr_assert_eq(exec_host_pack_tensor(&p[4], out, &n, &one, o, &err), CF_OK);
  int64_t g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
  cr_assert_eq(exec_host_launch(m, g, b, 0, 5, p, (void *[]){t, &scale, &h, &k, o}, &err), CF_OK,
               "%s", err.msg);
  cr_assert_eq(out[0], 123.0f);
  cr_assert_eq(out[1], 45.0f);
  cr_assert_eq(out[2], 0.5f);
  int64_t big[3] = {1, (int64_t)1 << 33, 1};
  cr_assert_eq(exec_host_pack_tensor(&p[0], data, big, strides, t, &err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err.msg, "size 8589934592 does not fit the kernel's 32-bit index type");
  exec_host_module_free(m);
}

/* ---- backend choice ---------------------------------------------------------------------- */

static bool cuda_yes(const char **why) {
  (void)why;
  return true;
}

Test(host_compile, backend_choice) {
  char err[256];
  cf_backend b;
  unsetenv("CFUSER_BACKEND");
  cr_assert_eq(exec_backend_choose(CF_BACKEND_AUTO, NULL, &b, err, sizeof err), CF_OK);
  cr_assert_eq(b, CF_BACKEND_HOST);
  cr_assert_eq(exec_backend_choose(CF_BACKEND_AUTO, cuda_yes, &b, err, sizeof err), CF_OK);
  cr_assert_eq(b, CF_BACKEND_CUDA);
  setenv("CFUSER_BACKEND", "host", 1);
  cr_assert_eq(exec_backend_choose(CF_BACKEND_AUTO, cuda_yes, &b, err, sizeof err), CF_OK);
  cr_assert_eq(b, CF_BACKEND_HOST);
  cr_assert_eq(exec_backend_choose(CF_BACKEND_CUDA, NULL, &b, err, sizeof err), CF_OK);
  cr_assert_eq(b, CF_BACKEND_CUDA, "an explicit option wins over the environment");
  setenv("CFUSER_BACKEND", "CUDA", 1);
  cr_assert_eq(exec_backend_choose(CF_BACKEND_AUTO, NULL, &b, err, sizeof err), CF_OK);
  cr_assert_eq(b, CF_BACKEND_CUDA);
  setenv("CFUSER_BACKEND", "gpu", 1);
  cr_assert_eq(exec_backend_choose(CF_BACKEND_AUTO, NULL, &b, err, sizeof err),
               CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "CFUSER_BACKEND=gpu is not a backend: use host or cuda, or unset it to "
                        "choose automatically (CUDA when a device is usable, host otherwise)");
}

Test(host_compile, a_tensor_parameter_beyond_the_rank_limit_is_refused) {
  fresh_cache_dir();
  char *src = with_runtime(tiny_kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  ExecHostCall *call = NULL;
  cr_assert_eq(exec_host_compile(src, "tiny", &m, &err), CF_OK, "%s", err.msg);
  ExecHostParam p = {true, CF_FLOAT, EXEC_HOST_MAX_RANK + 1, 1, false};
  cr_expect_eq(exec_host_call_prepare(m, 1, &p, &call, &err), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(err.msg, "kernel parameter 0: a tensor of rank 9 (allocation rank 1); the host backend takes at "
                            "most 8");
  cr_expect_null(call);
  exec_host_error_clear(&err);
  exec_host_module_free(m);
  free(src);
}
