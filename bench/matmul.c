/* bench/matmul.c: matmuls defined with cf_matmul / cf_linear, unscheduled, run through
 * define and run (cf_fusion_execute: the matmul row, scheduler/matmul_sched.c), timed with
 * CUDA events on the GPU (issue 24's shapes):
 *   square      bfloat16 and float16, 2048^3, 4096^3, 8192^3 (float accumulation)
 *   llm         bfloat16, M = 16, 128, 1024, 8192 tokens against 4096x4096, 4096x11008 and
 *               11008x4096 weights (x [M, K] @ w [K, N])
 *   batched     bfloat16, 8 x 1024^3
 *   linear_gelu bfloat16 gelu(x @ w^T + bias), 8192^3 (the fused epilogue)
 *   square_f32  float, 2048^3 and 4096^3 (torch: cuBLAS's SIMT float path, TF32 off)
 *   linear_gelu_f32  float gelu(x @ w^T + bias), 2048 x 1024 @ 1024 x 2048: the first
 *               linear of bench/multidevice.c's tensor-parallel MLP on each of 2 GPUs
 * Half and bfloat16 operands run the row's tensor-core schedule (scheduler/matmul_mma.c:
 * mma.sync m16n8k16 with ldmatrix, 128x128x32 tiles swizzled, filled by 16-byte cp.async
 * where the contiguous extent is a multiple of 8, zero-filled at the edges,
 * circular-buffered in 3 stages), float its SIMT schedule (scheduler/matmul_simt.c:
 * 128x128x16 tiles, 8x8 registers a thread, double-buffered); params= in the plan.
 * Per case it prints
 *   cfuser <name> <shape> time_us=<t> TFLOPS=<2*B*M*N*K / t> schedulers=<rows> check=ok
 * and bench/matmul_torch.py the same lines for torch.matmul (cuBLAS), eager and
 * torch.compile of linear + gelu; bench/run_matmul.sh runs both. Each result is checked
 * on 64 sampled outputs against a double dot product (tolerance of the dtype).
 * Usage: bench_matmul [iterations] [--mean] [--check]. --check runs small odd shapes of
 * every case on the host backend and compares every output with the reference evaluator
 * and the sampled check too (a ctest), anywhere; without it a GPU is needed (exit 77 without one). Exit status 1
 * when a result is wrong or a run fails. CFUSER_BENCH_ONLY=<name> runs the cases of that name,
 * CFUSER_BENCH_ONLY='<name><M' those of at most M rows (e.g. 'llm<128': the few tokens).
 * CFUSER_BENCH_SHAPES='MxKxN,...' runs bfloat16 matmuls of those shapes instead (name
 * "shape"; bench/matmul_torch.py reads the same variable): sweeps of one axis. */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum { SAMPLES = 64 };

typedef struct Case {
  const char *name;
  cf_dtype dt;
  int64_t b, m, k, n;         /* b = 0: no batch axis */
  bool linear;                /* x @ w^T + bias, w [N, K] */
  bool gelu;                  /* linear: gelu of it */
  int64_t sb, sm, sk, sn;     /* the --check sizes */
} Case;

