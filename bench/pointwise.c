/* bench/pointwise.c: the fused pointwise kernel out = relu(a * b + a) over N floats,
 * scheduled as nvFuser's pointwise scheduler would (inputs cached in registers with
 * 16-byte vector loads, the result stored with 16-byte vector stores, 128 threads per
 * block, 4 elements per thread, the tile unswitched), timed on the GPU. Prints one line per size:
 *   cfuser pointwise N=<n> time_us=<median> GB/s=<3*4*N / time>
 * and the same math scheduled by cf_schedule_pointwise instead of by hand.
 * bench/pointwise_torch.py prints PyTorch's figures for the same work; run both with
 * bench/run_pointwise.sh. Needs a CUDA device (exits 77 without one); `--print` shows the
 * kernel anywhere. */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* a, b -> ta, tb (vector loads) -> relu(ta * tb + ta) -> out (vector stores) */
static cf_fusion *build(int64_t n) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, &n), *b = cf_tensor_concrete(f, CF_FLOAT, 1, &n);
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *ta = cf_set(f, a), *tb = cf_set(f, b);
  cf_tv *r = cf_relu(f, cf_add(f, cf_mul(f, ta, tb), ta));
  cf_tv *out = cf_set(f, r);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 0, 4);
  cf_split(f, out, 0, 128);
  cf_split(f, out, 0, 1); /* [blocks, unswitch{1}, 128, 4] */
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_UNSWITCH);
  cf_parallelize(f, out, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_parallelize(f, ta, 3, CF_PT_VECTORIZE);
  cf_parallelize(f, tb, 3, CF_PT_VECTORIZE);
  cf_parallelize(f, out, 3, CF_PT_VECTORIZE);
  cf_inline_most(f);
  return f;
}

/* The same math left to the automatic scheduler (cf_schedule_pointwise). */
static cf_fusion *build_auto(int64_t n) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, &n), *b = cf_tensor_concrete(f, CF_FLOAT, 1, &n);
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_fusion_add_output(f, cf_relu(f, cf_add(f, cf_mul(f, a, b), a)));
  cf_schedule_pointwise(f);
  return f;
}

static int bench(int64_t n, int iters, int print_kernel, bool automatic) {
  cf_fusion *f = automatic ? build_auto(n) : build(n);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  if (cf_fusion_status(f) || cf_executor_compile(e, f)) {
    fprintf(stderr, "bench: %s%s\n", cf_fusion_error(f), cf_executor_error(e));
    return 1;
  }
  if (print_kernel) cf_fusion_print_kernel(f, stdout);
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, 1, &n);
  cf_tensor_fill_random(&h->dl_tensor, 1);
  DLManagedTensor *a = cf_tensor_device(CF_FLOAT, 1, &n), *b = cf_tensor_device(CF_FLOAT, 1, &n);
  DLManagedTensor *out = cf_tensor_device(CF_FLOAT, 1, &n);
  cf_tensor_copy(&a->dl_tensor, &h->dl_tensor);
  cf_tensor_copy(&b->dl_tensor, &h->dl_tensor);
  const DLTensor *ins[2] = {&a->dl_tensor, &b->dl_tensor};
  double med = bu_median_run(e, 2, ins, 1, &out, iters);
  if (med < 0) return 1;
  printf("%s pointwise N=%lld time_us=%.1f GB/s=%.0f\n", automatic ? "cfuser (schedule_pointwise)" : "cfuser",
         (long long)n, med, bu_gbps(12.0 * (double)n, med));
  cf_tensor_free(h), cf_tensor_free(a), cf_tensor_free(b), cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--print")) { /* the kernels, without a device */
    cf_status s = CF_OK;
    for (int k = 0; k < 2 && !s; k++) {
      cf_fusion *f = k ? build_auto(1 << 20) : build(1 << 20);
      s = cf_fusion_print_kernel(f, stdout);
      cf_fusion_destroy(f);
    }
    return s ? 1 : 0;
  }
  if (bu_skip_without_cuda()) return 77;
  int iters = bu_parse_args(argc, argv, 50).iters;
  static const int64_t sizes[] = {1 << 20, 1 << 24, 1 << 26, 1 << 28};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (bench(sizes[i], iters, i == 0, false) || bench(sizes[i], iters, 0, true)) return 1;
  return 0;
}
