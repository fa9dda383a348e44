/* executor/run.c: cf_executor_run and cf_executor_run_async: checks the DLPack arguments
 * against the kernel's parameters (count, dtype, rank, concrete sizes, device, strides
 * against promised contiguity, alignment of vectorized tensors), binds sizes and strides,
 * evaluates the run-time checks and launch dimensions, allocates missing outputs, packs
 * the by-value tensor arguments and launches on the chosen backend (on the caller's
 * stream for CUDA, without synchronizing).
 * Key decisions: every check happens before anything is allocated or launched, and each
 * message names the argument, its tensor and the axis, so a bad call is cheap and clear;
 * everything a run needs (rows of sizes and strides, argument buffers, the constant
 * extents to check against) is sized and precomputed once per compile in an ExecPlan, so
 * a cached run allocates nothing but its outputs and does no work proportional to the
 * fusion, only to its parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/executor_internal.h"
#include "ir/checked.h"
#include "ir/dtype.h"

/* The per-executor state of a run, sized for the kernel once at compile (exec_plan_make):
 * every row, argument buffer and pointer array a run needs. Rows of parameter p start at
 * off[p] and hold max(rank, alloc_rank) entries. */
struct ExecPlan {
  int nin, nout, nparams, index_bytes; /* inputs, outputs, then grid-reduction buffers */
  int *off;                 /* per parameter: its first row entry */
  int64_t *want;            /* per row entry: the constant extent, or -1 when symbolic */
  int64_t *sizes, *strides; /* bound per run */
  const int64_t **size_rows, **stride_rows;
  DLTensor **tensors;
  DLManagedTensor **allocated;
  unsigned char *args;      /* packed by-value tensor arguments, 16-byte aligned slots */
  size_t *arg_off;
  size_t args_bytes;
  void **values;
  int64_t *lo, *hi;         /* per parameter: its byte footprint (aliasing check) */
  unsigned char *tmaps;     /* CUDA: the kernel's TMA tensor maps (128 bytes each, 64-aligned) */
  KxEnv env;
  bool dims_const;          /* launch dimensions known at compile: `dims`, not evaluated */
  cf_launch_params dims;
};

