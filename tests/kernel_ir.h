/* tests/kernel_ir.h: a fusion lowered and its kernel IR printed (lower/kir_print.c), the
 * text the tests that specify a pass's output compare exactly; the lowering's error fails
 * the test. Header-only (a static function). */
#ifndef CFUSER_TESTS_KERNEL_IR_H
#define CFUSER_TESTS_KERNEL_IR_H

#include <criterion/criterion.h>

#include "lower/lower.h"

/* f's kernel IR (the caller frees it). */
static inline char *test_kernel_ir(cf_fusion *f) {
  KKernel *k = NULL;
  char *err = NULL;
  cr_assert_eq(lower_fusion(f, &(LowerOptions){0}, &k, &err), CF_OK, "%s", err ? err : "");
  StrBuf text = {0};
  kir_print(&text, k);
  kkernel_free(k);
  return text.data;
}

#endif
