/* ir/dltensor.c: host tensors as DLPack DLManagedTensors, the element conversions every
 * module shares, and the names of the public enumerations.
 *
 * This sits under the whole pipeline: the reference evaluator computes into these
 * tensors, the executor binds them as kernel arguments, tests compare them. Key decision:
 * an element is read and written through one pair of functions (ir_elem_load,
 * ir_elem_store) that widen to double or int64 and narrow back exactly as C and CUDA
 * would, half and bfloat16 included (software round-to-nearest-even from double, so no
 * double rounding through float), so every place that touches an element agrees on its
 * value bit for bit. A host tensor is two allocations, the header with its shape and
 * strides, and 64-byte-aligned data, freed by its own deleter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/checked.h"
#include "ir/dtype.h"
#include "ir/fp8.h"

/* ---- names of the enumerations ----------------------------------------------------------- */

static const struct {
  const char *name;
  size_t size;
  DLDataType dl;
} dtype_info[] = {
#define CF_X(e, name, size, ctype, dlcode, dlbits) {name, size, {(uint8_t)(dlcode), dlbits, 1}},
    CF_DTYPE_TABLE(CF_X)
#undef CF_X
};

static const char *const parallel_names[] = {
#define CF_X(e, name) name,
    CF_PARALLEL_TYPE_TABLE(CF_X)
#undef CF_X
};

/* The table holds the letters used in tensor names; the full names are for messages. */
static const char *const memory_names[CF_MEM_COUNT] = {
    [CF_MEM_LOCAL] = "Local", [CF_MEM_SHARED] = "Shared", [CF_MEM_GLOBAL] = "Global", [CF_MEM_TENSOR] = "Tensor"};

static const char *const status_names[] = {[CF_OK] = "OK",
                                           [CF_ERR_INVALID_ARGUMENT] = "ERR_INVALID_ARGUMENT",
                                           [CF_ERR_INVALID_SCHEDULE] = "ERR_INVALID_SCHEDULE",
                                           [CF_ERR_UNSUPPORTED] = "ERR_UNSUPPORTED",
                                           [CF_ERR_COMPILE] = "ERR_COMPILE",
                                           [CF_ERR_CUDA] = "ERR_CUDA",
                                           [CF_ERR_NO_DEVICE] = "ERR_NO_DEVICE",
                                           [CF_ERR_OUT_OF_MEMORY] = "ERR_OUT_OF_MEMORY",
                                           [CF_ERR_RUNTIME] = "ERR_RUNTIME",
                                           [CF_ERR_INTERNAL] = "ERR_INTERNAL",
                                           [CF_ERR_IO] = "ERR_IO"};

bool ir_dtype_valid(cf_dtype t) { return (unsigned)t < CF_DTYPE_COUNT; }
const char *cf_dtype_name(cf_dtype t) { return ir_dtype_valid(t) ? dtype_info[t].name : "invalid"; }
size_t cf_dtype_size(cf_dtype t) { return ir_dtype_valid(t) ? dtype_info[t].size : 0; }
bool ir_dtype_is_packed(cf_dtype t) { return ir_dtype_valid(t) && dtype_info[t].dl.bits < 8; }
size_t cf_dtype_storage_bytes(cf_dtype t, size_t n) { return ir_dtype_is_packed(t) ? n / 2 + n % 2 : n * cf_dtype_size(t); }
const char *cf_parallel_type_name(cf_parallel_type p) {
  return (unsigned)p < CF_PT_COUNT ? parallel_names[p] : "invalid";
}
const char *cf_memory_type_name(cf_memory_type m) { return (unsigned)m < CF_MEM_COUNT ? memory_names[m] : "invalid"; }
const char *cf_status_name(cf_status s) { return (unsigned)s <= CF_ERR_IO ? status_names[s] : "invalid"; }

