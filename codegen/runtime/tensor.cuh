// codegen/runtime/tensor.cuh: how a global tensor reaches a generated kernel.
//
// Embedded into libcfuser at build time and placed by the code generator ahead of every
// CUDA kernel. Each tensor parameter is passed by value (DESIGN.md section 7):
//
//   __global__ void kernel1(Tensor<float, 2, 2> T0, Tensor<float, 2, 2> T1)
//
// data points at element 0 (DLPack's data + byte_offset); logical_size holds the N sizes
// of the logical domain; alloc_stride the A strides, in elements, of the allocation
// domain. The host packs the same bytes (executor/cuda_tensor.c, exec_pack_tensor_arg):
// the pointer at offset 0, the sizes from offset 8, the strides right after, the struct
// padded to 8 bytes. The index type I is the kernel's: cf_index_t, int64_t unless the
// generated code defines CF_INDEX_TYPE (int for 32-bit indexing) before this file.
#ifndef CFUSER_RUNTIME_TENSOR_CUH
#define CFUSER_RUNTIME_TENSOR_CUH

#ifndef CF_INDEX_TYPE
#define CF_INDEX_TYPE long long
#endif
typedef CF_INDEX_TYPE cf_index_t;
// NVRTC has no <cstdint> without the toolkit's headers; these are the CUDA ABI's widths.
typedef long long cf_int64_t;
typedef int cf_int32_t;
static_assert(sizeof(cf_int64_t) == 8 && sizeof(cf_int32_t) == 4, "index widths");
static_assert(sizeof(cf_index_t) == 4 || sizeof(cf_index_t) == 8, "CF_INDEX_TYPE");

template <typename T, int N, int A, typename I = cf_index_t>
struct Tensor {
  T* data;
  I logical_size[N];
  I alloc_stride[A];
};

// A scalar (rank-0) tensor: only the pointer. C++ has no zero-length arrays.
template <typename T, typename I>
struct Tensor<T, 0, 0, I> {
  T* data;
};

#endif
