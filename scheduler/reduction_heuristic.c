/* scheduler/reduction_heuristic.c: the reduction scheduler's parameters for a shape on a
 * device (sched_reduction_heuristic_for), the second of its three steps (see
 * reduction_heuristic.h). After nvFuser's inner2dReductionHeuristic and
 * outerReductionHeuristic (ideas, not code), from the call's sizes and the device
 * description alone:
 *
 * Common: a vector is 16 bytes of the widest input, halved until it divides the
 * innermost extent (1 when the inputs are strided or that extent is symbolic); a thread
 * should have RED_BYTES_IN_FLIGHT bytes of loads in flight per step, so the unroll is
 * that over (vector x element x inputs), at least 1. A full wave is the blocks the device
 * holds at full occupancy: SMs x (threads per SM / threads per block).
 *
 * INNER (rows reduced along their contiguous axis; x reduces the row, y takes rows):
 *   1. threads per block: RED_INNER_BLOCK (256), raised to the power of two that lets the
 *      rows fill half of every SM's threads when there are few rows (at most half the
 *      block limit), never past the block limit;
 *   2. x: at most 4 warps first, the unroll takes what is left of the row up to its
 *      target, then x grows up to the block target; x over 16 is padded to whole warps
 *      (warp-shuffle reductions), x of 16 or fewer is a power of two;
 *   3. y: the rows that fit in the rest of the block (several short rows per block);
 *   4. blocks over the rows: rows / y; a grid reduction when they are fewer than a full
 *      wave: the row is split across grid = full wave / blocks blocks, as long as each
 *      thread keeps at least RED_MIN_STEPS steps (rows on blockIdx.y, the split on
 *      blockIdx.x).
 * OUTER (columns and middle axes; x takes columns, y reduces rows):
 *   1. x: a warp of columns (fewer for narrow matrices: the power of two covering them),
 *      each thread loading a vector of adjacent columns; blocks over the columns:
 *      columns / (x vector);
 *   2. y: rows of the column in one block, up to RED_OUTER_BLOCK threads per block; when
 *      the column blocks alone fill the device (a full wave), only as many rows on y as
 *      leave each thread RED_MIN_STEPS unrolled steps (2'): 16 x 2^20 float column sums
 *      ran 16 rows of one element each on y and spent their time in the y reduction's
 *      barriers (0.59x torch.compile on an H200);
 *   3. the unroll (rows per thread per step, at most what is left);
 *   4. a grid reduction over rows when the column blocks are fewer than a full wave:
 *      grid = full wave / column blocks, each thread keeping RED_MIN_STEPS steps
 *      (columns on blockIdx.x, the row split on blockIdx.y).
 * Unknown sizes (a symbolic fusion planned without a call) plan as RED_UNKNOWN elements:
 * no grid reduction, correct for any size (splits are predicated).
 * Tuned on: nothing yet beyond the two reference shapes (16384 x 16384 row and column
 * sums on an H200). The sweep to tune the constants and the rule on is bench/
 * reduction_sweep.c (bench/run_reduction_sweep.sh): row and column sums and maxima of
 * float, bfloat16 and half over rows and columns from 1 to 2^20 (primes, vocabulary and
 * hidden sizes), against torch eager, torch.compile and the copy bandwidth. */
#include "scheduler/persistent.h"
#include "scheduler/reduction_heuristic.h"

enum {
  RED_WARP = 32,
  RED_BYTES_IN_FLIGHT = 32,   /* per thread per step: a 16-byte vector unrolled twice */
  RED_INNER_BLOCK = 256,      /* threads of an inner reduction's block (nvFuser's target) */
  RED_OUTER_BLOCK = 512,      /* threads of an outer reduction's block */
  RED_MIN_STEPS = 4,          /* serial steps each thread keeps when a grid splits the reduction */
  RED_MAX_GRID_Y = 65535,     /* gridDim.y limit */
};
static const int64_t RED_UNKNOWN = (int64_t)1 << 20;

/* Powers of two around x, without overflow for an extent near INT64_MAX (the ceiling
 * stops at 2^62, the largest). */
static int64_t pow2_floor(int64_t x) {
  int64_t p = 1;
  while (p <= x / 2) p *= 2;
  return p;
}

static int64_t pow2_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x && p <= INT64_MAX / 4) p *= 2;
  return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* 16 bytes of the widest input, halved until it divides the innermost extent. */
