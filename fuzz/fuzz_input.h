/* fuzz/fuzz_input.h: reading a libFuzzer input as a stream of choices (header-only,
 * shared by the harnesses). An exhausted input reads as zeros, so every byte string is a
 * valid program. Values are biased towards the small and the hostile: most sizes are
 * 1..8, some are 0, negative, or near the int64 limits. */
#ifndef CFUSER_FUZZ_INPUT_H
#define CFUSER_FUZZ_INPUT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Under ASan an allocation over 1 GiB returns NULL, which the library reports as out of
 * memory, instead of libFuzzer's out-of-memory stop: a call may rightly ask for 2^32
 * elements (the sum over the empty axis of a [2^32, 0] input). Each harness is one
 * translation unit, so this definition is made once per program. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=1024:allocator_may_return_null=1"; }

typedef struct FuzzIn {
  const uint8_t *p;
  size_t n;
} FuzzIn;

static inline unsigned fz_byte(FuzzIn *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

/* A choice among n (n >= 1). */
static inline int fz_pick(FuzzIn *in, int n) { return (int)(fz_byte(in) % (unsigned)n); }

/* A size or factor: mostly 1..8, sometimes hostile. */
static inline int64_t fz_size(FuzzIn *in) {
  static const int64_t hostile[8] = {0, -1, 1, 1024, INT64_C(1) << 31, INT64_C(1) << 32, INT64_C(1) << 62, INT64_MAX};
  unsigned b = fz_byte(in);
  return b < 224 ? 1 + (int64_t)(b % 8) : hostile[b % 8];
}

/* An axis or position: mostly in -4..4, sometimes far out. */
static inline int fz_axis(FuzzIn *in) {
  unsigned b = fz_byte(in);
  return b < 240 ? (int)(b % 9) - 4 : (b % 2 ? 1000 : -1000);
}

static inline double fz_double(FuzzIn *in) {
  static const double special[8] = {0.0, -0.0, 1.0, -2.5, 1e308, 1e-310, INFINITY, NAN};
  return special[fz_pick(in, 8)];
}

#endif
