/* bench/bench_util.h: what the benchmarks of bench/ share (header only, every function
 * static inline so a bench that uses part of it compiles without warnings):
 *   - clocks: the monotonic wall clock in microseconds, the median of an array;
 *   - bu_median_run: the median wall-clock of a synchronous cf_executor_run after warm-ups
 *     (what bench/pointwise.c, reduction.c, transpose.c and norm.c print);
 *   - CUDA events (BuEvents): the GPU time of work queued on the legacy default stream,
 *     through libcuda.so.1 opened with dlopen (the library cfuser itself loads, so the
 *     events live in the primary context cfuser made current); bu_time_us times a
 *     callback with them on CUDA (each run queued after the last one finished, or with
 *     CFUSER_BENCH_QUEUED=1 all queued back to back: bu_time_queued), with the wall clock
 *     on the host backend;
 *   - bu_gbps, bu_skip_without_cuda (exit status 77 and the line every bench prints),
 *     bu_parse_args (`[iterations] [--print] [--small] [--mean]`);
 *   - bu_copy_bandwidth: the device's copy bandwidth, the line the tables compare with;
 *     bu_copy_us: one copy's time (a fusion's own bytes copied: its ceiling at its size).
 * Benches include it as "bench_util.h" (their own folder). Key decision: timing callbacks
 * return a cf_status so that a failed run stops the timing and the bench reports it. */
#ifndef CFUSER_BENCH_UTIL_H
#define CFUSER_BENCH_UTIL_H

#include <cfuser.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BU_WARMUPS = 5 };

static inline double bu_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static inline int bu_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of t[0..n) (the upper one for even n), sorting t; -1 when n < 1. */
static inline double bu_median(double *t, int n) {
  if (n < 1) return -1;
  qsort(t, (size_t)n, sizeof *t, bu_cmp_double);
  return t[n / 2];
}

/* bytes over microseconds, in GB/s (1e9 bytes per second). */
static inline double bu_gbps(double bytes, double us) { return bytes / us / 1e3; }

/* Prints the line of a bench that needs a GPU and finds none; returns 77 (ctest's skip). */
static inline int bu_skip_without_cuda(void) {
  const char *reason = NULL;
  if (cf_cuda_available(&reason)) return 0;
  printf("skipped: no CUDA device: %s\n", reason);
  return 77;
}

typedef struct BuArgs {
  int iters;  /* the first numeric argument; default given to bu_parse_args */
  bool print; /* --print: show the kernels, without a device */
  bool small; /* --small: small sizes on the host backend, results checked */
  bool mean;  /* --mean: the mean of the timed runs rather than the median */
} BuArgs;

static inline BuArgs bu_parse_args(int argc, char **argv, int default_iters) {
  BuArgs a = {default_iters, false, false, false};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--print")) a.print = true;
    else if (!strcmp(argv[i], "--small")) a.small = true;
    else if (!strcmp(argv[i], "--mean")) a.mean = true;
    else if (atoi(argv[i]) > 0) a.iters = atoi(argv[i]);
  }
  return a;
}

/* Median wall-clock microseconds of a synchronous cf_executor_run after BU_WARMUPS runs
 * (argument checks, launch and synchronization included); -1, the error printed, on a
 * failed run. */
static inline double bu_median_run(cf_executor *e, int nin, const DLTensor *const *ins, int nout,
                                   DLManagedTensor **outs, int iters) {
  double *t = calloc((size_t)iters, sizeof *t), med = -1;
  for (int i = -BU_WARMUPS; t && i < iters; i++) {
    double t0 = bu_now_us();
    if (cf_executor_run(e, nin, ins, nout, outs)) {
      fprintf(stderr, "bench: %s\n", cf_executor_error(e));
      free(t);
      return -1;
    }
    if (i >= 0) t[i] = bu_now_us() - t0;
  }
  if (t) med = bu_median(t, iters);
  free(t);
  return med;
}

/* ---- CUDA events ------------------------------------------------------------------------- */

