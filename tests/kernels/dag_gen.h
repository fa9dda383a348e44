/* tests/kernels/dag_gen.h: the random-DAG generator of tests/kernels/test_random_dags.c.
 * From a seed it builds one fusion that is a DAG, not a chain: one or two full-rank
 * inputs (rank 2 or 3) and lower-rank inputs broadcast into them, values with several
 * consumers, computed lower-rank values broadcast (the op before the broadcast), sums
 * whose results are broadcast back (x - sum(x), softmax), sometimes symbolic sizes and
 * several outputs. It then schedules it at random: splits, merges and reorders on a
 * reference, propagation, sometimes transforms on another tensor, thread and block
 * parallelization, Unroll and Unswitch, memory types, and a random sequence of inlining calls (inline_most,
 * inline_at, inline_at_best_effort, inline_all_at, compute_at) at random positions.
 * Issue 28's options (DgCase.extra, on top of any mode; none is on in modes 0-4, whose
 * seeds draw exactly what they drew before): transposes and permutes (of axes of equal
 * sizes, so the result combines with untransposed values: x^T + x) and double
 * transposes; dead ops (values nothing uses); half, bfloat16 and int32 inputs; strided
 * inputs of symbolic sizes, some 0 or 1, which the test passes as reversed (negative
 * stride), broadcast (zero stride) or transposed views; and (the test's part) a caller
 * output aliasing an input, which must be refused.
 * Header-only; only the fuzz test includes it. */
#ifndef CFUSER_DAG_GEN_H
#define CFUSER_DAG_GEN_H

#include <cfuser.h>
#include <stdint.h>
#include <string.h>

#define DG_MAX_VALS 64 /* values per case (ancestor sets are 64-bit masks) */
#define DG_MAX_INPUTS 4
#define DG_MAX_AXES 16 /* loop axes of the reference the generator keeps track of */

typedef struct DgRng {
  uint64_t s;
} DgRng;
static inline uint32_t dg_rnd(DgRng *r, uint32_t n) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(r->s >> 33) % n;
}

typedef struct DgVal {
  cf_tv *tv;
  uint64_t anc;  /* bit i: vals[i] is this value or one of its producers */
  unsigned mask; /* full-rank axes present (bit a: axis a of the full shape) */
  bool input, output, used;
  bool states;   /* Welford states: only their fields are read (never picked as an operand) */
  bool red;      /* made by a reduction (sum, max, Welford): mode 5 rfactors it */
} DgVal;

typedef struct DgCase {
  cf_fusion *f;
  DgRng r;
  DgRng ru;         /* a second stream for the Unswitch choice, so that adding it changed no
                     * other choice of a seed (the pinned seeds keep their schedules) */
  int rank;
  int64_t sizes[3];
  bool symbolic;
  bool par_red;     /* modes 1, 2: reduction axes parallelized too, max as well as sum, warp-sized rows */
  bool global;      /* mode 2: mode 1 with some intermediates in global memory */
  bool welford;     /* modes 3, 4: mode 1 with some reductions Welford (mean or variance read back) */
  unsigned reduced; /* full-rank axes some sum reduces */
  DgVal v[DG_MAX_VALS];
  int nv;
  int nin;
  int64_t in_sizes[DG_MAX_INPUTS][3];
  int in_rank[DG_MAX_INPUTS];
  unsigned extra;                  /* DG_X_* options (issue 28) */
  bool strided;                    /* DG_X_SHAPES: inputs of arbitrary strides */
  cf_dtype in_dtype[DG_MAX_INPUTS]; /* each input's dtype (float unless DG_X_DTYPES) */
  cf_dtype low;                    /* DG_X_DTYPES: the case's other dtype */
} DgCase;

/* Issue 28's generator options, bits of DgCase.extra. */
enum {
  DG_X_TRANSPOSE = 1, /* transposes and permutes under every inlining call */
  DG_X_DEAD = 2,      /* dead ops */
  DG_X_DTYPES = 4,    /* half, bfloat16 and int32 inputs, reduced like the others */
  DG_X_SHAPES = 8,    /* strided symbolic inputs: sizes 0 and 1, negative and zero strides */
  DG_X_ALIAS = 16,    /* (the test) a caller output over an input, which must be refused */
  DG_X_ALL = 31
};

