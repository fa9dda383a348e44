/* executor/fusion_dynamic.c: define and run of a fusion with dynamic ops (sizes given at
 * run time: ir/ops_dynamic.c).
 *
 * Such a cache plans nothing itself. Each call reads the dynamic ops' parameters
 * (ir_dynamic_params: the scalar inputs used as sizes, from host memory, and the sizes
 * they depend on, checked and normalized) and looks them up among the concrete fusions it
 * holds: a hit runs the call through that one's own cf_fusion_cache (its signatures,
 * plans and kernels as for any static fusion); a miss makes the concrete fusion
 * (ir_concretize), a cache for it, and keeps it. So a new value compiles once and equal
 * values hit, and everything after concretization is the existing machinery unchanged.
 * Key decision: an inner cache per set of values rather than values in the signature:
 * the planner, the kernel sharing across sizes (fusion_reuse.c: free symbols are found
 * once per cache's fusion) and the counters work on a static fusion as they always did.
 * The counters of the outer cache are the sums over its inner caches, and its last entry
 * the last call's, so cf_fusion_cache_last_* and print_kernel read as usual. Concrete
 * fusions are few (values, not shapes, tell them apart), kept in recency order and
 * bounded by the cache's max_entries (the least recently used dropped). */
#include <stdlib.h>
#include <string.h>

#include "executor/fusion_cache.h"

typedef struct FcDynEntry {
  int64_t *key;
  int nkey;
  cf_fusion_cache *inner;
} FcDynEntry;

struct FcDynamic {
  FcDynEntry *e; /* most recently used first */
  int n, cap;
  int64_t *words; /* the call's parameters (room for nwords) */
  int nwords;
  int64_t dropped; /* concrete fusions evicted */
  char msg[1024];
};

cf_status fc_dyn_create(cf_fusion_cache *c) {
  c->dyn = calloc(1, sizeof *c->dyn);
  if (!c->dyn) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "fusion_cache_create: out of memory");
  c->dyn->nwords = 64;
  c->dyn->words = malloc(sizeof(int64_t) * (size_t)c->dyn->nwords);
  return c->dyn->words ? CF_OK : fc_error(c, CF_ERR_OUT_OF_MEMORY, "fusion_cache_create: out of memory");
}

void fc_dyn_free(FcDynamic *d) {
  if (!d) return;
  for (int i = 0; i < d->n; i++) {
    cf_fusion_cache_destroy(d->e[i].inner);
    free(d->e[i].key);
  }
  free(d->e);
  free(d->words);
  free(d);
}

/* The call's parameters into d->words (grown when they do not fit); *n their count. */
static cf_status params(cf_fusion_cache *c, const DLTensor *const *in, int *n) {
  FcDynamic *d = c->dyn;
  for (;;) {
    cf_status s = ir_dynamic_params(c->f, in, d->words, d->nwords, n, d->msg, sizeof d->msg);
    if (s) return fc_error(c, s, "execute: %s", d->msg);
    if (*n <= d->nwords) return CF_OK;
    int64_t *w = realloc(d->words, sizeof(int64_t) * (size_t)*n);
    if (!w) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
    d->words = w, d->nwords = *n;
  }
}

/* Moves entry i to the front (most recently used). */
static void to_front(FcDynamic *d, int i) {
  FcDynEntry e = d->e[i];
  memmove(d->e + 1, d->e, sizeof *d->e * (size_t)i);
  d->e[0] = e;
}

/* A new concrete fusion for the call, its cache placed first; the oldest beyond the bound dropped. */
static cf_status add_entry(cf_fusion_cache *c, const DLTensor *const *in, int n) {
  FcDynamic *d = c->dyn;
  if (d->n == d->cap) {
    int cap = d->cap ? 2 * d->cap : 4;
    FcDynEntry *e = realloc(d->e, sizeof *e * (size_t)cap);
    if (!e) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
    d->e = e, d->cap = cap;
  }
  cf_fusion *g = ir_concretize(c->f, in, "execute");
  if (!g) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  if (g->status) {
    cf_status s = fc_error(c, g->status, "%s", cf_fusion_error(g));
    cf_fusion_destroy(g);
    return s;
  }
  FcDynEntry en = {malloc(sizeof(int64_t) * (size_t)(n ? n : 1)), n, cf_fusion_cache_create(g, &c->opts)};
  cf_fusion_destroy(g);
  if (!en.key || !en.inner) {
    free(en.key);
    cf_fusion_cache_destroy(en.inner);
    return fc_error(c, CF_ERR_OUT_OF_MEMORY, "execute: out of memory");
  }
  memcpy(en.key, d->words, sizeof(int64_t) * (size_t)n);
  if (d->n >= c->max_entries) { /* the least recently used goes */
    d->n--;
    cf_fusion_cache_destroy(d->e[d->n].inner);
    free(d->e[d->n].key);
    d->dropped++;
  }
  d->e[d->n++] = en;
  to_front(d, d->n - 1);
  return CF_OK;
}

/* c's counters: the sums over its inner caches, plus the concrete fusions evicted. */
static void sync_counters(cf_fusion_cache *c) {
  FcDynamic *d = c->dyn;
  c->len = c->nkernels = c->nlive = 0;
  c->hits = c->misses = c->reuses = c->graph_captures = c->graph_replays = 0;
  c->evictions = d->dropped;
  for (int i = 0; i < d->n; i++) {
    const cf_fusion_cache *k = d->e[i].inner;
    c->len += k->len, c->nkernels += k->nkernels, c->nlive += k->nlive;
    c->hits += k->hits, c->misses += k->misses, c->reuses += k->reuses, c->evictions += k->evictions;
    c->graph_captures += k->graph_captures, c->graph_replays += k->graph_replays;
  }
  c->last = d->n ? d->e[0].inner->last : NULL;
}

cf_status fc_dyn_execute(cf_fusion_cache *c, void *stream, bool async, int nin, const DLTensor *const *in, int nout,
                         DLManagedTensor **out) {
  FcDynamic *d = c->dyn;
  int n = 0, hit = -1;
  cf_status s = params(c, in, &n);
  for (int i = 0; !s && i < d->n && hit < 0; i++)
    if (d->e[i].nkey == n && !memcmp(d->e[i].key, d->words, sizeof(int64_t) * (size_t)n)) hit = i;
  if (!s && hit >= 0) to_front(d, hit);
  if (!s && hit < 0) s = add_entry(c, in, n);
  if (s) return s;
  cf_fusion_cache *k = d->e[0].inner;
  k->dev_override = c->dev_override;
  k->graphs = c->graphs;
  s = async ? cf_fusion_execute_async(k, stream, nin, in, nout, out) : cf_fusion_execute(k, nin, in, nout, out);
  if (s) fc_error(c, s, "%s", cf_fusion_cache_error(k));
  sync_counters(c);
  return s;
}
