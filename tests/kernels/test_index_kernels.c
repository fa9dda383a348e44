/* The indexing and scan ops in kernels (issue 26): gather, take_along_axis, index_select,
 * select, scatter and cumsum through define and run (cf_fusion_execute) on the host backend
 * (and CUDA when a device is present), exactly equal to the reference evaluator, on odd
 * shapes with int32 and int64 indices, each inside a larger fusion: a pointwise producer
 * of the index and a consumer of the result fuse with the lookup into one pointwise kernel
 * when the looked-up tensor is an input, and a computed lookup operand is cut into its own
 * segment (the rows' choice is pinned). Also: a hand schedule computing the lookup operand
 * in the same kernel is refused with its message, out-of-range indices are clamped by the
 * kernels (no read outside the tensor), and symbolic extents are checked at run time. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

#include "ir/dtype.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(index_kernels, .init = setup, .fini = teardown);

static const cf_executor_options host = {.backend = CF_BACKEND_HOST};
static const cf_executor_options cuda = {.backend = CF_BACKEND_CUDA};

static uint64_t rng = 99;
static DLManagedTensor *filled(cf_dtype dt, int rank, const int64_t *sizes, int64_t lo, int64_t hi) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int64_t v = lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo));
    if (ir_dtype_is_float(dt))
      ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.d = (double)v / 4}, CF_DOUBLE);
    else
      ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.i = v}, CF_INT64);
  }
  return t;
}

/* Define and run on `opts` (the inputs, in host memory, copied to the device and the
 * outputs back for CUDA) equals the evaluator; returns the schedulers of the segments,
 * space-separated (caller frees). */
static char *run_defined(int nin, DLManagedTensor **in, const cf_executor_options *opts) {
  tu_assert_io_fits(f, nin);
  bool on_cuda = opts->backend == CF_BACKEND_CUDA;
  int nout = cf_fusion_num_outputs(f);
  const DLTensor *ins[TU_MAX_IO];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  DLManagedTensor *want[TU_MAX_IO] = {0}, *got[TU_MAX_IO] = {0}, *dev[TU_MAX_IO] = {0}, *back[TU_MAX_IO] = {0};
  DLTensor views[TU_MAX_IO];
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  if (on_cuda) kc_inputs_to_device(f, nin, in, dev, views, ins);
  cf_fusion_cache *c = cf_fusion_cache_create(f, opts);
  cr_assert_eq(cf_fusion_execute(c, nin, ins, nout, got), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  if (on_cuda) kc_outputs_to_host(f, nout, got, back);
  /* exactly on the host; on CUDA within 1e-12 (its libm's exp is not glibc's: the lookups
   * are exact either way, the math after them may differ in the last bit) */
  for (int i = 0; i < nout; i++) {
    char msg[512] = "";
    bool ok = on_cuda ? cf_tensor_allclose(&back[i]->dl_tensor, &want[i]->dl_tensor, 1e-12, 1e-12, msg, sizeof msg)
                      : cf_tensor_equal(&got[i]->dl_tensor, &want[i]->dl_tensor);
    cr_expect(ok, "%s: output %d differs from the evaluator %s", on_cuda ? "cuda" : "host", i, msg);
  }
  StrBuf b = {0};
  for (int s = 0; s < cf_fusion_cache_last_segments(c); s++)
    sb_printf(&b, "%s%s", s ? " " : "", cf_fusion_cache_last_scheduler(c, s));
  for (int i = 0; i < TU_MAX_IO; i++)
    cf_tensor_free(got[i]), cf_tensor_free(want[i]), cf_tensor_free(dev[i]), cf_tensor_free(back[i]);
  cf_fusion_cache_destroy(c);
  return sb_take(&b);
}

/* On CUDA when present, then on the host backend; the inputs are freed. */
static char *run_everywhere(int nin, DLManagedTensor **in) {
  if (cf_cuda_available(NULL)) free(run_defined(nin, in, &cuda));
  char *s = run_defined(nin, in, &host);
  for (int i = 0; i < nin; i++) cf_tensor_free(in[i]);
  return s;
}

/* relu(gather(x, dim, index + 1 - 1) * 2): the index computed, the result consumed, one
 * pointwise kernel; int32 and int64 indices, both axes, odd shapes. */
Test(index_kernels, gather_and_take_along_axis_fuse_with_pointwise_ops) {
  for (int dim = 0; dim < 2; dim++)
    for (int k = 0; k < 2; k++) {
      cf_fusion_destroy(f);
      f = cf_fusion_create();
      cf_dtype it = k ? CF_INT64 : CF_INT32;
      cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){13, 9}), *i = tu_input(f, it, 2, (int64_t[]){7, 5});
      cf_tv *j = tu_input(f, it, 2, dim ? (int64_t[]){13, 11} : (int64_t[]){17, 9});
      cf_tv *one = cf_const_int(f, it, 1);
      cf_tv *g = cf_gather(f, x, dim, cf_sub(f, cf_add(f, i, one), one));
      cf_fusion_add_output(f, cf_relu(f, cf_mul_scalar(f, g, 2.0)));
      cf_fusion_add_output(f, cf_neg(f, cf_take_along_axis(f, x, j, dim)));
      int64_t n = dim ? 9 : 13;
      DLManagedTensor *in[3] = {filled(CF_FLOAT, 2, (int64_t[]){13, 9}, -40, 40), filled(it, 2, (int64_t[]){7, 5}, -n, n),
                                filled(it, 2, dim ? (int64_t[]){13, 11} : (int64_t[]){17, 9}, -n, n)};
      char *s = run_everywhere(3, in);
      cr_expect_str_eq(s, "pointwise pointwise", "dim %d", dim); /* the outputs' shapes differ */
      free(s);
    }
}