typedef struct BuEvents {
  void *lib;
  void *start, *end; /* CUevent */
  int (*create)(void **ev, unsigned flags);
  int (*record)(void *ev, void *stream);
  int (*sync)(void *ev);
  int (*elapsed)(float *ms, void *start, void *end);
  int (*destroy)(void *ev);
} BuEvents;

/* The first of the names libcuda.so.1 exports, into *fn (a function pointer's bytes);
 * false when none. */
static inline bool bu_sym(void *lib, void *fn, const char *name, const char *alt) {
  void *sym = dlsym(lib, name);
  if (!sym && alt) sym = dlsym(lib, alt);
  memcpy(fn, &sym, sizeof sym); /* ISO C has no cast from void * to a function pointer */
  return sym != NULL;
}

/* Opens the driver and makes two events in the current context (cfuser's primary one:
 * call it after cfuser has touched the device). false, the reason printed, on failure. */
static inline bool bu_events_init(BuEvents *ev) {
  memset(ev, 0, sizeof *ev);
  ev->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  bool ok = ev->lib && bu_sym(ev->lib, &ev->create, "cuEventCreate", NULL) &&
            bu_sym(ev->lib, &ev->record, "cuEventRecord", NULL) &&
            bu_sym(ev->lib, &ev->sync, "cuEventSynchronize", NULL) &&
            bu_sym(ev->lib, &ev->elapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime") &&
            bu_sym(ev->lib, &ev->destroy, "cuEventDestroy_v2", "cuEventDestroy");
  ok = ok && ev->create(&ev->start, 0) == 0 && ev->create(&ev->end, 0) == 0;
  if (!ok) fprintf(stderr, "bench: CUDA events unavailable (libcuda.so.1: %s)\n", ev->lib ? "a call failed" : dlerror());
  return ok;
}

static inline void bu_events_destroy(BuEvents *ev) {
  if (ev->start) ev->destroy(ev->start);
  if (ev->end) ev->destroy(ev->end);
  if (ev->lib) dlclose(ev->lib);
  memset(ev, 0, sizeof *ev);
}

/* One timed piece of work: queues (or, on the host, runs) it; CF_OK or the failure. */
typedef cf_status (*BuWork)(void *ctx);

/* The queued form of bu_time_runs (CFUSER_BENCH_QUEUED=1): the warm-ups, then `iters` runs
 * queued back to back with an event between each two, synchronized once at the end, so
 * the GPU never waits for the CPU's call between runs (as triton's do_bench measures): each
 * run's time is its work's GPU time, without the host's cost of the call, which the
 * default form includes (it waits for each run before queueing the next). */
static inline cf_status bu_time_queued(BuEvents *ev, BuWork work, void *ctx, int iters, double *t) {
  void **e = calloc((size_t)iters + 1, sizeof *e);
  cf_status s = e ? CF_OK : CF_ERR_OUT_OF_MEMORY;
  for (int i = 0; !s && i <= iters; i++)
    if (ev->create(&e[i], 0)) s = CF_ERR_CUDA;
  for (int i = 0; !s && i < BU_WARMUPS; i++) s = work(ctx);
  if (!s && (ev->record(e[0], NULL) || ev->sync(e[0]) || ev->record(e[0], NULL))) s = CF_ERR_CUDA;
  for (int i = 0; !s && i < iters; i++)
    if (!(s = work(ctx)) && ev->record(e[i + 1], NULL)) s = CF_ERR_CUDA;
  if (!s && ev->sync(e[iters])) s = CF_ERR_CUDA;
  for (int i = 0; !s && i < iters; i++) {
    float ms = 0;
    if (ev->elapsed(&ms, e[i], e[i + 1])) s = CF_ERR_CUDA;
    t[i] = 1e3 * (double)ms;
  }
  for (int i = 0; e && i <= iters; i++)
    if (e[i]) ev->destroy(e[i]);
  free(e);
  return s;
}

/* Microseconds of each of `iters` runs of work after BU_WARMUPS, into t: CUDA-event time
 * of the work queued on the default stream when ev is not NULL, else wall-clock of the
 * (synchronous) call. The first failure is returned at once. */
static inline cf_status bu_time_runs(BuEvents *ev, BuWork work, void *ctx, int iters, double *t) {
  const char *queued = getenv("CFUSER_BENCH_QUEUED");
  if (ev && queued && atoi(queued)) return bu_time_queued(ev, work, ctx, iters, t);
  for (int i = -BU_WARMUPS; i < iters; i++) {
    double t0 = bu_now_us();
    float ms = 0;
    if (ev && ev->record(ev->start, NULL)) return CF_ERR_CUDA;
    cf_status s = work(ctx);
    if (s) return s;
    if (ev && (ev->record(ev->end, NULL) || ev->sync(ev->end) || ev->elapsed(&ms, ev->start, ev->end)))
      return CF_ERR_CUDA;
    if (i >= 0) t[i] = ev ? 1e3 * (double)ms : bu_now_us() - t0;
  }
  return CF_OK;
}

/* The median (or, mean, the mean) of bu_time_runs in microseconds; -1 on failure (the
 * status in *status when not NULL). */
static inline double bu_time_us(BuEvents *ev, BuWork work, void *ctx, int iters, bool mean, cf_status *status) {
  double *t = calloc((size_t)iters, sizeof *t), r = -1;
  cf_status s = t ? bu_time_runs(ev, work, ctx, iters, t) : CF_ERR_OUT_OF_MEMORY;
  if (!s && mean) {
    r = 0;
    for (int i = 0; i < iters; i++) r += t[i] / iters;
  } else if (!s) {
    r = bu_median(t, iters);
  }
  free(t);
  if (status) *status = s;
  return r;
}

/* ---- the copy bandwidth ------------------------------------------------------------------ */

typedef struct BuCopy {
  DLTensor *dst, *src;
} BuCopy;

static inline cf_status bu_copy_once(void *ctx) {
  BuCopy *c = ctx;
  return cf_tensor_copy(c->dst, c->src);
}

/* The time of one copy of n floats (cuMemcpyDtoD; on the host backend a host memcpy), the
 * median (or mean) of iters runs in microseconds; -1 with the status in *status on failure. */
static inline double bu_copy_us(int64_t n, int iters, bool mean, BuEvents *ev, bool cuda, cf_status *status) {
  DLManagedTensor *x = cuda ? cf_tensor_device(CF_FLOAT, 1, &n) : cf_tensor_host(CF_FLOAT, 1, &n);
  DLManagedTensor *y = cuda ? cf_tensor_device(CF_FLOAT, 1, &n) : cf_tensor_host(CF_FLOAT, 1, &n);
  BuCopy c = {x ? &x->dl_tensor : NULL, y ? &y->dl_tensor : NULL};
  *status = CF_ERR_OUT_OF_MEMORY;
  double us = x && y ? bu_time_us(ev, bu_copy_once, &c, iters, mean, status) : -1;
  cf_tensor_free(x), cf_tensor_free(y);
  return us;
}

/* Prints the device's copy bandwidth over n floats, the bytes read plus written: the
 * reference of the GB/s a fusion reaches. Returns 1 when it failed. */
static inline int bu_copy_bandwidth(int64_t n, int iters, bool mean, BuEvents *ev, bool cuda) {
  cf_status s;
  double us = bu_copy_us(n, iters, mean, ev, cuda, &s);
  if (!s) printf("device copy (%s) %lld time_us=%.1f GB/s=%.0f\n", cuda ? "cuMemcpyDtoD" : "host", (long long)n, us,
                 bu_gbps(8.0 * (double)n, us));
  else printf("device copy (%s) %lld failed: %s\n", cuda ? "cuMemcpyDtoD" : "host", (long long)n, cf_status_name(s));
  return s != CF_OK;
}

#endif
