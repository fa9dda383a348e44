/* executor/fusion_plan.c: what the define-and-run cache does for a call with a new
 * signature (fc_plan), on top of the scheduler registry (scheduler/registry.h):
 *   1. checks the inputs against the fusion (dtype, rank, constant sizes), each message
 *      naming the input and its tensor;
 *   2. copies the fusion with the call's sizes made constant, checks that the sizes agree
 *      at every op (ir_check_extents), splits the K of a product of few tiles and a deep K
 *      (sched_split_k) and makes every reshape a view (sched_prepare_views);
 *   3. plans the whole copy with the first row of the registry that accepts it; when none
 *      does, segments it by the greedy merge (sched_segment), asking the registry of each
 *      candidate group, and plans each segment (the fallback row takes any one op, so
 *      every segment has a plan);
 *   4. for each segment that is a kernel, applies its plan to a copy whose free sizes are
 *      symbolic (fusion_reuse.c; the concrete copy when the row cannot), devectorized when
 *      a tensor of the call is not 16-byte aligned, and gets its kernel: one compiled
 *      for an earlier signature with the same fingerprint, or a new one, with 32-bit
 *      indices when every tensor of the call is well within them (index_type_of); then
 *      allocates the intermediates between segments.
 * A row that accepted a segment and then fails to schedule it, or whose schedule lowering
 * refuses, is an internal error naming the row: the registry's invariant, never a retry.
 * CFUSER_DUMP=segments prints why the whole fusion was cut, each segment's plan, why the
 * rows before it refused, its math and whether its kernel is new or shared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "executor/fusion_cache.h"
#include "executor/exec_host.h"
#include "executor/executor_internal.h"
#include "ir/checked.h"
#include "ir/dtype.h"
#include "lower/lower.h"

typedef struct Planner {
  cf_fusion_cache *c;
  cf_fusion *w;               /* the concrete copy of the whole fusion */
  Val **fmap;                 /* c->f's Val id -> its copy in w */
  Arena *a;                   /* scratch */
  const DLTensor *const *in;
  int nin, nout;
  DLManagedTensor **out;
  PtrVec bufs;                /* Vals of w held in intermediates, by index */
  PtrVec views;               /* those a view row makes (a header pointed at its input) */
  bool dump;
  SchedDevice dev;            /* what the heuristics plan for (plan_device) */
  bool host;                  /* the backend the segments run on is the host */
  cf_index_type index;        /* of the signature's kernels (index_type_of) */
} Planner;

/* ---- 1. the inputs ------------------------------------------------------------------------ */

static cf_status check_sizes(cf_fusion_cache *c, int i, Val *tv, const DLTensor *t) {
  for (int d = 0; d < t->ndim; d++) {
    int64_t want;
    if (t->shape[d] < 0)
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has negative size %lld in dimension %d", i,
                      TV(tv)->display_name, (long long)t->shape[d], d);
    if (ir_scalar_const_value(ID(TV(tv)->logical[d])->extent, &want) && t->shape[d] != want)
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has size %lld in dimension %d, expected %lld",
                      i, TV(tv)->display_name, (long long)t->shape[d], d, (long long)want);
  }
  if (!ir_packed_rows_whole(tv->dtype, t->ndim, t->shape)) /* before a concrete copy's add_input refuses it */
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has dtype %s, two elements per byte, and "
                    "innermost extent %lld; it must be even", i, TV(tv)->display_name, cf_dtype_name(tv->dtype),
                    (long long)t->shape[t->ndim - 1]);
  int64_t numel;
  size_t bytes;
  if (!ck_numel(t->ndim, t->shape, &numel) || !ck_bytes(numel, cf_dtype_size(tv->dtype), 1, &bytes))
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has sizes whose byte count overflows int64", i,
                    TV(tv)->display_name);
  return CF_OK;
}