static inline unsigned dg_full(const DgCase *c) { return (1u << c->rank) - 1; }

/* Records a new value made from the values at indices a and b (-1: none). */
static inline int dg_add(DgCase *c, cf_tv *tv, int a, int b, unsigned mask) {
  if (!tv || c->nv == DG_MAX_VALS) return -1;
  DgVal *v = &c->v[c->nv];
  *v = (DgVal){tv, 1ULL << c->nv, mask, false, false, false, false, false};
  if (a >= 0) v->anc |= c->v[a].anc, c->v[a].used = true;
  if (b >= 0) v->anc |= c->v[b].anc, c->v[b].used = true;
  return c->nv++;
}

/* DG_X_DTYPES: the dtype of a new input: float half the time, else half, bfloat16 or
 * int32 (one per case, so values of one 16-bit type meet float ones). */
static inline cf_dtype dg_input_dtype(DgCase *c) {
  if (!(c->extra & DG_X_DTYPES)) return CF_FLOAT;
  return dg_rnd(&c->r, 2) ? CF_FLOAT : c->low;
}

static inline int dg_input(DgCase *c, unsigned mask) {
  int64_t sizes[3];
  int n = 0;
  for (int a = 0; a < c->rank; a++)
    if (mask & (1u << a)) sizes[n++] = c->sizes[a];
  cf_dtype dt = c->nin < DG_MAX_INPUTS ? c->in_dtype[c->nin] = dg_input_dtype(c) : CF_FLOAT;
  cf_tv *tv = c->strided    ? cf_tensor_strided(c->f, dt, n)
              : c->symbolic ? cf_tensor_symbolic(c->f, dt, n)
                            : cf_tensor_concrete(c->f, dt, n, sizes);
  cf_fusion_add_input(c->f, tv);
  memcpy(c->in_sizes[c->nin], sizes, sizeof sizes);
  c->in_rank[c->nin++] = n;
  int i = dg_add(c, tv, -1, -1, mask);
  c->v[i].input = true;
  return i;
}

/* A random value whose present axes equal `mask` (any value when mask == 0), or -1. */
static inline int dg_pick(DgCase *c, unsigned mask) {
  int cand[DG_MAX_VALS], n = 0;
  for (int i = 0; i < c->nv; i++)
    if ((!mask || c->v[i].mask == mask) && !c->v[i].states) cand[n++] = i;
  return n ? cand[dg_rnd(&c->r, (uint32_t)n)] : -1;
}

static inline int dg_unary(DgCase *c, int a) {
  cf_tv *x = c->v[a].tv, *y;
  switch (dg_rnd(&c->r, 5)) {
  case 0: y = cf_neg(c->f, x); break;
  case 1: y = cf_relu(c->f, x); break;
  case 2: y = cf_mul_scalar(c->f, x, 0.5); break;
  case 3: y = cf_abs(c->f, x); break;
  default: y = cf_set(c->f, x); break;
  }
  return dg_add(c, y, a, -1, c->v[a].mask);
}

static inline int dg_binary(DgCase *c, int a, int b) {
  cf_tv *x = c->v[a].tv, *y = c->v[b].tv, *z;
  switch (dg_rnd(&c->r, 3)) {
  case 0: z = cf_add(c->f, x, y); break;
  case 1: z = cf_sub(c->f, x, y); break;
  default: z = cf_mul(c->f, x, y); break;
  }
  return dg_add(c, z, a, b, c->v[a].mask | c->v[b].mask);
}

/* Broadcasts a lower-rank value to the full rank. */
static inline int dg_broadcast(DgCase *c, int a) {
  bool flags[3] = {false, false, false};
  for (int k = 0; k < c->rank; k++) flags[k] = !(c->v[a].mask & (1u << k));
  return dg_add(c, cf_broadcast(c->f, c->v[a].tv, c->rank, flags), a, -1, dg_full(c));
}

/* A lower-rank value (an input or computed, sometimes with an op before the broadcast),
 * broadcast and combined with a full-rank value. */
