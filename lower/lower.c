/* lower/lower.c: the lowering pipeline, read top to bottom: a Fusion goes in, a kernel
 * IR (lower/kir.h) comes out, through the table of passes below. Each pass is one file.
 *
 * Key decisions: the user's Fusion is never modified (passes only read it and build the
 * kernel in the kernel's own arena); errors unwind with longjmp to this file's protected
 * entry (everything lives in arenas, so nothing leaks); CFUSER_DUMP=<name,...> prints
 * the kernel IR after the named passes (and names the executor's dumps: the source, the
 * PTX, each launch; an unknown name fails the compile with the list of valid ones), and
 * CFUSER_VERIFY=1 checks the kernel IR after each pass. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lower/lower.h"

static const struct {
  const char *name;
  void (*run)(LowerCtx *c);
} passes[] = {
    {"loop_model", lower_loop_model},
    {"sort_exprs", lower_sort_exprs},
    {"parallel_dims", lower_parallel_dims},
    {"tensors", lower_tensors},
    {"extent_checks", lower_extent_checks},
    {"validate_vectorize", lower_validate_vectorize},
    {"tmem_info", lower_tmem_info},
    {"loop_nest", lower_loop_nest},
    {"tmem_pattern", lower_tmem_pattern},
    {"validate_parallel", lower_validate_parallel},
    {"index", lower_index},
    {"predicate", lower_predicate},
    {"reduction", lower_reduction},
    {"group_reductions", lower_group_reductions},
    {"sync", lower_sync},
    {"circular_buffer", lower_circular_buffer},
    {"mma", lower_mma},
    {"warp_specialize", lower_warp_specialize},
    {"tmem_lifetime", lower_tmem_lifetime},
    {"unswitch", lower_unswitch},
    {"simplify", lower_simplify},
    {"shared_spill", lower_shared_spill},
    {"local_reuse", lower_local_reuse},
    {"smem_layout", lower_smem_layout},
    {"param_use", lower_param_use},
};

_Noreturn void lower_fail(LowerCtx *c, cf_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vset(&c->error, fmt, ap);
  va_end(ap);
  c->status = s;
  longjmp(c->unwind, 1);
}

void lower_validate(LowerCtx *c, KExpr *cond, const char *fmt, ...) {
  int64_t v;
  if (kx_is_const(cond, &v) && v) return;
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  if (kx_is_const(cond, &v)) {
    free(c->error);
    c->error = sb_take(&b);
    c->status = CF_ERR_INVALID_SCHEDULE;
    longjmp(c->unwind, 1);
  }
  KKernel *k = c->k;
  KCheck *checks = ARENA_ARRAY(c->a, KCheck, k->nchecks + 1);
  if (k->nchecks) memcpy(checks, k->checks, sizeof(KCheck) * (size_t)k->nchecks);
  checks[k->nchecks].cond = cond;
  checks[k->nchecks].message = arena_strdup(c->a, b.data ? b.data : "");
  sb_free(&b);
  k->checks = checks;
  k->nchecks++;
}

static const char *print_in_arena(LowerCtx *c, void (*print)(StrBuf *, const Val *), const Val *v) {
  StrBuf b = {0};
  print(&b, v);
  char *s = arena_strdup(c->a, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

const char *lower_id_str(LowerCtx *c, const Val *id) { return print_in_arena(c, ir_print_id, id); }
const char *lower_tv_str(LowerCtx *c, const Val *tv) { return print_in_arena(c, ir_print_tv, tv); }

static int input_param(LowerCtx *c, const Val *tv) {
  for (int i = 0; i < c->f->inputs.len; i++)
    if (c->f->inputs.items[i] == tv) return i;
  return -1;
}

KNode *lower_node(LowerCtx *c, KnKind kind) {
  KNode *n = ARENA_NEW(c->a, KNode);
  n->kind = kind;
  return n;
}

KNode *lower_if(LowerCtx *c, KExpr *cond, KNode *body) {
  KNode *g = lower_node(c, KN_IF);
  g->u.cond.cond = cond;
  kb_push(c->a, &g->u.cond.then, body);
  return g;
}

KExpr *lower_scalar(LowerCtx *c, const Val *v) {
  const Scalar *s = &v->u.scalar;
  if (s->is_const) return kx_const(c->a, s->i);
  if (!v->def) {
    int p = s->input_tv ? input_param(c, s->input_tv) : -1;
    if (p < 0)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "the symbolic size %s is not a size of a fusion input",
                 s->sym_name ? s->sym_name : "?");
    return s->stride_of ? kx_param_stride(c->a, p, s->input_axis) : kx_param_size(c->a, p, s->input_axis);
  }
  const Expr *e = v->def;
  return kx_bin(c->a, e->op, lower_scalar(c, e->in[0]), lower_scalar(c, e->in[1]));
}

/* What CFUSER_DUMP names besides the passes, each printed once per compile (launch: once
 * per run) on stderr or $CFUSER_DUMP_FILE. "all" is every pass and every one of these. */
static const char *const dump_extras[] = {
    "all",    /* everything below and every pass */
    "source", /* the whole generated source (CUDA C++ or host C): executor.c */
    "ptx",    /* the PTX of the CUDA kernel, from NVRTC: executor.c */
    "launch", /* grid, block, shared memory and time of each run: run.c */
    "segments", /* each segment of a define-and-run compile, its scheduler and why others refused:
                   executor/fusion_plan.c */
    "times",  /* each kernel's compile time: lowering, codegen, NVRTC or the C compiler: executor.c */
};

