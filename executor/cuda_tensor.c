/* executor/cuda_tensor.c: device tensors, copies, and tensors as kernel arguments.
 *
 * The DLPack side of the CUDA backend, between cf_executor_run (which receives and returns
 * DLTensors) and cuda_driver.c (which only knows device addresses). Device tensors are
 * DLManagedTensors whose shape and strides live in the same malloc block as the header
 * and whose deleter frees the device memory. Copies take contiguous tensors only: a
 * strided copy is a kernel, and cfuser compiles those. Key decision: a tensor is passed to
 * a kernel by value as the struct of codegen/runtime/tensor.cuh (pointer, logical sizes,
 * allocation strides), packed here byte for byte into the layout the CUDA compiler gives
 * that struct, with 64- or 32-bit indices as the kernel was generated for. */
#include "executor/exec_cuda.h"
#include "ir/checked.h"
#include "ir/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* "[2, 3]" into buf, truncated with "..." when it does not fit. */
static const char *dims_str(int n, const int64_t *d, char *buf, size_t len) {
  size_t k = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < n && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (k < len) snprintf(buf + k, len - k, "]");
  else if (len > 4) memcpy(buf + len - 4, "...", 4);
  return buf;
}

/* The bytes of n elements of d: bits rounded up over the whole tensor, not per element
 * (float4_e2m1fn keeps two elements per byte). */
static size_t dl_bytes(DLDataType d, int64_t n) {
  return ((size_t)n * d.bits * d.lanes + 7) / 8;
}

/* Element count, or -1 when a size is negative or the count overflows. */
static int64_t dl_numel(const DLTensor *t) {
  int64_t n;
  return ck_numel(t->ndim, t->shape, &n) ? n : -1;
}

/* Row-major compact (sizes-1 axes may have any stride); NULL strides are compact. */
static bool dl_is_contiguous(const DLTensor *t) {
  if (t->strides == NULL) return true;
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] == 0) return true;
    if (t->shape[i] != 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

/* ---- device tensors ----------------------------------------------------------------------- */

typedef struct DeviceTensor {
  DLManagedTensor managed;
  bool async;     /* allocated in stream order: freed in the order of `stream` */
  void *stream;
  int64_t dims[]; /* shape, then strides */
} DeviceTensor;

static void device_tensor_deleter(DLManagedTensor *self) {
  if (self == NULL) return;
  DeviceTensor *t = (DeviceTensor *)(void *)self;
  ExecDevPtr p = (ExecDevPtr)(uintptr_t)self->dl_tensor.data;
  /* A deleter cannot report; a failed free leaves the device memory to the context. */
  if (t->async) exec_mem_free_async(self->dl_tensor.device.device_id, p, t->stream, NULL, 0);
  else exec_mem_free(self->dl_tensor.device.device_id, p, NULL, 0);
  free(self);
}

static cf_status check_new_tensor(cf_dtype dtype, int rank, const int64_t *sizes, size_t *bytes,
                                  char *err, size_t errlen) {
  if (!ir_dtype_valid(dtype))
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "invalid dtype %d", (int)dtype);
  if (rank > EXEC_MAX_RANK)
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen, "rank %d: a tensor has at most %d dimensions",
                     rank, EXEC_MAX_RANK);
  if (rank < 0 || (rank > 0 && sizes == NULL))
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "invalid rank %d%s", rank,
                     rank > 0 && sizes == NULL ? " with NULL sizes" : "");
  for (int i = 0; i < rank; i++)
    if (sizes[i] < 0)
      return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "negative size %lld of axis %d",
                       (long long)sizes[i], i);
  int64_t numel;
  if (!ck_numel(rank, sizes, &numel) || !ck_bytes(numel, cf_dtype_size(dtype), 1, bytes))
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "the byte count of the sizes overflows int64");
  *bytes = cf_dtype_storage_bytes(dtype, (size_t)numel); /* packed: two elements per byte */
  return CF_OK;
}

