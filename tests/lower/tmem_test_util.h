/* tests/lower/tmem_test_util.h: helpers of the tensor-memory lowering tests: the seed
 * tutorial's gmem -> reg -> tmem -> reg -> gmem chain, lowering a fusion straight through
 * lower_fusion, and assertions on the lowered kernel. Header-only. */
#ifndef CFUSER_TMEM_TEST_UTIL_H
#define CFUSER_TMEM_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "test_util.h"

/* tv0 (input, sizes) -> tv1 -> tv2 (tensor memory) -> tv3 -> tv4 (output), all sets. */
static inline void tt_chain(cf_fusion *f, cf_dtype dt, int rank, const int64_t *sizes, cf_tv *tv[5]) {
  tu_set_chain(f, dt, rank, sizes, tv);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
}

/* Parallelizes tv4's axes as listed (one type per axis, CF_PT_SERIAL to skip) and copies
 * them to every tensor, as the seed's tests do with parallelizeAllLike. */
static inline void tt_parallelize(cf_fusion *f, cf_tv *tv[5], int n, const cf_parallel_type *pts) {
  for (int i = 0; i < n; i++)
    if (pts[i] != CF_PT_SERIAL) cf_parallelize(f, tv[4], i, pts[i]);
  cf_parallelize_all_like(f, tv[4], 0, NULL);
}

/* Lowers f; returns the status, the kernel in *k (or NULL) and the message in *err. */
static inline cf_status tt_lower(cf_fusion *f, KKernel **k, char **err) {
  LowerOptions o = {0};
  return lower_fusion(f, &o, k, err);
}

#define EXPECT_LOWER_ERROR(f, msg)                                                     \
  do {                                                                                 \
    KKernel *k_ = NULL;                                                                \
    char *e_ = NULL;                                                                   \
    cr_expect_neq(tt_lower((f), &k_, &e_), CF_OK, "lowering should fail with: %s", (msg)); \
    cr_expect_str_eq(e_ ? e_ : "", (msg));                                             \
    kkernel_free(k_);                                                                  \
    free(e_);                                                                          \
  } while (0)

/* Lowers f, which must succeed. The caller frees the kernel with kkernel_free. */
static inline KKernel *tt_lower_ok(cf_fusion *f) {
  KKernel *k = NULL;
  char *e = NULL;
  cf_status s = tt_lower(f, &k, &e);
  cr_assert_eq(s, CF_OK, "lowering failed: %s", e ? e : "");
  free(e);
  return k;
}

typedef struct TtCount {
  KnKind kind;
  int n;
} TtCount;

static inline bool tt_count_pre(KVisitor *v, KNode *x) {
  TtCount *c = v->user;
  c->n += x->kind == c->kind;
  return true;
}

/* Counts the nodes of a kind in a block, at any depth (the shared walk). */
static inline int tt_count_block(const KBlock *b, KnKind kind) {
  TtCount c = {kind, 0};
  KVisitor v = {.user = &c};
  kir_visit_all(&v, tt_count_pre, NULL);
  kir_visit(&v, (KBlock *)b);
  return c.n;
}

static inline char *tt_kernel_text(const KKernel *k) {
  StrBuf b = {0};
  kir_print(&b, k);
  return sb_take(&b);
}

#endif
