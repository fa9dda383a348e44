/* cfuser/tensor.h: host and device tensors as DLPack DLManagedTensors, and the
 * reference evaluator that computes a fusion's outputs on the host.
 *
 * Tensors made here are freed with their own deleter: cf_tensor_free(t) calls it. Device
 * tensors need a CUDA device (CF_ERR_NO_DEVICE otherwise). */
#ifndef CFUSER_TENSOR_H
#define CFUSER_TENSOR_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A contiguous host tensor, zero-filled; NULL when out of memory, when dtype is invalid,
 * rank is outside 0..CF_MAX_RANK, a size is negative, or its byte count overflows. */
CF_API DLManagedTensor *cf_tensor_host(cf_dtype dtype, int rank, const int64_t *sizes);
/* A host tensor with the given strides (in elements); the storage spans the strided
 * footprint. */
CF_API DLManagedTensor *cf_tensor_host_strided(cf_dtype dtype, int rank, const int64_t *sizes,
                                               const int64_t *strides);
/* Calls t's deleter; NULL is ok. */
CF_API void cf_tensor_free(DLManagedTensor *t);
/* Fills a host tensor with values from a seeded generator: floats uniform in [-1, 1),
 * integers in [-8, 8), bools 0/1. Deterministic for a seed on every platform. */
CF_API cf_status cf_tensor_fill_random(DLTensor *t, uint64_t seed);
/* Fills a host tensor with 0, 1, 2, ... in logical (row-major) order. */
CF_API cf_status cf_tensor_fill_iota(DLTensor *t);
/* Number of elements (product of the sizes); -1 when a size is negative or the product
 * overflows int64. */
CF_API int64_t cf_tensor_numel(const DLTensor *t);
/* Exact equality of two host tensors of equal dtype and sizes, any strides. */
CF_API bool cf_tensor_equal(const DLTensor *a, const DLTensor *b);
/* |a - b| <= atol + rtol * |b| elementwise (NaNs equal where both are NaN). On a mismatch
 * and when msg is not NULL, writes the first differing coordinate and values to msg. */
CF_API bool cf_tensor_allclose(const DLTensor *a, const DLTensor *b, double rtol, double atol,
                               char *msg, size_t msglen);
/* Host element at a logical linear index, converted to double (a complex one's real part). */
CF_API double cf_tensor_get(const DLTensor *t, int64_t linear_index);
/* The imaginary part of a complex element (0 for other dtypes; NaN out of range). */
CF_API double cf_tensor_get_imag(const DLTensor *t, int64_t linear_index);

/* The reference evaluator: computes f's outputs from host inputs, ignoring every
 * schedule. outputs[i] receives a new contiguous host tensor the caller frees with
 * cf_tensor_free. Symbolic extents are bound from the inputs' sizes. Errors (count,
 * dtype, rank or size mismatches) are recorded on f. */
CF_API cf_status cf_fusion_evaluate(cf_fusion *f, int ninputs, const DLTensor *const *inputs,
                                    DLManagedTensor **outputs);

#ifdef __cplusplus
}
#endif
#endif
