/* tests/lower/test_tmem_lifetime.c: the final form of tensor memory in the kernel IR
 * (lower/tmem_lifetime.c): tcgen05 load/store nodes in place of the copies, the
 * allocation prologue, and one sync + dealloc after the last use of every region, for
 * regions of one tensor and regions shared by two. */
#include "tmem_test_util.h"

static cf_fusion *f;
static cf_tv *t[7];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(tmem_lifetime, .init = setup, .fini = teardown);

/* t0 -> t1 -> t2 (tmem) -> t3 -> t4 (tmem) -> t5 -> t6, [128, 8], rows on TIDx (lanes). */
static void two_tmem_tensors(void) {
  t[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, 8});
  cf_fusion_add_input(f, t[0]);
  for (int i = 1; i < 7; i++) t[i] = cf_set(f, t[i - 1]);
  cf_fusion_add_output(f, t[6]);
  cf_set_memory_type(f, t[2], CF_MEM_TENSOR);
  cf_set_memory_type(f, t[4], CF_MEM_TENSOR);
  cf_parallelize(f, t[6], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, t[6], 0, NULL);
  cf_set_tmem_dim_sep_pos(f, t[2], 1);
  cf_set_tmem_dim_sep_pos(f, t[4], 1);
}

/* The index of the top-level node of k's body that contains a tcgen05 node of `kind` on
 * tensor `name`, or -1. */
static bool contains(const KNode *n, KnKind kind, const char *name) {
  if ((n->kind == KN_TMEM_LD || n->kind == KN_TMEM_ST) && n->kind == kind)
    return !strcmp(n->u.tmem.tmem.t->name, name);
  const KBlock *b = n->kind == KN_FOR ? &n->u.loop.body : n->kind == KN_IF ? &n->u.cond.then : NULL;
  for (int i = 0; b && i < b->len; i++)
    if (contains(b->items[i], kind, name)) return true;
  return false;
}

static int top_level(const KKernel *k, KnKind kind, const char *name) {
  for (int i = 0; i < k->body.len; i++)
    if (contains(k->body.items[i], kind, name)) return i;
  return -1;
}

static int find_region_node(const KKernel *k, KnKind kind, int region) {
  for (int i = 0; i < k->body.len; i++)
    if (k->body.items[i]->kind == kind && k->body.items[i]->u.region.region == region) return i;
  return -1;
}

Test(tmem_lifetime, prologue_allocates_relinquishes_and_syncs) {
  two_tmem_tensors();
  KKernel *k = tt_lower_ok(f);
  cr_assert_geq(k->body.len, 4);
  cr_expect_eq(k->body.items[0]->kind, KN_TMEM_ALLOC);
  cr_expect_eq(k->body.items[0]->u.region.region, 0);
  cr_expect_eq(k->body.items[1]->kind, KN_TMEM_ALLOC);
  cr_expect_eq(k->body.items[1]->u.region.region, 1);
  cr_expect_eq(k->body.items[2]->kind, KN_TMEM_RELINQUISH);
  cr_expect_eq(k->body.items[3]->kind, KN_SYNC);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_RELINQUISH), 1);
  kkernel_free(k);
}

/* One region each: two allocs, two deallocs, each right after its tensor's last load. */
Test(tmem_lifetime, one_region_each_two_deallocs) {
  two_tmem_tensors();
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_ALLOC), 2);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_DEALLOC), 2);
  int ld2 = top_level(k, KN_TMEM_LD, "T2"), ld4 = top_level(k, KN_TMEM_LD, "T4");
  int d0 = find_region_node(k, KN_TMEM_DEALLOC, 0), d1 = find_region_node(k, KN_TMEM_DEALLOC, 1);
  cr_assert(ld2 > 0 && ld4 > ld2, "loads at %d and %d", ld2, ld4);
  cr_expect_eq(d0, ld2 + 2, "region 0 is freed after T2's last use");
  cr_expect_eq(k->body.items[ld2 + 1]->kind, KN_SYNC);
  cr_expect_eq(d1, ld4 + 2, "region 1 is freed after T4's last use");
  cr_expect_eq(k->body.items[d1 - 1]->kind, KN_SYNC);
  kkernel_free(k);
}

/* A region shared by both: one alloc, one dealloc, after the last use of its *second*
 * tensor (nvFuser tracks only the first tensor of a region; cfuser tracks all). */
