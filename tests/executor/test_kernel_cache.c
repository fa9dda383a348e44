/* The in-memory kernel cache: a fusion compiled twice (even rebuilt from scratch) is a hit
 * the second time and runs correctly from the cache; a different schedule or target is a
 * miss; a lowering hook bypasses the cache. */
#include <criterion/criterion.h>

#include "test_util.h"

/* out = a + 1 over [64], 16 threads per block, with a configurable split. */
static cf_fusion *build(int64_t split) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_add_scalar(f, a, 1.0);
  cf_fusion_add_output(f, b);
  cf_split(f, b, 0, split);
  cf_parallelize(f, b, 0, CF_PT_BIDX);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  return f;
}

static void compile_with(cf_kernel_cache *cache, cf_fusion *f, cf_backend backend, const char *arch) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = backend, .arch = arch, .cache = cache});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_executor_destroy(e);
}

Test(kernel_cache, the_same_fusion_rebuilt_is_a_hit) {
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f1 = build(16), *f2 = build(16);
  compile_with(cache, f1, CF_BACKEND_HOST, NULL);
  compile_with(cache, f2, CF_BACKEND_HOST, NULL);
  cr_expect_eq(cf_kernel_cache_misses(cache), 1);
  cr_expect_eq(cf_kernel_cache_hits(cache), 1);
  cf_fusion_destroy(f1);
  cf_fusion_destroy(f2);
  cf_kernel_cache_destroy(cache);
}

Test(kernel_cache, another_schedule_or_target_is_a_miss) {
  TU_SKIP_WITHOUT_NVRTC();
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f16 = build(16), *f32 = build(32);
  compile_with(cache, f16, CF_BACKEND_HOST, NULL);
  compile_with(cache, f32, CF_BACKEND_HOST, NULL);
  compile_with(cache, f16, CF_BACKEND_CUDA, "sm_90a");
  compile_with(cache, f16, CF_BACKEND_CUDA, "sm_100a");
  cr_expect_eq(cf_kernel_cache_misses(cache), 4);
  cr_expect_eq(cf_kernel_cache_hits(cache), 0);
  compile_with(cache, f16, CF_BACKEND_CUDA, "sm_90a");
  cr_expect_eq(cf_kernel_cache_hits(cache), 1);
  cf_fusion_destroy(f16);
  cf_fusion_destroy(f32);
  cf_kernel_cache_destroy(cache);
}

Test(kernel_cache, a_cached_kernel_runs_after_its_fusion_is_gone) {
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f1 = build(16);
  compile_with(cache, f1, CF_BACKEND_HOST, NULL);
  cf_fusion_destroy(f1);
  cf_fusion *f2 = build(16);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .cache = cache});
  cr_assert_eq(cf_executor_compile(e, f2), CF_OK, "%s", cf_executor_error(e));
  cf_fusion_destroy(f2); /* the executor owns (borrows) everything it needs */
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){64}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_tensor_get(&out->dl_tensor, 63), 64.0);
  cr_expect_eq(cf_kernel_cache_hits(cache), 1);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_kernel_cache_destroy(cache);
}

/* Messages name the kernel's tensors after their fusion is gone (the names are the kernel's
 * own copies, not pointers into the fusion), and after a cache hit from a destroyed one. */
Test(kernel_cache, errors_name_tensors_after_the_fusion_is_gone) {
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f1 = build(16);
  compile_with(cache, f1, CF_BACKEND_HOST, NULL);
  cf_fusion_destroy(f1);
  cf_fusion *f2 = build(16);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .cache = cache});
  cr_assert_eq(cf_executor_compile(e, f2), CF_OK, "%s", cf_executor_error(e));
  cf_fusion_destroy(f2);
  DLManagedTensor *in = cf_tensor_host(CF_DOUBLE, 1, (int64_t[]){64}), *out = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_expect_eq(cf_executor_run(e, 1, ins, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: input 0 (T0) has dtype double, expected float");
  cf_tensor_free(in);
  cf_executor_destroy(e);
  cf_kernel_cache_destroy(cache);
}

static void count(const cf_kernel_info *k, void *user) {
  (void)k;
  ++*(int *)user;
}

Test(kernel_cache, a_lowering_hook_bypasses_the_cache) {
  cf_kernel_cache *cache = cf_kernel_cache_create();
  cf_fusion *f = build(16);
  int calls = 0;
  for (int i = 0; i < 2; i++) {
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .cache = cache});
    cf_executor_set_lowering_hook(e, count, &calls);
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
    cf_executor_destroy(e);
  }
  cr_expect_eq(calls, 2);
  cr_expect_eq(cf_kernel_cache_hits(cache) + cf_kernel_cache_misses(cache), 0);
  cf_fusion_destroy(f);
  cf_kernel_cache_destroy(cache);
}
