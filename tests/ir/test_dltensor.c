/* Tests of ir/dltensor.c: host tensors, fills, comparisons, element conversion (half and
 * bfloat16 rounding included), the DLPack type mapping and the enumeration names. */
#include "ops_test_util.h"

Test(dltensor, host_tensor_is_contiguous_zeroed_and_aligned) {
  DLManagedTensor *m = cf_tensor_host(CF_HALF, 3, (int64_t[]){2, 3, 4});
  cr_assert_not_null(m);
  DLTensor *t = &m->dl_tensor;
  cr_expect_eq(t->ndim, 3);
  cr_expect_eq(t->device.device_type, kDLCPU);
  cr_expect_eq(t->dtype.code, kDLFloat);
  cr_expect_eq(t->dtype.bits, 16);
  cr_expect_eq(t->dtype.lanes, 1);
  cr_expect_eq(t->shape[0], 2);
  cr_expect_eq(t->strides[0], 12);
  cr_expect_eq(t->strides[1], 4);
  cr_expect_eq(t->strides[2], 1);
  cr_expect_eq(t->byte_offset, 0);
  cr_expect_eq((uintptr_t)t->data % 64, 0);
  for (int i = 0; i < 24; i++) cr_expect_eq(((uint16_t *)t->data)[i], 0);
  cr_expect_eq(cf_tensor_numel(t), 24);
  cf_tensor_free(m);
}

Test(dltensor, strided_host_tensor_spans_its_footprint) {
  DLManagedTensor *m = cf_tensor_host_strided(CF_INT32, 2, (int64_t[]){2, 3}, (int64_t[]){1, 5});
  cr_assert_not_null(m);
  cr_expect_eq(m->dl_tensor.strides[1], 5);
  cf_tensor_fill_iota(&m->dl_tensor);
  /* Element (i, j) lives at i + 5 j; the footprint is 1 + 1 + 2*5 = 12 elements. */
  int32_t *d = m->dl_tensor.data;
  cr_expect_eq(d[0], 0);
  cr_expect_eq(d[5], 1);
  cr_expect_eq(d[10], 2);
  cr_expect_eq(d[1], 3);
  cr_expect_eq(d[11], 5);
  cr_expect_eq(cf_tensor_get(&m->dl_tensor, 4), 4);
  cf_tensor_free(m);
}

Test(dltensor, invalid_host_tensors_are_null) {
  cr_expect_null(cf_tensor_host((cf_dtype)99, 1, (int64_t[]){4}));
  cr_expect_null(cf_tensor_host(CF_FLOAT, -1, NULL));
  cr_expect_null(cf_tensor_host(CF_FLOAT, 2, NULL));
  cr_expect_null(cf_tensor_host(CF_FLOAT, 1, (int64_t[]){-4}));
  cr_expect_null(cf_tensor_host_strided(CF_FLOAT, 1, (int64_t[]){4}, (int64_t[]){-1}));
  cr_expect_null(cf_tensor_host_strided(CF_FLOAT, 1, (int64_t[]){4}, NULL));
  cf_tensor_free(NULL);
}

Test(dltensor, empty_and_rank_zero_tensors) {
  DLManagedTensor *e = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){0, 3});
  DLManagedTensor *s = cf_tensor_host(CF_INT64, 0, NULL);
  cr_assert_not_null(e);
  cr_assert_not_null(s);
  cr_expect_eq(cf_tensor_numel(&e->dl_tensor), 0);
  cr_expect_eq(cf_tensor_numel(&s->dl_tensor), 1);
  cr_expect_eq(cf_tensor_fill_iota(&e->dl_tensor), CF_OK);
  cr_expect(isnan(cf_tensor_get(&e->dl_tensor, 0)));
  cr_expect_eq(cf_tensor_get(&s->dl_tensor, 0), 0);
  cr_expect_eq(cf_tensor_numel(NULL), 0);
  cf_tensor_free(e);
  cf_tensor_free(s);
}

/* The axis of t (shape and strides given) that breaks row-major contiguity, and the stride
 * it should have (-1 when none). */