/* nvFuser's test_index_select: the lookup operand computed (t0 + t1) is its own segment;
 * the index's broadcast and the lookup are one kernel. Symbolic sizes. */
Test(index_kernels, index_select_of_a_computed_tensor_is_cut_before_the_lookup) {
  for (int dim = 0; dim < 2; dim++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL), *b = tu_input(f, CF_FLOAT, 2, NULL), *i = tu_input(f, CF_INT64, 1, NULL);
    cf_fusion_add_output(f, cf_index_select(f, cf_add(f, a, b), dim, i));
    DLManagedTensor *in[3] = {filled(CF_FLOAT, 2, (int64_t[]){8, 17}, -9, 9), filled(CF_FLOAT, 2, (int64_t[]){8, 17}, -9, 9),
                              filled(CF_INT64, 1, (int64_t[]){6}, -8, 8)};
    char *s = run_everywhere(3, in);
    cr_expect_str_eq(s, "pointwise pointwise");
    free(s);
  }
}

/* Two index_selects of one weight by one index, both outputs (issue 28): the reference's
 * axes reach the second lookup only apart (the looked-up axis through the index, the
 * others through the weight), so the propagation from the first output gave it part of
 * the tile (or none) and its index broadcast another, and lowering refused the loops they
 * share as an internal error; the second output now roots the propagation itself. Both
 * axes, int32 and int64 indices, constant and symbolic sizes; one pointwise kernel. */
Test(index_kernels, two_index_selects_of_one_weight_by_one_index) {
  for (int c = 0; c < 8; c++) {
    int dim = c & 1;
    cf_dtype it = c & 2 ? CF_INT64 : CF_INT32;
    bool symbolic = c & 4;
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    const int64_t ws[2] = {5, 7}, is[1] = {dim ? 9 : 3};
    cf_tv *i = tu_input(f, it, 1, symbolic ? NULL : is), *w = tu_input(f, CF_FLOAT, 2, symbolic ? NULL : ws);
    cf_fusion_add_output(f, cf_index_select(f, w, dim, i));
    cf_fusion_add_output(f, cf_index_select(f, w, dim, i));
    DLManagedTensor *in[2] = {filled(it, 1, is, -ws[dim], ws[dim]), filled(CF_FLOAT, 2, ws, -40, 40)};
    char *s = run_everywhere(2, in);
    cr_expect_str_eq(s, "pointwise", "dim %d, %s, %s sizes", dim, cf_dtype_name(it), symbolic ? "symbolic" : "constant");
    free(s);
  }
}

/* More lookups sharing a weight and an index, one pointwise kernel each: a 3-D weight's axis
 * 1 (two of the reference's axes reach the second lookup through the weight, one through
 * the index), a square weight's axes 0 and 1 by one index (the second result's axes are
 * the first's swapped: its innermost axis had the vector width's extent without the vector
 * split), one broadcast index read by two take_along_axis, 300 rows of 64 (vectorized,
 * three blocks), and 300 rows of 64 plus a bias (a third path: the bias broadcast carried
 * the second result's other axis, its index the looked-up one). */
