/* The scans (cumsum, cumprod, cummax, cummin) and embedding_fwd in kernels (issue 26): each
 * scan of every dtype class on odd shapes, along both axes, with NaN, infinities and -0.0
 * among the floats and the integers' extremes (wrapping int64 products), inside fusions
 * with pointwise consumers: define and run on the host backend, the same fusion inlined by
 * hand into one kernel on the host, and CUDA when present, all exactly equal to the
 * reference evaluator; the inlined kernel's CUDA source compiles with NVRTC for sm_90a.
 * cumsum and cumprod of complex64 and complex128 (special parts, float overflow) the same way,
 * and on a hand schedule of blocks and threads.
 * embedding_fwd through define and run: the lookup bit-exact, the renorm (a reduction per
 * row) within float's rounding, constant and symbolic index shapes, the segments pinned. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

#include "ir/dtype.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(scan_kernels, .init = setup, .fini = teardown);

static uint64_t rng = 4242;
static int64_t draw(int64_t lo, int64_t hi) { /* [lo, hi), any span of int64 (unsigned arithmetic) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t r = (rng >> 11) ^ (rng << 21);
  return (int64_t)((uint64_t)lo + r % ((uint64_t)hi - (uint64_t)lo));
}

/* Floats: quarters in [-2.25, 2.25), every 5th element from -0.0, NaN, inf, -inf, 0.5. */
static DLManagedTensor *floats(cf_dtype dt, int rank, const int64_t *sizes) {
  static const double special[] = {-0.0, NAN, INFINITY, -INFINITY, 0.5};
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) {
    double v = i % 5 == 3 ? special[(i / 5) % 5] : (double)draw(-9, 9) / 4;
    ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.d = v}, CF_DOUBLE);
  }
  return t;
}

/* Integers in [lo, hi), the dtype's extremes lo and hi - 1 among them. */
static DLManagedTensor *ints(cf_dtype dt, int rank, const int64_t *sizes, int64_t lo, int64_t hi) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) {
    int64_t v = i % 7 == 2 ? lo : i % 7 == 5 ? hi - 1 : draw(lo, hi);
    ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, (IrElem){.i = v}, CF_INT64);
  }
  return t;
}

/* The four scans of x along axes a (cumsum, cummin) and b (cumprod, cummax), each output
 * consumed by a pointwise op where `consume` (x2 of floats, +1 of integers). */
static void all_scans(cf_tv *x, int a, int b, bool consume) {
  cf_tv *s[4] = {cf_cumsum(f, x, a), cf_cumprod(f, x, b), cf_cummax(f, x, b), cf_cummin(f, x, a)};
  for (int k = 0; k < 4; k++) {
    bool fl = ir_dtype_is_float(cf_tv_dtype(s[k]));
    cf_tv *o = !consume ? s[k] : fl ? cf_mul_scalar(f, s[k], 2.0) : cf_add(f, s[k], cf_const_int(f, CF_INT64, 1));
    cf_fusion_add_output(f, o);
  }
}

Test(scan_kernels, every_scan_of_the_floating_dtypes_on_odd_shapes) {
  cf_tv *x = tu_input(f, CF_FLOAT, 3, (int64_t[]){3, 37, 5}), *d = tu_input(f, CF_DOUBLE, 2, (int64_t[]){7, 3});
  cf_tv *h = tu_input(f, CF_HALF, 2, (int64_t[]){9, 11}), *b = tu_input(f, CF_BFLOAT16, 1, (int64_t[]){300});
  cf_tv *e = tu_input(f, CF_FLOAT8_E4M3FN, 2, (int64_t[]){5, 3});
  all_scans(x, 1, -1, true);
  all_scans(d, 0, 1, false);
  all_scans(h, 1, 0, true);
  all_scans(b, 0, 0, false);
  all_scans(e, 1, 0, false);
  DLManagedTensor *in[5] = {floats(CF_FLOAT, 3, (int64_t[]){3, 37, 5}), floats(CF_DOUBLE, 2, (int64_t[]){7, 3}),
                            floats(CF_HALF, 2, (int64_t[]){9, 11}), floats(CF_BFLOAT16, 1, (int64_t[]){300}),
                            floats(CF_FLOAT8_E4M3FN, 2, (int64_t[]){5, 3})};
  char *src = kc_run_everywhere(f, 5, in, 0, 0);
  cr_expect(strstr(src, "cf_acc = cf_max(cf_acc,") && strstr(src, "cf_acc = (cf_acc * "), "%s", src);
  cr_expect(strstr(src, "cf_acc = -INFINITY;") && strstr(src, "cf_acc = INFINITY;"), "%s", src);
  free(src);
}