static cf_status check_inputs(cf_fusion_cache *c, const DLTensor *const *in) {
  for (int i = 0; i < c->f->inputs.len; i++) {
    Val *tv = c->f->inputs.items[i];
    const DLTensor *t = in[i];
    const char *name = TV(tv)->display_name;
    cf_dtype dt;
    char have[64];
    if (!t) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) is NULL", i, name);
    if (!ir_dtype_from_dl(t->dtype, &dt) || dt != tv->dtype) {
      ir_dl_type_str(t->dtype, have, sizeof have);
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has dtype %s, expected %s", i, name, have,
                      cf_dtype_name(tv->dtype));
    }
    if (t->ndim != TV(tv)->nlogical)
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has %d dimensions, expected %d", i, name,
                      t->ndim, TV(tv)->nlogical);
    if (t->ndim > 0 && !t->shape) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) has no shape", i, name);
    cf_status s = check_sizes(c, i, tv, t);
    if (s) return s;
  }
  return CF_OK;
}

/* ---- the device the heuristics plan for -------------------------------------------------- */

void fc_set_device(cf_fusion_cache *c, const SchedDevice *dev) { c->dev_override = dev; }

static bool cuda_usable(const char **reason) { return cf_cuda_available(reason); }

/* The test override; else the CUDA device the segments will compile for; else (the host
 * backend, or a device whose attributes cannot be read) the default description. */
static SchedDevice plan_device(const cf_fusion_cache *c) {
  if (c->dev_override) return *c->dev_override;
  SchedDevice d = *sched_device_default();
  cf_backend b;
  char err[256];
  const ExecDeviceInfo *in = NULL;
  if (exec_backend_choose(c->opts.backend, cuda_usable, &b, err, sizeof err) == CF_OK && b == CF_BACKEND_CUDA)
    in = exec_device_info();
  if (!in || in->num_sms <= 0) return d;
  d.sm_count = in->num_sms;
  /* a cooperative grid on the GPU: every thread resident (the host's 65536 held a float32
   * batch norm of 256 channels to 1190 GB/s on the H200, 1835 without it; the groups' folds
   * are bounded apart, SCHED_GRID_MAX_GROUP_BLOCKS) */
  if (in->max_threads_per_block > 0) d.max_threads_per_block = in->max_threads_per_block;
  if (in->max_threads_per_sm > 0) d.max_threads_per_sm = in->max_threads_per_sm;
  d.max_coop_threads = d.sm_count * d.max_threads_per_sm;
  if (in->regs_per_sm > 0) d.regs_per_sm = in->regs_per_sm;
  if (in->max_smem_optin > 0) d.smem_per_block = in->max_smem_optin;
  if (in->max_smem_per_sm > 0) d.smem_per_sm = in->max_smem_per_sm;
  if (in->l2_bytes > 0) d.l2_bytes = in->l2_bytes;
  if (in->cc_major < 9) d.max_cluster = 1;
  d.cc = in->cc_major * 10 + in->cc_minor;
  return d;
}

/* Whether the segments run on the host backend (where their buffers live). */
static bool plan_on_host(const cf_fusion_cache *c) {
  cf_backend b;
  char err[256];
  return exec_backend_choose(c->opts.backend, cuda_usable, &b, err, sizeof err) != CF_OK || b == CF_BACKEND_HOST;
}

/* ---- where a segment's tensors come from --------------------------------------------------- */

static int index_of(const PtrVec *v, const void *p) {
  for (int i = 0; i < v->len; i++)
    if (v->items[i] == p) return i;
  return -1;
}

/* The call slot of a tensor of w (see FcSegment); an intermediate gets the next buffer. */
static int ref_of(Planner *p, Val *tv) {
  int i = index_of(&p->w->inputs, tv);
  if (i >= 0) return i;
  if ((i = index_of(&p->w->outputs, tv)) >= 0) return p->nin + i;
  if ((i = index_of(&p->bufs, tv)) < 0) {
    ptrvec_push(p->a, &p->bufs, tv);
    i = p->bufs.len - 1;
  }
  return p->nin + p->nout + i;
}

/* The kept (non-reduction) extents of a tensor of the concrete copy. */
static int kept_sizes(Val *tv, int64_t *sizes) {
  int n = 0;
  for (int a = 0; a < TV(tv)->nlogical; a++)
    if (ID(TV(tv)->logical[a])->iter_type != CF_ITER_REDUCTION && ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &sizes[n]))
      n++;
  return n;
}