void exec_plan_free(ExecPlan *b) {
  if (!b) return;
  free(b->off);
  free(b->want);
  free(b->sizes);
  free(b->strides);
  free(b->size_rows);
  free(b->stride_rows);
  free(b->tensors);
  free(b->allocated);
  free(b->lo);
  free(b->hi);
  free(b->args);
  free(b->arg_off);
  free(b->values);
  free(b->tmaps);
  free(b);
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Row offsets, constant extents and argument slots of every parameter of k. */
static void plan_layout(ExecPlan *b, const KKernel *k) {
  int row = 0;
  size_t arg = 0;
  for (int p = 0; p < k->nparams; p++) {
    const KTensor *t = k->params[p];
    b->off[p] = row;
    for (int a = 0; a < t->rank; a++)
      if (!kx_is_const(t->extents[a], &b->want[row + a])) b->want[row + a] = -1;
    row += t->rank > t->alloc_rank ? t->rank : t->alloc_rank;
    b->arg_off[p] = arg;
    arg += round16(exec_tensor_arg_size(t->rank, t->alloc_rank, b->index_bytes));
    if (!t->is_output && !t->is_workspace) b->nin = p + 1;
    if (t->is_output) b->nout++;
  }
}

cf_status exec_plan_make(const KKernel *k, ExecPlan **out) {
  *out = NULL;
  ExecPlan *b = calloc(1, sizeof *b);
  if (!b) return CF_ERR_OUT_OF_MEMORY;
  size_t n = (size_t)k->nparams + (size_t)k->ntmaps + 1, rows = 1, args = 16;
  for (int p = 0; p < k->nparams; p++) {
    const KTensor *t = k->params[p];
    rows += (size_t)(t->rank > t->alloc_rank ? t->rank : t->alloc_rank);
    args += round16(exec_tensor_arg_size(t->rank, t->alloc_rank, k->index32 ? 4 : 8));
  }
  b->nparams = k->nparams;
  b->index_bytes = k->index32 ? 4 : 8;
  b->off = calloc(n, sizeof *b->off);
  b->want = calloc(rows, sizeof *b->want);
  b->sizes = calloc(rows, sizeof *b->sizes);
  b->strides = calloc(rows, sizeof *b->strides);
  b->size_rows = calloc(n, sizeof *b->size_rows);
  b->stride_rows = calloc(n, sizeof *b->stride_rows);
  b->tensors = calloc(n, sizeof *b->tensors);
  b->allocated = calloc(n, sizeof *b->allocated);
  b->args = aligned_alloc(16, round16(args));
  b->arg_off = calloc(n, sizeof *b->arg_off);
  b->values = calloc(n, sizeof *b->values);
  b->lo = calloc(n, sizeof *b->lo);
  b->hi = calloc(n, sizeof *b->hi);
  b->tmaps = aligned_alloc(64, 128 * ((size_t)k->ntmaps + 1));
  if (!b->tmaps || !b->lo || !b->hi || !b->off || !b->want || !b->sizes || !b->strides || !b->size_rows || !b->stride_rows || !b->tensors ||
      !b->allocated || !b->args || !b->arg_off || !b->values) {
    exec_plan_free(b);
    return CF_ERR_OUT_OF_MEMORY;
  }
  b->args_bytes = args;
  plan_layout(b, k);
  for (int p = 0; p < k->nparams; p++) {
    b->size_rows[p] = b->sizes + b->off[p];
    b->stride_rows[p] = b->strides + b->off[p];
    b->values[p] = b->args + b->arg_off[p];
  }
  for (int m = 0; m < k->ntmaps; m++) b->values[k->nparams + m] = b->tmaps + 128 * (size_t)m; /* after the tensors */
  b->env = (KxEnv){.nparams = k->nparams, .sizes = b->size_rows, .strides = b->stride_rows};
  b->dims_const = kx_is_const(k->smem, &b->dims.smem);
  for (int d = 0; d < 3; d++)
    b->dims_const = b->dims_const && kx_is_const(k->grid[d], &b->dims.grid[d]) && kx_is_const(k->block[d], &b->dims.block[d]);
  *out = b;
  return CF_OK;
}

static cf_status check_strides(cf_executor *e, const char *what, int i, const KTensor *p, const DLTensor *t) {
  int64_t expect;
  int a = ir_dl_noncontiguous_axis(t, &expect);
  if (a >= 0)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                      "run: %s %d (%s) has stride %lld in dimension %d where the fusion promised a contiguous "
                      "tensor (stride %lld); make it with cf_tensor_strided for arbitrary strides",
                      what, i, p->name, (long long)t->strides[a], a, (long long)expect);
  return CF_OK;
}

/* Sizes that are not negative, whose byte count fits in int64, and a data pointer for
 * any tensor that holds an element. */
static cf_status check_storage(cf_executor *e, const char *what, int i, const KTensor *p, const DLTensor *t) {
  int64_t numel;
  size_t bytes;
  if (t->ndim > 0 && !t->shape)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has no shape", what, i, p->name);
  for (int a = 0; a < t->ndim; a++)
    if (t->shape[a] < 0)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has negative size %lld in dimension %d", what, i,
                        p->name, (long long)t->shape[a], a);
  if (!ck_numel(t->ndim, t->shape, &numel) || !ck_bytes(numel, cf_dtype_size(p->dtype), 1, &bytes))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has sizes whose byte count overflows int64", what, i,
                      p->name);
  if (numel > 0 && !t->data)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has a NULL data pointer", what, i, p->name);
  return CF_OK;
}

/* The largest address user memory has on today's 64-bit machines (x86-64 and AArch64 with
 * 5-level page tables; CUDA's unified address space lies below): bytes beyond it exist
 * nowhere. */
#define EXEC_MAX_ADDRESS ((uint64_t)1 << 57)

/* Where the elements are: data + byte_offset, and every byte the strides reach from it,
 * must lie in the address space (a byte_offset of 2^62 or 2^63 was read anyway), and
 * element 0 must sit at a multiple of the element size (a GPU faults on a float at a
 * 2-byte boundary; the host would read it torn). */