static int noncontiguous(int rank, const int64_t *shape, const int64_t *strides, int64_t *expect) {
  DLTensor t = {.ndim = rank, .shape = (int64_t *)shape, .strides = (int64_t *)strides, .dtype = {kDLFloat, 32, 1}};
  *expect = -1;
  return ir_dl_noncontiguous_axis(&t, expect);
}

Test(dltensor, contiguity_ignores_size_one_axes_and_empty_tensors) {
  int64_t want;
  /* torch's empty [1, 32, 256, 0]: any strides (there is nothing to read) */
  cr_expect_eq(noncontiguous(4, (int64_t[]){1, 32, 256, 0}, (int64_t[]){131072, 4096, 16, 1}, &want), -1);
  cr_expect_eq(want, -1);
  cr_expect_eq(noncontiguous(2, (int64_t[]){0, 5}, (int64_t[]){7, 3}, &want), -1);
  /* size-1 axes keep any stride (an expanded one: 0; torch's: 1) */
  cr_expect_eq(noncontiguous(3, (int64_t[]){4, 1, 3}, (int64_t[]){3, 0, 1}, &want), -1);
  cr_expect_eq(noncontiguous(3, (int64_t[]){4, 1, 3}, (int64_t[]){3, 1, 1}, &want), -1);
  cr_expect_eq(noncontiguous(2, (int64_t[]){1, 1}, (int64_t[]){9, 9}, &want), -1);
  /* no strides: row-major */
  cr_expect_eq(noncontiguous(2, (int64_t[]){2, 3}, NULL, &want), -1);
  /* the innermost axis that breaks it, and the stride it should have */
  cr_expect_eq(noncontiguous(3, (int64_t[]){2, 1, 4}, (int64_t[]){5, 1, 1}, &want), 0);
  cr_expect_eq(want, 4);
  cr_expect_eq(noncontiguous(2, (int64_t[]){2, 4}, (int64_t[]){1, 2}, &want), 1);
  cr_expect_eq(want, 1);
  DLTensor t = {.ndim = 2, .shape = (int64_t[]){2, 4}, .strides = (int64_t[]){1, 2}};
  cr_expect_eq(ir_dl_noncontiguous_axis(&t, NULL), 1); /* expect may be NULL */
}

Test(dltensor, iota_converts_like_c) {
  DLManagedTensor *b = cf_tensor_host(CF_BOOL, 1, (int64_t[]){3});
  DLManagedTensor *i8 = cf_tensor_host(CF_INT8, 1, (int64_t[]){300});
  cf_tensor_fill_iota(&b->dl_tensor);
  cf_tensor_fill_iota(&i8->dl_tensor);
  cr_expect_eq(cf_tensor_get(&b->dl_tensor, 0), 0);
  cr_expect_eq(cf_tensor_get(&b->dl_tensor, 2), 1);
  cr_expect_eq(cf_tensor_get(&i8->dl_tensor, 127), 127);
  cr_expect_eq(cf_tensor_get(&i8->dl_tensor, 128), -128);
  cr_expect_eq(cf_tensor_get(&i8->dl_tensor, 299), 43);
  cf_tensor_free(b);
  cf_tensor_free(i8);
}

Test(dltensor, random_fill_is_deterministic_and_in_range) {
  static const cf_dtype dts[] = {CF_FLOAT, CF_DOUBLE, CF_HALF,   CF_BFLOAT16, CF_INT8,
                                 CF_INT32, CF_INT64,  CF_UINT32, CF_BOOL};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    DLManagedTensor *a = cf_tensor_host(dts[k], 1, (int64_t[]){1000});
    DLManagedTensor *b = cf_tensor_host(dts[k], 1, (int64_t[]){1000});
    DLManagedTensor *c = cf_tensor_host(dts[k], 1, (int64_t[]){1000});
    cr_assert_eq(cf_tensor_fill_random(&a->dl_tensor, 42), CF_OK);
    cf_tensor_fill_random(&b->dl_tensor, 42);
    cf_tensor_fill_random(&c->dl_tensor, 43);
    cr_expect(cf_tensor_equal(&a->dl_tensor, &b->dl_tensor), "%s", cf_dtype_name(dts[k]));
    cr_expect_not(cf_tensor_equal(&a->dl_tensor, &c->dl_tensor), "%s", cf_dtype_name(dts[k]));
    double lo = 0, hi = 0;
    for (int i = 0; i < 1000; i++) {
      double v = cf_tensor_get(&a->dl_tensor, i);
      lo = i ? fmin(lo, v) : v;
      hi = i ? fmax(hi, v) : v;
    }
    if (ir_dtype_is_float(dts[k])) {
      cr_expect(lo >= -1 && hi < 1 && lo < -0.9 && hi > 0.9, "%s: [%g, %g]", cf_dtype_name(dts[k]), lo, hi);
    } else if (dts[k] == CF_BOOL) {
      cr_expect(lo == 0 && hi == 1);
    } else if (dts[k] == CF_UINT32) {
      cr_expect(lo == 0 && hi == 7, "uint32: [%g, %g]", lo, hi);
    } else {
      cr_expect(lo == -8 && hi == 7, "%s: [%g, %g]", cf_dtype_name(dts[k]), lo, hi);
    }
    ot_free_all(3, (DLManagedTensor *[]){a, b, c});
  }
}

