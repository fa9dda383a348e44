/* executor/fusion_cache.c: cf_fusion_cache and cf_fusion_execute (define and run): the
 * object, the signature of a call, the table of compiled entries and running an entry.
 * A call's signature is a list of 64-bit words (per input: dtype, rank, device type and
 * 16-byte alignment packed in one word, then the sizes, then the strides with those of
 * size-1 axes zeroed and missing ones made contiguous; per output: absent, given aligned
 * or given misaligned). One walk over the call feeds the words to a sink that hashes
 * them, compares them with a stored key, or stores them, so a cached call hashes and
 * compares without building the key anywhere and allocates nothing.
 * Entries live in an open-addressing table of pointers that doubles at half load, and in
 * a recency list: a hit moves its entry to the front, and a miss beyond the bound
 * (cf_fusion_cache_set_max_entries, FC_DEFAULT_MAX_ENTRIES) evicts the least recently
 * used entry, whose segments release their kernels (fusion_reuse.c: a kernel no entry
 * holds is destroyed, and with it its host shared object or CUDA module).
 * Key decision: the bound is on entries (signatures), the unit a workload of many sizes
 * grows; kernels are shared by entries whose plans agree, so they are bounded by it too,
 * and an evicted signature that comes back is planned again and usually finds its kernel
 * still held by another entry. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"
#include "executor/fusion_cache.h"
#include "executor/repro.h"
#include "ir/checked.h"
#include "ir/dtype.h"
#include "scheduler/heuristic.h"

cf_status fc_error(cf_fusion_cache *c, cf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  errmsg_vset(&c->error, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- the signature -------------------------------------------------------------------- */

typedef struct Sink {
  uint64_t h;
  const int64_t *cmp; /* compare with this key (ncmp words) */
  int ncmp;
  int64_t *out;       /* or store here */
  int n;
  bool eq;
} Sink;

static inline void put(Sink *s, int64_t w) {
  s->h = (s->h ^ (uint64_t)w) * 0x100000001b3ull;
  s->h ^= s->h >> 29;
  if (s->cmp) s->eq = s->eq && s->n < s->ncmp && s->cmp[s->n] == w;
  if (s->out) s->out[s->n] = w;
  s->n++;
}

static inline int64_t aligned16(const DLTensor *t) { return ((uintptr_t)t->data + t->byte_offset) % 16 == 0; }

static void put_tensor(Sink *s, const DLTensor *t) {
  put(s, (int64_t)t->dtype.code | (int64_t)t->dtype.bits << 8 | (int64_t)t->dtype.lanes << 16 |
             (int64_t)t->ndim << 32 | (int64_t)(t->device.device_type & 0xff) << 40 | aligned16(t) << 48);
  for (int d = 0; d < t->ndim; d++) put(s, t->shape[d]);
  /* Unsigned: the row-major stride of absurd sizes wraps instead of overflowing (UB); such
   * a call is refused by the checks after the lookup anyway. */
  uint64_t stride = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    put(s, t->shape[d] == 1 ? 0 : t->strides ? t->strides[d] : (int64_t)stride);
    stride *= (uint64_t)t->shape[d];
  }
}

/* False when a tensor cannot be read (NULL, no shape, a rank out of range): the call
 * then goes to the checks that say so. */
static bool walk(Sink *s, int nin, const DLTensor *const *in, int nout, DLManagedTensor *const *out) {
  for (int i = 0; i < nin; i++) {
    const DLTensor *t = in[i];
    if (!t || t->ndim < 0 || t->ndim > CF_MAX_RANK || (t->ndim > 0 && !t->shape)) return false;
    put_tensor(s, t);
  }
  for (int i = 0; i < nout; i++) put(s, out[i] ? 1 + aligned16(&out[i]->dl_tensor) : 0);
  return true;
}

/* ---- the table ------------------------------------------------------------------------ */

static FcEntry *lookup(const cf_fusion_cache *c, uint64_t h, int nin, const DLTensor *const *in, int nout,
                       DLManagedTensor *const *out) {
  if (!c->cap) return NULL;
  for (int i = (int)(h & (uint64_t)(c->cap - 1));; i = (i + 1) & (c->cap - 1)) {
    FcEntry *en = c->slots[i];
    if (!en) return NULL;
    if (en->hash != h) continue;
    Sink s = {0, en->key, en->nkey, NULL, 0, true};
    walk(&s, nin, in, nout, out);
    if (s.eq && s.n == en->nkey) return en;
  }
}

