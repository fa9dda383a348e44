/* lower/kx_simplify.c: range-based simplification of the kernel's index arithmetic
 * (kir.h's kx_simplify), after Halide's Simplify: children first, then the rules of the
 * node's operator, each only where the ranges of its operands (kx_range.c, the scope's)
 * prove its side conditions, and the result simplified again.
 *
 * The rules, for a constant c > 0 (C semantics: `/` truncates, `%` takes the dividend's
 * sign, so a rule that needs floor division asks its operands to be non-negative):
 *   any e whose range is one value        -> that value (x / c for 0 <= x < c, a decided
 *                                            comparison, a loop variable of one iteration)
 *   x % c, |x| < c                        -> x
 *   (x / a) / c                           -> x / (a * c)
 *   (x % (c * m)) / c, x >= 0             -> (x / c) % m
 *   (x % (c * m)) % c                     -> x % c
 *   (q * c + r) / c, q*c + r >= 0, r >= 0 -> q + r / c (q, r sums; a constant splits)
 *   (q * c + r) % c, likewise             -> r % c (each coefficient taken mod c)
 *   k*c*(x / c) + k*(x % c)               -> k*x (in any sum)
 *   k*c*((x / c) % m) + k*(x % c), x >= 0 -> k*(x % (c * m))
 *   like terms and constants of a sum     -> merged
 *   x + c1 < c2 (and <=, >, >=, ==, !=)   -> x < c2 - c1, then g*x < c -> x < ceil(c / g)
 *   g*q + r < c, 0 <= r < g, g | c        -> q < c / g
 *   x / c < k, x >= 0                     -> x < k * c (and <=, >, >= alike)
 *   a && b, a != 0, b in [0, 1]           -> b; a && ... && a -> a && ...
 *   x < c1 && ... && x < c2, c2 <= c1     -> ... && x < c2 (a vector's last-lane bound
 *                                            beside its split's, lower/index.c)
 *   min/max decided by ranges; c ? v : v  -> v; (c ? k1 : k2) op k -> c ? k1 op k : k2 op k
 *   a chain v == k ? c : ... over a small range of v -> a * v + b, a * (v % m) + b, ...
 * Sums are read as linear forms (terms k * t plus a constant) and rebuilt only where a rule
 * fired, so an expression no rule improves keeps its shape. Key decisions: a rewrite never
 * drops a block vote (KX_BLOCK_ALL is a barrier every thread reaches); sums are rearranged
 * freely (two's-complement arithmetic is a ring, so wrapping cannot tell), while the rules
 * of `/`, `%` and comparisons rely on ranges computed without wrapping (kx_range.c) and on
 * index arithmetic not wrapping, which lowering guarantees for the sizes it accepts. */
#include <math.h> /* ir/special_math.h needs it; cf_special_gcd is what this file uses */
#include <string.h>

#include "ir/special_math.h"
#include "lower/kx_scope.h"

/* Re-simplifications of a rewrite nested at most: a guard, not a limit met in practice
 * (a rule shortens or settles its expression, so chains of rewrites are short); past it
 * the rewrite is kept as it is, which is correct, only less simplified. */
enum { KX_SIMPLIFY_MAX_DEPTH = 32 };

static KExpr *simp(KxScope *s, KExpr *e);

static bool is_bin(const KExpr *e, IrOp op) { return e->kind == KX_BINARY && e->op == op; }
static bool pos_const(const KExpr *e, int64_t *v) { return kx_is_const(e, v) && *v > 0; }
static bool nonzero(KxIv a) { return a.lo > 0 || a.hi < 0; }
static bool boolean(KxIv a) { return a.lo >= 0 && a.hi <= 1; }
static bool finite64(int64_t v) { return v != KX_NEG_INF && v != KX_POS_INF; }

/* ---- linear forms ------------------------------------------------------------------------ */

typedef struct Term {
  int64_t k;
  KExpr *t; /* NULL: a term merged into another */
} Term;

typedef struct Lin {
  Arena *a;
  Term *v;
  int n, cap;
  int64_t c;
  int nconst, merged; /* constants read, terms merged with an equal one */
} Lin;

static bool coefficient_ok(int64_t k) { return finite64(k); } /* the interval code reads INT64_MIN/MAX as unbounded */

