/* Issue 28: define and run on tensors with a zero-size axis. Every scheduler and the
 * executor take them: the outputs come out empty (no kernel runs), and a reduction over
 * an empty axis gives its identity where its output is not empty. Before, the pointwise
 * scheduler divided by a row count of 0 (SIGFPE) for gelu(x + bias) on a [2, 0, 1000]
 * batch and for x * sum(x, {1, 2}, keepdim) on [130, 0, 128]. Each call is compared with
 * the reference evaluator. */
#include <criterion/criterion.h>

#include "test_util.h"

static cf_fusion *f;
static cf_fusion_cache *c;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) {
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}
TestSuite(execute_empty, .init = setup, .fini = teardown);

static cf_tv *input(int rank) {
  cf_tv *t = cf_tensor_symbolic(f, CF_FLOAT, rank);
  cf_fusion_add_input(f, t);
  return t;
}

/* Runs the cache (made on first use) on random inputs of the given shapes (rank, sizes
 * per input) and compares every output with the evaluator's, twice (a compile, a hit). */
static void check(int nin, const int *rank, const int64_t (*sizes)[4]) {
  if (!c) c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  tu_assert_io_fits(f, nin);
  DLManagedTensor *x[TU_MAX_IO];
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) {
    x[i] = cf_tensor_host(CF_FLOAT, rank[i], sizes[i]);
    cf_tensor_fill_random(&x[i]->dl_tensor, (uint64_t)i + 5);
    ins[i] = &x[i]->dl_tensor;
  }
  int nout = cf_fusion_num_outputs(f);
  for (int call = 0; call < 2; call++) {
    DLManagedTensor *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
    cr_assert_eq(cf_fusion_execute(c, nin, ins, nout, got), CF_OK, "%s", cf_fusion_cache_error(c));
    cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "%s", cf_fusion_error(f));
    for (int o = 0; o < nout; o++) {
      char msg[256] = "";
      cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, 1e-5, 1e-5, msg, sizeof msg),
                "output %d: %s", o, msg);
      cf_tensor_free(got[o]), cf_tensor_free(want[o]);
    }
  }
  for (int i = 0; i < nin; i++) cf_tensor_free(x[i]);
}

Test(execute_empty, gelu_of_a_biased_empty_batch) {
  cf_tv *x = input(3), *b = input(1);
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, x, cf_broadcast(f, b, 3, (bool[]){true, true, false}))));
  check(2, (int[]){3, 1}, (const int64_t[][4]){{2, 0, 1000}, {1000}});
  check(2, (int[]){3, 1}, (const int64_t[][4]){{0, 3, 0}, {0}});
}

Test(execute_empty, times_its_sum_over_an_empty_axis) {
  cf_tv *x = input(3);
  cf_fusion_add_output(f, cf_mul(f, x, cf_reduce(f, CF_REDUCE_SUM, x, 2, (int[]){1, 2}, true)));
  check(1, (int[]){3}, (const int64_t[][4]){{130, 0, 128}});
  check(1, (int[]){3}, (const int64_t[][4]){{0, 4, 128}});
}

/* Sums over an empty axis are 0 (a non-empty output: its kernel runs a loop of no
 * iterations), sums of no rows are empty. */
Test(execute_empty, sums_of_empty_rows_and_columns) {
  cf_tv *x = input(2);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){0}));
  check(1, (int[]){2}, (const int64_t[][4]){{4, 0}});
  check(1, (int[]){2}, (const int64_t[][4]){{0, 5}});
  check(1, (int[]){2}, (const int64_t[][4]){{0, 0}});
}

Test(execute_empty, middle_and_full_reductions) {
  cf_tv *x = input(3);
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_sum(f, x, 3, (int[]){0, 1, 2}));
  check(1, (int[]){3}, (const int64_t[][4]){{3, 0, 7}});
  check(1, (int[]){3}, (const int64_t[][4]){{0, 6, 7}});
}

/* Softmax and a batch norm's centring (the persistent schedulers' shapes). */
Test(execute_empty, normalizations) {
  cf_tv *x = input(2);
  cf_tv *e = cf_exp(f, x);
  cf_fusion_add_output(f, cf_div(f, e, cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, (bool[]){false, true})));
  cf_fusion_add_output(f, cf_sub(f, x, cf_broadcast(f, cf_sum(f, x, 1, (int[]){0}), 2, (bool[]){true, false})));
  check(1, (int[]){2}, (const int64_t[][4]){{3, 0}});
  check(1, (int[]){2}, (const int64_t[][4]){{0, 9}});
}

/* A non-empty output next to an empty sum: z + sum(x, 1) with x [5, 0] is z. */
Test(execute_empty, empty_sum_added_to_a_full_tensor) {
  cf_tv *x = input(2), *z = input(2);
  cf_fusion_add_output(f, cf_add(f, z, cf_broadcast(f, cf_sum(f, x, 1, (int[]){1}), 2, (bool[]){false, true})));
  check(2, (int[]){2, 2}, (const int64_t[][4]){{5, 0}, {5, 3}});
}

Test(execute_empty, transposes) {
  cf_tv *x = input(2);
  cf_fusion_add_output(f, cf_neg(f, cf_transpose(f, x, 0, 1)));
  check(1, (int[]){2}, (const int64_t[][4]){{0, 64}});
  check(1, (int[]){2}, (const int64_t[][4]){{96, 0}});
}