Test(dltensor, random_fill_has_fixed_values) {
  /* splitmix64 from seed 0 first gives 0xe220a8397b1dcdaf: an int in [-8, 8) is its top
   * nibble 14 - 8 = 6; a float is its top 24 bits * 2^-23 - 1. */
  DLManagedTensor *i = cf_tensor_host(CF_INT32, 1, (int64_t[]){1});
  DLManagedTensor *f = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){1});
  cf_tensor_fill_random(&i->dl_tensor, 0);
  cf_tensor_fill_random(&f->dl_tensor, 0);
  cr_expect_eq(cf_tensor_get(&i->dl_tensor, 0), 6);
  cr_expect_eq(cf_tensor_get(&f->dl_tensor, 0), 0xe220a8 * 0x1p-23 - 1);
  cf_tensor_free(i);
  cf_tensor_free(f);
}

Test(dltensor, random_fill_follows_logical_order_whatever_the_strides) {
  DLManagedTensor *a = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 4});
  DLManagedTensor *b = cf_tensor_host_strided(CF_FLOAT, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3});
  cf_tensor_fill_random(&a->dl_tensor, 5);
  cf_tensor_fill_random(&b->dl_tensor, 5);
  cr_expect(cf_tensor_equal(&a->dl_tensor, &b->dl_tensor));
  cf_tensor_free(a);
  cf_tensor_free(b);
}

Test(dltensor, fills_refuse_what_they_cannot_write) {
  DLManagedTensor *a = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){4});
  cr_expect_eq(cf_tensor_fill_random(NULL, 1), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_tensor_fill_iota(NULL), CF_ERR_INVALID_ARGUMENT);
  a->dl_tensor.device.device_type = kDLCUDA;
  cr_expect_eq(cf_tensor_fill_iota(&a->dl_tensor), CF_ERR_INVALID_ARGUMENT);
  a->dl_tensor.device.device_type = kDLCPU;
  a->dl_tensor.dtype.lanes = 4;
  cr_expect_eq(cf_tensor_fill_random(&a->dl_tensor, 1), CF_ERR_INVALID_ARGUMENT);
  a->dl_tensor.dtype.lanes = 1;
  cf_tensor_free(a);
}

Test(dltensor, equal_compares_values_not_layouts) {
  DLManagedTensor *a = cf_tensor_host(CF_DOUBLE, 2, (int64_t[]){2, 2});
  DLManagedTensor *b = cf_tensor_host_strided(CF_DOUBLE, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2});
  DLManagedTensor *c = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){2, 2});
  DLManagedTensor *d = cf_tensor_host(CF_DOUBLE, 2, (int64_t[]){4, 1});
  cf_tensor_fill_iota(&a->dl_tensor);
  cf_tensor_fill_iota(&b->dl_tensor);
  cr_expect(cf_tensor_equal(&a->dl_tensor, &b->dl_tensor));
  cr_expect_not(cf_tensor_equal(&a->dl_tensor, &c->dl_tensor)); /* dtype */
  cr_expect_not(cf_tensor_equal(&a->dl_tensor, &d->dl_tensor)); /* shape */
  ((double *)a->dl_tensor.data)[3] = NAN;
  ((double *)b->dl_tensor.data)[3] = NAN;
  cr_expect(cf_tensor_equal(&a->dl_tensor, &b->dl_tensor));
  ((double *)b->dl_tensor.data)[3] = 3;
  cr_expect_not(cf_tensor_equal(&a->dl_tensor, &b->dl_tensor));
  cr_expect_not(cf_tensor_equal(NULL, &b->dl_tensor));
  ot_free_all(4, (DLManagedTensor *[]){a, b, c, d});
}

