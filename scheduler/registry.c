/* scheduler/registry.c: the table of define and run's rows (registry.h), in the order
 * they are asked, the schedulers that keep accepts/schedule entry points (reduction,
 * inner and outer persistent normalization) wrapped as rows, plans printed and compared,
 * and helpers about the call that several schedulers share.
 * Key decisions: the order is the preference: the Welford translation first (a var_mean
 * normalization whose rows fit registers: two sums in one persistent kernel), a scheduler
 * specialized for a pattern before a general one that would also take it (transpose
 * before pointwise), the view of a reshape, and the fallback last (it takes any one op).
 * A wrapped scheduler's parameters are the text its schedule prints, so its plan
 * schedules a scratch copy; its apply schedules again and reports what it printed, which
 * the caller compares with the plan. Wrapped rows are trial rows (registry.h): their
 * accepts is not exact (the invariant test and DAG seed 1996 found inner persistent
 * schedules lowering refuses: a 3-D fusion with two reductions, one of exp(y), and exp(y)
 * computed again after them), so the registry asks lowering about a trial schedule. Alignment is not the rows' to check: the executor
 * devectorizes a schedule made for a call with a misaligned tensor (sched_devectorize). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "ir/dtype.h"
#include "ir/ir.h"
#include "scheduler/registry.h"

/* ---- plans ------------------------------------------------------------------------------ */

void sched_params_text(SchedParams *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->text, sizeof p->text, fmt, ap);
  va_end(ap);
  p->nwords = 0;
}

bool sched_params_equal(const SchedParams *a, const SchedParams *b) {
  if (a->nwords != b->nwords || strcmp(a->text, b->text)) return false;
  for (int i = 0; i < a->nwords; i++)
    if (a->w[i] != b->w[i]) return false;
  return true;
}

bool sched_plan_equal(const SchedPlan *a, const SchedPlan *b) {
  return a->row == b->row && sched_params_equal(&a->params, &b->params);
}

void sched_plan_print(const SchedPlan *p, char *out, size_t cap) {
  snprintf(out, cap, "%s (%s)", p->row ? p->row->name : "none", p->params.text);
}

/* ---- the wrapped schedulers --------------------------------------------------------------- */

/* Plans with a wrapped scheduler: its schedule of a scratch copy, whose printed
 * parameters are the plan. */
static bool wrapped_plan(const SchedHeuristic *h, cf_fusion *f, const SchedCall *call, SchedParams *p, char *why) {
  *p = (SchedParams){0};
  cf_fusion *g = cf_fusion_copy(f);
  cf_status s = !g ? CF_ERR_OUT_OF_MEMORY : g->status ? g->status : h->schedule(g, call, p->text);
  if (s) snprintf(why, SCHED_WHY_MAX, "%s: accepted, but its schedule failed: %.180s", h->name,
                  g ? cf_fusion_error(g) : "out of memory");
  cf_fusion_destroy(g);
  return s == CF_OK;
}

static cf_status wrapped_apply(const SchedHeuristic *h, cf_fusion **f, const SchedCall *call, SchedParams *used) {
  *used = (SchedParams){0};
  return h->schedule(*f, call, used->text);
}

