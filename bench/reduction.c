/* bench/reduction.c: row sums and column sums of a 16384 x 16384 float matrix with
 * hand-written schedules (issue 10), timed on the GPU. Prints one line per reduction:
 *   cfuser row_sum N=16384 time_us=<median> GB/s=<4*N*N / time>
 * bench/reduction_torch.py prints PyTorch's figures (eager, torch.compile, device copy)
 * for the same work; bench/run_reduction.sh runs both. Needs a CUDA device (exits 77
 * without one); `--print` shows the kernels anywhere.
 *
 * Row sum: a block per row; the row is cached in registers with 16-byte vector loads
 * (T1 = set(T0), all of a thread's loads issued before the first add), each thread sums
 * its 32 elements, then a warp-shuffle block reduction over 512 threads.
 * Column sum: a block per 32 columns (threadIdx.x), 16 row groups per block on
 * threadIdx.y; each thread sums its column over 1024 rows in an unrolled serial loop,
 * then a shared-memory reduction over threadIdx.y. */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum { N = 16384, ROW_THREADS = 512, VEC = 4, COL_X = 32, COL_Y = 16, COL_UNROLL = 4 };

/* T0 -> T1 (registers, vector loads) -> T2 = sum over axis 1:
 * T2 [iblockIdx.x{N}, rS{N/512/4}, rthreadIdx.x{512}, rS{4}] */
static cf_fusion *build_row(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){N, N});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_sum(f, t1, 1, (int[]){1});
  cf_fusion_add_output(f, out);
  cf_split(f, out, 1, VEC);
  cf_split(f, out, 1, ROW_THREADS);
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_parallelize(f, t1, 3, CF_PT_VECTORIZE);
  cf_inline_most(f);
  return f;
}

/* T1 = sum over axis 0, reordered iteration-first:
 * T1 [iblockIdx.x{N/32}, ithreadIdx.x{32}, rS{N/16/4}, rUR{4}, rthreadIdx.y{16}] */
static cf_fusion *build_col(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){N, N});
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_sum(f, a, 1, (int[]){0});
  cf_fusion_add_output(f, out);
  cf_reorder(f, out, 1, (int[]){0, 1});    /* [i, r] */
  cf_split(f, out, 1, COL_Y);              /* [i, r/16, r16] */
  cf_split(f, out, 1, COL_UNROLL);         /* [i, r/16/4, r4, r16] */
  cf_split(f, out, 0, COL_X);              /* [i/32, i32, ...] */
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 3, CF_PT_UNROLL);
  cf_parallelize(f, out, 4, CF_PT_TIDY);
  return f;
}

static int bench(const char *name, cf_fusion *f, int iters, int print_kernel) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  if (cf_fusion_status(f) || cf_executor_compile(e, f)) {
    fprintf(stderr, "bench: %s%s\n", cf_fusion_error(f), cf_executor_error(e));
    return 1;
  }
  if (print_kernel) cf_fusion_print_kernel(f, stdout);
  int64_t sizes[2] = {N, N}, n1 = N;
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 2, sizes), *a = cf_tensor_device(CF_FLOAT, 2, sizes);
  DLManagedTensor *out = cf_tensor_device(CF_FLOAT, 1, &n1);
  cf_tensor_fill_random(&h->dl_tensor, 1);
  cf_tensor_copy(&a->dl_tensor, &h->dl_tensor);
  const DLTensor *ins[1] = {&a->dl_tensor};
  double med = bu_median_run(e, 1, ins, 1, &out, iters);
  if (med < 0) return 1;
  printf("cfuser %s N=%d time_us=%.1f GB/s=%.0f\n", name, N, med, bu_gbps(4.0 * N * (double)N, med));
  cf_tensor_free(h), cf_tensor_free(a), cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--print")) { /* the kernels, without a device */
    cf_status s = CF_OK;
    for (int k = 0; k < 2 && !s; k++) {
      cf_fusion *f = k ? build_col() : build_row();
      s = cf_fusion_print_kernel(f, stdout);
      if (s) fprintf(stderr, "bench: %s\n", cf_fusion_error(f));
      cf_fusion_destroy(f);
    }
    return s ? 1 : 0;
  }
  if (bu_skip_without_cuda()) return 77;
  int iters = bu_parse_args(argc, argv, 50).iters;
  if (bench("row_sum", build_row(), iters, 1) || bench("col_sum", build_col(), iters, 1)) return 1;
  return 0;
}
