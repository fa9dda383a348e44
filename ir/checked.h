/* ir/checked.h: checked integer arithmetic for sizes, strides, offsets and extents
 * (internal header), and the limits on them.
 *
 * Every place that multiplies or adds sizes, strides, element counts or byte counts goes
 * through these helpers, so an overflow is a refused call with a message rather than a
 * wrapped value (a {2^62} tensor with a 64-byte buffer, a merged {2^32, 2^32} axis of
 * extent 0). Each returns false on overflow and leaves *r unspecified. */
#ifndef CFUSER_IR_CHECKED_H
#define CFUSER_IR_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser/types.h"

/* The largest constant split factor: a larger one gives a loop that never finishes in
 * practice (INT64_MAX iterations of a predicated inner loop). */
#define IR_MAX_SPLIT_FACTOR ((int64_t)INT32_MAX)

static inline bool ck_add(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool ck_mul(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* ceil(a / b) for b > 0 and any a, without the overflow of (a + b - 1) / b near
 * INT64_MAX (an extent of 2^63 - 1 reaches a heuristic). */
static inline int64_t ck_ceil_div(int64_t a, int64_t b) { return a / b + (a % b > 0); }

/* The product of n non-negative sizes (0 when one is 0, whatever the others); false on a
 * negative size or an overflow. */
static inline bool ck_numel(int n, const int64_t *sizes, int64_t *r) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (sizes[i] < 0) return false;
  for (int i = 0; i < n; i++) /* an empty tensor has 0 elements whatever its other sizes */
    if (sizes[i] == 0) return *r = 0, true;
  for (int i = 0; i < n; i++)
    if (!ck_mul(p, sizes[i], &p)) return false;
  *r = p;
  return true;
}

/* The elements a strided tensor's storage spans: 1 + sum (size-1)*stride, 0 when a size
 * is 0; strides NULL means row-major. False on a negative size or stride, or overflow. */
static inline bool ck_span(int n, const int64_t *sizes, const int64_t *strides, int64_t *r) {
  int64_t span = 1, row = 1;
  for (int d = 0; d < n; d++)
    if (sizes[d] < 0 || (strides && strides[d] < 0)) return false;
  for (int d = 0; d < n; d++)
    if (sizes[d] == 0) {
      *r = 0;
      return true;
    }
  for (int d = n - 1; d >= 0; d--) {
    int64_t step;
    if (!ck_mul(sizes[d] - 1, strides ? strides[d] : row, &step) || !ck_add(span, step, &span)) return false;
    if (!ck_mul(row, sizes[d], &row)) row = INT64_MAX; /* only used when strides is NULL */
  }
  *r = span;
  return true;
}

/* elements * element size in bytes, rounded up to `align` (a power of two), as a size_t
 * that also fits in int64; false on overflow. */
static inline bool ck_bytes(int64_t elements, size_t elem_size, size_t align, size_t *r) {
  int64_t bytes;
  if (elements < 0 || !ck_mul(elements, (int64_t)elem_size, &bytes) || !ck_add(bytes, (int64_t)align - 1, &bytes))
    return false;
  *r = (size_t)bytes / align * align;
  return true;
}

#endif
