/* bench/define_and_run.c: the reference fusions of issue 11, each defined unscheduled and
 * run through define and run (cf_fusion_execute), with constant sizes and again with
 * symbolic sizes (cf_tensor_symbolic), timed with CUDA events on the GPU:
 *   row_sum, col_sum         16384 x 16384 float
 *   softmax (f32, bf16)      16384 x 4096, computed in float
 *   layernorm (f32, bf16)    16384 x 4096 forward, weight and bias
 *   rmsnorm                  16384 x 4096 float, weight
 *   transpose                8192 x 8192 float
 *   relu(a*b+c)              2^28 floats
 *   bias_gelu                gelu(x + bias) over 16384 x 4096 floats, bias a row broadcast
 *   copy                     set(x) over 2^28 floats (what define and run makes of a copy)
 *   batchnorm                512 x 65536 float forward in training mode: per-column
 *                            mean and variance over the 512 rows, weight and bias (the
 *                            outer persistent scheduler)
 * Per fusion and kind of sizes it prints
 *   cfuser <name> <shape> constant time_us=<t> GB/s=<g> segments=<n> schedulers=<a,b>
 * then `cfuser <name> <shape> symbolic/constant=<ratio> check=ok` (issue 11: the symbolic
 * fusion within 5% of the constant one), or `... refused: <reason>` when no scheduler
 * takes it (the other fusions still run); last, the device's copy bandwidth
 * (cuMemcpyDtoD through cf_tensor_copy), the 90% reference; after each case, `copy of its
 * bytes <name> <shape> time_us= GB/s=`, a copy of the bytes the case moves (the ceiling at
 * that size: launch and the last wave's tail weigh more at 128 MiB than at 2 GiB). GB/s counts every input read
 * once and every output written once; time is the median (or, with --mean, the mean) of
 * the CUDA-event times of `iterations` warm runs. Each result is checked once against the
 * reference evaluator on its first rows (a CPU loop on a corner for col_sum and
 * transpose). bench/define_and_run_torch.py prints torch eager and torch.compile for the
 * same work; bench/run_define_and_run.sh runs both and prints one table.
 * Usage: bench_define_and_run [iterations] [--mean] [--small]. --small runs small sizes on
 * the host backend (wall-clock times; a ctest), anywhere; without it a GPU is needed
 * (exit 77 without one). Exit status 1 when a result is wrong or a run fails otherwise.
 * CFUSER_BENCH_ONLY=<name> runs that fusion alone (and the copy). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum { CHECK_ROWS = 64, CHECK_CORNER = 256, MAX_IN = 4 };

typedef enum { CHECK_BY_ROWS, CHECK_COLSUM, CHECK_TRANSPOSE, CHECK_BNORM } CheckKind;

typedef struct Case Case;
struct Case {
  const char *name;
  cf_dtype dt;
  int rank;                        /* of the main input: 1 or 2 */
  int64_t full[2], small[2];       /* its sizes */
  cf_tv *(*math)(cf_fusion *f, const Case *c, const int64_t *sizes, bool symbolic);
  CheckKind check;
  double rtol, atol;
};

/* A fusion input of the case's dtype: the main shape, or (rank 1 in a 2-D case) a row. */
static cf_tv *input(cf_fusion *f, const Case *c, int rank, const int64_t *sizes, bool symbolic) {
  const int64_t *s = rank == c->rank ? sizes : sizes + 1;
  cf_tv *t = symbolic ? cf_tensor_symbolic(f, c->dt, rank) : cf_tensor_concrete(f, c->dt, rank, s);
  cf_fusion_add_input(f, t);
  return t;
}

static cf_tv *widen(cf_fusion *f, cf_tv *x) { return cf_tv_dtype(x) == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT); }
static cf_tv *narrow(cf_fusion *f, cf_tv *y, cf_dtype dt) { return dt == CF_FLOAT ? y : cf_cast(f, y, dt); }
static cf_tv *col_bcast(cf_fusion *f, cf_tv *r) { return cf_broadcast(f, r, 2, (bool[]){false, true}); }
static cf_tv *row_bcast(cf_fusion *f, cf_tv *w) { return cf_broadcast(f, w, 2, (bool[]){true, false}); }

