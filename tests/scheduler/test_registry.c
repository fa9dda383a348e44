/* The scheduler registry (scheduler/registry.h): the table's rows and their order, plans
 * printed and compared, and the invariant define and run relies on instead of retrying:
 * a row that accepts a segment plans it, applies its plan (reporting the same
 * parameters), and lowering accepts the schedule. The invariant is checked for every row
 * on every segment define and run could ask about (the whole fusion, every op alone, and
 * the greedy merge's segments) of the model fusions (tests/executor/model_fusions.h) at
 * several shapes, dtypes and two device descriptions (an H100 and one scaled down to two
 * SMs and 16 KiB of shared memory), and of random DAGs (tests/kernels/dag_gen.h, mode 4:
 * CFUSER_REGISTRY_SEEDS seeds, 60 by default, and the seeds that found bugs). The
 * registry gets lowering's answer as define and run gives it (trial rows ask it). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "executor/model_fusions.h"
#include "kernels/dag_gen.h"
#include "scheduler/registry.h"

static const SchedDevice small_device = {
    .sm_count = 2, .max_threads_per_block = 1024, .max_threads_per_sm = 2048, .regs_per_sm = 65536,
    .max_regs_per_thread = 255, .smem_per_block = 16 * 1024, .smem_per_sm = 16 * 1024, .l2_bytes = 1 << 20,
    .max_cluster = 1,
};

/* Lowering's answer, handed to the rows as define and run hands it. */
static bool lowers(cf_fusion *g, char *why) {
  bool ok = cf_fusion_print_kernel(g, NULL) == CF_OK;
  if (!ok) snprintf(why, SCHED_WHY_MAX, "%s", cf_fusion_error(g));
  return ok;
}

/* ---- the table ---------------------------------------------------------------------------- */

Test(registry, rows_in_order_of_preference) {
  int n;
  const SchedRow *const *rows = sched_rows(&n);
  const char *want[] = {"welford_translate", "matmul", "reduction", "inner_persistent", "outer_persistent",
                        "transpose", "pointwise", "view", "fallback"};
  const bool trial[] = {true, false, true, true, true, false, false, false, false};
  cr_assert_eq(n, 9);
  for (int i = 0; i < n; i++) {
    cr_expect_str_eq(rows[i]->name, want[i]);
    cr_expect_eq(sched_row_named(want[i]), rows[i]);
    cr_expect_eq(rows[i]->kind, strcmp(want[i], "view") ? SCHED_ROW_KERNEL : SCHED_ROW_VIEW);
    cr_expect_eq(rows[i]->trial, trial[i], "%s", want[i]);
  }
  cr_expect_null(sched_row_named("serial"));
}

/* A plan is a value: printed, compared by row, words and text. */
Test(registry, plans_print_and_compare) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){8, 1000});
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_relu(f, x));
  SchedPlan a, b;
  StrBuf why = {0};
  cr_assert(sched_choose(f, &(SchedCall){0, NULL, sched_device_default()}, lowers, &a, &why));
  cr_expect_str_eq(why.data, "welford_translate: no Welford reduction whose states only its fields read; "
                             "matmul: no sum of a product; reduction: the fusion has no reduction; inner_persistent: the fusion has no reduction; "
                             "outer_persistent: the fusion has no reduction; transpose: no input is transposed: the "
                             "innermost axis of T1 is the innermost axis of every input (a pointwise fusion)");
  char text[SCHED_PARAMS_MAX + 64];
  sched_plan_print(&a, text, sizeof text);
  cr_expect_str_eq(text, "pointwise (vector=4 threads=128)");
  b = a;
  cr_expect(sched_plan_equal(&a, &b));
  b.params.w[1] = 2;
  cr_expect_not(sched_plan_equal(&a, &b));
  b = a;
  b.row = sched_row_named("fallback");
  cr_expect_not(sched_plan_equal(&a, &b));
  sb_free(&why);
  cf_fusion_destroy(f);
}

/* ---- the invariant ------------------------------------------------------------------------- */

typedef struct Inv {
  Arena *a;
  cf_fusion *w;
  const DLTensor *const *in;
  const SchedDevice *dev;
  const char *what; /* the case, for messages */
  int accepted;     /* (segment, row) pairs checked */
} Inv;

