/* tests/multidevice/test_mesh_host.c: the reference fusions sharded over a host mesh of
 * 2 and 4 simulated devices (row and column sums over a sharded axis, softmax and layer
 * norm with rows or columns sharded, pointwise) equal the reference evaluator on the
 * unsharded tensors, and their plans are the communications expected. The host mesh runs
 * its devices on the host backend wherever it runs (its shards are host memory). */
#include "executor/mesh.h"
#include "multidevice/mesh_util.h"

MU_SUITE(mesh_host);

/* Places t on the mesh of d devices, axis `axis` sharded (-1: replicated). */
static cf_tv *place(cf_tv *t, int d, int axis) {
  cf_device_mesh m = mu_mesh(d);
  cf_tv_set_device_mesh(f, t, &m);
  if (axis >= 0) {
    cf_split_outer(f, t, axis, d);
    cf_parallelize(f, t, axis, CF_PT_DIDX);
  }
  return t;
}

/* An input [rows, cols] on a mesh of d devices, axis `axis` sharded (-1: replicated). */
static cf_tv *sharded_input(int64_t rows, int64_t cols, int d, int axis) {
  return place(tu_input(f, CF_FLOAT, 2, (int64_t[]){rows, cols}), d, axis);
}

static void expect_plan(const char *want) {
  char *got = mu_plan(x);
  cr_expect_str_eq(got, want);
  free(got);
}

static void run(int d) { cr_assert_eq(mu_check(f, d, 7, &x), CF_OK, "%s", cf_mesh_executor_error(x)); }

Test(mesh_host, pointwise_rows_sharded_no_communication) {
  for (int d = 2; d <= 4; d += 2) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_mesh_executor_destroy(x);
    cf_tv *a = sharded_input(8, 6, d, 0);
    cf_tv *b = sharded_input(8, 6, d, 0);
    cf_fusion_add_output(f, cf_relu(f, cf_add(f, cf_exp(f, a), b)));
    run(d);
    cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
    cr_expect_eq(cf_mesh_executor_num_segments(x), 1);
  }
}

Test(mesh_host, row_sum_over_sharded_rows_is_an_allreduce) {
  cf_tv *a = sharded_input(8, 6, 2, 0);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){0}));
  run(2);
  expect_plan("mesh plan: 2 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[rS, iS] partial (DeviceMesh{0 1})\n"
              "  step 1: allreduce(sum) in place: T1[rS, iS] partial -> T1[rS, iS]\n");
}

Test(mesh_host, column_sum_of_sharded_rows_is_local) {
  cf_tv *a = sharded_input(8, 6, 4, 0);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  run(4);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
}

/* A sum over the sharded axis: one local reduction and one allreduce, in place on the
 * partials (no buffer, no copy of its own), nothing else. */
Test(mesh_host, column_sum_over_sharded_columns_on_4_devices) {
  cf_tv *a = sharded_input(4, 8, 4, 1);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  run(4);
  expect_plan("mesh plan: 2 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[iS, rS] partial (DeviceMesh{0 1 2 3})\n"
              "  step 1: allreduce(sum) in place: T1[iS, rS] partial -> T1[iS, rS]\n");
}

/* softmax over the last axis: x - max, exp, / sum. */
static void softmax(cf_tv *a) {
  cf_tv *m = cf_max_reduce(f, a, 1, (int[]){1});
  cf_tv *mb = cf_broadcast(f, m, 2, (bool[]){false, true});
  cf_tv *e = cf_exp(f, cf_sub(f, a, mb));
  cf_tv *s = cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, (bool[]){false, true});
  cf_fusion_add_output(f, cf_div(f, e, s));
}

Test(mesh_host, softmax_rows_sharded) {
  softmax(sharded_input(8, 16, 2, 0));
  run(2);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
  cr_expect_eq(cf_mesh_executor_num_segments(x), 1);
}

