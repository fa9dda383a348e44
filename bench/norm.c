// bench: internal
/* bench/norm.c: softmax and layer norm over the rows of a 16384 x 4096 matrix (float; and
 * softmax in bfloat16, computed in float) scheduled by the inner persistent normalization
 * heuristic (sched_inner_persistent_heuristic, scheduler/norm_sched.c; issue 11), timed on
 * the GPU. Prints one line per fusion:
 *   cfuser softmax_f32 16384x4096 time_us=<median> GB/s=<bytes moved / time> params=<...>
 * GB/s counts the matrix read once and written once (plus the layer norm's weight and
 * bias). bench/norm_torch.py prints PyTorch's figures (eager, torch.compile, device copy)
 * for the same work; bench/run_norm.sh runs both. Needs a CUDA device (exits 77 without
 * one); `--print` shows the kernels anywhere. It calls the heuristic directly (an internal
 * header: the first line above makes CMake link it to the static library). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include "scheduler/heuristic.h"

enum { ROWS = 16384, COLS = 4096 };

static cf_tv *widen(cf_fusion *f, cf_tv *x) { return cf_tv_dtype(x) == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT); }
static cf_tv *back(cf_fusion *f, cf_tv *r) { return cf_broadcast(f, r, 2, (bool[]){false, true}); }

static cf_fusion *softmax(cf_dtype dt) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *in = cf_tensor_concrete(f, dt, 2, (int64_t[]){ROWS, COLS});
  cf_fusion_add_input(f, in);
  cf_tv *x = widen(f, in);
  cf_tv *e = cf_exp(f, cf_sub(f, x, back(f, cf_max_reduce(f, x, 1, (int[]){1}))));
  cf_tv *y = cf_div(f, e, back(f, cf_sum(f, e, 1, (int[]){1})));
  cf_fusion_add_output(f, dt == CF_FLOAT ? y : cf_cast(f, y, dt));
  return f;
}

static cf_fusion *layernorm(void) {
  cf_fusion *f = cf_fusion_create();
  int64_t cols = COLS;
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){ROWS, COLS});
  cf_tv *w = cf_tensor_concrete(f, CF_FLOAT, 1, &cols), *b = cf_tensor_concrete(f, CF_FLOAT, 1, &cols);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w), cf_fusion_add_input(f, b);
  cf_tv *d = cf_sub(f, x, back(f, cf_mean(f, x, 1, (int[]){1})));
  cf_tv *var = cf_mean(f, cf_mul(f, d, d), 1, (int[]){1});
  cf_tv *rstd = back(f, cf_rsqrt(f, cf_add_scalar(f, var, 1e-5)));
  cf_tv *row = cf_mul(f, d, rstd);
  cf_tv *y = cf_add(f, cf_mul(f, row, cf_broadcast(f, w, 2, (bool[]){true, false})),
                    cf_broadcast(f, b, 2, (bool[]){true, false}));
  cf_fusion_add_output(f, y);
  return f;
}

/* The inputs of f, on the device or (print) on the host, filled at random. */
static int make_inputs(cf_fusion *f, bool device, DLManagedTensor **t) {
  int n = cf_fusion_num_inputs(f);
  for (int i = 0; i < n; i++) {
    cf_tv *in = cf_fusion_input(f, i);
    int64_t sizes[2] = {ROWS, COLS};
    int rank = cf_tv_logical_rank(in);
    const int64_t *s = rank == 2 ? sizes : sizes + 1;
    DLManagedTensor *h = cf_tensor_host(cf_tv_dtype(in), rank, s);
    cf_tensor_fill_random(&h->dl_tensor, 1 + (uint64_t)i);
    if (device) {
      t[i] = cf_tensor_device(cf_tv_dtype(in), rank, s);
      cf_tensor_copy(&t[i]->dl_tensor, &h->dl_tensor);
      cf_tensor_free(h);
    } else {
      t[i] = h;
    }
  }
  return n;
}

/* Lets the heuristic schedule f for these inputs. */
static int schedule(const char *name, cf_fusion *f, int n, DLManagedTensor **t, char *params) {
  const DLTensor *dl[4];
  for (int i = 0; i < n; i++) dl[i] = &t[i]->dl_tensor;
  SchedCall call = {n, dl, sched_device_default()};
  char why[SCHED_WHY_MAX] = "";
  if (!sched_inner_persistent_heuristic.accepts(f, &call, why)) {
    fprintf(stderr, "bench: %s refused: %s\n", name, why);
    return 1;
  }
  if (sched_inner_persistent_heuristic.schedule(f, &call, params)) {
    fprintf(stderr, "bench: %s: %s\n", name, cf_fusion_error(f));
    return 1;
  }
  return 0;
}

/* Compiles and times the scheduled f; prints its line. */
static int run_timed(const char *name, cf_fusion *f, int n, DLManagedTensor **t, double bytes, int iters,
                     const char *params) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  if (cf_executor_compile(e, f)) {
    fprintf(stderr, "bench: %s: %s\n", name, cf_executor_error(e));
    cf_executor_destroy(e);
    return 1;
  }
  DLManagedTensor *out = cf_tensor_device(cf_tv_dtype(cf_fusion_output(f, 0)), 2, (int64_t[]){ROWS, COLS});
  const DLTensor *ins[4];
  for (int i = 0; i < n; i++) ins[i] = &t[i]->dl_tensor;
  double med = bu_median_run(e, n, ins, 1, &out, iters);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  if (med < 0) return 1;
  printf("cfuser %s %dx%d time_us=%.1f GB/s=%.0f params=%s\n", name, ROWS, COLS, med, bu_gbps(bytes, med), params);
  return 0;
}

/* Schedules, then times (or prints) one fusion; consumes f. */
static int bench(const char *name, cf_fusion *f, double bytes, int iters, bool print) {
  DLManagedTensor *t[4] = {0};
  int n = make_inputs(f, !print, t);
  char params[SCHED_PARAMS_MAX] = "";
  int rc = schedule(name, f, n, t, params);
  if (!rc && print) printf("// %s: %s\n", name, params), rc = cf_fusion_print_kernel(f, stdout) ? 1 : 0;
  else if (!rc) rc = run_timed(name, f, n, t, bytes, iters, params);
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
  cf_fusion_destroy(f);
  return rc;
}

int main(int argc, char **argv) {
  bool print = argc > 1 && !strcmp(argv[1], "--print"); /* the kernels, without a device */
  if (!print && bu_skip_without_cuda()) return 77;
  int iters = bu_parse_args(argc, argv, 50).iters;
  double elems = (double)ROWS * COLS;
  int rc = bench("softmax_f32", softmax(CF_FLOAT), 8 * elems, iters, print);
  rc |= bench("layernorm_f32", layernorm(), 8 * elems + 8.0 * COLS, iters, print);
  rc |= bench("softmax_bf16", softmax(CF_BFLOAT16), 4 * elems, iters, print);
  return rc;
}
