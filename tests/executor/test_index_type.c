/* cf_executor_options.index_type and define and run's choice of it: a kernel of symbolic
 * sizes indexes with 32 bits when it is asked to (CF_INDEX_32) and each run checks that
 * every tensor's elements and offsets fit; define and run asks for it when every tensor
 * of a call is well within 2^31 (executor/fusion_plan.c index_type_of), and takes 64 bits
 * for a call that is not. A 32-bit kernel reads the thread and block coordinates as int,
 * so a negative stride or a pad's offset never wraps through unsigned arithmetic. On the
 * host backend; a tensor spanning more than 2^31 elements lies in a sparse mapping, of
 * which only the pages of its elements are ever touched. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(index_type, .init = setup, .fini = teardown);

/* out = -x, x of rank 1 with any strides. */
static void neg_of_strided(void) {
  cf_tv *x = cf_tensor_strided(f, CF_FLOAT, 1);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_neg(f, x));
}

/* Three floats 2^30 elements apart (a span of 2^31), in a sparse mapping of 8 GiB. */
typedef struct Sparse {
  float *base;
  size_t bytes;
  int64_t shape, stride;
  DLTensor t;
} Sparse;

static bool sparse_make(Sparse *s) {
  s->bytes = ((size_t)2 << 30) * sizeof(float) + 4096;
  s->base = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (s->base == MAP_FAILED) return false;
  s->shape = 3, s->stride = (int64_t)1 << 30;
  for (int i = 0; i < 3; i++) s->base[(size_t)i << 30] = (float)(i + 1);
  s->t = (DLTensor){.data = s->base, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = &s->shape,
                    .strides = &s->stride};
  return true;
}

static char *source_of(const cf_executor *e) { return strdup(cf_executor_source(e)); }

/* A call well within 32 bits gets a kernel of 32-bit indices (a reversed view included:
 * x[::-1], stride -1); a call spanning 2^31 elements gets a 64-bit one: two kernels, both
 * right. */
Test(index_type, define_and_run_takes_32_bits_where_the_call_fits) {
  neg_of_strided();
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *x = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){1000}), *out = NULL;
  cf_tensor_fill_iota(&x->dl_tensor);
  int64_t stride;
  DLTensor rev = tu_reversed_view(x, &stride);
  const DLTensor *in = &rev;
  cr_assert_eq(cf_fusion_execute(c, 1, &in, 1, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  for (int i = 0; i < 1000; i += 37) cr_expect_eq(cf_tensor_get(&out->dl_tensor, i), -(double)(999 - i), "at %d", i);
  char *src = source_of(cf_fusion_cache_last_executor(c, 0));
  cr_expect(strstr(src, "typedef int cf_index_t;"), "%s", src);
  free(src);
  cf_tensor_free(out), cf_tensor_free(x);
  out = NULL;

  Sparse s;
  cr_assert(sparse_make(&s), "no sparse mapping of 8 GiB");
  in = &s.t;
  cr_assert_eq(cf_fusion_execute(c, 1, &in, 1, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  for (int i = 0; i < 3; i++) cr_expect_eq(cf_tensor_get(&out->dl_tensor, i), -(double)(i + 1), "at %d", i);
  src = source_of(cf_fusion_cache_last_executor(c, 0));
  cr_expect(strstr(src, "typedef long long cf_index_t;"), "%s", src);
  free(src);
  cr_expect_eq(cf_fusion_cache_num_kernels(c), 2);
  cf_tensor_free(out);
  munmap(s.base, s.bytes);
  cf_fusion_cache_destroy(c);
}

/* CF_INDEX_32 asked of the executor: a run whose tensor spans 2^31 elements is refused
 * before anything runs, naming the tensor; a run that fits is right. */
Test(index_type, a_32_bit_kernel_refuses_a_tensor_beyond_it) {
  neg_of_strided();
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .index_type = CF_INDEX_32});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_expect(strstr(cf_executor_source(e), "typedef int cf_index_t;"));
  Sparse s;
  cr_assert(sparse_make(&s), "no sparse mapping of 8 GiB");
  const DLTensor *in = &s.t;
  DLManagedTensor *out = NULL;
  cr_expect_eq(cf_executor_run(e, 1, &in, 1, &out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_executor_error(e), "run: T0 (argument 0) is too large for this kernel's 32-bit indexing "
                                         "(cf_executor_options.index_type): 3 elements, largest offset 2147483648; "
                                         "both must be below 2^31");
  cr_expect_null(out);
  s.stride = 1 << 20; /* a span of 2^21: fits */
  cr_assert_eq(cf_executor_run(e, 1, &in, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cr_expect_eq(cf_tensor_get(&out->dl_tensor, 0), -1.0);
  cf_tensor_free(out);
  munmap(s.base, s.bytes);
  cf_executor_destroy(e);
}

/* CF_INDEX_64 keeps 64 bits where the sizes are constant and small (AUTO takes 32). */
Test(index_type, index_64_keeps_64_bits_for_constant_sizes) {
  cf_tv *x = tu_input(f, CF_FLOAT, 1, (int64_t[]){100});
  cf_fusion_add_output(f, cf_neg(f, x));
  for (int i = 0; i < 2; i++) {
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST,
                                                               .index_type = i ? CF_INDEX_64 : CF_INDEX_AUTO});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
    cr_expect(strstr(cf_executor_source(e), i ? "typedef long long cf_index_t;" : "typedef int cf_index_t;"));
    cf_executor_destroy(e);
  }
}

/* A pad of a symbolic tensor under 32-bit indices (the source index is the thread's
 * position minus the pad's width, read where the predicate says it is in bounds): equal
 * to the evaluator. */
Test(index_type, a_pad_under_32_bit_indices_equals_the_evaluator) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_pad(f, x, 4, (int64_t[]){3, 2, 1, 4}, 0.5));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){5, 7}), *out = NULL, *want = NULL;
  cf_tensor_fill_iota(&t->dl_tensor);
  const DLTensor *in = &t->dl_tensor;
  cr_assert_eq(cf_fusion_execute(c, 1, &in, 1, &out), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 1, &in, &want), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(out->dl_tensor.shape[0] * out->dl_tensor.shape[1], 10 * 12);
  for (int64_t i = 0; i < 10 * 12; i++)
    cr_expect_eq(cf_tensor_get(&out->dl_tensor, i), cf_tensor_get(&want->dl_tensor, i), "at %lld", (long long)i);
  char *src = source_of(cf_fusion_cache_last_executor(c, 0));
  cr_expect(strstr(src, "typedef int cf_index_t;"), "%s", src);
  free(src);
  cf_tensor_free(out), cf_tensor_free(want), cf_tensor_free(t);
  cf_fusion_cache_destroy(c);
}
