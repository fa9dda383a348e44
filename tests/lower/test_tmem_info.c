/* tests/lower/test_tmem_info.c: the tensor-memory allocation info (lower/tmem_info.c) and
 * the region grouping call (ir/tmem_group.c): lanes and columns per tensor, column
 * rounding, regions, offsets inside a region, the limits and their messages. */
#include "tmem_test_util.h"

static cf_fusion *f;
static cf_tv *tv[5];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(tmem_info, .init = setup, .fini = teardown);

/* [128, cols] with the rows on TIDx (lanes) and the columns serial: a region of
 * ceil(cols * dtype bytes / 4) raw columns. */
static void lanes_by_columns(cf_dtype dt, int64_t cols) {
  tt_chain(f, dt, 2, (int64_t[]){128, cols}, tv);
  tt_parallelize(f, tv, 1, (cf_parallel_type[]){CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
}

Test(tmem_info, one_region_per_tensor_by_default) {
  lanes_by_columns(CF_FLOAT, 48);
  KKernel *k = tt_lower_ok(f);
  cr_assert_eq(k->nregions, 1);
  cr_expect(k->uses_tmem);
  KTMemRegion *r = &k->regions[0];
  cr_assert_eq(r->ntensors, 1);
  cr_expect_str_eq(r->tensors[0]->name, "T2");
  cr_expect_eq(r->num_lanes, 128);
  cr_expect_eq(r->raw_columns, 48);
  cr_expect_eq(r->num_columns, 64);
  KTensor *t2 = r->tensors[0];
  cr_expect_eq(t2->tmem_region, 0);
  cr_expect_eq(t2->tmem_lanes, 128);
  cr_expect_eq(t2->tmem_columns, 48);
  cr_expect_eq(t2->tmem_lane_offset, 0);
  cr_expect_eq(t2->tmem_col_offset, 0);
  kkernel_free(k);
}

Test(tmem_info, the_region_slot_is_a_shared_uint32_allocation) {
  lanes_by_columns(CF_FLOAT, 8);
  KKernel *k = tt_lower_ok(f);
  KTensor *slot = k->regions[0].slot;
  cr_assert_not_null(slot);
  cr_expect_eq(slot->mem, CF_MEM_SHARED);
  cr_expect_eq(slot->dtype, CF_UINT32);
  int64_t n = 0;
  cr_expect(kx_is_const(slot->size, &n) && n == 1);
  bool listed = false;
  for (int i = 0; i < k->nallocs; i++) listed |= k->allocs[i] == slot;
  cr_expect(listed, "the slot is among the kernel's allocations");
  kkernel_free(k);
}

Test(tmem_info, no_tensor_memory_no_regions) {
  tu_set_chain(f, CF_FLOAT, 2, (int64_t[]){4, 8}, tv);
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(k->nregions, 0);
  cr_expect(!k->uses_tmem);
  cr_expect_eq(tt_count_block(&k->body, KN_TMEM_ALLOC), 0);
  kkernel_free(k);
}

/* The sizes: every raw column count from 32 to 257 is rounded up to a power of
 * two, and below 32 to 32. */
Test(tmem_info, column_rounding_32_to_257) {
  for (int64_t cols = 1; cols <= 257; cols++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    lanes_by_columns(CF_FLOAT, cols);
    KKernel *k = tt_lower_ok(f);
    int64_t want = 32;
    while (want < cols) want *= 2;
    cr_expect_eq(k->regions[0].raw_columns, cols);
    cr_expect_eq(k->regions[0].num_columns, want, "%lld raw columns: %lld allocated, want %lld", (long long)cols,
                 (long long)k->regions[0].num_columns, (long long)want);
    kkernel_free(k);
  }
}

Test(tmem_info, columns_are_32_bit_cells) {
  struct {
    cf_dtype dt;
    int64_t cols, raw;
  } cases[] = {{CF_HALF, 64, 32}, {CF_INT8, 64, 16}, {CF_HALF, 6, 3}, {CF_INT8, 4, 1}, {CF_DOUBLE, 16, 32}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    lanes_by_columns(cases[i].dt, cases[i].cols);
    /* 8- and 16-bit elements move in whole words: vectorize the accesses to 4 bytes */
    int64_t v = 4 / (int64_t)cf_dtype_size(cases[i].dt);
    if (v > 1)
      for (int t = 2; t <= 3; t++) {
        cf_split(f, tv[t], 1, v);
        cf_parallelize(f, tv[t], -1, CF_PT_VECTORIZE);
      }
    KKernel *k = tt_lower_ok(f);
    cr_expect_eq(k->regions[0].raw_columns, cases[i].raw, "%s x %lld", cf_dtype_name(cases[i].dt),
                 (long long)cases[i].cols);
    kkernel_free(k);
  }
}

Test(tmem_info, too_many_columns_counts_before_rounding) {
  lanes_by_columns(CF_FLOAT, 513);
  EXPECT_LOWER_ERROR(f, "Not enough tensor memory columns: tried to allocate 513, but only 512 available.");
}

Test(tmem_info, exactly_512_columns_fit) {
  lanes_by_columns(CF_FLOAT, 512);
  KKernel *k = tt_lower_ok(f);
  cr_expect_eq(k->regions[0].num_columns, 512);
  kkernel_free(k);
}

Test(tmem_info, too_many_lanes) {
  tt_chain(f, CF_FLOAT, 3, (int64_t[]){2, 128, 4}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_SERIAL, CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 2);
  /* the serial axis is right of the compute-at position (0): allocated, 2 x 128 lanes */
  EXPECT_LOWER_ERROR(f, "Not enough tensor memory lanes: tried to allocate 256, but only 128 available.");
}

/* ---- two tensors in tensor memory: tv1 -> tv2 (tmem) -> tv3 -> tv4 (tmem) -> tv5 -> tv6 */

static cf_tv *t[7];

static void two_tmem_tensors(int64_t cols) {
  t[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, cols});
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

Test(tmem_info, two_tensors_two_regions) {
  two_tmem_tensors(40);
  KKernel *k = tt_lower_ok(f);
  cr_assert_eq(k->nregions, 2);
  for (int r = 0; r < 2; r++) {
    cr_expect_eq(k->regions[r].ntensors, 1);
    cr_expect_eq(k->regions[r].raw_columns, 40);
    cr_expect_eq(k->regions[r].num_columns, 64);
    cr_expect_eq(k->regions[r].tensors[0]->tmem_region, r);
    cr_expect_eq(k->regions[r].tensors[0]->tmem_col_offset, 0);
  }
  cr_expect_str_eq(k->regions[0].tensors[0]->name, "T2");
  cr_expect_str_eq(k->regions[1].tensors[0]->name, "T4");
  kkernel_free(k);
}

Test(tmem_info, grouped_tensors_share_a_region_side_by_side) {
  two_tmem_tensors(40);
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[4]}), CF_OK, "%s", cf_fusion_error(f));
  KKernel *k = tt_lower_ok(f);
  cr_assert_eq(k->nregions, 1);
  KTMemRegion *r = &k->regions[0];
  cr_assert_eq(r->ntensors, 2);
  cr_expect_str_eq(r->tensors[0]->name, "T2");
  cr_expect_str_eq(r->tensors[1]->name, "T4");
  cr_expect_eq(r->tensors[0]->tmem_col_offset, 0);
  cr_expect_eq(r->tensors[1]->tmem_col_offset, 40);
  cr_expect_eq(r->tensors[1]->tmem_region, 0);
  cr_expect_eq(r->raw_columns, 80);
  cr_expect_eq(r->num_columns, 128);
  kkernel_free(k);
}

