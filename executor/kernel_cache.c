/* executor/kernel_cache.c: the in-memory kernel cache (cf_kernel_cache): compiled kernels
 * keyed by a fingerprint of the fusion and the target, shared by the executors that are
 * given the cache.
 * Key decision: the fingerprint is the fusion's own printed form (math, then every
 * tensor's transforms, memory type, parallel types, compute-at and allocation domain)
 * plus the backend and architecture: everything lowering reads is in it, nothing else is,
 * and it needs no hashing scheme that could collide. Entries live until the cache is
 * destroyed; there is no eviction. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"

typedef struct Entry {
  char *key;
  Compiled *cc;
} Entry;

struct cf_kernel_cache {
  Entry *entries;
  int n, cap;
  int64_t hits, misses;
};

cf_kernel_cache *cf_kernel_cache_create(void) { return calloc(1, sizeof(cf_kernel_cache)); }

void cf_kernel_cache_destroy(cf_kernel_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) {
    free(c->entries[i].key);
    exec_compiled_free(c->entries[i].cc);
  }
  free(c->entries);
  free(c);
}

int64_t cf_kernel_cache_hits(const cf_kernel_cache *c) { return c ? c->hits : 0; }
int64_t cf_kernel_cache_misses(const cf_kernel_cache *c) { return c ? c->misses : 0; }

Compiled *exec_cache_lookup(cf_kernel_cache *c, const char *fingerprint) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->entries[i].key, fingerprint)) {
      c->hits++;
      return c->entries[i].cc;
    }
  c->misses++;
  return NULL;
}

void exec_cache_store(cf_kernel_cache *c, const char *fingerprint, Compiled *cc) {
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 8;
    Entry *e = realloc(c->entries, sizeof(Entry) * (size_t)cap);
    if (!e) {
      exec_compiled_free(cc); /* nowhere to keep it: the executor's copy was handed over */
      return;
    }
    c->entries = e;
    c->cap = cap;
  }
  c->entries[c->n].key = strdup(fingerprint);
  c->entries[c->n].cc = cc;
  c->n++;
}

char *exec_fingerprint(cf_fusion *f, cf_backend backend, const char *arch) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return NULL;
  fprintf(m, "backend %d arch %s\n", (int)backend, arch ? arch : "device");
  cf_fusion_print_math(f, m);
  cf_fusion_print_transforms(f, m);
  for (int r = 0; r < f->tmem_regions.len; r++) { /* tensor-memory regions grouped by the user */
    const TMemRegionSpec *spec = f->tmem_regions.items[r];
    fprintf(m, "tmem region %d:", r);
    for (int t = 0; t < spec->ntvs; t++) fprintf(m, " T%d", spec->tvs[t]->name);
    fprintf(m, "\n");
  }
  fclose(m);
  return buf;
}