static cf_status check_address(cf_executor *e, const char *what, int i, const KTensor *p, const DLTensor *t) {
  uint64_t base = (uint64_t)(uintptr_t)t->data, addr = base + t->byte_offset;
  size_t esz = cf_dtype_size(p->dtype);
  int64_t lo = 0, hi = 0;
  if (t->byte_offset > EXEC_MAX_ADDRESS || addr < base || addr > EXEC_MAX_ADDRESS ||
      !exec_byte_range(t, p->dtype, &lo, &hi) || lo < 0 || (uint64_t)hi > EXEC_MAX_ADDRESS)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has byte_offset %llu, which with its sizes and "
                      "strides puts its data outside the address space", what, i, p->name,
                      (unsigned long long)t->byte_offset);
  if (esz > 1 && addr % esz)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) starts %llu bytes past a multiple of %zu bytes; its "
                      "%s elements must be aligned to their size", what, i, p->name, (unsigned long long)(addr % esz),
                      esz, cf_dtype_name(p->dtype));
  return CF_OK;
}

static cf_status check_tensor(cf_executor *e, const char *what, int i, int param, const DLTensor *t) {
  const KTensor *p = e->cc->k->params[param];
  const int64_t *want = e->plan->want + e->plan->off[param];
  cf_dtype dt;
  if (!t) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is NULL", what, i, p->name);
  if (!ir_dtype_from_dl(t->dtype, &dt) || dt != p->dtype)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has dtype %s, expected %s", what, i, p->name,
                      ir_dtype_from_dl(t->dtype, &dt) ? cf_dtype_name(dt) : "unsupported", cf_dtype_name(p->dtype));
  if (t->ndim != p->rank)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has %d dimensions, expected %d", what, i, p->name,
                      t->ndim, p->rank);
  /* A parameter whose elements the kernel never touches (lower/param_use.c) may be in any
   * memory: its sizes and strides are all the kernel reads. */
  if (p->data_used && !exec_backend_reads(e->cc->backend, t->device.device_type))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is in %s, but the kernel accesses its elements "
                      "and the %s backend needs %s", what, i, p->name, exec_memory_name(t->device.device_type),
                      e->cc->backend == CF_BACKEND_HOST ? "host" : "CUDA",
                      e->cc->backend == CF_BACKEND_HOST ? "host memory" : "device memory");
  cf_status st = check_storage(e, what, i, p, t);
  if (st) return st;
  if (!ir_packed_rows_whole(p->dtype, t->ndim, t->shape))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has dtype %s, two elements per byte, and innermost "
                      "extent %lld; it must be even", what, i, p->name, cf_dtype_name(p->dtype),
                      (long long)t->shape[t->ndim - 1]);
  for (int a = 0; a < p->rank; a++) {
    if (p->broadcast[a] && t->shape[a] != 1)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has size %lld in dimension %d, a broadcast axis of size 1",
                        what, i, p->name, (long long)t->shape[a], a);
    if (want[a] >= 0 && t->shape[a] != want[a])
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has size %lld in dimension %d, expected %lld", what,
                        i, p->name, (long long)t->shape[a], a, (long long)want[a]);
  }
  cf_status s;
  if (p->contiguous && t->strides && (s = check_strides(e, what, i, p, t))) return s;
  if (!p->data_used) return CF_OK; /* where its data lies and how it is aligned concern no access */
  if ((s = check_address(e, what, i, p, t))) return s;
  uintptr_t addr = (uintptr_t)t->data + t->byte_offset;
  if (p->vector_bytes > 1 && addr % (uintptr_t)p->vector_bytes)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is not aligned to %d bytes, which its vectorized access needs",
                      what, i, p->name, p->vector_bytes);
  return CF_OK;
}

static void bind(ExecPlan *b, int p, const DLTensor *t) {
  int64_t stride = 1, *sizes = b->sizes + b->off[p], *strides = b->strides + b->off[p];
  for (int a = t->ndim - 1; a >= 0; a--) {
    sizes[a] = t->shape[a];
    strides[a] = t->strides ? t->strides[a] : stride;
    stride *= t->shape[a];
  }
}

static cf_status eval(cf_executor *e, const KExpr *x, int64_t *out, const char *what) {
  if (!kx_eval(x, &e->plan->env, out))
    return exec_error(e, CF_ERR_INTERNAL, "internal error: cannot evaluate %s at run time; please report this bug", what);
  return CF_OK;
}

/* The sizes output p has for the bound inputs; refused when one is negative or their
 * byte count overflows (a wrapped count would allocate a buffer the kernel overruns). */