static void lin_push(Lin *l, int64_t k, KExpr *t) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    Term *v = ARENA_ARRAY(l->a, Term, cap);
    if (l->n) memcpy(v, l->v, sizeof(Term) * (size_t)l->n);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (Term){k, t};
}

static bool lin_term(Lin *l, int64_t k, KExpr *t) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i].t && kx_equal(l->v[i].t, t)) {
      l->merged++;
      return !__builtin_add_overflow(l->v[i].k, k, &l->v[i].k) && coefficient_ok(l->v[i].k);
    }
  lin_push(l, k, t);
  return true;
}

/* Adds k * e to l, through sums, differences and products by constants. */
static bool flatten(Lin *l, KExpr *e, int64_t k) {
  int64_t v, p;
  if (kx_is_const(e, &v)) {
    l->nconst++;
    return !__builtin_mul_overflow(k, v, &p) && !__builtin_add_overflow(l->c, p, &l->c) && coefficient_ok(l->c);
  }
  if (e->kind == KX_BINARY) switch (e->op) {
    case OP_ADD: return flatten(l, e->a, k) && flatten(l, e->b, k);
    case OP_SUB: return flatten(l, e->a, k) && flatten(l, e->b, -k); /* k is finite: -k is too */
    case OP_MUL:
      if (kx_is_const(e->b, &v) || kx_is_const(e->a, &v))
        return !__builtin_mul_overflow(k, v, &p) && coefficient_ok(p) && flatten(l, kx_is_const(e->b, NULL) ? e->a : e->b, p);
      break;
    default: break;
    }
  return lin_term(l, k, e);
}

static bool lin_of(KxScope *s, KExpr *e, Lin *l) {
  *l = (Lin){.a = s->a};
  return flatten(l, e, 1);
}

static KExpr *term_expr(Arena *a, int64_t k, KExpr *t) { return k == 1 ? t : kx_bin(a, OP_MUL, t, kx_const(a, k)); }

/* The sum of the terms in their order, negative ones subtracted, the constant last. */
static KExpr *lin_build(Arena *a, const Lin *l) {
  KExpr *e = NULL;
  for (int i = 0; i < l->n; i++) {
    int64_t k = l->v[i].k;
    if (!k || !l->v[i].t) continue;
    if (!e) e = term_expr(a, k, l->v[i].t);
    else e = k < 0 ? kx_bin(a, OP_SUB, e, term_expr(a, -k, l->v[i].t)) : kx_bin(a, OP_ADD, e, term_expr(a, k, l->v[i].t));
  }
  if (!e) return kx_const(a, l->c);
  return l->c < 0 ? kx_bin(a, OP_SUB, e, kx_const(a, -l->c)) : kx_bin(a, OP_ADD, e, kx_const(a, l->c));
}

static KxIv lin_iv(KxScope *s, const Lin *l) {
  KxIv r = {l->c, l->c};
  for (int i = 0; i < l->n; i++)
    if (l->v[i].k && l->v[i].t) r = kx_iv_add(r, kx_iv_mul(kx_iv(s, l->v[i].t), (KxIv){l->v[i].k, l->v[i].k}));
  return r;
}

/* Whether a term whose coefficient became 0 holds a vote (it would be dropped). */
static bool drops_vote(KxScope *s, const Lin *l) {
  for (int i = 0; i < l->n; i++)
    if (!l->v[i].k && l->v[i].t && kx_has_vote(s, l->v[i].t)) return true;
  return false;
}

/* ---- sums ---------------------------------------------------------------------------------- */

/* hi + lo of a sum as one term, or NULL: k*c*(x / c) + k*(x % c) = k*x (C's identity), and
 * k*c*((x / c) % m) + k*(x % c) = k*(x % (c*m)) for x >= 0 (the digits of x in base c). */
static KExpr *digits(KxScope *s, const Term *hi, const Term *lo) {
  int64_t c, m, kc, cm;
  const KExpr *t = lo->t, *h = hi->t;
  if (!is_bin(t, OP_MOD) || !pos_const(t->b, &c) || __builtin_mul_overflow(lo->k, c, &kc) || kc != hi->k) return NULL;
  KExpr *x = t->a;
  if (is_bin(h, OP_DIV) && kx_equal(h->b, t->b) && kx_equal(h->a, x)) return x;
  if (is_bin(h, OP_MOD) && pos_const(h->b, &m) && is_bin(h->a, OP_DIV) && kx_equal(h->a->b, t->b) &&
      kx_equal(h->a->a, x) && !__builtin_mul_overflow(c, m, &cm) && kx_iv(s, x).lo >= 0)
    return kx_bin(s->a, OP_MOD, x, kx_const(s->a, cm));
  return NULL;
}

