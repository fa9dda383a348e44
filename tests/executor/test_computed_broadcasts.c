/* Define and run of the fusions issue 22's GPU sweep ran in more kernels than
 * torch.compile, on the host backend against the reference evaluator, with the
 * schedulers and kernel counts they get now: bias + gelu with the bias cast to float
 * (one pointwise kernel: the broadcast of the cast is hoisted onto the bias,
 * scheduler/hoist_broadcasts.c, where the cast had a kernel of its own), batch norm of a
 * channels-first activation with its weight and bias cast (their casts in the
 * normalization's kernel), a broadcast input's elementwise result read twice (DAG seed
 * 148 after hoisting: pointwise recomputes it per reader), and transposes that move only
 * axes of one element ([N, 1], as torch passes it with strides (1, 1), went to the
 * fallback: now one pointwise copy; bias + gelu of such a column went to the transpose
 * row), beside a real transpose that keeps its row; and two outputs whose rows the
 * pointwise tile reaches only through a broadcast (DAG seed 12000229: no vector along
 * them); and a chain computed from a reduction's result and broadcast along the whole
 * outer half of the pointwise tile (DAG seed 38601349) and a broadcast inlined into such a
 * tensor whose blockIdx.y loop another broadcast promotes (DAG seed 41400113): both were
 * refused by lowering's positional reading, which no longer has a tensor nothing reads
 * stand for a promoting tensor. */
#include <criterion/criterion.h>
#include <string.h>

#include "cfuser/execute.h"
#include "executor/model_fusions.h"
#include "test_util.h"

TU_CACHE_SUITE(computed_broadcasts);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};

static double tol(cf_dtype dt) { return dt == CF_FLOAT ? 1e-5 : 1e-2; }

/* Executes the cache on random inputs of dtype dt and the given sizes (strides: NULL, or
 * per input NULL or its strides) and compares every output with the evaluator's. */
static void run(cf_dtype dt, int n, const int *rank, const int64_t (*sizes)[3], const int64_t *const *strides,
                const char *what) {
  tu_assert_io_fits(f, n);
  DLManagedTensor *t[TU_MAX_IO], *got[TU_MAX_IO] = {0}, *want[TU_MAX_IO] = {0};
  DLTensor view[TU_MAX_IO];
  const DLTensor *in[TU_MAX_IO];
  for (int i = 0; i < n; i++) {
    t[i] = cf_tensor_host(dt, rank[i], sizes[i]);
    cf_tensor_fill_random(&t[i]->dl_tensor, 7 + (uint64_t)i);
    view[i] = t[i]->dl_tensor;
    if (strides && strides[i]) view[i].strides = (int64_t *)strides[i];
    in[i] = &view[i];
  }
  if (!c) c = cf_fusion_cache_create(f, &host);
  int nout = cf_fusion_num_outputs(f);
  cf_status s = cf_fusion_execute(c, n, in, nout, got);
  cr_expect_eq(s, CF_OK, "%s: %s", what, cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, n, in, want), CF_OK, "%s: %s", what, cf_fusion_error(f));
  for (int o = 0; !s && o < nout; o++) {
    char msg[256] = "";
    cr_expect(cf_tensor_allclose(&got[o]->dl_tensor, &want[o]->dl_tensor, tol(dt), tol(dt), msg, sizeof msg),
              "%s, output %d: %s", what, o, msg);
  }
  for (int o = 0; o < nout; o++) cf_tensor_free(got[o]), cf_tensor_free(want[o]);
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
}

/* The schedulers of the last call's segments, joined by '+'. */
static void expect_schedulers(const char *want, const char *what) {
  char have[256] = "";
  for (int i = 0; i < cf_fusion_cache_last_segments(c); i++)
    snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? "+" : "", cf_fusion_cache_last_scheduler(c, i));
  cr_expect_str_eq(have, want, "%s: %s", what, have);
}

static const cf_dtype dtypes[] = {CF_FLOAT, CF_BFLOAT16, CF_HALF};

/* ---- bias + gelu: one kernel --------------------------------------------------------------- */

Test(computed_broadcasts, bias_gelu_is_one_pointwise_kernel) {
  const int64_t shapes[][2] = {{127, 127}, {33, 7}, {16384, 1}, {1, 1}, {1024, 16}, {8191, 3}, {1, 16}};
  for (int d = 0; d < 3; d++) {
    tu_fresh();
    mf_bias_gelu(f, dtypes[d]);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      char what[64];
      snprintf(what, sizeof what, "bias_gelu %s [%lld, %lld]", cf_dtype_name(dtypes[d]), (long long)shapes[s][0],
               (long long)shapes[s][1]);
      run(dtypes[d], 2, (int[]){2, 1}, (const int64_t[][3]){{shapes[s][0], shapes[s][1]}, {shapes[s][1]}}, NULL,
          what);
      expect_schedulers("pointwise", what);
    }
  }
}

