/* tests/lower/test_tmem_pattern.c: the validation of tensor-memory loads and stores
 * (lower/tmem_pattern.c): the 32x32b data path, warp-collectiveness, the thread lattice,
 * sub-partitions, vector widths of 8-, 16- and 32-bit elements, and which ops may touch
 * tensor memory. Every message is asserted whole. */
#include "tmem_test_util.h"

#define PREFIX "Invalid data access pattern in TMem load/store: "

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(tmem_pattern, .init = setup, .fini = teardown);

/* The seed's invalid examples, by their messages. */
Test(tmem_pattern, not_warp_collective) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){16, 2}, tv);
  tt_parallelize(f, tv, 1, (cf_parallel_type[]){CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "TMem load/store must be warp-collective, but the innermost extent is not a multiple of 32.");
}

Test(tmem_pattern, cta_size_one) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 2}, tv);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "TMem load/store must be warp-collective, but CTA size is one.");
}

Test(tmem_pattern, lanes_with_stride_2) {
  tt_chain(f, CF_FLOAT, 3, (int64_t[]){64, 2, 2}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY});
  cf_set_tmem_dim_sep_pos(f, tv[2], 2);
  EXPECT_LOWER_ERROR(f, PREFIX "Warp linearly accessing lanes, but not with stride 1.");
}

Test(tmem_pattern, one_lane_lists_every_data_path) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 32}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_TIDY, CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "no tcgen05 data path matches the access.\n"
                               "  Not 32x32b because warps are not linearly accessing the lane allocation.\n"
                               "  Not 16x64b because it is not implemented in cfuser yet.\n"
                               "  Not 16x128b because it is not implemented in cfuser yet.\n"
                               "  Not 16x256b because it is not implemented in cfuser yet.\n"
                               "  Not 16x32bx2 because it is not implemented in cfuser yet.");
}

Test(tmem_pattern, wrong_subpartition) {
  tt_chain(f, CF_FLOAT, 4, (int64_t[]){2, 2, 32, 2}, tv);
  tt_parallelize(f, tv, 3, (cf_parallel_type[]){CF_PT_TIDY, CF_PT_SERIAL, CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 3);
  EXPECT_LOWER_ERROR(f, PREFIX "Warps are not accessing the correct sub-partition.");
}

Test(tmem_pattern, two_warps_on_one_subpartition) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 2}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "Warps are not accessing the correct sub-partition.");
}

/* One warp whose serial loop walks it over lanes 0-31 and then 32-63: nvFuser's proofs
 * see a single warp (stride 0) and accept it; warp 0 may only touch sub-partition 0. */
Test(tmem_pattern, a_serial_loop_moves_the_warp_off_its_subpartition) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){2, 32}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_SERIAL, CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 2);
  EXPECT_LOWER_ERROR(f, PREFIX "Warps are not accessing the correct sub-partition.");
}

/* The store's threads scatter over columns: the XOR swizzle of (row, column) gives thread
 * l of the warp column j ^ l. */
Test(tmem_pattern, threads_of_a_warp_on_different_columns) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 32}, tv);
  cf_id *logical[2] = {cf_tv_axis(tv[2], 0), cf_tv_axis(tv[2], 1)};
  cr_assert_eq(cf_swizzle_xor(f, tv[2], 0, 1), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_set_allocation_domain(f, tv[2], 2, logical, NULL), CF_OK, "%s", cf_fusion_error(f));
  for (int i = 1; i <= 4; i++) cf_parallelize(f, tv[i], 0, CF_PT_TIDX);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "Threads of a warp access different columns.");
}

/* ---- the thread lattice: launch dimensions wider than the access -------------------- */

/* tv1..tv3 put 4 of the 24 columns on TIDy, tv4 puts 6 there: the block has 6 rows of
 * threads, the tensor-memory accesses use 4. */
static void narrower_tidy(int64_t tidx, bool with_tidz) {
  int64_t sizes[3] = {tidx, 24, 2};
  tt_chain(f, CF_FLOAT, with_tidz ? 3 : 2, sizes, tv);
  cf_split(f, tv[4], 1, 6);
  for (int i = 1; i <= 3; i++) cf_split(f, tv[i], 1, 4);
  for (int i = 1; i <= 4; i++) {
    cf_parallelize(f, tv[i], 0, CF_PT_TIDX);
    cf_parallelize(f, tv[i], 2, CF_PT_TIDY);
    if (with_tidz) cf_parallelize(f, tv[i], 3, CF_PT_TIDZ);
  }
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
}

Test(tmem_pattern, outer_stride_not_a_multiple_of_32) {
  narrower_tidy(8, true); /* TIDz starts every 8 * 6 = 48 threads */
  EXPECT_LOWER_ERROR(f, PREFIX "Outer parallel types' strides must be a multiple of 32.");
}

Test(tmem_pattern, a_thread_extent_smaller_than_the_launch_on_an_outer_type) {
  narrower_tidy(32, false); /* whole warps, but TIDy 4 and 5 would skip the access */
  EXPECT_LOWER_ERROR(f, PREFIX "T2 spans 4 of the 6 threads on threadIdx.y; every thread of the block must take "
                               "part in a TMem load/store, which cannot be predicated.");
}

/* ---- vector widths --------------------------------------------------------------------- */