#define SQ(dt, nm, s) {nm, dt, 0, s, s, s, false, false, 0, 33, 70, 17}
#define LLM(m, k, n) {"llm", CF_BFLOAT16, 0, m, k, n, false, false, 0, 7, 45, 9}
static const Case cases[] = {
    SQ(CF_BFLOAT16, "square_bf16", 2048), SQ(CF_BFLOAT16, "square_bf16", 4096), SQ(CF_BFLOAT16, "square_bf16", 8192),
    SQ(CF_HALF, "square_f16", 2048),      SQ(CF_HALF, "square_f16", 4096),      SQ(CF_HALF, "square_f16", 8192),
    LLM(16, 4096, 4096),    LLM(128, 4096, 4096),    LLM(1024, 4096, 4096),    LLM(8192, 4096, 4096),
    LLM(16, 4096, 11008),   LLM(128, 4096, 11008),   LLM(1024, 4096, 11008),   LLM(8192, 4096, 11008),
    LLM(16, 11008, 4096),   LLM(128, 11008, 4096),   LLM(1024, 11008, 4096),   LLM(8192, 11008, 4096),
    {"batched", CF_BFLOAT16, 8, 1024, 1024, 1024, false, false, 3, 19, 33, 21},
    {"linear_gelu", CF_BFLOAT16, 0, 8192, 8192, 8192, true, true, 0, 65, 40, 31},
    {"linear_bias", CF_BFLOAT16, 0, 8192, 8192, 8192, true, false, 0, 65, 40, 31},
    SQ(CF_FLOAT, "square_f32", 2048),     SQ(CF_FLOAT, "square_f32", 4096),
    {"linear_gelu_f32", CF_FLOAT, 0, 2048, 1024, 2048, true, true, 0, 130, 40, 72},
};

/* Sizes of the operands (and the bias): a [b?, m, k]; w [k, n] (matmul) or [n, k]. */
static int shapes(const Case *c, bool small, int64_t s[3][3], int rank[3]) {
  int64_t b = small ? c->sb : c->b, m = small ? c->sm : c->m, k = small ? c->sk : c->k, n = small ? c->sn : c->n;
  int r = 0;
  if (b) s[0][r++] = b;
  s[0][r++] = m, s[0][r++] = k, rank[0] = r;
  rank[1] = 2, s[1][0] = c->linear ? n : k, s[1][1] = c->linear ? k : n;
  rank[2] = 1, s[2][0] = n;
  return c->linear ? 3 : 2;
}

static cf_fusion *build(const Case *c, int nin, const int rank[3]) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t[3];
  for (int i = 0; i < nin; i++) cf_fusion_add_input(f, t[i] = cf_tensor_symbolic(f, c->dt, rank[i]));
  cf_tv *y = c->linear ? cf_linear(f, t[0], t[1], t[2]) : cf_matmul(f, t[0], t[1]);
  cf_fusion_add_output(f, c->gelu ? cf_gelu(f, y) : y);
  return f;
}

typedef struct Run {
  cf_fusion_cache *cache;
  bool cuda;
  int nin;
  const DLTensor *ins[3];
  DLManagedTensor *out;
} Run;

static cf_status execute(void *ctx) {
  Run *r = ctx;
  return r->cuda ? cf_fusion_execute_async(r->cache, NULL, r->nin, r->ins, 1, &r->out)
                 : cf_fusion_execute(r->cache, r->nin, r->ins, 1, &r->out);
}

/* Output (bi, i, j) in double from the host inputs: sum_k a * w (+ bias, gelu). */
static double reference(const Case *c, DLManagedTensor *const *h, int64_t bi, int64_t i, int64_t j) {
  const DLTensor *a = &h[0]->dl_tensor, *w = &h[1]->dl_tensor;
  int64_t m = a->shape[a->ndim - 2], k = a->shape[a->ndim - 1], n = c->linear ? w->shape[0] : w->shape[1];
  double s = 0;
  for (int64_t kk = 0; kk < k; kk++)
    s += cf_tensor_get(a, (bi * m + i) * k + kk) * cf_tensor_get(w, c->linear ? j * k + kk : kk * n + j);
  if (!c->linear) return s;
  s += cf_tensor_get(&h[2]->dl_tensor, j);
  return c->gelu ? 0.5 * s * (1 + erf(s / sqrt(2.0))) : s;
}

