/* lower/lower.c: the lowering pipeline, read top to bottom: a Fusion goes in, a kernel
 * IR (lower/kir.h) comes out, through the table of passes below. Each pass is one file.
 *
 * Key decisions: the user's Fusion is never modified (passes only read it and build the
 * kernel in the kernel's own arena); errors unwind with longjmp to this file's protected
 * entry (everything lives in arenas, so nothing leaks); CFUSER_DUMP=<pass,...|all> prints
 * the kernel IR after the named passes and CFUSER_VERIFY=1 checks it after each. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

static const struct {
  const char *name;
  void (*run)(LowerCtx *c);
} passes[] = {
    {"sort_exprs", lower_sort_exprs},
    {"ptype_propagate", lower_ptype_propagate},
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
    {"sync", lower_sync},
    {"tmem_lifetime", lower_tmem_lifetime},
    {"smem_layout", lower_smem_layout},
};

_Noreturn void lower_fail(LowerCtx *c, cf_status s, const char *fmt, ...) {
  StrBuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  free(c->error);
  c->error = sb_take(&b);
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

/* Is `name` listed in CFUSER_DUMP (comma-separated, or "all")? */
static bool dump_requested(const char *name) {
  const char *env = getenv("CFUSER_DUMP");
  if (!env || !*env) return false;
  if (!strcmp(env, "all")) return true;
  size_t n = strlen(name);
  for (const char *p = env; (p = strstr(p, name)); p += n)
    if ((p == env || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
  return false;
}

static void after_pass(LowerCtx *c, const char *name) {
  if (dump_requested(name)) {
    StrBuf b = {0};
    kir_print(&b, c->k);
    fprintf(stderr, "=== kernel IR after %s ===\n%s", name, b.data ? b.data : "");
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

static void run_passes(LowerCtx *c) {
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    passes[i].run(c);
    after_pass(c, passes[i].name);
  }
}

static void release_analyses(LowerCtx *c) {
  sched_idmap_free(c->exact);
  sched_idmap_free(c->loop_map);
  c->exact = c->loop_map = NULL;
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
