/* tests/nvfuser/test_multidevice_ports.c: nvFuser's multidevice tests
 * (tests/cpp/test_multidevice_lower_communication.cpp, test_multidevice_sharding.cpp),
 * ported test for test onto the host mesh: each builds nvFuser's fusion with cfuser's
 * spellings (cf_tv_set_device_mesh, cf_parallelize(..., CF_PT_DIDX), cf_split_outer for
 * outer_split) and checks nvFuser's result against the reference evaluator on the
 * unsharded tensors, for 2 and 4 simulated devices where nvFuser uses the communicator's
 * size. Differences from nvFuser are said per test: cfuser keeps a tensor the user placed
 * on a mesh exactly as given (nvFuser's set() also copies DID types, hence its explicit
 * Serial), and allocation domains are not set (every shard is contiguous). */
#include "multidevice/mesh_util.h"

MU_SUITE(multidevice_ports);

static const int kTensorSize = 4;

static void fresh(void) {
  cf_mesh_executor_destroy(x);
  x = NULL;
  cf_fusion_destroy(f);
  f = cf_fusion_create();
}

static cf_device_mesh mesh_ids(int n, const int *ids) {
  cf_device_mesh m;
  cr_assert_eq(cf_device_mesh_init(&m, 1, &n, ids), CF_OK);
  return m;
}

static void on(cf_tv *t, const cf_device_mesh *m) { cf_tv_set_device_mesh(f, t, m); }
static void did(cf_tv *t, int axis) { cf_parallelize(f, t, axis, CF_PT_DIDX); }
static void outer_split_did(cf_tv *t, int axis, int d) {
  cf_split_outer(f, t, axis, d);
  cf_parallelize(f, t, axis, CF_PT_DIDX);
}
static void check(int ndev) { cr_assert_eq(mu_check(f, ndev, 11, &x), CF_OK, "%s", cf_mesh_executor_error(x)); }

/* set(in): in on in_mesh (axis 0 sharded when in_did), out on out_mesh (axis 0 sharded
 * when out_did), global [rows, kTensorSize]. */
static void set_between(const cf_device_mesh *in_mesh, bool in_did, const cf_device_mesh *out_mesh, bool out_did,
                        int64_t rows) {
  cf_tv *in = tu_input(f, CF_FLOAT, 2, (int64_t[]){rows, kTensorSize});
  cf_tv *out = cf_set(f, in);
  cf_fusion_add_output(f, out);
  on(in, in_mesh);
  on(out, out_mesh);
  if (in_did) did(in, 0);
  if (out_did) did(out, 0);
}

/* LowerGatherTest: InMesh {0 1} -> OutMesh {0}, {0 1} -> {1}, {1 2} -> {0 2}: the
 * sharded input gathered onto the output mesh, equal to the unsharded tensor there. */
Test(multidevice_ports, lower_gather) {
  static const int meshes[3][2][2] = {{{0, 1}, {0, -1}}, {{0, 1}, {1, -1}}, {{1, 2}, {0, 2}}};
  for (int i = 0; i < 3; i++) {
    fresh();
    cf_device_mesh in = mesh_ids(2, meshes[i][0]), out = mesh_ids(meshes[i][1][1] < 0 ? 1 : 2, meshes[i][1]);
    set_between(&in, true, &out, false, 2);
    check(3);
  }
}

/* LowerScatterTest: {0} -> {0 1}, {1} -> {0 1}, {0 2} -> {1 2}: the unsharded input
 * scattered over the output mesh. */
Test(multidevice_ports, lower_scatter) {
  static const int meshes[3][2][2] = {{{0, -1}, {0, 1}}, {{1, -1}, {0, 1}}, {{0, 2}, {1, 2}}};
  for (int i = 0; i < 3; i++) {
    fresh();
    cf_device_mesh in = mesh_ids(meshes[i][0][1] < 0 ? 1 : 2, meshes[i][0]), out = mesh_ids(2, meshes[i][1]);
    set_between(&in, false, &out, true, 2);
    check(3);
  }
}

/* LowerSendRecvTest: {0} -> {1}, {1} -> {0}, {1 2} -> {0 1}, {1 2} -> {1 0}, both sides
 * sharded on axis 0. */