bool ir_dtype_is_narrow_float(cf_dtype t) {
  return t == CF_HALF || t == CF_BFLOAT16 || t == CF_FLOAT8_E4M3FN || t == CF_FLOAT8_E5M2 || t == CF_FLOAT4_E2M1FN;
}
bool ir_dtype_is_float(cf_dtype t) { return t == CF_FLOAT || t == CF_DOUBLE || ir_dtype_is_narrow_float(t); }
bool ir_dtype_is_complex(cf_dtype t) { return t == CF_COMPLEX_FLOAT || t == CF_COMPLEX_DOUBLE; }
bool ir_dtype_is_inexact(cf_dtype t) { return ir_dtype_is_float(t) || ir_dtype_is_complex(t); }
cf_dtype ir_dtype_real_of(cf_dtype t) {
  return t == CF_COMPLEX_FLOAT ? CF_FLOAT : t == CF_COMPLEX_DOUBLE ? CF_DOUBLE : t;
}
cf_dtype ir_dtype_complex_of(cf_dtype t) {
  return ir_dtype_is_complex(t) ? t : t == CF_DOUBLE ? CF_COMPLEX_DOUBLE : CF_COMPLEX_FLOAT;
}

/* The values a real dtype holds, as its format: a float's exponent and significand bits
 * (the implicit bit included; subnormals, infinities and NaN come with the format), an
 * integer's bits and sign (bool: one unsigned bit). */
typedef struct NumFormat {
  bool is_float, is_signed;
  int exp_bits, bits;
} NumFormat;

static bool num_format(cf_dtype t, NumFormat *f) {
  switch (t) {
  case CF_DOUBLE: *f = (NumFormat){true, true, 11, 53}; return true;
  case CF_FLOAT: *f = (NumFormat){true, true, 8, 24}; return true;
  case CF_HALF: *f = (NumFormat){true, true, 5, 11}; return true;
  case CF_BFLOAT16: *f = (NumFormat){true, true, 8, 8}; return true;
  case CF_FLOAT8_E4M3FN: *f = (NumFormat){true, true, 4, 4}; return true;
  case CF_FLOAT8_E5M2: *f = (NumFormat){true, true, 5, 3}; return true;
  case CF_INT8: *f = (NumFormat){false, true, 0, 8}; return true;
  case CF_INT32: *f = (NumFormat){false, true, 0, 32}; return true;
  case CF_INT64: *f = (NumFormat){false, true, 0, 64}; return true;
  case CF_UINT32: *f = (NumFormat){false, false, 0, 32}; return true;
  case CF_BOOL: *f = (NumFormat){false, false, 0, 1}; return true;
  default: return false;
  }
}

bool ir_dtype_embeds(cf_dtype a, cf_dtype b) {
  if (a == b) return ir_dtype_valid(a);
  if (ir_dtype_is_complex(a) || ir_dtype_is_complex(b))
    return ir_dtype_is_complex(b) && ir_dtype_embeds(ir_dtype_real_of(a), ir_dtype_real_of(b));
  NumFormat fa, fb;
  if (!num_format(a, &fa) || !num_format(b, &fb)) return false;
  if (fa.is_float) return fb.is_float && fa.exp_bits <= fb.exp_bits && fa.bits <= fb.bits;
  int magnitude = fa.bits - fa.is_signed;
  if (fb.is_float) return magnitude <= fb.bits;
  return (!fa.is_signed || fb.is_signed) && magnitude <= fb.bits - fb.is_signed;
}

cf_dtype ir_dtype_accumulate(cf_dtype t) {
  switch (t) {
  case CF_DOUBLE: return CF_DOUBLE;
  case CF_FLOAT:
  case CF_HALF:
  case CF_BFLOAT16:
  case CF_FLOAT8_E4M3FN:
  case CF_FLOAT8_E5M2:
  case CF_FLOAT4_E2M1FN: return CF_FLOAT;
  case CF_COMPLEX_FLOAT:
  case CF_COMPLEX_DOUBLE: return t; /* torch sums complex64 in complex64 */
  case CF_WELFORD_FLOAT:
  case CF_WELFORD_DOUBLE: return t;
  default: return CF_INT64;
  }
}

/* ---- DLPack types ------------------------------------------------------------------------- */

DLDataType ir_dtype_to_dl(cf_dtype t) {
  DLDataType none = {0, 0, 0};
  return ir_dtype_valid(t) ? dtype_info[t].dl : none;
}

bool ir_dtype_from_dl(DLDataType dl, cf_dtype *out) {
  for (int t = 0; t < CF_DTYPE_COUNT; t++) {
    DLDataType d = dtype_info[t].dl;
    if (d.code == dl.code && d.bits == dl.bits && dl.lanes == 1 && !ir_dtype_is_welford((cf_dtype)t)) {
      *out = (cf_dtype)t;
      return true;
    }
  }
  return false;
}

