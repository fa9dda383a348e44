/* tests/executor/test_tensor_arg.c: the host side of CUDA tensors, no GPU needed.
 *
 * The by-value kernel argument of a tensor byte for byte (64- and 32-bit indices, padding,
 * byte offsets, default strides, errors), cf_tensor_copy's argument checks and host-to-host
 * copies, and what device calls say when there is no device. */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/exec_cuda.h"

#define ERRLEN 512

static int64_t i64_at(const unsigned char *buf, size_t off) {
  int64_t v;
  memcpy(&v, buf + off, 8);
  return v;
}

static int32_t i32_at(const unsigned char *buf, size_t off) {
  int32_t v;
  memcpy(&v, buf + off, 4);
  return v;
}

/* A host DLTensor over caller storage. */
static DLTensor host_view(void *data, DLDataType dt, int ndim, int64_t *shape, int64_t *strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype = dt;
  t.shape = shape;
  t.strides = strides;
  return t;
}

static const DLDataType k_f32 = {kDLFloat, 32, 1};
static const DLDataType k_i32 = {kDLInt, 32, 1};

/* float4_e2m1fn keeps two elements per byte: a host copy of 7 of them moves 4 bytes (the
 * last byte's high nibble is padding) and leaves the bytes after them alone. */
Test(tensor_arg, packed_fp4_copies_move_their_bytes_only) {
  unsigned char src[6] = {0x21, 0x43, 0x65, 0x07, 0xEE, 0xEE}, dst[6] = {0, 0, 0, 0, 0x77, 0x77};
  int64_t shape[1] = {7};
  DLTensor hs = {.data = src, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {17, 4, 1}, .shape = shape}, hd = hs;
  hd.data = dst;
  char err[256] = "";
  cr_assert_eq(exec_tensor_copy(&hd, &hs, err, sizeof err), CF_OK, "%s", err);
  cr_expect_arr_eq(dst, ((unsigned char[]){0x21, 0x43, 0x65, 0x07, 0x77, 0x77}), 6);
}

Test(tensor_arg, sizes_are_padded_to_eight_bytes) {
  cr_assert_eq(exec_tensor_arg_size(0, 0, 8), 8);
  cr_assert_eq(exec_tensor_arg_size(2, 2, 8), 40);
  cr_assert_eq(exec_tensor_arg_size(2, 2, 4), 24);
  cr_assert_eq(exec_tensor_arg_size(1, 1, 4), 16);
  cr_assert_eq(exec_tensor_arg_size(3, 2, 4), 32); /* 28 bytes of fields, then padding */
}

Test(tensor_arg, packs_pointer_sizes_and_strides_with_64_bit_indices) {
  float storage[64];
  int64_t shape[2] = {3, 5}, strides[2] = {1, 3};
  DLTensor t = host_view(storage, k_f32, 2, shape, strides);
  t.byte_offset = 16;
  unsigned char buf[64];
  memset(buf, 0xAB, sizeof buf);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg(&t, 2, 8, buf, sizeof buf, err, sizeof err), CF_OK, "%s", err);
  uint64_t p;
  memcpy(&p, buf, 8);
  cr_assert_eq(p, (uint64_t)(uintptr_t)storage + 16, "data + byte_offset");
  cr_assert_eq(i64_at(buf, 8), 3);
  cr_assert_eq(i64_at(buf, 16), 5);
  cr_assert_eq(i64_at(buf, 24), 1);
  cr_assert_eq(i64_at(buf, 32), 3);
  cr_assert_eq(buf[40], 0xAB, "nothing written past the struct");
}

Test(tensor_arg, packs_32_bit_indices_and_zeroes_the_padding) {
  int64_t sizes[3] = {4, 6, 8}, strides[2] = {48, 1};
  unsigned char buf[32];
  memset(buf, 0xAB, sizeof buf);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg_parts(0x1000, 3, sizes, 2, strides, 4, buf, sizeof buf, err,
                                          sizeof err), CF_OK, "%s", err);
  cr_assert_eq(i64_at(buf, 0), 0x1000);
  cr_assert_eq(i32_at(buf, 8), 4);
  cr_assert_eq(i32_at(buf, 12), 6);
  cr_assert_eq(i32_at(buf, 16), 8);
  cr_assert_eq(i32_at(buf, 20), 48);
  cr_assert_eq(i32_at(buf, 24), 1);
  cr_assert_eq(i32_at(buf, 28), 0, "padding is zeroed");
}