/* Joins digit pairs of l until none is left; returns how many. */
static int recombine(KxScope *s, Lin *l) {
  int fired = 0;
  for (bool again = true; again;) {
    again = false;
    for (int i = 0; i < l->n && !again; i++)
      for (int j = 0; j < l->n && !again; j++) {
        if (i == j || !l->v[i].t || !l->v[j].t || !l->v[i].k || !l->v[j].k) continue;
        KExpr *r = digits(s, &l->v[i], &l->v[j]);
        if (!r) continue;
        int keep = i < j ? i : j, gone = i < j ? j : i;
        l->v[keep] = (Term){l->v[j].k, r};
        l->v[gone] = (Term){0, NULL};
        again = true;
        fired++;
      }
  }
  return fired;
}

static KExpr *rule_sum(KxScope *s, KExpr *e) {
  Lin l;
  if (!lin_of(s, e, &l)) return NULL;
  int fired = l.merged + (l.nconst > 1) + recombine(s, &l);
  return fired && !drops_vote(s, &l) ? lin_build(s->a, &l) : NULL;
}

/* ---- division and modulo by a positive constant ------------------------------------------ */

/* (q*c + r) / c = q + r / c with q*c + r >= 0 and r >= 0: floor division's identity, and
 * truncation is floor on non-negative values. A constant C >= 0 splits as (C/c)*c + C%c. */
static KExpr *div_terms(KxScope *s, KExpr *x, KExpr *cx, int64_t c) {
  Lin l, q = {.a = s->a}, r = {.a = s->a};
  if (kx_iv(s, x).lo < 0 || !lin_of(s, x, &l) || drops_vote(s, &l)) return NULL;
  for (int i = 0; i < l.n; i++)
    if (l.v[i].k && l.v[i].t) {
      if (l.v[i].k % c == 0) lin_push(&q, l.v[i].k / c, l.v[i].t);
      else lin_push(&r, l.v[i].k, l.v[i].t);
    }
  q.c = l.c >= 0 ? l.c / c : 0;
  r.c = l.c >= 0 ? l.c % c : l.c;
  if ((!q.n && !q.c) || lin_iv(s, &r).lo < 0) return NULL;
  return kx_bin(s->a, OP_ADD, lin_build(s->a, &q), kx_bin(s->a, OP_DIV, lin_build(s->a, &r), cx));
}

static KExpr *rule_div(KxScope *s, KExpr *e) {
  int64_t c, d, cd;
  KExpr *x = e->a;
  if (!pos_const(e->b, &c)) return NULL;
  if (is_bin(x, OP_DIV) && pos_const(x->b, &d) && !__builtin_mul_overflow(c, d, &cd))
    return kx_bin(s->a, OP_DIV, x->a, kx_const(s->a, cd));
  if (is_bin(x, OP_MOD) && pos_const(x->b, &d) && d % c == 0 && kx_iv(s, x->a).lo >= 0)
    return kx_bin(s->a, OP_MOD, kx_bin(s->a, OP_DIV, x->a, e->b), kx_const(s->a, d / c));
  return div_terms(s, x, e->b, c);
}

/* (q*c + r) % c = r % c for q*c + r >= 0 and r >= 0: each coefficient k > 0 becomes k % c
 * (terms vanish), negative ones stay, a constant C >= 0 becomes C % c. */
static KExpr *mod_terms(KxScope *s, KExpr *x, KExpr *cx, int64_t c) {
  Lin l;
  if (kx_iv(s, x).lo < 0 || !lin_of(s, x, &l)) return NULL;
  bool changed = l.merged || l.nconst > 1;
  for (int i = 0; i < l.n; i++)
    if (l.v[i].k > 0 && l.v[i].t && l.v[i].k % c != l.v[i].k) l.v[i].k %= c, changed = true;
  if (l.c >= c) l.c %= c, changed = true;
  if (!changed || drops_vote(s, &l) || lin_iv(s, &l).lo < 0) return NULL;
  return kx_bin(s->a, OP_MOD, lin_build(s->a, &l), cx);
}

