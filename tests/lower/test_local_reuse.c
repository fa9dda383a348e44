/* Issue 28: local arrays whose lifetimes do not overlap share one buffer (lowering's
 * local_reuse pass). A chain that nothing inlines gave NVRTC one array of 1024 floats per
 * op (3000 ops: 12 MB of local memory per thread, minutes of compiling); now two arrays
 * alternate. Kernels are compared with the reference evaluator on the host backend. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_check.h"

KC_FUSION_SUITE(local_reuse);

/* in -> neg -> relu -> ... (n ops) -> out of [1024] floats, the output split by 128 and
 * nothing inlined: every intermediate is a whole local array. */
static void chain(int n) {
  cf_tv *t = kc_input(f, in, &nin, CF_FLOAT, 1, (int64_t[]){1024});
  for (int i = 0; i < n; i++) t = i % 2 ? cf_relu(f, t) : cf_neg(f, t);
  cf_fusion_add_output(f, t);
  cf_split(f, t, 0, 128);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p++) n++;
  return n;
}

Test(local_reuse, a_chain_of_3000_ops_uses_two_arrays) {
  chain(3000);
  char *src = tu_cuda_kernel_text(f);
  cr_expect_eq(count(src, "[1024];"), 2, "local arrays declared: %d", count(src, "[1024];"));
  cr_expect(strstr(src, "alignas(16) float T1[1024];\n  alignas(16) float T2[1024];\n") != NULL);
  free(src);
}

Test(local_reuse, a_short_chain_runs_like_the_evaluator) {
  chain(40);
  free(kc_check(f, nin, in, 1e-6));
}

/* A softmax nobody schedules: its row sums and exponentials live in whole local arrays;
 * those read after a loop keep their buffer across it. */
Test(local_reuse, an_unscheduled_softmax_runs_like_the_evaluator) {
  cf_tv *x = kc_input(f, in, &nin, CF_FLOAT, 2, (int64_t[]){8, 96});
  cf_tv *m = cf_broadcast(f, cf_max_reduce(f, x, 1, (int[]){1}), 2, (bool[]){false, true});
  cf_tv *e = cf_exp(f, cf_sub(f, x, m));
  cf_tv *s = cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, (bool[]){false, true});
  cf_fusion_add_output(f, cf_div(f, e, s));
  cf_fusion_add_output(f, cf_neg(f, e));
  free(kc_check(f, nin, in, 1e-5));
}