Test(tensor_arg, missing_strides_are_row_major) {
  double storage[24];
  int64_t shape[3] = {2, 3, 4};
  DLTensor t = host_view(storage, (DLDataType){kDLFloat, 64, 1}, 3, shape, NULL);
  unsigned char buf[56];
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg(&t, 3, 8, buf, sizeof buf, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(i64_at(buf, 32), 12);
  cr_assert_eq(i64_at(buf, 40), 4);
  cr_assert_eq(i64_at(buf, 48), 1);
}

Test(tensor_arg, scalar_tensor_is_only_a_pointer) {
  float x = 0;
  DLTensor t = host_view(&x, k_f32, 0, NULL, NULL);
  unsigned char buf[8];
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg(&t, 0, 4, buf, sizeof buf, err, sizeof err), CF_OK, "%s", err);
  cr_assert_eq(i64_at(buf, 0), (int64_t)(uintptr_t)&x);
}

Test(tensor_arg, sizes_beyond_int32_need_64_bit_indices) {
  int64_t sizes[2] = {3000000000LL, 1}, strides[2] = {1, 3000000000LL};
  unsigned char buf[40];
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg_parts(0, 2, sizes, 2, strides, 4, buf, sizeof buf, err,
                                          sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "tensor too large for 32-bit indexing: size 3000000000 of axis 0");
  sizes[0] = 1;
  cr_assert_eq(exec_pack_tensor_arg_parts(0, 2, sizes, 2, strides, 4, buf, sizeof buf, err,
                                          sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err,
                   "tensor too large for 32-bit indexing: stride 3000000000 of allocation axis 1");
  cr_assert_eq(exec_pack_tensor_arg_parts(0, 2, sizes, 2, strides, 8, buf, sizeof buf, err,
                                          sizeof err), CF_OK, "%s", err);
}

Test(tensor_arg, rank_mismatch_and_small_buffer_are_errors) {
  float storage[6];
  int64_t shape[2] = {2, 3};
  DLTensor t = host_view(storage, k_f32, 2, shape, NULL);
  unsigned char buf[40];
  char err[ERRLEN] = "";
  cr_assert_eq(exec_pack_tensor_arg(&t, 3, 8, buf, sizeof buf, err, sizeof err),
               CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "tensor argument: the kernel expects rank 3, the tensor has rank 2");
  cr_assert_eq(exec_pack_tensor_arg(&t, 2, 8, buf, 32, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "tensor argument: needs 40 bytes, buffer has 32");
  cr_assert_eq(exec_pack_tensor_arg(&t, 2, 2, buf, sizeof buf, err, sizeof err),
               CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "tensor argument: index width must be 4 or 8 bytes, not 2");
}

/* ---- cf_tensor_copy ------------------------------------------------------------------------ */

Test(tensor_copy, host_to_host_copies_bytes) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0};
  int64_t shape[2] = {2, 3};
  DLTensor src = host_view(a, k_f32, 2, shape, NULL);
  DLTensor dst = host_view(b, k_f32, 2, shape, NULL);
  cr_assert_eq(cf_tensor_copy(&dst, &src), CF_OK);
  cr_assert_arr_eq(a, b, sizeof a);
}

Test(tensor_copy, dtype_mismatch_is_named) {
  float a[6] = {0};
  int32_t b[6] = {0};
  int64_t shape[2] = {2, 3};
  DLTensor src = host_view(a, k_f32, 2, shape, NULL);
  DLTensor dst = host_view(b, k_i32, 2, shape, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "cf_tensor_copy: dtype mismatch: dst is int, src is float");
  cr_assert_eq(cf_tensor_copy(&dst, &src), CF_ERR_INVALID_ARGUMENT);
}

