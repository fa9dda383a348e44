/* Define and run's plans on the host backend, against the reference evaluator: the model
 * fusions (tests/executor/model_fusions.h: softmax, layer and RMS norms, batch norms,
 * var_mean, transposes, ... as nvFuser's users write them) at many shapes and dtypes,
 * never refused; a layer norm returning y, mean and invstd is one kernel (its
 * CFUSER_DUMP=segments output pinned); the shapes issue 22 found refused (a middle-axis
 * var_mean of [8, 1, 6], a reshaped input then var_mean, over a grid of sizes); kernels
 * shared across sizes (200 row counts of a softmax compile one kernel) and the bound on
 * entries (least recently used evicted, their kernels and host shared objects
 * released). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfuser/execute.h"
#include "executor/model_fusions.h"
#include "test_util.h"

TU_CACHE_SUITE(segments);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

static double tol(cf_dtype dt) { return dt == CF_FLOAT ? 1e-4 : 3e-2; }

/* Executes the cache on random inputs of mi and compares every output with the
 * evaluator's; the status of the execute. */
static cf_status check_inputs(cf_dtype dt, MfInputs mi, uint64_t seed, const char *what) {
  tu_assert_io_fits(f, mi.n);
  DLManagedTensor *t[TU_MAX_IO], *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  const DLTensor *in[TU_MAX_IO];
  for (int i = 0; i < mi.n; i++) {
    t[i] = cf_tensor_host(dt, mi.rank[i], mi.sizes[i]);
    cf_tensor_fill_random(&t[i]->dl_tensor, seed + (uint64_t)i);
    in[i] = &t[i]->dl_tensor;
  }
  if (!c) c = cf_fusion_cache_create(f, &host);
  int nout = cf_fusion_num_outputs(f);
  cf_status s = cf_fusion_execute(c, mi.n, in, nout, got);
  cr_expect_eq(s, CF_OK, "%s: %s", what, cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, mi.n, in, want), CF_OK, "%s: %s", what, cf_fusion_error(f));
  for (int o = 0; !s && o < nout; o++) {
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, tol(dt), tol(dt), msg, sizeof msg),
              "%s, output %d: %s", what, o, msg);
  }
  for (int o = 0; o < nout; o++) cf_tensor_free(got[o]), cf_tensor_free(want[o]);
  for (int i = 0; i < mi.n; i++) cf_tensor_free(t[i]);
  return s;
}

/* ---- every model fusion runs --------------------------------------------------------------- */

Test(segments, model_fusions_run_like_the_evaluator, .timeout = 900) {
  const struct { cf_dtype dt; int nshapes; } runs[] = {{CF_FLOAT, MF_NSHAPES}, {CF_BFLOAT16, 3}, {CF_HALF, 2}};
  for (int k = 0; k < MF_NCASES; k++)
    for (int d = 0; d < 3; d++) {
      tu_fresh();
      mf_cases[k].build(f, runs[d].dt);
      for (int s = 0; s < runs[d].nshapes; s++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s [%lld, %lld]", mf_cases[k].name, cf_dtype_name(runs[d].dt),
                 (long long)mf_shapes[s][0], (long long)mf_shapes[s][1]);
        check_inputs(runs[d].dt, mf_cases[k].inputs(mf_shapes[s][0], mf_shapes[s][1]), (uint64_t)s * 16 + 1, what);
        for (int i = 0; i < cf_fusion_cache_last_segments(c); i++)
          cr_expect_neq(cf_fusion_cache_last_executor(c, i) == NULL && strcmp(cf_fusion_cache_last_scheduler(c, i), "view"),
                        true, "%s: segment %d has no kernel", what, i);
      }
    }
}

/* ---- two linears: each on the matmul scheduler ---------------------------------------------- */

/* gelu(linear(x, w1, b1)) then linear(h, w2), the MLP of a transformer layer: the first
 * linear's bias and gelu go with it (its epilogue), so the second linear's operand is a
 * segment input and the matmul scheduler takes both. Before the bias broadcast was merged
 * first (segment.c's forwards_input), the epilogue went with the second linear, whose
 * computed operand the matmul scheduler refused: the reduction scheduler ran it as one dot
 * product per output (15x torch's time in the tensor-parallel MLP on 2 H200s). */