Test(tmem_info, the_sum_of_rounded_regions_must_fit) {
  two_tmem_tensors(257); /* each rounds to 512 */
  EXPECT_LOWER_ERROR(f, "Not enough tensor memory columns: tried to allocate 1024, but only 512 available.");
}

Test(tmem_info, a_group_checks_its_unrounded_sum) {
  two_tmem_tensors(257);
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[4]}), CF_OK);
  EXPECT_LOWER_ERROR(f, "Not enough tensor memory columns: tried to allocate 514, but only 512 available.");
}

/* ---- cf_fusion_group_tmem's errors ---------------------------------------------------- */

Test(tmem_info, group_errors) {
  two_tmem_tensors(8);
  cr_expect_eq(cf_fusion_group_tmem(f, 0, (cf_tv *[]){t[2]}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "group_tmem: empty group; a region needs a tensor");
  cf_fusion_clear_error(f);

  cr_expect_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[3]}), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "group_tmem: T3 is in Local memory; only tensor-memory TensorViews share "
                                       "regions for T3_l_float[ithreadIdx.x6{128}, iS7{8}]");
  cf_fusion_clear_error(f);

  cr_expect_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[2]}), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f), "group_tmem: T2 is listed twice in the group for "
                                       "T2_t_float[ithreadIdx.x4{128}, iS5{8}]");
  cf_fusion_clear_error(f);

  cr_expect_eq(cf_fusion_group_tmem(f, 1, (cf_tv *[]){t[2]}), CF_OK);
  cr_expect_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[4], t[2]}), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), "group_tmem: T2 is already in another region; a tensor cannot be in two "
                                       "regions for T2_t_float[ithreadIdx.x4{128}, iS5{8}]");
}

Test(tmem_info, a_grouped_tensor_moved_out_of_tensor_memory) {
  two_tmem_tensors(8);
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){t[2], t[4]}), CF_OK);
  cf_set_memory_type(f, t[4], CF_MEM_LOCAL);
  EXPECT_LOWER_ERROR(f, "compile: T4 is grouped into a tensor-memory region but is in Local memory");
}

/* ---- symbolic sizes: the limits become run-time checks ------------------------------ */

Test(tmem_info, symbolic_columns_become_a_run_time_check) {
  t[0] = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, t[0]);
  for (int i = 1; i < 5; i++) t[i] = cf_set(f, t[i - 1]);
  cf_fusion_add_output(f, t[4]);
  cf_set_memory_type(f, t[2], CF_MEM_TENSOR);
  cf_split(f, t[4], 0, 128);
  cf_parallelize(f, t[4], 1, CF_PT_TIDX);
  cf_parallelize(f, t[4], 0, CF_PT_BIDX);
  cf_propagate_transforms(f, t[4]);
  cf_parallelize_all_like(f, t[4], 0, NULL);
  cf_set_tmem_dim_sep_pos(f, t[2], 2);
  cf_inline_at(f, t[1], -1); /* registers: one element */
  cf_inline_at(f, t[3], -1);
  KKernel *k = tt_lower_ok(f);
  cr_assert_eq(k->nregions, 1);
  cr_expect_eq(k->regions[0].raw_columns, -1);
  cr_expect_eq(k->regions[0].num_columns, 512, "a region of symbolic size takes every column");
  bool found = false;
  for (int i = 0; i < k->nchecks; i++)
    found |= strncmp(k->checks[i].message, "Not enough tensor memory columns: tried to allocate ", 52) == 0;
  cr_expect(found, "a run-time check of the columns");
  kkernel_free(k);
}
