/* tests/gpu_main.h: the main() of gpu-labelled test files. Without a usable CUDA device it
 * prints why and exits 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE); with one
 * it runs the Criterion tests of the file as usual. Include it once, after the tests. */
#ifndef CFUSER_GPU_MAIN_H
#define CFUSER_GPU_MAIN_H

#include <cfuser.h>
#include <criterion/criterion.h>
#include <stdio.h>

int main(int argc, char **argv) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) {
    printf("skipped: no CUDA device: %s\n", reason ? reason : "unknown reason");
    return 77;
  }
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  return result;
}

#endif
