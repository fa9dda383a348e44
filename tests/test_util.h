/* tests/test_util.h: helpers shared by the test suites: capturing printed IR as strings
 * and building the tutorials' standard fusions. Header-only (static functions). */
#ifndef CFUSER_TEST_UTIL_H
#define CFUSER_TEST_UTIL_H

#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs a printer into a malloc'd string (the caller frees it). */
static inline char *tu_capture_fusion(cf_status (*fn)(cf_fusion *, FILE *), cf_fusion *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  fn(f, m);
  fclose(m);
  return buf;
}

static inline char *tu_tv_str(cf_fusion *f, cf_tv *tv) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cf_tv_print(f, tv, m);
  fclose(m);
  if (len && buf[len - 1] == '\n') buf[len - 1] = 0;
  return buf;
}

/* The tutorials' chain tv0 (input) -> tv1 -> tv2 -> tv3 -> tv4 (output) of sets, each
 * stored in tv[0..4]. */
static inline void tu_set_chain(cf_fusion *f, cf_dtype dt, int rank, const int64_t *sizes, cf_tv *tv[5]) {
  tv[0] = sizes ? cf_tensor_concrete(f, dt, rank, sizes) : cf_tensor_symbolic(f, dt, rank);
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 5; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[4]);
}

#endif