/* The DLManagedTensor around device memory p (NULL when out of host memory). */
static DeviceTensor *wrap_device(ExecDevPtr p, int device, bool async, void *stream, cf_dtype dtype,
                                 int rank, const int64_t *sizes) {
  DeviceTensor *t = calloc(1, sizeof *t + sizeof(int64_t) * 2 * (size_t)rank);
  if (t == NULL) return NULL;
  t->async = async;
  t->stream = stream;
  DLTensor *dl = &t->managed.dl_tensor;
  dl->data = (void *)(uintptr_t)p;
  dl->device.device_type = kDLCUDA;
  dl->device.device_id = device;
  dl->ndim = rank;
  dl->dtype = ir_dtype_to_dl(dtype);
  dl->shape = rank ? t->dims : NULL;
  dl->strides = rank ? t->dims + rank : NULL;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t->dims[i] = sizes[i];
    t->dims[rank + i] = stride;
    stride *= sizes[i] > 0 ? sizes[i] : 1;
  }
  t->managed.deleter = device_tensor_deleter;
  return t;
}

/* The tensor of a request check_new_tensor accepted (bytes: its size) on cuda:device,
 * allocated in the order of stream when async. */
static cf_status new_device_tensor(int device, bool async, void *stream, cf_dtype dtype, int rank,
                                   const int64_t *sizes, size_t bytes, DLManagedTensor **out, char *err,
                                   size_t errlen) {
  ExecDevPtr p = 0;
  cf_status st = bytes == 0 ? CF_OK
                 : async    ? exec_mem_alloc_async(device, bytes, stream, &p, err, errlen)
                            : exec_mem_alloc(device, bytes, &p, err, errlen);
  if (st != CF_OK) return st;
  DeviceTensor *t = wrap_device(p, device, async, stream, dtype, rank, sizes);
  if (t == NULL) {
    if (async) exec_mem_free_async(device, p, stream, NULL, 0);
    else exec_mem_free(device, p, NULL, 0);
    return exec_fail(CF_ERR_OUT_OF_MEMORY, err, errlen, "out of host memory");
  }
  *out = &t->managed;
  return CF_OK;
}

cf_status exec_tensor_device(cf_dtype dtype, int rank, const int64_t *sizes,
                             DLManagedTensor **out, char *err, size_t errlen) {
  if (out) *out = NULL;
  size_t bytes = 0; /* a bad request is refused before the device is looked for */
  cf_status st = check_new_tensor(dtype, rank, sizes, &bytes, err, errlen);
  if (st == CF_OK) st = exec_cuda_init(err, errlen);
  if (st == CF_OK && out == NULL) st = exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "out is NULL");
  return st != CF_OK ? st
                     : new_device_tensor(exec_device_info()->ordinal, false, NULL, dtype, rank, sizes, bytes, out, err,
                                         errlen);
}

/* exec_tensor_device_on and exec_tensor_device_async. */
static cf_status device_tensor(int device, bool async, void *stream, cf_dtype dtype, int rank, const int64_t *sizes,
                               DLManagedTensor **out, char *err, size_t errlen) {
  if (out == NULL) return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "out is NULL");
  *out = NULL;
  size_t bytes = 0;
  cf_status st = check_new_tensor(dtype, rank, sizes, &bytes, err, errlen);
  return st != CF_OK ? st : new_device_tensor(device, async, stream, dtype, rank, sizes, bytes, out, err, errlen);
}

cf_status exec_tensor_device_on(int device, cf_dtype dtype, int rank, const int64_t *sizes,
                                DLManagedTensor **out, char *err, size_t errlen) {
  return device_tensor(device, false, NULL, dtype, rank, sizes, out, err, errlen);
}

cf_status exec_tensor_device_async(int device, void *stream, cf_dtype dtype, int rank,
                                   const int64_t *sizes, DLManagedTensor **out, char *err,
                                   size_t errlen) {
  return device_tensor(device, true, stream, dtype, rank, sizes, out, err, errlen);
}

DLManagedTensor *cf_tensor_device(cf_dtype dtype, int rank, const int64_t *sizes) {
  DLManagedTensor *t = NULL;
  return exec_tensor_device(dtype, rank, sizes, &t, NULL, 0) == CF_OK ? t : NULL;
}

/* ---- copies -------------------------------------------------------------------------------- */

typedef enum MemSide { SIDE_HOST, SIDE_DEVICE, SIDE_OTHER } MemSide;

static MemSide side_of(DLDevice d) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost) return SIDE_HOST;
  if (d.device_type == kDLCUDA || d.device_type == kDLCUDAManaged) return SIDE_DEVICE;
  return SIDE_OTHER;
}