Test(segments, two_linears_are_two_matmul_segments) {
  tu_fresh();
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *w1 = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_tv *b1 = cf_tensor_symbolic(f, CF_FLOAT, 1);
  cf_tv *w2 = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w1), cf_fusion_add_input(f, b1), cf_fusion_add_input(f, w2);
  cf_fusion_add_output(f, cf_linear(f, cf_gelu(f, cf_linear(f, x, w1, b1)), w2, NULL));
  MfInputs mi = {4, {2, 2, 1, 2}, {{64, 32}, {96, 32}, {96}, {40, 96}}};
  check_inputs(CF_FLOAT, mi, 7, "mlp");
  cr_assert_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "matmul");
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 1), "matmul");
}

/* ---- a layer norm with extra outputs is one kernel --------------------------------------- */

Test(segments, layer_norm_with_mean_and_invstd_is_one_kernel) {
  const cf_dtype dts[] = {CF_FLOAT, CF_BFLOAT16, CF_HALF};
  const int64_t shapes[][2] = {{5, 4096}, {7, 1000}, {3, 1}, {64, 1024}, {1, 16384}};
  for (int d = 0; d < 3; d++) {
    tu_fresh();
    mf_layer_norm_stats(f, dts[d]);
    for (int s = 0; s < 5; s++) {
      char what[64];
      snprintf(what, sizeof what, "%s [%lld, %lld]", cf_dtype_name(dts[d]), (long long)shapes[s][0],
               (long long)shapes[s][1]);
      check_inputs(dts[d], mf_xwb(shapes[s][0], shapes[s][1]), 3, what);
      cr_expect_eq(cf_fusion_cache_last_segments(c), 1, "%s", what);
      /* one row of 16384 split over the grid keeps Welford (one grid all-reduce) */
      cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), s < 4 ? "welford_translate" : "inner_persistent", "%s",
                       what);
    }
  }
}

/* The layer norm's CFUSER_DUMP=segments output: one segment, every row before refusing. */
Test(segments, dump_of_the_layer_norm_with_mean_and_invstd) {
  cr_redirect_stderr();
  mf_layer_norm_stats(f, CF_FLOAT);
  setenv("CFUSER_DUMP", "segments", 1);
  check_inputs(CF_FLOAT, mf_xwb(2, 8), 3, "dump");
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  char text[16384] = "";
  size_t n = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
  text[n] = 0;
  const char *want =
      "=== define and run: segment 0 of 1: scheduler welford_translate (registers threads=2x2 persistent=1 "
      "vector=4 rows=blockIdx.x) ===\n"
      "refused by: (none)\n"
      "Inputs:\n"
      "  T0_g_float[iS0{2}, iS1{8}]\n"
      "  T1_g_float[iS2{8}]\n"
      "  T2_g_float[iS3{8}]\n"
      "Outputs:\n"
      "  T21_g_float[iS33{2}, iS34{8}]\n"
      "  T4_g_float[iS6{2}]\n"
      "  T13_g_float[iS17{2}, bS18{1}]\n\n"
      "%kernel_math {\n"
      "T3_l_welford_float[iS4{2}, rS5{8}]\n"
      "   = welford( T0_g_float[iS0{2}, iS1{8}] );\n";
  cr_expect(strncmp(text, want, strlen(want)) == 0, "%s", text);
  cr_expect(strstr(text, "} // %kernel_math\nkernel: new\n") != NULL, "%s", text);
  cr_expect(strstr(text, "=== define and run: segment 1") == NULL, "%s", text);
}

/* ---- the shapes issue 22 found refused ----------------------------------------------------- */

/* "no scheduler accepts segment ... (the default serial schedule failed too)". */
Test(segments, middle_axis_var_mean_of_8_1_6) {
  mf_var_mean_middle(f, CF_FLOAT);
  check_inputs(CF_FLOAT, mf_x1c(8, 6), 1, "[8, 1, 6]");
  check_inputs(CF_FLOAT, mf_x1c(3, 1000), 2, "[3, 1, 1000]");
}

Test(segments, reshaped_input_then_var_mean_over_a_grid_of_sizes) {
  mf_reshape_var_mean(f, CF_FLOAT);
  for (int64_t r = 1; r <= 9; r += 2)
    for (int64_t cols = 2; cols <= 130; cols = cols * 3 + 2) {
      char what[64];
      snprintf(what, sizeof what, "[%lld, %lld]", (long long)r, (long long)cols);
      check_inputs(CF_FLOAT, mf_x(r, cols), 5, what);
      cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "view", "%s", what);
    }
}

/* ---- kernels shared across sizes ------------------------------------------------------------ */