/* SAMPLES outputs (spread over the batch, rows and columns) against reference(). */
static bool check_samples(const Case *c, DLManagedTensor *const *h, const DLTensor *out, char *msg, size_t len) {
  DLManagedTensor *got = cf_tensor_host(c->dt, out->ndim, out->shape);
  if (!got || cf_tensor_copy(&got->dl_tensor, out)) return snprintf(msg, len, "could not fetch the output"), false;
  int64_t nb = out->ndim == 3 ? out->shape[0] : 1, m = out->shape[out->ndim - 2], n = out->shape[out->ndim - 1];
  int64_t k = h[0]->dl_tensor.shape[h[0]->dl_tensor.ndim - 1];
  double tol = (c->dt == CF_FLOAT ? 1e-5 : 1e-2) * sqrt((double)k);
  bool ok = true;
  for (int s = 0; ok && s < SAMPLES; s++) {
    int64_t bi = (s * 7) % nb, i = (s * 2654435761u) % (uint64_t)m, j = (s * 40503u + 11) % (uint64_t)n;
    double want = reference(c, h, bi, i, j), g = cf_tensor_get(&got->dl_tensor, (bi * m + i) * n + j);
    if (fabs(g - want) > tol * (1 + fabs(want)))
      ok = false, snprintf(msg, len, "out[%lld][%lld][%lld] = %g, expected %g", (long long)bi, (long long)i,
                           (long long)j, g, want);
  }
  cf_tensor_free(got);
  return ok;
}

/* --check: every output against the reference evaluator. */
static bool check_all(cf_fusion *f, Run *r, char *msg, size_t len, cf_dtype dt) {
  DLManagedTensor *want = NULL;
  if (cf_fusion_evaluate(f, r->nin, r->ins, &want)) return snprintf(msg, len, "%s", cf_fusion_error(f)), false;
  bool ok = cf_tensor_allclose(&r->out->dl_tensor, &want->dl_tensor, dt == CF_FLOAT ? 1e-4 : 2e-2, 2e-2, msg, len);
  cf_tensor_free(want);
  return ok;
}

static void shape_text(int nin, int64_t s[3][3], const int rank[3], char *buf, size_t len) {
  (void)nin;
  if (rank[0] == 3) snprintf(buf, len, "%lldx%lldx%lld@%lldx%lld", (long long)s[0][0], (long long)s[0][1],
                             (long long)s[0][2], (long long)s[1][0], (long long)s[1][1]);
  else snprintf(buf, len, "%lldx%lld@%lldx%lld", (long long)s[0][0], (long long)s[0][1], (long long)s[1][0],
                (long long)s[1][1]);
}

static int run_case(const Case *c, const BuArgs *a, bool small, BuEvents *ev) {
  int64_t s[3][3];
  int rank[3], nin = shapes(c, small, s, rank), rc = 0;
  cf_fusion *f = build(c, nin, rank);
  Run r = {.cuda = !small, .nin = nin};
  DLManagedTensor *host[3] = {0}, *dev[3] = {0};
  for (int i = 0; i < nin; i++) {
    host[i] = cf_tensor_host(c->dt, rank[i], s[i]);
    cf_tensor_fill_random(&host[i]->dl_tensor, 3 + (uint64_t)i);
    dev[i] = host[i];
    if (r.cuda && (!(dev[i] = cf_tensor_device(c->dt, rank[i], s[i])) || cf_tensor_copy(&dev[i]->dl_tensor, &host[i]->dl_tensor)))
      return printf("cfuser %s: could not copy the inputs\n", c->name), 1;
    r.ins[i] = &dev[i]->dl_tensor;
  }
  char shape[96], msg[512] = "", scheds[128] = "";
  shape_text(nin, s, rank, shape, sizeof shape);
  r.cache = cf_fusion_cache_create(f, &(cf_executor_options){.backend = r.cuda ? CF_BACKEND_CUDA : CF_BACKEND_HOST});
  cf_status st = execute(&r);
  st = st ? st : cf_fusion_cache_synchronize(r.cache);
  if (st) rc = 1, printf("cfuser %s %s failed: %s\n", c->name, shape, cf_fusion_cache_error(r.cache));
  for (int i = 0; !rc && i < cf_fusion_cache_last_segments(r.cache); i++)
    snprintf(scheds + strlen(scheds), sizeof scheds - strlen(scheds), "%s%s", i ? "," : "",
             cf_fusion_cache_last_scheduler(r.cache, i));
  bool ok = !rc && (!small || check_all(f, &r, msg, sizeof msg, c->dt)) &&
            check_samples(c, host, &r.out->dl_tensor, msg, sizeof msg);
  if (!rc && !ok) rc = 1, printf("cfuser %s %s wrong: %s\n", c->name, shape, msg);
  double us = rc ? -1 : bu_time_us(small ? NULL : ev, execute, &r, small ? 3 : a->iters, a->mean, &st);
  if (!rc && st) rc = 1, printf("cfuser %s %s failed: %s\n", c->name, shape, cf_fusion_cache_error(r.cache));
  double flops = 2.0 * (double)(rank[0] == 3 ? s[0][0] : 1) * (double)s[0][rank[0] - 2] * (double)s[0][rank[0] - 1] *
                 (double)(c->linear ? s[1][0] : s[1][1]);
  if (!rc) printf("cfuser %s %s time_us=%.1f TFLOPS=%.2f schedulers=%s check=ok\n", c->name, shape, us,
                  flops / us / 1e6, scheds);
  cf_fusion_cache_destroy(r.cache);
  for (int i = 0; i < nin; i++) {
    if (dev[i] != host[i]) cf_tensor_free(dev[i]);
    cf_tensor_free(host[i]);
  }
  cf_tensor_free(r.out);
  cf_fusion_destroy(f);
  return rc;
}