static void place(FcEntry **slots, int cap, FcEntry *en) {
  int i = (int)(en->hash & (uint64_t)(cap - 1));
  while (slots[i]) i = (i + 1) & (cap - 1);
  slots[i] = en;
}

static bool insert(cf_fusion_cache *c, FcEntry *en) {
  if (2 * (c->len + 1) > c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    FcEntry **slots = calloc((size_t)cap, sizeof *slots);
    if (!slots) return false;
    for (int i = 0; i < c->cap; i++)
      if (c->slots[i]) place(slots, cap, c->slots[i]);
    free(c->slots);
    c->slots = slots;
    c->cap = cap;
  }
  place(c->slots, c->cap, en);
  c->len++;
  return true;
}

/* Removes en from the table (backward-shift deletion: the entries after it in its probe
 * run move up, so no tombstone is needed). */
static void unplace(cf_fusion_cache *c, const FcEntry *en) {
  int i = (int)(en->hash & (uint64_t)(c->cap - 1)), mask = c->cap - 1;
  while (c->slots[i] != en) i = (i + 1) & mask;
  for (int j = (i + 1) & mask; c->slots[j]; j = (j + 1) & mask) {
    int home = (int)(c->slots[j]->hash & (uint64_t)mask);
    /* slots[j] may fill the hole at i when its home is not in (i, j] cyclically */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) c->slots[i] = c->slots[j], i = j;
  }
  c->slots[i] = NULL;
  c->len--;
}

/* ---- recency ------------------------------------------------------------------------------ */

static void unlink_entry(cf_fusion_cache *c, FcEntry *en) {
  if (en->newer) en->newer->older = en->older;
  else if (c->newest == en) c->newest = en->older;
  if (en->older) en->older->newer = en->newer;
  else if (c->oldest == en) c->oldest = en->newer;
  en->newer = en->older = NULL;
}

static void push_newest(cf_fusion_cache *c, FcEntry *en) {
  en->older = c->newest;
  en->newer = NULL;
  if (c->newest) c->newest->newer = en;
  c->newest = en;
  if (!c->oldest) c->oldest = en;
}

static void touch(cf_fusion_cache *c, FcEntry *en) {
  if (c->newest == en) return;
  unlink_entry(c, en);
  push_newest(c, en);
}

/* Evicts the least recently used entries until at most keep remain. */
static void evict_to(cf_fusion_cache *c, int keep) {
  while (c->len > keep && c->oldest) {
    FcEntry *en = c->oldest;
    unlink_entry(c, en);
    unplace(c, en);
    if (c->last == en) c->last = NULL;
    fc_entry_free(c, en);
    c->evictions++;
  }
}

/* ---- the object ------------------------------------------------------------------------- */

cf_fusion_cache *cf_fusion_cache_create(cf_fusion *f, const cf_executor_options *opts) {
  cf_fusion_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (pthread_mutex_init(&c->lock, NULL)) {
    free(c);
    return NULL;
  }
  if (opts) c->opts = *opts;
  if (!f) {
    c->status = fc_error(c, CF_ERR_INVALID_ARGUMENT, "fusion_cache_create: fusion is NULL");
    return c;
  }
  /* An output nothing computes (or an input that is an output): the copy cannot map it. */
  if (!f->status && ir_verify_sources(f)) {
    c->status = fc_error(c, f->status, "fusion_cache_create: %s", cf_fusion_error(f));
    return c;
  }
  c->f = cf_fusion_copy(f);
  c->max_entries = FC_DEFAULT_MAX_ENTRIES;
  if (!c->f) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
  }
  if (c->f->status) c->status = fc_error(c, c->f->status, "%s", cf_fusion_error(c->f));
  else if (!c->f->outputs.len) c->status = fc_error(c, CF_ERR_INVALID_ARGUMENT, "fusion_cache_create: the fusion has no outputs");
  else if (ir_fusion_is_dynamic(c->f)) c->status = fc_dyn_create(c); /* fusion_dynamic.c */
  else c->status = fc_find_free_symbols(c);
  return c;
}

