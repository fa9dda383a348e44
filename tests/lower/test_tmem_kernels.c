/* tests/lower/test_tmem_kernels.c: tensor-memory kernels end to end, beyond the seed
 * tutorial: 8- and 16-bit elements packed into 32-bit words, a region shared by two
 * tensors. Each kernel is compiled by NVRTC for sm_100a (no GPU needed), its tcgen05
 * instructions are checked in the source, and it runs on the host backend (on the GPU
 * when the machine has a Blackwell) against the reference evaluator. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static cf_fusion *f;
static cf_tv *tv[7];

static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(tmem_kernels, .init = setup, .fini = teardown);

typedef struct Seen {
  int nregions;
  int64_t columns[4];
} Seen;

static void seen_regions(const cf_kernel_info *k, void *user) {
  Seen *s = user;
  s->nregions = cf_kernel_num_tmem_regions(k);
  for (int i = 0; i < s->nregions && i < 4; i++) s->columns[i] = cf_kernel_tmem_region(k, i).num_columns;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Compiles for sm_100a and checks the source; returns the executor that runs the kernel
 * here (the GPU's when it is a Blackwell, else the host backend's; the host backend's
 * alone where NVRTC is missing). */
static cf_executor *compile_checked(const char *st, const char *ld, Seen *seen, char **source) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_executor_options o = {.backend = CF_BACKEND_CUDA, .arch = "sm_100a"};
  if (!tu_nvrtc_or_note()) o = (cf_executor_options){.backend = CF_BACKEND_HOST};
  cf_executor *e = cf_executor_create(&o);
  cf_executor_set_lowering_hook(e, seen_regions, seen);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  /* Without NVRTC the host backend runs it, and the CUDA kernel's text is checked. */
  char *src = o.backend == CF_BACKEND_HOST ? tu_cuda_kernel_text(f) : strdup(cf_executor_source(e));
  cr_expect(strstr(src, st) != NULL, "no %s in the kernel", st);
  cr_expect(strstr(src, ld) != NULL, "no %s in the kernel", ld);
  *source = src;
  if (!cf_executor_compile_only(e)) return e;
  cf_executor_destroy(e);
  cf_executor_options h = {.backend = CF_BACKEND_HOST};
  e = cf_executor_create(&h);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  return e;
}

static void run_and_compare(cf_executor *e, cf_dtype dt, int rank, const int64_t *sizes) {
  DLManagedTensor *in = cf_tensor_host(dt, rank, sizes), *dev = NULL, *out = NULL, *ref = NULL;
  cf_tensor_fill_random(&in->dl_tensor, 7);
  const DLTensor *arg = &in->dl_tensor;
  if (cf_executor_backend(e) == CF_BACKEND_CUDA) {
    dev = cf_tensor_device(dt, rank, sizes);
    cf_tensor_copy(&dev->dl_tensor, arg);
    arg = &dev->dl_tensor;
  }
  cr_assert_eq(cf_executor_run(e, 1, &arg, 1, &out), CF_OK, "%s", cf_executor_error(e));
  if (dev) {
    DLManagedTensor *h = cf_tensor_host(dt, rank, sizes);
    cf_tensor_copy(&h->dl_tensor, &out->dl_tensor);
    cf_tensor_free(out);
    out = h;
  }
  const DLTensor *host_in = &in->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, 1, &host_in, &ref), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(cf_tensor_equal(&out->dl_tensor, &ref->dl_tensor), "the kernel disagrees with the reference evaluator");
  cr_expect(cf_tensor_equal(&out->dl_tensor, &in->dl_tensor), "the copy changed its input");
  cf_tensor_free(in), cf_tensor_free(dev), cf_tensor_free(out), cf_tensor_free(ref);
}

/* [128, 64] of dt through tensor memory, rows on lanes, the store and the load
 * vectorized by vec elements. */
