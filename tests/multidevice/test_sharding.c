/* tests/multidevice/test_sharding.c: device meshes, DID axes, their printing, sharding
 * propagation and the resharding analysis (analysis/sharding.h). */
#include <stdlib.h>

#include "analysis/sharding.h"
#include "test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(sharding, .init = setup, .fini = teardown);

static cf_device_mesh mesh_of(int n) {
  cf_device_mesh m;
  cr_assert_eq(cf_device_mesh_linear(&m, n), CF_OK);
  return m;
}

Test(sharding, mesh_printing_and_errors) {
  char buf[64];
  cf_device_mesh m = mesh_of(4), m2;
  cf_device_mesh_str(&m, buf, sizeof buf);
  cr_expect_str_eq(buf, "DeviceMesh{0 1 2 3}");
  cr_assert_eq(cf_device_mesh_init(&m2, 2, (int[]){2, 2}, (int[]){3, 2, 1, 0}), CF_OK);
  cf_device_mesh_str(&m2, buf, sizeof buf);
  cr_expect_str_eq(buf, "DeviceMesh{{3 2}{1 0}}");
  cr_expect_eq(cf_device_mesh_index(&m2, 1), 2);
  cr_expect_eq(cf_device_mesh_index(&m2, 7), -1);
  cr_expect_eq(cf_device_mesh_init(&m2, 1, (int[]){2}, (int[]){1, 1}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_device_mesh_init(&m2, 3, (int[]){1, 1, 1}, NULL), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_device_mesh_linear(&m2, CF_MESH_MAX_DEVICES + 1), CF_ERR_INVALID_ARGUMENT);
}

/* nvFuser's notation: ideviceIdx.x0{2} and the mesh after the domain. */
Test(sharding, printing_logical_and_loop_sharding) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){6, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_tv_set_device_mesh(f, b, &m);
  EXPECT_OK(cf_parallelize(f, a, 0, CF_PT_DIDX));
  EXPECT_OK(cf_split_outer(f, b, 1, 2));
  EXPECT_OK(cf_parallelize(f, b, 1, CF_PT_DIDX));
  EXPECT_TV(a, "T0_g_float[ideviceIdx.x0{2}, iS1{4}] (DeviceMesh{0 1})");
  EXPECT_TV(b, "T1_g_float[iS2{6}, ideviceIdx.x4{2}, iS5{2}] (DeviceMesh{0 1})");
  cr_expect_eq(cf_tv_sharded_axis(f, a, CF_PT_DIDX), 0);
  cr_expect_eq(cf_tv_sharded_axis(f, b, CF_PT_DIDX), 1);
  cr_expect_eq(cf_tv_sharded_axis(f, b, CF_PT_DIDY), -1);
}

Test(sharding, propagation_through_ops) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){8, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_split_outer(f, a, 0, 2);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_tv *e = cf_exp(f, a);
  cf_tv *t = cf_transpose(f, e, 0, 1);
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  cf_fusion_add_output(f, t);
  cf_fusion_add_output(f, s);
  EXPECT_OK(cf_propagate_shardings(f));
  EXPECT_TV(e, "T1_l_float[ideviceIdx.x10{2}, iS11{4}, iS5{4}] (DeviceMesh{0 1})");
  EXPECT_TV(t, "T2_g_float[iS7{4}, ideviceIdx.x12{2}, iS13{4}] (DeviceMesh{0 1})");
  EXPECT_TV(s, "T3_g_float[rdeviceIdx.x14{2}, rS15{4}, iS9{4}] (DeviceMesh{0 1})");
  cr_expect_eq(cf_tv_sharded_axis(f, t, CF_PT_DIDX), 1);
}