cf_status cf_fusion_cache_set_max_entries(cf_fusion_cache *c, int n) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  if (n < 1) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "set_max_entries: %d entries; keep at least 1", n);
  c->max_entries = n;
  evict_to(c, n);
  return CF_OK;
}

void fc_entry_clear(cf_fusion_cache *c, FcEntry *en) {
  fc_graph_free(en->graph);
  for (int i = 0; i < en->nseg; i++) {
    FcSegment *s = &en->seg[i];
    fc_kernel_release(c, s->k);
    free(s->in_ref);
    free(s->out_ref);
    free(s->ins);
    free(s->outs);
  }
  for (int i = 0; i < en->nseg; i++) {
    for (int j = 0; en->seg[i].empty && j < en->seg[i].nout; j++) cf_tensor_free(en->seg[i].empty[j]);
    free(en->seg[i].empty);
  }
  for (int i = 0; i < en->nbuf; i++) cf_tensor_free(en->bufs[i]);
  free(en->seg);
  free(en->bufs);
  free(en->given);
  *en = (FcEntry){.hash = en->hash, .key = en->key, .nkey = en->nkey, .newer = en->newer, .older = en->older};
}

void fc_entry_free(cf_fusion_cache *c, FcEntry *en) {
  if (!en) return;
  fc_entry_clear(c, en);
  free(en->key);
  free(en);
}

void cf_fusion_cache_destroy(cf_fusion_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->cap; i++) fc_entry_free(c, c->slots[i]);
  free(c->slots);
  free(c->kernels); /* empty: every kernel was released with its last segment */
  free(c->free_sym);
  fc_dyn_free(c->dyn);
  cf_fusion_destroy(c->f);
  errmsg_free(&c->error);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

const char *cf_fusion_cache_error(const cf_fusion_cache *c) {
  if (!c) return "fusion cache is NULL";
  return errmsg_get(&c->error);
}
int cf_fusion_cache_num_entries(const cf_fusion_cache *c) { return c ? c->len : 0; }
int cf_fusion_cache_num_kernels(const cf_fusion_cache *c) { return c ? c->nkernels : 0; }
int cf_fusion_cache_num_live_kernels(const cf_fusion_cache *c) { return c ? c->nlive : 0; }
int64_t cf_fusion_cache_evictions(const cf_fusion_cache *c) { return c ? c->evictions : 0; }
int64_t cf_fusion_cache_kernel_reuses(const cf_fusion_cache *c) { return c ? c->reuses : 0; }
int64_t cf_fusion_cache_graph_captures(const cf_fusion_cache *c) { return c ? c->graph_captures : 0; }
int64_t cf_fusion_cache_graph_replays(const cf_fusion_cache *c) { return c ? c->graph_replays : 0; }

cf_status cf_fusion_cache_set_cuda_graphs(cf_fusion_cache *c, int mode) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  if (mode < -1 || mode > 1)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "set_cuda_graphs: mode %d; use -1 (off), 0 (the default rule) or 1", mode);
  c->graphs = mode;
  return CF_OK;
}
int64_t cf_fusion_cache_hits(const cf_fusion_cache *c) { return c ? c->hits : 0; }
int64_t cf_fusion_cache_misses(const cf_fusion_cache *c) { return c ? c->misses : 0; }
int cf_fusion_cache_last_segments(const cf_fusion_cache *c) { return c && c->last ? c->last->nseg : 0; }
const char *cf_fusion_cache_last_scheduler(const cf_fusion_cache *c, int i) {
  return c && c->last && i >= 0 && i < c->last->nseg ? c->last->seg[i].plan.row->name : NULL;
}
const char *cf_fusion_cache_last_params(const cf_fusion_cache *c, int i) {
  return c && c->last && i >= 0 && i < c->last->nseg ? c->last->seg[i].plan.params.text : NULL;
}

cf_executor *cf_fusion_cache_last_executor(const cf_fusion_cache *c, int i) {
  return c && c->last && i >= 0 && i < c->last->nseg ? c->last->seg[i].e : NULL;
}

