/* lower/kx_range.c: value ranges of the kernel's scalar expressions (kir.h's KxScope and
 * kx_range), what the simplifier (kx_simplify.c) checks its rules' side conditions with.
 *
 * A scope holds the ranges of the leaves where an expression is evaluated (a loop
 * variable inside its loop, a thread index below its launch extent), pushed and popped as
 * the simplify pass walks the kernel (lower/simplify.c); a leaf nobody pushed is known by
 * its kind only: a parameter's size is >= 0, a launch extent >= 1, a thread index >= 0,
 * anything else unknown. The interval of an expression follows bottom up with C's
 * semantics (`/` truncates, `%` takes the dividend's sign), memoized per generation
 * (kx_scope.h). Key decisions: a side may be unbounded (INT64_MIN / INT64_MAX), as a size
 * is; a finite computation that overflows int64 gives the unknown interval (the value
 * may have wrapped, so no bound holds); an unbounded side stays unbounded, since index
 * arithmetic is generated not to overflow for any size it accepts. A comparison of a leaf
 * with the bound it was pushed with (`blockIdx.y < ceilDiv(n, 128)` when the grid's y
 * extent is that expression) is decided true, whatever the intervals say. */
#include <string.h>

#include "lower/kx_scope.h"

static const KxIv UNKNOWN = {KX_NEG_INF, KX_POS_INF};

KxScope *kx_scope_new(Arena *a) {
  KxScope *s = ARENA_NEW(a, KxScope);
  s->a = a;
  return s;
}

void kx_scope_push(KxScope *s, const KExpr *leaf, int64_t lo, int64_t hi, const KExpr *bound) {
  if (s->nleaves == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    KxLeafRange *v = ARENA_ARRAY(s->a, KxLeafRange, cap);
    if (s->nleaves) memcpy(v, s->leaves, sizeof(KxLeafRange) * (size_t)s->nleaves);
    s->leaves = v;
    s->cap = cap;
  }
  s->leaves[s->nleaves++] = (KxLeafRange){leaf, {lo, hi}, bound};
  s->gen++;
}

void kx_scope_push_launch(KxScope *s, KExpr *const dims[CF_PT_COUNT]) {
  for (int p = CF_PT_TIDX; p <= CF_PT_BIDZ; p++) {
    const KExpr *dim = dims[p] ? dims[p] : kx_const(s->a, 1);
    int64_t lo, hi;
    kx_range(s, dim, &lo, &hi);
    if (lo < 1) lo = 1; /* a launch has at least one block and thread per dimension */
    kx_scope_push(s, kx_thread(s->a, (cf_parallel_type)p, true), lo, hi, NULL);
    kx_scope_push(s, kx_thread(s->a, (cf_parallel_type)p, false), 0, hi == KX_POS_INF ? hi : hi - 1, dim);
  }
}

void kx_scope_pop(KxScope *s) {
  if (s->nleaves > 0) s->nleaves--;
  s->gen++;
}

const KxLeafRange *kx_scope_find(const KxScope *s, const KExpr *leaf) {
  for (int i = s->nleaves - 1; i >= 0; i--)
    if (kx_equal(s->leaves[i].leaf, leaf)) return &s->leaves[i];
  return NULL;
}

/* ---- the memo ------------------------------------------------------------------------------ */

static size_t slot_of(const KExpr *e, int cap) {
  uintptr_t h = (uintptr_t)e;
  h ^= h >> 17, h *= (uintptr_t)0x9e3779b97f4a7c15ull, h ^= h >> 29;
  return (size_t)h & (size_t)(cap - 1);
}

/* Grows the table (or drops the entries of other generations): at most half full. */
static void rehash(KxScope *s) {
  KxMemo *old = s->memo;
  int old_cap = s->memo_cap, live = 0;
  for (int i = 0; i < old_cap; i++) live += old[i].key && old[i].gen == s->gen;
  int cap = 1024;
  while (cap < 4 * (live + 1)) cap *= 2;
  s->memo = ARENA_ARRAY(s->a, KxMemo, cap);
  s->memo_cap = cap;
  s->memo_used = 0;
  for (int i = 0; i < old_cap; i++) {
    if (!old[i].key || old[i].gen != s->gen) continue;
    size_t j = slot_of(old[i].key, cap);
    while (s->memo[j].key) j = (j + 1) & (size_t)(cap - 1);
    s->memo[j] = old[i];
    s->memo_used++;
  }
}

KxMemo *kx_memo(KxScope *s, const KExpr *e) {
  if (2 * (s->memo_used + 1) > s->memo_cap) rehash(s);
  size_t j = slot_of(e, s->memo_cap);
  while (s->memo[j].key && s->memo[j].key != e) j = (j + 1) & (size_t)(s->memo_cap - 1);
  KxMemo *m = &s->memo[j];
  if (!m->key) s->memo_used++;
  if (m->key != e || m->gen != s->gen) *m = (KxMemo){.key = e, .gen = s->gen};
  return m;
}

