/* bench/reduction_sweep.c: the reduction scheduler's sweep. Row and column sums and maxima
 * (x.sum(1), x.sum(0), x.amax(1), x.amax(0)) of float, bfloat16 and half matrices of 46
 * shapes (rows and columns from 1 to 2^20, primes, vocabulary sizes 32000 / 50257 / 128256,
 * model hidden sizes 768 to 12288, the 100 x 1000000 and 50000 x 100), each
 * defined unscheduled and run through define and run (cf_fusion_execute), timed with CUDA
 * events on the GPU. Per case it prints
 *   cfuser <kind> <dtype> <rows>x<cols> time_us=<t> GB/s=<g> kernels=<n> plan=<params>
 * (plan: the reduction scheduler's parameters, read from CFUSER_DUMP=segments of the first
 * call; `-` when another scheduler ran), or `... failed: <reason>` / `... wrong: <reason>`;
 * last, the device's copy bandwidth. GB/s counts the input read once and the output
 * written once; time is the median (or, with --mean, the mean) of the CUDA-event times of
 * `iterations` warm runs. Each result is checked against a CPU loop in double on its
 * first rows (or columns). bench/reduction_sweep_torch.py prints torch eager and
 * torch.compile for the same cases; bench/run_reduction_sweep.sh runs both and prints one
 * Markdown table (with the geometric mean against torch.compile).
 * Usage: bench_reduction_sweep [iterations] [--mean] [--small] [--dtypes float32,bfloat16,float16]
 *        [--kinds row_sum,col_sum,row_max,col_max]
 * --small runs 7 small shapes on the host backend (wall-clock times; a ctest), anywhere;
 * without it a GPU is needed (exit 77 without one). Exit status 1 when a result is wrong
 * or a run fails. */
#define _POSIX_C_SOURCE 200809L
#include <cfuser.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

enum { CHECK_LINES = 8, PLAN_MAX = 160 };

typedef struct Kind {
  const char *name;
  int axis;  /* reduced: 1 a row, 0 a column */
  bool max;
} Kind;

static const Kind kinds[] = {{"row_sum", 1, false}, {"col_sum", 0, false}, {"row_max", 1, true}, {"col_max", 0, true}};

typedef struct Dtype {
  const char *name; /* torch's */
  cf_dtype dt;
  double rtol, atol_per_sqrt_n; /* a sum's tolerance: rtol |want| + atol sqrt(n) */
} Dtype;

static const Dtype dtypes[] = {
    {"float32", CF_FLOAT, 1e-5, 1e-5}, {"bfloat16", CF_BFLOAT16, 1e-2, 1e-2}, {"float16", CF_HALF, 2e-3, 2e-3}};

#define M20 (1 << 20)
static const int64_t shapes[][2] = {
    {1, 1}, {7, 3}, {1, M20}, {M20, 1}, {2, M20}, {M20, 2}, {16, M20}, {M20, 16}, {100, 1000000}, {50000, 100},
    {262144, 64}, {M20, 32}, {M20, 3}, {3, M20}, {32, M20}, {64, 64}, {512, 512}, {1024, 1024}, {4096, 4096},
    {16384, 16384}, {8192, 768}, {8192, 1024}, {8192, 2048}, {8192, 4096}, {4096, 5120}, {4096, 8192},
    {2048, 12288}, {1024, 16384}, {4096, 32000}, {2048, 50257}, {1024, 128256}, {32, 128256}, {128256, 32},
    {50257, 768}, {32000, 4096}, {997, 1009}, {8191, 8191}, {65537, 127}, {127, 65537}, {131071, 17},
    {17, 131071}, {3, 1000003}, {1000003, 3}, {257, 4099}, {4099, 257}, {12288, 12288},
};
static const int64_t small_shapes[][2] = {{1, 1}, {7, 3}, {1, 3000}, {3000, 1}, {2, 1031}, {1031, 2}, {16, 40}};

typedef struct Opts {
  BuArgs a;
  char dtypes[128], kinds[128]; /* comma-separated filters; "" is all */
} Opts;

static bool selected(const char *list, const char *name) {
  if (!*list) return true;
  size_t n = strlen(name);
  for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
    if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return true;
  return false;
}

static Opts parse(int argc, char **argv) {
  Opts o = {bu_parse_args(argc, argv, 20), "", ""};
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--dtypes")) snprintf(o.dtypes, sizeof o.dtypes, "%s", argv[i + 1]);
    if (!strcmp(argv[i], "--kinds")) snprintf(o.kinds, sizeof o.kinds, "%s", argv[i + 1]);
  }
  if (o.a.small && o.a.iters == 20) o.a.iters = 1;
  return o;
}