Test(mesh_host, softmax_columns_sharded_allreduces_max_and_sum) {
  softmax(sharded_input(4, 16, 4, 1));
  run(4);
  expect_plan("mesh plan: 5 steps, 2 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[iS, rS] partial (DeviceMesh{0 1 2 3})\n"
              "  step 1: allreduce(max) in place: T1[iS, rS] partial -> T1[iS, rS]\n"
              "  step 2: compute segment (2 in, 2 out): T4[iS, ideviceIdx.x], T5[iS, rS] partial "
              "(DeviceMesh{0 1 2 3})\n"
              "  step 3: allreduce(sum) in place: T5[iS, rS] partial -> T5[iS, rS]\n"
              "  step 4: compute segment (2 in, 1 out): T7[iS, ideviceIdx.x] (DeviceMesh{0 1 2 3})\n");
}

/* layer norm over the last axis through sums: (x - mean) * rsqrt(mean((x-mean)^2) + eps). */
static void layer_norm(cf_tv *a) {
  cf_tv *mean = cf_broadcast(f, cf_mean(f, a, 1, (int[]){1}), 2, (bool[]){false, true});
  cf_tv *xc = cf_sub(f, a, mean);
  cf_tv *var = cf_broadcast(f, cf_mean(f, cf_mul(f, xc, xc), 1, (int[]){1}), 2, (bool[]){false, true});
  cf_fusion_add_output(f, cf_mul(f, xc, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5))));
}

Test(mesh_host, layer_norm_rows_sharded) {
  layer_norm(sharded_input(8, 32, 4, 0));
  run(4);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 0);
}

Test(mesh_host, layer_norm_columns_sharded) {
  layer_norm(sharded_input(4, 32, 2, 1));
  run(2);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 2);
}

/* A replicated consumer of a sharded tensor gathers it; a sharded consumer of a
 * replicated one slices it, without communication. A set placed in another layout is
 * the communication itself: the gather writes T3, the set's output, and no segment
 * copies it. */
Test(mesh_host, allgather_and_slice) {
  cf_device_mesh m = mu_mesh(2);
  cf_tv *a = sharded_input(4, 6, 2, 0);
  cf_tv *b = sharded_input(4, 6, 2, -1);
  cf_tv *g = cf_set(f, cf_exp(f, a));
  cf_tv_set_device_mesh(f, g, &m);
  cf_tv *s = cf_add(f, g, b);
  cf_tv_set_device_mesh(f, s, &m);
  cf_split_outer(f, s, 1, 2);
  cf_parallelize(f, s, 1, CF_PT_DIDX);
  cf_fusion_add_output(f, g);
  cf_fusion_add_output(f, s);
  run(2);
  expect_plan("mesh plan: 5 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T2[ideviceIdx.x, iS] (DeviceMesh{0 1})\n"
              "  step 1: allgather axis 0: T2[ideviceIdx.x, iS] -> T3[iS, iS]\n"
              "  step 2: slice axis 1: T3[iS, iS] -> T3[iS, ideviceIdx.x]\n"
              "  step 3: slice axis 1: T1[iS, iS] -> T1[iS, ideviceIdx.x]\n"
              "  step 4: compute segment (2 in, 1 out): T4[iS, ideviceIdx.x] (DeviceMesh{0 1})\n");
}

/* Two readers that need one layout of a tensor share one gather; the set among them stays
 * a copy in the segment after it (its output is not the gathered value itself, which the
 * other reader reads). */
Test(mesh_host, a_tensor_gathered_for_two_readers_is_gathered_once) {
  cf_tv *e = cf_exp(f, sharded_input(4, 6, 2, 0));
  cf_fusion_add_output(f, place(cf_set(f, e), 2, -1));
  cf_fusion_add_output(f, place(cf_neg(f, e), 2, -1));
  run(2);
  expect_plan("mesh plan: 3 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[ideviceIdx.x, iS] (DeviceMesh{0 1})\n"
              "  step 1: allgather axis 0: T1[ideviceIdx.x, iS] -> T1[iS, iS]\n"
              "  step 2: compute segment (1 in, 2 out): T2[iS, iS], T3[iS, iS] (DeviceMesh{0 1})\n");
}

