// bench: internal (drives scheduler/transpose_sched.c directly)
/* bench/transpose.c: the transpose of an 8192 x 8192 float matrix scheduled by the
 * transpose heuristic (sched_transpose_heuristic, scheduler/transpose_sched.c), timed on
 * the GPU. Prints the heuristic's parameters, then
 *   cfuser transpose N=8192 time_us=<median> GB/s=<2*4*N*N / time>
 * (the matrix read once and written once). bench/transpose_torch.py prints PyTorch's
 * figures for the same work (eager x.t().contiguous(), torch.compile, a device copy);
 * bench/run_transpose.sh runs both. Needs a CUDA device (exits 77 without one);
 * `--print` shows the kernel anywhere.
 *
 * The heuristic stages 32 x 32 tiles in XOR-swizzled shared memory: each block of
 * 32 x 8 threads reads a tile along the input's rows (coalesced), syncs, and writes it
 * along the output's rows (coalesced), 4 elements per thread. It reaches a hidden
 * symbol, so this program links the static library (see CMakeLists.txt). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include "scheduler/heuristic.h"

enum { N = 8192 };

/* out = transpose(x), scheduled by the heuristic; NULL (message printed) if refused. */
static cf_fusion *build(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){N, N});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_transpose(f, x, 0, 1));
  char why[SCHED_WHY_MAX] = "", params[SCHED_PARAMS_MAX] = "";
  SchedCall call = {0, NULL, sched_device_default()};
  if (!sched_transpose_heuristic.accepts(f, &call, why)) {
    fprintf(stderr, "bench: refused: %s\n", why);
    cf_fusion_destroy(f);
    return NULL;
  }
  if (sched_transpose_heuristic.schedule(f, &call, params)) {
    fprintf(stderr, "bench: %s\n", cf_fusion_error(f));
    cf_fusion_destroy(f);
    return NULL;
  }
  printf("transpose heuristic: %s\n", params);
  return f;
}

/* The first k x k corner of the result against the host transpose of the input. */
static int check(const DLManagedTensor *h, DLManagedTensor *out, int k) {
  int64_t sizes[2] = {N, N};
  DLManagedTensor *back = cf_tensor_host(CF_FLOAT, 2, sizes);
  cf_tensor_copy(&back->dl_tensor, &out->dl_tensor);
  const float *a = h->dl_tensor.data, *b = back->dl_tensor.data;
  int wrong = 0;
  for (int i = 0; i < k; i++)
    for (int j = 0; j < k; j++) wrong += b[(int64_t)i * N + j] != a[(int64_t)j * N + i];
  cf_tensor_free(back);
  if (wrong) fprintf(stderr, "bench: %d wrong elements in the %d x %d corner\n", wrong, k, k);
  return wrong != 0;
}

static int bench(cf_fusion *f, int iters) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  if (cf_executor_compile(e, f)) {
    fprintf(stderr, "bench: %s\n", cf_executor_error(e));
    cf_executor_destroy(e);
    return 1;
  }
  cf_fusion_print_kernel(f, stdout);
  int64_t sizes[2] = {N, N};
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 2, sizes), *a = cf_tensor_device(CF_FLOAT, 2, sizes);
  DLManagedTensor *out = cf_tensor_device(CF_FLOAT, 2, sizes);
  cf_tensor_fill_random(&h->dl_tensor, 1);
  cf_tensor_copy(&a->dl_tensor, &h->dl_tensor);
  const DLTensor *ins[1] = {&a->dl_tensor};
  double med = bu_median_run(e, 1, ins, 1, &out, iters);
  int rc = med < 0 || check(h, out, 256);
  if (!rc) printf("cfuser transpose N=%d time_us=%.1f GB/s=%.0f\n", N, med, bu_gbps(8.0 * N * (double)N, med));
  cf_tensor_free(h), cf_tensor_free(a), cf_tensor_free(out);
  cf_executor_destroy(e);
  return rc;
}

int main(int argc, char **argv) {
  cf_fusion *f = build();
  if (!f) return 1;
  int rc = 0;
  if (argc > 1 && !strcmp(argv[1], "--print")) { /* the kernel, without a device */
    rc = cf_fusion_print_kernel(f, stdout) != CF_OK;
    if (rc) fprintf(stderr, "bench: %s\n", cf_fusion_error(f));
  } else {
    rc = bu_skip_without_cuda();
    if (!rc) rc = bench(f, bu_parse_args(argc, argv, 50).iters);
  }
  cf_fusion_destroy(f);
  return rc;
}