/* What the heuristics see of a tensor of w: the call's own (an input, or an output the
 * caller gives), or for one the executor allocates its sizes and a NULL data pointer. */
static const DLTensor *describe(Planner *p, Val *tv) {
  int i = index_of(&p->w->inputs, tv);
  if (i >= 0) return p->in[i];
  if ((i = index_of(&p->w->outputs, tv)) >= 0 && p->out[i]) return &p->out[i]->dl_tensor;
  DLTensor *t = ARENA_NEW(p->a, DLTensor);
  int64_t *shape = ARENA_ARRAY(p->a, int64_t, CF_MAX_RANK);
  if (!t || !shape) return NULL;
  t->ndim = kept_sizes(tv, shape);
  t->shape = shape;
  t->dtype = ir_dtype_to_dl(tv->dtype);
  return t;
}

/* Whether lowering accepts a scheduled copy (the registry's trial of a trial row). */
static bool lowers(cf_fusion *g, char *why) {
  KKernel *k = NULL;
  char *msg = NULL;
  cf_status s = cf_fusion_verify(g);
  if (!s) s = lower_fusion(g, NULL, &k, &msg);
  if (s) snprintf(why, SCHED_WHY_MAX, "%.240s", msg ? msg : cf_fusion_error(g));
  kkernel_free(k);
  free(msg);
  return s == CF_OK;
}

/* The call of segment seg: its inputs described (ins: room for seg->nin), the device. */
static bool segment_call(Planner *p, const SchedSegment *seg, const DLTensor **ins, SchedCall *call) {
  for (int i = 0; i < seg->nin; i++)
    if (!(ins[i] = describe(p, seg->ins[i]))) return false;
  *call = (SchedCall){seg->nin, ins, &p->dev};
  return true;
}

static cf_fusion *copy_segment(Planner *p, const SchedSegment *seg) {
  return ir_fusion_copy_part(p->w, seg->nexprs, seg->exprs, seg->nin, seg->ins, seg->nout, seg->outs, NULL, NULL);
}

/* Segmentation's question: does some row take this group? */
static bool group_accepts(void *ctx, const SchedSegment *seg) {
  Planner *p = ctx;
  const DLTensor **ins = ARENA_ARRAY(p->a, const DLTensor *, seg->nin + 1);
  SchedCall call;
  if (!ins || !segment_call(p, seg, ins, &call)) return false;
  cf_fusion *g = copy_segment(p, seg);
  bool ok = g && !g->status && sched_any_accepts(g, &call, lowers);
  cf_fusion_destroy(g);
  return ok;
}

/* ---- 3, 4. one segment ------------------------------------------------------------------------ */

static char *math_text(cf_fusion *g) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m) {
    cf_fusion_print_math(g, m);
    fclose(m);
  }
  return buf;
}

static void dump_segment(int k, int nseg, const SchedPlan *plan, const char *refusals, cf_fusion *g) {
  char *math = math_text(g);
  fprintf(lower_dump_out(), "=== define and run: segment %d of %d: scheduler %s (%s) ===\n", k, nseg, plan->row->name,
          plan->params.text);
  fprintf(lower_dump_out(), "refused by: %s\n%s", *refusals ? refusals : "(none)", math ? math : "");
  free(math);
}

/* The slots of a segment's tensors, its call, and whether its tensors are all aligned. */
static cf_status wire(Planner *p, const SchedSegment *seg, FcSegment *out, SchedCall *call, bool *aligned) {
  out->nin = seg->nin;
  out->nout = seg->nout;
  out->in_ref = calloc((size_t)seg->nin + 1, sizeof *out->in_ref);
  out->out_ref = calloc((size_t)seg->nout + 1, sizeof *out->out_ref);
  out->ins = calloc((size_t)seg->nin + 1, sizeof *out->ins);
  out->outs = calloc((size_t)seg->nout + 1, sizeof *out->outs);
  const DLTensor **ins = ARENA_ARRAY(p->a, const DLTensor *, seg->nin + 1);
  const DLTensor **outs = ARENA_ARRAY(p->a, const DLTensor *, seg->nout + 1);
  if (!out->in_ref || !out->out_ref || !out->ins || !out->outs || !ins || !outs || !segment_call(p, seg, ins, call))
    return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  for (int i = 0; i < seg->nin; i++) out->in_ref[i] = ref_of(p, seg->ins[i]);
  for (int j = 0; j < seg->nout; j++) {
    int r = out->out_ref[j] = ref_of(p, seg->outs[j]);
    outs[j] = r < p->nin + p->nout && p->out[r - p->nin] ? &p->out[r - p->nin]->dl_tensor : NULL;
  }
  *aligned = sched_aligned16(seg->nin, ins) && sched_aligned16(seg->nout, outs);
  return CF_OK;
}

