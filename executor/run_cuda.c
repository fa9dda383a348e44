/* executor/run_cuda.c: the CUDA side of a run: which device, which loaded kernel, the
 * asynchronous launch, and cf_executor_synchronize.
 * A run goes to the device its tensors are on (DLPack device_id) with that device's
 * primary context, so it shares memory and streams with PyTorch and every other library
 * using the runtime API. Tensors on two devices are refused, and so is a device of another
 * architecture than the cubin's. The kernel is loaded into a device's context on the
 * first run there. The context is retained once per device (cuda_driver.c's slots) and
 * made current once per run, when the target is chosen: what the run does before its
 * launch works in that context (outputs, workspaces and tensor maps are made on the run's
 * device; a workspace left on another device is freed there before its replacement is
 * made here), so the launch finds it current and does not make it current again.
 * Key decision: nothing here synchronizes; a fault of a kernel surfaces at the next
 * driver call (a later run's launch) or at cf_executor_synchronize, and the message then
 * names the kernel the executor launched last, on which device. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"

static bool on_device(const DLTensor *t) {
  return t && (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged);
}

/* The one device of the run's tensors (inputs, then the caller's outputs); -1 if none. */
static cf_status common_device(cf_executor *e, int nin, const DLTensor *const *in, int nout,
                               DLManagedTensor **out, int *device) {
  const KKernel *k = e->cc->k;
  int first = -1;
  *device = -1;
  for (int i = 0; i < nin + nout; i++) {
    const DLTensor *t = i < nin ? in[i] : out[i - nin] ? &out[i - nin]->dl_tensor : NULL;
    if (!on_device(t)) continue;
    if (*device < 0) {
      *device = t->device.device_id;
      first = i;
    } else if (t->device.device_id != *device) {
      return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                        "run: %s %d (%s) is on cuda:%d, but %s %d (%s) is on cuda:%d; the tensors of a run "
                        "must all be on one device", i < nin ? "input" : "output", i < nin ? i : i - nin,
                        k->params[i]->name, (int)t->device.device_id, first < nin ? "input" : "output",
                        first < nin ? first : first - nin, k->params[first]->name, *device);
    }
  }
  return CF_OK;
}

/* The kernel loaded in device d's context: device 0's from compile, the others on demand. */
static cf_status kernel_on(cf_executor *e, int d, const ExecKernel **out) {
  Compiled *c = e->cc;
  char err[512];
  if (d == 0 && c->kernel.function) {
    *out = &c->kernel;
    return CF_OK;
  }
  if (d >= c->nkernels) {
    ExecKernel *ks = realloc(c->kernels, sizeof *ks * (size_t)(d + 1));
    if (!ks) return exec_error(e, CF_ERR_OUT_OF_MEMORY, "run: out of memory");
    memset(ks + c->nkernels, 0, sizeof *ks * (size_t)(d + 1 - c->nkernels));
    c->kernels = ks;
    c->nkernels = d + 1;
  }
  ExecKernel *k = &c->kernels[d];
  const char *name = c->cubin.lowered_name ? c->cubin.lowered_name : c->k->name;
  cf_status s = k->function ? CF_OK : exec_kernel_load_on(d, c->cubin.data, name, k, err, sizeof err);
  if (s) return exec_error(e, s, "run: loading kernel %s on cuda:%d: %s", c->k->name, d, err);
  *out = k;
  return CF_OK;
}

cf_status exec_run_target_cuda(cf_executor *e, int nin, const DLTensor *const *in, int nout,
                               DLManagedTensor **out, RunTarget *rt) {
  int d;
  cf_status s = common_device(e, nin, in, nout, out, &d);
  if (s) return s;
  rt->device = d < 0 ? 0 : d;
  const ExecDeviceInfo *info = NULL;
  char err[512];
  if ((s = exec_device_open(rt->device, &info, err, sizeof err)))
    return exec_error(e, s, "run: the tensors are on cuda:%d: %s", rt->device, err);
  rt->info = info;
  if (strcmp(info->arch, e->cc->cubin.arch) != 0)
    return exec_error(e, CF_ERR_INVALID_ARGUMENT,
                      "run: kernel %s was compiled for %s, but the tensors are on cuda:%d (%s, %s); compile "
                      "an executor for that device", e->cc->k->name, e->cc->cubin.arch, rt->device, info->name,
                      info->arch);
  return kernel_on(e, rt->device, &rt->kernel);
}

cf_status exec_run_launch_cuda(cf_executor *e, const RunTarget *rt, void **values) {
  char err[1024];
  /* rt->device's context, current since exec_run_target_cuda (see the top of this file) */
  cf_status s = e->cc->k->grid_sem /* grid syncs: every block resident at once */
                    ? exec_launch_cooperative_async(rt->kernel, rt->info, e->last.grid, e->last.block, e->last.smem,
                                                    rt->stream, values, err, sizeof err)
                    : exec_launch_async(rt->kernel, rt->info, e->last.grid, e->last.block, e->last.smem, rt->stream,
                                        values, err, sizeof err);
  if (s && e->launched)
    return exec_error(e, s, "run: launching kernel %s on cuda:%d: %s (the error may come from this executor's "
                      "earlier asynchronous launch of kernel %s on cuda:%d)", e->cc->k->name, rt->device, err,
                      e->cc->k->name, e->last_target.device);
  if (s) return exec_error(e, s, "run: launching kernel %s on cuda:%d: %s", e->cc->k->name, rt->device, err);
  e->launched = true;
  e->last_target = *rt;
  return CF_OK;
}

cf_status cf_executor_synchronize(cf_executor *e) {
  if (!e) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&e->error);
  if (!e->launched || !e->cc || e->cc->backend != CF_BACKEND_CUDA) return CF_OK;
  char err[1024];
  cf_status s = exec_stream_synchronize(e->last_target.device, e->last_target.stream, err, sizeof err);
  if (s)
    return exec_error(e, s, "synchronize: kernel %s failed on cuda:%d: %s", e->cc->k->name, e->last_target.device,
                      err);
  return CF_OK;
}