void ir_dl_type_str(DLDataType dl, char *buf, size_t n) {
  cf_dtype t;
  if (ir_dtype_from_dl(dl, &t))
    snprintf(buf, n, "%s", cf_dtype_name(t));
  else
    snprintf(buf, n, "DLPack code %u bits %u lanes %u", dl.code, dl.bits, dl.lanes);
}

void ir_dl_strides(const DLTensor *t, int64_t *out) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    out[d] = t->strides ? t->strides[d] : s;
    s *= t->shape[d];
  }
}

void *ir_dl_elem_ptr(const DLTensor *t, int64_t off) {
  int64_t bytes = (t->dtype.bits * t->dtype.lanes + 7) / 8;
  return (char *)t->data + t->byte_offset + off * bytes;
}

bool ir_packed_rows_whole(cf_dtype t, int rank, const int64_t *shape) {
  return !ir_dtype_is_packed(t) || rank == 0 || shape[rank - 1] % 2 == 0;
}

/* A packed element (4 bits) is read and written in its byte's nibble: element 2k low. */
IrElem ir_dl_load(const DLTensor *t, int64_t off, cf_dtype dt) {
  if (!ir_dtype_is_packed(dt)) return ir_elem_load(ir_dl_elem_ptr(t, off), dt);
  __e2m1 q = cf_fp4_get((const char *)t->data + t->byte_offset, off);
  return ir_elem_load(&q.x, dt);
}

void ir_dl_store(const DLTensor *t, int64_t off, cf_dtype dt, IrElem v, cf_dtype from) {
  if (!ir_dtype_is_packed(dt)) {
    ir_elem_store(ir_dl_elem_ptr(t, off), dt, v, from);
    return;
  }
  unsigned char q, *b = (unsigned char *)t->data + t->byte_offset + (off >> 1);
  ir_elem_store(&q, dt, v, from);
  *b = (unsigned char)(off & 1 ? (*b & 0x0Fu) | (q & 0x0Fu) << 4 : (*b & 0xF0u) | (q & 0x0Fu));
}

bool ir_dl_is_host(const DLTensor *t) {
  return t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost;
}

int ir_dl_noncontiguous_axis(const DLTensor *t, int64_t *expect) {
  if (!t->strides) return -1;
  for (int a = 0; a < t->ndim; a++)
    if (t->shape[a] == 0) return -1;
  uint64_t want = 1; /* unsigned: absurd sizes wrap instead of overflowing (they are refused elsewhere) */
  for (int a = t->ndim - 1; a >= 0; a--) {
    if (t->shape[a] != 1 && (uint64_t)t->strides[a] != want) {
      if (expect) *expect = (int64_t)want;
      return a;
    }
    want *= (uint64_t)t->shape[a];
  }
  return -1;
}

/* ---- half and bfloat16 in software --------------------------------------------------------- */

/* Rounds x to the nearest value (ties to even) of a binary format with `mbits` fraction
 * bits and `ebits` exponent bits and returns its bit pattern. */
static uint32_t round_to_format(double x, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t sign = signbit(x) ? 1u << (mbits + ebits) : 0;
  uint32_t exp_all = ((1u << ebits) - 1) << mbits;
  if (isnan(x)) return sign | exp_all | (1u << (mbits - 1));
  double a = fabs(x);
  if (isinf(a)) return sign | exp_all;
  if (a < ldexp(1.0, 1 - bias)) /* subnormal: a multiple of 2^(1-bias-mbits) */
    return sign | (uint32_t)rint(ldexp(a, mbits - 1 + bias));
  int e;
  frexp(a, &e);
  e -= 1; /* a in [2^e, 2^(e+1)) */
  double m = rint(ldexp(a, mbits - e));
  if (m == ldexp(1.0, mbits + 1)) {
    m /= 2;
    e++;
  }
  if (e > bias) return sign | exp_all;
  return sign | ((uint32_t)(e + bias) << mbits) | ((uint32_t)m - (1u << mbits));
}