Test(scan_kernels, every_scan_of_the_integer_dtypes_and_bool_on_odd_shapes) {
  cf_tv *c = tu_input(f, CF_INT8, 2, (int64_t[]){5, 7}), *i = tu_input(f, CF_INT32, 2, (int64_t[]){9, 1});
  cf_tv *l = tu_input(f, CF_INT64, 2, (int64_t[]){4, 3}), *u = tu_input(f, CF_UINT32, 2, (int64_t[]){3, 5});
  cf_tv *b = tu_input(f, CF_BOOL, 2, (int64_t[]){6, 5});
  all_scans(c, 1, 0, true);
  all_scans(i, 0, 1, false);
  all_scans(l, 1, 0, true);
  all_scans(u, 0, 1, false);
  all_scans(b, 1, 0, false);
  DLManagedTensor *in[5] = {ints(CF_INT8, 2, (int64_t[]){5, 7}, -128, 128),
                            ints(CF_INT32, 2, (int64_t[]){9, 1}, INT32_MIN, INT32_MAX),
                            ints(CF_INT64, 2, (int64_t[]){4, 3}, INT64_MIN, INT64_MAX),
                            ints(CF_UINT32, 2, (int64_t[]){3, 5}, 0, 4294967295LL), ints(CF_BOOL, 2, (int64_t[]){6, 5}, 0, 2)};
  char *src = kc_run_everywhere(f, 5, in, 0, 0);
  /* max of int8 starts at int64's lowest in the int64 accumulator, min at its highest */
  cr_expect(strstr(src, "int64_t cf_acc = (-9223372036854775807LL - 1);") &&
            strstr(src, "int64_t cf_acc = 9223372036854775807LL;"), "%s", src);
  free(src);
}

/* ---- complex ---------------------------------------------------------------------------- */

/* Complex elements: parts quarters in [-2.25, 2.25), every 5th element's real or imaginary
 * part (alternately) from -0.0, NaN, inf, -inf, 1e30 (float's products overflow). */
static DLManagedTensor *complexes(cf_dtype dt, int rank, const int64_t *sizes) {
  static const double special[] = {-0.0, NAN, INFINITY, -INFINITY, 1e30};
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  for (int64_t i = 0; i < cf_tensor_numel(&t->dl_tensor); i++) {
    double re = (double)draw(-9, 9) / 4, im = (double)draw(-9, 9) / 4;
    if (i % 5 == 3) *((i / 5) % 2 ? &im : &re) = special[(i / 5) % 5];
    ir_elem_store(ir_dl_elem_ptr(&t->dl_tensor, i), dt, ir_complex(re, im), CF_COMPLEX_DOUBLE);
  }
  return t;
}

/* cumsum and cumprod of complex64 and complex128 along both axes, consumed by a product
 * with a real scalar or not: define and run and the inlined kernel equal the evaluator bit
 * for bit (complex64's products in float complex everywhere); the CUDA source compiles. */