static cf_status output_sizes(cf_executor *e, int i, const KTensor *p, int64_t *sizes) {
  cf_status s;
  int64_t numel;
  size_t bytes;
  if (p->rank > EXEC_MAX_RANK)
    return exec_error(e, CF_ERR_UNSUPPORTED, "run: output %s has rank %d; a tensor may have at most %d dimensions",
                      p->name, p->rank, EXEC_MAX_RANK);
  for (int a = 0; a < p->rank; a++) {
    if ((s = eval(e, p->extents[a], &sizes[a], "an output size"))) return s;
    if (sizes[a] < 0)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: output %d (%s) would have negative size %lld in dimension %d",
                        i, p->name, (long long)sizes[a], a);
  }
  if (!ck_numel(p->rank, sizes, &numel) || !ck_bytes(numel, cf_dtype_size(p->dtype), 64, &bytes))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: output %d (%s) would have a byte count that overflows int64", i,
                      p->name);
  return CF_OK;
}

/* A caller's output must have exactly the sizes the fusion computes: the kernel writes
 * all of them, whatever the tensor says. */
static cf_status check_output_sizes(cf_executor *e, int i, const KTensor *p, const DLTensor *t) {
  int64_t sizes[EXEC_MAX_RANK];
  cf_status s = output_sizes(e, i, p, sizes);
  for (int a = 0; !s && a < p->rank; a++)
    if (t->shape[a] != sizes[a])
      s = exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: output %d (%s) has size %lld in dimension %d, but the fusion "
                     "computes %lld for these inputs", i, p->name, (long long)t->shape[a], a, (long long)sizes[a]);
  return s;
}

/* A new output for parameter p, its sizes evaluated from the bound inputs; on the device
 * of the run, in the order of its stream. */
static cf_status make_output(cf_executor *e, const RunTarget *rt, int i, const KTensor *p, DLManagedTensor **slot) {
  int64_t sizes[EXEC_MAX_RANK];
  cf_status s = output_sizes(e, i, p, sizes);
  if (s) return s;
  if (e->cc->backend == CF_BACKEND_HOST) {
    *slot = cf_tensor_host(p->dtype, p->rank, sizes);
    return *slot ? CF_OK : exec_error(e, CF_ERR_OUT_OF_MEMORY, "run: out of memory allocating output %s", p->name);
  }
  char err[512];
  s = exec_tensor_device_async(rt->device, rt->stream, p->dtype, p->rank, sizes, slot, err, sizeof err);
  return s ? exec_error(e, s, "run: allocating output %s: %s", p->name, err) : CF_OK;
}

static bool same_shape(const DLTensor *t, int rank, const int64_t *sizes) {
  if (t->ndim != rank) return false;
  for (int d = 0; d < rank; d++)
    if (t->shape[d] != sizes[d]) return false;
  return true;
}

/* A zeroed contiguous tensor of the given sizes for workspace parameter p on the run's
 * device (zeroed in the order of the run's stream), kept by the executor and reused by
 * later runs of the same sizes there (grid reductions leave their semaphores at zero;
 * intermediates are written before they are read). */
static cf_status workspace(cf_executor *e, const RunTarget *rt, const KTensor *p, int slot, const int64_t *sizes,
                           DLManagedTensor **out) {
  bool host = e->cc->backend == CF_BACKEND_HOST;
  DLManagedTensor *w = e->work[slot];
  if (w && w->dl_tensor.dtype.bits == cf_dtype_size(p->dtype) * 8 && same_shape(&w->dl_tensor, p->rank, sizes) &&
      (host || w->dl_tensor.device.device_id == rt->device)) {
    *out = w;
    return CF_OK;
  }
  cf_tensor_free(w);
  e->work[slot] = NULL;
  size_t bytes = 0;
  if (host) {
    w = cf_tensor_host(p->dtype, p->rank, sizes);
    if (!w) return exec_error(e, CF_ERR_OUT_OF_MEMORY, "run: out of memory for %s", p->name);
    memset(w->dl_tensor.data, 0, cf_dtype_storage_bytes(p->dtype, (size_t)cf_tensor_numel(&w->dl_tensor)));
  } else {
    char err[512] = "";
    cf_status s = exec_tensor_device_on(rt->device, p->dtype, p->rank, sizes, &w, err, sizeof err);
    if (!s) bytes = cf_dtype_storage_bytes(p->dtype, (size_t)cf_tensor_numel(&w->dl_tensor));
    if (!s) s = exec_mem_zero_async(rt->device, (ExecDevPtr)(uintptr_t)w->dl_tensor.data, bytes, rt->stream, err,
                                    sizeof err);
    if (s) {
      cf_tensor_free(w);
      return exec_error(e, s, "run: allocating %s on cuda:%d: %s", p->name, rt->device, err);
    }
  }
  *out = e->work[slot] = w;
  return CF_OK;
}

