/* executor/kernel_cache.c: the in-memory kernel cache (cf_kernel_cache): compiled kernels
 * keyed by the exact fingerprint of the fusion and the target (fingerprint.c), shared by
 * the executors that are given the cache.
 * Key decision: an open-addressing table on the fingerprint's 64-bit hash, the whole key
 * compared on a hash match, so a lookup costs the fingerprint (linear in the fusion) plus
 * one comparison, and a collision cannot return another fusion's kernel. Entries live
 * until the cache is destroyed; there is no eviction. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"

typedef struct Entry {
  ExecFingerprint key; /* key.bytes == NULL: an empty slot */
  Compiled *cc;
} Entry;

struct cf_kernel_cache {
  Entry *slots;
  size_t n, cap; /* cap: a power of two, at most half full */
  int64_t hits, misses;
};

cf_kernel_cache *cf_kernel_cache_create(void) { return calloc(1, sizeof(cf_kernel_cache)); }

void cf_kernel_cache_destroy(cf_kernel_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->cap; i++) {
    free(c->slots[i].key.bytes);
    exec_compiled_free(c->slots[i].cc);
  }
  free(c->slots);
  free(c);
}

int64_t cf_kernel_cache_hits(const cf_kernel_cache *c) { return c ? c->hits : 0; }
int64_t cf_kernel_cache_misses(const cf_kernel_cache *c) { return c ? c->misses : 0; }

/* The slot holding fp, or the empty slot where it would go (cap > 0). */
static Entry *probe(Entry *slots, size_t cap, const ExecFingerprint *fp) {
  for (size_t i = fp->hash & (cap - 1);; i = (i + 1) & (cap - 1)) {
    Entry *e = &slots[i];
    if (!e->key.bytes) return e;
    if (e->key.hash == fp->hash && e->key.len == fp->len && !memcmp(e->key.bytes, fp->bytes, fp->len)) return e;
  }
}

Compiled *exec_cache_lookup(cf_kernel_cache *c, const ExecFingerprint *fp) {
  Entry *e = c->cap ? probe(c->slots, c->cap, fp) : NULL;
  if (e && e->key.bytes) {
    c->hits++;
    return e->cc;
  }
  c->misses++;
  return NULL;
}

static bool grow(cf_kernel_cache *c) {
  size_t cap = c->cap ? 2 * c->cap : 16;
  Entry *slots = calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < c->cap; i++)
    if (c->slots[i].key.bytes) *probe(slots, cap, &c->slots[i].key) = c->slots[i];
  free(c->slots);
  c->slots = slots;
  c->cap = cap;
  return true;
}

bool exec_cache_store(cf_kernel_cache *c, ExecFingerprint *fp, Compiled *cc) {
  if (2 * (c->n + 1) > c->cap && !grow(c)) return false; /* the executor keeps its kernel */
  Entry *e = probe(c->slots, c->cap, fp);
  *e = (Entry){*fp, cc};
  *fp = (ExecFingerprint){0};
  c->n++;
  return true;
}