Test(dltensor, allclose_reports_the_first_mismatch) {
  DLManagedTensor *a = ot_tensor(CF_FLOAT, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  DLManagedTensor *b = ot_tensor(CF_DOUBLE, 2, (int64_t[]){2, 2}, (double[]){1, 2.001, 3.5, 4});
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&a->dl_tensor, &b->dl_tensor, 0, 0.01, msg, sizeof msg) == false);
  cr_expect_str_eq(msg, "mismatch at [1, 0] (index 2): 3 vs 3.5 (|diff| 0.5 > tolerance 0.01)");
  cr_expect(cf_tensor_allclose(&a->dl_tensor, &b->dl_tensor, 0.2, 0, NULL, 0));
  DLManagedTensor *c = ot_tensor(CF_FLOAT, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4});
  cr_expect_not(cf_tensor_allclose(&a->dl_tensor, &c->dl_tensor, 1, 1, msg, sizeof msg));
  cr_expect_str_eq(msg, "shape mismatch: [2, 2] vs [4]");
  ot_free_all(3, (DLManagedTensor *[]){a, b, c});
}

Test(dltensor, allclose_treats_nan_and_infinity_exactly) {
  DLManagedTensor *a = ot_tensor(CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, INFINITY});
  DLManagedTensor *b = ot_tensor(CF_FLOAT, 1, (int64_t[]){2}, (double[]){NAN, INFINITY});
  DLManagedTensor *c = ot_tensor(CF_FLOAT, 1, (int64_t[]){2}, (double[]){0, INFINITY});
  cr_expect(cf_tensor_allclose(&a->dl_tensor, &b->dl_tensor, 0, 0, NULL, 0));
  cr_expect_not(cf_tensor_allclose(&a->dl_tensor, &c->dl_tensor, 1, 1, NULL, 0));
  ot_free_all(3, (DLManagedTensor *[]){a, b, c});
}

Test(dltensor, get_reads_logical_elements) {
  DLManagedTensor *a = ot_tensor(CF_BFLOAT16, 1, (int64_t[]){3}, (double[]){1.5, -2, 0.1});
  cr_expect_eq(cf_tensor_get(&a->dl_tensor, 0), 1.5);
  cr_expect_eq(cf_tensor_get(&a->dl_tensor, 1), -2);
  cr_expect_eq(cf_tensor_get(&a->dl_tensor, 2), 0x1.9ap-4);
  cr_expect(isnan(cf_tensor_get(&a->dl_tensor, 3)));
  cr_expect(isnan(cf_tensor_get(&a->dl_tensor, -1)));
  cr_expect(isnan(cf_tensor_get(NULL, 0)));
  cf_tensor_free(a);
}

Test(dltensor, half_conversion_rounds_to_nearest_even) {
  cr_expect_eq(ir_half_from_double(1.0), 0x3c00);
  cr_expect_eq(ir_half_from_double(-2.0), 0xc000);
  cr_expect_eq(ir_half_from_double(0.1), 0x2e66);
  cr_expect_eq(ir_half_from_double(65504), 0x7bff);
  cr_expect_eq(ir_half_from_double(65519.99), 0x7bff);
  cr_expect_eq(ir_half_from_double(65520), 0x7c00);
  cr_expect_eq(ir_half_from_double(-1e300), 0xfc00);
  cr_expect_eq(ir_half_from_double(-0.0), 0x8000);
  cr_expect_eq(ir_half_from_double(1 + 0x1p-11), 0x3c00); /* tie: even */
  cr_expect_eq(ir_half_from_double(1 + 0x3p-11), 0x3c02); /* tie: even */
  cr_expect_eq(ir_half_from_double(1 + 0x1p-11 + 0x1p-40), 0x3c01);
  cr_expect_eq(ir_half_from_double(0x1p-14), 0x0400); /* smallest normal */
  cr_expect_eq(ir_half_from_double(0x1p-24), 0x0001); /* smallest subnormal */
  cr_expect_eq(ir_half_from_double(0x1p-25), 0x0000); /* tie: even */
  cr_expect_eq(ir_half_from_double(0x3p-25), 0x0002); /* tie: even */
  cr_expect_eq(ir_half_from_double(0x3ffp-24 + 0x1p-25), 0x0400); /* rounds up into the normals */
  cr_expect_eq(ir_half_from_double(INFINITY), 0x7c00);
  cr_expect_eq(ir_half_from_double(NAN) & 0x7c00, 0x7c00);
  cr_expect_neq(ir_half_from_double(NAN) & 0x3ff, 0);
}

