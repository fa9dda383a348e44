/* Vector accesses with a tail (lower/vectorize.c, index.c, predicate.c; issue 22) on hand
 * schedules: a vector copy between global memory and registers along the split of a
 * tensor's flat whole needs no divisible split; where its last lane is out of bounds its
 * lanes run one by one, each under its own bound (the kernel printed exact). Results equal
 * the evaluator's on the host backend (NVRTC compiles for sm_90a). Where no tail is taken
 * (a split of odd rows alone, a fill of shared memory) the errors are test_lower_errors.c's. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(vector_tail, .init = setup, .fini = teardown);

/* c = set(x) in registers, o = neg(c) the output, o's axes merged and split by 4, c
 * vectorized along the inner axis, everything inlined: c's load is the vector access. */
static cf_tv *neg_of_copy(int rank, const int64_t *sizes) {
  cf_tv *x = sizes ? cf_tensor_concrete(f, CF_FLOAT, rank, sizes) : cf_tensor_symbolic(f, CF_FLOAT, rank);
  cf_fusion_add_input(f, x);
  cf_tv *c = cf_set(f, x), *o = cf_neg(f, c);
  cf_fusion_add_output(f, o);
  for (int a = rank - 1; a > 0; a--) cf_merge(f, o, 0);
  cf_split(f, o, 0, 4);
  cr_assert_eq(cf_propagate_transforms(f, o), CF_OK, "%s", cf_fusion_error(f));
  cf_parallelize(f, c, 1, CF_PT_VECTORIZE);
  cr_assert_eq(cf_inline_most(f), CF_OK, "%s", cf_fusion_error(f));
  return c;
}

/* 10 elements: vectors at 0 and 4 whole, the one at 8 holds 2. */
Test(vector_tail, ten_elements_in_vectors_of_four) {
  neg_of_copy(1, (int64_t[]){10});
  char *k = tu_capture_fusion(cf_fusion_print_kernel, f);
  cr_expect_str_eq(k, "extern \"C\" __global__ void __launch_bounds__(1) cfuser_kernel(Tensor<float, 1, 1> T0, Tensor<float, 1, 1> T2) {\n"
                      "  alignas(16) float T1[4];\n"
                      "  for (cf_index_t i0 = 0; i0 < 3; ++i0) {\n"
                      "    if ((i0 < 2)) {\n"
                      "      *reinterpret_cast<Array<float, 4>*>(&T1[0]) = *reinterpret_cast<const Array<float, 4>*>(&T0.data[(i0 * 4)]);\n"
                      "    } else {\n"
                      "      for (cf_index_t i2 = 0; i2 < 4; ++i2) {\n"
                      "        if ((((i0 * 4) + i2) < 10)) {\n"
                      "          T1[i2] = T0.data[((i0 * 4) + i2)];\n"
                      "        }\n"
                      "      }\n"
                      "    }\n"
                      "    for (cf_index_t i1 = 0; i1 < 4; ++i1) {\n"
                      "      if ((((i0 * 4) + i1) < 10)) {\n"
                      "        T2.data[((i0 * 4) + i1)] = (-T1[i1]);\n"
                      "      }\n"
                      "    }\n"
                      "  }\n"
                      "}\n");
  free(k);
  free(kc_check(f, 1, (KcInput[]){F32(10)}, 0));
}

/* [3, 7] merged: a vector straddles rows, adjacent in memory (the tensor's flat whole). */
Test(vector_tail, rows_of_seven_merged) {
  neg_of_copy(2, (int64_t[]){3, 7});
  free(kc_check(f, 1, (KcInput[]){F32(3, 7)}, 0));
}

/* Symbolic sizes: the element count is known at run time only, so the tail is always
 * there; every remainder runs like the evaluator. */
Test(vector_tail, symbolic_sizes) {
  neg_of_copy(2, NULL);
  const int64_t shapes[][2] = {{1, 1}, {1, 2}, {3, 1}, {2, 2}, {5, 1}, {3, 7}, {97, 89}};
  for (int i = 0; i < 7; i++) free(kc_check(f, 1, (KcInput[]){F32(shapes[i][0], shapes[i][1])}, 0));
}