static KExpr *rule_mod(KxScope *s, KExpr *e) {
  int64_t c, d;
  KExpr *x = e->a;
  if (!pos_const(e->b, &c)) return NULL;
  KxIv xi = kx_iv(s, x);
  if (xi.lo > -c && xi.hi < c) return x;
  if (is_bin(x, OP_MOD) && pos_const(x->b, &d) && d % c == 0) return kx_bin(s->a, OP_MOD, x->a, e->b);
  return mod_terms(s, x, e->b, c);
}

/* ---- comparisons, logic, extremes ------------------------------------------------------- */

/* floor(v / g) and ceil(v / g) for g > 0. */
static int64_t floor_div(int64_t v, int64_t g) { return v / g - (v % g != 0 && v < 0); }
static int64_t ceil_div(int64_t v, int64_t g) { return v / g + (v % g != 0 && v > 0); }

/* x / d op c -> x op' c * d for x >= 0 (floor division): x / d < c is x < c * d, x / d <= c
 * is x < (c + 1) * d, and > and >= alike. */
static KExpr *compare_quotient(KxScope *s, KExpr *e, int64_t c) {
  int64_t d, lim;
  KExpr *q = e->a;
  if (!is_bin(q, OP_DIV) || !pos_const(q->b, &d) || kx_iv(s, q->a).lo < 0 || e->op == OP_EQ || e->op == OP_NE) return NULL;
  bool past = e->op == OP_LE || e->op == OP_GT; /* compared with the next quotient's start */
  if ((past && __builtin_add_overflow(c, 1, &c)) || __builtin_mul_overflow(c, d, &lim) || !finite64(lim)) return NULL;
  IrOp op = e->op == OP_LE ? OP_LT : e->op == OP_GT ? OP_GE : e->op;
  return kx_bin(s->a, op, q->a, kx_const(s->a, lim));
}

/* X op c with every coefficient of X a multiple of g > 1 -> (X / g) op c', c' rounded
 * the way op needs (an equality with c not a multiple of g is decided). */
static KExpr *compare_scaled(KxScope *s, IrOp op, Lin *l, int64_t c, bool moved) {
  int64_t g = 0;
  for (int i = 0; i < l->n; i++)
    if (l->v[i].k && l->v[i].t) g = cf_special_gcd(g, l->v[i].k < 0 ? -l->v[i].k : l->v[i].k);
  if (g <= 1) return moved ? kx_bin(s->a, op, lin_build(s->a, l), kx_const(s->a, c)) : NULL;
  if ((op == OP_EQ || op == OP_NE) && c % g) return kx_const(s->a, op == OP_NE);
  for (int i = 0; i < l->n; i++) l->v[i].k /= g;
  c = op == OP_LT || op == OP_GE ? ceil_div(c, g) : op == OP_LE || op == OP_GT ? floor_div(c, g) : c / g;
  return kx_bin(s->a, op, lin_build(s->a, l), kx_const(s->a, c));
}

/* g*Q + r < c -> Q < c / g where 0 <= r < g and g divides c (g*Q + r <= c where g divides
 * c + 1 alike, and >=, > as their negations), g the common factor of the terms with a
 * coefficient other than 1: a remainder within one step of g cannot cross a multiple. */
static KExpr *compare_remainder(KxScope *s, IrOp op, const Lin *l, int64_t c) {
  int64_t g = 0, edge;
  Lin q = {.a = s->a}, r = {.a = s->a};
  for (int i = 0; i < l->n; i++)
    if (l->v[i].t && l->v[i].k != 1 && l->v[i].k) g = cf_special_gcd(g, l->v[i].k < 0 ? -l->v[i].k : l->v[i].k);
  bool strict = op == OP_LT || op == OP_GE; /* < c, or its negation */
  if (g <= 1 || (!strict && op != OP_LE && op != OP_GT) || __builtin_add_overflow(c, !strict, &edge) || edge % g)
    return NULL;
  for (int i = 0; i < l->n; i++)
    if (l->v[i].t && l->v[i].k) {
      if (l->v[i].k % g == 0) lin_push(&q, l->v[i].k / g, l->v[i].t);
      else lin_push(&r, l->v[i].k, l->v[i].t);
    }
  KxIv ri = lin_iv(s, &r);
  if (!r.n || ri.lo < 0 || ri.hi >= g) return NULL;
  IrOp qop = op == OP_LT || op == OP_LE ? OP_LT : OP_GE;
  return kx_bin(s->a, qop, lin_build(s->a, &q), kx_const(s->a, edge / g));
}

