/* fuzz/fuzz_builder.c: libFuzzer harness for the fusion builder and the scheduler
 * (issue 16). Each input is a program of API calls: tensors of random dtypes, ranks and
 * sizes (hostile ones included), ops, transforms, parallelization, memory types,
 * allocation domains, caching, inlining, propagation and the pointwise scheduler, on
 * tensors picked from those made so far (or NULL), with the sticky error now and then
 * cleared to go on. Then the fusion is verified, printed and lowered to CUDA.
 * A finding: any crash or sanitizer report, or an internal error ("a bug in cfuser");
 * every other refusal is the API doing its job. Run with ./cfuser fuzz. */
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"

enum { MAX_TVS = 24, MAX_STEPS = 48 };

typedef struct Prog {
  FuzzIn in;
  cf_fusion *f;
  cf_tv *tvs[MAX_TVS];
  int n;
} Prog;

static cf_tv *pick(Prog *p) {
  unsigned b = fz_byte(&p->in);
  return b == 255 || !p->n ? NULL : p->tvs[b % (unsigned)p->n];
}

static void keep(Prog *p, cf_tv *t) {
  if (t && p->n < MAX_TVS) p->tvs[p->n++] = t;
}

static void make_tensor(Prog *p) {
  cf_dtype dt = (cf_dtype)fz_pick(&p->in, CF_DTYPE_COUNT + 1);
  int rank = fz_byte(&p->in) < 250 ? fz_pick(&p->in, 4) : 17;
  int64_t sizes[17];
  for (int i = 0; i < rank; i++) sizes[i] = fz_size(&p->in);
  switch (fz_pick(&p->in, 3)) {
  case 0: keep(p, cf_tensor_concrete(p->f, dt, rank, sizes)); break;
  case 1: keep(p, cf_tensor_symbolic(p->f, dt, rank)); break;
  default: keep(p, cf_tensor_strided(p->f, dt, rank)); break;
  }
}

static void make_op(Prog *p) {
  cf_fusion *f = p->f;
  cf_tv *a = pick(p), *b = pick(p);
  int axes[4] = {fz_axis(&p->in), fz_axis(&p->in), fz_axis(&p->in), fz_axis(&p->in)};
  bool flags[18];
  int out_rank = fz_byte(&p->in) < 248 ? fz_pick(&p->in, 5) : 17 + fz_pick(&p->in, 2) * 48;
  for (int i = 0; i < 18; i++) flags[i] = fz_pick(&p->in, 2);
  switch (fz_pick(&p->in, 12)) {
  case 0: keep(p, cf_set(f, a)); break;
  case 1: keep(p, fz_pick(&p->in, 2) ? cf_neg(f, a) : cf_exp(f, a)); break;
  case 2: keep(p, cf_add(f, a, b)); break;
  case 3: keep(p, fz_pick(&p->in, 2) ? cf_mul(f, a, b) : cf_lt(f, a, b)); break;
  case 4:
    keep(p, fz_pick(&p->in, 2) ? cf_add_scalar(f, a, fz_double(&p->in)) : cf_mul_scalar(f, a, fz_double(&p->in)));
    break;
  case 5: keep(p, cf_cast(f, a, (cf_dtype)fz_pick(&p->in, CF_DTYPE_COUNT + 1))); break;
  case 6: keep(p, cf_broadcast(f, a, out_rank < 18 ? out_rank : 18, flags)); break;
  case 7: keep(p, cf_sum(f, a, fz_pick(&p->in, 3), axes)); break;
  case 8: keep(p, cf_max_reduce(f, a, 1, axes)); break;
  case 9: keep(p, cf_transpose(f, a, axes[0], axes[1])); break;
  case 10: keep(p, cf_permute(f, a, fz_pick(&p->in, 5), axes)); break;
  default: keep(p, cf_where(f, a, b, pick(p))); break;
  }
}

static void transform(Prog *p) {
  cf_fusion *f = p->f;
  cf_tv *t = pick(p);
  int ax = fz_axis(&p->in), pairs[4] = {fz_axis(&p->in), fz_axis(&p->in), fz_axis(&p->in), fz_axis(&p->in)};
  switch (fz_pick(&p->in, 8)) {
  case 0: cf_split(f, t, ax, fz_size(&p->in)); break;
  case 1: cf_split_outer(f, t, ax, fz_size(&p->in)); break;
  case 2: cf_merge(f, t, ax); break;
  case 3: cf_reorder(f, t, fz_pick(&p->in, 3), pairs); break;
  case 4: cf_swizzle_xor(f, t, ax, pairs[0]); break;
  case 5: cf_parallelize(f, t, ax, (cf_parallel_type)fz_pick(&p->in, CF_PT_COUNT + 1)); break;
  case 6: cf_set_memory_type(f, t, (cf_memory_type)fz_pick(&p->in, CF_MEM_COUNT + 1)); break;
  default: cf_set_allocation_to_loop(f, t, fz_pick(&p->in, 2)); break;
  }
}

static void schedule(Prog *p) {
  cf_fusion *f = p->f;
  cf_tv *t = pick(p), *u = pick(p);
  int pos = fz_axis(&p->in);
  switch (fz_pick(&p->in, 10)) {
  case 0: cf_fusion_add_input(f, t); break;
  case 1: cf_fusion_add_output(f, t); break;
  case 2: cf_propagate_transforms(f, t); break;
  case 3: cf_parallelize_all_like(f, t, 0, NULL); break;
  case 4: cf_inline_most(f); break;
  case 5: cf_inline_at(f, t, pos); break;
  case 6: cf_compute_at(f, t, u, pos); break;
  case 7: keep(p, fz_pick(&p->in, 2) ? cf_cache_after(f, t) : cf_cache_before(f, t)); break;
  case 8: cf_schedule_pointwise(f); break;
  default: cf_fusion_clear_error(f); break;
  }
}

static void check(cf_fusion *f, const char *where) {
  if (cf_fusion_status(f) != CF_ERR_INTERNAL) return;
  fprintf(stderr, "fuzz_builder: internal error after %s: %s\n", where, cf_fusion_error(f));
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *sink;
  if (!sink) sink = fopen("/dev/null", "w");
  Prog p = {{data, size}, cf_fusion_create(), {0}, 0};
  for (int s = 0; s < MAX_STEPS && p.in.n; s++) {
    switch (fz_pick(&p.in, 4)) {
    case 0: make_tensor(&p); break;
    case 1: make_op(&p); break;
    case 2: transform(&p); break;
    default: schedule(&p); break;
    }
    check(p.f, "building");
  }
  cf_fusion_verify(p.f);
  check(p.f, "verify");
  cf_fusion_print_math(p.f, sink);
  cf_fusion_print_transforms(p.f, sink);
  cf_fusion_print_kernel(p.f, sink);
  check(p.f, "lowering");
  cf_fusion_destroy(p.f);
  return 0;
}
