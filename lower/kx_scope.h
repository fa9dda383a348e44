/* lower/kx_scope.h: the inside of a KxScope (kir.h), shared by the range analysis
 * (kx_range.c) and the rewrite rules (kx_simplify.c) and nobody else.
 *
 * A scope is a stack of leaf ranges plus one memo table, keyed by expression address, of
 * what was computed under the ranges in force: an expression's interval, its simplified
 * form, whether it holds a block vote. Key decision: every push or pop starts a new
 * generation and entries of another generation are misses, so a memo is never read under
 * ranges other than those it was computed with, and nothing is cleared eagerly (a kernel
 * enters thousands of scopes; its indices share subexpressions within one). */
#ifndef CFUSER_KX_SCOPE_H
#define CFUSER_KX_SCOPE_H

#include "lower/kir.h"

#define KX_NEG_INF INT64_MIN /* an unbounded side of an interval */
#define KX_POS_INF INT64_MAX

typedef struct KxIv {
  int64_t lo, hi;
} KxIv;

typedef struct KxLeafRange {
  const KExpr *leaf;
  KxIv iv;
  const KExpr *bound; /* leaf < bound, or NULL */
} KxLeafRange;

typedef struct KxMemo {
  const KExpr *key;
  unsigned gen;
  bool has_iv, has_simp, has_vote_known, vote;
  KxIv iv;
  KExpr *simp;
} KxMemo;

struct KxScope {
  Arena *a;
  KxLeafRange *leaves;
  int nleaves, cap;
  KxMemo *memo;
  int memo_cap, memo_used; /* slots, and slots ever filled since the last rehash */
  unsigned gen;
  int depth;               /* kx_simplify's nesting of re-simplified rewrites */
};

/* The memo entry of e in the current generation, made (empty) when missing. */
KxMemo *kx_memo(KxScope *s, const KExpr *e);
/* The innermost range pushed for leaf, or NULL. */
const KxLeafRange *kx_scope_find(const KxScope *s, const KExpr *leaf);
/* The interval of e (kx_range's, as a pair). */
KxIv kx_iv(KxScope *s, const KExpr *e);
/* Whether e holds a block vote (KX_BLOCK_ALL), which no rewrite may drop: it is a barrier. */
bool kx_has_vote(KxScope *s, const KExpr *e);
/* Interval arithmetic over possibly unbounded sides; a finite overflow gives the unknown
 * interval (the value may have wrapped). */
KxIv kx_iv_add(KxIv a, KxIv b);
KxIv kx_iv_mul(KxIv a, KxIv b);

#endif