/* Partials over the mesh axis whose one reader needs the result sharded on that axis go
 * there by a reduce-scatter (not an allreduce and a slice), the sum itself unplaced. */
Test(mesh_host, partials_a_reader_needs_sharded_are_reduce_scattered) {
  cf_tv *s = cf_sum(f, sharded_input(8, 8, 4, 1), 1, (int[]){1});
  cf_fusion_add_output(f, place(cf_exp(f, s), 4, 0));
  run(4);
  expect_plan("mesh plan: 3 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[iS, rS] partial (DeviceMesh{0 1 2 3})\n"
              "  step 1: reduce_scatter(sum) axis 0: T1[iS, rS] partial -> T1[ideviceIdx.x, rS]\n"
              "  step 2: compute segment (1 in, 1 out): T2[ideviceIdx.x] (DeviceMesh{0 1 2 3})\n");
}

/* Readers that need different layouts of the partials (one sharded, one whole) get an
 * allreduce, and the sharded one a local slice of it. */
Test(mesh_host, partials_readers_disagree_on_are_allreduced) {
  cf_tv *s = cf_sum(f, sharded_input(4, 8, 2, 1), 1, (int[]){1});
  cf_fusion_add_output(f, place(cf_exp(f, s), 2, 0));
  cf_fusion_add_output(f, place(cf_neg(f, s), 2, -1));
  run(2);
  expect_plan("mesh plan: 5 steps, 1 communications\n"
              "  step 0: compute segment (1 in, 1 out): T1[iS, rS] partial (DeviceMesh{0 1})\n"
              "  step 1: allreduce(sum) in place: T1[iS, rS] partial -> T1[iS, rS]\n"
              "  step 2: slice axis 0: T1[iS, rS] -> T1[ideviceIdx.x, rS]\n"
              "  step 3: compute segment (1 in, 1 out): T2[ideviceIdx.x] (DeviceMesh{0 1})\n"
              "  step 4: compute segment (1 in, 1 out): T3[iS] (DeviceMesh{0 1})\n");
}

/* A 2-D mesh: rows on deviceIdx.y, columns on deviceIdx.x; a full sum needs both. */
Test(mesh_host, two_d_mesh_sum) {
  cf_device_mesh m;
  cf_device_mesh_init(&m, 2, (int[]){2, 2}, NULL);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv_set_device_mesh(f, a, &m);
  cf_split_outer(f, a, 1, 2);
  cf_parallelize(f, a, 1, CF_PT_DIDX);
  cf_split_outer(f, a, 0, 2);
  cf_parallelize(f, a, 0, CF_PT_DIDY);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_exp(f, a));
  run(4);
  cr_expect_eq(cf_mesh_executor_num_communications(x), 1);
}

Test(mesh_host, errors_are_reported_for_the_run) {
  cf_tv *a = sharded_input(6, 4, 4, 0);
  cf_fusion_add_output(f, cf_exp(f, a));
  x = cf_mesh_executor_create(f, NULL);
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){1, 4}), *out[4];
  const DLTensor *ins[4] = {&in->dl_tensor, &in->dl_tensor, NULL, &in->dl_tensor};
  /* global sizes [4, 4] from a shard [1, 4] disagree with the fusion's [6, 4] */
  cr_expect_eq(cf_mesh_run_host(x, 4, 1, ins, 1, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_mesh_executor_error(x), "mesh: the shards of input 0 (T0) make axis 0 of extent 4, not 6");
  cf_tensor_free(in);
}