static cf_tv *row_sum(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  return cf_sum(f, input(f, c, 2, s, sym), 1, (int[]){1});
}

static cf_tv *col_sum(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  return cf_sum(f, input(f, c, 2, s, sym), 1, (int[]){0});
}

static cf_tv *softmax(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *x = widen(f, input(f, c, 2, s, sym));
  cf_tv *e = cf_exp(f, cf_sub(f, x, col_bcast(f, cf_max_reduce(f, x, 1, (int[]){1}))));
  return narrow(f, cf_div(f, e, col_bcast(f, cf_sum(f, e, 1, (int[]){1}))), c->dt);
}

/* The mean over the rows (over a symbolic extent, a division by its run-time size). */
static cf_tv *row_mean(cf_fusion *f, cf_tv *x) { return cf_mean(f, x, 1, (int[]){1}); }

static cf_tv *layernorm(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *x = widen(f, input(f, c, 2, s, sym));
  cf_tv *w = widen(f, input(f, c, 1, s, sym)), *b = widen(f, input(f, c, 1, s, sym));
  cf_tv *d = cf_sub(f, x, col_bcast(f, row_mean(f, x)));
  cf_tv *var = row_mean(f, cf_mul(f, d, d));
  cf_tv *y = cf_mul(f, d, col_bcast(f, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5))));
  return narrow(f, cf_add(f, cf_mul(f, y, row_bcast(f, w)), row_bcast(f, b)), c->dt);
}

static cf_tv *rmsnorm(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *x = widen(f, input(f, c, 2, s, sym)), *w = widen(f, input(f, c, 1, s, sym));
  cf_tv *ms = row_mean(f, cf_mul(f, x, x));
  cf_tv *y = cf_mul(f, x, col_bcast(f, cf_rsqrt(f, cf_add_scalar(f, ms, 1e-6))));
  return narrow(f, cf_mul(f, y, row_bcast(f, w)), c->dt);
}

static cf_tv *transpose(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  return cf_transpose(f, input(f, c, 2, s, sym), 0, 1);
}

static cf_tv *relu_mul_add(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *a = input(f, c, 1, s, sym), *b = input(f, c, 1, s, sym), *d = input(f, c, 1, s, sym);
  return cf_relu(f, cf_add(f, cf_mul(f, a, b), d));
}

static cf_tv *bias_gelu(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *x = input(f, c, 2, s, sym), *bias = input(f, c, 1, s, sym);
  return cf_gelu(f, cf_add(f, x, row_bcast(f, bias)));
}

static cf_tv *copy(cf_fusion *f, const Case *c, const int64_t *s, bool sym) { return cf_set(f, input(f, c, 1, s, sym)); }

/* Batch norm forward (training): statistics of each column over the rows. */
static cf_tv *batchnorm(cf_fusion *f, const Case *c, const int64_t *s, bool sym) {
  cf_tv *x = input(f, c, 2, s, sym), *w = input(f, c, 1, s, sym), *b = input(f, c, 1, s, sym);
  cf_tv *d = cf_sub(f, x, row_bcast(f, cf_mean(f, x, 1, (int[]){0})));
  cf_tv *var = cf_mean(f, cf_mul(f, d, d), 1, (int[]){0});
  cf_tv *y = cf_mul(f, d, row_bcast(f, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5))));
  return cf_add(f, cf_mul(f, y, row_bcast(f, w)), row_bcast(f, b));
}