cf_status cf_fusion_cache_print_kernel(cf_fusion_cache *c, int i, FILE *out) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&c->error);
  if (!c->last || i < 0 || i >= c->last->nseg)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "print_kernel: segment %d out of range: the last call ran %d", i,
                    cf_fusion_cache_last_segments(c));
  if (!c->last->seg[i].e) { /* a view (a reshape) or outputs with no element run no kernel */
    fprintf(out, "// segment %d: %s, no kernel\n", i, c->last->seg[i].empty ? "empty outputs" : "a view (reshape)");
    return CF_OK;
  }
  cf_fusion *g = c->last->seg[i].k->scheduled;
  cf_status s = cf_fusion_print_kernel(g, out);
  return s ? fc_error(c, s, "%s", cf_fusion_error(g)) : CF_OK;
}

cf_status cf_fusion_cache_synchronize(cf_fusion_cache *c) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&c->error);
  if (!c->last) return CF_OK;
  cf_executor *e = NULL; /* the last segment that launched (views launch nothing) */
  for (int i = c->last->nseg - 1; i >= 0 && !e; i--) e = c->last->seg[i].e;
  if (!e) return CF_OK;
  cf_status s = cf_executor_synchronize(e);
  return s ? fc_error(c, s, "%s", cf_executor_error(e)) : CF_OK;
}

/* ---- running an entry ------------------------------------------------------------------- */

static cf_status run_kernel(cf_fusion_cache *c, cf_executor *e, void *stream, bool async, int nin,
                            const DLTensor *const *in, int nout, DLManagedTensor **out) {
  cf_status s = async ? cf_executor_run_async(e, stream, nin, in, nout, out) : cf_executor_run(e, nin, in, nout, out);
  return s ? fc_error(c, s, "%s", cf_executor_error(e)) : CF_OK;
}

/* A reshape: its output intermediate becomes a view of its input's memory. */
static cf_status run_view(cf_fusion_cache *c, FcEntry *en, const FcSegment *s, int nin, int nout) {
  const DLTensor *src = s->ins[0];
  DLTensor *dst = &en->bufs[s->out_ref[0] - nin - nout]->dl_tensor;
  if (!sched_dl_contiguous(src))
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d is reshaped but not contiguous; a reshape is a "
                    "view of a contiguous tensor", s->in_ref[0]);
  dst->data = src->data;
  dst->byte_offset = src->byte_offset;
  dst->device = src->device;
  return CF_OK;
}

/* A segment whose outputs are all empty: a fusion output the caller did not give is
 * allocated empty, one it gave must have the output's sizes; nothing runs. */
static cf_status run_empty(cf_fusion_cache *c, FcSegment *s, int nin) {
  for (int j = 0; j < s->nout; j++) {
    const DLTensor *want = s->empty[j] ? &s->empty[j]->dl_tensor : NULL;
    if (!want) continue;
    if (!s->outs[j]) {
      cf_dtype dt = CF_FLOAT;
      ir_dtype_from_dl(want->dtype, &dt);
      s->outs[j] = s->on_host ? cf_tensor_host(dt, want->ndim, want->shape) : cf_tensor_device(dt, want->ndim, want->shape);
      if (!s->outs[j]) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
      continue;
    }
    const DLTensor *got = &s->outs[j]->dl_tensor;
    bool same = got->ndim == want->ndim;
    for (int d = 0; same && d < want->ndim; d++) same = got->shape && got->shape[d] == want->shape[d];
    if (!same)
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: output %d does not have the output's sizes (an empty "
                      "tensor of rank %d)", s->out_ref[j] - nin, want->ndim);
  }
  return CF_OK;
}

/* Whether the call's tensor t (NULL: an output the cache allocates) has a readable
 * footprint, written to lo and hi; an unreadable one is left to the segments' checks. */
static bool footprint(const DLTensor *t, int64_t *lo, int64_t *hi) {
  cf_dtype dt;
  if (!t || t->ndim < 0 || t->ndim > CF_MAX_RANK || (t->ndim > 0 && !t->shape) || !ir_dtype_from_dl(t->dtype, &dt))
    return false;
  return exec_byte_range(t, dt, lo, hi) && *lo < *hi;
}

/* Over the whole plan, as cf_executor_run does for one kernel: no output the caller gives
 * may share memory with an input or another output. Each segment's run checks only its
 * own tensors, but a segment may write an output over an input (or another output) that
 * only a later segment reads, which then reads what was written. */