/* The workspaces, after the outputs (intermediates in global memory, then the grid
 * reductions' buffers): sized from the bound arguments. */
static cf_status bind_workspaces(cf_executor *e, const RunTarget *rt) {
  ExecPlan *b = e->plan;
  const KKernel *k = e->cc->k;
  for (int p = b->nin + b->nout, slot = 0; p < k->nparams; p++) {
    const KTensor *t = k->params[p];
    if (slot >= EXEC_MAX_WORK || t->rank > EXEC_MAX_RANK)
      return exec_error(e, CF_ERR_UNSUPPORTED, "run: the kernel needs more than %d workspace buffers of rank %d at "
                        "most (global intermediates and grid-reduction buffers)", EXEC_MAX_WORK, EXEC_MAX_RANK);
    int64_t sizes[EXEC_MAX_RANK];
    DLManagedTensor *w = NULL;
    cf_status s = CF_OK;
    for (int d = 0; !s && d < t->rank; d++) {
      s = eval(e, t->extents[d], &sizes[d], "a workspace size");
      if (!s && sizes[d] < 1) sizes[d] = 1;
    }
    if (!s) s = workspace(e, rt, t, slot++, sizes, &w);
    if (s) return s;
    bind(b, p, &w->dl_tensor);
    b->tensors[p] = &w->dl_tensor;
  }
  return CF_OK;
}

static cf_status bind_inputs(cf_executor *e, const DLTensor *const *in) {
  ExecPlan *b = e->plan;
  for (int i = 0; i < b->nin; i++) {
    cf_status s = check_tensor(e, "input", i, i, in[i]);
    if (s) return s;
    bind(b, i, in[i]);
    b->tensors[i] = (DLTensor *)(uintptr_t)in[i];
  }
  return CF_OK;
}

static cf_status bind_outputs(cf_executor *e, const RunTarget *rt, DLManagedTensor **out) {
  ExecPlan *b = e->plan;
  const KKernel *k = e->cc->k;
  for (int i = 0; i < b->nout; i++) {
    int p = b->nin + i;
    cf_status s;
    if (!out[i] && (s = make_output(e, rt, i, k->params[p], &b->allocated[p]))) return s;
    DLManagedTensor *m = out[i] ? out[i] : b->allocated[p];
    if ((s = check_tensor(e, "output", i, p, &m->dl_tensor)) ||
        (out[i] && (s = check_output_sizes(e, i, k->params[p], &m->dl_tensor))))
      return s;
    bind(b, p, &m->dl_tensor);
    b->tensors[p] = &m->dl_tensor;
  }
  return bind_workspaces(e, rt);
}

/* floor(a / 2), for a packed element's byte (a negative offset's too); no step of it can
 * overflow, INT64_MIN included. */
static int64_t half_floor(int64_t a) { return a / 2 - (a < 0 && a % 2 != 0); }

bool exec_byte_range(const DLTensor *t, cf_dtype dt, int64_t *lo, int64_t *hi) {
  int64_t esz = (int64_t)cf_dtype_size(dt);
  int64_t neg = 0, pos = 0, row = 1;
  *lo = *hi = 0;
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t stride = t->strides ? t->strides[d] : row, step;
    if (t->shape[d] == 0) return true;
    if (!ck_mul(t->shape[d] - 1, stride, &step) || !ck_add(step < 0 ? neg : pos, step, step < 0 ? &neg : &pos))
      return false;
    if (!t->strides && !ck_mul(row, t->shape[d], &row)) return false;
  }
  int64_t base = (int64_t)((uintptr_t)t->data + t->byte_offset);
  if (ir_dtype_is_packed(dt)) /* two elements a byte: element e lies in byte e / 2 */
    return ck_add(base, half_floor(neg), lo) && ck_add(half_floor(pos), 1, &pos) && ck_add(base, pos, hi);
  return ck_mul(neg, esz, &neg) && ck_add(pos, 1, &pos) && ck_mul(pos, esz, &pos) && ck_add(base, neg, lo) &&
         ck_add(base, pos, hi);
}