Test(scan_kernels, cumsum_and_cumprod_of_complex_on_odd_shapes) {
  cf_tv *x = tu_input(f, CF_COMPLEX_FLOAT, 2, (int64_t[]){4, 9}), *d = tu_input(f, CF_COMPLEX_DOUBLE, 2, (int64_t[]){7, 3});
  cf_tv *s[8] = {cf_cumsum(f, x, 1), cf_cumprod(f, x, 1), cf_cumsum(f, x, 0), cf_cumprod(f, x, 0),
                 cf_cumsum(f, d, 0), cf_cumprod(f, d, 0), cf_cumsum(f, d, 1), cf_cumprod(f, d, 1)};
  for (int k = 0; k < 8; k++) cf_fusion_add_output(f, k % 3 ? s[k] : cf_mul_scalar(f, s[k], 2.0));
  DLManagedTensor *in[2] = {complexes(CF_COMPLEX_FLOAT, 2, (int64_t[]){4, 9}),
                            complexes(CF_COMPLEX_DOUBLE, 2, (int64_t[]){7, 3})};
  char *src = kc_run_everywhere(f, 2, in, 0, 0);
  cr_expect(strstr(src, "CfComplexF cf_acc = ") && strstr(src, "CfComplexD cf_acc = "), "%s", src);
  cr_expect(strstr(src, "cf_acc = (cf_acc * ") && strstr(src, "cf_acc = (cf_acc + "), "%s", src);
  free(src);
}

/* A scan's output scheduled by hand onto blocks and threads (merged, split by 32): every
 * thread folds its own prefix, so the threaded kernel equals the evaluator too. */
Test(scan_kernels, complex_scans_on_threads) {
  cf_tv *x = tu_input(f, CF_COMPLEX_FLOAT, 2, (int64_t[]){6, 37}), *d = tu_input(f, CF_COMPLEX_DOUBLE, 2, (int64_t[]){5, 11});
  cf_tv *o[2] = {cf_cumprod(f, x, 1), cf_cumsum(f, d, 0)};
  for (int k = 0; k < 2; k++) {
    cf_fusion_add_output(f, o[k]);
    cf_merge(f, o[k], 0);
    cf_split(f, o[k], 0, 32);
    cf_parallelize(f, o[k], 0, CF_PT_BIDX);
    cf_parallelize(f, o[k], 1, CF_PT_TIDX);
  }
  DLManagedTensor *in[2] = {complexes(CF_COMPLEX_FLOAT, 2, (int64_t[]){6, 37}),
                            complexes(CF_COMPLEX_DOUBLE, 2, (int64_t[]){5, 11})};
  const DLTensor *ins[2] = {&in[0]->dl_tensor, &in[1]->dl_tensor};
  DLManagedTensor *want[2] = {0};
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, want), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_compile_sm90(f);
  cr_expect(strstr(src, "threadIdx.x") && strstr(src, "cf_acc"), "%s", src);
  free(src);
  kc_run_backend(f, CF_BACKEND_HOST, 2, in, want, 0);
  if (cf_cuda_available(NULL)) kc_run_backend(f, CF_BACKEND_CUDA, 2, in, want, 0);
  for (int k = 0; k < 2; k++) cf_tensor_free(want[k]), cf_tensor_free(in[k]);
}

/* ---- embedding_fwd ---------------------------------------------------------------------- */

/* Define and run on the host against the evaluator (within tol); the segments' schedulers,
 * space-separated (caller frees). Frees the inputs. */
static char *run_defined(int nin, DLManagedTensor **in, double tol) {
  const cf_executor_options host = {.backend = CF_BACKEND_HOST};
  const DLTensor *ins[8];
  for (int i = 0; i < nin; i++) ins[i] = &in[i]->dl_tensor;
  DLManagedTensor *want = NULL, *got = NULL;
  cr_assert_eq(cf_fusion_evaluate(f, nin, ins, &want), CF_OK, "evaluator: %s", cf_fusion_error(f));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &host);
  cr_assert_eq(cf_fusion_execute(c, nin, ins, 1, &got), CF_OK, "define and run: %s", cf_fusion_cache_error(c));
  kc_compare(&got, &want, 1, tol, "define and run");
  StrBuf b = {0};
  for (int s = 0; s < cf_fusion_cache_last_segments(c); s++)
    sb_printf(&b, "%s%s", s ? " " : "", cf_fusion_cache_last_scheduler(c, s));
  cf_tensor_free(got), cf_tensor_free(want);
  cf_fusion_cache_destroy(c);
  for (int i = 0; i < nin; i++) cf_tensor_free(in[i]);
  return sb_take(&b);
}