static cf_status check_plan_aliasing(cf_fusion_cache *c, int nin, const DLTensor *const *in, int nout,
                                     DLManagedTensor *const *out) {
  for (int o = 0; o < nout; o++) {
    int64_t lo, hi, qlo, qhi;
    if (!out[o] || !footprint(&out[o]->dl_tensor, &lo, &hi)) continue;
    for (int q = 0; q < nin + o; q++) {
      const DLTensor *t = q < nin ? in[q] : out[q - nin] ? &out[q - nin]->dl_tensor : NULL;
      if (!footprint(t, &qlo, &qhi) || !(lo < qhi && qlo < hi)) continue;
      Val *ov = c->f->outputs.items[o], *qv = q < nin ? c->f->inputs.items[q] : c->f->outputs.items[q - nin];
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: output %d (%s) overlaps %s %d (%s) in memory; outputs may "
                      "not alias inputs or other outputs", o, TV(ov)->display_name, q < nin ? "input" : "output",
                      q < nin ? q : q - nin, TV(qv)->display_name);
    }
  }
  return CF_OK;
}

cf_status fc_run_segments(cf_fusion_cache *c, FcEntry *en, void *stream, bool async, int nin,
                          const DLTensor *const *in, int nout, DLManagedTensor **out) {
  cf_status st = CF_OK;
  for (int o = 0; o < nout; o++) en->given[o] = out[o] != NULL;
  for (int k = 0; !st && k < en->nseg; k++) {
    FcSegment *s = &en->seg[k];
    for (int i = 0; i < s->nin; i++) {
      int r = s->in_ref[i];
      s->ins[i] = r < nin ? in[r] : r < nin + nout ? &out[r - nin]->dl_tensor : &en->bufs[r - nin - nout]->dl_tensor;
    }
    for (int j = 0; j < s->nout; j++) {
      int r = s->out_ref[j];
      s->outs[j] = r < nin + nout ? out[r - nin] : en->bufs[r - nin - nout];
    }
    st = s->e       ? run_kernel(c, s->e, stream, async, s->nin, s->ins, s->nout, s->outs)
         : s->empty ? run_empty(c, s, nin)
                    : run_view(c, en, s, nin, nout);
    if (st && s->e) /* its run numbers the segment's own arguments */
      fc_error(c, st, "execute: segment %d of %d: %s", k + 1, en->nseg, cf_executor_error(s->e));
    for (int j = 0; !st && j < s->nout; j++)
      if (s->out_ref[j] < nin + nout) out[s->out_ref[j] - nin] = s->outs[j];
  }
  for (int o = 0; st && o < nout; o++)
    if (!en->given[o]) {
      cf_tensor_free(out[o]);
      out[o] = NULL;
    }
  return st;
}

/* Whether tensor t has elements but no data pointer (run.c's check_storage rule); an
 * unreadable t, or sizes that are negative or overflow, are left to the segments' checks. */
static bool null_with_elements(const DLTensor *t) {
  int64_t numel;
  return !t->data && t->ndim >= 0 && t->ndim <= CF_MAX_RANK && (t->ndim == 0 || t->shape) &&
         ck_numel(t->ndim, t->shape, &numel) && numel > 0;
}

/* Over the whole plan, before its first segment runs: a call a later segment would refuse
 * for a NULL data pointer is refused with nothing run and nothing written, naming the
 * fusion's argument (a segment's run names its own argument positions). */
static cf_status check_plan_data(cf_fusion_cache *c, int nin, const DLTensor *const *in, int nout,
                                 DLManagedTensor *const *out) {
  for (int i = 0; i < nin + nout; i++) {
    const DLTensor *t = i < nin ? in[i] : out[i - nin] ? &out[i - nin]->dl_tensor : NULL;
    if (!t || !null_with_elements(t)) continue;
    Val *v = i < nin ? c->f->inputs.items[i] : c->f->outputs.items[i - nin];
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: %s %d (%s) has a NULL data pointer",
                    i < nin ? "input" : "output", i < nin ? i : i - nin, TV(v)->display_name);
  }
  return CF_OK;
}