/* [128, 64] of dt, rows on TIDx (lanes), the store vectorized by st and the load by ld. */
static void vectorized(cf_dtype dt, int64_t st, int64_t ld) {
  tt_chain(f, dt, 2, (int64_t[]){128, 64}, tv);
  for (int i = 1; i <= 4; i++) cf_parallelize(f, tv[i], 0, CF_PT_TIDX);
  cf_split(f, tv[2], 1, st);
  cf_split(f, tv[1], 1, st);
  cf_parallelize(f, tv[2], -1, CF_PT_VECTORIZE);
  cf_split(f, tv[3], 1, ld);
  cf_split(f, tv[4], 1, ld);
  cf_parallelize(f, tv[3], -1, CF_PT_VECTORIZE);
  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_inline_most(f);
}

static void first_words(const KBlock *b, KnKind kind, int *words, int *elems) {
  for (int i = 0; i < b->len && !*words; i++) {
    const KNode *n = b->items[i];
    if (n->kind == kind) *words = n->u.tmem.words, *elems = n->u.tmem.elems;
    else if (n->kind == KN_FOR) first_words(&n->u.loop.body, kind, words, elems);
  }
}

static void expect_words(cf_dtype dt, int64_t st, int64_t ld, int st_words, int ld_words) {
  vectorized(dt, st, ld);
  KKernel *k = tt_lower_ok(f);
  int w = 0, e = 0;
  first_words(&k->body, KN_TMEM_ST, &w, &e);
  cr_expect_eq(w, st_words, "%s store x%lld: %d words", cf_dtype_name(dt), (long long)st, w);
  cr_expect_eq(e, st);
  w = e = 0;
  first_words(&k->body, KN_TMEM_LD, &w, &e);
  cr_expect_eq(w, ld_words, "%s load x%lld: %d words", cf_dtype_name(dt), (long long)ld, w);
  cr_expect_eq(e, ld);
  kkernel_free(k);
}

Test(tmem_pattern, int8_by_4_and_half_by_2_are_one_word) {
  expect_words(CF_INT8, 4, 8, 1, 2);
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  expect_words(CF_HALF, 2, 16, 1, 8);
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  expect_words(CF_FLOAT, 64, 1, 64, 1);
}

Test(tmem_pattern, int8_by_2_is_not_a_word) {
  vectorized(CF_INT8, 2, 4);
  EXPECT_LOWER_ERROR(f, PREFIX "Vectorize size is not a multiple of 4 bytes. vec_size: 2, dtype_size: 1, "
                               "vec_size_in_bytes: 2");
}

Test(tmem_pattern, half_by_1_is_not_a_word) {
  vectorized(CF_HALF, 2, 1);
  EXPECT_LOWER_ERROR(f, PREFIX "Vectorize size is not a multiple of 4 bytes. vec_size: 1, dtype_size: 2, "
                               "vec_size_in_bytes: 2");
}

Test(tmem_pattern, more_than_128_words) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){128, 256}, tv);
  for (int i = 1; i <= 4; i++) cf_parallelize(f, tv[i], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[2], 1, CF_PT_VECTORIZE);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  EXPECT_LOWER_ERROR(f, PREFIX "Vectorize size of 256 words (vec_size: 256, dtype_size: 4) is not a power of two "
                               "from 1 to 128.");
}

/* ---- which ops may touch tensor memory ------------------------------------------------ */

Test(tmem_pattern, only_copies_read_tensor_memory) {
  cf_tv *in = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){128});
  cf_fusion_add_input(f, in);
  cf_tv *a = cf_set(f, in), *b = cf_set(f, a), *c = cf_add(f, b, b), *d = cf_set(f, c);
  cf_fusion_add_output(f, d);
  cf_set_memory_type(f, b, CF_MEM_TENSOR);
  cf_parallelize(f, d, 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, d, 0, NULL);
  cf_set_tmem_dim_sep_pos(f, b, 1);
  EXPECT_LOWER_ERROR(f, "compile: T3 = add(T2, T2) reads tensor memory; tensor memory is only read by a copy (set or "
                        "transpose) into registers (a local tensor)");
}

Test(tmem_pattern, no_path_from_global_memory) {
  cf_tv *in = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){128});
  cf_fusion_add_input(f, in);
  cf_tv *a = cf_set(f, in), *b = cf_set(f, a);
  cf_fusion_add_output(f, b);
  cf_set_memory_type(f, a, CF_MEM_TENSOR);
  cf_parallelize(f, b, 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, b, 0, NULL);
  cf_set_tmem_dim_sep_pos(f, a, 1);
  EXPECT_LOWER_ERROR(f, "compile: T1 = Set(T0) writes tensor memory; tensor memory is only written by a copy (set) "
                        "from registers (a local tensor)");
}

/* ---- skipping the validation ------------------------------------------------------------ */

Test(tmem_pattern, skip_validation_lowers_an_invalid_pattern) {
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 2}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  LowerOptions o = {.skip_tmem_validation = true};
  KKernel *k = NULL;
  char *err = NULL;
  cr_expect_eq(lower_fusion(f, &o, &k, &err), CF_OK, "%s", err ? err : "");
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_ST), 1);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_LD), 1);
  kkernel_free(k);
  free(err);
}