static DLManagedTensor *scalar(cf_dtype dt, double v) {
  DLManagedTensor *t = cf_tensor_host(dt, 0, NULL);
  ir_elem_store(t->dl_tensor.data, dt, (IrElem){.d = v}, CF_DOUBLE);
  return t;
}

/* nvFuser's test_embedding's fusion: an int64 index, a [10, 6] weight, max_norm and
 * norm_type scalar inputs and the backward-only flags; the lookup is exact. */
Test(scan_kernels, embedding_fwd_with_scalar_inputs_in_define_and_run) {
  for (int with_norm = 0; with_norm < 2; with_norm++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *i = tu_input(f, CF_INT64, 1, NULL), *w = tu_input(f, CF_FLOAT, 2, NULL);
    cf_tv *pad = cf_scalar_input(f, CF_INT64), *mn = with_norm ? cf_scalar_input(f, CF_FLOAT) : NULL;
    cf_tv *p = with_norm ? cf_scalar_input(f, CF_FLOAT) : NULL, *flag = cf_scalar_input(f, CF_BOOL);
    cf_fusion_add_output(f, cf_embedding_fwd(f, i, w, pad, mn, p, flag, flag));
    cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
    DLManagedTensor *in[6] = {ints(CF_INT64, 1, (int64_t[]){13}, 0, 10), floats(CF_FLOAT, 2, (int64_t[]){10, 6}),
                              scalar(CF_INT64, -2)};
    int n = 3;
    if (with_norm) in[n++] = scalar(CF_FLOAT, 2.0), in[n++] = scalar(CF_FLOAT, 1.0); /* max_norm, the L1 norm */
    in[n++] = scalar(CF_BOOL, 1);
    /* the weight's NaN and infinities are replaced: a NaN row's norm is NaN (never scaled) */
    for (int64_t k = 0; k < 60; k++)
      if (!isfinite(cf_tensor_get(&in[1]->dl_tensor, k))) ((float *)in[1]->dl_tensor.data)[k] = (float)(k % 7) - 3;
    char *r = run_defined(n, in, with_norm ? 1e-6 : 0);
    cr_expect_str_eq(r, with_norm ? "pointwise pointwise inner_persistent inner_persistent pointwise" : "pointwise");
    free(r);
  }
}

/* A 2-D index of symbolic extents (flattened by a reshape, looked up, reshaped back at run
 * time) and of constant ones, a bfloat16 weight renormed against a constant max_norm. */
Test(scan_kernels, embedding_fwd_of_a_2d_index_in_define_and_run) {
  for (int sym = 0; sym < 2; sym++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *i = tu_input(f, CF_INT32, 2, sym ? NULL : (int64_t[]){3, 4});
    cf_tv *w = tu_input(f, CF_BFLOAT16, 2, sym ? NULL : (int64_t[]){11, 5});
    cf_fusion_add_output(f, cf_embedding_fwd(f, i, w, NULL, cf_const(f, CF_DOUBLE, 1.5), NULL, NULL, NULL));
    cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
    DLManagedTensor *in[2] = {ints(CF_INT32, 2, (int64_t[]){3, 4}, 0, 11), floats(CF_BFLOAT16, 2, (int64_t[]){11, 5})};
    for (int64_t k = 0; k < 55; k++)
      if (!isfinite(cf_tensor_get(&in[1]->dl_tensor, k)))
        ir_elem_store(ir_dl_elem_ptr(&in[1]->dl_tensor, k), CF_BFLOAT16, (IrElem){.d = 0.25 * (double)(k % 5)}, CF_DOUBLE);
    char *r = run_defined(2, in, 8e-3);
    cr_expect_str_eq(r, "view pointwise pointwise inner_persistent view pointwise");
    free(r);
  }
}