/* ---- interval arithmetic ------------------------------------------------------------------ */

static bool finite(int64_t v) { return v != KX_NEG_INF && v != KX_POS_INF; }

KxIv kx_iv_add(KxIv a, KxIv b) {
  KxIv r;
  if (a.lo == KX_NEG_INF || b.lo == KX_NEG_INF) r.lo = KX_NEG_INF;
  else if (__builtin_add_overflow(a.lo, b.lo, &r.lo) || !finite(r.lo)) return UNKNOWN;
  if (a.hi == KX_POS_INF || b.hi == KX_POS_INF) r.hi = KX_POS_INF;
  else if (__builtin_add_overflow(a.hi, b.hi, &r.hi) || !finite(r.hi)) return UNKNOWN;
  return r;
}

static KxIv neg(KxIv a) {
  return (KxIv){a.hi == KX_POS_INF ? KX_NEG_INF : -a.hi, a.lo == KX_NEG_INF ? KX_POS_INF : -a.lo};
}

/* One corner of a product; false when finite factors overflow. */
static bool corner(int64_t x, int64_t y, int64_t *r) {
  if (!x || !y) return *r = 0, true;
  if (!finite(x) || !finite(y)) return *r = (x < 0) == (y < 0) ? KX_POS_INF : KX_NEG_INF, true;
  return !__builtin_mul_overflow(x, y, r) && finite(*r);
}

KxIv kx_iv_mul(KxIv a, KxIv b) {
  int64_t c[4];
  if (!corner(a.lo, b.lo, &c[0]) || !corner(a.lo, b.hi, &c[1]) || !corner(a.hi, b.lo, &c[2]) ||
      !corner(a.hi, b.hi, &c[3]))
    return UNKNOWN;
  KxIv r = {c[0], c[0]};
  for (int i = 1; i < 4; i++) r.lo = c[i] < r.lo ? c[i] : r.lo, r.hi = c[i] > r.hi ? c[i] : r.hi;
  return r;
}

/* x op c for a constant c != 0 at an unbounded x: unbounded on the side the sign gives. */
static int64_t div_side(IrOp op, int64_t x, int64_t c) {
  int64_t r;
  if (!finite(x)) return (x < 0) == (c < 0) ? KX_POS_INF : KX_NEG_INF;
  ir_int_apply(op, x, c, &r);
  return r;
}

static int64_t max_abs(KxIv a) {
  if (!finite(a.lo) || !finite(a.hi)) return KX_POS_INF;
  int64_t l = a.lo < 0 ? -a.lo : a.lo, h = a.hi < 0 ? -a.hi : a.hi;
  return l > h ? l : h;
}

/* a / b and ceilDiv(a, b): monotone in a for a constant b; else bounded by |a| when b
 * cannot be 0 (and by [0, a] for a >= 0, b >= 1). */
static KxIv iv_div(IrOp op, KxIv a, KxIv b) {
  if (b.lo == b.hi && b.lo != 0 && finite(b.lo)) {
    int64_t x = div_side(op, a.lo, b.lo), y = div_side(op, a.hi, b.lo);
    return x <= y ? (KxIv){x, y} : (KxIv){y, x};
  }
  if (a.lo >= 0 && b.lo >= 1) return (KxIv){0, a.hi};
  if (op == OP_CEILDIV || (b.lo <= 0 && b.hi >= 0)) return UNKNOWN;
  int64_t m = max_abs(a);
  return m == KX_POS_INF ? UNKNOWN : (KxIv){-m, m};
}

/* a % b: |a % b| < |b| and |a % b| <= |a|, with a's sign; a itself where 0 <= a < b. */
static KxIv iv_mod(KxIv a, KxIv b) {
  if (b.lo <= 0 && b.hi >= 0) return UNKNOWN;
  if (a.lo >= 0 && b.lo > 0 && a.hi < b.lo) return a;
  int64_t bm = max_abs(b), lim = bm == KX_POS_INF ? KX_POS_INF : bm - 1;
  bool bounded = lim != KX_POS_INF;
  int64_t lo = a.lo >= 0 ? 0 : bounded && (a.lo == KX_NEG_INF || a.lo < -lim) ? -lim : a.lo;
  int64_t hi = a.hi <= 0 ? 0 : bounded && a.hi > lim ? lim : a.hi;
  return (KxIv){lo, hi};
}

static KxIv boolean(bool decided, bool value) { return decided ? (KxIv){value, value} : (KxIv){0, 1}; }