static cf_status run_entry(cf_fusion_cache *c, FcEntry *en, void *stream, bool async, int nin,
                           const DLTensor *const *in, int nout, DLManagedTensor **out) {
  c->last = en;
  if (en->direct) return run_kernel(c, en->seg[0].e, stream, async, nin, in, nout, out);
  bool ran = false;
  cf_status s = check_plan_data(c, nin, in, nout, out);
  if (!s) s = check_plan_aliasing(c, nin, in, nout, out); /* for the graph's launches too */
  if (!s && async) s = fc_graph_run(c, en, stream, nin, in, nout, out, &ran);
  return s || ran ? s : fc_run_segments(c, en, stream, async, nin, in, nout, out);
}

/* ---- a call ------------------------------------------------------------------------------ */

static cf_status check_counts(cf_fusion_cache *c, int nin, const DLTensor *const *in, int nout, DLManagedTensor **out) {
  if (c->status) return c->status;
  if (nin != c->f->inputs.len)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: expected %d inputs, got %d", c->f->inputs.len, nin);
  if (nin && !in) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: the array of %d inputs is NULL", nin);
  for (int i = 0; i < nin; i++)
    if (!in[i])
      return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: input %d (%s) is NULL", i,
                      TV((Val *)c->f->inputs.items[i])->display_name);
  if (nout != c->f->outputs.len)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: expected %d outputs, got %d", c->f->outputs.len, nout);
  if (!out)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: the array of %d outputs is NULL (pass an array of NULL "
                    "pointers for outputs the cache allocates)", nout);
  return CF_OK;
}

/* A new signature: plans, compiles and stores its entry, then runs it. */
static cf_status miss(cf_fusion_cache *c, uint64_t h, void *stream, bool async, int nin, const DLTensor *const *in,
                      int nout, DLManagedTensor **out) {
  FcEntry *en = calloc(1, sizeof *en);
  Sink probe = {0};
  walk(&probe, nin, in, nout, out);
  if (en) en->key = malloc(sizeof(int64_t) * (size_t)(probe.n ? probe.n : 1));
  if (!en || !en->key) {
    fc_entry_free(c, en);
    return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  }
  Sink store = {0, NULL, 0, en->key, 0, true};
  walk(&store, nin, in, nout, out);
  en->hash = h;
  en->nkey = store.n;
  cf_status s = fc_plan(c, in, nout, out, en);
  if (!s) evict_to(c, c->max_entries - 1);
  if (!s && !insert(c, en)) s = fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  if (s) {
    fc_entry_free(c, en);
    return s;
  }
  push_newest(c, en);
  c->misses++;
  return run_entry(c, en, stream, async, nin, in, nout, out);
}

static cf_status execute(cf_fusion_cache *c, void *stream, bool async, int nin, const DLTensor *const *in, int nout,
                         DLManagedTensor **out) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&c->error);
  cf_status s = check_counts(c, nin, in, nout, out);
  if (s) return s;
  if (c->dyn) return fc_dyn_execute(c, stream, async, nin, in, nout, out);
  Sink hash = {0xcbf29ce484222325ull, NULL, 0, NULL, 0, true};
  if (!walk(&hash, nin, in, nout, out)) return fc_plan(c, in, nout, out, NULL); /* reports the bad tensor */
  FcEntry *en = lookup(c, hash.h, nin, in, nout, out);
  if (!en) return miss(c, hash.h, stream, async, nin, in, nout, out);
  c->hits++;
  touch(c, en);
  return run_entry(c, en, stream, async, nin, in, nout, out);
}

/* Calls from several threads at once take turns: an entry's intermediates and per-call
 * scratch, the table and the counters are shared (issue 28: a FusionDefinition executed
 * from a thread pool). */
cf_status cf_fusion_execute(cf_fusion_cache *c, int ninputs, const DLTensor *const *inputs, int noutputs,
                            DLManagedTensor **outputs) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&c->lock);
  cf_status s = execute(c, NULL, false, ninputs, inputs, noutputs, outputs);
  if (s) exec_repro_failed(c->f, ninputs, inputs, true, c->opts.backend, s, errmsg_get(&c->error)); /* $CFUSER_REPRO_DIR */
  pthread_mutex_unlock(&c->lock);
  return s;
}

cf_status cf_fusion_execute_async(cf_fusion_cache *c, void *stream, int ninputs, const DLTensor *const *inputs,
                                  int noutputs, DLManagedTensor **outputs) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&c->lock);
  cf_status s = execute(c, stream, true, ninputs, inputs, noutputs, outputs);
  pthread_mutex_unlock(&c->lock);
  return s;
}
