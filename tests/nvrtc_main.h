/* tests/nvrtc_main.h: the main() of test files that are mostly about NVRTC. It runs the
 * file's Criterion tests as usual (those needing NVRTC skip themselves with the reason);
 * where NVRTC is missing and nothing failed, it prints why and exits 77, which ctest
 * reports as "Skipped" (SKIP_RETURN_CODE), as gpu_main.h does for a missing device.
 * Include it once, after the tests. */
#ifndef CFUSER_NVRTC_MAIN_H
#define CFUSER_NVRTC_MAIN_H

#include <cfuser.h>
#include <criterion/criterion.h>
#include <stdio.h>

int main(int argc, char **argv) {
  struct criterion_test_set *tests = criterion_initialize();
  int result = 0;
  if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
  criterion_finalize(tests);
  const char *reason = NULL;
  if (result == 0 && !cf_nvrtc_available(&reason)) {
    printf("skipped: NVRTC unavailable: %s (the tests that need no NVRTC ran and passed)\n", reason);
    return 77;
  }
  return result;
}

#endif