/* Everything about one operand except how it compares with the other. */
static cf_status check_operand(const DLTensor *t, const char *which, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (t == NULL) return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "cf_tensor_copy: %s is NULL", which);
  if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL) || dl_numel(t) < 0)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "cf_tensor_copy: %s has invalid sizes", which);
  if (side_of(t->device) == SIDE_OTHER)
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen,
                     "cf_tensor_copy: %s is on DLPack device type %d; only CPU and CUDA tensors "
                     "are supported", which, (int)t->device.device_type);
  if (!dl_is_contiguous(t))
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen,
                     "cf_tensor_copy: %s is not contiguous (sizes %s, strides %s)", which,
                     dims_str(t->ndim, t->shape, b1, sizeof b1),
                     dims_str(t->ndim, t->strides, b2, sizeof b2));
  if (t->data == NULL && dl_numel(t) > 0)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "cf_tensor_copy: %s has no data", which);
  return CF_OK;
}

/* A device-side tensor's device exists here (its context is then current). */
static cf_status check_device_id(const DLTensor *t, const char *which, char *err, size_t errlen) {
  if (side_of(t->device) != SIDE_DEVICE) return CF_OK;
  cf_status st = exec_cuda_init(err, errlen); /* no CUDA at all: its reason alone */
  if (st != CF_OK) return st;
  const ExecDeviceInfo *info = NULL;
  char why[256] = "";
  st = exec_device_open((int)t->device.device_id, &info, why, sizeof why);
  return st != CF_OK ? exec_fail(st, err, errlen, "cf_tensor_copy: %s is on cuda:%d: %s", which,
                                 (int)t->device.device_id, why)
                     : CF_OK;
}

static cf_status check_copy(const DLTensor *dst, const DLTensor *src, char *err, size_t errlen) {
  char b1[256], b2[256];
  cf_status st;
  if ((st = check_operand(dst, "dst", err, errlen)) != CF_OK) return st;
  if ((st = check_operand(src, "src", err, errlen)) != CF_OK) return st;
  if (dst->dtype.code != src->dtype.code || dst->dtype.bits != src->dtype.bits ||
      dst->dtype.lanes != src->dtype.lanes) {
    ir_dl_type_str(dst->dtype, b1, sizeof b1);
    ir_dl_type_str(src->dtype, b2, sizeof b2);
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "cf_tensor_copy: dtype mismatch: dst is %s, src is %s", b1, b2);
  }
  bool same = dst->ndim == src->ndim;
  for (int i = 0; same && i < dst->ndim; i++) same = dst->shape[i] == src->shape[i];
  if (!same)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "cf_tensor_copy: size mismatch: dst is %s, src is %s",
                     dims_str(dst->ndim, dst->shape, b1, sizeof b1),
                     dims_str(src->ndim, src->shape, b2, sizeof b2));
  if ((st = check_device_id(dst, "dst", err, errlen)) != CF_OK) return st;
  if ((st = check_device_id(src, "src", err, errlen)) != CF_OK) return st;
  if (side_of(dst->device) == SIDE_DEVICE && side_of(src->device) == SIDE_DEVICE &&
      dst->device.device_id != src->device.device_id)
    return exec_fail(CF_ERR_UNSUPPORTED, err, errlen,
                     "cf_tensor_copy: dst is on cuda:%d and src on cuda:%d; a copy between two devices goes "
                     "through a host tensor", (int)dst->device.device_id, (int)src->device.device_id);
  return CF_OK;
}

cf_status exec_tensor_copy(DLTensor *dst, const DLTensor *src, char *err, size_t errlen) {
  cf_status st = check_copy(dst, src, err, errlen);
  if (st != CF_OK) return st;
  size_t bytes = dl_bytes(src->dtype, dl_numel(src));
  if (bytes == 0) return CF_OK;
  char *d = (char *)dst->data + dst->byte_offset;
  const char *s = (const char *)src->data + src->byte_offset;
  MemSide ds = side_of(dst->device), ss = side_of(src->device);
  if (ds == SIDE_HOST && ss == SIDE_HOST) {
    memmove(d, s, bytes);
    return CF_OK;
  }
  if (ds == SIDE_DEVICE && ss == SIDE_HOST)
    return exec_memcpy_htod((int)dst->device.device_id, (ExecDevPtr)(uintptr_t)d, s, bytes, err, errlen);
  if (ds == SIDE_HOST)
    return exec_memcpy_dtoh((int)src->device.device_id, d, (ExecDevPtr)(uintptr_t)s, bytes, err, errlen);
  return exec_memcpy_dtod((int)dst->device.device_id, (ExecDevPtr)(uintptr_t)d, (ExecDevPtr)(uintptr_t)s, bytes,
                          err, errlen);
}

