/* executor/fusion_reuse.c: the kernels of define and run, shared across call signatures
 * whose plans agree (nvFuser reuses a kernel across sizes when its heuristics agree).
 *
 * A signature's entry is planned on a copy with the call's sizes (fusion_plan.c). Each of
 * its segments is then scheduled on a second copy in which the free size symbols are
 * symbolic again (fc_reuse_copy), with the plan made on the concrete one, and the kernel
 * is keyed by the exact fingerprint of that scheduled copy (executor/fingerprint.c):
 * the plan applied to the fusion's structure, so two signatures share a kernel exactly
 * when their plans agree, and a plan never gets a kernel it did not produce. What the
 * schedule assumed of the sizes is in the key (split factors, a vector width that the
 * plan checked divides the constant innermost extent; a misaligned call is devectorized
 * before keying) or checked at each run (the executor's constant sizes, lowering's
 * run-time divisibility checks).
 * Free symbols (fc_find_free_symbols): a size symbol of the user's fusion that is never
 * the extent of a reduced axis nor of the innermost axis of any tensor: the rows of a
 * softmax, the batch of a layer norm or of a pointwise op. The others stay constant,
 * because heuristics read them (the row length, the vector width) and lowering wants
 * them constant (a vector crossing a merge needs a constant inner extent).
 * Kernels live in a list of the cache, each with the count of segments holding it; an
 * evicted entry releases its segments' kernels, and a kernel no segment holds is
 * destroyed with its executor (and so its host shared object or CUDA module).
 * Key decision: reuse costs a second scheduling per new signature (a fraction of a
 * millisecond) and indexing by run-time sizes in the kernel; it saves a compile (tenths of
 * a second) per size and bounds the kernels and loaded objects by the plans, not the
 * sizes. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"
#include "executor/fusion_cache.h"

/* ---- free symbols ------------------------------------------------------------------------- */

/* A size symbol bound from an input tensor's shape (not a stride, not a constant). */
static bool size_symbol(Val *v) {
  return v && v->kind == VAL_SCALAR && !SC(v)->is_const && SC(v)->input_tv && !SC(v)->stride_of;
}

static void pin_domain(bool *free_sym, Val *const *ids, int n) {
  for (int a = 0; a < n; a++) {
    Val *e = ID(ids[a])->extent;
    if (size_symbol(e) && (a == n - 1 || ID(ids[a])->iter_type == CF_ITER_REDUCTION)) free_sym[e->id] = false;
  }
}

cf_status fc_find_free_symbols(cf_fusion_cache *c) {
  cf_fusion *f = c->f;
  c->free_sym = calloc((size_t)f->vals.len + 1, sizeof *c->free_sym);
  if (!c->free_sym) return fc_error(c, CF_ERR_OUT_OF_MEMORY, "fusion_cache_create: out of memory");
  for (int i = 0; i < f->vals.len; i++) c->free_sym[i] = size_symbol(f->vals.items[i]);
  int n;
  Arena *a = arena_create();
  Val **tvs = a ? ir_fusion_all_tvs_in(a, f, &n) : NULL;
  if (!tvs) {
    arena_destroy(a);
    return fc_error(c, CF_ERR_OUT_OF_MEMORY, "fusion_cache_create: out of memory");
  }
  for (int t = 0; t < n; t++) {
    pin_domain(c->free_sym, TV(tvs[t])->logical, TV(tvs[t])->nlogical);
    if (TV(tvs[t])->root != TV(tvs[t])->logical) pin_domain(c->free_sym, TV(tvs[t])->root, TV(tvs[t])->nroot);
  }
  arena_destroy(a);
  return CF_OK;
}

/* ---- the copy with free sizes ------------------------------------------------------------- */

/* Makes the constant s of g a size symbol bound to the first input axis of that extent;
 * false (s unchanged) when no input has one. */