/* x [N, 1] as torch passes it, strides (1, 1): its contiguous axis is axis 0, the output's
 * innermost of more than one element too, so no input is transposed (the transpose row
 * took it, 0.65x torch.compile on the H200). */
Test(computed_broadcasts, bias_gelu_of_a_column_with_torch_strides_is_pointwise) {
  static const int64_t unit[] = {1, 1};
  mf_bias_gelu(f, CF_FLOAT);
  const int64_t rows[] = {16, 16384, 1048576};
  for (int s = 0; s < 3; s++) {
    char what[64];
    snprintf(what, sizeof what, "bias_gelu [%lld, 1] strides (1, 1)", (long long)rows[s]);
    run(CF_FLOAT, 2, (int[]){2, 1}, (const int64_t[][3]){{rows[s], 1}, {1}}, (const int64_t *const[]){unit, NULL},
        what);
    expect_schedulers("pointwise", what);
  }
}

/* ---- batch norm channels first: the parameters' casts in the normalization's kernel -------- */

/* Training batch norm of x [N, C, HW] with weight and bias [C], as bench/sweep_kinds.py
 * writes it: statistics over N and HW (var_mean), then (x - mean) * rsqrt(var + eps) * w + b. */
static void batch_norm_cf(cf_fusion *g, cf_dtype dt) {
  cf_tv *x = mf_float(g, mf_in(g, dt, 3)), *w = mf_float(g, mf_in(g, dt, 1)), *b = mf_float(g, mf_in(g, dt, 1));
  cf_tv *var = NULL, *mean = NULL;
  cf_var_mean(g, x, 2, (int[]){0, 2}, 0, true, &var, &mean);
  const bool chan[] = {true, false, true};
  cf_tv *y = cf_mul(g, cf_sub(g, x, mean), cf_rsqrt(g, cf_add_scalar(g, var, 1e-5)));
  mf_out(g, cf_add(g, cf_mul(g, y, cf_broadcast(g, w, 3, chan)), cf_broadcast(g, b, 3, chan)), dt);
}

/* One kernel in every dtype: the inner persistent scheduler takes the statistics over the
 * non-adjacent axes (the row reordered kept-first), and the parameters' casts are computed
 * in it (five kernels before: the cast of x, the statistics, each parameter's cast, the
 * normalization). */
Test(computed_broadcasts, batch_norm_channels_first_casts_its_parameters_in_the_normalization) {
  const int64_t shapes[][3] = {{7, 31, 127}, {1, 3, 1}, {2, 1, 16}, {16, 3, 1}, {1, 1, 1}};
  for (int d = 0; d < 3; d++) {
    tu_fresh();
    batch_norm_cf(f, dtypes[d]);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t *x = shapes[s];
      char what[64];
      snprintf(what, sizeof what, "batch_norm_cf %s [%lld, %lld, %lld]", cf_dtype_name(dtypes[d]), (long long)x[0],
               (long long)x[1], (long long)x[2]);
      run(dtypes[d], 3, (int[]){3, 1, 1}, (const int64_t[][3]){{x[0], x[1], x[2]}, {x[1]}, {x[1]}}, NULL, what);
      expect_schedulers("welford_translate", what);
    }
  }
}

/* ---- a broadcast input's elementwise result read by two ops ------------------------------- */

/* relu(broadcast(b)) read by a sub and an add whose innermost loops differ: pointwise
 * copies it for each reader (it was refused by lowering: an internal error). */
Test(computed_broadcasts, broadcast_result_read_twice_is_one_pointwise_kernel) {
  cf_tv *x = mf_in(f, CF_FLOAT, 3), *y = mf_in(f, CF_FLOAT, 3), *b = mf_in(f, CF_FLOAT, 1);
  cf_tv *r = cf_relu(f, cf_broadcast(f, b, 3, (bool[]){true, true, false}));
  cf_tv *d = cf_sub(f, y, r), *a = cf_abs(f, d);
  cf_fusion_add_output(f, a);
  cf_fusion_add_output(f, cf_add(f, cf_add(f, a, x), cf_add(f, d, r)));
  const int64_t shapes[][3] = {{2, 5, 64}, {3, 1, 7}, {1, 1, 1}};
  for (int s = 0; s < 3; s++) {
    const int64_t *e = shapes[s];
    char what[64];
    snprintf(what, sizeof what, "[%lld, %lld, %lld]", (long long)e[0], (long long)e[1], (long long)e[2]);
    run(CF_FLOAT, 3, (int[]){3, 3, 1}, (const int64_t[][3]){{e[0], e[1], e[2]}, {e[0], e[1], e[2]}, {e[2]}}, NULL,
        what);
    expect_schedulers("pointwise", what);
  }
}

/* ---- rows reached through a broadcast: no vector along them -------------------------------- */