Test(dltensor, half_decoding) {
  cr_expect_eq(ir_half_to_double(0x3c00), 1.0);
  cr_expect_eq(ir_half_to_double(0x0001), 0x1p-24);
  cr_expect_eq(ir_half_to_double(0x7bff), 65504);
  cr_expect_eq(ir_half_to_double(0xfc00), -INFINITY);
  cr_expect(isnan(ir_half_to_double(0x7e00)));
  cr_expect(signbit(ir_half_to_double(0x8000)));
}

Test(dltensor, bfloat16_conversion_rounds_to_nearest_even) {
  cr_expect_eq(ir_bf16_from_double(1.0), 0x3f80);
  cr_expect_eq(ir_bf16_from_double(1 + 0x1p-8), 0x3f80); /* tie: even */
  cr_expect_eq(ir_bf16_from_double(1 + 0x3p-8), 0x3f82); /* tie: even */
  cr_expect_eq(ir_bf16_from_double(0.1), 0x3dcd);
  cr_expect_eq(ir_bf16_from_double(0x1p-133), 0x0001);
  cr_expect_eq(ir_bf16_from_double(0x1.fep127), 0x7f7f);
  cr_expect_eq(ir_bf16_from_double(0x1.ffp127), 0x7f80); /* tie past the largest: infinity */
  cr_expect_eq(ir_bf16_to_double(0x3dcd), 0x1.9ap-4);
  cr_expect_eq(ir_bf16_to_double(0xc2f7), -123.5);
}

Test(dltensor, element_store_saturates_and_wraps_like_cuda) {
  unsigned char buf[8];
  ir_elem_store(buf, CF_INT32, (IrElem){.d = 1e10}, CF_DOUBLE);
  cr_expect_eq(ir_elem_load(buf, CF_INT32).i, INT32_MAX);
  ir_elem_store(buf, CF_INT64, (IrElem){.d = -1e30}, CF_FLOAT);
  cr_expect_eq(ir_elem_load(buf, CF_INT64).i, INT64_MIN);
  ir_elem_store(buf, CF_INT64, (IrElem){.d = 0x1p63}, CF_DOUBLE);
  cr_expect_eq(ir_elem_load(buf, CF_INT64).i, INT64_MAX);
  ir_elem_store(buf, CF_INT8, (IrElem){.d = NAN}, CF_DOUBLE);
  cr_expect_eq(ir_elem_load(buf, CF_INT8).i, 0);
  ir_elem_store(buf, CF_INT8, (IrElem){.i = 200}, CF_INT32);
  cr_expect_eq(ir_elem_load(buf, CF_INT8).i, -56);
  ir_elem_store(buf, CF_UINT32, (IrElem){.i = -1}, CF_INT64);
  cr_expect_eq(ir_elem_load(buf, CF_UINT32).i, 4294967295LL);
  ir_elem_store(buf, CF_BOOL, (IrElem){.i = 256}, CF_INT64);
  cr_expect_eq(ir_elem_load(buf, CF_BOOL).i, 1);
  cr_expect_eq(ir_elem_convert((IrElem){.i = 16777217}, CF_INT64, CF_FLOAT).d, 16777216.0);
}

/* Element types map both ways; Welford states have an opaque DLPack type of their size
 * (the evaluator's buffers) that never maps back, so no input or output can be one. */
