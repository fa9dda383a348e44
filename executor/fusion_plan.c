/* executor/fusion_plan.c: what the define-and-run cache does for a call with a new
 * signature (fc_plan):
 *   1. checks the inputs against the fusion (dtype, rank, constant sizes), each message
 *      naming the input and its tensor;
 *   2. copies the fusion with the call's sizes made constant and checks that the sizes
 *      agree at every op (ir_check_extents);
 *   3. asks the schedulers of sched_heuristics() in order for the whole copy (a copy with
 *      Welford reductions is first translated to two sums and offered to the inner
 *      persistent scheduler: sched_translate_welford); when none
 *      accepts, cuts it into segments (sched_segment: the coarse cut, then the fine one
 *      when a segment of the coarse cut has no scheduler) and asks for each;
 *   4. schedules a fresh copy of each segment with the first scheduler that accepts it
 *      (devectorized when a tensor of the call is not 16-byte aligned), compiles it with
 *      its own cf_executor, and allocates the intermediates between segments.
 * CFUSER_DUMP=segments prints each segment's math, its scheduler and parameters and why
 * the schedulers before it refused. When nothing accepts, the error lists every
 * scheduler's reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/exec_cuda.h"
#include "executor/fusion_cache.h"
#include "executor/exec_host.h"
#include "ir/checked.h"
#include "ir/dtype.h"
#include "lower/lower.h"
#include "scheduler/heuristic.h"

typedef struct Planner {
  cf_fusion_cache *c;
  cf_fusion *w;               /* the concrete copy of the whole fusion */
  Arena *a;                   /* scratch */
  const DLTensor *const *in;
  int nin, nout;
  DLManagedTensor **out;
  PtrVec bufs;                /* Vals of w held in intermediates, by index */
  bool dump;
  SchedDevice dev;            /* what the heuristics plan for (plan_device) */
  bool host;                  /* the backend the segments run on is the host */
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
  if (in->max_threads_per_block > 0) d.max_threads_per_block = in->max_threads_per_block;
  if (in->max_threads_per_sm > 0) d.max_threads_per_sm = in->max_threads_per_sm;
  if (in->regs_per_sm > 0) d.regs_per_sm = in->regs_per_sm;
  if (in->max_smem_optin > 0) d.smem_per_block = in->max_smem_optin;
  if (in->max_smem_per_sm > 0) d.smem_per_sm = in->max_smem_per_sm;
  if (in->l2_bytes > 0) d.l2_bytes = in->l2_bytes;
  if (in->cc_major < 9) d.max_cluster = 1;
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

/* What the heuristics see of a tensor: the call's own, or for one the executor allocates
 * its sizes and a NULL data pointer. */
static const DLTensor *describe(Planner *p, int ref, Val *tv) {
  if (ref < p->nin) return p->in[ref];
  if (ref < p->nin + p->nout && p->out[ref - p->nin]) return &p->out[ref - p->nin]->dl_tensor;
  DLTensor *t = ARENA_NEW(p->a, DLTensor);
  int64_t *shape = ARENA_ARRAY(p->a, int64_t, CF_MAX_RANK);
  if (!t || !shape) return NULL;
  t->ndim = kept_sizes(tv, shape);
  t->shape = shape;
  t->dtype = ir_dtype_to_dl(tv->dtype);
  return t;
}

/* ---- 3, 4. one segment ------------------------------------------------------------------------ */

static const SchedHeuristic *choose(cf_fusion *g, const SchedCall *call, StrBuf *refusals) {
  int n;
  const SchedHeuristic *const *table = sched_heuristics(&n);
  for (int i = 0; i < n; i++) {
    char why[SCHED_WHY_MAX] = "";
    if (table[i]->accepts(g, call, why)) return table[i];
    sb_printf(refusals, "%s%s", refusals->len ? "; " : "", why);
  }
  return NULL;
}

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

static void dump(int k, int nseg, const SchedHeuristic *h, const char *params, const char *refusals, const char *math) {
  fprintf(stderr, "=== define and run: segment %d of %d: scheduler %s (%s) ===\n", k, nseg, h->name, params);
  fprintf(stderr, "refused by: %s\n%s", *refusals ? refusals : "(none)", math ? math : "");
}