static double decode_format(uint32_t bits, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t mant = bits & ((1u << mbits) - 1);
  uint32_t ex = (bits >> mbits) & ((1u << ebits) - 1);
  double v;
  if (ex == (1u << ebits) - 1)
    v = mant ? NAN : INFINITY;
  else if (ex == 0)
    v = ldexp((double)mant, 1 - bias - mbits);
  else
    v = ldexp((double)(mant | (1u << mbits)), (int)ex - bias - mbits);
  return (bits >> (mbits + ebits)) & 1 ? -v : v;
}

uint16_t ir_half_from_double(double x) { return (uint16_t)round_to_format(x, 10, 5); }
/* An 8-bit float from a double: rounded to float first, as torch's conversions are
 * (ir/fp8.h has the rules and the one implementation kernels also compile). */
uint8_t ir_fp8_from_double(double x, cf_dtype t) {
  return t == CF_FLOAT8_E4M3FN ? __float2e4m3((float)x).x : __float2e5m2((float)x).x;
}
double ir_fp8_to_double(uint8_t b, cf_dtype t) {
  return t == CF_FLOAT8_E4M3FN ? __e4m32float((__e4m3){b}) : __e5m22float((__e5m2){b});
}
double ir_half_to_double(uint16_t h) { return decode_format(h, 10, 5); }
uint16_t ir_bf16_from_double(double x) { return (uint16_t)round_to_format(x, 7, 8); }
double ir_bf16_to_double(uint16_t h) { return decode_format(h, 7, 8); }

/* ---- elements -------------------------------------------------------------------------------- */

IrElem ir_elem_load(const void *p, cf_dtype t) {
  IrElem v = {.i = 0};
  union {
    float f;
    double d;
    uint16_t u16;
    int8_t i8;
    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint8_t u8;
    float cf[2];
    double cd[2];
  } u;
  memcpy(&u, p, cf_dtype_size(t));
  switch (t) {
  case CF_COMPLEX_FLOAT: v = ir_complex(u.cf[0], u.cf[1]); break;
  case CF_COMPLEX_DOUBLE: v = ir_complex(u.cd[0], u.cd[1]); break;
  case CF_FLOAT: v.d = u.f; break;
  case CF_DOUBLE: v.d = u.d; break;
  case CF_HALF: v.d = ir_half_to_double(u.u16); break;
  case CF_BFLOAT16: v.d = ir_bf16_to_double(u.u16); break;
  case CF_FLOAT8_E4M3FN:
  case CF_FLOAT8_E5M2: v.d = ir_fp8_to_double(u.u8, t); break;
  case CF_FLOAT4_E2M1FN: v.d = __e2m12float((__e2m1){(unsigned char)(u.u8 & 0xFu)}); break;
  case CF_INT8: v.i = u.i8; break;
  case CF_INT32: v.i = u.i32; break;
  case CF_INT64: v.i = u.i64; break;
  case CF_UINT32: v.i = u.u32; break;
  case CF_BOOL: v.i = u.u8 != 0; break;
  default: break;
  }
  return v;
}

/* Truncates toward zero and saturates to [lo, hi]; NaN gives 0 (CUDA's cvt.rzi.sat). */
static int64_t sat_trunc(double x, int64_t lo, int64_t hi) {
  if (isnan(x)) return 0;
  if (x <= (double)lo) return lo;
  if (x >= (double)hi) return hi;
  return (int64_t)x;
}

/* Integer value of v for storing as integer type t. */
static int64_t to_integer(IrElem v, bool from_float, cf_dtype t) {
  if (!from_float) return v.i;
  switch (t) {
  case CF_INT8: return sat_trunc(v.d, INT8_MIN, INT8_MAX);
  case CF_INT32: return sat_trunc(v.d, INT32_MIN, INT32_MAX);
  case CF_UINT32: return sat_trunc(v.d, 0, UINT32_MAX);
  case CF_BOOL: return v.d != 0;
  default: return sat_trunc(v.d, INT64_MIN, INT64_MAX);
  }
}

/* A complex value stored into complex t: each part rounded as a float or double is; from a
 * real type, the imaginary part is 0. */
