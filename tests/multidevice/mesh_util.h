/* tests/multidevice/mesh_util.h: running a sharded fusion on the host mesh against the
 * reference evaluator on the unsharded tensors (header-only). */
#ifndef CFUSER_TESTS_MESH_UTIL_H
#define CFUSER_TESTS_MESH_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "test_util.h"

/* Runs f on ndev host-mesh devices with random global inputs (seeded), each device given
 * its shard (cf_shard_tensor), and checks every device's output shards against the
 * shards of the evaluator's outputs, within tol (relative and absolute). The executor is
 * made with opts (NULL: defaults); x receives it (the caller destroys it); the status of
 * the run is returned (its message in cf_mesh_executor_error). */
static inline cf_status mu_check_tol(cf_fusion *fu, int ndev, uint64_t seed, const cf_executor_options *opts,
                                     double tol, cf_mesh_executor **xo) {
  int nin = cf_fusion_num_inputs(fu), nout = cf_fusion_num_outputs(fu);
  tu_assert_io_fits(fu, nin);
  DLManagedTensor *g[TU_MAX_IO], *ref[TU_MAX_IO] = {0}, **loc = calloc((size_t)(ndev * nin + 1), sizeof *loc);
  DLManagedTensor **out = calloc((size_t)(ndev * nout + 1), sizeof *out);
  const DLTensor **in = calloc((size_t)(ndev * nin + 1), sizeof *in);
  for (int i = 0; i < nin; i++) {
    cf_tv *t = cf_fusion_input(fu, i);
    int64_t sizes[CF_MAX_RANK];
    for (int a = 0; a < cf_tv_logical_rank(t); a++) sizes[a] = cf_id_extent(cf_tv_domain_axis(t, CF_DOMAIN_LOGICAL, a));
    g[i] = cf_tensor_host(cf_tv_dtype(t), cf_tv_logical_rank(t), sizes);
    cf_tensor_fill_random(&g[i]->dl_tensor, seed + (uint64_t)i);
    for (int d = 0; d < ndev; d++) {
      const cf_device_mesh *m = cf_tv_device_mesh(t);
      if (m && cf_device_mesh_index(m, d) < 0) continue;
      cr_assert_eq(cf_shard_tensor(fu, t, &g[i]->dl_tensor, d, &loc[d * nin + i]), CF_OK, "%s", cf_fusion_error(fu));
      in[d * nin + i] = &loc[d * nin + i]->dl_tensor;
    }
  }
  const DLTensor *gin[TU_MAX_IO];
  for (int i = 0; i < nin; i++) gin[i] = &g[i]->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(fu, nin, gin, ref), CF_OK, "%s", cf_fusion_error(fu));
  cf_mesh_executor *x = cf_mesh_executor_create(fu, opts);
  cf_status st = cf_mesh_run_host(x, ndev, nin, in, nout, out);
  for (int o = 0; o < nout && !st; o++)
    for (int d = 0; d < ndev; d++) {
      const cf_device_mesh *m = cf_tv_device_mesh(cf_fusion_output(fu, o));
      bool holds = !m || cf_device_mesh_index(m, d) >= 0;
      cr_assert_eq(out[d * nout + o] != NULL, holds, "device %d output %d", d, o);
      if (!holds) continue;
      DLManagedTensor *want = NULL;
      cr_assert_eq(cf_shard_tensor(fu, cf_fusion_output(fu, o), &ref[o]->dl_tensor, d, &want), CF_OK, "%s",
                   cf_fusion_error(fu));
      char msg[256] = "";
      cr_expect(cf_tensor_allclose(&out[d * nout + o]->dl_tensor, &want->dl_tensor, tol, tol, msg, sizeof msg),
                "device %d output %d: %s", d, o, msg);
      cf_tensor_free(want);
    }
  for (int i = 0; i < ndev * nout; i++) cf_tensor_free(out[i]);
  for (int i = 0; i < ndev * nin; i++) cf_tensor_free(loc[i]);
  for (int i = 0; i < nin; i++) cf_tensor_free(g[i]);
  for (int o = 0; o < nout; o++) cf_tensor_free(ref[o]);
  free(out);
  free(loc);
  free((void *)in);
  if (xo) *xo = x;
  else cf_mesh_executor_destroy(x);
  return st;
}

static inline cf_status mu_check_opts(cf_fusion *fu, int ndev, uint64_t seed, const cf_executor_options *opts,
                                      cf_mesh_executor **xo) {
  return mu_check_tol(fu, ndev, seed, opts, 1e-5, xo);
}

static inline cf_status mu_check(cf_fusion *fu, int ndev, uint64_t seed, cf_mesh_executor **xo) {
  return mu_check_opts(fu, ndev, seed, NULL, xo);
}

/* The plan of x's last run as text (caller frees). */
static inline char *mu_plan(cf_mesh_executor *x) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cf_mesh_executor_print_plan(x, m);
  fclose(m);
  return buf;
}

/* The fixture of a mesh test suite: a fusion f made fresh for each test and an executor
 * x (NULL until the test makes one), both destroyed after it. */
#define MU_SUITE(suite)                                      \
  static cf_fusion *f;                                       \
  static cf_mesh_executor *x;                                \
  static void setup(void) {                                  \
    f = cf_fusion_create();                                  \
    x = NULL;                                                \
  }                                                          \
  static void teardown(void) {                               \
    cf_mesh_executor_destroy(x);                             \
    cf_fusion_destroy(f);                                    \
  }                                                          \
  TestSuite(suite, .init = setup, .fini = teardown)

static inline cf_device_mesh mu_mesh(int n) {
  cf_device_mesh m;
  cf_device_mesh_linear(&m, n);
  return m;
}

#endif
