/* tests/kernels/cases.h: the scheduled fusions every backend must run correctly, one
 * builder per schedule the lowering issue lists. Each builder makes and schedules a
 * fusion and describes its inputs; tests/kernels/test_scheduled.c runs each on NVRTC and
 * the host backend, tests/kernels/test_gpu_backends.c on the GPU against the host. */
#ifndef CFUSER_KERNEL_CASES_H
#define CFUSER_KERNEL_CASES_H

#include "kernel_check.h"

typedef struct KcCase {
  const char *name;
  void (*build)(cf_fusion *f, KcInput *inputs, int *nin);
  double tol; /* 0: exact */
} KcCase;


/* out[4, 8] = relu(a * broadcast(b) + a): one block per 8 elements, all inlined. */
static inline void case_pointwise_broadcast(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *b = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, b);
  cf_tv *out = cf_relu(f, cf_add(f, cf_mul(f, a, cf_broadcast(f, b, 2, (bool[]){true, false})), a));
  cf_fusion_add_output(f, out);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 8);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(4, 8);
  in[1] = F32(8);
  *nin = 2;
}

/* A 10-element exp with a split by 4 that does not divide: the last block is predicated. */
static inline void case_non_divisible_split(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){10});
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_exp(f, cf_set(f, a));
  cf_fusion_add_output(f, out);
  cf_split(f, out, 0, 4);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(10);
  *nin = 1;
}

/* An outer split: 3 blocks over ceil(20/3) = 7 threads each, non-divisible too. */
static inline void case_outer_split(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){20});
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_neg(f, a);
  cf_fusion_add_output(f, out);
  cf_split_outer(f, out, 0, 3);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  in[0] = F32(20);
  *nin = 1;
}

/* Merges of a [3, 5, 7] tensor into one axis, split over blocks of 32 threads. */
static inline void case_merges(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){3, 5, 7});
  cf_fusion_add_input(f, a);
  cf_tv *t = cf_mul_scalar(f, a, 2.0);
  cf_tv *out = cf_add(f, t, a);
  cf_fusion_add_output(f, out);
  cf_merge(f, out, 1);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 32);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(3, 5, 7);
  *nin = 1;
}

/* A reorder: threads over the outer logical axis, a serial loop over the inner one. */
static inline void case_reorder(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){6, 16});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_sigmoid(f, t1);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 1, 4);
  cf_reorder(f, out, 2, (int[]){0, 2, 2, 0});
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 2, CF_PT_TIDY);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(6, 16);
  *nin = 1;
}

/* An 8x8 tile staged through shared memory whose loop domain is XOR-swizzled. */
static inline void case_swizzle(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 8});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_set(f, t1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_swizzle_xor(f, t1, 0, 1);
  cf_parallelize(f, t1, 0, CF_PT_TIDY);
  cf_parallelize(f, t1, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 0, CF_PT_TIDY);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  in[0] = F32(8, 8);
  *nin = 1;
}

/* Shared-memory staging: each thread writes one row, reads another (a sync is needed). */
static inline void case_smem_staging(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){16, 8});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_set(f, t1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_parallelize(f, t1, 0, CF_PT_TIDX);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 16);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  in[0] = F32(16, 8);
  *nin = 1;
}

/* A vectorized (4 floats) and unrolled (2) copy over 2 blocks of 32 threads. */
static inline void case_vectorize_unroll(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){512});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *t2 = cf_set(f, t1);
  cf_fusion_add_output(f, t2);
  cf_split(f, t2, 0, 4);
  cf_split(f, t2, 0, 32);
  cf_split(f, t2, 0, 2);
  cf_propagate_transforms(f, t2);
  cf_parallelize(f, t2, 0, CF_PT_BIDX);
  cf_parallelize(f, t2, 1, CF_PT_UNROLL);
  cf_parallelize(f, t2, 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, t2, 0, NULL);
  cf_parallelize(f, t1, 3, CF_PT_VECTORIZE);
  cf_parallelize(f, t2, 3, CF_PT_VECTORIZE);
  cf_inline_most(f);
  in[0] = F32(512);
  *nin = 1;
}

/* Symbolic sizes: the extents are bound from the inputs at run time. */
static inline void case_symbolic(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_tanh(f, cf_set(f, a));
  cf_fusion_add_output(f, out);
  cf_merge(f, out, 0);
  cf_split(f, out, 0, 64);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_propagate_transforms(f, out);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(7, 13);
  *nin = 1;
}

/* A strided (column-major) input read through its run-time strides. */
static inline void case_strided(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_strided(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, a);
  cf_tv *out = cf_abs(f, a);
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 0, CF_PT_BIDX);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  static const int64_t col_major[2] = {1, 5};
  in[0] = (KcInput){CF_FLOAT, 2, {5, 3}, col_major};
  *nin = 1;
}