/* The call's tensor for w's input, else the sizes of an intermediate (NULL data). */
static const DLTensor *describe(Inv *v, Val *tv) {
  for (int i = 0; i < v->w->inputs.len; i++)
    if (v->w->inputs.items[i] == tv) return v->in[i];
  DLTensor *t = ARENA_NEW(v->a, DLTensor);
  int64_t *shape = ARENA_ARRAY(v->a, int64_t, CF_MAX_RANK);
  t->shape = shape;
  t->dtype = (DLDataType){kDLFloat, 32, 1};
  for (int x = 0; x < TV(tv)->nlogical; x++)
    if (ID(TV(tv)->logical[x])->iter_type != CF_ITER_REDUCTION)
      ir_scalar_const_value(ID(TV(tv)->logical[x])->extent, &shape[t->ndim++]);
  return t;
}

static SchedCall call_of(Inv *v, const SchedSegment *s) {
  const DLTensor **ins = ARENA_ARRAY(v->a, const DLTensor *, s->nin + 1);
  for (int i = 0; i < s->nin; i++) ins[i] = describe(v, s->ins[i]);
  return (SchedCall){s->nin, ins, v->dev};
}

static cf_fusion *copy_of(Inv *v, const SchedSegment *s) {
  return ir_fusion_copy_part(v->w, s->nexprs, s->exprs, s->nin, s->ins, s->nout, s->outs, NULL, NULL);
}

/* Every row that accepts segment s (as the registry asks, with lowering's answer for a
 * trial row) plans it, applies the plan, and lowering accepts. */
static void check_segment(Inv *v, const SchedSegment *s) {
  int n;
  const SchedRow *const *rows = sched_rows(&n);
  SchedCall call = call_of(v, s);
  cf_fusion *g = copy_of(v, s);
  cr_assert(g && !g->status, "%s", v->what);
  for (int r = 0; r < n; r++) {
    char why[SCHED_WHY_MAX] = "";
    if (!sched_row_accepts(rows[r], g, &call, lowers, why)) continue;
    SchedParams p, used;
    char *math = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&math, &len);
    cf_fusion_print_math(g, m);
    fclose(m);
    cr_expect(rows[r]->plan(g, &call, &p, why), "%s: %s accepted but did not plan: %s\n%s", v->what, rows[r]->name,
              why, math);
    cf_fusion *h = copy_of(v, s);
    cf_status st = rows[r]->apply(&h, &call, &p, &used);
    cr_expect_eq(st, CF_OK, "%s: %s accepted but did not apply: %s\n%s", v->what, rows[r]->name, cf_fusion_error(h),
                 math);
    cr_expect(st || sched_params_equal(&p, &used), "%s: %s planned (%s), applied (%s)", v->what, rows[r]->name, p.text,
              used.text);
    if (!st && rows[r]->kind == SCHED_ROW_KERNEL) {
      st = cf_fusion_print_kernel(h, NULL);
      cr_expect_eq(st, CF_OK, "%s: %s accepted, lowering refused: %s\n%s", v->what, rows[r]->name, cf_fusion_error(h),
                   math);
    }
    v->accepted++;
    free(math);
    cf_fusion_destroy(h);
  }
  cf_fusion_destroy(g);
}

static bool any_row(void *ctx, const SchedSegment *s) {
  Inv *v = ctx;
  SchedCall call = call_of(v, s);
  cf_fusion *g = copy_of(v, s);
  bool ok = g && !g->status && sched_any_accepts(g, &call, lowers);
  cf_fusion_destroy(g);
  return ok;
}

static bool no_row(void *ctx, const SchedSegment *s) { return (void)ctx, (void)s, false; }

/* The invariant on f for a call with inputs in: every segment of three segmentations. */
static int check_fusion(cf_fusion *f, const DLTensor *const *in, const SchedDevice *dev, const char *what) {
  Inv v = {arena_create(), NULL, in, dev, what, 0};
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(v.a, f, &n);
  v.w = ir_fusion_copy_part(f, n, exprs, f->inputs.len, (Val *const *)f->inputs.items, f->outputs.len,
                            (Val *const *)f->outputs.items, in, NULL);
  cr_assert(v.w && !v.w->status && !ir_check_extents(v.w, "test") && !sched_prepare_views(v.w, in) &&
                !sched_hoist_broadcasts(v.w),
            "%s: %s", what, cf_fusion_error(v.w));
  SchedSegment whole = sched_whole(v.a, v.w), *segs;
  check_segment(&v, &whole);
  for (int pass = 0; pass < 2; pass++) {
    int k = sched_segment(v.a, v.w, pass ? any_row : no_row, &v, &segs);
    cr_assert_gt(k, 0, "%s", what);
    for (int i = 0; i < k; i++) check_segment(&v, &segs[i]);
  }
  cf_fusion_destroy(v.w);
  arena_destroy(v.a);
  return v.accepted;
}

