/* probe */
#include <criterion/criterion.h>
#include <string.h>

#define SC_HEURISTIC sched_inner_persistent_heuristic
#define SC_PRINT "NORM_PRINT"
#include "scheduler/sched_check.h"

TestSuite(norm_cf, .init = setup, .fini = teardown);

/* [C] -> [1, C, 1] */
static cf_tv *chan(cf_tv *t) { return cf_broadcast(f, t, 3, (bool[]){true, false, true}); }

/* training batch norm of x[N, C, HW], statistics over axes 0 and 2 */
static void batchnorm_cf(cf_dtype dt, int64_t n, int64_t c, int64_t hw, bool symbolic) {
  cf_tv *x = widen(input(dt, 3, (int64_t[]){n, c, hw}, symbolic));
  cf_tv *w = input(CF_FLOAT, 1, &c, symbolic), *b = input(CF_FLOAT, 1, &c, symbolic);
  cf_tv *var, *mean;
  cf_var_mean(f, x, 2, (int[]){0, 2}, 0, true, &var, &mean);
  cf_tv *rstd = cf_rsqrt(f, cf_add_scalar(f, var, EPS));
  output(cf_add(f, cf_mul(f, cf_mul(f, cf_sub(f, x, mean), rstd), chan(w)), chan(b)), dt);
}

Test(norm_cf, probe) {
  int64_t shapes[][3] = {{3, 5, 7}, {4, 3, 64}, {64, 3, 1}};
  for (int i = 0; i < 3; i++) {
    fresh();
    batchnorm_cf(CF_FLOAT, shapes[i][0], shapes[i][1], shapes[i][2], true);
    int64_t c = shapes[i][1];
    cf_fusion_cache *fc = execute_vs_eval(3, (KcInput[]){IN(CF_FLOAT, shapes[i][0], c, shapes[i][2]), IN(CF_FLOAT, c), IN(CF_FLOAT, c)}, 1e-4);
    int ns = cf_fusion_cache_last_segments(fc);
    for (int s = 0; s < ns; s++) printf("%d: %s %s\n", s, cf_fusion_cache_last_scheduler(fc, s), cf_fusion_cache_last_params(fc, s));
    cf_fusion_cache_destroy(fc);
  }
}