#define SQ 16384, 16384
#define NORM 16384, 4096
static const Case cases[] = {
    {"row_sum", CF_FLOAT, 2, {SQ}, {8, 4096}, row_sum, CHECK_BY_ROWS, 1e-4, 1e-3},
    {"col_sum", CF_FLOAT, 2, {SQ}, {1100, 40}, col_sum, CHECK_COLSUM, 1e-4, 1e-3},
    {"softmax_f32", CF_FLOAT, 2, {NORM}, {16, 1024}, softmax, CHECK_BY_ROWS, 1e-4, 1e-7},
    {"softmax_bf16", CF_BFLOAT16, 2, {NORM}, {16, 1024}, softmax, CHECK_BY_ROWS, 1e-2, 1e-5},
    {"layernorm_f32", CF_FLOAT, 2, {NORM}, {16, 1024}, layernorm, CHECK_BY_ROWS, 1e-3, 1e-4},
    {"layernorm_bf16", CF_BFLOAT16, 2, {NORM}, {16, 1024}, layernorm, CHECK_BY_ROWS, 1e-2, 1e-2},
    {"rmsnorm_f32", CF_FLOAT, 2, {NORM}, {16, 1024}, rmsnorm, CHECK_BY_ROWS, 1e-3, 1e-4},
    {"transpose", CF_FLOAT, 2, {8192, 8192}, {96, 64}, transpose, CHECK_TRANSPOSE, 0, 0},
    {"relu_mul_add", CF_FLOAT, 1, {1 << 28}, {5000}, relu_mul_add, CHECK_BY_ROWS, 1e-6, 1e-6},
    {"bias_gelu", CF_FLOAT, 2, {NORM}, {16, 1024}, bias_gelu, CHECK_BY_ROWS, 1e-5, 1e-6},
    {"copy", CF_FLOAT, 1, {1 << 28}, {5000}, copy, CHECK_BY_ROWS, 0, 0},
    {"batchnorm", CF_FLOAT, 2, {512, 65536}, {37, 300}, batchnorm, CHECK_BNORM, 1e-3, 1e-4},
};

static cf_fusion *build(const Case *c, const int64_t *sizes, bool symbolic) {
  cf_fusion *f = cf_fusion_create();
  cf_fusion_add_output(f, c->math(f, c, sizes, symbolic));
  return f;
}

/* What one case runs on: host inputs (kept for the check), the device's (or, on the host
 * backend, the same) inputs, and the output the timed calls are given. */
typedef struct Run {
  const Case *c;
  const int64_t *sizes;
  bool cuda;
  int nin;
  DLManagedTensor *host[MAX_IN], *dev[MAX_IN], *out;
  const DLTensor *ins[MAX_IN];
  cf_fusion_cache *cache; /* the one being timed */
} Run;

static cf_status execute(void *ctx) {
  Run *r = ctx;
  return r->cuda ? cf_fusion_execute_async(r->cache, NULL, r->nin, r->ins, 1, &r->out)
                 : cf_fusion_execute(r->cache, r->nin, r->ins, 1, &r->out);
}

static int make_inputs(Run *r, cf_fusion *f) {
  r->nin = cf_fusion_num_inputs(f);
  for (int i = 0; i < r->nin; i++) {
    int rank = cf_tv_logical_rank(cf_fusion_input(f, i));
    const int64_t *s = rank == r->c->rank ? r->sizes : r->sizes + 1;
    r->host[i] = cf_tensor_host(r->c->dt, rank, s);
    if (!r->host[i] || cf_tensor_fill_random(&r->host[i]->dl_tensor, 1 + (uint64_t)i)) return 1;
    r->dev[i] = r->host[i];
    if (r->cuda) {
      r->dev[i] = cf_tensor_device(r->c->dt, rank, s);
      if (!r->dev[i] || cf_tensor_copy(&r->dev[i]->dl_tensor, &r->host[i]->dl_tensor)) return 1;
    }
    r->ins[i] = &r->dev[i]->dl_tensor;
  }
  return 0;
}

static void free_run(Run *r) {
  for (int i = 0; i < r->nin; i++) {
    if (r->dev[i] != r->host[i]) cf_tensor_free(r->dev[i]);
    cf_tensor_free(r->host[i]);
  }
  cf_tensor_free(r->out);
}

/* t's first k rows (a view: same data). */
static DLTensor rows_view(const DLTensor *t, int64_t k) {
  DLTensor v = *t;
  v.shape = malloc((size_t)t->ndim * sizeof *v.shape);
  memcpy(v.shape, t->shape, (size_t)t->ndim * sizeof *v.shape);
  if (v.shape[0] > k) v.shape[0] = k;
  v.strides = NULL;
  return v;
}