/* x + c1 op c2 -> x op c2 - c1, then common factors divided out, in exact arithmetic
 * (index values do not wrap); a quotient compared with a constant becomes its dividend. */
static KExpr *rule_compare(KxScope *s, KExpr *e) {
  int64_t v;
  Lin l;
  if (!kx_is_const(e->b, &v) || kx_is_const(e->a, NULL)) return NULL;
  KExpr *r = compare_quotient(s, e, v);
  if (r) return r;
  if (!lin_of(s, e->a, &l) || drops_vote(s, &l) || __builtin_sub_overflow(v, l.c, &v) || !finite64(v)) return NULL;
  bool moved = l.c != 0;
  l.c = 0;
  r = compare_remainder(s, e->op, &l, v);
  return r ? r : compare_scaled(s, e->op, &l, v, moved);
}

/* The terms of a chain of &&, appended to *t. */
static void conjuncts(Arena *a, KExpr *e, KExpr ***t, int *n, int *cap) {
  if (is_bin(e, OP_AND)) {
    conjuncts(a, e->a, t, n, cap);
    conjuncts(a, e->b, t, n, cap);
    return;
  }
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 8;
    KExpr **v = ARENA_ARRAY(a, KExpr *, c);
    if (*n) memcpy(v, *t, sizeof(KExpr *) * (size_t)*n);
    *t = v, *cap = c;
  }
  (*t)[(*n)++] = e;
}

/* Whether term u (`x < c2`) implies term t (`x < c1`, c2 <= c1). */
static bool implies(const KExpr *u, const KExpr *t) {
  int64_t c1, c2;
  return is_bin(u, OP_LT) && is_bin(t, OP_LT) && kx_is_const(u->b, &c2) && kx_is_const(t->b, &c1) && c2 < c1 &&
         kx_equal(u->a, t->a);
}

/* A conjunction's repeated or implied terms dropped (never a vote: each is a barrier). */
static KExpr *and_once(KxScope *s, KExpr *e) {
  KExpr **t = NULL, *r = NULL;
  int n = 0, cap = 0, kept = 0;
  conjuncts(s->a, e, &t, &n, &cap);
  for (int i = 0; i < n; i++) {
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) seen = t[j] && kx_equal(t[j], t[i]);
    for (int j = 0; j < n && !seen; j++) seen = j != i && t[j] && implies(t[j], t[i]);
    if (seen && !kx_has_vote(s, t[i])) t[i] = NULL;
    else r = r ? kx_bin(s->a, OP_AND, r, t[i]) : t[i], kept++;
  }
  return kept == n || (kept == 1 && !boolean(kx_iv(s, r))) ? NULL : r;
}

static KExpr *rule_and(KxScope *s, KExpr *e) {
  KxIv a = kx_iv(s, e->a), b = kx_iv(s, e->b);
  if (nonzero(a) && boolean(b) && !kx_has_vote(s, e->a)) return e->b;
  if (nonzero(b) && boolean(a) && !kx_has_vote(s, e->b)) return e->a;
  return and_once(s, e);
}

static KExpr *rule_extreme(KxScope *s, KExpr *e) {
  KxIv a = kx_iv(s, e->a), b = kx_iv(s, e->b);
  bool a_low = a.hi <= b.lo, b_low = b.hi <= a.lo;
  if (!a_low && !b_low) return NULL;
  KExpr *keep = (e->op == OP_MIN) == a_low ? e->a : e->b, *drop = keep == e->a ? e->b : e->a;
  return kx_has_vote(s, drop) ? NULL : keep;
}

/* v == 1 and v != 0 for v in [0, 1] -> v. */
static KExpr *rule_flag(KxScope *s, KExpr *e) {
  int64_t k;
  if (!kx_is_const(e->b, &k) || !boolean(kx_iv(s, e->a))) return NULL;
  return (e->op == OP_EQ && k == 1) || (e->op == OP_NE && k == 0) ? e->a : NULL;
}