/* Collectives move whole blocks: a strided shard they would read is refused, named. */
Test(mesh_host, a_non_contiguous_shard_is_refused_by_a_collective) {
  cf_device_mesh m = mu_mesh(2);
  cf_tv *a = sharded_input(2, 4, 2, 0);
  cf_tv *g = cf_set(f, a);
  cf_tv_set_device_mesh(f, g, &m);
  cf_fusion_add_output(f, g);
  x = cf_mesh_executor_create(f, NULL);
  DLManagedTensor *in = cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){1, 4}, (int64_t[]){8, 2}), *out[2];
  const DLTensor *ins[2] = {&in->dl_tensor, &in->dl_tensor};
  cr_expect_eq(cf_mesh_run_host(x, 2, 1, ins, 1, out), CF_ERR_UNSUPPORTED);
  cr_expect_str_eq(cf_mesh_executor_error(x), "mesh: device 0 has a non-contiguous shard of T0");
  cf_tensor_free(in);
}

/* A layout refused when the executor is made is the executor's error, reported by each
 * run; the user's fusion stays usable. */
Test(mesh_host, a_refused_layout_is_the_executors_error) {
  cf_device_mesh m = mu_mesh(4);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){6, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_fusion_add_output(f, cf_exp(f, a));
  x = cf_mesh_executor_create(f, NULL);
  cr_expect_eq(cf_fusion_status(f), CF_OK);
  DLManagedTensor *out[4];
  const DLTensor *ins[4] = {NULL, NULL, NULL, NULL};
  cr_expect_eq(cf_mesh_run_host(x, 4, 1, ins, 1, out), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_mesh_executor_error(x), "sharding: the axis parallelized on deviceIdx.x (logical axis 0) must "
                                              "have the mesh axis's extent 4 for T0_g_float[ideviceIdx.x0{6}, iS1{4}] "
                                              "(DeviceMesh{0 1 2 3})");
}

/* A packed dtype (float4_e2m1fn: two elements per byte) is refused by the mesh plan, named:
 * its shard copies move whole elements. */
Test(mesh_host, a_packed_fp4_tensor_is_refused) {
  cf_device_mesh m = mu_mesh(2);
  cf_tv *a = tu_input(f, CF_FLOAT4_E2M1FN, 2, (int64_t[]){4, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_split_outer(f, a, 0, 2);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_fusion_add_output(f, cf_cast(f, a, CF_FLOAT));
  x = cf_mesh_executor_create(f, NULL);
  DLManagedTensor *shard[2] = {cf_tensor_host(CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 4}),
                               cf_tensor_host(CF_FLOAT4_E2M1FN, 2, (int64_t[]){2, 4})}, *out[2] = {NULL, NULL};
  const DLTensor *ins[2] = {&shard[0]->dl_tensor, &shard[1]->dl_tensor};
  cr_expect_eq(cf_mesh_run_host(x, 2, 1, ins, 1, out), CF_ERR_UNSUPPORTED, "%s", cf_mesh_executor_error(x));
  cf_tensor_free(shard[0]), cf_tensor_free(shard[1]);
  cr_expect_str_eq(cf_mesh_executor_error(x), "mesh plan: T0 has dtype __e2m1, two elements per byte; multi-device "
                                              "fusions do not take packed dtypes yet (cast it to a wider dtype first)");
}

/* The host mesh's shards are host memory: its devices run on the host backend even where
 * a GPU exists or CFUSER_BACKEND asks for CUDA (on a GPU machine AUTO used to pick CUDA,
 * which refused every host shard); no options, AUTO and HOST alike. */
Test(mesh_host, auto_runs_the_host_mesh_on_the_host_backend) {
  setenv("CFUSER_BACKEND", "cuda", 1);
  const cf_executor_options autos = {.backend = CF_BACKEND_AUTO}, host = {.backend = CF_BACKEND_HOST};
  const cf_executor_options *opts[3] = {NULL, &autos, &host};
  for (int k = 0; k < 3; k++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_mesh_executor_destroy(x);
    cf_fusion_add_output(f, cf_sum(f, sharded_input(8, 6, 2, 0), 1, (int[]){0}));
    cr_expect_eq(mu_check_opts(f, 2, 7, opts[k], &x), CF_OK, "options %d: %s", k, cf_mesh_executor_error(x));
  }
  unsetenv("CFUSER_BACKEND");
}

/* An explicit CUDA backend cannot run host shards: refused before anything runs, saying
 * why and what to use. */
Test(mesh_host, a_cuda_backend_for_the_host_mesh_is_refused) {
  cf_fusion_add_output(f, cf_exp(f, sharded_input(4, 4, 2, 0)));
  cr_expect_eq(mu_check_opts(f, 2, 7, &(cf_executor_options){.backend = CF_BACKEND_CUDA}, &x), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_mesh_executor_error(x), "mesh: the host mesh keeps its shards in host memory and runs every "
                                              "device on the host backend, but the executor's options ask for CUDA: "
                                              "use CF_BACKEND_AUTO or CF_BACKEND_HOST (cf_mesh_run runs a mesh of GPUs)");
}

/* A shard in device memory given to the host mesh is refused, the device and input named
 * (its collectives would read it as host memory). The tensor is never read. */
Test(mesh_host, a_device_shard_given_to_the_host_mesh_is_refused) {
  cf_fusion_add_output(f, cf_exp(f, sharded_input(4, 4, 2, 0)));
  x = cf_mesh_executor_create(f, NULL);
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 4}), *out[2];
  DLTensor on_gpu = in->dl_tensor;
  on_gpu.device = (DLDevice){kDLCUDA, 0};
  const DLTensor *ins[2] = {&in->dl_tensor, &on_gpu};
  cr_expect_eq(cf_mesh_run_host(x, 2, 1, ins, 1, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_mesh_executor_error(x),
                   "mesh: device 1: input 0 (T0) is in device memory (kDLCUDA), but the host mesh needs host memory");
  cf_tensor_free(in);
}