Test(tensor_copy, size_mismatch_is_named) {
  float a[6] = {0}, b[6] = {0};
  int64_t s1[2] = {2, 3}, s2[2] = {3, 2};
  DLTensor src = host_view(a, k_f32, 2, s1, NULL);
  DLTensor dst = host_view(b, k_f32, 2, s2, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "cf_tensor_copy: size mismatch: dst is [3, 2], src is [2, 3]");
}

Test(tensor_copy, strided_tensors_are_refused) {
  float a[6] = {0}, b[6] = {0};
  int64_t shape[2] = {2, 3}, transposed[2] = {1, 2}, padded_unit[2] = {7, 1};
  DLTensor src = host_view(a, k_f32, 2, shape, transposed);
  DLTensor dst = host_view(b, k_f32, 2, shape, NULL);
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_ERR_UNSUPPORTED);
  cr_assert_str_eq(err, "cf_tensor_copy: src is not contiguous (sizes [2, 3], strides [1, 2])");
  /* A size-1 axis may have any stride. */
  int64_t one_row[2] = {1, 3};
  src = host_view(a, k_f32, 2, one_row, padded_unit);
  dst = host_view(b, k_f32, 2, one_row, NULL);
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_OK, "%s", err);
}

Test(tensor_copy, other_devices_are_refused) {
  float a[6] = {0}, b[6] = {0};
  int64_t shape[2] = {2, 3};
  DLTensor src = host_view(a, k_f32, 2, shape, NULL);
  DLTensor dst = host_view(b, k_f32, 2, shape, NULL);
  dst.device.device_type = kDLOpenCL;
  char err[ERRLEN] = "";
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_ERR_UNSUPPORTED);
  cr_assert_str_eq(err, "cf_tensor_copy: dst is on DLPack device type 4; only CPU and CUDA "
                        "tensors are supported");
  cr_assert_eq(exec_tensor_copy(NULL, &src, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "cf_tensor_copy: dst is NULL");
}

/* ---- without a device ------------------------------------------------------------------------ */

Test(no_device, device_calls_give_the_reason) {
  const char *reason = NULL;
  if (cf_cuda_available(&reason)) cr_skip_test("a CUDA device is present");
  cr_assert_not_null(reason);
  cr_assert_gt(strlen(reason), 0);
  int64_t shape[1] = {4};
  char err[ERRLEN] = "";
  DLManagedTensor *t = NULL;
  cr_assert_eq(exec_tensor_device(CF_FLOAT, 1, shape, &t, err, sizeof err), CF_ERR_NO_DEVICE);
  cr_assert_null(t);
  cr_assert_str_eq(err, reason);
  cr_assert_null(cf_tensor_device(CF_FLOAT, 1, shape));
  cr_assert_null(exec_device_arch());
  cr_assert_null(exec_device_info());
  float a[4] = {0};
  DLTensor src = host_view(a, k_f32, 1, shape, NULL);
  DLTensor dst = src;
  dst.device.device_type = kDLCUDA;
  cr_assert_eq(exec_tensor_copy(&dst, &src, err, sizeof err), CF_ERR_NO_DEVICE);
  cr_assert_str_eq(err, reason);
  cr_assert_eq(exec_synchronize(err, sizeof err), CF_ERR_NO_DEVICE);
}

Test(no_device, invalid_tensor_requests_fail_before_the_device) {
  int64_t neg[1] = {-1};
  char err[ERRLEN] = "";
  DLManagedTensor *t = NULL;
  cr_assert_eq(exec_tensor_device(CF_DTYPE_COUNT, 1, neg, &t, err, sizeof err),
               CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "invalid dtype 16");
  cr_assert_eq(exec_tensor_device(CF_FLOAT, 1, neg, &t, err, sizeof err), CF_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(err, "negative size -1 of axis 0");
  cr_assert_null(cf_tensor_device(CF_FLOAT, -1, NULL));
}
