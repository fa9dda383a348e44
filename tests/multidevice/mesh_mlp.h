/* tests/multidevice/mesh_mlp.h: Megatron's sequence-parallel layer norm + tensor-parallel
 * MLP as one sharded fusion (header-only, public API only), shared by
 * tests/multidevice/test_mesh_mlp.c and bench/multidevice.c so that the bench times the
 * fusion the tests check.
 *
 * On a 1-D mesh of D devices, inputs (in this order):
 *   x     [S, H]  sharded on S (split outer by D, deviceIdx.x): the sequence-parallel rows
 *   gamma [H], beta [H]          replicated (the layer norm's affine)
 *   w1    [F, H], b1 [F]         sharded on F: column parallel
 *   w2    [H, F]                 sharded on F (its axis 1): row parallel
 *   b2    [H]                    replicated
 * and one output [S, H] sharded on S:
 *   y = layer_norm(x) * gamma + beta       local rows, in float (means of sums)
 *   yg = set(y) placed replicated          the allgather
 *   h = gelu(linear(yg, w1, b1))           F/D columns per device, no communication
 *   z = linear(h, w2) placed sharded on S  partial sums over F/D: one reduce-scatter
 *   out = z + b2                           b2 added once, after the reduce-scatter
 * The two annotated intermediates are the ones nvFuser's multidevice MLP tests annotate:
 * the gathered layer norm output and the second linear's output. The dtype is the
 * inputs' and the output's (float or bfloat16); the layer norm computes in float and the
 * linears accumulate in float (cf_linear). */
#ifndef CFUSER_TESTS_MESH_MLP_H
#define CFUSER_TESTS_MESH_MLP_H

#include <cfuser.h>

enum { MLP_NINPUTS = 7 };

static inline cf_tv *mlp_input(cf_fusion *f, cf_dtype dt, int rank, const int64_t *sizes, const cf_device_mesh *m,
                               int sharded_axis) {
  cf_tv *t = cf_tensor_concrete(f, dt, rank, sizes);
  cf_fusion_add_input(f, t);
  cf_tv_set_device_mesh(f, t, m);
  if (sharded_axis >= 0) {
    cf_split_outer(f, t, sharded_axis, m->shape[0]);
    cf_parallelize(f, t, sharded_axis, CF_PT_DIDX);
  }
  return t;
}

static inline cf_tv *mlp_to(cf_fusion *f, cf_tv *t, cf_dtype dt) { return cf_tv_dtype(t) == dt ? t : cf_cast(f, t, dt); }

/* (x - mean) * rsqrt(var + 1e-5) * gamma + beta over the last axis of x [S, H], in float. */
static inline cf_tv *mlp_layer_norm(cf_fusion *f, cf_tv *x, cf_tv *gamma, cf_tv *beta) {
  const bool keep[2] = {false, true};
  cf_tv *xf = mlp_to(f, x, CF_FLOAT);
  cf_tv *xc = cf_sub(f, xf, cf_broadcast(f, cf_mean(f, xf, 1, (int[]){1}), 2, keep));
  cf_tv *var = cf_broadcast(f, cf_mean(f, cf_mul(f, xc, xc), 1, (int[]){1}), 2, keep);
  cf_tv *y = cf_mul(f, xc, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5)));
  return cf_add(f, cf_mul(f, y, mlp_to(f, gamma, CF_FLOAT)), mlp_to(f, beta, CF_FLOAT));
}

/* The fusion on the mesh {0 .. d-1}; S and F divisible by d. */
static inline cf_fusion *mlp_fusion(int d, int64_t S, int64_t H, int64_t F, cf_dtype dt) {
  cf_fusion *f = cf_fusion_create();
  cf_device_mesh m;
  cf_device_mesh_linear(&m, d);
  cf_tv *x = mlp_input(f, dt, 2, (int64_t[]){S, H}, &m, 0);
  cf_tv *gamma = mlp_input(f, dt, 1, &H, &m, -1), *beta = mlp_input(f, dt, 1, &H, &m, -1);
  cf_tv *w1 = mlp_input(f, dt, 2, (int64_t[]){F, H}, &m, 0), *b1 = mlp_input(f, dt, 1, &F, &m, 0);
  cf_tv *w2 = mlp_input(f, dt, 2, (int64_t[]){H, F}, &m, 1), *b2 = mlp_input(f, dt, 1, &H, &m, -1);
  cf_tv *yg = cf_set(f, mlp_to(f, mlp_layer_norm(f, x, gamma, beta), dt));
  cf_tv_set_device_mesh(f, yg, &m);
  cf_tv *h = cf_gelu(f, cf_linear(f, yg, w1, b1));
  cf_tv *z = cf_linear(f, h, w2, NULL);
  cf_tv_set_device_mesh(f, z, &m);
  cf_split_outer(f, z, 0, d);
  cf_parallelize(f, z, 0, CF_PT_DIDX);
  cf_fusion_add_output(f, cf_add(f, z, b2));
  return f;
}

#endif