/* The first k rows of a device (or host) tensor, as a new host tensor. */
static DLManagedTensor *fetch_rows(const DLTensor *t, cf_dtype dt, int64_t k) {
  DLTensor v = rows_view(t, k);
  DLManagedTensor *h = cf_tensor_host(dt, v.ndim, v.shape);
  if (h && cf_tensor_copy(&h->dl_tensor, &v)) cf_tensor_free(h), h = NULL;
  free(v.shape);
  return h;
}

/* The reference evaluator on the first rows of the inputs of the main shape (the others
 * whole) against the first rows of the output. */
static bool check_rows(const Run *r, cf_fusion *sym, const DLManagedTensor *got, char *msg, size_t len) {
  DLTensor views[MAX_IN];
  const DLTensor *vin[MAX_IN];
  int64_t k = CHECK_ROWS * (r->c->rank == 1 ? 1024 : 1);
  for (int i = 0; i < r->nin; i++) {
    const DLTensor *h = &r->host[i]->dl_tensor;
    views[i] = rows_view(h, h->ndim == r->c->rank ? k : h->shape[0]);
    vin[i] = &views[i];
  }
  DLManagedTensor *want = NULL;
  bool ok = !cf_fusion_evaluate(sym, r->nin, vin, &want);
  if (!ok) snprintf(msg, len, "evaluator: %s", cf_fusion_error(sym));
  ok = ok && cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, r->c->rtol, r->c->atol, msg, len);
  for (int i = 0; i < r->nin; i++) free(views[i].shape);
  cf_tensor_free(want);
  return ok;
}

/* A CPU loop over the first columns: each sum in double against the output. */
static bool check_colsum(const Run *r, const DLManagedTensor *got, char *msg, size_t len) {
  const DLTensor *x = &r->host[0]->dl_tensor;
  int64_t rows = x->shape[0], cols = x->shape[1];
  for (int64_t j = 0; j < cols && j < CHECK_CORNER; j++) {
    double s = 0, g = cf_tensor_get(&got->dl_tensor, j);
    for (int64_t i = 0; i < rows; i++) s += cf_tensor_get(x, i * cols + j);
    if (fabs(g - s) > r->c->atol + r->c->rtol * fabs(s))
      return snprintf(msg, len, "column %lld: %g, expected %g", (long long)j, g, s), false;
  }
  return true;
}

/* A CPU loop over the first columns (all rows, in double): the output's first rows. */
static bool check_bnorm(const Run *r, const DLManagedTensor *got, char *msg, size_t len) {
  const DLTensor *x = &r->host[0]->dl_tensor, *w = &r->host[1]->dl_tensor, *b = &r->host[2]->dl_tensor;
  int64_t rows = x->shape[0], cols = x->shape[1], k = got->dl_tensor.shape[0];
  for (int64_t j = 0; j < cols && j < CHECK_ROWS; j++) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < rows; i++) mean += cf_tensor_get(x, i * cols + j);
    mean /= (double)rows;
    for (int64_t i = 0; i < rows; i++) {
      double d = cf_tensor_get(x, i * cols + j) - mean;
      var += d * d;
    }
    var /= (double)rows;
    for (int64_t i = 0; i < k; i++) {
      double want = (cf_tensor_get(x, i * cols + j) - mean) / sqrt(var + 1e-5) * cf_tensor_get(w, j) + cf_tensor_get(b, j);
      double g = cf_tensor_get(&got->dl_tensor, i * cols + j);
      if (fabs(g - want) > r->c->atol + r->c->rtol * fabs(want))
        return snprintf(msg, len, "out[%lld][%lld]: %g, expected %g", (long long)i, (long long)j, g, want), false;
    }
  }
  return true;
}