static bool resymbolize(cf_fusion *g, Val *s) {
  for (int i = 0; i < g->inputs.len; i++) {
    Val *in = g->inputs.items[i];
    for (int a = 0; a < TV(in)->nlogical; a++)
      if (ID(TV(in)->logical[a])->extent == s) {
        SC(s)->is_const = false;
        SC(s)->i = 0;
        SC(s)->d = 0;
        SC(s)->input_tv = in;
        SC(s)->input_axis = a;
        return true;
      }
  }
  return false;
}

cf_fusion *fc_reuse_copy(const cf_fusion_cache *c, cf_fusion *w, Val *const *fmap, const SchedSegment *seg) {
  Val **wmap = calloc((size_t)w->vals.len + 1, sizeof *wmap);
  if (!wmap) return NULL;
  cf_fusion *g = ir_fusion_copy_part(w, seg->nexprs, seg->exprs, seg->nin, seg->ins, seg->nout, seg->outs, NULL, wmap);
  for (int i = 0; g && !g->status && i < c->f->vals.len; i++) {
    Val *in_w = c->free_sym[i] ? fmap[i] : NULL;
    Val *in_g = in_w && in_w->id < w->vals.len ? wmap[in_w->id] : NULL;
    if (in_g && in_g->kind == VAL_SCALAR && SC(in_g)->is_const) resymbolize(g, in_g);
  }
  free(wmap);
  return g;
}

/* ---- the kernels ---------------------------------------------------------------------------- */

void fc_kernel_release(cf_fusion_cache *c, FcKernel *k) {
  if (!k || --k->refs > 0) return;
  for (int i = 0; i < c->nlive; i++)
    if (c->kernels[i] == k) {
      c->kernels[i] = c->kernels[--c->nlive];
      break;
    }
  cf_executor_destroy(k->e);
  cf_fusion_destroy(k->scheduled);
  free(k->key);
  free(k);
}

static FcKernel *find(const cf_fusion_cache *c, const ExecFingerprint *fp) {
  for (int i = 0; i < c->nlive; i++) {
    FcKernel *k = c->kernels[i];
    if (k->hash == fp->hash && k->nkey == fp->len && !memcmp(k->key, fp->bytes, fp->len)) return k;
  }
  return NULL;
}

static bool add_live(cf_fusion_cache *c, FcKernel *k) {
  if (c->nlive == c->capk) {
    int cap = c->capk ? 2 * c->capk : 16;
    FcKernel **t = realloc(c->kernels, sizeof *t * (size_t)cap);
    if (!t) return false;
    c->kernels = t, c->capk = cap;
  }
  c->kernels[c->nlive++] = k;
  return true;
}

static bool cuda_usable(const char **reason) { return cf_cuda_available(reason); }

cf_status fc_kernel_get(cf_fusion_cache *c, cf_fusion *g, cf_index_type index, FcKernel **out, const char **error) {
  cf_backend b;
  char err[256];
  ExecFingerprint fp = {0};
  cf_executor_options opts = c->opts;
  opts.index_type = index;
  *error = "out of memory";
  /* No backend or no fingerprint: an unkeyed kernel, whose compile reports the error. */
  bool keyed = !exec_backend_choose(opts.backend, cuda_usable, &b, err, sizeof err) &&
               !exec_fingerprint(g, b, &opts, &fp);
  FcKernel *k = keyed ? find(c, &fp) : NULL;
  if (k) {
    k->refs++;
    c->reuses++;
    free(fp.bytes);
    cf_fusion_destroy(g);
    return *out = k, CF_OK;
  }
  k = calloc(1, sizeof *k);
  if (k) *k = (FcKernel){fp.hash, fp.bytes, fp.len, cf_executor_create(&opts), g, 1};
  if (!k || !k->e || !add_live(c, k)) {
    if (k) cf_executor_destroy(k->e), free(k);
    free(fp.bytes);
    cf_fusion_destroy(g);
    return *out = NULL, CF_ERR_OUT_OF_MEMORY;
  }
  *out = k;
  cf_status s = cf_executor_compile(k->e, g);
  if (s) *error = cf_executor_error(k->e); /* the caller reads the message, then releases */
  else c->nkernels++;
  return s;
}
