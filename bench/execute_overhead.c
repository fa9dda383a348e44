/* bench/execute_overhead.c: the CPU cost of a cached define-and-run call. A 3-input
 * pointwise fusion (out = a * b + c over 4096 floats, 128 on the host backend, symbolic
 * sizes, left to the automatic scheduler) run through cf_fusion_execute_async (CUDA) or cf_fusion_execute
 * (host backend, without a GPU), the output given by the caller:
 *   - the mean CPU time of one cached call over 10,000 calls (on CUDA the queue is drained
 *     every 256 calls, outside the timing);
 *   - the same for cf_executor_run(_async) of the same kernel compiled directly, so the
 *     difference is what the cache adds (signature hash, lookup, compare).
 * Prints lines "cfuser <what> <value> us". Target: the cached call under 5 us on CUDA.
 * On the host backend the call runs the kernel too, so both figures include it (only the
 * difference is the cache's). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

enum { N_CUDA = 4096, N_HOST = 128, CALLS = 10000, DRAIN = 256 };
static int64_t n_elems = N_CUDA;

/* Symbolic for the cache; concrete for the direct executor, which then compiles the
 * kernel the cache makes of the symbolic one for this call (its copy takes the call's
 * sizes as constants). */
static cf_fusion *build(bool symbolic) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *in[3];
  for (int i = 0; i < 3; i++) {
    in[i] = symbolic ? cf_tensor_symbolic(f, CF_FLOAT, 1) : cf_tensor_concrete(f, CF_FLOAT, 1, &n_elems);
    cf_fusion_add_input(f, in[i]);
  }
  cf_fusion_add_output(f, cf_add(f, cf_mul(f, in[0], in[1]), in[2]));
  return f;
}

typedef struct Bench {
  bool cuda;
  cf_fusion_cache *c;
  cf_executor *e;
  const DLTensor *ins[3];
  DLManagedTensor *out;
} Bench;

static cf_status call(Bench *b, bool cached) {
  DLManagedTensor *out[1] = {b->out};
  if (cached)
    return b->cuda ? cf_fusion_execute_async(b->c, NULL, 3, b->ins, 1, out) : cf_fusion_execute(b->c, 3, b->ins, 1, out);
  return b->cuda ? cf_executor_run_async(b->e, NULL, 3, b->ins, 1, out) : cf_executor_run(b->e, 3, b->ins, 1, out);
}

/* Mean CPU microseconds of one call; -1 on failure. */
static cf_status drain(Bench *b, bool cached) {
  return cached ? cf_fusion_cache_synchronize(b->c) : cf_executor_synchronize(b->e);
}

static double mean_cost(Bench *b, bool cached) {
  double total = 0;
  for (int i = 0; i < CALLS; i++) {
    if (b->cuda && i % DRAIN == 0 && drain(b, cached)) return -1;
    double t0 = bu_now_us();
    cf_status s = call(b, cached);
    total += bu_now_us() - t0;
    if (s) return -1;
  }
  if (b->cuda && drain(b, cached)) return -1;
  return total / CALLS;
}

static DLManagedTensor *make(bool cuda) {
  int64_t n = n_elems;
  DLManagedTensor *t = cuda ? cf_tensor_device(CF_FLOAT, 1, &n) : cf_tensor_host(CF_FLOAT, 1, &n);
  if (t && !cuda) cf_tensor_fill_random(&t->dl_tensor, 1);
  return t;
}

int main(void) {
  Bench b = {.cuda = cf_cuda_available(NULL)};
  cf_executor_options o = {.backend = b.cuda ? CF_BACKEND_CUDA : CF_BACKEND_HOST};
  n_elems = b.cuda ? N_CUDA : N_HOST;
  cf_fusion *f = build(true), *g = build(false);
  b.c = cf_fusion_cache_create(f, &o);
  b.e = cf_executor_create(&o);
  if (cf_schedule_pointwise(g) || cf_executor_compile(b.e, g)) {
    fprintf(stderr, "compile: %s%s\n", cf_fusion_error(g), cf_executor_error(b.e));
    return 1;
  }
  DLManagedTensor *in[3];
  for (int i = 0; i < 3; i++) {
    in[i] = make(b.cuda);
    b.ins[i] = &in[i]->dl_tensor;
  }
  b.out = make(b.cuda);
  if (call(&b, true)) { /* the first call compiles */
    fprintf(stderr, "execute: %s\n", cf_fusion_cache_error(b.c));
    return 1;
  }
  double cached = mean_cost(&b, true), direct = mean_cost(&b, false);
  if (cached < 0 || direct < 0) {
    fprintf(stderr, "run: %s%s\n", cf_fusion_cache_error(b.c), cf_executor_error(b.e));
    return 1;
  }
  const char *backend = b.cuda ? "cuda" : "host";
  printf("cfuser %s cached cf_fusion_execute%s CPU (mean of %d) %.2f us\n", backend, b.cuda ? "_async" : "", CALLS,
         cached);
  printf("cfuser %s cf_executor_run%s of the same kernel CPU (mean of %d) %.2f us\n", backend,
         b.cuda ? "_async" : "", CALLS, direct);
  printf("cfuser %s define-and-run overhead %.2f us (%lld hits, %d kernel)\n", backend, cached - direct,
         (long long)cf_fusion_cache_hits(b.c), cf_fusion_cache_num_kernels(b.c));
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_tensor_free(b.out);
  cf_executor_destroy(b.e);
  cf_fusion_cache_destroy(b.c);
  cf_fusion_destroy(g);
  cf_fusion_destroy(f);
  return 0;
}
