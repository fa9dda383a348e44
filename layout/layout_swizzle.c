/* layout/layout_swizzle.c: CuTe's Swizzle<B, M, S>, the XOR function of offsets that
 * shared-memory tiles are stored through (include/cfuser/layout.h), and the choice of one
 * for tiles read 16 bytes per lane (ldmatrix, cp.async, vector loads).
 *
 * Swizzle<B, M, S>(o) = o ^ ((o & yyy) >> S), yyy = ((1 << B) - 1) << (M + S): the B bits
 * above the lowest M + S are XORed into the B bits above the lowest M (S > 0 here; CuTe's
 * negative shifts move bits the other way and are not needed by a tile's row-to-chunk
 * swizzle). It is a bijection (|S| >= B: the bits it reads are never the bits it changes),
 * its own inverse, and keeps every aligned block of 2^M offsets together.
 * Key decision: the swizzle for rows of 16-byte chunks is derived, not tabled: bank
 * conflicts depend only on which 16-byte slot of a 128-byte line each lane's chunk lands
 * in, so B is the number of chunk bits that address such a slot (at most 3), S the
 * distance from the chunk bits to the row bits that pick the line, and M the bits of one
 * chunk; the scheduler turns the result into a cf_swizzle_xor of axes, and tests check
 * the property on the tile (no two lanes of a phase on one bank). */
#include <stdio.h>

#include "layout/layout_internal.h"

static int log2_exact(int64_t v) {
  int k = 0;
  while (v > 1 && !(v & 1)) v >>= 1, k++;
  return v == 1 ? k : -1;
}

int64_t cf_swizzle_apply(cf_swizzle s, int64_t offset) {
  int64_t yyy = (((int64_t)1 << s.bits) - 1) << (s.base + s.shift);
  return offset ^ ((offset & yyy) >> s.shift);
}

cf_status cf_swizzle_check(cf_swizzle s, cf_layout_err *err) {
  cf_layout_err local, *e = lay_err_begin(err, &local);
  if (s.bits < 0 || s.base < 0 || s.shift < s.bits || s.base + s.shift + s.bits > 62)
    lay_fail(e, CF_ERR_INVALID_ARGUMENT,
             "swizzle: Sw<%d,%d,%d> is not a bijection CuTe allows (need B >= 0, M >= 0, S >= B, "
             "M + S + B <= 62)", s.bits, s.base, s.shift);
  return e->status;
}

cf_status cf_swizzle_for_rows(int64_t elem_bytes, int64_t row_bytes, cf_swizzle *out, cf_layout_err *err) {
  cf_layout_err local, *e = lay_err_begin(err, &local);
  int m = elem_bytes > 0 && 16 % elem_bytes == 0 ? log2_exact(16 / elem_bytes) : -1;
  int c = row_bytes >= 16 ? log2_exact(row_bytes / 16) : -1;
  if (m < 0 || c < 0 || row_bytes % 16)
    lay_fail(e, CF_ERR_INVALID_ARGUMENT,
             "swizzle: rows of %lld bytes of %lld-byte elements are not whole 16-byte chunks, a power "
             "of 2 of them (no swizzle makes their 16-byte reads conflict free)",
             (long long)row_bytes, (long long)elem_bytes);
  if (lay_ok(e)) *out = (cf_swizzle){c < 3 ? c : 3, m, c > 3 ? c : 3};
  return e->status;
}

int cf_swizzle_snprint(char *buf, size_t n, cf_swizzle s) {
  return snprintf(buf, n, "Sw<%d,%d,%d>", s.bits, s.base, s.shift);
}