Test(multidevice_ports, lower_send_recv) {
  static const int meshes[4][2][2] = {{{0, -1}, {1, -1}}, {{1, -1}, {0, -1}}, {{1, 2}, {0, 1}}, {{1, 2}, {1, 0}}};
  for (int i = 0; i < 4; i++) {
    fresh();
    int n = meshes[i][0][1] < 0 ? 1 : 2;
    cf_device_mesh in = mesh_ids(n, meshes[i][0]), out = mesh_ids(n, meshes[i][1]);
    set_between(&in, true, &out, true, n);
    check(3);
    if (n == 1) {
      char *plan = mu_plan(x);
      cr_expect(strstr(plan, "send_recv from device"), "%s", plan);
      free(plan);
    }
  }
}

/* LowerCollectiveTest.Allgather: [d, 4] sharded on axis 0 -> replicated. */
Test(multidevice_ports, allgather) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    set_between(&m, true, &m, false, d);
    check(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 1);
  }
}

/* LowerCollectiveTest.Allgather_LoopSplit: [d * 4] outer-split by d, axis 0 on DIDx. */
Test(multidevice_ports, allgather_loop_split) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 1, (int64_t[]){d * kTensorSize});
    cf_tv *out = cf_set(f, in);
    cf_fusion_add_output(f, out);
    on(in, &m);
    outer_split_did(in, 0, d);
    on(out, &m);
    check(d);
  }
}

/* LowerCollectiveTest.Broadcast: in on {0} (root), out on every device. */
Test(multidevice_ports, broadcast) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh root = mesh_ids(1, (int[]){0}), m = mu_mesh(d);
    set_between(&root, false, &m, false, 1);
    check(d);
    char *plan = mu_plan(x);
    cr_expect(strstr(plan, "broadcast from device 0"), "%s", plan);
    free(plan);
  }
}

/* LowerCollectiveTest.Reduce: sum over the sharded axis, the output on {0} only. */
Test(multidevice_ports, reduce) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh root = mesh_ids(1, (int[]){0}), m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 2, (int64_t[]){d, kTensorSize});
    cf_tv *out = cf_sum(f, in, 1, (int[]){0});
    cf_fusion_add_output(f, out);
    on(in, &m);
    on(out, &root);
    did(in, 0);
    check(d);
  }
}

/* LowerCollectiveTest.Allreduce and Allreduce_Concrete (symbolic and concrete input). */
Test(multidevice_ports, allreduce) {
  for (int concrete = 0; concrete < 2; concrete++)
    for (int d = 2; d <= 4; d += 2) {
      fresh();
      cf_device_mesh m = mu_mesh(d);
      cf_tv *in = concrete ? tu_input(f, CF_FLOAT, 2, (int64_t[]){d, kTensorSize}) : tu_input(f, CF_FLOAT, 2, NULL);
      cf_tv *out = cf_sum(f, in, 1, (int[]){0});
      cf_fusion_add_output(f, out);
      on(in, &m);
      on(out, &m);
      did(in, 0);
      if (concrete) check(d);
      else {
        /* a symbolic input: mu_check reads sizes from the fusion, so run by hand */
        DLManagedTensor *g = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){d, kTensorSize}), *loc[4], *out_t[4], *ref;
        cf_tensor_fill_random(&g->dl_tensor, 3);
        const DLTensor *ins[4], *gin = &g->dl_tensor;
        for (int r = 0; r < d; r++) {
          cr_assert_eq(cf_shard_tensor(f, in, &g->dl_tensor, r, &loc[r]), CF_OK, "%s", cf_fusion_error(f));
          ins[r] = &loc[r]->dl_tensor;
        }
        cr_assert_eq(cf_fusion_evaluate(f, 1, &gin, &ref), CF_OK);
        x = cf_mesh_executor_create(f, NULL);
        cr_assert_eq(cf_mesh_run_host(x, d, 1, ins, 1, out_t), CF_OK, "%s", cf_mesh_executor_error(x));
        for (int r = 0; r < d; r++) {
          cr_expect(cf_tensor_allclose(&out_t[r]->dl_tensor, &ref->dl_tensor, 1e-5, 1e-5, NULL, 0));
          cf_tensor_free(out_t[r]);
          cf_tensor_free(loc[r]);
        }
        cf_tensor_free(ref);
        cf_tensor_free(g);
      }
    }
}

/* LowerCollectiveTest.ReduceScatter: in [2d, 3d] with axis 1 outer-split on DIDx, out =
 * sum(in, {1}) with its reduction axis and axis 0 outer-split on DIDx: a local reduction
 * and a reduce-scatter (nvFuser: a Reduction segment and a Communication segment). */