bool exec_index_extent(const DLTensor *t, int64_t *numel, int64_t *span) {
  int64_t neg = 0, pos = 0, n = 1, row = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t stride = t->strides ? t->strides[d] : row, step;
    if (!ck_mul(n, t->shape[d], &n)) return false;
    if (t->shape[d] == 0) continue;
    if (!ck_mul(t->shape[d] - 1, stride, &step) || !ck_add(step < 0 ? neg : pos, step, step < 0 ? &neg : &pos))
      return false;
    if (!t->strides && !ck_mul(row, t->shape[d], &row)) return false;
  }
  if (neg == INT64_MIN) return false; /* its magnitude is not an int64 */
  *numel = n;
  *span = n == 0 ? 0 : pos > -neg ? pos : -neg;
  return true;
}

/* A kernel of 32-bit indices (KKernel.index32) reads every tensor's elements and offsets
 * as int: each must be below 2^31 (a kernel of constant sizes had this proved when it was
 * lowered; one of symbolic sizes, made with CF_INDEX_32, is checked here, every run:
 * KKernel.index32_checked). */
static cf_status check_index32(cf_executor *e) {
  const KKernel *k = e->cc->k;
  for (int p = 0; k->index32_checked && p < k->nparams; p++) {
    int64_t n = -1, span = -1;
    if (!exec_index_extent(e->plan->tensors[p], &n, &span) || n > INT32_MAX || span > INT32_MAX)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s (argument %d) is too large for this kernel's 32-bit "
                        "indexing (cf_executor_options.index_type): %lld elements, largest offset %lld; both must "
                        "be below 2^31", k->params[p]->name, p, (long long)n, (long long)span);
  }
  return CF_OK;
}

/* No output may share memory with an input or another output: a kernel reads and
 * writes elements in any order across threads, so an alias gives wrong results (cfuser
 * has no in-place ops to declare one). Inputs may alias each other: they are only read. */
static cf_status check_aliasing(cf_executor *e) {
  ExecPlan *b = e->plan;
  const KKernel *k = e->cc->k;
  int64_t *lo = b->lo, *hi = b->hi;
  for (int p = 0; p < k->nparams; p++) {
    if (!k->params[p]->data_used) { /* no byte of it is touched: it aliases nothing */
      lo[p] = hi[p] = 0;
      continue;
    }
    if (!exec_byte_range(b->tensors[p], k->params[p]->dtype, &lo[p], &hi[p]))
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: argument %d (%s) has strides whose byte footprint overflows",
                        p, k->params[p]->name);
  }
  for (int p = b->nin; p < b->nin + b->nout; p++)
    for (int q = 0; q < p; q++)
      if (lo[p] < hi[p] && lo[q] < hi[q] && lo[p] < hi[q] && lo[q] < hi[p])
        return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                          "run: output %d (%s) overlaps %s %d (%s) in memory; outputs may not alias inputs or other "
                          "outputs", p - b->nin, k->params[p]->name, q < b->nin ? "input" : "output",
                          q < b->nin ? q : q - b->nin, k->params[q]->name);
  return CF_OK;
}

/* CUDA's launch limits, which the host backend emulates too. */
static const int64_t max_grid[3] = {INT32_MAX, 65535, 65535}, max_block[3] = {1024, 1024, 64};
enum { MAX_BLOCK_THREADS = 1024 };

/* True when every output is empty: there is nothing to compute, whatever the launch. */
static bool outputs_empty(const ExecPlan *b) {
  for (int p = b->nin; p < b->nin + b->nout; p++)
    if (cf_tensor_numel(b->tensors[p]) != 0) return false;
  return b->nout > 0;
}

static cf_status check_launch(cf_executor *e) {
  const int64_t *g = e->last.grid, *t = e->last.block;
  for (int d = 0; d < 3; d++)
    if (g[d] < 1 || g[d] > max_grid[d] || t[d] < 1 || t[d] > max_block[d] ||
        (d == 2 && t[0] * t[1] * t[2] > MAX_BLOCK_THREADS))
      return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                        "run: launch grid (%lld, %lld, %lld) block (%lld, %lld, %lld) for these input sizes is outside "
                        "the limits: grid x 1..%lld, y and z 1..%lld; block x and y 1..%lld, z 1..%lld, at most %d "
                        "threads",
                        (long long)g[0], (long long)g[1], (long long)g[2], (long long)t[0], (long long)t[1],
                        (long long)t[2], (long long)max_grid[0], (long long)max_grid[1], (long long)max_block[0],
                        (long long)max_block[2], MAX_BLOCK_THREADS);
  return CF_OK;
}