static inline int dg_broadcast_op(DgCase *c) {
  int lows[DG_MAX_VALS], n = 0;
  for (int i = 0; i < c->nv; i++)
    if (c->v[i].mask != dg_full(c) && !c->v[i].states) lows[n++] = i;
  if (!n) return dg_unary(c, dg_pick(c, dg_full(c)));
  int a = lows[dg_rnd(&c->r, (uint32_t)n)];
  if (dg_rnd(&c->r, 2)) a = dg_unary(c, a);
  int b = a < 0 ? -1 : dg_broadcast(c, a);
  return b < 0 ? -1 : dg_binary(c, dg_pick(c, dg_full(c)), b);
}

/* sum over one axis broadcast back: p - sum(p), or softmax e / sum(e) with e = exp(p). */
static inline int dg_reduction(DgCase *c) {
  int p = dg_pick(c, dg_full(c));
  int axis = dg_rnd(&c->r, 3) ? c->rank - 1 : (int)dg_rnd(&c->r, (uint32_t)c->rank);
  for (int a = 0; a < c->rank; a++) /* mostly one reduced axis per case, as in softmax */
    if ((c->reduced & (1u << a)) && dg_rnd(&c->r, 4)) axis = a;
  bool softmax = dg_rnd(&c->r, 2);
  if (softmax) p = dg_add(c, cf_exp(c->f, c->v[p].tv), p, -1, dg_full(c));
  if (p < 0) return -1;
  c->reduced |= 1u << axis;
  bool max = c->par_red && dg_rnd(&c->r, 3) == 0;
  unsigned low = dg_full(c) & ~(1u << axis);
  int s;
  cf_dtype pdt = cf_tv_dtype(c->v[p].tv);
  bool floating = pdt == CF_FLOAT || pdt == CF_DOUBLE || pdt == CF_HALF || pdt == CF_BFLOAT16;
  if (c->welford && dg_rnd(&c->r, 2) && floating) { /* the mean or the variance, through states */
    int w = dg_add(c, cf_welford(c->f, c->v[p].tv, 1, &axis), p, -1, low);
    if (w < 0) return -1;
    c->v[w].states = c->v[w].red = true;
    cf_tv *st = c->v[w].tv, *field = cf_welford_avg(c->f, st);
    if (dg_rnd(&c->r, 2)) { /* the variance + 1, as layer norm's var + eps: a division by a variance of
                              * equal values (rounding noise) would be ill-conditioned (seed 300759) */
      cf_tv *var = cf_div(c->f, cf_welford_m2(c->f, st), cf_cast(c->f, cf_welford_n(c->f, st), CF_FLOAT));
      field = cf_add_scalar(c->f, var, 1.0);
    }
    s = dg_add(c, field, w, -1, low);
  } else {
    cf_tv *r = max ? cf_max_reduce(c->f, c->v[p].tv, 1, &axis) : cf_sum(c->f, c->v[p].tv, 1, &axis);
    s = dg_add(c, r, p, -1, low);
    if (s >= 0) c->v[s].red = true;
  }
  if (s < 0) return -1;
  if (dg_rnd(&c->r, 4) == 0) c->v[s].output = true;
  int b = dg_broadcast(c, s);
  if (b < 0) return -1;
  cf_tv *z = softmax ? cf_div(c->f, c->v[p].tv, c->v[b].tv) : cf_sub(c->f, c->v[p].tv, c->v[b].tv);
  return dg_add(c, z, p, b, dg_full(c));
}

/* ---- issue 28's options ------------------------------------------------------------ */

/* DG_X_SHAPES: strided inputs of symbolic sizes, an axis of size 0 or 1 now and then;
 * DG_X_TRANSPOSE: often every axis of one size, so that any two axes can be swapped. */