/* A 32x32 transpose through shared memory: coalesced reads, a sync, coalesced writes. */
static inline void case_transpose_smem(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){32, 32});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_transpose(f, t1, 0, 1);
  cf_fusion_add_output(f, out);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  cf_parallelize(f, t1, 0, CF_PT_TIDY);
  cf_parallelize(f, t1, 1, CF_PT_TIDX);
  cf_parallelize(f, out, 0, CF_PT_TIDY);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  in[0] = F32(32, 32);
  *nin = 1;
}

/* Row sums of a [16, 33] tensor: one thread per row, a serial loop over the row. */
static inline void case_serial_sum(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){16, 33});
  cf_fusion_add_input(f, a);
  cf_tv *t1 = cf_set(f, a);
  cf_tv *out = cf_sum(f, t1, 1, (int[]){1});
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, out, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(16, 33);
  *nin = 1;
}

/* floor, ceil, tan and erf of a float tensor, and floor, ceil and clamp of an int32 one
 * (floor and ceil: the integer itself), on [blockIdx.x, threadIdx.x]. */
static inline void case_rounding_and_special_functions(cf_fusion *f, KcInput *in, int *nin) {
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 33});
  cf_tv *k = cf_tensor_concrete(f, CF_INT32, 2, (int64_t[]){4, 33});
  cf_fusion_add_input(f, a);
  cf_fusion_add_input(f, k);
  cf_tv *x = cf_mul_scalar(f, a, 3.0);
  cf_tv *s = cf_add(f, cf_add(f, cf_floor(f, x), cf_ceil(f, x)), cf_add(f, cf_tan(f, a), cf_erf(f, x)));
  cf_fusion_add_output(f, s);
  cf_fusion_add_output(f, cf_add(f, cf_floor(f, k), cf_clamp(f, cf_ceil(f, k), -3, 5)));
  cf_parallelize(f, s, 0, CF_PT_BIDX);
  cf_parallelize(f, s, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, s, 0, NULL);
  cf_inline_most(f);
  in[0] = F32(4, 33);
  in[1] = (KcInput){CF_INT32, 2, {4, 33}, NULL};
  *nin = 2;
}

/* The tutorial's GSGCopy: a 2x4 copy gmem -> smem -> gmem with one of six inlining and
 * parallelization strategies (bit 0: inline at 1; bit 1: axis 1 on BIDx; bit 2: axis 0
 * on TIDx). */
static inline void gsg_copy(cf_fusion *f, KcInput *in, int *nin, int variant) {
  cf_tv *t0 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_fusion_add_input(f, t0);
  cf_tv *t1 = cf_set(f, t0);
  cf_tv *t2 = cf_set(f, t1);
  cf_fusion_add_output(f, t2);
  cf_set_memory_type(f, t1, CF_MEM_SHARED);
  if (variant & 1) cf_inline_at(f, t1, 1);
  for (int k = 0; k < 2 && (variant & 2); k++) cf_parallelize(f, k ? t2 : t1, 1, CF_PT_BIDX);
  for (int k = 0; k < 2 && (variant & 4); k++) cf_parallelize(f, k ? t2 : t1, 0, CF_PT_TIDX);
  in[0] = F32(2, 4);
  *nin = 1;
}
#define GSG(v) \
  static inline void case_gsg_copy_##v(cf_fusion *f, KcInput *in, int *nin) { gsg_copy(f, in, nin, v); }
GSG(0)
GSG(2)
GSG(1)
GSG(3)
GSG(5)
GSG(7)
#undef GSG

static const KcCase kc_cases[] = {
    {"pointwise_broadcast", case_pointwise_broadcast, 1e-6},
    {"non_divisible_split", case_non_divisible_split, 1e-6},
    {"outer_split", case_outer_split, 0},
    {"merges", case_merges, 1e-6},
    {"reorder", case_reorder, 1e-6},
    {"swizzle", case_swizzle, 0},
    {"smem_staging", case_smem_staging, 0},
    {"vectorize_unroll", case_vectorize_unroll, 0},
    {"symbolic", case_symbolic, 1e-6},
    {"strided", case_strided, 0},
    {"transpose_smem", case_transpose_smem, 0},
    {"serial_sum", case_serial_sum, 1e-5},
    {"rounding_and_special_functions", case_rounding_and_special_functions, 1e-5},
    {"gsg_copy_none", case_gsg_copy_0, 0},
    {"gsg_copy_bidx", case_gsg_copy_2, 0},
    {"gsg_copy_inline", case_gsg_copy_1, 0},
    {"gsg_copy_inline_bidx", case_gsg_copy_3, 0},
    {"gsg_copy_inline_tidx", case_gsg_copy_5, 0},
    {"gsg_copy_inline_tidx_bidx", case_gsg_copy_7, 0},
};
#define KC_NCASES ((int)(sizeof kc_cases / sizeof kc_cases[0]))

#endif
