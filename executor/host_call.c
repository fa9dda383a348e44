/* executor/host_call.c: calls of a loaded host kernel (executor/host.c loads it): the
 * kernel's parameters described to libffi and packed, and the launch, in which each
 * emulated CUDA thread of the runtime's cfh_launch calls the kernel with ffi_call. The
 * by-value tensor structs are described to libffi as struct types, so the kernel keeps the
 * same C signature as the CUDA kernel. */
#include "executor/exec_host.h"
#include "executor/host_module.h"
#include "ir/dtype.h"

#include <ffi.h>
#include <stdlib.h>
#include <string.h>

struct ExecHostCall {
  ffi_cif cif;
  ffi_type **args;     /* one per parameter */
  ffi_type *structs;   /* the struct type of each struct parameter */
  ffi_type **elements; /* the element lists of the struct types */
  void (*kernel)(void);
  CfhLaunchFn launch;
};

/* ---- parameters and libffi -------------------------------------------------------------------- */

size_t exec_host_param_size(const ExecHostParam *p) {
  if (!p->is_tensor) return p->dtype == CF_BOOL ? 1 : cf_dtype_size(p->dtype);
  size_t isz = p->index32 ? 4 : 8;
  size_t bytes = sizeof(void *) + (size_t)(p->rank + p->alloc_rank) * isz;
  return (bytes + 7) / 8 * 8;
}

cf_status exec_host_pack_tensor(const ExecHostParam *p, void *data, const int64_t *sizes,
                                const int64_t *strides, void *buf, ExecHostError *err) {
  if (!p || !p->is_tensor || !buf) return CF_ERR_INVALID_ARGUMENT;
  unsigned char *out = buf;
  memset(out, 0, exec_host_param_size(p));
  memcpy(out, &data, sizeof data);
  out += sizeof data;
  for (int i = 0; i < p->rank + p->alloc_rank; i++) {
    int64_t v = i < p->rank ? sizes[i] : strides[i - p->rank];
    if (!p->index32) {
      memcpy(out, &v, 8);
      out += 8;
      continue;
    }
    if (v < INT32_MIN || v > INT32_MAX) {
      exec_host_set_error(err, "%s %lld does not fit the kernel's 32-bit index type",
                i < p->rank ? "size" : "stride", (long long)v);
      return CF_ERR_INVALID_ARGUMENT;
    }
    int32_t v32 = (int32_t)v;
    memcpy(out, &v32, 4);
    out += 4;
  }
  return CF_OK;
}

static ffi_type *scalar_ffi_type(cf_dtype t) {
  switch (t) {
  case CF_FLOAT: return &ffi_type_float;
  case CF_DOUBLE: return &ffi_type_double;
  case CF_INT8: return &ffi_type_sint8;
  case CF_INT32: return &ffi_type_sint32;
  case CF_INT64: return &ffi_type_sint64;
  case CF_UINT32: return &ffi_type_uint32;
  case CF_BOOL: return &ffi_type_uint8;
  default: return NULL; /* __half, __nv_bfloat16, __e4m3, __e5m2: a struct of one uint16_t or uint8_t */
  }
}

/* Describes parameter p as libffi type c->args[i], using element slots from *el. */
static cf_status describe_param(ExecHostCall *c, int i, const ExecHostParam *p, ffi_type ***el,
                                ExecHostError *err) {
  ffi_type *s = &c->structs[i];
  if (!p->is_tensor && (c->args[i] = scalar_ffi_type(p->dtype))) return CF_OK;
  if (p->is_tensor && (p->rank < 0 || p->rank > EXEC_HOST_MAX_RANK || p->alloc_rank < 0 ||
                      p->alloc_rank > EXEC_HOST_MAX_RANK)) {
    exec_host_set_error(err, "kernel parameter %d: a tensor of rank %d (allocation rank %d); the host backend takes at most "
              "%d", i, p->rank, p->alloc_rank, EXEC_HOST_MAX_RANK);
    return CF_ERR_UNSUPPORTED;
  }
  if (!p->is_tensor && !ir_dtype_is_narrow_float(p->dtype) && !ir_dtype_is_complex(p->dtype)) {
    exec_host_set_error(err, "kernel parameter %d: unsupported dtype", i);
    return CF_ERR_INVALID_ARGUMENT;
  }
  s->type = FFI_TYPE_STRUCT;
  s->elements = *el;
  if (p->is_tensor) {
    *(*el)++ = &ffi_type_pointer;
    for (int k = 0; k < p->rank + p->alloc_rank; k++)
      *(*el)++ = p->index32 ? &ffi_type_sint32 : &ffi_type_sint64;
  } else if (ir_dtype_is_complex(p->dtype)) { /* the SysV ABI passes a _Complex as the struct {re, im} */
    ffi_type *part = p->dtype == CF_COMPLEX_FLOAT ? &ffi_type_float : &ffi_type_double;
    *(*el)++ = part;
    *(*el)++ = part;
  } else {
    *(*el)++ = cf_dtype_size(p->dtype) == 1 ? &ffi_type_uint8 : &ffi_type_uint16;
  }
  *(*el)++ = NULL;
  c->args[i] = s;
  return CF_OK;
}