/* x + broadcast(b) and y * broadcast(b), x and y [R, C], b [C] of constant sizes (a
 * symbolic R is no vector's extent): the pointwise propagation
 * from the first output reaches y and the second output only through b, which leaves their
 * rows innermost; with R equal to the vector width the row vectorized them across rows
 * (DAG seed 12000229 of define and run: lowering refused the schedule, an internal error).
 * Now they are read and written element by element, x and the first output by vectors. */
Test(computed_broadcasts, rows_reached_through_a_broadcast_are_not_vectorized) {
  const struct {
    cf_dtype dt;
    int64_t r, c;
  } cases[] = {{CF_FLOAT, 4, 32}, {CF_FLOAT, 2, 6}, {CF_FLOAT, 4, 4}, {CF_BFLOAT16, 8, 64}, {CF_HALF, 2, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tu_fresh();
    const bool rows[] = {true, false};
    int64_t r = cases[k].r, n = cases[k].c;
    cf_tv *x = cf_tensor_concrete(f, cases[k].dt, 2, (int64_t[]){r, n});
    cf_tv *y = cf_tensor_concrete(f, cases[k].dt, 2, (int64_t[]){r, n});
    cf_tv *b = cf_tensor_concrete(f, cases[k].dt, 1, (int64_t[]){n});
    cf_fusion_add_input(f, x);
    cf_fusion_add_input(f, y);
    cf_fusion_add_input(f, b);
    cf_fusion_add_output(f, cf_add(f, x, cf_broadcast(f, b, 2, rows)));
    cf_fusion_add_output(f, cf_mul(f, y, cf_broadcast(f, b, 2, rows)));
    char what[64];
    snprintf(what, sizeof what, "%s [%lld, %lld]", cf_dtype_name(cases[k].dt), (long long)r, (long long)n);
    run(cases[k].dt, 3, (int[]){2, 2, 1}, (const int64_t[][3]){{r, n}, {r, n}, {n}}, NULL, what);
    expect_schedulers("pointwise", what);
  }
}

/* ---- transposes of axes of one element are copies ------------------------------------------ */

static void transpose_fusion(cf_dtype dt) {
  tu_fresh();
  cf_fusion_add_output(f, cf_transpose(f, mf_in(f, dt, 2), 0, 1));
}

Test(computed_broadcasts, transpose_of_n_by_1_is_a_pointwise_copy) {
  const int64_t rows[] = {16, 1024, 16384, 131071};
  static const int64_t unit[] = {1, 1}; /* what torch passes for a contiguous [N, 1] */
  for (int d = 0; d < 3; d++)
    for (int torch = 0; torch < 2; torch++) {
      transpose_fusion(dtypes[d]);
      for (int s = 0; s < 4; s++) {
        char what[96];
        snprintf(what, sizeof what, "transpose %s [%lld, 1]%s", cf_dtype_name(dtypes[d]), (long long)rows[s],
                 torch ? " strides (1, 1)" : "");
        run(dtypes[d], 1, (int[]){2}, (const int64_t[][3]){{rows[s], 1}}, torch ? (const int64_t *const[]){unit} : NULL,
            what);
        expect_schedulers("pointwise", what);
      }
    }
}

Test(computed_broadcasts, transpose_of_1_by_n_and_1_by_1_are_pointwise_copies) {
  const int64_t shapes[][2] = {{1, 16}, {1, 1024}, {1, 1}};
  transpose_fusion(CF_FLOAT);
  for (int s = 0; s < 3; s++) {
    char what[64];
    snprintf(what, sizeof what, "transpose [%lld, %lld]", (long long)shapes[s][0], (long long)shapes[s][1]);
    run(CF_FLOAT, 1, (int[]){2}, (const int64_t[][3]){{shapes[s][0], shapes[s][1]}}, NULL, what);
    expect_schedulers("pointwise", what);
  }
}

/* A permute of [a, 1, b] to [1, a, b] keeps a before b: a copy too; [a, 1, b] to [b, 1, a]
 * is a transpose. */
Test(computed_broadcasts, permutes_that_keep_the_order_of_wide_axes_are_pointwise) {
  cf_fusion_add_output(f, cf_permute(f, mf_in(f, CF_FLOAT, 3), 3, (int[]){1, 0, 2}));
  run(CF_FLOAT, 1, (int[]){3}, (const int64_t[][3]){{5, 1, 33}}, NULL, "[5, 1, 33] -> [1, 5, 33]");
  expect_schedulers("pointwise", "[5, 1, 33] -> [1, 5, 33]");
  tu_fresh();
  cf_fusion_add_output(f, cf_permute(f, mf_in(f, CF_FLOAT, 3), 3, (int[]){2, 1, 0}));
  run(CF_FLOAT, 1, (int[]){3}, (const int64_t[][3]){{5, 1, 33}}, NULL, "[5, 1, 33] -> [33, 1, 5]");
  expect_schedulers("transpose", "[5, 1, 33] -> [33, 1, 5]");
}

Test(computed_broadcasts, a_real_transpose_keeps_the_transpose_row) {
  const int64_t shapes[][2] = {{33, 7}, {127, 127}, {2, 16}};
  transpose_fusion(CF_FLOAT);
  for (int s = 0; s < 3; s++) {
    char what[64];
    snprintf(what, sizeof what, "transpose [%lld, %lld]", (long long)shapes[s][0], (long long)shapes[s][1]);
    run(CF_FLOAT, 1, (int[]){2}, (const int64_t[][3]){{shapes[s][0], shapes[s][1]}}, NULL, what);
    expect_schedulers("transpose", what);
  }
}

/* ---- a chain broadcast along the whole outer half of the 2-D tile -------------------------- */

/* a = broadcast(sum(x, 0)) [1, 8, 31] (an output), out = ((a + a) + broadcast(c) + x) +
 * (a - broadcast(set(sum(x, 0)))) for x [6, 8, 31], c [6, 8]: the sum and a in one kernel
 * (outer persistent), the rest pointwise at break point 1, where set(s) is broadcast along
 * the whole outer half. Its first loop (blockIdx.y) is the broadcast's, which set(s)
 * lacks, so it was not inlined, and the blockIdx.y loop, promoted to broadcast(c) [6, 8, 1],
 * read it on threads that never wrote it: lowering refused the pointwise row's schedule,
 * an internal error (define and run's DAG seed 38601349). The thread axis stood for that
 * tile only vacuously, through the output nothing reads (analysis/positional.c, seed
 * 41400113): now the chain is read on the threads that computed it. */
Test(computed_broadcasts, chain_broadcast_along_the_outer_half_is_pointwise) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){6, 8, 31});
  cf_tv *c2 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 8});
  cf_fusion_add_input(f, x);
  cf_fusion_add_input(f, c2);
  const bool outer[] = {true, false, false};
  cf_tv *s = cf_sum(f, x, 1, (int[]){0});
  cf_tv *a = cf_broadcast(f, s, 3, outer);
  cf_fusion_add_output(f, a);
  cf_tv *u = cf_add(f, cf_add(f, cf_add(f, a, a), cf_broadcast(f, c2, 3, (bool[]){false, false, true})), x);
  cf_fusion_add_output(f, cf_add(f, u, cf_sub(f, a, cf_broadcast(f, cf_set(f, s), 3, outer))));
  for (int call = 0; call < 2; call++) {
    run(CF_FLOAT, 2, (int[]){3, 2}, (const int64_t[][3]){{6, 8, 31}, {6, 8}}, NULL, "seed 38601349's shape");
    expect_schedulers("outer_persistent+pointwise", "seed 38601349's shape");
  }
}

