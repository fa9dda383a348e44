/* CFUSER_DUMP to a file: with CFUSER_DUMP_FILE set, the dumps (here CFUSER_DUMP=times,
 * every kernel's compile time by stage) are appended to that file, not standard error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfuser.h"

Test(dump_file, compile_times_go_to_the_dump_file) {
  char path[] = "/tmp/cfuser-dump-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  setenv("CFUSER_DUMP", "times", 1);
  setenv("CFUSER_DUMP_FILE", path, 1);
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){32});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_relu(f, cf_mul_scalar(f, x, 3.0)));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  FILE *in = fopen(path, "r");
  char line[512] = "";
  cr_assert_not_null(fgets(line, sizeof line, in), "the dump file holds a line");
  fclose(in);
  unlink(path);
  const char *head = "=== compile of ";
  cr_expect_eq(strncmp(line, head, strlen(head)), 0, "%s", line);
  cr_expect_not_null(strstr(line, " (host): lowering "), "%s", line);
  cr_expect_not_null(strstr(line, " ms, codegen "), "%s", line);
  cr_expect_not_null(strstr(line, " ms, C compiler "), "%s", line);
  cr_expect(strstr(line, " ms ===\n") || strstr(line, " ms (disk cache hit) ===\n"), "%s", line);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}