static cf_status run_checks(cf_executor *e) {
  for (int i = 0; i < e->cc->k->nchecks; i++) {
    int64_t v;
    cf_status s = eval(e, e->cc->k->checks[i].cond, &v, "a run-time check");
    if (s) return s;
    if (!v) return exec_error(e, CF_ERR_INVALID_SCHEDULE, "%s", e->cc->k->checks[i].message);
  }
  return CF_OK;
}

static cf_status launch_dims(cf_executor *e) {
  cf_status s;
  if (e->plan->dims_const) {
    e->last = e->plan->dims;
    return CF_OK;
  }
  for (int d = 0; d < 3; d++)
    if ((s = eval(e, e->cc->k->grid[d], &e->last.grid[d], "the grid size")) ||
        (s = eval(e, e->cc->k->block[d], &e->last.block[d], "the block size")))
      return s;
  return eval(e, e->cc->k->smem, &e->last.smem, "the shared-memory size");
}

/* The tensor maps of the kernel's TMA loads (lower/tma.c): what TMA reads must be 16-byte
 * aligned, in strides of 16-byte multiples (checked for both backends, with the tensor's
 * name); on CUDA, encoded into the plan's map slots in the run's device's context. */
static cf_status tensor_maps(cf_executor *e, const RunTarget *rt) {
  const KKernel *k = e->cc->k;
  ExecPlan *b = e->plan;
  for (int m = 0; m < k->ntmaps; m++) {
    const KTmaMap *map = &k->tmaps[m];
    const KTensor *p = k->params[map->param];
    const DLTensor *t = b->tensors[map->param];
    uint64_t addr = (uint64_t)(uintptr_t)t->data + t->byte_offset, dims[KN_TMA_MAX_RANK], strides[KN_TMA_MAX_RANK];
    uint32_t box[KN_TMA_MAX_RANK];
    int esz = (int)cf_dtype_size(p->dtype);
    bool ok = addr % 16 == 0;
    for (int d = 0; d < map->rank; d++) {
      int a = p->rank - 1 - d;
      dims[d] = (uint64_t)b->size_rows[map->param][a], box[d] = (uint32_t)map->box[d];
      strides[d] = (uint64_t)b->stride_rows[map->param][a] * (uint64_t)esz;
      ok = ok && dims[d] >= 1 && dims[d] <= ((uint64_t)1 << 32) && (d == 0 || (strides[d] % 16 == 0 && strides[d] < ((uint64_t)1 << 40)));
    }
    if (!ok)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s is read by TMA (cf_tma_load), which needs its data at a "
                        "16-byte aligned address, its strides multiples of 16 bytes and its sizes from 1 to 2^32",
                        p->name);
    if (e->cc->backend != CF_BACKEND_CUDA) continue; /* the host kernel makes its map from the tensor */
    char err[512];
    cf_status s = exec_tensor_map_encode(rt->device, b->tmaps + 128 * (size_t)m, esz, map->rank, addr, dims,
                                         strides + 1, box, map->swizzle, err, sizeof err);
    if (s) return exec_error(e, s, "run: the tensor map of %s: %s", p->name, err);
  }
  return CF_OK;
}

static cf_status pack_args(cf_executor *e, const RunTarget *rt) {
  const KKernel *k = e->cc->k;
  ExecPlan *b = e->plan;
  char err[512];
  cf_status s0 = check_index32(e);
  if (!s0) s0 = tensor_maps(e, rt);
  if (s0) return s0;
  for (int p = 0; p < k->nparams; p++) {
    const DLTensor *t = b->tensors[p];
    uint64_t data = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    size_t cap = b->args_bytes - b->arg_off[p];
    cf_status s = exec_pack_tensor_arg_parts(data, k->params[p]->rank, b->size_rows[p], k->params[p]->alloc_rank,
                                             b->stride_rows[p], b->index_bytes, b->values[p], cap, err, sizeof err);
    if (s) return exec_error(e, s, "run: argument %d (%s): %s", p, k->params[p]->name, err);
  }
  return CF_OK;
}