static DLManagedTensor *tensor(cf_dtype dt, int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(dt, rank, sizes);
  cr_assert(t);
  return t;
}

Test(registry, accepted_schedules_lower_for_model_fusions, .timeout = 600) {
  const cf_dtype dts[] = {CF_FLOAT, CF_BFLOAT16};
  const SchedDevice *devs[] = {sched_device_default(), &small_device};
  int accepted = 0;
  for (int k = 0; k < MF_NCASES; k++)
    for (int d = 0; d < 2; d++)
      for (int s = 0; s < MF_NSHAPES; s++) {
        cf_fusion *f = cf_fusion_create();
        mf_cases[k].build(f, dts[d]);
        cr_assert_eq(cf_fusion_status(f), CF_OK, "%s: %s", mf_cases[k].name, cf_fusion_error(f));
        MfInputs mi = mf_cases[k].inputs(mf_shapes[s][0], mf_shapes[s][1]);
        DLManagedTensor *t[4];
        const DLTensor *in[4];
        for (int i = 0; i < mi.n; i++) t[i] = tensor(dts[d], mi.rank[i], mi.sizes[i]), in[i] = &t[i]->dl_tensor;
        char what[128];
        snprintf(what, sizeof what, "%s %s [%lld, %lld] on %s", mf_cases[k].name, cf_dtype_name(dts[d]),
                 (long long)mf_shapes[s][0], (long long)mf_shapes[s][1], s % 2 ? "the small device" : "an H100");
        accepted += check_fusion(f, in, devs[s % 2], what);
        for (int i = 0; i < mi.n; i++) cf_tensor_free(t[i]);
        cf_fusion_destroy(f);
      }
  cr_expect_gt(accepted, MF_NCASES * 2 * MF_NSHAPES * 3, "only %d (segment, row) pairs accepted", accepted);
}

/* The invariant on the random DAG of one seed (mode 4); the (segment, row) pairs checked. */
static int check_seed(uint64_t seed) {
  cf_fusion *f = cf_fusion_create();
  DgCase c;
  int accepted = 0;
  dg_build(&c, f, seed, DG_UNSCHEDULED);
  if (cf_fusion_status(f) == CF_OK) {
    DLManagedTensor *t[DG_MAX_INPUTS];
    const DLTensor *in[DG_MAX_INPUTS];
    for (int i = 0; i < c.nin; i++) t[i] = tensor(CF_FLOAT, c.in_rank[i], c.in_sizes[i]), in[i] = &t[i]->dl_tensor;
    char what[64];
    snprintf(what, sizeof what, "random DAG seed %llu", (unsigned long long)seed);
    accepted = check_fusion(f, in, seed % 2 ? &small_device : sched_device_default(), what);
    for (int i = 0; i < c.nin; i++) cf_tensor_free(t[i]);
  }
  cf_fusion_destroy(f);
  return accepted;
}

Test(registry, accepted_schedules_lower_for_random_dags, .timeout = 600) {
  const char *env = getenv("CFUSER_REGISTRY_SEEDS");
  int seeds = env ? atoi(env) : 60, accepted = 0;
  for (int seed = 0; seed < seeds; seed++) accepted += check_seed((uint64_t)seed);
  cr_expect_gt(accepted, seeds, "only %d (segment, row) pairs accepted", accepted);
}

/* Seeds of the DAG fuzzer's define-and-run mode that found bugs (test_random_dags.c). */
Test(registry, accepted_schedules_lower_for_the_fuzzers_pinned_seeds) {
  const uint64_t seeds[] = {89, 122, 401, 438, 1996};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) cr_expect_gt(check_seed(seeds[i]), 0);
}