#define WRAPPED_ROW(row, heuristic)                                                                              \
  static bool row##_plan(cf_fusion *f, const SchedCall *call, SchedParams *p, char *why) {                       \
    return wrapped_plan(&heuristic, f, call, p, why);                                                            \
  }                                                                                                              \
  static cf_status row##_apply(cf_fusion **f, const SchedCall *call, const SchedParams *p, SchedParams *used) {  \
    (void)p;                                                                                                     \
    return wrapped_apply(&heuristic, f, call, used);                                                             \
  }                                                                                                              \
  static bool row##_can(cf_fusion *f, const SchedCall *call, char *why) { return heuristic.accepts(f, call, why); } \
  static const SchedRow row = {#row, SCHED_ROW_KERNEL, true, row##_can, row##_plan, row##_apply};

WRAPPED_ROW(reduction, sched_reduction_heuristic)
WRAPPED_ROW(inner_persistent, sched_inner_persistent_heuristic)
WRAPPED_ROW(outer_persistent, sched_outer_persistent_heuristic)

/* ---- the table ---------------------------------------------------------------------------- */

static const SchedRow *const table[] = {
    &sched_welford_row,  /* var_mean normalizations, translated to two sums for inner_persistent */
    &sched_matmul_row,   /* a sum of a product of two operands (cf_matmul, cf_linear): before
                          * reduction, which would take it as a plain sum */
    &reduction,
    &inner_persistent,   /* normalizations: several reductions broadcast back */
    &outer_persistent,   /* the same over outer axes (batch norm); after the two above, which
                          * refuse outer normalizations */
    &sched_transpose_row, /* before pointwise, which would write uncoalesced */
    &sched_pointwise_row,
    &sched_view_row,     /* a reshape alone: no kernel */
    &sched_fallback_row, /* any one op, parallel over its output */
};

const SchedRow *const *sched_rows(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

const SchedRow *sched_row_named(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(table[i]->name, name)) return table[i];
  return NULL;
}

/* A trial row's schedule of a scratch copy of f, given to lowers. */
static bool trial(const SchedRow *r, cf_fusion *f, const SchedCall *call, SchedLowers lowers, char *why) {
  SchedParams p, used;
  char low[SCHED_WHY_MAX] = "";
  if (!r->plan(f, call, &p, why)) return false;
  cf_fusion *g = cf_fusion_copy(f);
  bool ok = g && !g->status && r->apply(&g, call, &p, &used) == CF_OK && lowers(g, low);
  if (!ok) snprintf(why, SCHED_WHY_MAX, "%s: its schedule is refused by lowering: %.170s", r->name,
                    *low ? low : g ? cf_fusion_error(g) : "out of memory");
  cf_fusion_destroy(g);
  return ok;
}

/* One rule for every kernel row: no kernel reads a tensor in two orders (x^T + x; or a
 * matmul's operand added to its output, which makes K and N one axis). The loop model
 * refuses every schedule of such a segment (analysis/loop_model.c), so no row takes it
 * and segmentation cuts it; asked after a row's own checks accept, once per query of the rows (the maps cost a walk). */
static bool reads_in_two_orders(cf_fusion *f, char *what) {
  bool two = false;
  for (int k = 0; k < 2 && !two; k++) {
    IdMap *m = an_idmap_build(f, k == 1);
    const Expr *op;
    const Val *tv, *a, *b;
    if (m && an_idmap_self_mapping(m, &op, &tv, &a, &b)) {
      snprintf(what, SCHED_WHY_MAX, "the segment reads %s in two orders (two of its axes are one axis through %s): "
               "no kernel computes it", TV((Val *)tv)->display_name, TV(op->out[0])->display_name);
      two = true;
    }
    if (m) an_idmap_free(m);
  }
  return two;
}

/* The segment's answer to reads_in_two_orders, asked once per query of the rows (the
 * first kernel row that accepts asks; the others reuse it). */
typedef struct OrderVerdict {
  int two; /* -1 not asked yet, 0 one order, 1 two orders */
  char what[SCHED_WHY_MAX];
} OrderVerdict;

/* Whether f writes a packed output (float4_e2m1fn): a kernel writes one only through vector
 * copies of an even width (lower/vectorize.c), which not every row's schedule makes (the
 * transpose row's threads write one element each), so such a segment is a trial for every
 * kernel row: lowering says which schedules write it, and the fallback's pairs always do. */
static bool writes_packed(const cf_fusion *f) {
  for (int o = 0; o < f->outputs.len; o++)
    if (ir_dtype_is_packed(((const Val *)f->outputs.items[o])->dtype)) return true;
  return false;
}

static bool row_accepts(const SchedRow *r, cf_fusion *f, const SchedCall *call, SchedLowers lowers, OrderVerdict *v,
                        char *why) {
  if (!r->can_schedule(f, call, why)) return false;
  bool trial_row = r->trial;
  if (r->kind == SCHED_ROW_KERNEL) {
    if (v->two < 0) v->two = reads_in_two_orders(f, v->what);
    if (v->two) return snprintf(why, SCHED_WHY_MAX, "%s: %.200s", r->name, v->what), false;
    trial_row = trial_row || writes_packed(f);
  }
  return !trial_row || !lowers || trial(r, f, call, lowers, why);
}

bool sched_row_accepts(const SchedRow *r, cf_fusion *f, const SchedCall *call, SchedLowers lowers, char *why) {
  OrderVerdict v = {.two = -1};
  return row_accepts(r, f, call, lowers, &v, why);
}

bool sched_choose(cf_fusion *f, const SchedCall *call, SchedLowers lowers, SchedPlan *out, StrBuf *refusals) {
  OrderVerdict v = {.two = -1};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char why[SCHED_WHY_MAX] = "";
    if (row_accepts(table[i], f, call, lowers, &v, why) && table[i]->plan(f, call, &out->params, why)) {
      out->row = table[i];
      return true;
    }
    if (refusals) sb_printf(refusals, "%s%s", refusals->len ? "; " : "", why);
  }
  out->row = NULL;
  return false;
}