Test(multidevice_ports, reduce_scatter) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 2, (int64_t[]){2 * d, 3 * d});
    cf_tv *out = cf_sum(f, in, 1, (int[]){1});
    cf_fusion_add_output(f, out);
    on(in, &m);
    outer_split_did(in, 1, d);
    on(out, &m);
    outer_split_did(out, 1, d);
    outer_split_did(out, 0, d);
    check(d);
    char *plan = mu_plan(x);
    cr_expect(strstr(plan, "reduce_scatter(sum) axis 0: T1[iS, rS] partial -> T1[ideviceIdx.x, rS]"), "%s", plan);
    free(plan);
    cr_expect_eq(cf_mesh_executor_num_segments(x), 1);
  }
}

/* LowerCollectiveTest.ReduceScatter_LogicalSplit: in [d, d, 4], axis 0 on DIDx; out =
 * sum(in, {0}) with its axis 1 on DIDx. */
Test(multidevice_ports, reduce_scatter_logical_split) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 3, (int64_t[]){d, d, kTensorSize});
    cf_tv *out = cf_sum(f, in, 1, (int[]){0});
    cf_fusion_add_output(f, out);
    on(in, &m);
    on(out, &m);
    did(in, 0);
    did(out, 1);
    check(d);
  }
}

/* LowerCollectiveTest.ReduceScatter_StaticShape: in [d, 3d] axis 0 on DIDx; out's last
 * axis outer-split on DIDx; one communication, no kernel but the local sum. */
Test(multidevice_ports, reduce_scatter_static_shape) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 2, (int64_t[]){d, 3 * d});
    cf_tv *out = cf_sum(f, in, 1, (int[]){0});
    cf_fusion_add_output(f, out);
    on(in, &m);
    did(in, 0);
    on(out, &m);
    cf_split_outer(f, out, -1, d); /* nvFuser: out->outer_split(-1, d); axis(-2) on DIDx */
    cf_parallelize(f, out, -2, CF_PT_DIDX);
    check(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 1);
  }
}

/* LowerCollectiveTest.ReduceScatter_Allgather: allreduce = reduce-scatter + allgather. */
Test(multidevice_ports, reduce_scatter_allgather) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 3, (int64_t[]){d, d, kTensorSize});
    on(in, &m);
    did(in, 0);
    cf_tv *s = cf_sum(f, in, 1, (int[]){0});
    on(s, &m);
    did(s, 1);
    cf_tv *out = cf_set(f, s);
    on(out, &m); /* nvFuser: out->axis(0)->parallelize(Serial) */
    cf_fusion_add_output(f, out);
    check(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 2);
  }
}

/* MultiDeviceReductionTest.UnshardedInput_ShardedOutput, concrete and symbolic, the
 * sharded dimension 0 and 1: tv1 = set(tv0), tv2 = tv1 + tv1 sharded, tv3 = sum(tv2)
 * over the sharded dimension with its last axis on DIDx. */
Test(multidevice_ports, unsharded_input_sharded_output) {
  for (int dim = 0; dim < 2; dim++)
    for (int d = 2; d <= 4; d += 2) {
      fresh();
      cf_device_mesh m = mu_mesh(d);
      int64_t shape[4] = {2, 3, 2, d};
      shape[dim] = d;
      cf_tv *tv0 = tu_input(f, CF_FLOAT, 4, shape);
      cf_tv *tv1 = cf_set(f, tv0), *tv2 = cf_add(f, tv1, tv1), *tv3 = cf_sum(f, tv2, 1, (int[]){dim});
      cf_fusion_add_output(f, tv1);
      cf_fusion_add_output(f, tv2);
      cf_fusion_add_output(f, tv3);
      did(tv1, dim);
      did(tv2, dim);
      did(tv3, -1);
      for (cf_tv **t = (cf_tv *[]){tv0, tv1, tv2, tv3, NULL}; *t; t++) on(*t, &m);
      check(d);
    }
}

/* MultiDeviceReductionTest.ShardedInput_ReplicatedOutput: tv0 sharded, tv1 = set(tv0)
 * and tv2 = tv1 + tv1 replicated. */
Test(multidevice_ports, sharded_input_replicated_output) {
  for (int dim = 0; dim < 2; dim++)
    for (int d = 2; d <= 4; d += 2) {
      fresh();
      cf_device_mesh m = mu_mesh(d);
      int64_t shape[3] = {3, 2, 5};
      shape[dim] = d;
      cf_tv *tv0 = tu_input(f, CF_FLOAT, 3, shape);
      cf_tv *tv1 = cf_set(f, tv0), *tv2 = cf_add(f, tv1, tv1);
      cf_fusion_add_output(f, tv1);
      cf_fusion_add_output(f, tv2);
      did(tv0, dim);
      for (cf_tv **t = (cf_tv *[]){tv0, tv1, tv2, NULL}; *t; t++) on(*t, &m);
      check(d);
    }
}