/* ---- a broadcast inlined into a tensor broadcast along the outer half -------------------- */

/* out = ((a * a) + broadcast(v)) + broadcast(c) + x for x [9, 2, 64], a = broadcast(abs(
 * sum(x, 0))) [1, 2, 64], v [64], c [9, 2]: the sum in one kernel, the rest pointwise at
 * break point 1, where broadcast(v) [1, 1, 64] is inlined into a tensor [1, 2, 64] that is
 * broadcast along the outer half too, its blockIdx.y loop promoted to broadcast(c) [9, 2,
 * 1]. Lowering read that tensor as standing for broadcast(c)'s inner tile [2, 1] (through
 * the output, read by nothing) and refused the loop it shares with broadcast(v): the
 * pointwise row's schedule refused by lowering, an internal error (define and run's DAG
 * seed 41400113). Nothing reads the output, so nothing stands for that tile now. */
Test(computed_broadcasts, broadcast_inlined_into_an_outer_half_broadcast_is_pointwise) {
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){9, 2, 64});
  cf_tv *v = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_tv *c2 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){9, 2});
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, v), cf_fusion_add_input(f, c2);
  cf_tv *a = cf_broadcast(f, cf_abs(f, cf_sum(f, x, 1, (int[]){0})), 3, (bool[]){true, false, false});
  cf_tv *u = cf_add(f, cf_mul(f, a, a), cf_broadcast(f, v, 3, (bool[]){true, true, false}));
  cf_fusion_add_output(f, cf_add(f, cf_add(f, u, cf_broadcast(f, c2, 3, (bool[]){false, false, true})), x));
  for (int call = 0; call < 2; call++) {
    run(CF_FLOAT, 3, (int[]){3, 1, 2}, (const int64_t[][3]){{9, 2, 64}, {64}, {9, 2}}, NULL, "seed 41400113's shape");
    expect_schedulers("outer_persistent+pointwise", "seed 41400113's shape");
  }
}