static int vector_width(const RedShape *s) {
  if (!s->can_vectorize || s->inner < 1) return 1;
  int v = SCHED_VECTOR_BYTES / s->elem_bytes;
  while (v > 1 && s->inner % v != 0) v /= 2;
  return v < 1 ? 1 : v;
}

static int64_t unroll_target(const RedShape *s, int vec) {
  return max64(1, pow2_floor(RED_BYTES_IN_FLIGHT / ((int64_t)vec * s->elem_bytes * s->ninputs)));
}

/* Blocks the device holds at full occupancy for blocks of `threads`. */
static int64_t full_wave(const SchedDevice *d, int64_t threads) {
  return (int64_t)d->sm_count * max64(1, d->max_threads_per_sm / threads);
}

/* Blocks splitting a reduction whose threads take `steps` serial steps each, when only
 * `blocks` blocks run otherwise. */
static int64_t grid_split(const SchedDevice *d, int64_t threads, int64_t blocks, int64_t steps, int64_t limit) {
  int64_t wave = full_wave(d, threads);
  if (blocks >= wave) return 1;
  return max64(1, min64(min64(wave / blocks, steps / RED_MIN_STEPS), limit));
}

static void inner_rule(const RedShape *s, const SchedDevice *d, RedParams *p) {
  int64_t iter = s->iter < 0 ? RED_UNKNOWN : max64(s->iter, 1), red = s->red < 0 ? RED_UNKNOWN : max64(s->red, 1);
  p->vec = vector_width(s);
  int64_t half_sm = d->max_threads_per_sm / 2;
  int64_t block = max64(RED_INNER_BLOCK, min64(pow2_ceil(ck_ceil_div(half_sm * d->sm_count, iter)),
                                               d->max_threads_per_block / 2));
  block = min64(block, d->max_threads_per_block);
  int64_t after_vec = ck_ceil_div(red, p->vec);
  int64_t x = min64(after_vec, 4 * RED_WARP);
  int64_t unroll = min64(ck_ceil_div(after_vec, x), unroll_target(s, p->vec));
  x = min64(ck_ceil_div(after_vec, unroll), block);
  x = x > RED_WARP / 2 ? min64(ck_ceil_div(x, RED_WARP) * RED_WARP, block) : pow2_ceil(x);
  int64_t y = max64(1, min64(iter, block / x));
  p->unroll = (int)unroll;
  p->bdimx = (int)x;
  p->bdimy = (int)y;
  p->blocks = ck_ceil_div(iter, y);
  int64_t steps = ck_ceil_div(after_vec, x * unroll);
  p->grid = s->iter < 0 || s->red < 0 || p->blocks > RED_MAX_GRID_Y ? 1 : grid_split(d, x * y, p->blocks, steps, INT32_MAX);
}

static void outer_rule(const RedShape *s, const SchedDevice *d, RedParams *p) {
  int64_t iter = s->iter < 0 ? RED_UNKNOWN : max64(s->iter, 1), red = s->red < 0 ? RED_UNKNOWN : max64(s->red, 1);
  p->vec = vector_width(s);
  int64_t x = min64(pow2_ceil(ck_ceil_div(iter, p->vec)), RED_WARP);
  x = min64(x, d->max_threads_per_block);
  int64_t y = max64(1, min64(min64(RED_OUTER_BLOCK, d->max_threads_per_block) / x, red));
  int64_t target = unroll_target(s, p->vec);
  if (s->iter >= 0 && s->red >= 0 && ck_ceil_div(iter, x * p->vec) >= full_wave(d, x * y))
    y = max64(1, min64(y, pow2_floor(max64(1, red / (RED_MIN_STEPS * target))))); /* rule 2' */
  int64_t unroll = min64(target, ck_ceil_div(red, y));
  p->bdimx = (int)x;
  p->bdimy = (int)y;
  p->unroll = (int)unroll;
  p->blocks = ck_ceil_div(iter, x * p->vec);
  int64_t steps = ck_ceil_div(red, y * unroll);
  p->grid = s->iter < 0 || s->red < 0 ? 1 : grid_split(d, x * y, p->blocks, steps, RED_MAX_GRID_Y);
}

RedParams sched_reduction_heuristic_for(const RedShape *s, const SchedDevice *dev) {
  RedParams p = {0};
  p.layout = s->layout;
  p.rank = s->rank;
  p.nkept = s->nkept;
  for (int a = 0; a < s->rank; a++) p.order[a] = s->order[a];
  p.reordered = s->reordered;
  if (s->layout == RED_INNER) inner_rule(s, dev, &p);
  else outer_rule(s, dev, &p);
  return p;
}