/* MultiDeviceTest.Reduction: out = sum(in, {0}), in sharded on axis 0, out propagated. */
Test(multidevice_ports, reduction) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *in = tu_input(f, CF_FLOAT, 2, (int64_t[]){d, 4});
    cf_fusion_add_output(f, cf_sum(f, in, 1, (int[]){0}));
    on(in, &m);
    did(in, 0);
    check(d);
  }
}

/* MultiDeviceTest.Slice: [d, 8, 8] sharded on axis 0, sliced on the last axis. */
Test(multidevice_ports, slice) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *xt = tu_input(f, CF_FLOAT, 3, (int64_t[]){d, 8, 8});
    cf_tv *s0 = cf_slice(f, xt, 3, (int64_t[]){0, 0, 0}, (int64_t[]){d, 8, 4}, NULL);
    cf_tv *s1 = cf_slice(f, xt, 3, (int64_t[]){0, 0, 4}, (int64_t[]){d, 8, 8}, NULL);
    cf_fusion_add_output(f, s0);
    cf_fusion_add_output(f, s1);
    for (cf_tv **t = (cf_tv *[]){xt, s0, s1, NULL}; *t; t++) {
      on(*t, &m);
      did(*t, 0);
    }
    check(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
  }
}

/* MultiDeviceTest.BackpropMeshes: z = x + uniform(shape(x)); z is sharded like x (a
 * local shard [1, 4]) by propagation; the random tensor, replicated, is sliced. */
Test(multidevice_ports, backprop_meshes) {
  int d = 2;
  cf_device_mesh m = mu_mesh(d);
  cf_tv *xt = tu_input(f, CF_FLOAT, 2, (int64_t[]){d, 4});
  cf_tv *y = cf_uniform_like(f, xt, 0.0, 1.0, cf_const_int(f, CF_INT64, 0), cf_const_int(f, CF_INT64, 0));
  cf_tv *z = cf_add(f, xt, y);
  cf_fusion_add_output(f, z);
  on(xt, &m);
  did(xt, 0);
  check(d);
  cr_expect_eq(cf_tv_sharded_axis(f, z, CF_PT_DIDX), 0, "z is sharded like x");
}

/* MultiDeviceTest.DivideBySum: x [b, h, s, s] with h outer-split on DIDx and reordered
 * outermost; y = x / sum(x, -1) broadcast. */
Test(multidevice_ports, divide_by_sum) {
  for (int d = 2; d <= 4; d += 2) {
    fresh();
    cf_device_mesh m = mu_mesh(d);
    cf_tv *xt = tu_input(f, CF_FLOAT, 4, (int64_t[]){2, d * 3, 5, 5});
    cf_tv *s = cf_sum(f, xt, 1, (int[]){-1});
    cf_tv *sb = cf_broadcast(f, s, 4, (bool[]){false, false, false, true});
    cf_tv *y = cf_div(f, xt, sb);
    cf_fusion_add_output(f, y);
    for (cf_tv **t = (cf_tv *[]){xt, s, sb, y, NULL}; *t; t++) {
      on(*t, &m);
      outer_split_did(*t, 1, d);
      cf_reorder(f, *t, 1, (int[]){1, 0});
    }
    check(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
  }
}

/* MultiDeviceTest.LayerNorm: a replicated input on the mesh, layer norm over the last
 * axis (output, mean, invstd); every device computes it whole (no communication). At
 * [64, 4, 32] here instead of [1024, 32, 256]: the host backend runs it. */
Test(multidevice_ports, layer_norm_replicated) {
  cf_device_mesh m = mu_mesh(2);
  cf_tv *xt = tu_input(f, CF_FLOAT, 3, (int64_t[]){64, 4, 32});
  cf_tv *var = NULL, *mean = NULL;
  cf_var_mean(f, xt, 1, (int[]){2}, 0, true, &var, &mean);
  cf_tv *invstd = cf_rsqrt(f, cf_add_scalar(f, var, 1e-5));
  cf_fusion_add_output(f, cf_mul(f, cf_sub(f, xt, mean), invstd));
  cf_fusion_add_output(f, mean);
  cf_fusion_add_output(f, invstd);
  on(xt, &m);
  check(2);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
}