static inline void dg_extra_shapes(DgCase *c) {
  static const cf_dtype low[3] = {CF_HALF, CF_BFLOAT16, CF_INT32};
  if (c->extra & DG_X_DTYPES) c->low = low[dg_rnd(&c->r, 3)];
  if ((c->extra & DG_X_TRANSPOSE) && dg_rnd(&c->r, 2))
    for (int a = 1; a < c->rank; a++) c->sizes[a] = c->sizes[0];
  if (!(c->extra & DG_X_SHAPES)) return;
  c->symbolic = c->strided = dg_rnd(&c->r, 3) == 0;
  int k = (int)dg_rnd(&c->r, 8), a = (int)dg_rnd(&c->r, (uint32_t)c->rank);
  if (c->symbolic && k == 0) c->sizes[a] = 0;
  else if (c->symbolic && k < 3) c->sizes[a] = 1;
}

/* A transpose of a full-rank value: of two axes of equal size (the result meets
 * untransposed values, x^T + x), a rotation of three equal axes, or two transposes back. */
static inline int dg_transpose(DgCase *c, int v) {
  if (v < 0) return -1;
  cf_tv *x = c->v[v].tv, *y;
  int a = (int)dg_rnd(&c->r, (uint32_t)c->rank), b = (a + 1 + (int)dg_rnd(&c->r, (uint32_t)c->rank - 1)) % c->rank;
  bool equal = c->sizes[a] == c->sizes[b];
  if (c->rank == 3 && c->sizes[0] == c->sizes[1] && c->sizes[1] == c->sizes[2] && dg_rnd(&c->r, 3) == 0)
    y = cf_permute(c->f, x, 3, (int[]){1, 2, 0});
  else if (equal && dg_rnd(&c->r, 4))
    y = cf_transpose(c->f, x, a, b);
  else
    y = cf_transpose(c->f, cf_transpose(c->f, x, a, b), a, b);
  return dg_add(c, y, v, -1, dg_full(c));
}

/* DG_X_DEAD: one to three ops nothing uses (unary, binary, a transpose, a sum), reading
 * any values. */
static inline void dg_dead_ops(DgCase *c) {
  int n = 1 + (int)dg_rnd(&c->r, 3);
  for (int i = 0; i < n && c->nv < DG_MAX_VALS - 4; i++) {
    int p = dg_pick(c, dg_full(c)), axis = (int)dg_rnd(&c->r, (uint32_t)c->rank);
    if (p < 0) return;
    switch (dg_rnd(&c->r, 4)) {
    case 0: dg_unary(c, p); break;
    case 1: dg_binary(c, p, dg_pick(c, dg_full(c))); break;
    case 2: dg_add(c, cf_transpose(c->f, cf_transpose(c->f, c->v[p].tv, 0, 1), 0, 1), p, -1, dg_full(c)); break;
    default: dg_add(c, cf_sum(c->f, c->v[p].tv, 1, &axis), p, -1, dg_full(c) & ~(1u << axis)); break;
    }
  }
}

/* The math: inputs, 3-7 random ops, outputs; unused values are folded into the last. */
static inline void dg_build_math(DgCase *c) {
  c->rank = 2 + (int)dg_rnd(&c->r, 2);
  for (int a = 0; a < c->rank; a++) c->sizes[a] = 2 + (int64_t)dg_rnd(&c->r, 8);
  if (c->par_red && dg_rnd(&c->r, 2)) { /* rows a warp or two long, for warp reductions */
    static const int64_t warpish[] = {31, 32, 33, 64};
    c->sizes[c->rank - 1] = warpish[dg_rnd(&c->r, 4)];
  }
  c->symbolic = dg_rnd(&c->r, 4) == 0;
  if (c->extra) dg_extra_shapes(c);
  dg_input(c, dg_full(c));
  if (dg_rnd(&c->r, 2)) dg_input(c, dg_full(c));
  if (dg_rnd(&c->r, 2)) dg_input(c, 1u << (c->rank - 1));
  if (dg_rnd(&c->r, 3) == 0) dg_input(c, dg_full(c) >> 1);
  int nops = 3 + (int)dg_rnd(&c->r, 5), last = 0;
  for (int i = 0; i < nops; i++) {
    int k = (int)dg_rnd(&c->r, 8), v;
    if ((c->extra & DG_X_TRANSPOSE) && dg_rnd(&c->r, 3) == 0) v = dg_transpose(c, dg_pick(c, dg_full(c)));
    else if (k < 2) v = dg_unary(c, dg_pick(c, dg_full(c)));
    else if (k < 4) v = dg_binary(c, dg_pick(c, dg_full(c)), dg_pick(c, dg_full(c)));
    else if (k < 6) v = dg_broadcast_op(c);
    else v = dg_reduction(c);
    if (v < 0) return;
    last = v;
  }
  if (dg_rnd(&c->r, 2)) {
    int o = dg_pick(c, dg_full(c));
    if (!c->v[o].input) c->v[o].output = true;
  }
  for (int i = 0; i < c->nv && last >= 0; i++) {
    if (c->v[i].used || c->v[i].output || i == last) continue;
    int b = c->v[i].mask == dg_full(c) ? i : dg_broadcast(c, i);
    last = b < 0 ? -1 : dg_add(c, cf_add(c->f, c->v[last].tv, c->v[b].tv), last, b, dg_full(c));
  }
  if (last < 0) return;
  c->v[last].output = true;
  for (int i = 0; i < c->nv; i++)
    if (c->v[i].output) cf_fusion_add_output(c->f, c->v[i].tv);
  if (c->extra & DG_X_DEAD) dg_dead_ops(c);
}