/* The k x k corner of the output (its first k rows, fetched) against the input's. */
static bool check_transpose(const Run *r, const DLManagedTensor *got, char *msg, size_t len) {
  const DLTensor *x = &r->host[0]->dl_tensor, *y = &got->dl_tensor;
  int64_t k = y->shape[0] < CHECK_CORNER ? y->shape[0] : CHECK_CORNER;
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < k && j < y->shape[1]; j++)
      if (cf_tensor_get(y, i * y->shape[1] + j) != cf_tensor_get(x, j * x->shape[1] + i))
        return snprintf(msg, len, "out[%lld][%lld] is not in[%lld][%lld]", (long long)i, (long long)j,
                        (long long)j, (long long)i), false;
  return true;
}

/* The output of the last run against the reference; false with the reason in msg. */
static bool check(const Run *r, cf_fusion *sym, char *msg, size_t len) {
  const Case *c = r->c;
  int64_t k = c->check == CHECK_COLSUM ? r->out->dl_tensor.shape[0]
              : c->check == CHECK_TRANSPOSE ? CHECK_CORNER
              : CHECK_ROWS * (c->rank == 1 ? 1024 : 1);
  DLManagedTensor *got = fetch_rows(&r->out->dl_tensor, c->dt, k);
  if (!got) return snprintf(msg, len, "could not copy the output to the host"), false;
  bool ok = c->check == CHECK_COLSUM      ? check_colsum(r, got, msg, len)
            : c->check == CHECK_TRANSPOSE ? check_transpose(r, got, msg, len)
            : c->check == CHECK_BNORM     ? check_bnorm(r, got, msg, len)
                                          : check_rows(r, sym, got, msg, len);
  cf_tensor_free(got);
  return ok;
}

static void print_shape(const Case *c, const int64_t *s, char *buf, size_t len) {
  if (c->rank == 1) snprintf(buf, len, "%lld", (long long)s[0]);
  else snprintf(buf, len, "%lldx%lld", (long long)s[0], (long long)s[1]);
}

static double bytes_moved(const Run *r) {
  double b = 0;
  for (int i = 0; i < r->nin; i++) b += (double)cf_tensor_numel(r->ins[i]) * (double)cf_dtype_size(r->c->dt);
  return b + (double)cf_tensor_numel(&r->out->dl_tensor) * (double)cf_dtype_size(r->c->dt);
}

/* The segments' schedulers of the cache's last call, "a,b". */
static void schedulers(cf_fusion_cache *cache, char *buf, size_t len) {
  buf[0] = 0;
  for (int i = 0; i < cf_fusion_cache_last_segments(cache); i++) {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", i ? "," : "", cf_fusion_cache_last_scheduler(cache, i));
  }
}

/* The first calls with f (compile; output allocated, then given), the check, the timing.
 * 0 timed and right (*us set), 1 failed or wrong, 2 refused by every scheduler. */
static int run_variant(Run *r, cf_fusion *f, cf_fusion *sym, const char *kind, const char *shape, BuEvents *ev,
                       const BuArgs *a, double *us) {
  char msg[512] = "", scheds[256];
  r->cache = cf_fusion_cache_create(f, &(cf_executor_options){.backend = r->cuda ? CF_BACKEND_CUDA : CF_BACKEND_HOST});
  cf_status s = r->cache ? execute(r) : CF_ERR_OUT_OF_MEMORY;
  s = s ? s : execute(r); /* the signature with the output given */
  s = s ? s : cf_fusion_cache_synchronize(r->cache);
  int rc = s == CF_ERR_UNSUPPORTED ? 2 : s ? 1 : 0;
  if (s) printf("cfuser %s %s %s %s: %s\n", kind, r->c->name, shape, rc == 2 ? "refused" : "failed",
                r->cache ? cf_fusion_cache_error(r->cache) : "out of memory");
  if (!rc && !check(r, sym, msg, sizeof msg)) printf("cfuser %s %s %s wrong: %s\n", kind, r->c->name, shape, msg), rc = 1;
  if (!rc) {
    *us = bu_time_us(ev, execute, r, a->iters, a->mean, &s);
    if (s) printf("cfuser %s %s %s failed: %s\n", kind, r->c->name, shape, cf_fusion_cache_error(r->cache)), rc = 1;
  }
  if (!rc) {
    schedulers(r->cache, scheds, sizeof scheds);
    printf("cfuser %s %s %s time_us=%.1f GB/s=%.0f segments=%d schedulers=%s\n", kind, r->c->name, shape, *us,
           bu_gbps(bytes_moved(r), *us), cf_fusion_cache_last_segments(r->cache), scheds);
  }
  cf_fusion_cache_destroy(r->cache);
  return rc;
}