/* CFUSER_BENCH_SHAPES: "MxKxN" items separated by commas, bfloat16 x [M, K] @ w [K, N]. */
static int run_shapes(const char *list, const BuArgs *a, bool small, BuEvents *ev) {
  int rc = 0;
  for (const char *p = list; *p;) {
    long long m, k, n;
    int used = 0;
    if (sscanf(p, "%lldx%lldx%lld%n", &m, &k, &n, &used) != 3 || m < 1 || k < 1 || n < 1)
      return printf("bench: CFUSER_BENCH_SHAPES: expected MxKxN[,MxKxN...] at \"%s\"\n", p), 1;
    Case c = {"shape", CF_BFLOAT16, 0, m, k, n, false, false, 0, 7, 45, 9};
    rc |= run_case(&c, a, small, ev);
    p += used;
    p += *p == ',';
  }
  return rc;
}

int main(int argc, char **argv) {
  BuArgs a = bu_parse_args(argc, argv, 20);
  bool small = a.small;
  for (int i = 1; i < argc; i++) small |= !strcmp(argv[i], "--check");
  int skip = small ? 0 : bu_skip_without_cuda();
  if (skip) return skip;
  BuEvents ev;
  if (!small) cf_tensor_free(cf_tensor_device(CF_FLOAT, 1, (int64_t[]){1})); /* events need cfuser's context */
  if (!small && !bu_events_init(&ev)) return printf("bench: no CUDA events\n"), 1;
  const char *only = getenv("CFUSER_BENCH_ONLY"), *lt = only ? strchr(only, '<') : NULL;
  int64_t max_m = lt ? strtoll(lt + 1, NULL, 10) : INT64_MAX; /* "<name><M": its cases of at most M rows */
  int rc = 0;
  const char *list = getenv("CFUSER_BENCH_SHAPES");
  if (list && *list) {
    rc = run_shapes(list, &a, small, &ev);
    if (!small) bu_events_destroy(&ev);
    return rc;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && strcmp(only, cases[i].name) && !(cases[i].m <= max_m && strstr(only, cases[i].name) == only &&
                                                  only[strlen(cases[i].name)] == '<'))
      continue;
    if (small && i > 0 && !strcmp(cases[i].name, cases[i - 1].name) && cases[i].sm == cases[i - 1].sm) continue;
    rc |= run_case(&cases[i], &a, small, &ev);
  }
  if (!small) bu_events_destroy(&ev);
  return rc;
}
