/* tools/cmd_demo.c: `cfuser demo`: builds a small fusion (out = relu(a * b + a) over a
 * 4x8 float tensor and a broadcast row), schedules it the way the tutorials do, prints
 * its math and transforms, compiles it (CUDA on a GPU, the host backend otherwise),
 * prints the CUDA kernel, runs it, and checks the result against the reference
 * evaluator. Uses only the public API, so it doubles as the README's example. */
#include <cfuser.h>
#include <stdio.h>

#include "tools.h"

static int fail(cf_fusion *f) {
  fprintf(stderr, "cfuser demo: %s\n", cf_fusion_error(f));
  cf_fusion_destroy(f);
  return 1;
}

/* a[4, 8] * broadcast(b[8]) + a, then relu. */
static cf_tv *build(cf_fusion *f, cf_tv **a, cf_tv **b) {
  *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, *a);
  cf_fusion_add_input(f, *b);
  cf_tv *bb = cf_broadcast(f, *b, 2, (bool[]){true, false});
  cf_tv *out = cf_relu(f, cf_add(f, cf_mul(f, *a, bb), *a));
  cf_fusion_add_output(f, out);
  return out;
}

/* One block per row, 8 threads per block over the columns, everything inlined. */
static void schedule(cf_fusion *f, cf_tv *out) {
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 8);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
}

cf_fusion *cf_tool_demo_fusion(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a, *b;
  schedule(f, build(f, &a, &b));
  return f;
}

static void print_row(const char *title, const DLManagedTensor *t) {
  printf("\n=== %s: out[0, :] ===\n", title);
  for (int j = 0; j < 8; j++) printf("%s%.4f", j ? " " : "", cf_tensor_get(&t->dl_tensor, j));
  printf("\n");
}

/* Runs the compiled kernel on the executor's backend; the output comes back on the host. */
static cf_status run_kernel(cf_executor *e, DLManagedTensor **host_in, DLManagedTensor **out) {
  if (cf_executor_backend(e) == CF_BACKEND_HOST) {
    const DLTensor *ins[2] = {&host_in[0]->dl_tensor, &host_in[1]->dl_tensor};
    return cf_executor_run(e, 2, ins, 1, out);
  }
  DLManagedTensor *dev[2], *dout = NULL;
  for (int i = 0; i < 2; i++) {
    DLTensor *h = &host_in[i]->dl_tensor;
    dev[i] = cf_tensor_device(CF_FLOAT, h->ndim, h->shape);
    cf_tensor_copy(&dev[i]->dl_tensor, h);
  }
  const DLTensor *ins[2] = {&dev[0]->dl_tensor, &dev[1]->dl_tensor};
  cf_status s = cf_executor_run(e, 2, ins, 1, &dout);
  if (s == CF_OK) {
    *out = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 8});
    s = cf_tensor_copy(&(*out)->dl_tensor, &dout->dl_tensor);
  }
  cf_tensor_free(dev[0]);
  cf_tensor_free(dev[1]);
  cf_tensor_free(dout);
  return s;
}

static int compile_and_run(cf_fusion *f) {
  DLManagedTensor *in[2] = {cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 8}), cf_tensor_host(CF_FLOAT, 1, (int64_t[]){8})};
  DLManagedTensor *want = NULL, *got = NULL;
  cf_tensor_fill_random(&in[0]->dl_tensor, 1);
  cf_tensor_fill_random(&in[1]->dl_tensor, 2);
  const DLTensor *ins[2] = {&in[0]->dl_tensor, &in[1]->dl_tensor};
  int rc = 1;
  cf_executor *e = cf_executor_create(NULL);
  if (cf_fusion_evaluate(f, 2, ins, &want) != CF_OK) goto done;
  print_row("reference evaluator", want);
  if (cf_executor_compile(e, f) != CF_OK || run_kernel(e, in, &got) != CF_OK) {
    fprintf(stderr, "cfuser demo: %s\n", cf_executor_error(e));
    goto done;
  }
  cf_launch_params lp = cf_executor_last_launch_params(e);
  print_row(cf_executor_backend(e) == CF_BACKEND_HOST ? "kernel on the host backend" : "kernel on the GPU", got);
  printf("launch: grid (%lld, %lld, %lld), block (%lld, %lld, %lld), %lld bytes of shared memory\n",
         (long long)lp.grid[0], (long long)lp.grid[1], (long long)lp.grid[2], (long long)lp.block[0],
         (long long)lp.block[1], (long long)lp.block[2], (long long)lp.smem);
  bool same = cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-6, 1e-6, NULL, 0);
  printf("kernel %s the reference evaluator\n", same ? "matches" : "DIFFERS FROM");
  rc = same ? 0 : 1;
done:
  cf_executor_destroy(e);
  cf_tensor_free(in[0]);
  cf_tensor_free(in[1]);
  cf_tensor_free(want);
  cf_tensor_free(got);
  return rc;
}

int cf_tool_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  cf_fusion *f = cf_fusion_create();
  cf_tv *a, *b;
  cf_tv *out = build(f, &a, &b);
  printf("=== math ===\n");
  if (cf_fusion_print_math(f, stdout)) return fail(f);
  schedule(f, out);
  printf("\n=== transforms after scheduling ===\n");
  if (cf_fusion_print_transforms(f, stdout)) return fail(f);
  printf("\n=== CUDA kernel ===\n");
  if (cf_fusion_print_kernel(f, stdout)) return fail(f);
  int rc = compile_and_run(f);
  cf_fusion_destroy(f);
  return rc;
}
