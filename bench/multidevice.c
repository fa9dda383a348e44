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
 *                    through cfuser's communicator as cf_mesh_run calls it (the world
 *                    line's blocking twin, mesh_comm_collective), each call and its wait
 *                    timed, the median of 20 (as bench/multidevice_torch.py times torch)
 *       --fusions    the sharded fusions' time per call (median of 20, each call waits)
 *       --failure    rank 1 runs without its input: every rank must report it (last)
 * The cases: the sharded reference fusions (one input [rows, cols], rows or columns
 * sharded) and sp_ln_tp_mlp, Megatron's sequence-parallel layer norm + tensor-parallel
 * MLP (tests/multidevice/mesh_mlp.h: S = rows, H = cols, F = 4 H; allgather, two
 * linears with gelu on F/D, reduce-scatter), S=2048 H=1024 F=4096 float32 when timed.
 * Lines are `key value` tables that bench/multidevice.sh puts next to torch's
 * (bench/multidevice_torch.py). Internal: it reads the communicator (executor/mesh_comm.h)
 * to time NCCL itself with the same streams cfuser uses. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "executor/exec_cuda.h"
#include "executor/mesh_comm.h"
#include "tests/multidevice/mesh_mlp.h"

typedef struct Case {
  const char *name;
  int rows, cols, axis; /* the input [rows, cols], its sharded axis */
  int kind;             /* 0 pointwise, 1 row sum, 2 column sum, 3 softmax, 4 layer norm, 5 the MLP */
} Case;

enum { MAX_IN = MLP_NINPUTS, MAX_DEV = 8 };

static const Case cases[] = {
    {"pointwise_rows", 64, 256, 0, 0}, {"sum_sharded_rows", 64, 256, 0, 1}, {"sum_sharded_cols", 64, 256, 1, 2},
    {"softmax_rows", 64, 256, 0, 3},   {"softmax_cols", 64, 256, 1, 3},     {"layer_norm_rows", 64, 256, 0, 4},
    {"layer_norm_cols", 64, 256, 1, 4}, {"sp_ln_tp_mlp", 64, 32, 0, 5},
};

/* The fusion of case k on a mesh of d devices; sizes scaled by `scale`. */
static cf_fusion *make_case(const Case *c, int d, int scale) {
  if (c->kind == 5) return mlp_fusion(d, (int64_t)c->rows * scale, (int64_t)c->cols * scale, 4 * (int64_t)c->cols * scale, CF_FLOAT);
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

/* The global inputs (seeded) and, unless out is NULL, the evaluator's output of f (the
 * timed sizes skip it: the MLP's evaluator would make its [S, F, H] product). */
static void reference(cf_fusion *f, DLManagedTensor **in, DLManagedTensor **out) {
  int n = cf_fusion_num_inputs(f);
  const DLTensor *gin[MAX_IN];
  for (int i = 0; i < n; i++) {
    cf_tv *a = cf_fusion_input(f, i);
    int64_t sizes[CF_MAX_RANK];
    for (int k = 0; k < cf_tv_logical_rank(a); k++) sizes[k] = cf_id_extent(cf_tv_domain_axis(a, CF_DOMAIN_LOGICAL, k));
    in[i] = cf_tensor_host(CF_FLOAT, cf_tv_logical_rank(a), sizes);
    cf_tensor_fill_random(&in[i]->dl_tensor, 42 + (uint64_t)i);
    gin[i] = &in[i]->dl_tensor;
  }
  if (out) cf_fusion_evaluate(f, n, gin, out);
}

/* Device dev's shards of the global inputs g, into loc[0..n) and their views ins. */
static void shard_inputs(cf_fusion *f, DLManagedTensor **g, int dev, DLManagedTensor **loc, const DLTensor **ins) {
  for (int i = 0; i < cf_fusion_num_inputs(f); i++) {
    cf_shard_tensor(f, cf_fusion_input(f, i), &g[i]->dl_tensor, dev, &loc[i]);
    ins[i] = loc[i] ? &loc[i]->dl_tensor : NULL;
  }
}

static void free_all(DLManagedTensor **ts, int n) {
  for (int i = 0; i < n; i++) cf_tensor_free(ts[i]);
}

/* Whether got is device dev's shard of ref. The MLP's sums of 4 H and H float products
 * (kernels in float, the evaluator in double) get an absolute tolerance of 1e-4. */
static bool same_shard(cf_fusion *f, const DLTensor *got, const DLTensor *ref, int dev, const Case *k) {
  DLManagedTensor *want = NULL;
  char msg[256] = "";
  bool ok = cf_shard_tensor(f, cf_fusion_output(f, 0), ref, dev, &want) == CF_OK &&
            cf_tensor_allclose(got, &want->dl_tensor, 1e-4, k->kind == 5 ? 1e-4 : 1e-5, msg, sizeof msg);
  if (!ok) printf("MISMATCH %s device %d: %s\n", k->name, dev, msg);
  cf_tensor_free(want);
  return ok;
}

/* ---- the host mesh (--small) --------------------------------------------------------- */

/* Case k on d host devices: checked against the evaluator and timed; the row printed. */
static int small_case(const Case *k, int d) {
  cf_fusion *f = make_case(k, d, 1);
  int n = cf_fusion_num_inputs(f), bad = 0;
  DLManagedTensor *g[MAX_IN], *ref, *loc[MAX_DEV * MAX_IN], *out[MAX_DEV] = {0};
  const DLTensor *ins[MAX_DEV * MAX_IN];
  reference(f, g, &ref);
  for (int r = 0; r < d; r++) shard_inputs(f, g, r, &loc[r * n], &ins[r * n]);
  cf_mesh_executor *x = cf_mesh_executor_create(f, NULL);
  double t0 = 0;
  cf_status st = CF_OK;
  for (int it = 0; it < 4 && !st; it++) {
    if (it == 1) t0 = bu_now_us();
    for (int r = 0; it && r < d; r++) cf_tensor_free(out[r]);
    st = cf_mesh_run_host(x, d, n, ins, 1, out);
  }
  double us = (bu_now_us() - t0) / 3;
  for (int r = 0; r < d && !st; r++) bad += !same_shard(f, &out[r]->dl_tensor, &ref->dl_tensor, r, k);
  if (st) printf("FAILED %s on %d devices: %s\n", k->name, d, cf_mesh_executor_error(x)), bad++;
  else printf("%s %d %d %d %.1f\n", k->name, d, cf_mesh_executor_num_segments(x), cf_mesh_executor_num_communications(x),
              us);
  free_all(out, d);
  free_all(loc, d * n);
  free_all(g, n);
  cf_tensor_free(ref);
  cf_mesh_executor_destroy(x);
  cf_fusion_destroy(f);
  return bad;
}

static int run_small(void) {
  int bad = 0;
  printf("case devices segments communications us_per_call\n");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int d = 2; d <= 4; d += 2) bad += small_case(&cases[k], d);
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