/* Whether the tracked axes keep every axis derived from a reduced axis innermost and
 * unmixed (serial reductions need their reduction loops innermost). */
static inline bool dg_order_ok(const DgCase *c, const unsigned *t, int n) {
  bool seen = false;
  for (int i = 0; i < n; i++) {
    bool red = t[i] & c->reduced;
    if ((red && (t[i] & ~c->reduced)) || (seen && !red)) return false;
    seen |= red;
  }
  return true;
}

/* Random splits, merges and reorders of tv. When track is given, track[i] follows which
 * full-rank axes loop axis i derives from. */
static inline void dg_transforms(DgCase *c, cf_tv *tv, int steps, unsigned *track) {
  for (int s = 0; s < steps; s++) {
    int n = cf_tv_naxes(tv), a = (int)dg_rnd(&c->r, (uint32_t)n), b = (int)dg_rnd(&c->r, (uint32_t)n);
    if (n >= DG_MAX_AXES - 1) return;
    switch (dg_rnd(&c->r, 4)) {
    case 0:
    case 1:
      if (cf_split(c->f, tv, a, 1 + (int64_t)dg_rnd(&c->r, 8)) == CF_OK && track) {
        memmove(&track[a + 1], &track[a], (size_t)(n - a) * sizeof *track);
      }
      break;
    case 2:
      if (n < 2) break;
      a = a == n - 1 ? a - 1 : a;
      if (track && dg_order_ok(c, track, n) && ((track[a] | track[a + 1]) & c->reduced) &&
          ((track[a] | track[a + 1]) & ~c->reduced) && dg_rnd(&c->r, 8))
        break;
      if (cf_merge(c->f, tv, a) == CF_OK && track) {
        track[a] |= track[a + 1];
        memmove(&track[a + 1], &track[a + 2], (size_t)(n - a - 2) * sizeof *track);
      }
      break;
    default:
      if (n < 2) break;
      if (track) {
        unsigned t[DG_MAX_AXES], moved = track[a];
        memcpy(t, track, sizeof t);
        memmove(&t[a], &t[a + 1], (size_t)(n - a - 1) * sizeof *t);
        memmove(&t[b + 1], &t[b], (size_t)(n - b - 1) * sizeof *t);
        t[b] = moved;
        if (dg_order_ok(c, track, n) && !dg_order_ok(c, t, n) && dg_rnd(&c->r, 8)) break;
        if (cf_reorder(c->f, tv, 1, (int[]){a, b}) == CF_OK) memcpy(track, t, sizeof t);
      } else {
        cf_reorder(c->f, tv, 1, (int[]){a, b});
      }
      break;
    }
  }
}

/* Thread types only on constant extents of at most 32 (64 on a reduction axis of mode 1;
 * symbolic ones could be anything). In mode 0 reduction axes stay serial: with track,
 * axes derived from a reduced full-rank axis are left alone, since parallelize_all_like
 * would carry their type to the reduction. Mode 1 parallelizes them like any other axis
 * (block reductions on threads, grid reductions on blocks). */
