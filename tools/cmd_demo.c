/* tools/cmd_demo.c: `cfuser demo`: builds a small fusion (out = relu(a * b + a) over a
 * 4x8 float tensor and a broadcast row), schedules it the way the tutorials do, prints
 * its math and transforms, and evaluates it with the reference evaluator. Uses only the
 * public API, so it doubles as the README's example. */
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

static int evaluate(cf_fusion *f, cf_tv *a, cf_tv *b) {
  DLManagedTensor *ta = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){4, 8});
  DLManagedTensor *tb = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){8});
  DLManagedTensor *out = NULL;
  (void)a;
  (void)b;
  cf_tensor_fill_random(&ta->dl_tensor, 1);
  cf_tensor_fill_random(&tb->dl_tensor, 2);
  const DLTensor *ins[2] = {&ta->dl_tensor, &tb->dl_tensor};
  cf_status s = cf_fusion_evaluate(f, 2, ins, &out);
  if (s == CF_OK) {
    printf("\n=== reference evaluator: out[0, :] ===\n");
    for (int j = 0; j < 8; j++) printf("%s%.4f", j ? " " : "", cf_tensor_get(&out->dl_tensor, j));
    printf("\n");
  }
  cf_tensor_free(ta);
  cf_tensor_free(tb);
  cf_tensor_free(out);
  return s == CF_OK ? 0 : 1;
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
  if (evaluate(f, a, b)) return fail(f);
  cf_fusion_destroy(f);
  return 0;
}
