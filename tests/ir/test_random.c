/* Tests of the random numbers (ir/philox.h, cf_uniform, cf_normal) on the evaluator:
 * Philox4x32-10's known answers (Random123's test vectors), reproducibility per seed and
 * offset, the interval of uniform draws, and the moments of large draws. The kernels'
 * agreement is in tests/kernels/test_semantics_kernels.c. */
#include "ops_test_util.h"

#include "ir/philox.h"

static void expect_words(CfPhilox c, unsigned a, unsigned b, unsigned d, unsigned e) {
  cr_expect(c.w[0] == a && c.w[1] == b && c.w[2] == d && c.w[3] == e, "%08x %08x %08x %08x", c.w[0], c.w[1], c.w[2],
            c.w[3]);
}

Test(random, philox_known_answers) {
  expect_words(cf_philox(0, 0, 0), 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
  expect_words(cf_philox(~0ull, ~0ull, ~0ull), 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
  expect_words(cf_philox(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull), 0xd16cfe09u,
               0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

/* A fusion drawing uniform [2, 5) and normal (1, 3) of `n` elements from a seed given per
 * call and the constant offset 7; returns the outputs for `seed`. */
static void draw(int64_t n, int64_t seed, DLManagedTensor **out) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *s = cf_scalar_input(f, CF_INT64);
  cf_tv *u = cf_uniform(f, 1, &n, 2, 5, s, cf_const_int(f, CF_INT64, 7), CF_FLOAT);
  cf_tv *z = cf_normal(f, 1, &n, 1, 3, s, cf_const_int(f, CF_INT64, 7), CF_DOUBLE);
  cr_assert(u && z, "%s", cf_fusion_error(f));
  cf_fusion_add_output(f, u);
  cf_fusion_add_output(f, z);
  DLManagedTensor *in = cf_tensor_host(CF_INT64, 0, NULL);
  *(int64_t *)in->dl_tensor.data = seed;
  cr_assert_eq(ot_eval(f, 1, &in, out), CF_OK, "%s", cf_fusion_error(f));
  cf_tensor_free(in);
  cf_fusion_destroy(f);
}

Test(random, draws_depend_on_the_seed_alone_and_have_their_moments) {
  enum { N = 100000 };
  DLManagedTensor *a[2], *b[2], *c[2];
  draw(N, 42, a);
  draw(N, 42, b);
  draw(N, 43, c);
  cr_expect(cf_tensor_equal(&a[0]->dl_tensor, &b[0]->dl_tensor) && cf_tensor_equal(&a[1]->dl_tensor, &b[1]->dl_tensor));
  cr_expect(!cf_tensor_equal(&a[0]->dl_tensor, &c[0]->dl_tensor) && !cf_tensor_equal(&a[1]->dl_tensor, &c[1]->dl_tensor));
  double s = 0, s2 = 0, lo = 1e9, hi = -1e9, m = 0, m2 = 0;
  for (int i = 0; i < N; i++) {
    double u = cf_tensor_get(&a[0]->dl_tensor, i), z = cf_tensor_get(&a[1]->dl_tensor, i);
    s += u, s2 += u * u, m += z, m2 += z * z;
    lo = u < lo ? u : lo, hi = u > hi ? u : hi;
  }
  double mean = s / N, var = s2 / N - mean * mean, zm = m / N, zv = m2 / N - zm * zm;
  cr_expect(lo >= 2 && hi < 5, "uniform in [%g, %g]", lo, hi);
  cr_expect(fabs(mean - 3.5) < 0.02 && fabs(var - 0.75) < 0.01, "uniform mean %g var %g", mean, var);
  cr_expect(fabs(zm - 1) < 0.04 && fabs(zv - 9) < 0.15, "normal mean %g var %g", zm, zv);
  ot_free_all(2, a), ot_free_all(2, b), ot_free_all(2, c);
}

Test(random, seeds_must_be_0_d_integers_and_intervals_finite) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *fs = cf_scalar_input(f, CF_FLOAT), *off = cf_const_int(f, CF_INT64, 0);
  cr_expect_null(cf_uniform(f, 1, (int64_t[]){4}, 0, 1, fs, off, CF_FLOAT));
  cr_expect_str_eq(cf_fusion_error(f), "uniform: the seed T0 must be a 0-d integer tensor (cf_scalar_input or "
                                       "cf_const_int) for T0_g_float[]");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_uniform(f, 1, (int64_t[]){4}, 1, 1, off, off, CF_FLOAT));
  cr_expect_str_eq(cf_fusion_error(f), "uniform: [1, 1) is not a finite interval");
  cf_fusion_clear_error(f);
  cr_expect_null(cf_normal(f, 1, (int64_t[]){4}, 0, 1, off, off, CF_INT32));
  cr_expect_str_eq(cf_fusion_error(f), "normal: dtype int is not a floating-point dtype");
  cf_fusion_destroy(f);
}