Test(dltensor, dlpack_types_map_both_ways) {
  for (int t = 0; t < CF_DTYPE_COUNT; t++) {
    cf_dtype back;
    if (ir_dtype_is_welford((cf_dtype)t)) {
      cr_expect_not(ir_dtype_from_dl(ir_dtype_to_dl((cf_dtype)t), &back));
      cr_expect_eq(ir_dtype_to_dl((cf_dtype)t).bits, 8 * cf_dtype_size((cf_dtype)t));
      continue;
    }
    cr_expect(ir_dtype_from_dl(ir_dtype_to_dl((cf_dtype)t), &back));
    cr_expect_eq(back, (cf_dtype)t);
    /* a packed type's bits are its element's in memory (float4_e2m1fn: 4), its size a register's */
    cr_expect_eq(ir_dtype_to_dl((cf_dtype)t).bits, ir_dtype_is_packed((cf_dtype)t) ? 4 : 8 * cf_dtype_size((cf_dtype)t));
  }
  cr_expect_eq(ir_dtype_to_dl(CF_BOOL).code, 6); /* kDLBool of DLPack 0.8 */
  cr_expect_eq(ir_dtype_to_dl(CF_BFLOAT16).code, kDLBfloat);
  cf_dtype t;
  cr_expect_not(ir_dtype_from_dl((DLDataType){kDLFloat, 32, 4}, &t));
  cr_expect_not(ir_dtype_from_dl((DLDataType){kDLUInt, 8, 1}, &t));
  cr_expect(ir_dtype_from_dl((DLDataType){kDLComplex, 64, 1}, &t) && t == CF_COMPLEX_FLOAT);
  cr_expect_not(ir_dtype_from_dl((DLDataType){kDLComplex, 32, 1}, &t)); /* complex32: none here */
  char buf[64];
  ir_dl_type_str((DLDataType){kDLInt, 16, 1}, buf, sizeof buf);
  cr_expect_str_eq(buf, "DLPack code 0 bits 16 lanes 1");
  ir_dl_type_str((DLDataType){kDLInt, 64, 1}, buf, sizeof buf);
  cr_expect_str_eq(buf, "int64_t");
}

Test(dltensor, enumeration_names) {
  cr_expect_str_eq(cf_dtype_name(CF_FLOAT), "float");
  cr_expect_str_eq(cf_dtype_name(CF_HALF), "__half");
  cr_expect_str_eq(cf_dtype_name(CF_BFLOAT16), "__bfloat");
  cr_expect_str_eq(cf_dtype_name(CF_INT32), "int");
  cr_expect_str_eq(cf_dtype_name((cf_dtype)77), "invalid");
  cr_expect_eq(cf_dtype_size(CF_DOUBLE), 8);
  cr_expect_eq(cf_dtype_size(CF_BOOL), 1);
  cr_expect_eq(cf_dtype_size((cf_dtype)-1), 0);
  cr_expect_str_eq(cf_parallel_type_name(CF_PT_SERIAL), "S");
  cr_expect_str_eq(cf_parallel_type_name(CF_PT_BIDY), "blockIdx.y");
  cr_expect_str_eq(cf_parallel_type_name(CF_PT_UNROLL), "UR");
  cr_expect_str_eq(cf_parallel_type_name(CF_PT_COUNT), "invalid");
  cr_expect_str_eq(cf_memory_type_name(CF_MEM_LOCAL), "Local");
  cr_expect_str_eq(cf_memory_type_name(CF_MEM_SHARED), "Shared");
  cr_expect_str_eq(cf_memory_type_name(CF_MEM_GLOBAL), "Global");
  cr_expect_str_eq(cf_memory_type_name(CF_MEM_TENSOR), "Tensor");
  cr_expect_str_eq(cf_memory_type_name(CF_MEM_COUNT), "invalid");
  cr_expect_str_eq(cf_status_name(CF_OK), "OK");
  cr_expect_str_eq(cf_status_name(CF_ERR_INVALID_SCHEDULE), "ERR_INVALID_SCHEDULE");
  cr_expect_str_eq(cf_status_name(CF_ERR_INTERNAL), "ERR_INTERNAL");
  cr_expect_str_eq(cf_status_name((cf_status)42), "invalid");
}