/* ---- one case ------------------------------------------------------------------------------ */

/* What the cases of one input share: its host copy (for the checks) and the tensor runs
 * read (the device's copy on CUDA). */
typedef struct Input {
  const Dtype *d;
  int64_t rows, cols;
  bool cuda;
  DLManagedTensor *host, *dev;
} Input;

typedef struct Run {
  const Input *in;
  cf_fusion_cache *cache;
  const DLTensor *x;
  DLManagedTensor *out;
} Run;

static cf_status execute(void *ctx) {
  Run *r = ctx;
  return r->in->cuda ? cf_fusion_execute_async(r->cache, NULL, 1, &r->x, 1, &r->out)
                     : cf_fusion_execute(r->cache, 1, &r->x, 1, &r->out);
}

/* The reduction scheduler's parameters in a CFUSER_DUMP=segments report, or "-". */
static void plan_of(const char *dump, char *plan) {
  const char *p = strstr(dump, "scheduler reduction (");
  snprintf(plan, PLAN_MAX, "-");
  if (!p) return;
  p += strlen("scheduler reduction (");
  const char *e = strstr(p, ") ===");
  int n = e ? (int)(e - p) : 0;
  for (int i = 0; i < n && i < PLAN_MAX - 1; i++) plan[i] = p[i] == ' ' ? ',' : p[i];
  plan[n < PLAN_MAX - 1 ? n : PLAN_MAX - 1] = 0;
}

/* The first call (the compile), with the segments report captured from stderr. */
static cf_status first_call(Run *r, char *plan) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  if (tmp && saved >= 0) dup2(fileno(tmp), 2);
  setenv("CFUSER_DUMP", "segments", 1);
  cf_status s = execute(r);
  unsetenv("CFUSER_DUMP");
  fflush(stderr);
  if (saved >= 0) dup2(saved, 2), close(saved);
  char buf[8192] = "";
  if (tmp) {
    rewind(tmp);
    buf[fread(buf, 1, sizeof buf - 1, tmp)] = 0;
    fclose(tmp);
  }
  plan_of(buf, plan);
  return s;
}

/* The CPU reference of output element k (a row or a column), in double. */
static double reference(const Input *in, const Kind *k, int64_t i) {
  const DLTensor *x = &in->host->dl_tensor;
  int64_t n = k->axis == 1 ? in->cols : in->rows;
  double acc = k->max ? -INFINITY : 0;
  for (int64_t j = 0; j < n; j++) {
    double v = cf_tensor_get(x, k->axis == 1 ? i * in->cols + j : j * in->cols + i);
    acc = k->max ? (v > acc ? v : acc) : acc + v;
  }
  return acc;
}

/* The first CHECK_LINES results (all of them on the host) against the reference. */
static bool check(const Run *r, const Kind *k, char *msg, size_t len) {
  const Input *in = r->in;
  int64_t nout = k->axis == 1 ? in->rows : in->cols, n = k->axis == 1 ? in->cols : in->rows;
  int64_t lines = in->cuda && nout > CHECK_LINES ? CHECK_LINES : nout;
  DLManagedTensor *got = cf_tensor_host(in->d->dt, 1, &nout);
  if (!got || cf_tensor_copy(&got->dl_tensor, &r->out->dl_tensor))
    return cf_tensor_free(got), snprintf(msg, len, "could not read the output"), false;
  bool ok = true;
  for (int64_t i = 0; i < lines && ok; i++) {
    double want = reference(in, k, i), g = cf_tensor_get(&got->dl_tensor, i);
    double tol = k->max ? 0 : in->d->rtol * fabs(want) + in->d->atol_per_sqrt_n * sqrt((double)n);
    ok = fabs(g - want) <= tol;
    if (!ok) snprintf(msg, len, "output %lld: %.9g, expected %.9g", (long long)i, g, want);
  }
  cf_tensor_free(got);
  return ok;
}