cf_status exec_host_call_prepare(const ExecHostModule *m, int nparams, const ExecHostParam *params,
                                 ExecHostCall **out, ExecHostError *err) {
  if (!m || !out || nparams < 0 || (nparams && !params)) return CF_ERR_INVALID_ARGUMENT;
  if (nparams > EXEC_HOST_MAX_PARAMS) {
    exec_host_set_error(err, "a host kernel takes at most %d parameters, not %d", EXEC_HOST_MAX_PARAMS,
              nparams);
    return CF_ERR_UNSUPPORTED;
  }
  ExecHostCall *c = calloc(1, sizeof *c);
  size_t nel = 0;
  for (int i = 0; i < nparams; i++) nel += params[i].is_tensor ? 2 * EXEC_HOST_MAX_RANK + 2 : 3;
  if (c) {
    c->args = calloc((size_t)nparams + 1, sizeof *c->args);
    c->structs = calloc((size_t)nparams + 1, sizeof *c->structs);
    c->elements = calloc(nel + 1, sizeof *c->elements);
  }
  if (!c || !c->args || !c->structs || !c->elements) {
    exec_host_call_free(c);
    exec_host_set_error(err, "out of memory");
    return CF_ERR_OUT_OF_MEMORY;
  }
  c->kernel = m->kernel;
  c->launch = m->launch;
  ffi_type **el = c->elements;
  cf_status st = CF_OK;
  for (int i = 0; i < nparams && st == CF_OK; i++) st = describe_param(c, i, &params[i], &el, err);
  if (st == CF_OK && ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, (unsigned)nparams, &ffi_type_void,
                                  c->args) != FFI_OK) {
    exec_host_set_error(err, "internal error at %s:%d: ffi_prep_cif failed", __FILE__, __LINE__);
    st = CF_ERR_INTERNAL;
  }
  for (int i = 0; i < nparams && st == CF_OK; i++)
    if (c->args[i]->size != exec_host_param_size(&params[i])) {
      exec_host_set_error(err, "internal error at %s:%d: parameter %d has %zu bytes for libffi, %zu for "
                "cfuser", __FILE__, __LINE__, i, c->args[i]->size, exec_host_param_size(&params[i]));
      st = CF_ERR_INTERNAL;
    }
  if (st != CF_OK) {
    exec_host_call_free(c);
    return st;
  }
  *out = c;
  return CF_OK;
}

void exec_host_call_free(ExecHostCall *c) {
  if (!c) return;
  free(c->args);
  free(c->structs);
  free(c->elements);
  free(c);
}

typedef struct Invocation {
  ffi_cif *cif;
  void (*kernel)(void);
  void **values;
} Invocation;

/* The body of every emulated thread: one call of the kernel. libffi may rewrite the
 * entries of the value array (it points those of large structs at its own copies), so
 * each thread passes its own copy of the array, on its own stack. */
static void thread_body(void *arg) {
  Invocation *inv = arg;
  void *values[EXEC_HOST_MAX_PARAMS];
  memcpy(values, inv->values, inv->cif->nargs * sizeof *values);
  ffi_call(inv->cif, inv->kernel, NULL, values);
}

cf_status exec_host_call_launch(const ExecHostCall *c, const int64_t grid[3], const int64_t block[3],
                                int64_t smem, void **values, ExecHostError *err) {
  if (err) exec_host_error_clear(err);
  if (!c || !grid || !block || (c->cif.nargs && !values)) return CF_ERR_INVALID_ARGUMENT;
  unsigned int g[3], b[3];
  for (int i = 0; i < 3; i++) {
    if (grid[i] < 1 || grid[i] > UINT32_MAX || block[i] < 1 || block[i] > UINT32_MAX) {
      exec_host_set_error(err, "invalid launch: grid (%lld,%lld,%lld) block (%lld,%lld,%lld): every "
                "dimension must be at least 1", (long long)grid[0], (long long)grid[1],
                (long long)grid[2], (long long)block[0], (long long)block[1], (long long)block[2]);
      return CF_ERR_INVALID_ARGUMENT;
    }
    g[i] = (unsigned int)grid[i];
    b[i] = (unsigned int)block[i];
  }
  if (smem < 0) {
    exec_host_set_error(err, "invalid launch: %lld bytes of shared memory", (long long)smem);
    return CF_ERR_INVALID_ARGUMENT;
  }
  /* ffi_call does not modify the cif; the const is cast away for its signature only. */
  Invocation inv = {(ffi_cif *)&c->cif, c->kernel, values};
  char msg[sizeof err->msg];
  int rc = c->launch(g, b, (size_t)smem, thread_body, &inv, msg, sizeof msg);
  if (rc == CFH_OK) return CF_OK;
  exec_host_set_error(err, "%s", msg);
  return rc == CFH_ERR_CONFIG    ? CF_ERR_INVALID_ARGUMENT
         : rc == CFH_ERR_RUNTIME ? CF_ERR_RUNTIME
         : rc == CFH_ERR_NOMEM   ? CF_ERR_OUT_OF_MEMORY
                                 : CF_ERR_INTERNAL;
}

cf_status exec_host_launch(const ExecHostModule *m, const int64_t grid[3], const int64_t block[3],
                           int64_t smem, int nparams, const ExecHostParam *params, void **values,
                           ExecHostError *err) {
  ExecHostCall *c = NULL;
  if (err) exec_host_error_clear(err);
  cf_status st = exec_host_call_prepare(m, nparams, params, &c, err);
  if (st == CF_OK) st = exec_host_call_launch(c, grid, block, smem, values, err);
  exec_host_call_free(c);
  return st;
}