/* Runs x on the host mesh of d devices with the shards of f's one input [rows, cols],
 * freeing the outputs; the status. */
static cf_status run_again(int d, int64_t rows, int64_t cols) {
  DLManagedTensor *g = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){rows, cols}), *loc[4], *out[4] = {0};
  const DLTensor *ins[4];
  cf_tensor_fill_random(&g->dl_tensor, 3);
  for (int k = 0; k < d; k++) {
    cr_assert_eq(cf_shard_tensor(f, cf_fusion_input(f, 0), &g->dl_tensor, k, &loc[k]), CF_OK);
    ins[k] = &loc[k]->dl_tensor;
  }
  cf_status st = cf_mesh_run_host(x, d, 1, ins, 1, out);
  for (int k = 0; k < d; k++) cf_tensor_free(out[k]), cf_tensor_free(loc[k]);
  cf_tensor_free(g);
  return st;
}

/* The buffers a run makes are kept for the next (executor/mesh_state.c): the first run
 * of a plan makes one per value and device that lives inside the run (segment outputs,
 * communication results) and one scratch; later runs of the plan make only the outputs
 * they return. Layer norm with columns sharded on 2 devices: 3 segments of 1, 2 and 1
 * outputs (8 buffers on 2 devices), two in-place allreduces (no buffer) through one
 * scratch of a row sum: 9. */
Test(mesh_host, steady_state_runs_allocate_only_their_outputs) {
  layer_norm(sharded_input(4, 32, 2, 1));
  x = cf_mesh_executor_create(f, NULL);
  cr_assert_eq(run_again(2, 4, 32), CF_OK, "%s", cf_mesh_executor_error(x));
  MeshStats s1 = mesh_exec_stats(x);
  cr_expect_eq(s1.runs, 1);
  cr_expect_eq(s1.buffers, 9);
  cr_expect_eq(s1.outputs, 2);
  cr_expect_eq(s1.events, 0);
  for (int i = 0; i < 3; i++) cr_assert_eq(run_again(2, 4, 32), CF_OK, "%s", cf_mesh_executor_error(x));
  MeshStats s4 = mesh_exec_stats(x);
  cr_expect_eq(s4.runs, 4);
  cr_expect_eq(s4.buffers, 9, "steady-state runs made %lld buffers", (long long)(s4.buffers - 9));
  cr_expect_eq(s4.outputs, 8);
}