/* Applies plan to g; true when it succeeded with the plan's parameters (g then holds the
 * schedule; a row may have replaced it). */
static bool applied(cf_fusion **g, const SchedCall *call, const SchedPlan *plan, char *why) {
  SchedParams used;
  cf_status s = *g && !(*g)->status ? plan->row->apply(g, call, &plan->params, &used) : CF_ERR_OUT_OF_MEMORY;
  if (s) snprintf(why, SCHED_WHY_MAX, "%.240s", *g ? cf_fusion_error(*g) : "out of memory");
  else if (!sched_params_equal(&used, &plan->params))
    snprintf(why, SCHED_WHY_MAX, "it scheduled with (%.100s), not its plan (%.100s)", used.text, plan->params.text);
  return s == CF_OK && sched_params_equal(&used, &plan->params);
}

/* Whether every output of the segment has an axis of size 0 (nothing to compute). */
static bool all_empty(const SchedSegment *seg) {
  for (int j = 0; j < seg->nout; j++) {
    int64_t sizes[CF_MAX_RANK];
    bool empty = false;
    int n = kept_sizes(seg->outs[j], sizes);
    for (int a = 0; a < n; a++) empty |= sizes[a] == 0;
    if (!empty) return false;
  }
  return seg->nout > 0;
}

/* The row of a segment whose outputs are all empty: no scheduler, no kernel. */
static const SchedRow empty_row = {.name = "empty", .kind = SCHED_ROW_VIEW};

/* A segment whose outputs are all empty: no scheduler, no kernel; each fusion output it
 * computes is allocated empty at each run (fusion_cache.c), intermediates with the entry. */
static cf_status plan_empty(Planner *p, const SchedSegment *seg, FcSegment *out) {
  out->plan.row = &empty_row;
  out->on_host = p->host;
  out->empty = calloc((size_t)seg->nout + 1, sizeof *out->empty);
  if (!out->empty) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  for (int j = 0; j < seg->nout; j++) {
    int64_t sizes[CF_MAX_RANK];
    int n = kept_sizes(seg->outs[j], sizes);
    if (out->out_ref[j] >= p->nin + p->nout) continue;
    if (!(out->empty[j] = cf_tensor_host(seg->outs[j]->dtype, n, sizes)))
      return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  }
  return CF_OK;
}

static bool lowering_refused(cf_status s) { return s == CF_ERR_INVALID_SCHEDULE || s == CF_ERR_UNSUPPORTED; }

/* The kernel of segment seg with free sizes: the plan applied to the copy whose free sizes
 * are symbolic, then a shared kernel or a new compile. False (nothing kept, no error)
 * when the row does not apply its plan there, or lowering wants the sizes constant (a
 * register array the size of a free axis): the caller then uses the concrete copy. */
static bool shared_kernel(Planner *p, const SchedSegment *seg, const SchedCall *call, bool aligned, FcSegment *out,
                          cf_status *s) {
  char why[SCHED_WHY_MAX] = "";
  const char *err;
  cf_fusion *g = fc_reuse_copy(p->c, p->w, p->fmap, seg);
  *s = CF_OK;
  if (!applied(&g, call, &out->plan, why)) {
    cf_fusion_destroy(g);
    return false;
  }
  if (!aligned) sched_devectorize(g);
  *s = fc_kernel_get(p->c, g, p->index, &out->k, &err);
  if (!lowering_refused(*s)) return true;
  fc_kernel_release(p->c, out->k);
  out->k = NULL;
  *s = CF_OK;
  return false;
}