/* Compiles (the plan captured), checks and times one kind on one input; 1 on failure. */
static int run_case(const Input *in, const Kind *k, const Opts *o, BuEvents *ev) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_symbolic(f, in->d->dt, 2); /* as a Python user's; define and run makes it concrete */
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, k->max ? cf_max_reduce(f, x, 1, (int[]){k->axis}) : cf_sum(f, x, 1, (int[]){k->axis}));
  Run r = {in, cf_fusion_cache_create(f, &(cf_executor_options){.backend = in->cuda ? CF_BACKEND_CUDA : CF_BACKEND_HOST}),
           &in->dev->dl_tensor, NULL};
  char plan[PLAN_MAX] = "-", msg[256] = "", shape[64];
  snprintf(shape, sizeof shape, "%lldx%lld", (long long)in->rows, (long long)in->cols);
  cf_status s = r.cache ? first_call(&r, plan) : CF_ERR_OUT_OF_MEMORY;
  s = s ? s : cf_fusion_cache_synchronize(r.cache);
  int rc = 0;
  if (s) printf("cfuser %s %s %s failed: %s\n", k->name, in->d->name, shape, r.cache ? cf_fusion_cache_error(r.cache) : "out of memory"), rc = 1;
  if (!rc && !check(&r, k, msg, sizeof msg)) printf("cfuser %s %s %s wrong: %s\n", k->name, in->d->name, shape, msg), rc = 1;
  if (!rc) {
    double us = bu_time_us(ev, execute, &r, o->a.iters, o->a.mean, &s);
    double bytes = (double)cf_dtype_size(in->d->dt) * (double)(in->rows * in->cols + (k->axis ? in->rows : in->cols));
    if (s) printf("cfuser %s %s %s failed: %s\n", k->name, in->d->name, shape, cf_fusion_cache_error(r.cache)), rc = 1;
    else printf("cfuser %s %s %s time_us=%.1f GB/s=%.0f kernels=%d plan=%s\n", k->name, in->d->name, shape, us,
                bu_gbps(bytes, us), cf_fusion_cache_last_segments(r.cache), plan);
  }
  cf_tensor_free(r.out);
  cf_fusion_cache_destroy(r.cache);
  cf_fusion_destroy(f);
  return rc;
}

/* ---- one input, every selected kind -------------------------------------------------------- */

static int run_shape(const Dtype *d, int64_t rows, int64_t cols, const Opts *o, BuEvents *ev, bool cuda) {
  Input in = {d, rows, cols, cuda, cf_tensor_host(d->dt, 2, (int64_t[]){rows, cols}), NULL};
  int rc = !in.host || cf_tensor_fill_random(&in.host->dl_tensor, (uint64_t)(rows * 31 + cols));
  in.dev = in.host;
  if (!rc && cuda) {
    in.dev = cf_tensor_device(d->dt, 2, (int64_t[]){rows, cols});
    rc = !in.dev || cf_tensor_copy(&in.dev->dl_tensor, &in.host->dl_tensor);
  }
  if (rc) printf("cfuser %s %lldx%lld failed: cannot make the input\n", d->name, (long long)rows, (long long)cols);
  for (size_t k = 0; !rc && k < sizeof kinds / sizeof kinds[0]; k++)
    if (selected(o->kinds, kinds[k].name)) rc |= run_case(&in, &kinds[k], o, ev);
  if (in.dev != in.host) cf_tensor_free(in.dev);
  cf_tensor_free(in.host);
  fflush(stdout);
  return rc;
}

int main(int argc, char **argv) {
  Opts o = parse(argc, argv);
  bool cuda = !o.a.small;
  if (cuda && bu_skip_without_cuda()) return 77;
  BuEvents events, *ev = NULL;
  if (cuda) {
    DLManagedTensor *t = cf_tensor_device(CF_FLOAT, 1, (int64_t[]){1}); /* makes cfuser's context current */
    cf_tensor_free(t);
    if (!bu_events_init(&events)) return 1;
    ev = &events;
  }
  printf("# reduction sweep, define and run, %s, %s of %d runs%s\n", cuda ? "CUDA events" : "host backend (wall-clock)",
         o.a.mean ? "mean" : "median", o.a.iters, o.a.small ? ", small shapes" : "");
  int rc = 0, n = o.a.small ? (int)(sizeof small_shapes / sizeof small_shapes[0]) : (int)(sizeof shapes / sizeof shapes[0]);
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    if (!selected(o.dtypes, dtypes[d].name)) continue;
    for (int s = 0; s < n; s++) {
      const int64_t *sh = o.a.small ? small_shapes[s] : shapes[s];
      rc |= run_shape(&dtypes[d], sh[0], sh[1], &o, ev, cuda);
    }
  }
  rc |= bu_copy_bandwidth(o.a.small ? 1 << 20 : (int64_t)1 << 28, o.a.iters, o.a.mean, ev, cuda);
  if (ev) bu_events_destroy(ev);
  return rc;
}