static cf_status compile(Planner *p, cf_fusion *g, const SchedHeuristic *h, const SchedCall *call, bool aligned, int k,
                         int nseg, const char *refusals, FcSegment *out) {
  char params[SCHED_PARAMS_MAX] = "";
  char *math = p->dump ? math_text(g) : NULL;
  cf_status s = h->schedule(g, call, params);
  if (s) {
    free(math);
    return fc_error(p->c, s, "execute: the %s scheduler failed on segment %d of %d: %s", h->name, k, nseg,
                    cf_fusion_error(g));
  }
  if (p->dump) dump(k, nseg, h, params, refusals, math);
  free(math);
  if (!aligned) sched_devectorize(g);
  out->scheduler = h->name;
  out->e = cf_executor_create(&p->c->opts);
  if (!out->e) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  s = cf_executor_compile(out->e, g);
  if (s) return fc_error(p->c, s, "execute: compiling segment %d of %d (%s): %s", k, nseg, h->name, cf_executor_error(out->e));
  return CF_OK;
}

/* Whether a failed compile means the scheduler's schedule is one lowering refuses (the
 * segment is then refused, and a finer cut tried), not an error of the call. */
static bool schedule_refused(cf_status s) { return s == CF_ERR_INVALID_SCHEDULE || s == CF_ERR_UNSUPPORTED; }

/* The slots of a segment's tensors and the view of them the heuristics get. */
static cf_status wire(Planner *p, const SchedSegment *seg, FcSegment *out, const DLTensor **ins, const DLTensor **outs) {
  out->nin = seg->nin;
  out->nout = seg->nout;
  out->in_ref = calloc((size_t)seg->nin + 1, sizeof *out->in_ref);
  out->out_ref = calloc((size_t)seg->nout + 1, sizeof *out->out_ref);
  out->ins = calloc((size_t)seg->nin + 1, sizeof *out->ins);
  out->outs = calloc((size_t)seg->nout + 1, sizeof *out->outs);
  if (!out->in_ref || !out->out_ref || !out->ins || !out->outs) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  for (int i = 0; i < seg->nin; i++)
    if (!(ins[i] = describe(p, out->in_ref[i] = ref_of(p, seg->ins[i]), seg->ins[i])))
      return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  for (int j = 0; j < seg->nout; j++) {
    int r = out->out_ref[j] = ref_of(p, seg->outs[j]);
    outs[j] = r < p->nin + p->nout && p->out[r - p->nin] ? &p->out[r - p->nin]->dl_tensor : NULL;
  }
  return CF_OK;
}

/* A reshape's segment: no kernel; its output, an intermediate, is pointed at its input's
 * memory at each run (fusion_cache.c). Its input must be contiguous memory of its own (a
 * call input, checked per run, or an intermediate) and its output an intermediate. */
static cf_status plan_view(Planner *p, const SchedSegment *seg, int k, int nseg, FcSegment *out) {
  Expr *e = seg->exprs[0];
  out->scheduler = "view";
  int r_in = out->in_ref[0], r_out = out->nout ? out->out_ref[0] : -1;
  const char *in = TV(e->in[0])->display_name, *o = TV(e->out[0])->display_name;
  if (r_in >= p->nin && r_in < p->nin + p->nout)
    return fc_error(p->c, CF_ERR_UNSUPPORTED, "execute: segment %d of %d: %s = reshape(%s) reads the fusion output %s; "
                    "a reshape is a view of a fusion input or of an intermediate", k, nseg, o, in, in);
  if (r_out < p->nin + p->nout)
    return fc_error(p->c, CF_ERR_UNSUPPORTED, "execute: segment %d of %d: %s = reshape(%s) is a fusion output; a "
                    "reshape is a view between segments (compute the output after it, e.g. with cf_set)", k, nseg, o,
                    in);
  if (p->dump) fprintf(stderr, "=== define and run: segment %d of %d: view %s = reshape(%s) ===\n", k, nseg, o, in);
  return CF_OK;
}