static void packed_copy(cf_dtype dt, int64_t vec, const char *st, const char *ld) {
  tv[0] = cf_tensor_concrete(f, dt, 2, (int64_t[]){128, 64});
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 5; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[4]);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  for (int i = 1; i <= 4; i++) {
    cf_parallelize(f, tv[i], 0, CF_PT_TIDX);
    cf_split(f, tv[i], 1, vec);
  }
  cf_parallelize(f, tv[2], -1, CF_PT_VECTORIZE);
  cf_parallelize(f, tv[3], -1, CF_PT_VECTORIZE);
  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_inline_most(f);
  Seen seen = {0};
  char *src = NULL;
  cf_executor *e = compile_checked(st, ld, &seen, &src);
  cr_expect_eq(seen.nregions, 1);
  cr_expect_eq(seen.columns[0], 32, "one vector of 4 bytes per lane");
  run_and_compare(e, dt, 2, (int64_t[]){128, 64});
  free(src);
  cf_executor_destroy(e);
}

Test(tmem_kernels, int8_by_4_moves_one_word) {
  packed_copy(CF_INT8, 4, "tcgen05.st.sync.aligned.32x32b.x1.b32", "tcgen05.ld.sync.aligned.32x32b.x1.b32");
}

Test(tmem_kernels, half_by_2_moves_one_word) {
  packed_copy(CF_HALF, 2, "tcgen05.st.sync.aligned.32x32b.x1.b32", "tcgen05.ld.sync.aligned.32x32b.x1.b32");
}

Test(tmem_kernels, half_by_8_moves_four_words) {
  packed_copy(CF_HALF, 8, "tcgen05.st.sync.aligned.32x32b.x4.b32", "tcgen05.ld.sync.aligned.32x32b.x4.b32");
}

/* t0 -> t1 -> t2 (tmem) -> t3 -> t4 (tmem) -> t5 -> t6 */
static void two_tmem_tensors(void) {
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, 8});
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 7; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[6]);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_set_memory_type(f, tv[4], CF_MEM_TENSOR);
  cf_parallelize(f, tv[6], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[6], 0, NULL);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_set_tmem_dim_sep_pos(f, tv[4], 1);
}

static const char *const st1 = "tcgen05.st.sync.aligned.32x32b.x1.b32", *const ld1 = "tcgen05.ld.sync.aligned.32x32b.x1.b32";

Test(tmem_kernels, one_region_each_allocates_and_frees_twice) {
  two_tmem_tensors();
  Seen seen = {0};
  char *src = NULL;
  cf_executor *e = compile_checked(st1, ld1, &seen, &src);
  cr_expect_eq(seen.nregions, 2);
  cr_expect_eq(count(src, "tcgen05.alloc."), 2);
  cr_expect_eq(count(src, "tcgen05.dealloc."), 2);
  cr_expect_eq(count(src, "tcgen05.relinquish_alloc_permit."), 1);
  run_and_compare(e, CF_FLOAT, 2, (int64_t[]){128, 8});
  free(src);
  cf_executor_destroy(e);
}

Test(tmem_kernels, a_shared_region_allocates_and_frees_once) {
  two_tmem_tensors();
  cr_assert_eq(cf_fusion_group_tmem(f, 2, (cf_tv *[]){tv[2], tv[4]}), CF_OK, "%s", cf_fusion_error(f));
  Seen seen = {0};
  char *src = NULL;
  cf_executor *e = compile_checked(st1, ld1, &seen, &src);
  cr_expect_eq(seen.nregions, 1);
  cr_expect_eq(seen.columns[0], 32, "8 + 8 columns round to 32");
  cr_expect_eq(count(src, "tcgen05.alloc."), 1);
  cr_expect_eq(count(src, "tcgen05.dealloc."), 1);
  run_and_compare(e, CF_FLOAT, 2, (int64_t[]){128, 8});
  free(src);
  cf_executor_destroy(e);
}