/* ---- selects -------------------------------------------------------------------------------- */

/* (c ? k1 : k2) op k -> c ? (k1 op k) : (k2 op k), and k op (c ? k1 : k2) alike, for
 * constants: the condition alone is left to decide. */
static KExpr *into_select(KxScope *s, KExpr *e) {
  int64_t k, k1, k2, r1, r2;
  bool left = e->a->kind == KX_SELECT;
  KExpr *sel = left ? e->a : e->b, *other = left ? e->b : e->a;
  if (sel->kind != KX_SELECT || !kx_is_const(other, &k) || !kx_is_const(sel->b, &k1) || !kx_is_const(sel->c, &k2))
    return NULL;
  if (!ir_int_apply(e->op, left ? k1 : k, left ? k : k1, &r1) || !ir_int_apply(e->op, left ? k2 : k, left ? k : k2, &r2))
    return NULL;
  return kx_select(s->a, sel->a, kx_const(s->a, r1), kx_const(s->a, r2));
}

enum { KX_TABLE_MAX = 64 }; /* values of v a select chain is tabulated over */

/* The v of a chain `v == k1 ? c1 : (v == k2 ? c2 : ... c)` of constants, or NULL. */
static const KExpr *chain_var(const KExpr *e) {
  const KExpr *v = NULL;
  for (; e->kind == KX_SELECT; e = e->c) {
    const KExpr *c = e->a;
    if (!is_bin(c, OP_EQ) || !kx_is_const(c->b, NULL) || !kx_is_const(e->b, NULL) || (v && !kx_equal(v, c->a)))
      return NULL;
    v = c->a;
  }
  return kx_is_const(e, NULL) ? v : NULL;
}

static int64_t chain_at(const KExpr *e, int64_t x) {
  for (; e->kind == KX_SELECT; e = e->c)
    if (e->a->b->value == x) return e->b->value;
  return e->value;
}

/* Whether f(v) = a * g(v) + b over the table, g(v) = v, v % m or v / m (op). */
static bool fits(const int64_t *f, int64_t lo, int n, IrOp op, int64_t m, int64_t *a, int64_t *b) {
  int64_t g[KX_TABLE_MAX];
  for (int i = 0; i < n; i++) g[i] = op == OP_MOD ? (lo + i) % m : op == OP_DIV ? (lo + i) / m : lo + i;
  int j = 1;
  while (j < n && g[j] == g[0]) j++;
  if (j == n || (f[j] - f[0]) % (g[j] - g[0])) return false;
  *a = (f[j] - f[0]) / (g[j] - g[0]), *b = f[0] - *a * g[0];
  for (int i = 0; i < n; i++)
    if (f[i] != *a * g[i] + *b) return false;
  return true;
}

/* A chain over a small range of non-negative v as a * v + b, a * (v % m) + b or
 * a * (v / m) + b, checked at every value (m a power of two up to the range). */
static KExpr *rule_table(KxScope *s, KExpr *e) {
  const KExpr *v = chain_var(e);
  KxIv r = v ? kx_iv(s, v) : (KxIv){0, KX_POS_INF};
  if (!v || r.lo < 0 || r.hi - r.lo >= KX_TABLE_MAX || kx_has_vote(s, e)) return NULL;
  int n = (int)(r.hi - r.lo + 1);
  int64_t f[KX_TABLE_MAX], a, b;
  for (int i = 0; i < n; i++) f[i] = chain_at(e, r.lo + i);
  for (int64_t m = 1; m <= r.hi; m *= 2)
    for (int k = 0; k < 2; k++) {
      IrOp op = m == 1 ? OP_ADD : k ? OP_DIV : OP_MOD;
      if (!fits(f, r.lo, n, op, m, &a, &b)) continue;
      KExpr *g = op == OP_ADD ? (KExpr *)v : kx_bin(s->a, op, (KExpr *)v, kx_const(s->a, m));
      return kx_bin(s->a, OP_ADD, kx_bin(s->a, OP_MUL, g, kx_const(s->a, a)), kx_const(s->a, b));
    }
  return NULL;
}

