/* executor/run.c: cf_executor_run: checks the DLPack arguments against the kernel's
 * parameters (count, dtype, rank, concrete sizes, device, strides against promised
 * contiguity, alignment of vectorized tensors), binds sizes and strides, evaluates the
 * run-time checks and launch dimensions, allocates missing outputs, packs the by-value
 * tensor arguments and launches on the chosen backend.
 * Key decision: every check happens before anything is allocated or launched, and each
 * message names the argument, its tensor and the axis, so a bad call is cheap and clear. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"
#include "ir/checked.h"
#include "ir/dtype.h"

enum { MAX_PARAMS = EXEC_MAX_PARAMS, MAX_RANK = CF_MAX_RANK };

typedef struct Binding {
  int64_t sizes[MAX_PARAMS][MAX_RANK];
  int64_t strides[MAX_PARAMS][MAX_RANK];
  const int64_t *size_rows[MAX_PARAMS];
  const int64_t *stride_rows[MAX_PARAMS];
  DLTensor *tensors[MAX_PARAMS];
  DLManagedTensor *allocated[MAX_PARAMS];
  KxEnv env;
} Binding;

static const char *device_name(DLDeviceType t) {
  switch (t) {
  case kDLCPU: return "host memory (kDLCPU)";
  case kDLCUDA: return "device memory (kDLCUDA)";
  case kDLCUDAHost: return "pinned host memory (kDLCUDAHost)";
  case kDLCUDAManaged: return "managed memory (kDLCUDAManaged)";
  default: return "an unsupported device";
  }
}

static bool device_ok(cf_backend b, DLDeviceType t) {
  return b == CF_BACKEND_HOST ? (t == kDLCPU || t == kDLCUDAHost) : (t == kDLCUDA || t == kDLCUDAManaged);
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

static cf_status check_tensor(cf_executor *e, const char *what, int i, const KTensor *p, const DLTensor *t) {
  cf_dtype dt;
  if (!t) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is NULL", what, i, p->name);
  if (!ir_dtype_from_dl(t->dtype, &dt) || dt != p->dtype)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has dtype %s, expected %s", what, i, p->name,
                      ir_dtype_from_dl(t->dtype, &dt) ? cf_dtype_name(dt) : "unsupported", cf_dtype_name(p->dtype));
  if (t->ndim != p->rank)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has %d dimensions, expected %d", what, i, p->name,
                      t->ndim, p->rank);
  if (!device_ok(e->cc->backend, t->device.device_type))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is in %s, but the %s backend needs %s", what, i,
                      p->name, device_name(t->device.device_type), e->cc->backend == CF_BACKEND_HOST ? "host" : "CUDA",
                      e->cc->backend == CF_BACKEND_HOST ? "host memory" : "device memory");
  cf_status s = check_storage(e, what, i, p, t);
  if (s) return s;
  for (int a = 0; a < p->rank; a++) {
    int64_t want;
    if (p->broadcast[a] && t->shape[a] != 1)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has size %lld in dimension %d, a broadcast axis of size 1",
                        what, i, p->name, (long long)t->shape[a], a);
    if (kx_is_const(p->extents[a], &want) && t->shape[a] != want)
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) has size %lld in dimension %d, expected %lld", what,
                        i, p->name, (long long)t->shape[a], a, (long long)want);
  }
  if (p->contiguous && t->strides) {
    int64_t expect = 1;
    for (int a = p->rank - 1; a >= 0; a--) {
      if (t->shape[a] != 1 && t->strides[a] != expect)
        return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                          "run: %s %d (%s) has stride %lld in dimension %d where the fusion promised a contiguous "
                          "tensor (stride %lld); make it with cf_tensor_strided for arbitrary strides",
                          what, i, p->name, (long long)t->strides[a], a, (long long)expect);
      expect *= t->shape[a];
    }
  }
  uintptr_t addr = (uintptr_t)t->data + t->byte_offset;
  if (p->vector_bytes > 1 && addr % (uintptr_t)p->vector_bytes)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: %s %d (%s) is not aligned to %d bytes, which its vectorized access needs",
                      what, i, p->name, p->vector_bytes);
  return CF_OK;
}

static void bind(Binding *b, int p, const DLTensor *t) {
  int64_t stride = 1;
  for (int a = t->ndim - 1; a >= 0; a--) {
    b->sizes[p][a] = t->shape[a];
    b->strides[p][a] = t->strides ? t->strides[a] : stride;
    stride *= t->shape[a];
  }
  b->size_rows[p] = b->sizes[p];
  b->stride_rows[p] = b->strides[p];
}

static cf_status eval(cf_executor *e, Binding *b, const KExpr *x, int64_t *out, const char *what) {
  if (!kx_eval(x, &b->env, out))
    return exec_error(e, CF_ERR_INTERNAL, "internal error: cannot evaluate %s at run time; please report this bug", what);
  return CF_OK;
}

/* The sizes output p has for the bound inputs; refused when one is negative or their
 * byte count overflows (a wrapped count would allocate a buffer the kernel overruns). */