Test(index_kernels, lookups_sharing_a_weight_and_an_index) {
  for (int c = 0; c < 5; c++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    const int64_t shapes[5][3] = {{4, 5, 6}, {4, 4}, {5, 7}, {50, 64}, {50, 64}}, is[5][1] = {{3}, {4}, {3}, {300}, {300}};
    int rank = c ? 2 : 3, dim = c == 0, nin = 2 + (c == 4);
    cf_dtype it = c & 1 ? CF_INT32 : CF_INT64;
    cf_tv *i = tu_input(f, it, 1, is[c]), *w = tu_input(f, CF_FLOAT, rank, shapes[c]);
    if (c == 4) {
      cf_tv *b = cf_broadcast(f, tu_input(f, CF_FLOAT, 1, (int64_t[]){64}), 2, (bool[]){true, false});
      cf_fusion_add_output(f, cf_add(f, cf_index_select(f, w, 0, i), b));
      cf_fusion_add_output(f, cf_mul(f, cf_index_select(f, w, 0, i), b));
    } else if (c == 2) {
      cf_tv *b = cf_broadcast(f, i, 2, (bool[]){false, true});
      cf_fusion_add_output(f, cf_take_along_axis(f, w, b, 0));
      cf_fusion_add_output(f, cf_neg(f, cf_take_along_axis(f, w, b, 0)));
    } else {
      cf_fusion_add_output(f, cf_index_select(f, w, dim, i));
      cf_fusion_add_output(f, cf_neg(f, cf_index_select(f, w, c == 1 ? 1 : dim, i)));
    }
    int64_t n = shapes[c][dim];
    DLManagedTensor *in[3] = {filled(it, 1, is[c], -n, n), filled(CF_FLOAT, rank, shapes[c], -40, 40),
                              filled(CF_FLOAT, 1, (int64_t[]){64}, -40, 40)};
    if (nin == 2) cf_tensor_free(in[2]);
    char *s = run_everywhere(nin, in);
    cr_expect_str_eq(s, "pointwise", "case %d", c);
    free(s);
  }
}

/* Two max_norm embeddings of one weight by one index (norm_type 2 and 1), both outputs, and
 * a third lookup of another index: each equals the evaluator (issue 28: the same refusal as
 * two index_selects). */
Test(index_kernels, two_max_norm_embeddings_of_one_weight_by_one_index) {
  for (int k = 0; k < 2; k++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_dtype it = k ? CF_INT64 : CF_INT32;
    const int64_t ws[2] = {6, 5}, is[1] = {7}, js[1] = {4};
    cf_tv *i = tu_input(f, it, 1, is), *w = tu_input(f, CF_FLOAT, 2, ws), *j = tu_input(f, it, 1, js);
    cf_tv *mn = cf_const(f, CF_DOUBLE, 1.5), *p1 = cf_const(f, CF_DOUBLE, 1.0);
    cf_fusion_add_output(f, cf_embedding_fwd(f, i, w, NULL, mn, NULL, NULL, NULL));
    cf_fusion_add_output(f, cf_embedding_fwd(f, i, w, NULL, mn, p1, NULL, NULL));
    cf_fusion_add_output(f, cf_embedding_fwd(f, j, w, NULL, mn, NULL, NULL, NULL));
    DLManagedTensor *in[3] = {filled(it, 1, is, -6, 6), filled(CF_FLOAT, 2, ws, -4, 4), filled(it, 1, js, -6, 6)};
    free(run_everywhere(3, in));
  }
}

Test(index_kernels, select_with_a_scalar_input_index) {
  cf_tv *x = tu_input(f, CF_DOUBLE, 3, (int64_t[]){3, 5, 7}), *s = cf_scalar_input(f, CF_INT64);
  cf_fusion_add_input(f, s);
  cf_fusion_add_output(f, cf_exp(f, cf_select(f, x, 1, s)));
  DLManagedTensor *v = cf_tensor_host(CF_INT64, 0, NULL);
  *(int64_t *)v->dl_tensor.data = -2;
  DLManagedTensor *in[2] = {filled(CF_DOUBLE, 3, (int64_t[]){3, 5, 7}, -9, 9), v};
  char *r = run_everywhere(2, in);
  cr_expect_str_eq(r, "pointwise");
  free(r);
}