/* The kernel of segment seg from its concrete copy, the plan applied. */
static cf_status concrete_kernel(Planner *p, const SchedSegment *seg, const SchedCall *call, bool aligned, int k,
                                 int nseg, FcSegment *out) {
  char why[SCHED_WHY_MAX] = "";
  const char *err;
  cf_fusion *g = copy_segment(p, seg);
  if (!applied(&g, call, &out->plan, why)) {
    cf_fusion_destroy(g);
    return fc_error(p->c, CF_ERR_INTERNAL, "internal error: execute: the %s row accepted segment %d of %d but did "
                    "not schedule it: %s; please report this bug", out->plan.row->name, k, nseg, why);
  }
  if (!aligned) sched_devectorize(g);
  cf_status s = fc_kernel_get(p->c, g, p->index, &out->k, &err);
  if (lowering_refused(s))
    s = fc_error(p->c, CF_ERR_INTERNAL, "internal error: execute: the %s row's schedule of segment %d of %d is "
                 "refused by lowering: %s; please report this bug", out->plan.row->name, k, nseg, err);
  else if (s)
    s = fc_error(p->c, s, "execute: compiling segment %d of %d (%s): %s", k, nseg, out->plan.row->name, err);
  return s;
}

/* The kernel of a planned segment: shared across sizes where it can be, else concrete. */
static cf_status segment_kernel(Planner *p, const SchedSegment *seg, const SchedCall *call, bool aligned, int k,
                                int nseg, FcSegment *out) {
  int64_t before = p->c->reuses;
  cf_status s;
  bool shared = shared_kernel(p, seg, call, aligned, out, &s);
  if (!shared && !s) s = concrete_kernel(p, seg, call, aligned, k, nseg, out);
  else if (s) s = fc_error(p->c, s, "execute: compiling segment %d of %d (%s): %s", k, nseg, out->plan.row->name,
                           cf_executor_error(out->k ? out->k->e : NULL));
  if (s) {
    fc_kernel_release(p->c, out->k);
    out->k = NULL;
    return s;
  }
  out->e = out->k->e;
  if (p->dump)
    fprintf(lower_dump_out(), "kernel: %s%s\n", p->c->reuses > before ? "shared with an earlier signature" : "new",
            shared ? "" : " (constant sizes)");
  return CF_OK;
}

/* Plans segment k: its row and parameters, then its kernel (none for a view). */
static cf_status plan_segment(Planner *p, const SchedSegment *seg, int k, int nseg, FcSegment *out) {
  SchedCall call;
  bool aligned = true;
  cf_status s = wire(p, seg, out, &call, &aligned);
  if (s) return s;
  if (all_empty(seg)) return plan_empty(p, seg, out);
  cf_fusion *g = copy_segment(p, seg);
  if (!g || g->status) {
    s = g ? fc_error(p->c, g->status, "execute: %s", cf_fusion_error(g)) : fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
    cf_fusion_destroy(g);
    return s;
  }
  StrBuf refusals = {0};
  if (!sched_choose(g, &call, lowers, &out->plan, &refusals))
    s = fc_error(p->c, CF_ERR_UNSUPPORTED, "execute: no scheduler accepts segment %d of %d (computing %s): %s", k, nseg,
                 seg->nout ? TV(seg->outs[0])->display_name : "nothing", refusals.data ? refusals.data : "");
  else if (p->dump)
    dump_segment(k, nseg, &out->plan, refusals.data ? refusals.data : "", g);
  sb_free(&refusals);
  cf_fusion_destroy(g);
  if (s) return s;
  if (out->plan.row->kind != SCHED_ROW_VIEW) return segment_kernel(p, seg, &call, aligned, k, nseg, out);
  for (int j = 0; j < seg->nout; j++) ptrvec_push(p->a, &p->views, seg->outs[j]);
  return CF_OK;
}

/* ---- the entry ------------------------------------------------------------------------------- */

static void free_view(DLManagedTensor *m) { free(m); }

/* The header of an intermediate that a reshape makes a view: its data pointer is set at
 * each run; freeing it frees the header only. */