static inline void dg_parallelize(DgCase *c, cf_tv *tv, const unsigned *track) {
  static const cf_parallel_type types[] = {CF_PT_BIDX, CF_PT_TIDX, CF_PT_TIDY, CF_PT_BIDY, CF_PT_UNROLL};
  bool used[5] = {false};
  for (int i = 0; i < cf_tv_naxes(tv); i++) {
    int k = (int)dg_rnd(&c->r, 8);
    cf_id *id = cf_tv_axis(tv, i);
    bool red = cf_id_iter_type(id) == CF_ITER_REDUCTION || (track && i < DG_MAX_AXES && (track[i] & c->reduced));
    if (k >= 5 || used[k] || (red && !c->par_red)) continue;
    int64_t e = cf_id_extent(id);
    if ((types[k] == CF_PT_TIDX || types[k] == CF_PT_TIDY) && (e > (red ? 64 : 32) || e < 0)) continue;
    used[k] = true;
    cf_parallelize(c->f, tv, i, types[k]);
  }
}

/* Half of the hand schedules unswitch one serial loop axis of the reference (nvFuser's
 * split-by-1 unswitch included: the axis may have extent one); parallelize_all_like then
 * carries it, and loops shared with it take it. */
static inline void dg_unswitch(DgCase *c, cf_tv *tv) {
  int n = cf_tv_naxes(tv);
  if (n == 0 || dg_rnd(&c->ru, 2)) return;
  int i = (int)dg_rnd(&c->ru, (uint32_t)n);
  if (cf_id_parallel_type(cf_tv_axis(tv, i)) == CF_PT_SERIAL) cf_parallelize(c->f, tv, i, CF_PT_UNSWITCH);
}

/* A random position of tv for an inlining call: -1 (all), 0..naxes, sometimes past it. */
static inline int dg_pos(DgCase *c, cf_tv *tv) {
  int n = cf_tv_naxes(tv);
  return dg_rnd(&c->r, 8) ? (int)dg_rnd(&c->r, (uint32_t)n + 2) - 1 : n + 1;
}

/* One random inlining call. compute_at takes a consumer that depends on the producer. */
static inline void dg_inline_call(DgCase *c, int ref) {
  int a = (int)dg_rnd(&c->r, (uint32_t)c->nv);
  while (c->v[a].input && dg_rnd(&c->r, 4)) a = (int)dg_rnd(&c->r, (uint32_t)c->nv); /* inputs: refused today */
  cf_tv *tv = c->v[a].tv;
  switch (dg_rnd(&c->r, 6)) {
  case 0:
  case 1: cf_inline_most(c->f); break;
  case 2: cf_inline_at(c->f, tv, dg_pos(c, tv)); break;
  case 3: cf_inline_at_best_effort(c->f, tv, dg_pos(c, tv)); break;
  case 4: cf_inline_all_at(c->f, c->v[ref].tv, (int)dg_rnd(&c->r, (uint32_t)cf_tv_naxes(c->v[ref].tv) + 1)); break;
  default: {
    int cand[DG_MAX_VALS], n = 0; /* mode 5 inserts producers after their consumers */
    for (int i = 0; i < c->nv; i++)
      if (i != a && (c->v[i].anc & (1ULL << a))) cand[n++] = i;
    if (!n) break;
    cf_tv *consumer = c->v[cand[dg_rnd(&c->r, (uint32_t)n)]].tv;
    cf_compute_at(c->f, tv, consumer, dg_pos(c, consumer));
  }
  }
}

/* Reorders a full-rank tensor's reduced axes innermost (as a reduction scheduler does). */
static inline void dg_reduced_innermost(DgCase *c, cf_tv *tv, unsigned *track) {
  int new_pos[3], n = 0;
  unsigned t[DG_MAX_AXES];
  for (int red = 0; red < 2; red++)
    for (int a = 0; a < c->rank; a++)
      if (!(track[a] & c->reduced) == !red) t[n] = track[a], new_pos[a] = n++;
  if (cf_reorder_all(c->f, tv, c->rank, new_pos) == CF_OK) memcpy(track, t, (size_t)n * sizeof *t);
}

