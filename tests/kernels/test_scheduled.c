/* Scheduled fusions compiled with NVRTC for sm_90a and run on the host backend (and on
 * the GPU when there is one), each checked against the reference evaluator; plus facts
 * about the generated code of some of them. */
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static char *run_case(int i) {
  cf_fusion *f = cf_fusion_create();
  KcInput in[8];
  int nin = 0;
  kc_cases[i].build(f, in, &nin);
  char *src = kc_check(f, nin, in, kc_cases[i].tol);
  cf_fusion_destroy(f);
  return src;
}

#define CASE(idx, nm)                  \
  Test(scheduled, nm) {                \
    cr_assert_str_eq(kc_cases[idx].name, #nm); \
    free(run_case(idx));               \
  }

CASE(0, pointwise_broadcast)
CASE(1, non_divisible_split)
CASE(2, outer_split)
CASE(3, merges)
CASE(4, reorder)
CASE(5, swizzle)
CASE(6, smem_staging)
CASE(8, symbolic)
CASE(9, strided)
CASE(11, serial_sum)
CASE(12, rounding_and_special_functions)

Test(scheduled, gsg_copy_all_six_strategies) {
  for (int i = 12; i < KC_NCASES; i++) free(run_case(i));
}

Test(scheduled, vectorize_unroll_uses_vector_accesses) {
  char *src = run_case(7);
  cr_expect(strstr(src, "Array<float, 4>") != NULL, "no vector access in:\n%s", src);
  cr_expect(strstr(src, "#pragma unroll") != NULL, "no unrolled loop in:\n%s", src);
  free(src);
}

Test(scheduled, transpose_through_shared_memory_syncs_once) {
  char *src = run_case(10);
  const char *first = strstr(src, "__syncthreads();");
  cr_expect(first != NULL, "no sync in:\n%s", src);
  cr_expect(first && strstr(first + 1, "__syncthreads();") == NULL, "more than one sync in:\n%s", src);
  free(src);
}

Test(scheduled, divisible_pointwise_needs_no_predicate) {
  char *src = run_case(0);
  const char *body = strstr(src, "cfuser_kernel(");
  cr_expect(body && strstr(body, "if (") == NULL, "unexpected predicate in:\n%s", body);
  free(src);
}

Test(scheduled, non_divisible_split_is_predicated) {
  char *src = run_case(1);
  cr_expect(strstr(src, "< 10)") != NULL, "no bound check in:\n%s", src);
  free(src);
}