/* A copy of as many bytes as the case moves (read plus written), timed as the case is:
 * the bandwidth a memory-bound kernel of this size can reach at best (at 128 MiB the tail
 * of the last wave and the launch cost more than at the 2 GiB of the device copy line). */
static void same_bytes_copy(const Run *r, const char *shape, const BuArgs *a, BuEvents *ev) {
  cf_status s;
  double bytes = bytes_moved(r), us = bu_copy_us((int64_t)(bytes / 8), a->iters, a->mean, ev, r->cuda, &s);
  if (!s) printf("copy of its bytes %s %s time_us=%.1f GB/s=%.0f\n", r->c->name, shape, us, bu_gbps(bytes, us));
}

/* One fusion, constant then symbolic; 1 when either failed or was wrong. */
static int bench_case(const Case *c, const BuArgs *a, BuEvents *ev, bool cuda) {
  Run r = {.c = c, .sizes = a->small ? c->small : c->full, .cuda = cuda};
  char shape[64];
  print_shape(c, r.sizes, shape, sizeof shape);
  cf_fusion *fc = build(c, r.sizes, false), *fs = build(c, r.sizes, true);
  int rc = cf_fusion_status(fc) || cf_fusion_status(fs) || make_inputs(&r, fs);
  if (rc) printf("cfuser constant %s %s failed: %s\n", c->name, shape,
                 cf_fusion_status(fc) ? cf_fusion_error(fc) : cf_fusion_status(fs) ? cf_fusion_error(fs) : "out of memory");
  double t[2] = {0, 0};
  int v[2] = {1, 1};
  for (int k = 0; k < 2 && !rc; k++) v[k] = run_variant(&r, k ? fs : fc, fs, k ? "symbolic" : "constant", shape, ev, a, &t[k]);
  if (!v[0]) same_bytes_copy(&r, shape, a, ev);
  if (!v[0] && !v[1])
    printf("cfuser symbolic/constant %s %s ratio=%.3f%s\n", c->name, shape, t[1] / t[0],
           !cuda || t[1] <= 1.05 * t[0] ? "" : " (over 5%)");
  free_run(&r);
  cf_fusion_destroy(fc), cf_fusion_destroy(fs);
  return rc || v[0] == 1 || v[1] == 1;
}

int main(int argc, char **argv) {
  BuArgs a = bu_parse_args(argc, argv, 50);
  if (a.small && a.iters == 50) a.iters = 2;
  bool cuda = !a.small;
  if (cuda && bu_skip_without_cuda()) return 77;
  BuEvents events, *ev = NULL;
  int rc = 0;
  if (cuda) {
    DLManagedTensor *t = cf_tensor_device(CF_FLOAT, 1, (int64_t[]){1}); /* makes cfuser's context current */
    cf_tensor_free(t);
    if (!bu_events_init(&events)) return 1;
    ev = &events;
  }
  printf("# define and run, %s, %s of %d runs%s\n", cuda ? "CUDA events" : "host backend (wall-clock)",
         a.mean ? "mean" : "median", a.iters, a.small ? ", small sizes" : "");
  const char *only = getenv("CFUSER_BENCH_ONLY"); /* one fusion by name, e.g. while tuning */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && *only && strcmp(only, cases[i].name)) continue;
    rc |= bench_case(&cases[i], &a, ev, cuda);
    fflush(stdout);
  }
  rc |= bu_copy_bandwidth(a.small ? 1 << 20 : (int64_t)1 << 28, a.iters, a.mean, ev, cuda);
  if (ev) bu_events_destroy(ev);
  return rc;
}