bool sched_any_accepts(cf_fusion *f, const SchedCall *call, SchedLowers lowers) {
  OrderVerdict v = {.two = -1};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    char why[SCHED_WHY_MAX];
    if (row_accepts(table[i], f, call, lowers, &v, why)) return true;
  }
  return false;
}

/* ---- the device and the call -------------------------------------------------------------- */

#define H100_RESOURCES                                                                        \
  .sm_count = 132, .max_threads_per_block = 1024, .max_threads_per_sm = 2048, .regs_per_sm = 65536, \
  .max_regs_per_thread = 255, .smem_per_block = 227 * 1024, .smem_per_sm = 228 * 1024,        \
  .l2_bytes = 50 * 1024 * 1024, .max_cluster = 8,                                             \
  .max_coop_threads = 65536 /* the host backend's CFH_MAX_RESIDENT_THREADS (host_grid.h) */

const SchedDevice sched_device_h100 = {H100_RESOURCES, .cc = 90};
const SchedDevice sched_device_b200 = {.sm_count = 148, .max_threads_per_block = 1024, .max_threads_per_sm = 2048,
                                       .regs_per_sm = 65536, .max_regs_per_thread = 255, .smem_per_block = 227 * 1024,
                                       .smem_per_sm = 228 * 1024, .l2_bytes = 126 * 1024 * 1024, .max_cluster = 8,
                                       .max_coop_threads = 65536, .cc = 100};
/* The host backend's: an H100's resources, no architecture (the portable instructions). */
static const SchedDevice sched_device_host = {H100_RESOURCES, .cc = 0};

const SchedDevice *sched_device_default(void) { return &sched_device_host; }

/* A packed tensor (float4_e2m1fn) is read and written byte by byte (cf_fp4_pack), its
 * vectors included: any address will do. */
static bool needs_alignment(const DLTensor *t) {
  cf_dtype dt;
  return !ir_dtype_from_dl(t->dtype, &dt) || !ir_dtype_is_packed(dt);
}

bool sched_aligned16(int n, const DLTensor *const *t) {
  for (int i = 0; i < n; i++)
    if (t[i] && needs_alignment(t[i]) && ((uintptr_t)t[i]->data + t[i]->byte_offset) % 16) return false;
  return true;
}

bool sched_dl_contiguous(const DLTensor *t) { return ir_dl_noncontiguous_axis(t, NULL) < 0; }

/* A packed tensor keeps its vectors: they need no alignment, and its global writes need
 * them (one thread writes both elements of a byte, lower/vectorize.c). */
void sched_devectorize(cf_fusion *f) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind != VAL_TV || ir_dtype_is_packed(v->dtype)) continue;
    for (int a = 0; a < TV(v)->nloop; a++)
      if (ID(TV(v)->loop[a])->ptype == CF_PT_VECTORIZE) ID(TV(v)->loop[a])->ptype = CF_PT_SERIAL;
  }
}

bool sched_vectorize_innermost(cf_fusion *f, Val *tv) {
  int n = TV(tv)->nloop;
  int64_t v;
  if (n == 0 || !ir_scalar_const_value(ID(TV(tv)->loop[n - 1])->extent, &v) ||
      an_vector_refusal_any(tv, TV(tv)->loop[n - 1], v))
    return false;
  return cf_parallelize(f, ir_tv_handle(tv), n - 1, CF_PT_VECTORIZE) == CF_OK;
}
