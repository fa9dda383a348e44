/* tests/scheduler/sched_test_util.h: helpers shared by the scheduler tests: printed-domain
 * and error-message assertions over a suite-wide fusion `f`, and the seed tutorial's
 * fancyTransformations. Header-only. */
#ifndef CFUSER_SCHED_TEST_UTIL_H
#define CFUSER_SCHED_TEST_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

#define EXPECT_TV(t, s)             \
  do {                              \
    char *got_ = tu_tv_str(f, (t)); \
    cr_expect_str_eq(got_, (s));    \
    free(got_);                     \
  } while (0)

#define EXPECT_ERROR(call, status, msg)          \
  do {                                           \
    cr_expect_eq((call), (status));              \
    cr_expect_str_eq(cf_fusion_error(f), (msg)); \
  } while (0)

#define EXPECT_OK(call)                                                      \
  do {                                                                       \
    cf_status st_ = (call);                                                  \
    cr_assert_eq(st_, CF_OK, "%s failed: %s", #call, cf_fusion_error(f));    \
  } while (0)

/* The seed tutorial's fancyTransformations: a [4096, 4096] tensor XOR-swizzled and split
 * in a complicated way, back to shape [4096, 4096]. */
static inline void tu_fancy_transformations(cf_fusion *fu, cf_tv *tv) {
  static const int order[4] = {3, 0, 2, 1};
  cf_swizzle_xor(fu, tv, 0, 1);
  cf_split(fu, tv, 1, 64);
  cf_split(fu, tv, 0, 64);
  cf_reorder_all(fu, tv, 4, order);
  cf_swizzle_xor(fu, tv, 0, 1);
  cf_swizzle_xor(fu, tv, 2, 3);
  cf_swizzle_xor(fu, tv, 1, 2);
  cf_reorder_all(fu, tv, 4, order);
  cf_merge(fu, tv, 2);
  cf_merge(fu, tv, 0);
}

#endif
