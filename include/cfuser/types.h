/* cfuser/types.h: the enumerations of the IR visible to users: element types, parallel
 * types, memory types, iteration types. Each is generated from an X-macro table so that
 * the enum, its printed name and the code generators derive from one list. */
#ifndef CFUSER_TYPES_H
#define CFUSER_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most axes a tensor may have (tensor constructors, cf_broadcast, host tensors). */
#define CF_MAX_RANK 16

/* X(enumerator, printed name, size in bytes, C type name, DLPack type code, DLPack bits).
 * The codes are DLPack's DLDataTypeCode values as numbers (0 int, 1 uint, 2 float,
 * 4 bfloat, 6 bool, 3 opaque, 10 float8_e4m3fn, 12 float8_e5m2: DLPack 1.1's) so that the
 * table needs no particular dlpack.h version. CF_WELFORD_FLOAT and CF_WELFORD_DOUBLE are
 * not element types of inputs or outputs: they are the states of a Welford reduction
 * (cf_welford: running mean, sum of squared deviations M2, count), of float and of double
 * inputs, read with cf_welford_avg, cf_welford_m2 and cf_welford_n. The rows after them
 * are element types again, appended so that the earlier values stay: the 8-bit floats
 * (torch's float8_e4m3fn: no infinity, NaN 0x7F, largest 448; float8_e5m2: IEEE-like,
 * largest 57344), storage types that compute in float as half does; then the complex
 * types (DLPack code 5: kDLComplex), two floats or two doubles {real, imaginary}, laid
 * out as C's float _Complex and torch's complex64/complex128; then float4_e2m1fn
 * (nvFuser's Float4_e2m1fn, DLPack 1.1's kDLFloat4_e2m1fn, code 17, 4 bits: sign, 2
 * exponent bits, 1 mantissa bit; 0, 0.5, 1, 1.5, 2, 3, 4, 6), packed in memory two to a
 * byte, the lower index in the low nibble (torch's float4_e2m1fn_x2): its size here is a
 * register's, one value per byte; in tensors n elements take ceil(n / 2) bytes
 * (cf_dtype_storage_bytes). */
#define CF_DTYPE_TABLE(X)                                    \
  X(CF_FLOAT, "float", 4, "float", 2, 32)             \
  X(CF_DOUBLE, "double", 8, "double", 2, 64)          \
  X(CF_HALF, "__half", 2, "__half", 2, 16)            \
  X(CF_BFLOAT16, "__bfloat", 2, "__nv_bfloat16", 4, 16) \
  X(CF_INT8, "int8_t", 1, "int8_t", 0, 8)               \
  X(CF_INT32, "int", 4, "int", 0, 32)                   \
  X(CF_INT64, "int64_t", 8, "int64_t", 0, 64)           \
  X(CF_UINT32, "uint32_t", 4, "uint32_t", 1, 32)       \
  X(CF_BOOL, "bool", 1, "bool", 6, 8)                   \
  X(CF_WELFORD_FLOAT, "welford_float", 16, "CfWelfordF", 3, 128) \
  X(CF_WELFORD_DOUBLE, "welford_double", 24, "CfWelfordD", 3, 192) \
  X(CF_FLOAT8_E4M3FN, "__e4m3", 1, "__e4m3", 10, 8)   \
  X(CF_FLOAT8_E5M2, "__e5m2", 1, "__e5m2", 12, 8)     \
  X(CF_COMPLEX_FLOAT, "complex_float", 8, "CfComplexF", 5, 64) \
  X(CF_COMPLEX_DOUBLE, "complex_double", 16, "CfComplexD", 5, 128) \
  X(CF_FLOAT4_E2M1FN, "__e2m1", 1, "__e2m1", 17, 4)

typedef enum cf_dtype {
#define CF_X(e, name, size, ctype, dlcode, dlbits) e,
  CF_DTYPE_TABLE(CF_X)
#undef CF_X
  CF_DTYPE_COUNT
} cf_dtype;

/* X(enumerator, printed name in IterDomains). Unroll and Unswitch are serial loops that
 * run differently, as nvFuser's: an unrolled loop is unrolled by the compiler, and the
 * outermost Unroll or Unswitch loop of a nest is emitted twice, `if (every predicate of the
 * nest, checked once) { the nest without predicates } else { the nest with them }`. MMA
 * marks the axes of a tensor-core instruction's tile (cf_mma_tile in schedule.h): lowering
 * runs the loops over them as one warp-collective instruction. */
#define CF_PARALLEL_TYPE_TABLE(X) \
  X(CF_PT_SERIAL, "S")            \
  X(CF_PT_TIDX, "threadIdx.x")    \
  X(CF_PT_TIDY, "threadIdx.y")    \
  X(CF_PT_TIDZ, "threadIdx.z")    \
  X(CF_PT_BIDX, "blockIdx.x")     \
  X(CF_PT_BIDY, "blockIdx.y")     \
  X(CF_PT_BIDZ, "blockIdx.z")     \
  X(CF_PT_DIDX, "deviceIdx.x")    \
  X(CF_PT_DIDY, "deviceIdx.y")    \
  X(CF_PT_DIDZ, "deviceIdx.z")    \
  X(CF_PT_VECTORIZE, "V")         \
  X(CF_PT_UNROLL, "UR")           \
  X(CF_PT_UNSWITCH, "US")         \
  X(CF_PT_MMA, "MMA")

typedef enum cf_parallel_type {
#define CF_X(e, name) e,
  CF_PARALLEL_TYPE_TABLE(CF_X)
#undef CF_X
  CF_PT_COUNT
} cf_parallel_type;

/* X(enumerator, letter used in tensor names: T1_s_float) */
#define CF_MEMORY_TYPE_TABLE(X) \
  X(CF_MEM_LOCAL, "l")          \
  X(CF_MEM_SHARED, "s")         \
  X(CF_MEM_GLOBAL, "g")         \
  X(CF_MEM_TENSOR, "t")

typedef enum cf_memory_type {
#define CF_X(e, letter) e,
  CF_MEMORY_TYPE_TABLE(CF_X)
#undef CF_X
  CF_MEM_COUNT
} cf_memory_type;

typedef enum cf_iter_type {
  CF_ITER_ITERATION, /* printed i */
  CF_ITER_REDUCTION, /* printed r */
  CF_ITER_BROADCAST  /* printed b */
} cf_iter_type;

/* Printed names: "float", "threadIdx.x", "l" (memory letter), "Local" etc. */
CF_API const char *cf_dtype_name(cf_dtype t);
CF_API size_t cf_dtype_size(cf_dtype t);
/* The bytes n elements of t take in a tensor: n * cf_dtype_size(t), or ceil(n / 2) for a
 * packed type (float4_e2m1fn). */
CF_API size_t cf_dtype_storage_bytes(cf_dtype t, size_t n);
CF_API const char *cf_parallel_type_name(cf_parallel_type p);
CF_API const char *cf_memory_type_name(cf_memory_type m);

#ifdef __cplusplus
}
#endif
#endif