cf_status cf_tensor_copy(DLTensor *dst, const DLTensor *src) {
  return exec_tensor_copy(dst, src, NULL, 0);
}

/* ---- kernel arguments ------------------------------------------------------------------------ */

size_t exec_tensor_arg_size(int rank, int alloc_rank, int index_bytes) {
  size_t n = 8 + (size_t)(rank + alloc_rank) * (size_t)index_bytes;
  return (n + 7) & ~(size_t)7;
}

/* Writes v at p as an index of `bytes` bytes; false when it does not fit in 32 bits. */
static bool put_index(unsigned char *p, int64_t v, int bytes) {
  if (bytes == 8) {
    memcpy(p, &v, 8);
    return true;
  }
  if (v < INT32_MIN || v > INT32_MAX) return false;
  int32_t w = (int32_t)v;
  memcpy(p, &w, 4);
  return true;
}

static cf_status check_arg_shape(int rank, const int64_t *sizes, int alloc_rank,
                                 const int64_t *alloc_strides, int index_bytes, char *err,
                                 size_t errlen) {
  if (index_bytes != 4 && index_bytes != 8)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "tensor argument: index width must be 4 or 8 bytes, not %d", index_bytes);
  if (rank < 0 || alloc_rank < 0 || rank > EXEC_MAX_RANK || alloc_rank > EXEC_MAX_RANK)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "tensor argument: invalid rank %d (allocation rank %d)", rank, alloc_rank);
  if ((rank > 0 && sizes == NULL) || (alloc_rank > 0 && alloc_strides == NULL))
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "tensor argument: %s is NULL",
                     rank > 0 && sizes == NULL ? "sizes" : "strides");
  return CF_OK;
}

cf_status exec_pack_tensor_arg_parts(uint64_t data, int rank, const int64_t *sizes,
                                     int alloc_rank, const int64_t *alloc_strides,
                                     int index_bytes, void *buf, size_t cap, char *err,
                                     size_t errlen) {
  cf_status st = check_arg_shape(rank, sizes, alloc_rank, alloc_strides, index_bytes, err, errlen);
  if (st != CF_OK) return st;
  size_t need = exec_tensor_arg_size(rank, alloc_rank, index_bytes);
  if (buf == NULL || cap < need)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "tensor argument: needs %zu bytes, buffer has %zu", need, buf ? cap : 0);
  unsigned char *p = buf;
  memset(p, 0, need);
  memcpy(p, &data, 8);
  for (int i = 0; i < rank; i++)
    if (!put_index(p + 8 + (size_t)i * (size_t)index_bytes, sizes[i], index_bytes))
      return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                       "tensor too large for 32-bit indexing: size %lld of axis %d",
                       (long long)sizes[i], i);
  unsigned char *q = p + 8 + (size_t)rank * (size_t)index_bytes;
  for (int i = 0; i < alloc_rank; i++)
    if (!put_index(q + (size_t)i * (size_t)index_bytes, alloc_strides[i], index_bytes))
      return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                       "tensor too large for 32-bit indexing: stride %lld of allocation axis %d",
                       (long long)alloc_strides[i], i);
  return CF_OK;
}

cf_status exec_pack_tensor_arg(const DLTensor *t, int rank, int index_bytes, void *buf,
                               size_t cap, char *err, size_t errlen) {
  if (t == NULL) return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "tensor argument is NULL");
  if (t->ndim != rank)
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen,
                     "tensor argument: the kernel expects rank %d, the tensor has rank %d", rank,
                     (int)t->ndim);
  if (rank > EXEC_MAX_RANK || (rank > 0 && t->shape == NULL))
    return exec_fail(CF_ERR_INVALID_ARGUMENT, err, errlen, "tensor argument: invalid shape");
  int64_t compact[EXEC_MAX_RANK];
  const int64_t *strides = t->strides;
  if (strides == NULL) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
      compact[i] = s;
      s *= t->shape[i] > 0 ? t->shape[i] : 1;
    }
    strides = compact;
  }
  uint64_t data = (uint64_t)(uintptr_t)t->data + t->byte_offset;
  return exec_pack_tensor_arg_parts(data, rank, t->shape, rank, strides, index_bytes, buf, cap,
                                    err, errlen);
}
