/* bench/launch.c: what a launch costs. A 3-input pointwise kernel (out = a * b + c over
 * 4096 floats, one block of 128 threads each doing 32 elements) run with
 * cf_executor_run_async on the default stream:
 *   - the CPU time of one asynchronous launch, median over 10,000 (the queue drained every
 *     256 launches, outside the timing), with the output given by the caller and with the
 *     output allocated by the executor (stream-ordered, from the device's pool);
 *   - the wall time of 1,000 back-to-back launches, synchronized once at the end.
 * Prints lines "cfuser <what> <value> us"; bench/launch_torch.py prints PyTorch eager's and
 * a CUDA graph replay's figures for the same op; bench/run_launch.sh runs both. Needs a
 * CUDA device (exits 77 without one). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

enum { N = 4096, LAUNCHES = 10000, BACK_TO_BACK = 1000, DRAIN = 256 };

static cf_fusion *build(void) {
  cf_fusion *f = cf_fusion_create();
  int64_t n = N;
  cf_tv *in[3];
  for (int i = 0; i < 3; i++) {
    in[i] = cf_tensor_concrete(f, CF_FLOAT, 1, &n);
    cf_fusion_add_input(f, in[i]);
  }
  cf_tv *out = cf_add(f, cf_mul(f, in[0], in[1]), in[2]);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 0, 128);
  cf_propagate_transforms(f, out);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  return f;
}

/* Median CPU microseconds of one launch; own_output: the executor allocates it. */
static double launch_cost(cf_executor *e, const DLTensor *const *ins, DLManagedTensor *given, int own_output) {
  static double t[LAUNCHES];
  for (int i = 0; i < LAUNCHES; i++) {
    if (i % DRAIN == 0 && cf_executor_synchronize(e)) return -1;
    DLManagedTensor *out = own_output ? NULL : given;
    double t0 = bu_now_us();
    cf_status s = cf_executor_run_async(e, NULL, 3, ins, 1, &out);
    t[i] = bu_now_us() - t0;
    if (s) return -1;
    if (own_output) cf_tensor_free(out);
  }
  if (cf_executor_synchronize(e)) return -1;
  return bu_median(t, LAUNCHES);
}

static double back_to_back(cf_executor *e, const DLTensor *const *ins, DLManagedTensor *given) {
  if (cf_executor_synchronize(e)) return -1;
  double t0 = bu_now_us();
  for (int i = 0; i < BACK_TO_BACK; i++) {
    DLManagedTensor *out = given;
    if (cf_executor_run_async(e, NULL, 3, ins, 1, &out)) return -1;
  }
  if (cf_executor_synchronize(e)) return -1;
  return bu_now_us() - t0;
}

int main(void) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) {
    printf("skipped: no CUDA device (%s)\n", reason);
    return 77;
  }
  cf_fusion *f = build();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA});
  if (cf_executor_compile(e, f)) {
    fprintf(stderr, "compile: %s\n", cf_executor_error(e));
    return 1;
  }
  int64_t n = N;
  DLManagedTensor *in[3], *out = cf_tensor_device(CF_FLOAT, 1, &n);
  const DLTensor *ins[3];
  for (int i = 0; i < 3; i++) {
    in[i] = cf_tensor_device(CF_FLOAT, 1, &n);
    ins[i] = &in[i]->dl_tensor;
  }
  double given = launch_cost(e, ins, out, 0), owned = launch_cost(e, ins, NULL, 1);
  double wall = back_to_back(e, ins, out);
  if (given < 0 || owned < 0 || wall < 0) {
    fprintf(stderr, "run: %s\n", cf_executor_error(e));
    return 1;
  }
  printf("cfuser async launch CPU (output given, median of %d) %.2f us\n", LAUNCHES, given);
  printf("cfuser async launch CPU (output allocated, median of %d) %.2f us\n", LAUNCHES, owned);
  printf("cfuser wall of %d back-to-back launches %.1f us (%.2f us each)\n", BACK_TO_BACK, wall, wall / BACK_TO_BACK);
  for (int i = 0; i < 3; i++) cf_tensor_free(in[i]);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return 0;
}
