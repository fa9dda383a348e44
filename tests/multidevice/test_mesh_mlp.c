/* tests/multidevice/test_mesh_mlp.c: a sequence-parallel layer norm + tensor-parallel MLP
 * (tests/multidevice/mesh_mlp.h: layer norm on local rows, allgather, linear + gelu on F/D
 * columns, linear on F/D rows, reduce-scatter, + b2) on host meshes of 2 and 4 devices:
 * every output shard equals the evaluator's result of the unsharded fusion, and the plan
 * is exactly one allgather before the first matmul, nothing between, and one
 * reduce-scatter (not an allreduce and a slice) after the second. float32, and bfloat16
 * inputs with float accumulation. */
#include "multidevice/mesh_mlp.h"
#include "multidevice/mesh_util.h"

MU_SUITE(mesh_mlp);

static void expect_plan(const char *want) {
  char *got = mu_plan(x);
  cr_expect_str_eq(got, want);
  free(got);
}

/* The plan of the float fusion: T21 is the layer norm's output (rows sharded), gathered
 * into T22, the set placed replicated (a resharding set is its communication: no kernel
 * copies it); every device multiplies T22 by its F/D rows of w1 and its F/D columns of
 * w2, T33 the second linear's partial sums over F/D, reduce-scattered onto the rows that
 * T33's placement shards; T35 = T33 + b2 on the local rows. */
static const char float_plan[] =
    "mesh plan: 5 steps, 2 communications\n"
    "  step 0: compute segment (3 in, 1 out): T21[ideviceIdx.x, iS] (DeviceMesh{%s})\n"
    "  step 1: allgather axis 0: T21[ideviceIdx.x, iS] -> T22[iS, iS]\n"
    "  step 2: compute segment (4 in, 1 out): T33[iS, iS, rS] partial (DeviceMesh{%s})\n"
    "  step 3: reduce_scatter(sum) axis 0: T33[iS, iS, rS] partial -> T33[ideviceIdx.x, iS, rS]\n"
    "  step 4: compute segment (2 in, 1 out): T35[ideviceIdx.x, iS] (DeviceMesh{%s})\n";

static void run_float(int d, const char *ids) {
  f = mlp_fusion(d, 8, 16, 32, CF_FLOAT);
  cr_assert_eq(mu_check_tol(f, d, 5, NULL, 1e-4, &x), CF_OK, "%s", cf_mesh_executor_error(x));
  char want[1024];
  snprintf(want, sizeof want, float_plan, ids, ids, ids);
  expect_plan(want);
}

Test(mesh_mlp, float_on_2_devices) {
  cf_fusion_destroy(f);
  run_float(2, "0 1");
}

Test(mesh_mlp, float_on_4_devices) {
  cf_fusion_destroy(f);
  run_float(4, "0 1 2 3");
}

/* bfloat16 inputs: the layer norm in float, rounded to bfloat16 (T25) before the gather
 * (half the bytes); the linears accumulate in float, so the partial sums (T43) are float
 * and the reduce-scatter sums them in float; the cast to bfloat16 (T44, the linear's
 * output, placed with its rows sharded) and + b2 (T46) run after it. The sum itself is
 * not placed: its partials go straight to the layout its one reader needs (a
 * reduce-scatter, not an allreduce and a slice). The evaluator rounds its double sums
 * once, the devices their F/D-term float sums: compared within bfloat16's precision. */
static const char bfloat16_plan[] =
    "mesh plan: 5 steps, 2 communications\n"
    "  step 0: compute segment (3 in, 1 out): T25[ideviceIdx.x, iS] (DeviceMesh{%s})\n"
    "  step 1: allgather axis 0: T25[ideviceIdx.x, iS] -> T26[iS, iS]\n"
    "  step 2: compute segment (4 in, 1 out): T43[iS, iS, rS] partial (DeviceMesh{%s})\n"
    "  step 3: reduce_scatter(sum) axis 0: T43[iS, iS, rS] partial -> T43[ideviceIdx.x, iS, rS]\n"
    "  step 4: compute segment (2 in, 1 out): T46[ideviceIdx.x, iS] (DeviceMesh{%s})\n";

Test(mesh_mlp, bfloat16_on_2_and_4_devices) {
  static const char *ids[5] = {[2] = "0 1", [4] = "0 1 2 3"};
  for (int d = 2; d <= 4; d += 2) {
    cf_mesh_executor_destroy(x);
    cf_fusion_destroy(f);
    f = mlp_fusion(d, 8, 16, 32, CF_BFLOAT16);
    cr_assert_eq(mu_check_tol(f, d, 9, NULL, 2e-2, &x), CF_OK, "%s", cf_mesh_executor_error(x));
    char want[1024];
    snprintf(want, sizeof want, bfloat16_plan, ids[d], ids[d], ids[d]);
    expect_plan(want);
  }
}