/* Whether every output of the segment has an axis of size 0 (nothing to compute). */
static bool all_empty(const SchedSegment *seg) {
  for (int j = 0; j < seg->nout; j++) {
    int64_t sizes[CF_MAX_RANK], numel = 1;
    int n = kept_sizes(seg->outs[j], sizes);
    for (int a = 0; a < n; a++) numel *= sizes[a];
    if (numel) return false;
  }
  return seg->nout > 0;
}

/* A segment whose outputs are all empty: no scheduler, no kernel; each fusion output it
 * computes is allocated empty at each run (fusion_cache.c), intermediates with the entry. */
static cf_status plan_empty(Planner *p, const SchedSegment *seg, FcSegment *out) {
  out->scheduler = "empty";
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

/* A segment with Welford reductions that the inner persistent scheduler takes once they
 * are translated to two sums (scheduler/welford_translate.c): *g becomes the translated
 * copy and the inner persistent scheduler is returned; otherwise NULL and *g unchanged
 * (Welford stays for the reduction scheduler and rows longer than registers, where the
 * two-pass form would read the input twice). */
static const SchedHeuristic *translated(Planner *p, cf_fusion **g, const SchedCall *call, StrBuf *refusals) {
  cf_fusion *t = sched_translate_welford(*g);
  char why[SCHED_WHY_MAX] = "";
  if (!t) return NULL;
  if (!sched_inner_persistent_heuristic.accepts(t, call, why)) {
    if (p->dump) fprintf(stderr, "=== define and run: Welford translated to two sums, but %s ===\n", why);
    cf_fusion_destroy(t);
    return NULL;
  }
  cf_fusion_destroy(*g);
  *g = t;
  sb_printf(refusals, "(none: Welford translated to two sums)");
  return &sched_inner_persistent_heuristic;
}

/* Schedules and compiles segment k; when no scheduler accepts it, *refused with their
 * reasons in refusals (CF_OK, no message). */
static cf_status plan_segment(Planner *p, const SchedSegment *seg, int k, int nseg, FcSegment *out, StrBuf *refusals,
                              bool *refused) {
  const DLTensor **ins = ARENA_ARRAY(p->a, const DLTensor *, seg->nin), **outs = ARENA_ARRAY(p->a, const DLTensor *, seg->nout);
  if (!ins || !outs) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  cf_status s = wire(p, seg, out, ins, outs);
  if (s) return s;
  *refused = false;
  if (seg->nexprs == 1 && seg->exprs[0]->op == OP_RESHAPE) return plan_view(p, seg, k, nseg, out);
  if (all_empty(seg)) return plan_empty(p, seg, out);
  cf_fusion *g = ir_fusion_copy_part(p->w, seg->nexprs, seg->exprs, seg->nin, seg->ins, seg->nout, seg->outs, NULL, NULL);
  if (!g) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  if (g->status) {
    s = fc_error(p->c, g->status, "execute: %s", cf_fusion_error(g));
    cf_fusion_destroy(g);
    return s;
  }
  SchedCall call = {seg->nin, ins, &p->dev};
  const SchedHeuristic *h = translated(p, &g, &call, refusals);
  if (!h) h = choose(g, &call, refusals);
  bool aligned = sched_aligned16(seg->nin, ins) && sched_aligned16(seg->nout, outs);
  *refused = !h;
  s = h ? compile(p, g, h, &call, aligned, k, nseg, refusals->data ? refusals->data : "", out) : CF_OK;
  if (s && schedule_refused(s)) { /* e.g. a broadcast inlined into two consumers' loops of other domains */
    sb_printf(refusals, "%s%s", refusals->len ? "; " : "", errmsg_get(&p->c->error));
    errmsg_retract(&p->c->error); /* a refusal now, not the call's error */
    cf_executor_destroy(out->e);
    out->e = NULL;
    *refused = true;
    s = CF_OK;
  }
  if (!s && h && !*refused) out->scheduled = g; /* kept for cf_fusion_cache_print_kernel */
  else cf_fusion_destroy(g);
  return s;
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
    en->bufs[i] = tv->def && tv->def->op == OP_RESHAPE ? view_header(tv)
                  : host                                 ? cf_tensor_host(tv->dtype, n, sizes)
                                                         : cf_tensor_device(tv->dtype, n, sizes);
    if (!en->bufs[i])
      return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: cannot allocate the intermediate %s", TV(tv)->display_name);
  }
  return CF_OK;
}

