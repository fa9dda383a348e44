/* executor/fusion_cache.c: cf_fusion_cache and cf_fusion_execute (define and run): the
 * object, the signature of a call, the table of compiled entries and running an entry.
 * A call's signature is a list of 64-bit words (per input: dtype, rank, device type and
 * 16-byte alignment packed in one word, then the sizes, then the strides with those of
 * size-1 axes zeroed and missing ones made contiguous; per output: absent, given aligned
 * or given misaligned). One walk over the call feeds the words to a sink that hashes
 * them, compares them with a stored key, or stores them, so a cached call hashes and
 * compares without building the key anywhere and allocates nothing.
 * Key decision: entries live in an open-addressing table of pointers that doubles at
 * half load; no entry is ever dropped (a workload has few signatures, and dropping one
 * would silently recompile). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "executor/repro.h"
#include "scheduler/heuristic.h"

cf_status fc_error(cf_fusion_cache *c, cf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vset(&c->error, fmt, ap);
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
  int64_t stride = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    put(s, t->shape[d] == 1 ? 0 : t->strides ? t->strides[d] : stride);
    stride *= t->shape[d];
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
  c->f = cf_fusion_copy(f);
  if (!c->f) {
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
  }
  if (c->f->status) c->status = fc_error(c, c->f->status, "%s", cf_fusion_error(c->f));
  else if (!c->f->outputs.len) c->status = fc_error(c, CF_ERR_INVALID_ARGUMENT, "fusion_cache_create: the fusion has no outputs");
  return c;
}

void fc_entry_clear(FcEntry *en) {
  for (int i = 0; i < en->nseg; i++) {
    FcSegment *s = &en->seg[i];
    cf_executor_destroy(s->e);
    cf_fusion_destroy(s->scheduled);
    free(s->in_ref);
    free(s->out_ref);
    free(s->ins);
    free(s->outs);
  }
  for (int i = 0; i < en->nbuf; i++) cf_tensor_free(en->bufs[i]);
  free(en->seg);
  free(en->bufs);
  free(en->given);
  *en = (FcEntry){.hash = en->hash, .key = en->key, .nkey = en->nkey};
}

void fc_entry_free(FcEntry *en) {
  if (!en) return;
  fc_entry_clear(en);
  free(en->key);
  free(en);
}

void cf_fusion_cache_destroy(cf_fusion_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->cap; i++) fc_entry_free(c->slots[i]);
  free(c->slots);
  cf_fusion_destroy(c->f);
  free(c->error);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

const char *cf_fusion_cache_error(const cf_fusion_cache *c) {
  if (!c) return "fusion cache is NULL";
  return c->error ? c->error : "";
}
int cf_fusion_cache_num_entries(const cf_fusion_cache *c) { return c ? c->len : 0; }
int cf_fusion_cache_num_kernels(const cf_fusion_cache *c) { return c ? c->nkernels : 0; }
int64_t cf_fusion_cache_hits(const cf_fusion_cache *c) { return c ? c->hits : 0; }
int64_t cf_fusion_cache_misses(const cf_fusion_cache *c) { return c ? c->misses : 0; }
int cf_fusion_cache_last_segments(const cf_fusion_cache *c) { return c && c->last ? c->last->nseg : 0; }
const char *cf_fusion_cache_last_scheduler(const cf_fusion_cache *c, int i) {
  return c && c->last && i >= 0 && i < c->last->nseg ? c->last->seg[i].scheduler : NULL;
}

cf_executor *cf_fusion_cache_last_executor(const cf_fusion_cache *c, int i) {
  return c && c->last && i >= 0 && i < c->last->nseg ? c->last->seg[i].e : NULL;
}

cf_status cf_fusion_cache_print_kernel(cf_fusion_cache *c, int i, FILE *out) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  if (!c->last || i < 0 || i >= c->last->nseg)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "print_kernel: segment %d out of range: the last call ran %d", i,
                    cf_fusion_cache_last_segments(c));
  if (!c->last->seg[i].e) { /* a view: a reshape runs no kernel */
    fprintf(out, "// segment %d: a view (reshape), no kernel\n", i);
    return CF_OK;
  }
  cf_fusion *g = c->last->seg[i].scheduled;
  cf_status s = cf_fusion_print_kernel(g, out);
  return s ? fc_error(c, s, "%s", cf_fusion_error(g)) : CF_OK;
}

cf_status cf_fusion_cache_synchronize(cf_fusion_cache *c) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
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

static cf_status run_segments(cf_fusion_cache *c, FcEntry *en, void *stream, bool async, int nin,
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
    st = s->e ? run_kernel(c, s->e, stream, async, s->nin, s->ins, s->nout, s->outs) : run_view(c, en, s, nin, nout);
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

static cf_status run_entry(cf_fusion_cache *c, FcEntry *en, void *stream, bool async, int nin,
                           const DLTensor *const *in, int nout, DLManagedTensor **out) {
  c->last = en;
  if (en->direct) return run_kernel(c, en->seg[0].e, stream, async, nin, in, nout, out);
  return run_segments(c, en, stream, async, nin, in, nout, out);
}

/* ---- a call ------------------------------------------------------------------------------ */

static cf_status check_counts(cf_fusion_cache *c, int nin, const DLTensor *const *in, int nout, DLManagedTensor **out) {
  if (c->status) return c->status;
  if (nin != c->f->inputs.len || (nin && !in))
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: expected %d inputs, got %d", c->f->inputs.len, nin);
  if (nout != c->f->outputs.len || !out)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "execute: expected %d outputs, got %d", c->f->outputs.len, nout);
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
    fc_entry_free(en);
    return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  }
  Sink store = {0, NULL, 0, en->key, 0, true};
  walk(&store, nin, in, nout, out);
  en->hash = h;
  en->nkey = store.n;
  cf_status s = fc_plan(c, in, nout, out, en);
  if (!s && !insert(c, en)) s = fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  if (s) {
    fc_entry_free(en);
    return s;
  }
  c->misses++;
  for (int k = 0; k < en->nseg; k++) c->nkernels += en->seg[k].e != NULL; /* views are no kernels */
  return run_entry(c, en, stream, async, nin, in, nout, out);
}

static cf_status execute(cf_fusion_cache *c, void *stream, bool async, int nin, const DLTensor *const *in, int nout,
                         DLManagedTensor **out) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  cf_status s = check_counts(c, nin, in, nout, out);
  if (s) return s;
  Sink hash = {0xcbf29ce484222325ull, NULL, 0, NULL, 0, true};
  if (!walk(&hash, nin, in, nout, out)) return fc_plan(c, in, nout, out, NULL); /* reports the bad tensor */
  FcEntry *en = lookup(c, hash.h, nin, in, nout, out);
  if (!en) return miss(c, hash.h, stream, async, nin, in, nout, out);
  c->hits++;
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
  if (s) exec_repro_failed(c->f, ninputs, inputs, true, c->opts.backend, s, c->error); /* $CFUSER_REPRO_DIR */
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