/* Whether a < b always (a leaf pushed with bound b counts) or never. */
static KxIv iv_less(KxScope *s, const KExpr *x, const KExpr *y, KxIv a, KxIv b, bool or_equal) {
  const KxLeafRange *l = x->kind == KX_VAR || x->kind == KX_THREAD ? kx_scope_find(s, x) : NULL;
  if (l && l->bound && kx_equal(l->bound, y)) return boolean(true, true);
  if (or_equal) return a.hi <= b.lo ? boolean(true, true) : a.lo > b.hi ? boolean(true, false) : boolean(false, 0);
  return a.hi < b.lo ? boolean(true, true) : a.lo >= b.hi ? boolean(true, false) : boolean(false, 0);
}

static bool nonzero(KxIv a) { return a.lo > 0 || a.hi < 0; }
static bool zero(KxIv a) { return a.lo == 0 && a.hi == 0; }

static KxIv iv_xor(KxIv a, KxIv b) {
  if (a.lo < 0 || b.lo < 0) return UNKNOWN;
  int64_t m = a.hi > b.hi ? a.hi : b.hi, p = 1;
  if (m == KX_POS_INF) return (KxIv){0, KX_POS_INF};
  while (p <= m && p < ((int64_t)1 << 62)) p <<= 1;
  return (KxIv){0, p <= m ? KX_POS_INF : p - 1};
}

static KxIv iv_binary(KxScope *s, const KExpr *e, KxIv a, KxIv b) {
  switch (e->op) {
  case OP_ADD: return kx_iv_add(a, b);
  case OP_SUB: return kx_iv_add(a, neg(b));
  case OP_MUL: return kx_iv_mul(a, b);
  case OP_DIV:
  case OP_CEILDIV: return iv_div(e->op, a, b);
  case OP_MOD: return iv_mod(a, b);
  case OP_MAX: return (KxIv){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  case OP_MIN: return (KxIv){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
  case OP_LT: return iv_less(s, e->a, e->b, a, b, false);
  case OP_GT: return iv_less(s, e->b, e->a, b, a, false);
  case OP_LE: return iv_less(s, e->a, e->b, a, b, true);
  case OP_GE: return iv_less(s, e->b, e->a, b, a, true);
  case OP_EQ:
  case OP_NE: {
    bool same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo && finite(a.lo), apart = a.hi < b.lo || b.hi < a.lo;
    return boolean(same || apart, (e->op == OP_EQ) == same);
  }
  case OP_AND: return zero(a) || zero(b) ? boolean(true, false) : boolean(nonzero(a) && nonzero(b), true);
  case OP_XOR: return iv_xor(a, b);
  default: return UNKNOWN;
  }
}

/* A leaf nobody pushed: what its kind alone says. */
static KxIv leaf_default(const KExpr *e) {
  switch (e->kind) {
  case KX_PARAM_SIZE: return (KxIv){0, KX_POS_INF};
  case KX_THREAD: return (KxIv){e->is_dim ? 1 : 0, KX_POS_INF};
  default: return UNKNOWN;
  }
}

static KxIv compute(KxScope *s, const KExpr *e) {
  const KxLeafRange *l;
  switch (e->kind) {
  case KX_CONST: return finite(e->value) ? (KxIv){e->value, e->value} : UNKNOWN; /* not read as unbounded */
  case KX_BINARY: return iv_binary(s, e, kx_iv(s, e->a), kx_iv(s, e->b));
  case KX_SELECT: {
    KxIv c = kx_iv(s, e->a), x = kx_iv(s, e->b), y = kx_iv(s, e->c);
    if (nonzero(c)) return x;
    if (zero(c)) return y;
    return (KxIv){x.lo < y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi};
  }
  case KX_BLOCK_ALL: return UNKNOWN; /* __syncthreads_and: non-zero, not necessarily 1 */
  default:
    l = kx_scope_find(s, e);
    return l ? l->iv : leaf_default(e);
  }
}

KxIv kx_iv(KxScope *s, const KExpr *e) {
  KxMemo *m = kx_memo(s, e);
  if (m->has_iv) return m->iv;
  KxIv r = compute(s, e);
  m = kx_memo(s, e); /* the table may have grown meanwhile */
  m->has_iv = true;
  m->iv = r;
  return r;
}

void kx_range(KxScope *s, const KExpr *e, int64_t *lo, int64_t *hi) {
  KxIv r = kx_iv(s, e);
  *lo = r.lo, *hi = r.hi;
}

bool kx_has_vote(KxScope *s, const KExpr *e) {
  if (!e || e->kind == KX_CONST || e->kind == KX_VAR || e->kind == KX_THREAD || e->kind == KX_PARAM_SIZE ||
      e->kind == KX_PARAM_STRIDE)
    return false;
  if (e->kind == KX_BLOCK_ALL) return true;
  KxMemo *m = kx_memo(s, e);
  if (m->has_vote_known) return m->vote;
  bool v = kx_has_vote(s, e->a) || kx_has_vote(s, e->b) || kx_has_vote(s, e->c);
  m = kx_memo(s, e);
  m->has_vote_known = true;
  m->vote = v;
  return v;
}