/* One cut of the fusion into segments, each planned in turn. When a segment has no
 * scheduler (or there is nothing to cut), *refused with the message in why. */
static cf_status plan_cut(Planner *p, FcEntry *en, SchedCut cut, const char *whole_refusals, bool *refused,
                          StrBuf *why) {
  SchedSegment *segs;
  fc_entry_clear(en);
  p->bufs.len = 0;
  int n = sched_segment(p->a, p->w, cut, &segs);
  if (n < 0) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  if ((*refused = n < 2)) {
    sb_printf(why, "execute: no scheduler accepts the fusion, and it has no reduction to cut it at: %s", whole_refusals);
    return CF_OK;
  }
  if (p->dump) fprintf(stderr, "=== define and run: no scheduler accepts the whole fusion (%s); %d segments%s ===\n",
                       whole_refusals, n,
                       cut == SCHED_CUT_FINE ? ", each reduction alone" : cut == SCHED_CUT_EACH_OP ? ", each op alone" : "");
  if (!(en->seg = calloc((size_t)n, sizeof *en->seg))) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  en->nseg = n;
  for (int k = 0; k < n; k++) {
    StrBuf reasons = {0};
    cf_status s = plan_segment(p, &segs[k], k, n, &en->seg[k], &reasons, refused);
    if (!s && *refused)
      sb_printf(why, "execute: no scheduler accepts segment %d of %d (computing %s): %s", k, n,
                segs[k].nout ? TV(segs[k].outs[0])->display_name : "nothing", reasons.data ? reasons.data : "");
    sb_free(&reasons);
    if (s || *refused) return s;
  }
  return CF_OK;
}

/* The coarse cut, then the finer ones (SchedCut); the last refusal is the error. */
static cf_status plan_segments(Planner *p, FcEntry *en, const char *whole_refusals) {
  cf_status s = CF_OK;
  bool refused = true;
  StrBuf why = {0};
  for (int cut = SCHED_CUT_COARSE; !s && refused && cut < SCHED_NCUTS; cut++) {
    sb_free(&why);
    s = plan_cut(p, en, (SchedCut)cut, whole_refusals, &refused, &why);
  }
  if (!s && refused) s = fc_error(p->c, CF_ERR_UNSUPPORTED, "%s", why.data ? why.data : "");
  sb_free(&why);
  return s;
}

static cf_status plan(Planner *p, FcEntry *en) {
  SchedSegment whole = sched_whole(p->a, p->w);
  en->seg = calloc(1, sizeof *en->seg);
  if (!en->seg) return fc_error(p->c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  en->nseg = 1;
  StrBuf why = {0};
  bool refused = false;
  cf_status s = plan_segment(p, &whole, 0, 1, &en->seg[0], &why, &refused);
  if (!s && refused) {
    s = plan_segments(p, en, why.data ? why.data : "");
  } else {
    en->direct = !s && en->seg[0].e;
  }
  sb_free(&why);
  return s ? s : alloc_bufs(p, en);
}

cf_status fc_plan(cf_fusion_cache *c, const DLTensor *const *in, int nout, DLManagedTensor **out, FcEntry *en) {
  cf_status s = check_inputs(c, in);
  if (s || !en) return s ? s : fc_error(c, CF_ERR_INTERNAL, "internal error: execute: a call unreadable for its "
                                        "signature passed the checks; please report this bug");
  cf_fusion *w = NULL;
  Planner p = {c, NULL, arena_create(), in, c->f->inputs.len, nout, out, {0}, lower_dump_requested("segments"),
               plan_device(c), plan_on_host(c)};
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, c->f, &n) : NULL;
  if (p.a && scratch)
    w = ir_fusion_copy_part(c->f, n, exprs, c->f->inputs.len, (Val *const *)c->f->inputs.items, c->f->outputs.len,
                            (Val *const *)c->f->outputs.items, in, NULL);
  arena_destroy(scratch);
  if (!w) s = fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  else if (ir_check_extents(w, "execute")) s = fc_error(c, w->status, "%s", cf_fusion_error(w));
  p.w = w;
  if (!s) s = plan(&p, en);
  cf_fusion_destroy(w);
  arena_destroy(p.a);
  return s;
}