/* nvFuser's test_scatter_output_intermediate: sigmoid(scatter(x, 0, index, src)), unique
 * indices (a permutation's first rows) and then a duplicate; int32 and int64. */
Test(index_kernels, scatter_then_a_consumer) {
  for (int k = 0; k < 2; k++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_dtype it = k ? CF_INT64 : CF_INT32;
    cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){11, 6}), *i = tu_input(f, it, 2, (int64_t[]){4, 5});
    cf_tv *s = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 6});
    cf_fusion_add_output(f, cf_abs(f, cf_neg(f, cf_scatter(f, cf_mul_scalar(f, x, 3.0), 0, i, s))));
    DLManagedTensor *idx = cf_tensor_host(it, 2, (int64_t[]){4, 5});
    for (int64_t e = 0; e < 20; e++) { /* column c: rows (c + 3r) % 11, unique; (0, 0) and (1, 0) both row 0 */
      int64_t r = e / 5, c = e % 5, v = e == 5 ? 0 : (c + 3 * r) % 11 - (e % 3 == 0 ? 11 : 0);
      ir_elem_store(ir_dl_elem_ptr(&idx->dl_tensor, e), it, (IrElem){.i = v}, CF_INT64);
    }
    DLManagedTensor *in[3] = {filled(CF_FLOAT, 2, (int64_t[]){11, 6}, -9, 9), idx,
                              filled(CF_FLOAT, 2, (int64_t[]){5, 6}, -9, 9)};
    char *r = run_everywhere(3, in);
    cr_expect_str_eq(r, "pointwise");
    free(r);
  }
}

Test(index_kernels, cumsum_of_every_dtype_class_on_odd_shapes) {
  cf_tv *x = tu_input(f, CF_FLOAT, 3, (int64_t[]){3, 37, 5}), *i = tu_input(f, CF_INT32, 2, (int64_t[]){9, 1});
  cf_tv *h = tu_input(f, CF_BFLOAT16, 1, (int64_t[]){300});
  cf_fusion_add_output(f, cf_cumsum(f, x, 1));
  cf_fusion_add_output(f, cf_mul_scalar(f, cf_cumsum(f, x, -1), 0.5));
  cf_fusion_add_output(f, cf_cumsum(f, i, 0));
  cf_fusion_add_output(f, cf_cumsum(f, h, 0));
  DLManagedTensor *in[3] = {filled(CF_FLOAT, 3, (int64_t[]){3, 37, 5}, -99, 99),
                            filled(CF_INT32, 2, (int64_t[]){9, 1}, INT32_MAX - 10, INT32_MAX),
                            filled(CF_BFLOAT16, 1, (int64_t[]){300}, -9, 99)};
  char *r = run_everywhere(3, in);
  free(r);
}

/* A hand schedule inlining a computed lookup operand into the kernel is refused. */
Test(index_kernels, a_computed_lookup_operand_in_the_same_kernel_is_refused) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 6}), *i = tu_input(f, CF_INT64, 2, (int64_t[]){4, 2});
  cf_fusion_add_output(f, cf_gather(f, cf_neg(f, x), 1, i));
  cf_executor *e = cf_executor_create(&host);
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_executor_error(e), "compile: T3 = gather(T2...) reads T2 at computed positions; it must be a "
                                         "fusion input or a segment input (define and run cuts the fusion before it), "
                                         "not computed in the same kernel");
  cf_executor_destroy(e);
}

/* Out of range: the evaluator refuses (tests/ir/test_index_ops.c); a kernel clamps into
 * the axis (index 7 of extent 3 reads element 2, -9 reads 0), never outside. */
Test(index_kernels, out_of_range_indices_are_clamped_by_kernels) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3}), *i = tu_input(f, CF_INT64, 2, (int64_t[]){2, 2});
  cf_fusion_add_output(f, cf_gather(f, x, 1, i));
  DLManagedTensor *xs = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 3}), *is = cf_tensor_host(CF_INT64, 2, (int64_t[]){2, 2});
  for (int k = 0; k < 6; k++) ((float *)xs->dl_tensor.data)[k] = (float)(k + 1);
  memcpy(is->dl_tensor.data, (int64_t[]){7, -9, 1, -1}, 4 * sizeof(int64_t));
  const DLTensor *ins[2] = {&xs->dl_tensor, &is->dl_tensor};
  DLManagedTensor *out = NULL;
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, 2, ins, 1, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  const float *o = out->dl_tensor.data;
  cr_expect(o[0] == 3 && o[1] == 1 && o[2] == 5 && o[3] == 6, "%g %g %g %g", o[0], o[1], o[2], o[3]);
  cf_tensor_free(out), cf_tensor_free(xs), cf_tensor_free(is);
  cf_fusion_cache_destroy(c);
}