static void store_complex(void *p, cf_dtype t, IrElem v, cf_dtype from) {
  double re = ir_dtype_is_inexact(from) ? v.c.re : (double)v.i, im = ir_dtype_is_complex(from) ? v.c.im : 0.0;
  if (t == CF_COMPLEX_DOUBLE) {
    double d[2] = {re, im};
    memcpy(p, d, sizeof d);
  } else {
    float f[2] = {ir_dtype_is_inexact(from) ? (float)re : (float)v.i, (float)im};
    memcpy(p, f, sizeof f);
  }
}

void ir_elem_store(void *p, cf_dtype t, IrElem v, cf_dtype from) {
  if (ir_dtype_is_complex(t)) {
    store_complex(p, t, v, from);
    return;
  }
  if (ir_dtype_is_complex(from) && t == CF_BOOL) { /* nonzero when either part is (C's and torch's) */
    uint8_t b = v.c.re != 0 || v.c.im != 0;
    memcpy(p, &b, 1);
    return;
  }
  bool from_float = ir_dtype_is_inexact(from); /* a complex value converts to a real type by its real part */
  if (ir_dtype_is_float(t)) {
    double x = from_float ? v.d : (double)v.i;
    float f = from_float ? (float)x : (float)v.i; /* an integer rounds once, as C's conversion does */
    uint16_t h;
    uint8_t q;
    switch (t) {
    case CF_FLOAT: memcpy(p, &f, 4); return;
    case CF_DOUBLE: memcpy(p, &x, 8); return;
    case CF_FLOAT8_E4M3FN:
    case CF_FLOAT8_E5M2: q = ir_fp8_from_double(f, t), memcpy(p, &q, 1); return;
    case CF_FLOAT4_E2M1FN: q = __float2e2m1(f).x, memcpy(p, &q, 1); return;
    case CF_HALF: h = ir_half_from_double(x); break;
    default: h = ir_bf16_from_double(x); break;
    }
    memcpy(p, &h, 2);
    return;
  }
  int64_t i = to_integer(v, from_float, t);
  /* Narrowing wraps modulo 2^bits, as gcc and nvcc define it. */
  int8_t i8 = (int8_t)i;
  int32_t i32 = (int32_t)i;
  uint32_t u32 = (uint32_t)i;
  uint8_t b = i != 0;
  switch (t) {
  case CF_INT8: memcpy(p, &i8, 1); break;
  case CF_INT32: memcpy(p, &i32, 4); break;
  case CF_UINT32: memcpy(p, &u32, 4); break;
  case CF_BOOL: memcpy(p, &b, 1); break;
  default: memcpy(p, &i, 8); break;
  }
}

IrElem ir_elem_convert(IrElem v, cf_dtype from, cf_dtype to) {
  unsigned char buf[16];
  ir_elem_store(buf, to, v, from);
  return ir_elem_load(buf, to);
}

double ir_elem_to_double(IrElem v, cf_dtype t) { return ir_dtype_is_inexact(t) ? v.d : (double)v.i; }

/* ---- host tensors ----------------------------------------------------------------------------- */

typedef struct HostTensor {
  DLManagedTensor m; /* first, so the deleter can free the block it is given */
  int64_t dims[]; /* shape[ndim] then strides[ndim] */
} HostTensor;

static void host_deleter(DLManagedTensor *m) {
  free(m->dl_tensor.data);
  free(m);
}

/* Sizes, strides and the byte count go through the checked helpers: a tensor whose
 * footprint overflows int64 or size_t is refused (NULL), never given a wrapped buffer. */
static DLManagedTensor *host_alloc(cf_dtype dtype, int rank, const int64_t *sizes, const int64_t *strides) {
  if (!ir_dtype_valid(dtype) || rank < 0 || rank > CF_MAX_RANK || (rank > 0 && !sizes)) return NULL;
  int64_t span, numel;
  size_t bytes;
  if (!ck_numel(rank, sizes, &numel) || !ck_span(rank, sizes, strides, &span) ||
      !ck_bytes(ir_dtype_is_packed(dtype) ? span / 2 + span % 2 : span, ir_dtype_is_packed(dtype) ? 1 : cf_dtype_size(dtype),
                64, &bytes))
    return NULL;
  HostTensor *h = calloc(1, sizeof *h + sizeof(int64_t) * 2 * (size_t)rank);
  void *data = h ? aligned_alloc(64, bytes ? bytes : 64) : NULL;
  if (!data) {
    free(h);
    return NULL;
  }
  memset(data, 0, bytes ? bytes : 64);
  DLTensor *t = &h->m.dl_tensor;
  t->data = data;
  t->device = (DLDevice){kDLCPU, 0};
  t->ndim = rank;
  t->dtype = ir_dtype_to_dl(dtype);
  t->shape = h->dims;
  t->strides = h->dims + rank;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    t->shape[d] = sizes[d];
    t->strides[d] = strides ? strides[d] : s;
    if (!ck_mul(s, sizes[d], &s)) s = INT64_MAX; /* past an empty axis only (numel fits): as ck_span */
  }
  h->m.deleter = host_deleter;
  return &h->m;
}

