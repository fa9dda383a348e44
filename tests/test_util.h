/* tests/test_util.h: helpers shared by the test suites: capturing printed IR as strings,
 * assertions on printed domains and error messages, and the tutorials' standard fusions.
 * Header-only (static functions). */
#ifndef CFUSER_TEST_UTIL_H
#define CFUSER_TEST_UTIL_H

#include <cfuser.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sends CFUSER_DUMP=times to a new, empty temporary file whose name `path` (a mkstemp
 * template, e.g. "/tmp/cfuser-times-XXXXXX") then holds. A process opens its dump file
 * once (lower/dump_file.c): call this before its first compile. */
static inline void tu_dump_times_to_temp(char *path) {
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  setenv("CFUSER_DUMP", "times", 1);
  setenv("CFUSER_DUMP_FILE", path, 1);
}

/* The matmul row's params for its tensor-core schedule with these operand fills
 * ("cp.async16" or "scalar(why)" for A, then B: scheduler/matmul_mma.c); a static buffer,
 * valid until the next call. */
static inline const char *tu_mma_params(const char *fill_a, const char *fill_b) {
  static char buf[256];
  snprintf(buf, sizeof buf, "tile=128x128x32 warps=2x2 mma=m16n8k16 smem=operands stages=3 fill=%s,%s", fill_a, fill_b);
  return buf;
}

/* The matmul row's params for its SIMT schedule (float and double operands) with these
 * operand fills ("cp.async16", "swizzled" for B's K-major tile, or "scalar(why)":
 * scheduler/matmul_simt.c); a static buffer, valid until the next call. */
static inline const char *tu_simt_params(const char *fill_a, const char *fill_b) {
  static char buf[256];
  snprintf(buf, sizeof buf, "tile=128x128x16 threads=16x16 regs=8x8 smem=operands stages=2 fill=%s,%s", fill_a, fill_b);
  return buf;
}

/* Runs a printer into a malloc'd string (the caller frees it). The memstream's buffer is
 * copied out: GCC's -Wdangling-pointer otherwise mistakes it, once inlined, for a local. */
static inline char *tu_capture_fusion(cf_status (*fn)(cf_fusion *, FILE *), cf_fusion *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  fn(f, m);
  fclose(m);
  char *copy = strdup(buf ? buf : "");
  free(buf);
  return copy;
}

static inline char *tu_tv_str(cf_fusion *f, cf_tv *tv) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cf_tv_print(f, tv, m);
  fclose(m);
  if (len && buf[len - 1] == '\n') buf[len - 1] = 0;
  return buf;
}

/* The most fusion inputs and outputs the test helpers' fixed arrays hold: they are indexed
 * by input and output number (test_complex_kernels' fusions have 24 outputs). */
enum { TU_MAX_IO = 32 };

/* Asserts that nin inputs and f's outputs fit arrays of TU_MAX_IO, naming the limit: past
 * it a helper would write beyond a stack array, which showed as outputs that "differ". */
static inline void tu_assert_io_fits(cf_fusion *f, int nin) {
  int nout = cf_fusion_num_outputs(f);
  cr_assert(nin >= 0 && nin <= TU_MAX_IO && nout >= 0 && nout <= TU_MAX_IO,
            "%d inputs and %d outputs: the test helpers hold at most TU_MAX_IO = %d of each", nin, nout, TU_MAX_IO);
}

/* Tests that need NVRTC (the CUDA toolkit) skip, with the reason, where it is missing. */
#define TU_SKIP_WITHOUT_NVRTC()                                                        \
  do {                                                                                 \
    const char *why_ = NULL;                                                           \
    if (!cf_nvrtc_available(&why_)) cr_skip_test("NVRTC unavailable: %s", why_);        \
  } while (0)

/* Tests that compile with NVRTC and then run on the host backend keep the host part where
 * NVRTC is missing: this says so once per process and returns false. */
static inline bool tu_nvrtc_or_note(void) {
  static bool noted = false;
  const char *why = NULL;
  if (cf_nvrtc_available(&why)) return true;
  if (!noted) printf("skipped: the NVRTC compiles (NVRTC unavailable: %s); the host backend still runs\n", why);
  noted = true;
  return false;
}

/* Expects every string of the array `want` somewhere in text (a kernel's lines, a
 * picture's elements), naming each missing one with the text. */