Test(tmem_lifetime, a_shared_region_one_dealloc_after_its_last_tensor) {
  two_tmem_tensors();
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[4]}), CF_OK);
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_ALLOC), 1);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_DEALLOC), 1);
  int ld4 = top_level(k, KN_TMEM_LD, "T4");
  int d0 = find_region_node(k, KN_TMEM_DEALLOC, 0);
  cr_expect_eq(d0, ld4 + 2);
  cr_expect_eq(k->body.items[ld4 + 1]->kind, KN_SYNC);
  cr_expect_eq(k->body.items[1]->kind, KN_TMEM_RELINQUISH);
  kkernel_free(k);
}

/* The tcgen05 nodes: registers on the local side, the tensor and its lane and column. */
Test(tmem_lifetime, loads_and_stores_replace_the_copies) {
  two_tmem_tensors();
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[4]}), CF_OK);
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_ST), 2);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_LD), 2);
  int st4 = top_level(k, KN_TMEM_ST, "T4");
  cr_assert_geq(st4, 0);
  const KNode *n = k->body.items[st4];
  while (n->kind == KN_FOR) n = n->u.loop.body.items[n->u.loop.body.len - 1];
  cr_assert_eq(n->kind, KN_TMEM_ST);
  cr_expect_str_eq(n->u.tmem.reg.t->name, "T3");
  cr_expect_eq(n->u.tmem.reg.t->mem, CF_MEM_LOCAL);
  cr_expect_eq(n->u.tmem.tmem.t->mem, CF_MEM_TENSOR);
  cr_expect_eq(n->u.tmem.tmem.t->tmem_col_offset, 8);
  cr_expect_eq(n->u.tmem.words, 1);
  cr_expect_eq(n->u.tmem.elems, 1);
  cr_assert_not_null(n->u.tmem.tmem.lane);
  cr_expect_eq(n->u.tmem.tmem.lane->kind, KX_THREAD);
  cr_expect_eq(n->u.tmem.tmem.lane->pt, CF_PT_TIDX);
  cr_expect_eq(n->u.tmem.tmem.col->kind, KX_VAR);
  kkernel_free(k);
}

/* The seed's Transpose: the threads that load an element are not those that stored it,
 * so a __syncthreads separates the store from the load (tensor memory is treated like
 * shared memory by the sync pass, which sees the copies before they are converted). */
Test(tmem_lifetime, transpose_syncs_between_store_and_load) {
  t[0] = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){128, 2, 2});
  cf_fusion_add_input(f, t[0]);
  t[1] = cf_set(f, t[0]);
  t[2] = cf_set(f, t[1]);
  t[3] = cf_transpose(f, t[2], 1, 2);
  t[4] = cf_set(f, t[3]);
  cf_fusion_add_output(f, t[4]);
  cf_set_memory_type(f, t[2], CF_MEM_TENSOR);
  for (int i = 1; i <= 4; i++) {
    cf_parallelize(f, t[i], 0, CF_PT_TIDX);
    cf_parallelize(f, t[i], 1, CF_PT_TIDY);
    cf_parallelize(f, t[i], 2, CF_PT_TIDZ);
  }
  cf_set_tmem_dim_sep_pos(f, t[2], 1);
  KKernel *k = tt_lower_ok(f);
  int st = top_level(k, KN_TMEM_ST, "T2"), ld = top_level(k, KN_TMEM_LD, "T2");
  cr_assert(st > 0 && ld > st, "store at %d, load at %d", st, ld);
  bool synced = false;
  for (int i = st + 1; i < ld; i++) synced |= k->body.items[i]->kind == KN_SYNC;
  cr_expect(synced, "a __syncthreads between the store and the load");
  kkernel_free(k);
}

Test(tmem_lifetime, no_tensor_memory_nothing_added) {
  t[0] = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){128});
  cf_fusion_add_input(f, t[0]);
  t[1] = cf_set(f, t[0]);
  t[2] = cf_set(f, t[1]);
  cf_fusion_add_output(f, t[2]);
  cf_parallelize(f, t[2], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, t[2], 0, NULL);
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(tt_count_block(&k->body, KN_SYNC), 0);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_RELINQUISH), 0);
  kkernel_free(k);
}
