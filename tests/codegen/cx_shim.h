/* tests/codegen/cx_shim.h: the CUDA C++ part of codegen/runtime/complex.h compiled for the
 * host, for test_complex_cuda_math.c. The embedded snippet (the very text NVRTC gets) is
 * wrapped in a prelude that defines CUDA's qualifiers and intrinsics away (__device__,
 * __fmul_rn: a product never fused, which the host's -ffp-contract=off also gives) and a
 * postlude of extern "C" loops over arrays of {re, im} pairs, compiled with the system C++
 * compiler ($CXX, else c++) into a shared object and loaded with dlopen. Without a C++
 * compiler the tests skip, saying so. */
#ifndef CFUSER_TESTS_CODEGEN_CX_SHIM_H
#define CFUSER_TESTS_CODEGEN_CX_SHIM_H

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include "codegen/codegen.h"

/* The unary ops of the shim's cx_unary_* (abs gives {|z|, 0}). */
enum { CX_EXP, CX_LOG, CX_SQRT, CX_RSQRT, CX_RECIPROCAL, CX_ABS, CX_NUNARY };
/* The binary ops of cx_binary_*. */
enum { CX_MUL, CX_DIV };

static const char cx_prelude[] =
    "#include <math.h>\n"
    "#define __device__\n"
    "#define __forceinline__ inline\n"
    "static inline float __fmul_rn(float a, float b) { return a * b; }\n"
    "static inline double __dmul_rn(double a, double b) { return a * b; }\n"
    "static inline float __shfl_xor_sync(unsigned, float v, int, int) { return v; }\n"
    "static inline double __shfl_xor_sync(unsigned, double v, int, int) { return v; }\n";

static const char cx_postlude[] =
    "template <typename S, typename T> static void cx_unary(int op, long n, const T *in, T *out) {\n"
    "  for (long i = 0; i < n; i++) {\n"
    "    S z(in[2 * i], in[2 * i + 1]), r;\n"
    "    switch (op) {\n"
    "    case 0: r = exp(z); break;\n"
    "    case 1: r = log(z); break;\n"
    "    case 2: r = sqrt(z); break;\n"
    "    case 3: r = rsqrt(z); break;\n"
    "    case 4: r = reciprocal(z); break;\n"
    "    default: r = S(cf_abs(z), (T)0); break;\n"
    "    }\n"
    "    out[2 * i] = r.re, out[2 * i + 1] = r.im;\n"
    "  }\n"
    "}\n"
    "template <typename S, typename T> static void cx_binary(int op, long n, const T *a, const T *b, T *out) {\n"
    "  for (long i = 0; i < n; i++) {\n"
    "    S x(a[2 * i], a[2 * i + 1]), y(b[2 * i], b[2 * i + 1]);\n"
    "    S r = op == 0 ? x * y : x / y;\n"
    "    out[2 * i] = r.re, out[2 * i + 1] = r.im;\n"
    "  }\n"
    "}\n"
    "extern \"C\" void cx_unary_f(int op, long n, const float *in, float *out) {\n"
    "  cx_unary<CfComplexF>(op, n, in, out);\n"
    "}\n"
    "extern \"C\" void cx_unary_d(int op, long n, const double *in, double *out) {\n"
    "  cx_unary<CfComplexD>(op, n, in, out);\n"
    "}\n"
    "extern \"C\" void cx_binary_f(int op, long n, const float *a, const float *b, float *out) {\n"
    "  cx_binary<CfComplexF>(op, n, a, b, out);\n"
    "}\n"
    "extern \"C\" void cx_binary_d(int op, long n, const double *a, const double *b, double *out) {\n"
    "  cx_binary<CfComplexD>(op, n, a, b, out);\n"
    "}\n";

typedef struct CxShim {
  void (*unary_f)(int, long, const float *, float *);
  void (*unary_d)(int, long, const double *, double *);
  void (*binary_f)(int, long, const float *, const float *, float *);
  void (*binary_d)(int, long, const double *, const double *, double *);
} CxShim;

/* The shim's source (malloc'd). */
static char *cx_source(void) {
  const char *snippet = cg_embedded_file("complex.h");
  cr_assert_not_null(snippet, "complex.h is embedded");
  size_t n = strlen(cx_prelude) + strlen(snippet) + strlen(cx_postlude) + 2;
  char *s = malloc(n);
  cr_assert_not_null(s);
  snprintf(s, n, "%s%s\n%s", cx_prelude, snippet, cx_postlude);
  return s;
}

/* The compiler's output (the log file's first 4000 bytes). */
static const char *cx_read_log(const char *path) {
  static char buf[4001];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = 0;
  return buf;
}

/* Compiles src with cxx into `so` (through a private directory and a rename, so that test
 * processes running side by side never load a half-written object). */
static void cx_compile(const char *cxx, const char *src, const char *so) {
  char dir[] = "/tmp/cfuser-cxshim-XXXXXX", path[600], cmd[2400];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/shim.cpp", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "'%s' -std=c++17 -O2 -shared -fPIC -ffp-contract=off -Wall -Wextra -Werror -o '%s/shim.so' "
           "'%s' >'%s/log' 2>&1",
           cxx, dir, path, dir);
  int rc = system(cmd);
  snprintf(path, sizeof path, "%s/log", dir);
  cr_assert_eq(rc, 0, "%s failed:\n%s", cmd, cx_read_log(path));
  snprintf(path, sizeof path, "%s/shim.so", dir);
  cr_assert_eq(rename(path, so), 0, "rename %s to %s", path, so);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) cr_log_warn("could not remove %s", dir);
}

/* Removes the shims of earlier source texts (an edited complex.h leaves one each). */
static void cx_remove_stale(void) {
  glob_t g;
  if (glob("/tmp/cfuser-cxshim-*.so", 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
  globfree(&g);
}

/* The shim, compiled once per source text and compiler (Criterion runs each test in its
 * own process: the object is kept as /tmp/cfuser-cxshim-<hash>.so, the only one kept) and
 * loaded once per process; skips the test without a C++ compiler. */
static CxShim cx_shim(void) {
  static CxShim shim;
  if (shim.unary_f) return shim;
  const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
  char cmd[600], so[600];
  snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", cxx);
  if (system(cmd) != 0) cr_skip_test("no host C++ compiler ($CXX, else c++) to build complex.h's CUDA part");
  char *src = cx_source();
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the compiler and the source */
  for (const char *p = cxx; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (const char *p = src; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  snprintf(so, sizeof so, "/tmp/cfuser-cxshim-%016llx.so", (unsigned long long)h);
  if (access(so, R_OK) != 0) {
    cx_remove_stale();
    cx_compile(cxx, src, so);
  }
  free(src);
  void *handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(handle, "dlopen %s: %s", so, dlerror());
  *(void **)&shim.unary_f = dlsym(handle, "cx_unary_f");
  *(void **)&shim.unary_d = dlsym(handle, "cx_unary_d");
  *(void **)&shim.binary_f = dlsym(handle, "cx_binary_f");
  *(void **)&shim.binary_d = dlsym(handle, "cx_binary_d");
  cr_assert(shim.unary_f && shim.unary_d && shim.binary_f && shim.binary_d, "the shim's functions");
  return shim;
}

#endif