#define TU_EXPECT_CONTAINS(text, want)                                                        \
  for (size_t tu_i_ = 0; tu_i_ < sizeof(want) / sizeof((want)[0]); tu_i_++)                    \
    cr_expect(strstr((text), (want)[tu_i_]) != NULL, "missing `%s` in:\n%s", (want)[tu_i_], (text))

/* The CUDA kernel function of f, as cf_fusion_print_kernel prints it (caller frees). */
static inline char *tu_cuda_kernel_text(cf_fusion *f) { return tu_capture_fusion(cf_fusion_print_kernel, f); }

/* x[::-1] of a 1-D host tensor x: its data, byte_offset at the last element, stride -1
 * (*stride holds it: keep it alive with the view). */
static inline DLTensor tu_reversed_view(const DLManagedTensor *x, int64_t *stride) {
  DLTensor v = x->dl_tensor;
  *stride = -1;
  v.strides = stride;
  v.byte_offset += (uint64_t)(v.shape[0] - 1) * (v.dtype.bits / 8u);
  return v;
}

/* A fusion input of dtype dt: of the given sizes, or symbolic when sizes is NULL. */
static inline cf_tv *tu_input(cf_fusion *f, cf_dtype dt, int rank, const int64_t *sizes) {
  cf_tv *t = sizes ? cf_tensor_concrete(f, dt, rank, sizes) : cf_tensor_symbolic(f, dt, rank);
  cf_fusion_add_input(f, t);
  return t;
}

/* The tutorials' chain tv0 (input) -> tv1 -> tv2 -> tv3 -> tv4 (output) of sets, each
 * stored in tv[0..4]. */
static inline void tu_set_chain(cf_fusion *f, cf_dtype dt, int rank, const int64_t *sizes, cf_tv *tv[5]) {
  tv[0] = tu_input(f, dt, rank, sizes);
  for (int i = 1; i < 5; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[4]);
}

/* Assertions over a suite-wide fusion named `f`: a tensor's printed domain, a call's
 * status and the fusion's error message, a call that must succeed. */
#define EXPECT_TV(t, s)             \
  do {                              \
    char *got_ = tu_tv_str(f, (t)); \
    cr_expect_str_eq(got_, (s));    \
    free(got_);                     \
  } while (0)

#define EXPECT_ERROR(call, status, msg)          \
  do {                                           \
    cr_expect_eq((call), (status));              \
    cr_expect_str_eq(cf_fusion_error(f), (msg)); \
  } while (0)

#define EXPECT_OK(call)                                                      \
  do {                                                                       \
    cf_status st_ = (call);                                                  \
    cr_assert_eq(st_, CF_OK, "%s failed: %s", #call, cf_fusion_error(f));    \
  } while (0)

/* The seed tutorial's fancyTransformations: a [4096, 4096] tensor XOR-swizzled and split
 * in a complicated way, back to shape [4096, 4096]. */
static inline void tu_fancy_transformations(cf_fusion *fu, cf_tv *tv) {
  static const int order[4] = {3, 0, 2, 1};
  cf_swizzle_xor(fu, tv, 0, 1);
  cf_split(fu, tv, 1, 64);
  cf_split(fu, tv, 0, 64);
  cf_reorder_all(fu, tv, 4, order);
  cf_swizzle_xor(fu, tv, 0, 1);
  cf_swizzle_xor(fu, tv, 2, 3);
  cf_swizzle_xor(fu, tv, 1, 2);
  cf_reorder_all(fu, tv, 4, order);
  cf_merge(fu, tv, 2);
  cf_merge(fu, tv, 0);
}

/* The fixture of a define-and-run test suite: a fusion f made fresh for each test and a
 * cache c (NULL until the test makes one), both destroyed after it. */
#define TU_CACHE_SUITE(suite)                    \
  static cf_fusion *f;                           \
  static cf_fusion_cache *c;                     \
  static void setup(void) { f = cf_fusion_create(); } \
  static void teardown(void) {                   \
    cf_fusion_cache_destroy(c);                  \
    cf_fusion_destroy(f);                        \
  }                                              \
  /* A new empty fusion and no cache, within a test. */ \
  __attribute__((unused)) static void tu_fresh(void) { \
    teardown();                                  \
    c = NULL;                                    \
    setup();                                     \
  }                                              \
  TestSuite(suite, .init = setup, .fini = teardown)

#endif