static cf_status output_sizes(cf_executor *e, Binding *b, int i, const KTensor *p, int64_t *sizes) {
  cf_status s;
  int64_t numel;
  size_t bytes;
  for (int a = 0; a < p->rank; a++) {
    if ((s = eval(e, b, p->extents[a], &sizes[a], "an output size"))) return s;
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
static cf_status check_output_sizes(cf_executor *e, Binding *b, int i, const KTensor *p, const DLTensor *t) {
  int64_t sizes[MAX_RANK];
  cf_status s = output_sizes(e, b, i, p, sizes);
  for (int a = 0; !s && a < p->rank; a++)
    if (t->shape[a] != sizes[a])
      s = exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: output %d (%s) has size %lld in dimension %d, but the fusion "
                     "computes %lld for these inputs", i, p->name, (long long)t->shape[a], a, (long long)sizes[a]);
  return s;
}

static cf_status make_output(cf_executor *e, Binding *b, int i, const KTensor *p, DLManagedTensor **slot) {
  int64_t sizes[MAX_RANK];
  cf_status s = output_sizes(e, b, i, p, sizes);
  if (s) return s;
  if (e->cc->backend == CF_BACKEND_HOST) {
    *slot = cf_tensor_host(p->dtype, p->rank, sizes);
    return *slot ? CF_OK : exec_error(e, CF_ERR_OUT_OF_MEMORY, "run: out of memory allocating output %s", p->name);
  }
  char err[512];
  s = exec_tensor_device(p->dtype, p->rank, sizes, slot, err, sizeof err);
  return s ? exec_error(e, s, "run: allocating output %s: %s", p->name, err) : CF_OK;
}

static cf_status bind_all(cf_executor *e, Binding *b, int nin, const DLTensor *const *in, DLManagedTensor **out) {
  const KKernel *k = e->cc->k;
  int nout = k->nparams - nin;
  for (int i = 0; i < nin; i++) {
    cf_status s = check_tensor(e, "input", i, k->params[i], in[i]);
    if (s) return s;
    bind(b, i, in[i]);
    b->tensors[i] = (DLTensor *)(uintptr_t)in[i];
  }
  b->env = (KxEnv){k->nparams, b->size_rows, b->stride_rows};
  for (int i = 0; i < nout; i++) {
    int p = nin + i;
    cf_status s;
    if (!out[i] && (s = make_output(e, b, i, k->params[p], &b->allocated[p]))) return s;
    DLManagedTensor *m = out[i] ? out[i] : b->allocated[p];
    if ((s = check_tensor(e, "output", i, k->params[p], &m->dl_tensor)) ||
        (out[i] && (s = check_output_sizes(e, b, i, k->params[p], &m->dl_tensor))))
      return s;
    bind(b, p, &m->dl_tensor);
    b->tensors[p] = &m->dl_tensor;
  }
  return CF_OK;
}

/* The bytes [lo, hi) t's elements occupy (strides of any sign); empty for no elements.
 * False when the footprint overflows. */
static bool byte_range(const DLTensor *t, int64_t esz, int64_t *lo, int64_t *hi) {
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
  return ck_mul(neg, esz, &neg) && ck_mul(pos + 1, esz, &pos) && ck_add(base, neg, lo) && ck_add(base, pos, hi);
}

/* No output may share memory with an input or another output: a kernel reads and
 * writes elements in any order across threads, so an alias gives wrong results (cfuser
 * has no in-place ops to declare one). Inputs may alias each other: they are only read. */
static cf_status check_aliasing(cf_executor *e, const Binding *b, int nin) {
  const KKernel *k = e->cc->k;
  int64_t lo[MAX_PARAMS], hi[MAX_PARAMS];
  for (int p = 0; p < k->nparams; p++)
    if (!byte_range(b->tensors[p], (int64_t)cf_dtype_size(k->params[p]->dtype), &lo[p], &hi[p]))
      return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: argument %d (%s) has strides whose byte footprint overflows",
                        p, k->params[p]->name);
  for (int p = nin; p < k->nparams; p++)
    for (int q = 0; q < p; q++)
      if (lo[p] < hi[p] && lo[q] < hi[q] && lo[p] < hi[q] && lo[q] < hi[p])
        return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                          "run: output %d (%s) overlaps %s %d (%s) in memory; outputs may not alias inputs or other "
                          "outputs", p - nin, k->params[p]->name, q < nin ? "input" : "output", q < nin ? q : q - nin,
                          k->params[q]->name);
  return CF_OK;
}