/* Is `name` (length n) a pass's name or one of dump_extras? */
static bool dump_name_known(const char *name, size_t n) {
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++)
    if (strlen(passes[i].name) == n && !strncmp(passes[i].name, name, n)) return true;
  for (size_t i = 0; i < sizeof dump_extras / sizeof dump_extras[0]; i++)
    if (strlen(dump_extras[i]) == n && !strncmp(dump_extras[i], name, n)) return true;
  return false;
}

/* Every name in CFUSER_DUMP must be known: a misspelled one is an error listing them. */
static void check_dump_names(LowerCtx *c) {
  const char *env = getenv("CFUSER_DUMP");
  for (const char *p = env; p && *p; p += *p == ',') {
    size_t n = strcspn(p, ",");
    if (n && !dump_name_known(p, n)) {
      StrBuf valid = {0};
      for (size_t i = 0; i < sizeof dump_extras / sizeof dump_extras[0]; i++)
        sb_printf(&valid, "%s%s", i ? ", " : "", dump_extras[i]);
      for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) sb_printf(&valid, ", %s", passes[i].name);
      const char *list = arena_strdup(c->a, valid.data);
      sb_free(&valid);
      lower_fail(c, CF_ERR_INVALID_ARGUMENT, "CFUSER_DUMP: unknown name \"%.*s\"; the valid names are %s",
                 (int)n, p, list);
    }
    p += n;
  }
}

bool lower_dump_requested(const char *name) {
  const char *env = getenv("CFUSER_DUMP");
  if (!env || !*env) return false;
  size_t n = strlen(name);
  for (const char *p = env; *p; p += *p == ',') {
    size_t len = strcspn(p, ",");
    if ((len == n && !strncmp(p, name, n)) || (len == 3 && !strncmp(p, "all", 3))) return true;
    p += len;
  }
  return false;
}

static void after_pass(LowerCtx *c, const char *name) {
  if (lower_dump_requested(name)) {
    StrBuf b = {0};
    kir_print(&b, c->k);
    fprintf(lower_dump_out(), "=== kernel IR after %s ===\n%s", name, b.data ? b.data : "");
    sb_free(&b);
  }
  const char *verify = getenv("CFUSER_VERIFY");
  if (verify && !strcmp(verify, "1")) {
    char err[512];
    if (!kir_verify(c->k, err, sizeof err))
      lower_fail(c, CF_ERR_INTERNAL, "internal error: kernel IR invalid after pass %s: %s; please report this bug",
                 name, err);
  }
}

double lower_seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const struct KPassTime *lower_slowest_pass(const KKernel *k) {
  const struct KPassTime *slow = NULL;
  for (int i = 0; i < k->npass_times; i++)
    if (!slow || k->pass_times[i].seconds > slow->seconds) slow = &k->pass_times[i];
  return slow;
}

/* Runs the table in order, timing each pass (a slow compile names its slowest pass). */
static void run_passes(LowerCtx *c) {
  check_dump_names(c);
  size_t n = sizeof passes / sizeof passes[0];
  c->k->pass_times = ARENA_ARRAY(c->a, struct KPassTime, n);
  for (size_t i = 0; i < n; i++) {
    double t0 = lower_seconds_now();
    passes[i].run(c);
    c->k->pass_times[i] = (struct KPassTime){passes[i].name, lower_seconds_now() - t0};
    c->k->npass_times = (int)i + 1;
    after_pass(c, passes[i].name);
  }
}

static void release_analyses(LowerCtx *c) {
  an_loop_model_free(&c->model);
}

/* A reshape moves no data in cfuser: define-and-run makes it a view between kernels
 * (executor/fusion_plan.c), and a kernel has no form for it. */
static void refuse_reshapes(LowerCtx *c) {
  for (int i = 0; i < c->f->exprs.len; i++) {
    Expr *e = c->f->exprs.items[i];
    if (e->op == OP_RESHAPE)
      lower_fail(c, CF_ERR_UNSUPPORTED, "compile: %s = reshape(%s) cannot run inside a kernel; a reshape is a view of "
                 "a fusion input or of a tensor between segments of cf_fusion_execute", TV(e->out[0])->display_name,
                 TV(e->in[0])->display_name);
  }
}

cf_status lower_fusion(cf_fusion *f, const LowerOptions *opts, KKernel **out, char **error) {
  static const LowerOptions defaults = {0};
  *out = NULL;
  *error = NULL;
  if (f->status) {
    *error = strdup(f->error ? f->error : "");
    return f->status;
  }
  Arena *a = arena_create();
  if (!a) return CF_ERR_OUT_OF_MEMORY;
  LowerCtx *c = ARENA_NEW(a, LowerCtx);
  c->f = f;
  c->opts = opts ? opts : &defaults;
  c->a = a;
  c->k = ARENA_NEW(a, KKernel);
  c->k->arena = a;
  c->info = ARENA_ARRAY(a, TvInfo, f->vals.len + 1);
  if (setjmp(c->unwind) == 0) {
    refuse_reshapes(c);
    run_passes(c);
    if (c->opts->hook) c->opts->hook(c->k, c->opts->hook_user);
  }
  release_analyses(c);
  if (c->status != CF_OK) {
    cf_status s = c->status;
    *error = c->error;
    arena_destroy(a);
    return s;
  }
  *out = c->k;
  return CF_OK;
}
