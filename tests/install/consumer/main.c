/* A program outside the project, built against an installed cfuser: it builds a
 * one-op fusion and prints its math. */
#include <cfuser.h>
#include <stdio.h>

int main(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *t0 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_fusion_add_input(f, t0);
  cf_tv *t1 = cf_set(f, t0);
  cf_fusion_add_output(f, t1);
  int rc = cf_fusion_print_math(f, stdout) == CF_OK ? 0 : 1;
  cf_fusion_destroy(f);
  return rc;
}