static cf_status run_checks(cf_executor *e, Binding *b) {
  for (int i = 0; i < e->cc->k->nchecks; i++) {
    int64_t v;
    cf_status s = eval(e, b, e->cc->k->checks[i].cond, &v, "a run-time check");
    if (s) return s;
    if (!v) return exec_error(e, CF_ERR_INVALID_SCHEDULE, "%s", e->cc->k->checks[i].message);
  }
  return CF_OK;
}

/* CUDA's launch limits, which the host backend emulates too. */
static const int64_t max_grid[3] = {INT32_MAX, 65535, 65535}, max_block[3] = {1024, 1024, 64};
enum { MAX_BLOCK_THREADS = 1024 };

/* True when every output is empty: there is nothing to compute, whatever the launch. */
static bool outputs_empty(const Binding *b, int nin, int nparams) {
  for (int p = nin; p < nparams; p++)
    if (cf_tensor_numel(b->tensors[p]) != 0) return false;
  return nparams > nin;
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

static cf_status launch_dims(cf_executor *e, Binding *b) {
  cf_status s;
  for (int d = 0; d < 3; d++)
    if ((s = eval(e, b, e->cc->k->grid[d], &e->last.grid[d], "the grid size")) ||
        (s = eval(e, b, e->cc->k->block[d], &e->last.block[d], "the block size")))
      return s;
  return eval(e, b, e->cc->k->smem, &e->last.smem, "the shared-memory size");
}

static cf_status launch(cf_executor *e, Binding *b) {
  const KKernel *k = e->cc->k;
  int ib = k->index32 ? 4 : 8;
  _Alignas(16) unsigned char args[MAX_PARAMS][8 + 2 * MAX_RANK * 8];
  void *values[MAX_PARAMS];
  char err[1024];
  for (int p = 0; p < k->nparams; p++) {
    const DLTensor *t = b->tensors[p];
    uint64_t data = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    cf_status s = exec_pack_tensor_arg_parts(data, k->params[p]->rank, b->sizes[p], k->params[p]->alloc_rank,
                                             b->strides[p], ib, args[p], sizeof args[p], err, sizeof err);
    if (s) return exec_error(e, s, "run: argument %d (%s): %s", p, k->params[p]->name, err);
    values[p] = args[p];
  }
  if (e->cc->backend == CF_BACKEND_HOST) {
    ExecHostError herr = {{0}, NULL, NULL};
    cf_status s = exec_host_call_launch(e->cc->call, e->last.grid, e->last.block, e->last.smem, values, &herr);
    if (s) exec_error(e, s, "run: %s", herr.msg);
    exec_host_error_clear(&herr);
    return s;
  }
  cf_status s = exec_launch(&e->cc->kernel, e->last.grid, e->last.block, e->last.smem, values, err, sizeof err);
  if (!s) s = exec_synchronize(err, sizeof err);
  return s ? exec_error(e, s, "run: %s", err) : CF_OK;
}

static void free_allocated(Binding *b, int n) {
  for (int p = 0; p < n; p++) cf_tensor_free(b->allocated[p]);
}

cf_status cf_executor_run(cf_executor *e, int ninputs, const DLTensor *const *inputs, int noutputs,
                          DLManagedTensor **outputs) {
  if (!e) return CF_ERR_INVALID_ARGUMENT;
  if (!e->cc) return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: the executor has no compiled kernel");
  if (e->cc->compile_only)
    return exec_error(e, CF_ERR_NO_DEVICE, "run: the kernel was compiled for %s without a matching device; it "
                      "cannot run here", e->opts.arch ? e->opts.arch : "another architecture");
  int nin = 0;
  while (nin < e->cc->k->nparams && !e->cc->k->params[nin]->is_output) nin++;
  if (ninputs != nin || (nin && !inputs))
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: expected %d inputs, got %d", nin, ninputs);
  if (noutputs != e->cc->k->nparams - nin || !outputs)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT, "run: expected %d outputs, got %d", e->cc->k->nparams - nin, noutputs);
  Binding *b = calloc(1, sizeof *b);
  if (!b) return exec_error(e, CF_ERR_OUT_OF_MEMORY, "run: out of memory");
  cf_status s = bind_all(e, b, nin, inputs, outputs);
  if (!s) s = check_aliasing(e, b, nin);
  if (!s) s = run_checks(e, b);
  if (!s) s = launch_dims(e, b);
  /* Zero-size outputs: no launch (a grid of 0 blocks is not a valid launch). */
  bool skip = !s && outputs_empty(b, nin, e->cc->k->nparams);
  if (!s && !skip) s = check_launch(e);
  if (!s && !skip) s = launch(e, b);
  if (s) {
    free_allocated(b, e->cc->k->nparams);
  } else {
    for (int i = 0; i < noutputs; i++)
      if (!outputs[i]) outputs[i] = b->allocated[nin + i];
  }
  free(b);
  return s;
}