Test(sharding, errors_name_tensor_and_axis) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){8, 4});
  cf_tv *o = cf_set(f, a);
  cf_fusion_add_output(f, o);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cr_expect_eq(cf_tv_sharded_axis(f, a, CF_PT_DIDX), -1);
  cr_expect_str_eq(cf_fusion_error(f), "sharding: axis 0 is parallelized on deviceIdx.x but the tensor has no device "
                                       "mesh for T0_g_float[ideviceIdx.x0{8}, iS1{4}]");
  cf_fusion_clear_error(f);
  cf_tv_set_device_mesh(f, a, &m);
  cr_expect_eq(cf_propagate_shardings(f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "sharding: the axis parallelized on deviceIdx.x (logical axis 0) must have the "
                                       "mesh axis's extent 2 for T0_g_float[ideviceIdx.x0{8}, iS1{4}] "
                                       "(DeviceMesh{0 1})");
  cf_fusion_clear_error(f);
  cf_parallelize(f, a, 0, CF_PT_DIDY);
  cr_expect_eq(cf_propagate_shardings(f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "sharding: axis 0 is parallelized on deviceIdx.y but its mesh has no such axis "
                                       "for T0_g_float[ideviceIdx.y0{8}, iS1{4}] (DeviceMesh{0 1})");
}

/* The analysis's result: which (expression, producer) pairs reshard, and how. */
static int reshardings(AnReshard **r) {
  AnShardings s;
  cr_assert_eq(an_shardings_compute(f, &s), CF_OK, "%s", cf_fusion_error(f));
  int n = an_reshardings(&s, r);
  an_shardings_free(&s);
  return n;
}

Test(sharding, resharding_allgather_slice_and_reductions) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_tv *b = cf_exp(f, a);                  /* sharded like a: no resharding */
  cf_tv *g = cf_set(f, b);                  /* replicated: allgather */
  cf_tv_set_device_mesh(f, g, &m);
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});   /* reduction over the sharded axis: allreduce */
  cf_tv *r = cf_sum(f, g, 1, (int[]){1});   /* replicated -> sharded: a slice */
  cf_tv_set_device_mesh(f, r, &m);
  cf_parallelize(f, r, 0, CF_PT_DIDX);
  cf_fusion_add_output(f, g);
  cf_fusion_add_output(f, s);
  cf_fusion_add_output(f, r);
  AnReshard *rs = NULL;
  int n = reshardings(&rs);
  cr_assert_eq(n, 3);
  cr_expect_eq(rs[0].producer, ir_tv(b));
  cr_expect(an_reshard_moves_input(&rs[0]) && rs[0].from[0] == 0 && rs[0].to[0] == -1 && rs[0].npartial == 0);
  cr_expect_eq(rs[1].consumer, ir_tv(s));
  cr_expect(!an_reshard_moves_input(&rs[1]) && rs[1].npartial == 1 && rs[1].partial_dim[0] == 0);
  cr_expect_eq(rs[1].scatter_axis[0], -1);
  cr_expect_eq(rs[2].consumer, ir_tv(r));
  cr_expect(rs[2].from[0] == -1 && rs[2].to[0] == 0 && rs[2].npartial == 0);
  free(rs);
}

/* nvFuser's ReduceScatter_LogicalSplit: the output sharded on the mesh axis reduced. */
Test(sharding, resharding_reduce_scatter) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 3, (int64_t[]){2, 2, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  cf_tv_set_device_mesh(f, s, &m);
  cf_parallelize(f, s, 1, CF_PT_DIDX);
  cf_fusion_add_output(f, s);
  AnReshard *rs = NULL;
  cr_assert_eq(reshardings(&rs), 1);
  cr_expect(rs[0].npartial == 1 && rs[0].scatter_axis[0] == 1);
  cr_expect(rs[0].to[0] == 0 && rs[0].to[1] == -1, "the scattered axis is whole before the reduce-scatter");
  free(rs);
}

Test(sharding, refused_ops) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv_set_device_mesh(f, a, &m);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_tv *r = cf_reshape(f, a, 1, (int64_t[]){8});
  cf_fusion_add_output(f, r);
  AnReshard *rs = NULL;
  AnShardings s;
  cr_assert_eq(an_shardings_compute(f, &s), CF_OK);
  cr_expect_eq(an_reshardings(&s, &rs), -1);
  an_shardings_free(&s);
  cr_expect_str_eq(cf_fusion_error(f), "sharding: T1 (reshape) reads a sharded axis it resizes; resizes and "
                                       "reshapes of sharded axes are not supported for T0_g_float[ideviceIdx.x0{2}, iS1{4}] "
                                       "(DeviceMesh{0 1})");
}

/* nvFuser's shardAllLike: the reference's DID split replayed onto every tensor
 * (cf_propagate_transforms_to with its first loop axis) and its DID type copied
 * (cf_parallelize_all_like restricted to DIDx) shard them as the reference. */
Test(sharding, parallelize_all_like_restricted_to_did) {
  cf_device_mesh m = mesh_of(2);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){8, 4});
  cf_tv *b = cf_exp(f, a);
  cf_tv *c = cf_add(f, b, a);
  cf_fusion_add_output(f, c);
  for (cf_tv **t = (cf_tv *[]){a, b, c, NULL}; *t; t++) cf_tv_set_device_mesh(f, *t, &m);
  cf_split_outer(f, a, 0, 2);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_parallelize(f, a, 1, CF_PT_TIDX);
  EXPECT_OK(cf_propagate_transforms_to(f, a, 1, 0, NULL));
  EXPECT_OK(cf_parallelize_all_like(f, a, 1, (cf_parallel_type[]){CF_PT_DIDX}));
  EXPECT_TV(c, "T2_g_float[ideviceIdx.x10{2}, iS11{4}, iS5{4}] (DeviceMesh{0 1})");
  cr_expect_eq(cf_tv_sharded_axis(f, b, CF_PT_DIDX), 0);
  cr_expect_eq(cf_tv_sharded_axis(f, c, CF_PT_DIDX), 0);
}