/* 200 row counts of one softmax: a handful of kernels (the rows are a free size; the
 * rows a block takes on threadIdx.y change with the row count), 200 entries. */
Test(segments, two_hundred_row_counts_of_a_softmax_share_a_kernel, .timeout = 600) {
  mf_softmax(f, CF_FLOAT);
  for (int64_t r = 1; r <= 200; r++) {
    char what[32];
    snprintf(what, sizeof what, "[%lld, 96]", (long long)r);
    check_inputs(CF_FLOAT, mf_x(r, 96), (uint64_t)r, what);
  }
  cr_expect_eq(cf_fusion_cache_num_entries(c), 200);
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 3, "%d kernels", cf_fusion_cache_num_kernels(c));
  cr_expect_eq(cf_fusion_cache_kernel_reuses(c), 197);
  cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), "registers threads=32x4 persistent=1 vector=4 rows=blockIdx.x");
}

/* A row length is no free size: another length is another plan and another kernel. */
Test(segments, another_row_length_is_another_kernel) {
  mf_softmax(f, CF_FLOAT);
  check_inputs(CF_FLOAT, mf_x(4, 96), 1, "[4, 96]");
  check_inputs(CF_FLOAT, mf_x(4, 100), 2, "[4, 100]");
  check_inputs(CF_FLOAT, mf_x(9, 100), 3, "[9, 100]");
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 2);
  cr_expect_eq(cf_fusion_cache_num_live_kernels(c), 2);
}

/* Mapped shared objects of the host backend in this process under dir. */
static int mapped_objects(const char *dir) {
  FILE *m = fopen("/proc/self/maps", "r");
  char line[4096], seen[64][512];
  int n = 0;
  while (m && fgets(line, sizeof line, m)) {
    char *path = strchr(line, '/');
    if (!path || strncmp(path, dir, strlen(dir)) || !strstr(path, ".so")) continue;
    path[strcspn(path, "\n")] = 0;
    bool dup = false;
    for (int i = 0; i < n && !dup; i++) dup = !strcmp(seen[i], path);
    if (!dup && n < 64) snprintf(seen[n++], sizeof seen[0], "%s", path);
  }
  if (m) fclose(m);
  return n;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[1024];
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, e->d_name), unlink(path);
  if (d) closedir(d);
  rmdir(dir);
}

/* At most 3 entries: the least recently used is evicted, and its kernel (each row length
 * its own) destroyed with its host shared object. A hit makes an entry the most recent. */
Test(segments, eviction_releases_kernels_and_shared_objects, .timeout = 600) {
  char dir[] = "/tmp/cfuser-evict-XXXXXX";
  cr_assert(mkdtemp(dir));
  setenv("CFUSER_CACHE_DIR", dir, 1);
  setenv("TMPDIR", dir, 1); /* a fresh compile is loaded from a private directory under it */
  mf_softmax(f, CF_FLOAT);
  c = cf_fusion_cache_create(f, &host);
  cr_expect_eq(cf_fusion_cache_set_max_entries(c, 0), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "set_max_entries: 0 entries; keep at least 1");
  cr_assert_eq(cf_fusion_cache_set_max_entries(c, 3), CF_OK);
  for (int64_t cols = 8; cols <= 12; cols++) {
    check_inputs(CF_FLOAT, mf_x(4, cols), 1, "evict");
    check_inputs(CF_FLOAT, mf_x(4, 8), 2, "keep [4, 8] recent"); /* a hit after the first */
  }
  cr_expect_eq(cf_fusion_cache_num_entries(c), 3);
  cr_expect_eq(cf_fusion_cache_evictions(c), 2); /* 9 and 10 columns */
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 5);
  cr_expect_eq(cf_fusion_cache_num_live_kernels(c), 3);
  cr_expect_eq(mapped_objects(dir), 3);
  cr_assert_eq(cf_fusion_cache_set_max_entries(c, 1), CF_OK);
  cr_expect_eq(cf_fusion_cache_num_live_kernels(c), 1);
  cr_expect_eq(mapped_objects(dir), 1);
  check_inputs(CF_FLOAT, mf_x(4, 8), 2, "the survivor is the most recent");
  cr_expect_eq(cf_fusion_cache_hits(c), 6);
  cf_fusion_cache_destroy(c);
  c = NULL;
  cr_expect_eq(mapped_objects(dir), 0);
  unsetenv("CFUSER_CACHE_DIR");
  unsetenv("TMPDIR");
  remove_dir(dir);
}
