// bench: internal
/* bench/multidevice.c: sharded fusions and collectives over a device mesh.
 *
 *   bench_multidevice --small        the host mesh: the sharded reference fusions on 2 and
 *                                    4 simulated devices, checked against the evaluator and
 *                                    timed (a ctest; no GPU needed)
 *   torchrun --nproc-per-node=N --no-python build/bench_multidevice [--check] [--bandwidth]
 *            [--fusions] [--failure]
 *       --check      each sharded fusion on the GPUs equals the evaluator's shard
 *       --bandwidth  allreduce, allgather and reduce-scatter bus bandwidth, 1 MiB .. 1 GiB,
 *                    through cfuser's communicator (raw NCCL) and through a fusion
 *       --fusions    the sharded fusions' time per call
 *       --failure    rank 1 runs without its input: every rank must report it (last)
 * Lines are `key value` tables that bench/multidevice.sh puts next to torch's
 * (bench/multidevice_torch.py). Internal: it reads the communicator (executor/mesh_comm.h)
 * to time NCCL itself with the same streams cfuser uses. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "executor/exec_cuda.h"
#include "executor/mesh_comm.h"

typedef struct Case {
  const char *name;
  int rows, cols, axis; /* the input [rows, cols], its sharded axis */
  int kind;             /* 0 pointwise, 1 row sum, 2 column sum, 3 softmax, 4 layer norm */
} Case;

static const Case cases[] = {
    {"pointwise_rows", 64, 256, 0, 0}, {"sum_sharded_rows", 64, 256, 0, 1}, {"sum_sharded_cols", 64, 256, 1, 2},
    {"softmax_rows", 64, 256, 0, 3},   {"softmax_cols", 64, 256, 1, 3},     {"layer_norm_rows", 64, 256, 0, 4},
    {"layer_norm_cols", 64, 256, 1, 4},
};

/* The fusion of case k on a mesh of d devices; sizes scaled by `scale`. */
static cf_fusion *make_case(const Case *c, int d, int scale) {
  cf_fusion *f = cf_fusion_create();
  cf_device_mesh m;
  cf_device_mesh_linear(&m, d);
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){(int64_t)c->rows * scale, (int64_t)c->cols * scale});
  cf_fusion_add_input(f, a);
  cf_tv_set_device_mesh(f, a, &m);
  cf_split_outer(f, a, c->axis, d);
  cf_parallelize(f, a, c->axis, CF_PT_DIDX);
  bool keep[2] = {false, true};
  cf_tv *out = NULL;
  if (c->kind == 0) out = cf_relu(f, cf_mul(f, cf_exp(f, a), a));
  if (c->kind == 1) out = cf_sum(f, a, 1, (int[]){0});
  if (c->kind == 2) out = cf_sum(f, a, 1, (int[]){1});
  if (c->kind == 3) {
    cf_tv *mb = cf_broadcast(f, cf_max_reduce(f, a, 1, (int[]){1}), 2, keep);
    cf_tv *e = cf_exp(f, cf_sub(f, a, mb));
    out = cf_div(f, e, cf_broadcast(f, cf_sum(f, e, 1, (int[]){1}), 2, keep));
  }
  if (c->kind == 4) {
    cf_tv *xc = cf_sub(f, a, cf_broadcast(f, cf_mean(f, a, 1, (int[]){1}), 2, keep));
    cf_tv *var = cf_broadcast(f, cf_mean(f, cf_mul(f, xc, xc), 1, (int[]){1}), 2, keep);
    out = cf_mul(f, xc, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5)));
  }
  cf_fusion_add_output(f, out);
  return f;
}

/* The global input and the evaluator's output of f. */
static void reference(cf_fusion *f, DLManagedTensor **in, DLManagedTensor **out) {
  cf_tv *a = cf_fusion_input(f, 0);
  int64_t sizes[2] = {cf_id_extent(cf_tv_domain_axis(a, CF_DOMAIN_LOGICAL, 0)),
                      cf_id_extent(cf_tv_domain_axis(a, CF_DOMAIN_LOGICAL, 1))};
  *in = cf_tensor_host(CF_FLOAT, 2, sizes);
  cf_tensor_fill_random(&(*in)->dl_tensor, 42);
  const DLTensor *gin = &(*in)->dl_tensor;
  cf_fusion_evaluate(f, 1, &gin, out);
}

static bool same_shard(cf_fusion *f, const DLTensor *got, const DLTensor *ref, int dev, const char *what) {
  DLManagedTensor *want = NULL;
  char msg[256] = "";
  bool ok = cf_shard_tensor(f, cf_fusion_output(f, 0), ref, dev, &want) == CF_OK &&
            cf_tensor_allclose(got, &want->dl_tensor, 1e-4, 1e-5, msg, sizeof msg);
  if (!ok) printf("MISMATCH %s device %d: %s\n", what, dev, msg);
  cf_tensor_free(want);
  return ok;
}

/* ---- the host mesh (--small) --------------------------------------------------------- */

static int run_small(void) {
  int bad = 0;
  printf("case devices segments communications us_per_call\n");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int d = 2; d <= 4; d += 2) {
      cf_fusion *f = make_case(&cases[k], d, 1);
      DLManagedTensor *g, *ref, *loc[4], *out[4] = {0};
      const DLTensor *ins[4];
      reference(f, &g, &ref);
      for (int r = 0; r < d; r++) cf_shard_tensor(f, cf_fusion_input(f, 0), &g->dl_tensor, r, &loc[r]), ins[r] = &loc[r]->dl_tensor;
      cf_mesh_executor *x = cf_mesh_executor_create(f, NULL);
      double t0 = 0;
      cf_status st = CF_OK;
      for (int it = 0; it < 4 && !st; it++) {
        if (it == 1) t0 = bu_now_us();
        for (int r = 0; it && r < d; r++) cf_tensor_free(out[r]);
        st = cf_mesh_run_host(x, d, 1, ins, 1, out);
      }
      double us = (bu_now_us() - t0) / 3;
      for (int r = 0; r < d && !st; r++) bad += !same_shard(f, &out[r]->dl_tensor, &ref->dl_tensor, r, cases[k].name);
      if (st) printf("FAILED %s on %d devices: %s\n", cases[k].name, d, cf_mesh_executor_error(x)), bad++;
      else printf("%s %d %d %d %.1f\n", cases[k].name, d, cf_mesh_executor_num_segments(x),
                  cf_mesh_executor_num_communications(x), us);
      for (int r = 0; r < d; r++) cf_tensor_free(out[r]), cf_tensor_free(loc[r]);
      cf_tensor_free(g);
      cf_tensor_free(ref);
      cf_mesh_executor_destroy(x);
      cf_fusion_destroy(f);
    }
  printf("%s\n", bad ? "host mesh: MISMATCHES" : "host mesh: every sharded fusion equals the evaluator");
  return bad ? 1 : 0;
}

#include "multidevice_gpu.h"

int main(int argc, char **argv) {
  bool small = false, check = false, bw = false, fusions = false, failure = false;
  for (int i = 1; i < argc; i++) {
    small |= !strcmp(argv[i], "--small");
    check |= !strcmp(argv[i], "--check");
    bw |= !strcmp(argv[i], "--bandwidth");
    fusions |= !strcmp(argv[i], "--fusions");
    failure |= !strcmp(argv[i], "--failure");
  }
  if (small || !getenv("WORLD_SIZE")) {
    if (!small) printf("WORLD_SIZE is unset: running the host mesh (--small); run under torchrun for GPUs\n");
    return run_small();
  }
  return run_gpu(check, bw, fusions, failure);
}