static KExpr *rules(KxScope *s, KExpr *e) {
  KExpr *r = e->op != OP_AND && e->op != OP_XOR ? into_select(s, e) : NULL;
  if (r) return r;
  switch (e->op) {
  case OP_ADD:
  case OP_SUB: return rule_sum(s, e);
  case OP_DIV: return rule_div(s, e);
  case OP_MOD: return rule_mod(s, e);
  case OP_EQ:
  case OP_NE: return (r = rule_flag(s, e)) ? r : rule_compare(s, e);
  case OP_LT: case OP_LE: case OP_GT: case OP_GE: return rule_compare(s, e);
  case OP_AND: return rule_and(s, e);
  case OP_MIN:
  case OP_MAX: return rule_extreme(s, e);
  default: return NULL;
  }
}

/* ---- the walk ------------------------------------------------------------------------------ */

/* A rule's result, simplified again (its parts are, their combination may not be). */
static KExpr *again(KxScope *s, KExpr *r) {
  if (s->depth >= KX_SIMPLIFY_MAX_DEPTH) return r;
  s->depth++;
  r = simp(s, r);
  s->depth--;
  return r;
}

/* A sum's digit pairs joined before its parts are simplified: simplifying them first
 * rewrites x / c and x % c of one x apart (a merge's `(x / 128) * 128 + ((x % 128) / 32) * 32
 * + (x % 128) % 32` is x, but not once `(x % 128) / 32` reads `(x / 32) % 4`). */
static KExpr *join_digits(KxScope *s, KExpr *e) {
  Lin l;
  if (!lin_of(s, e, &l) || !recombine(s, &l) || drops_vote(s, &l)) return NULL;
  return lin_build(s->a, &l);
}

static KExpr *rewrite_binary(KxScope *s, KExpr *e) {
  KExpr *j = e->op == OP_ADD || e->op == OP_SUB ? join_digits(s, e) : NULL;
  if (j) return again(s, j);
  KExpr *x = simp(s, e->a), *y = simp(s, e->b);
  KExpr *n = x == e->a && y == e->b ? e : kx_bin(s->a, e->op, x, y);
  if (n->kind != KX_BINARY || (n != e && (n->a != x || n->b != y))) return n; /* folded to a part */
  KExpr *r = rules(s, n);
  return r ? again(s, r) : n;
}

static KExpr *rewrite_select(KxScope *s, KExpr *e) {
  KExpr *c = simp(s, e->a);
  KxIv ci = kx_iv(s, c);
  bool keep_c = kx_has_vote(s, c);
  if (!keep_c && nonzero(ci)) return simp(s, e->b);
  if (!keep_c && ci.lo == 0 && ci.hi == 0) return simp(s, e->c);
  KExpr *x = simp(s, e->b), *y = simp(s, e->c);
  if (!keep_c && kx_equal(x, y)) return x;
  if (kx_is_const(x, NULL) && x->value == 1 && kx_is_const(y, NULL) && y->value == 0 && boolean(ci)) return c;
  KExpr *n = c == e->a && x == e->b && y == e->c ? e : kx_select(s->a, c, x, y);
  KExpr *r = n->kind == KX_SELECT ? rule_table(s, n) : NULL;
  return r ? again(s, r) : n;
}

static KExpr *rewrite(KxScope *s, KExpr *e) {
  switch (e->kind) {
  case KX_BINARY: return rewrite_binary(s, e);
  case KX_SELECT: return rewrite_select(s, e);
  case KX_BLOCK_ALL: { /* a vote of a constant would fold away, and with it the barrier */
    KExpr *x = simp(s, e->a);
    return x == e->a || kx_is_const(x, NULL) ? e : kx_block_all(s->a, x);
  }
  default: return e;
  }
}

static KExpr *simp(KxScope *s, KExpr *e) {
  if (!e || e->kind == KX_CONST) return e;
  KxMemo *m = kx_memo(s, e);
  if (m->has_simp) return m->simp;
  KExpr *r = rewrite(s, e);
  KxIv iv = kx_iv(s, r);
  if (r->kind != KX_CONST && iv.lo == iv.hi && finite64(iv.lo) && !kx_has_vote(s, r)) r = kx_const(s->a, iv.lo);
  m = kx_memo(s, e);
  m->has_simp = true;
  m->simp = r;
  m = kx_memo(s, r);
  if (!m->has_simp) m->has_simp = true, m->simp = r;
  return r;
}

KExpr *kx_simplify(KxScope *s, KExpr *e) { return simp(s, e); }