static DLManagedTensor *view_header(Val *tv) {
  DLManagedTensor *m = calloc(1, sizeof *m + sizeof(int64_t) * CF_MAX_RANK);
  if (!m) return NULL;
  int64_t *shape = (int64_t *)(m + 1);
  m->dl_tensor.ndim = kept_sizes(tv, shape);
  m->dl_tensor.shape = shape;
  m->dl_tensor.dtype = ir_dtype_to_dl(tv->dtype);
  m->deleter = free_view;
  return m;
}

static cf_status alloc_bufs(Planner *p, FcEntry *en) {
  en->nbuf = p->bufs.len;
  en->bufs = calloc((size_t)en->nbuf + 1, sizeof *en->bufs);
  en->given = calloc((size_t)p->nout + 1, sizeof *en->given);
  if (!en->bufs || !en->given) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  bool host = p->host;
  for (int i = 0; i < en->nbuf; i++) {
    Val *tv = p->bufs.items[i];
    int64_t sizes[CF_MAX_RANK];
    int n = kept_sizes(tv, sizes);
    en->bufs[i] = ptrvec_contains(&p->views, tv) ? view_header(tv)
                  : host                          ? cf_tensor_host(tv->dtype, n, sizes)
                                                  : cf_tensor_device(tv->dtype, n, sizes);
    if (!en->bufs[i])
      return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: cannot allocate the intermediate %s", TV(tv)->display_name);
  }
  return CF_OK;
}

/* The segments: the whole copy when a row takes it, else the greedy merge's. */
static int segments(Planner *p, SchedSegment **segs) {
  SchedSegment whole = sched_whole(p->a, p->w);
  if (group_accepts(p, &whole)) {
    *segs = ARENA_NEW(p->a, SchedSegment);
    if (!*segs) return -1;
    **segs = whole;
    return 1;
  }
  int n = sched_segment(p->a, p->w, group_accepts, p, segs);
  if (n > 0 && p->dump) {
    StrBuf why = {0};
    const DLTensor **ins = ARENA_ARRAY(p->a, const DLTensor *, whole.nin + 1);
    SchedCall call;
    SchedPlan none;
    cf_fusion *g = copy_segment(p, &whole);
    if (g && ins && segment_call(p, &whole, ins, &call)) sched_choose(g, &call, lowers, &none, &why);
    cf_fusion_destroy(g);
    fprintf(lower_dump_out(), "=== define and run: no scheduler accepts the whole fusion (%s); %d segments ===\n",
            why.data ? why.data : "", n);
    sb_free(&why);
  }
  return n;
}

static cf_status plan(Planner *p, FcEntry *en) {
  SchedSegment *segs;
  int n = segments(p, &segs);
  if (n < 0 || !(en->seg = calloc((size_t)n + 1, sizeof *en->seg)))
    return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  en->nseg = n;
  for (int k = 0; k < n; k++) {
    cf_status s = plan_segment(p, &segs[k], k, n, &en->seg[k]);
    if (s) return s;
  }
  en->direct = n == 1 && en->seg[0].e && segs[0].nin == p->nin && segs[0].nout == p->nout;
  for (int i = 0; en->direct && i < p->nin; i++) en->direct = en->seg[0].in_ref[i] == i;
  for (int o = 0; en->direct && o < p->nout; o++) en->direct = en->seg[0].out_ref[o] == p->nin + o;
  return alloc_bufs(p, en);
}

/* The concrete copy of the user's fusion for this call, with map (c->f's Val id -> copy). */
static cf_fusion *concrete_copy(cf_fusion_cache *c, const DLTensor *const *in, Val **map) {
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, c->f, &n) : NULL;
  cf_fusion *w = scratch ? ir_fusion_copy_part(c->f, n, exprs, c->f->inputs.len, (Val *const *)c->f->inputs.items,
                                               c->f->outputs.len, (Val *const *)c->f->outputs.items, in, map)
                         : NULL;
  arena_destroy(scratch);
  return w;
}

/* A packed output (float4_e2m1fn) whose innermost extent this call makes odd, named as the
 * call's output (the concrete copy's add_output refuses it in its own words). */