DLManagedTensor *cf_tensor_host(cf_dtype dtype, int rank, const int64_t *sizes) {
  return host_alloc(dtype, rank, sizes, NULL);
}

DLManagedTensor *cf_tensor_host_strided(cf_dtype dtype, int rank, const int64_t *sizes, const int64_t *strides) {
  if (rank > 0 && !strides) return NULL;
  return host_alloc(dtype, rank, sizes, strides);
}

void cf_tensor_free(DLManagedTensor *t) {
  if (t && t->deleter) t->deleter(t);
}

int64_t cf_tensor_numel(const DLTensor *t) {
  int64_t n;
  if (!t || t->ndim < 0 || (t->ndim > 0 && !t->shape)) return 0;
  return ck_numel(t->ndim, t->shape, &n) ? n : -1;
}

/* Element offset of logical (row-major) index `linear`; coords[] receives the coordinate
 * when not NULL. */
static int64_t linear_offset(const DLTensor *t, int64_t linear, int64_t *coords) {
  int64_t off = 0, s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t c = linear % t->shape[d];
    linear /= t->shape[d];
    if (coords) coords[d] = c;
    off += c * (t->strides ? t->strides[d] : s);
    s *= t->shape[d];
  }
  return off;
}

/* The cfuser dtype of a host tensor usable by the helpers below. */
static bool host_dtype(const DLTensor *t, cf_dtype *dt) {
  return t && t->data && ir_dl_is_host(t) && ir_dtype_from_dl(t->dtype, dt);
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A random element: floats are k * 2^(1-p) - 1 with p = fraction bits + 1, so every value
 * is exact in its type and lies in [-1, 1). */
static IrElem random_elem(uint64_t r, cf_dtype t, cf_dtype *cls) {
  static const int precision[CF_DTYPE_COUNT] = {[CF_FLOAT] = 24, [CF_DOUBLE] = 53, [CF_HALF] = 11, [CF_BFLOAT16] = 8,
                                                     [CF_FLOAT8_E4M3FN] = 4, [CF_FLOAT8_E5M2] = 3, [CF_FLOAT4_E2M1FN] = 2};
  IrElem v;
  *cls = t;
  if (ir_dtype_is_complex(t)) { /* two values of the real type, exact in it */
    int p = precision[ir_dtype_real_of(t)];
    v = ir_complex(ldexp((double)(r >> (64 - p)), 1 - p) - 1.0, ldexp((double)(r & ((1ull << p) - 1)), 1 - p) - 1.0);
  } else if (ir_dtype_is_float(t)) {
    int p = precision[t];
    v.d = ldexp((double)(r >> (64 - p)), 1 - p) - 1.0;
  } else if (t == CF_BOOL) {
    v.i = (int64_t)(r >> 63);
  } else if (t == CF_UINT32) {
    v.i = (int64_t)(r >> 61);
  } else {
    v.i = (int64_t)(r >> 60) - 8;
  }
  return v;
}

cf_status cf_tensor_fill_random(DLTensor *t, uint64_t seed) {
  cf_dtype dt, cls;
  if (!host_dtype(t, &dt)) return CF_ERR_INVALID_ARGUMENT;
  uint64_t state = seed;
  int64_t n = cf_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    IrElem v = random_elem(splitmix64(&state), dt, &cls);
    ir_dl_store(t, linear_offset(t, i, NULL), dt, v, cls);
  }
  return CF_OK;
}

