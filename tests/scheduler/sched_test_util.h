/* tests/scheduler/sched_test_util.h: the scheduler tests' includes; their assertions
 * (EXPECT_TV, EXPECT_ERROR, EXPECT_OK) and fancyTransformations are in test_util.h. */
#ifndef CFUSER_SCHED_TEST_UTIL_H
#define CFUSER_SCHED_TEST_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

#endif