static cf_status check_packed_outputs(cf_fusion_cache *c, Val *const *map) {
  for (int o = 0; o < c->f->outputs.len; o++) {
    Val *u = c->f->outputs.items[o], *tv = map[u->id];
    int r = tv ? TV(tv)->nlogical : 0;
    int64_t e;
    if (r > 0 && ir_dtype_is_packed(tv->dtype) && ir_scalar_const_value(ID(TV(tv)->logical[r - 1])->extent, &e) && e % 2)
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: output %d (%s) has dtype %s, two elements per byte, and "
                      "innermost extent %lld; it must be even", o, TV(u)->display_name, cf_dtype_name(tv->dtype),
                      (long long)e);
  }
  return CF_OK;
}

/* ---- the index type ---------------------------------------------------------------------- */

/* What a kernel of 32-bit indices needs of a tensor, with half the range to spare: a tile
 * rounds an extent up (a flat index of a block past the last element, a row of an M tile
 * past the last row), and such overshoots stay far below 2^31. */
#define INDEX32_LIMIT ((int64_t)1 << 30)

static bool tensor_fits_index32(const DLTensor *t) {
  int64_t n, span;
  return exec_index_extent(t, &n, &span) && n < INDEX32_LIMIT && span < INDEX32_LIMIT;
}

static bool tv_fits_index32(Val *tv) {
  int64_t n = 1, e;
  for (int a = 0; a < TV(tv)->nlogical; a++)
    if (!ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &e) || !ck_mul(n, e, &n) || n >= INDEX32_LIMIT)
      return false;
  return true;
}

/* The index type of this signature's kernels: the cache's own when its options name one,
 * else 32-bit when every input and given output of the call and every tensor of the
 * concrete copy w (intermediates of any segment included) is within INDEX32_LIMIT (each
 * run checks it again: run.c check_index32), else 64-bit. CFUSER_INDEX_TYPE=64 keeps
 * 64-bit, for measuring. */
static cf_index_type index_type_of(const Planner *p) {
  if (p->c->opts.index_type != CF_INDEX_AUTO) return p->c->opts.index_type;
  const char *env = getenv("CFUSER_INDEX_TYPE");
  if (env && !strcmp(env, "64")) return CF_INDEX_64;
  for (int i = 0; i < p->nin; i++)
    if (!tensor_fits_index32(p->in[i])) return CF_INDEX_64;
  for (int o = 0; p->out && o < p->nout; o++)
    if (p->out[o] && !tensor_fits_index32(&p->out[o]->dl_tensor)) return CF_INDEX_64;
  int n;
  Val **tvs = ir_fusion_all_tvs_in(p->a, p->w, &n);
  for (int t = 0; tvs && t < n; t++)
    if (!tv_fits_index32(tvs[t])) return CF_INDEX_64;
  return tvs ? CF_INDEX_32 : CF_INDEX_64;
}

cf_status fc_plan(cf_fusion_cache *c, const DLTensor *const *in, int nout, DLManagedTensor **out, FcEntry *en) {
  cf_status s = check_inputs(c, in);
  if (s || !en) return s ? s : fc_error(c, CF_ERR_INTERNAL, "internal error: execute: a call unreadable for its "
                                        "signature passed the checks; please report this bug");
  Planner p = {c, NULL, calloc((size_t)c->f->vals.len + 1, sizeof(Val *)), arena_create(), in, c->f->inputs.len, nout,
               out, {0}, {0}, lower_dump_requested("segments"), plan_device(c),
               plan_on_host(c), CF_INDEX_64};
  cf_fusion *w = p.fmap && p.a ? concrete_copy(c, in, p.fmap) : NULL;
  if (!w) s = fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  else if (!(s = check_packed_outputs(c, p.fmap)) &&
           (ir_check_extents(w, "execute") || sched_split_k(w, &p.dev) || sched_prepare_views(w, in) ||
            sched_hoist_broadcasts(w)))
    s = fc_error(c, w->status, "%s", cf_fusion_error(w));
  p.w = w;
  if (!s) p.index = index_type_of(&p);
  if (!s) s = plan(&p, en);
  cf_fusion_destroy(w);
  arena_destroy(p.a);
  free(p.fmap);
  return s;
}