/* The schedule's first half: transforms on a reference (an output, or any full-rank
 * value), propagation, sometimes transforms on another tensor. Returns the reference;
 * track[i] follows the full-rank axes its loop axis i derives from. */
static inline int dg_schedule_transforms(DgCase *c, unsigned *track) {
  int outs[DG_MAX_VALS], nout = 0;
  for (int i = 0; i < c->nv; i++)
    if (c->v[i].output && c->v[i].mask == dg_full(c)) outs[nout++] = i;
  int ref = nout && dg_rnd(&c->r, 5) < 3 ? outs[dg_rnd(&c->r, (uint32_t)nout)] : dg_pick(c, dg_full(c));
  cf_tv *rt = c->v[ref].tv;
  for (int a = 0; a < c->rank; a++) track[a] = 1u << a;
  if (!dg_order_ok(c, track, c->rank) && dg_rnd(&c->r, 4)) dg_reduced_innermost(c, rt, track);
  dg_transforms(c, rt, 1 + (int)dg_rnd(&c->r, 4), track);
  cf_propagate_transforms(c->f, rt);
  if (dg_rnd(&c->r, 3) == 0) {
    int o = (int)dg_rnd(&c->r, (uint32_t)c->nv);
    if (!c->v[o].input) dg_transforms(c, c->v[o].tv, 1 + (int)dg_rnd(&c->r, 2), NULL);
  }
  return ref;
}

/* The second half: parallelization, memory types, 0-3 inlining calls. */
static inline void dg_schedule_finish(DgCase *c, int ref, const unsigned *track) {
  cf_tv *rt = c->v[ref].tv;
  dg_parallelize(c, rt, track);
  dg_unswitch(c, rt);
  if (dg_rnd(&c->r, 16)) cf_parallelize_all_like(c->f, rt, 0, NULL);
  for (int i = 0; i < c->nv; i++) {
    if (c->v[i].input || c->v[i].output) continue;
    if (dg_rnd(&c->r, 4) == 0) cf_set_memory_type(c->f, c->v[i].tv, CF_MEM_SHARED);
    if (c->global && dg_rnd(&c->r, 4) == 0) cf_set_memory_type(c->f, c->v[i].tv, CF_MEM_GLOBAL);
    if (dg_rnd(&c->r, 16) == 0) dg_parallelize(c, c->v[i].tv, NULL); /* may differ from ref: syncs */
  }
  int calls = (int)dg_rnd(&c->r, 4);
  for (int i = 0; i < calls; i++) dg_inline_call(c, ref);
  if (c->symbolic && dg_rnd(&c->r, 4)) cf_inline_most(c->f); /* registers need constant sizes */
}

/* The schedule of modes 0-3: both halves. */
static inline void dg_schedule(DgCase *c) {
  unsigned track[DG_MAX_AXES];
  dg_schedule_finish(c, dg_schedule_transforms(c, track), track);
}

/* Mode 4: mode 3's math left unscheduled, for define and run (cf_fusion_execute). */
enum { DG_UNSCHEDULED = 4 };

/* Builds and schedules the case of one seed into c->f (a fresh fusion), with issue 28's
 * options `extra` (DG_X_*) on top of the mode's. */
static inline void dg_build_extra(DgCase *c, cf_fusion *f, uint64_t seed, int mode, unsigned extra) {
  memset(c, 0, sizeof *c);
  c->extra = extra;
  c->f = f;
  c->par_red = mode >= 1;
  c->global = mode == 2;
  c->welford = mode >= 3;
  c->r.s = seed * 0x9E3779B97F4A7C15ULL + 7;
  c->ru.s = seed * 0xD1B54A32D192ED03ULL + 11;
  dg_build_math(c);
  if (cf_fusion_status(f) == CF_OK && mode != DG_UNSCHEDULED) dg_schedule(c);
}

static inline void dg_build(DgCase *c, cf_fusion *f, uint64_t seed, int mode) { dg_build_extra(c, f, seed, mode, 0); }

#endif