cf_status cf_tensor_fill_iota(DLTensor *t) {
  cf_dtype dt;
  if (!host_dtype(t, &dt)) return CF_ERR_INVALID_ARGUMENT;
  int64_t n = cf_tensor_numel(t);
  for (int64_t i = 0; i < n; i++)
    ir_dl_store(t, linear_offset(t, i, NULL), dt, (IrElem){.i = i}, CF_INT64);
  return CF_OK;
}

double cf_tensor_get(const DLTensor *t, int64_t linear_index) {
  cf_dtype dt;
  if (!host_dtype(t, &dt) || linear_index < 0 || linear_index >= cf_tensor_numel(t)) return NAN;
  IrElem v = ir_dl_load(t, linear_offset(t, linear_index, NULL), dt);
  return ir_elem_to_double(v, dt);
}

double cf_tensor_get_imag(const DLTensor *t, int64_t linear_index) {
  cf_dtype dt;
  if (!host_dtype(t, &dt) || linear_index < 0 || linear_index >= cf_tensor_numel(t)) return NAN;
  IrElem v = ir_dl_load(t, linear_offset(t, linear_index, NULL), dt);
  return ir_dtype_is_complex(dt) ? v.c.im : 0.0;
}

static bool same_shape(const DLTensor *a, const DLTensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

bool cf_tensor_equal(const DLTensor *a, const DLTensor *b) {
  cf_dtype da, db;
  if (!host_dtype(a, &da) || !host_dtype(b, &db) || da != db || !same_shape(a, b)) return false;
  int64_t n = cf_tensor_numel(a);
  for (int64_t i = 0; i < n; i++) {
    IrElem x = ir_dl_load(a, linear_offset(a, i, NULL), da);
    IrElem y = ir_dl_load(b, linear_offset(b, i, NULL), db);
    bool eq = ir_dtype_is_inexact(da) ? (x.d == y.d || (isnan(x.d) && isnan(y.d))) : x.i == y.i;
    if (ir_dtype_is_complex(da)) eq = eq && (x.c.im == y.c.im || (isnan(x.c.im) && isnan(y.c.im)));
    if (!eq) return false;
  }
  return true;
}

static void shape_str(const DLTensor *t, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < t->ndim && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

static void mismatch_msg(const DLTensor *a, int64_t i, double x, double y, double tol, char *msg, size_t msglen) {
  int64_t coords[64] = {0};
  char where[256] = "[";
  if (a->ndim <= 64) linear_offset(a, i, coords);
  size_t len = 1;
  for (int d = 0; d < a->ndim && d < 64 && len < sizeof where; d++)
    len += (size_t)snprintf(where + len, sizeof where - len, "%s%lld", d ? ", " : "", (long long)coords[d]);
  if (len < sizeof where) snprintf(where + len, sizeof where - len, "]");
  snprintf(msg, msglen, "mismatch at %s (index %lld): %.9g vs %.9g (|diff| %.3g > tolerance %.3g)", where, (long long)i,
           x, y, fabs(x - y), tol);
}

bool cf_tensor_allclose(const DLTensor *a, const DLTensor *b, double rtol, double atol, char *msg, size_t msglen) {
  cf_dtype da, db;
  if (!host_dtype(a, &da) || !host_dtype(b, &db)) {
    if (msg) snprintf(msg, msglen, "not a host tensor of a cfuser dtype");
    return false;
  }
  if (!same_shape(a, b)) {
    char sa[256], sb[256];
    shape_str(a, sa, sizeof sa);
    shape_str(b, sb, sizeof sb);
    if (msg) snprintf(msg, msglen, "shape mismatch: %s vs %s", sa, sb);
    return false;
  }
  int64_t n = cf_tensor_numel(a);
  for (int64_t i = 0; i < n; i++) /* the real parts, then the imaginary parts of complex ones */
    for (int part = 0; part < (ir_dtype_is_complex(da) || ir_dtype_is_complex(db) ? 2 : 1); part++) {
      double x = part ? cf_tensor_get_imag(a, i) : cf_tensor_get(a, i);
      double y = part ? cf_tensor_get_imag(b, i) : cf_tensor_get(b, i);
      double tol = atol + rtol * fabs(y);
      if (x == y || (isnan(x) && isnan(y)) || fabs(x - y) <= tol) continue;
      if (msg) mismatch_msg(a, i, x, y, tol, msg, msglen);
      return false;
    }
  return true;
}