/* gather's index larger than the lookup off its axis: symbolic, so checked when run. */
Test(index_kernels, symbolic_extents_are_checked_at_run_time) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL), *i = tu_input(f, CF_INT64, 2, NULL);
  cf_fusion_add_output(f, cf_gather(f, x, 1, i));
  DLManagedTensor *xs = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 3}), *is = cf_tensor_host(CF_INT64, 2, (int64_t[]){3, 1});
  memset(xs->dl_tensor.data, 0, 6 * sizeof(float));
  memset(is->dl_tensor.data, 0, 3 * sizeof(int64_t));
  const DLTensor *ins[2] = {&xs->dl_tensor, &is->dl_tensor};
  DLManagedTensor *out = NULL;
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_expect_neq(cf_fusion_execute(c, 2, ins, 1, &out), CF_OK);
  cr_expect_str_eq(cf_fusion_cache_error(c), "run: gather: axis 0 of T1 is larger than T0's; it must be at most as "
                                             "large");
  cf_tensor_free(xs), cf_tensor_free(is);
  cf_fusion_cache_destroy(c);
}

/* The four ops inlined by hand into one kernel (their operands read elsewhere are inputs):
 * the host backend equals the evaluator, and the CUDA source compiles with NVRTC for
 * sm_90a (the clamp, the loops and the loads in the CUDA dialect). */
Test(index_kernels, hand_inlined_kernel_compiles_for_sm90_and_runs_on_the_host) {
  cf_tv *x = tu_input(f, CF_HALF, 2, (int64_t[]){6, 5}), *i = tu_input(f, CF_INT32, 2, (int64_t[]){6, 3});
  cf_tv *s = tu_input(f, CF_HALF, 2, (int64_t[]){6, 4}), *k = tu_input(f, CF_INT64, 2, (int64_t[]){6, 2});
  cf_fusion_add_output(f, cf_gather(f, x, 1, i));
  cf_fusion_add_output(f, cf_cumsum(f, x, 1));
  cf_fusion_add_output(f, cf_scatter(f, x, 1, k, s));
  cf_fusion_add_output(f, cf_take_along_axis(f, x, cf_neg(f, k), 1));
  DLManagedTensor *in[4] = {filled(CF_HALF, 2, (int64_t[]){6, 5}, -9, 9), filled(CF_INT32, 2, (int64_t[]){6, 3}, -5, 5),
                            filled(CF_HALF, 2, (int64_t[]){6, 4}, -9, 9), NULL};
  DLManagedTensor *kk = cf_tensor_host(CF_INT64, 2, (int64_t[]){6, 2});
  for (int r = 0; r < 6; r++) ((int64_t *)kk->dl_tensor.data)[2 * r] = r % 5, ((int64_t *)kk->dl_tensor.data)[2 * r + 1] = -1 - r % 4;
  in[3] = kk;
  const DLTensor *ins[4] = {&in[0]->dl_tensor, &in[1]->dl_tensor, &in[2]->dl_tensor, &in[3]->dl_tensor};
  DLManagedTensor *want[4] = {0}, *got[4] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, 4, ins, want), CF_OK, "%s", cf_fusion_error(f));
  cf_inline_most(f);
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "cf_index_clamp(") && strstr(src, "cf_acc"), "%s", src);
  free(src);
  cf_executor *e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 4, ins, 4, got), CF_OK, "%s", cf_executor_error(e));
  for (int o = 0; o < 4; o++) {
    cr_expect(cf_tensor_equal(&got[o]->dl_tensor, &want[o]->dl_tensor), "output %d differs from the evaluator", o);
    cf_tensor_free(got[o]), cf_tensor_free(want[o]);
  }
  for (int j = 0; j < 4; j++) cf_tensor_free(in[j]);
  cf_executor_destroy(e);
}
