/* tests/ir/ops_test_util.h: helpers of the op, evaluator, tensor and verifier tests:
 * printing ops to strings, host tensors from literal values, running the evaluator and
 * checking its outputs element by element. Header-only (static functions). */
#ifndef CFUSER_OPS_TEST_UTIL_H
#define CFUSER_OPS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ir/dtype.h"
#include "test_util.h"

/* The printed math of f (malloc'd). */
static inline char *ot_math(cf_fusion *f) { return tu_capture_fusion(cf_fusion_print_math, f); }

/* Expects the math line printed for the Expr defining tv to be exactly `want`. */
static inline void ot_expect_def(cf_tv *tv, const char *want) {
  cr_assert_not_null(tv);
  cr_assert_not_null(ir_tv(tv)->def);
  StrBuf b = {0};
  ir_print_expr(&b, ir_tv(tv)->def);
  cr_expect_str_eq(b.data, want);
  sb_free(&b);
}

static inline void ot_expect_tv(cf_fusion *f, cf_tv *tv, const char *want) {
  char *s = tu_tv_str(f, tv);
  cr_expect_str_eq(s, want);
  free(s);
}

/* A contiguous host tensor holding vals (converted to dt as C converts a double). */
static inline DLManagedTensor *ot_tensor(cf_dtype dt, int rank, const int64_t *sizes, const double *vals) {
  DLManagedTensor *m = cf_tensor_host(dt, rank, sizes);
  cr_assert_not_null(m);
  int64_t n = cf_tensor_numel(&m->dl_tensor);
  for (int64_t i = 0; i < n; i++)
    ir_dl_store(&m->dl_tensor, i, dt, (IrElem){.d = vals[i]}, CF_DOUBLE);
  return m;
}

static inline DLManagedTensor *ot_tensor_i(cf_dtype dt, int rank, const int64_t *sizes, const int64_t *vals) {
  DLManagedTensor *m = cf_tensor_host(dt, rank, sizes);
  cr_assert_not_null(m);
  int64_t n = cf_tensor_numel(&m->dl_tensor);
  for (int64_t i = 0; i < n; i++) ir_dl_store(&m->dl_tensor, i, dt, (IrElem){.i = vals[i]}, CF_INT64);
  return m;
}

/* Evaluates f on n inputs; frees nothing. */
static inline cf_status ot_eval(cf_fusion *f, int n, DLManagedTensor *const *ins, DLManagedTensor **outs) {
  tu_assert_io_fits(f, n);
  const DLTensor *dl[TU_MAX_IO];
  for (int i = 0; i < n; i++) dl[i] = ins[i] ? &ins[i]->dl_tensor : NULL;
  return cf_fusion_evaluate(f, n, dl, outs);
}

/* Expects t to have dtype dt, the given shape and exactly the given values. */
static inline void ot_expect_values(const DLManagedTensor *m, cf_dtype dt, int rank, const int64_t *sizes,
                                    const double *want) {
  cr_assert_not_null(m);
  const DLTensor *t = &m->dl_tensor;
  cf_dtype have;
  cr_assert(ir_dtype_from_dl(t->dtype, &have) && have == dt, "dtype %d, expected %s", t->dtype.code, cf_dtype_name(dt));
  cr_assert_eq(t->ndim, rank);
  for (int d = 0; d < rank; d++) cr_assert_eq(t->shape[d], sizes[d], "dimension %d", d);
  int64_t n = cf_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = cf_tensor_get(t, i);
    cr_expect(v == want[i] || (isnan(v) && isnan(want[i])), "element %lld is %.17g, expected %.17g", (long long)i, v,
              want[i]);
  }
}

static inline void ot_free_all(int n, DLManagedTensor **ts) {
  for (int i = 0; i < n; i++) cf_tensor_free(ts[i]);
}

#endif
