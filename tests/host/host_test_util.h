/* tests/host/host_test_util.h: helpers of the host backend's tests: the embedded runtime
 * prepended to a handwritten kernel, compiling it through executor/host.c, 1-D tensor
 * arguments, and a launch wrapper. Static inline so that each test file takes what it
 * uses. */
#ifndef CFUSER_TESTS_HOST_TEST_UTIL_H
#define CFUSER_TESTS_HOST_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/exec_host.h"

/* The tensor struct of the kernels below: 1-D and 2-D, 64-bit indices. */
#define TENSOR_TYPES                                                                        \
  "typedef struct { float *data; int64_t logical_size[1]; int64_t alloc_stride[1]; } T1f;\n" \
  "typedef struct { float *data; int64_t logical_size[2]; int64_t alloc_stride[2]; } T2f;\n" \
  "typedef struct { uint32_t *data; int64_t logical_size[1]; int64_t alloc_stride[1]; } T1u;\n"

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline char *with_runtime(const char *kernel) {
  char *rt = exec_host_runtime_source();
  cr_assert_not_null(rt, "the runtime is embedded");
  char *s = malloc(strlen(rt) + strlen(TENSOR_TYPES) + strlen(kernel) + 1);
  cr_assert_not_null(s);
  strcpy(s, rt);
  strcat(s, TENSOR_TYPES);
  strcat(s, kernel);
  free(rt);
  return s;
}

/* The kernel k<k> that writes k into each of its threads' elements: distinct kernels by k
 * (name into name[32], its source into kernel[256]). */
static inline void kernel_writing(int k, char *name, char *kernel) {
  snprintf(name, 32, "k%d", k);
  snprintf(kernel, 256, "void %s(T1f out);\nvoid %s(T1f out) { out.data[threadIdx.x] = %d.0f; }\n", name, name, k);
}

static inline ExecHostModule *compile_ok(const char *kernel, const char *name) {
  char *src = with_runtime(kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  cf_status st = exec_host_compile(src, name, &m, &err);
  cr_assert_eq(st, CF_OK, "compile %s: %s\n%s", name, err.msg,
               err.compiler_output ? err.compiler_output : "");
  exec_host_error_clear(&err);
  free(src);
  return m;
}

/* A 1-D float or uint32 tensor argument of n contiguous elements. */
typedef struct Arg {
  ExecHostParam p;
  unsigned char buf[64];
} Arg;

static inline void arg_1d(Arg *a, void *data, int64_t n) {
  int64_t one = 1;
  a->p = (ExecHostParam){true, CF_FLOAT, 1, 1, false};
  cr_assert_eq(exec_host_pack_tensor(&a->p, data, &n, &one, a->buf, NULL), CF_OK);
}

/* Launches m with the given 1-D tensor arguments; returns the status, err->msg filled. */
static inline cf_status run1(const ExecHostModule *m, int64_t grid, int64_t block, int64_t smem, int n,
                      Arg *args, ExecHostError *err) {
  ExecHostParam params[4];
  void *values[4];
  for (int i = 0; i < n; i++) {
    params[i] = args[i].p;
    values[i] = args[i].buf;
  }
  int64_t g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
  return exec_host_launch(m, g, b, smem, n, params, values, err);
}

#endif