static cf_status launch(cf_executor *e, const RunTarget *rt) {
  cf_status s = pack_args(e, rt);
  if (s) return s;
  if (e->cc->backend == CF_BACKEND_HOST) {
    ExecHostError herr = {{0}, NULL, NULL};
    s = exec_host_call_launch(e->cc->call, e->last.grid, e->last.block, e->last.smem, e->plan->values, &herr);
    if (s) exec_error(e, s, "run: %s", herr.msg);
    exec_host_error_clear(&herr);
    return s;
  }
  return exec_run_launch_cuda(e, rt, e->plan->values);
}

/* CFUSER_DUMP=launch: the launch configuration and the time of the launch call (on CUDA
 * the launch alone: runs are asynchronous; on the host backend the whole run). */
static cf_status timed_launch(cf_executor *e, const RunTarget *rt) {
  if (!lower_dump_requested("launch")) return launch(e, rt);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cf_status s = launch(e, rt);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const cf_launch_params *p = &e->last;
  fprintf(lower_dump_out(), "=== launch of %s (%s): grid (%lld, %lld, %lld), block (%lld, %lld, %lld), %lld bytes of "
          "dynamic shared memory: %.1f us%s ===\n", e->cc->k->name,
          e->cc->backend == CF_BACKEND_HOST ? "host" : "cuda", (long long)p->grid[0], (long long)p->grid[1],
          (long long)p->grid[2], (long long)p->block[0], (long long)p->block[1], (long long)p->block[2],
          (long long)p->smem, (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3,
          s ? ", failed" : "");
  return s;
}

static cf_status check_counts(cf_executor *e, int ninputs, const DLTensor *const *inputs, int noutputs,
                              DLManagedTensor **outputs) {
  if (!e->cc) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: the executor has no compiled kernel");
  if (e->cc->compile_only)
    return exec_error(e, CF_ERR_NO_DEVICE, "run: the kernel was compiled for %s without a matching device; it "
                      "cannot run here", e->opts.arch ? e->opts.arch : "another architecture");
  int nin = e->plan->nin;
  if (ninputs != nin) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: expected %d inputs, got %d", nin, ninputs);
  if (nin && !inputs)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: the array of %d inputs is NULL", nin);
  if (noutputs != e->plan->nout)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: expected %d outputs, got %d", e->plan->nout, noutputs);
  if (noutputs && !outputs)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: the array of %d outputs is NULL (pass an array of NULL "
                      "pointers for outputs the executor allocates)", noutputs);
  return CF_OK;
}

cf_status cf_executor_run_async(cf_executor *e, void *stream, int ninputs, const DLTensor *const *inputs,
                                int noutputs, DLManagedTensor **outputs) {
  if (!e) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&e->error);
  cf_status s = check_counts(e, ninputs, inputs, noutputs, outputs);
  if (s) return s;
  ExecPlan *b = e->plan;
  RunTarget rt = {0, stream, NULL, NULL};
  memset(b->allocated, 0, sizeof *b->allocated * (size_t)b->nparams);
  s = bind_inputs(e, inputs);
  if (!s && e->cc->backend == CF_BACKEND_CUDA) s = exec_run_target_cuda(e, ninputs, inputs, noutputs, outputs, &rt);
  if (!s) s = bind_outputs(e, &rt, outputs);
  if (!s) s = check_aliasing(e);
  if (!s) s = run_checks(e);
  if (!s) s = launch_dims(e);
  /* Zero-size outputs: no launch (a grid of 0 blocks is not a valid launch). */
  bool skip = !s && outputs_empty(b);
  if (!s && !skip) s = check_launch(e);
  if (!s && !skip) s = timed_launch(e, &rt);
  for (int i = 0; i < noutputs; i++) {
    DLManagedTensor **a = &b->allocated[b->nin + i];
    if (s) cf_tensor_free(*a);
    else if (!outputs[i]) outputs[i] = *a;
    *a = NULL;
  }
  return s;
}

cf_status cf_executor_run(cf_executor *e, int ninputs, const DLTensor *const *inputs, int noutputs,
                          DLManagedTensor **outputs) {
  cf_status s = cf_executor_run_async(e, NULL, ninputs, inputs, noutputs, outputs);
  if (s || e->cc->backend == CF_BACKEND_HOST) return s;
  return cf_executor_synchronize(e);
}
