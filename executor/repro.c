/* executor/repro.c: cf_fusion_write_repro: a fusion written back as a standalone C program
 * that rebuilds it through the public API (its inputs, every op, and its hand schedule:
 * splits, merges, reorders, parallel types, memory types, inlining positions), makes
 * random inputs of the failing call's shapes and dtypes, and compiles and runs it as the
 * call did (define and run for an unscheduled fusion, an executor otherwise). Run alone,
 * it prints "repro: <STATUS>: <message>" and exits 1 when the call fails, "repro: ok" and 0
 * otherwise: a bug report in one file (nvFuser's fd.repro()). Python's fd.repro() writes
 * the Python twin (python/cfuser/_show.py) from the same walk (exec_repro_walk).
 *
 * Key decisions: the program is generated from the IR, not from a log of calls, so it
 * reproduces fusions built in any way (C, Python, cf_fusion_copy); what the public API
 * cannot rebuild exactly (rfactor, swizzles, a binary op with a run-time scalar other than
 * a mean's count, symbolic expands) is still written the closest way and listed in the
 * header comment, never silently dropped. Tensors are named t<N> after their T<N>. */
#include "executor/repro.h"

#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"

const char *exec_repro_dtype_enum(cf_dtype t) {
  static const char *const names[] = {
#define CF_X(e, name, size, ctype, dlcode, dlbits) #e,
      CF_DTYPE_TABLE(CF_X)
#undef CF_X
  };
  return (unsigned)t < CF_DTYPE_COUNT ? names[t] : "CF_FLOAT";
}

static const char *ptype_enum(cf_parallel_type p) {
  static const char *const names[] = {
#define CF_X(e, name) #e,
      CF_PARALLEL_TYPE_TABLE(CF_X)
#undef CF_X
  };
  return (unsigned)p < CF_PT_COUNT ? names[p] : "CF_PT_SERIAL";
}

static const char *mem_enum(cf_memory_type m) {
  static const char *const names[] = {
#define CF_X(e, letter) #e,
      CF_MEMORY_TYPE_TABLE(CF_X)
#undef CF_X
  };
  return (unsigned)m < CF_MEM_COUNT ? names[m] : "CF_MEM_LOCAL";
}

static void tv_var(StrBuf *b, const Val *tv) { sb_printf(b, "t%d", tv->name); }

/* "{2, 3, 4}" of n ints, or of the constant extents of domain ids (-1 where symbolic). */
static void ints(StrBuf *b, int n, const int *v) {
  sb_puts(b, "(int[]){");
  for (int i = 0; i < n; i++) sb_printf(b, "%s%d", i ? ", " : "", v[i]);
  sb_puts(b, n ? "}" : "0}");
}

static void extents(StrBuf *b, Val **ids, int n, ReproWalk *w) {
  sb_puts(b, "(int64_t[]){");
  for (int i = 0; i < n; i++) {
    Val *e = ID(ids[i])->extent;
    bool c = ir_scalar_is_const(e);
    if (!c) w->approximate = true;
    sb_printf(b, "%s%lld", i ? ", " : "", c ? (long long)SC(e)->i : -1LL);
  }
  sb_puts(b, n ? "}" : "0}");
}

static void note(ReproWalk *w, const char *what, const Val *tv) {
  sb_printf(&w->notes, " *   - %s (T%d)\n", what, tv->name);
  w->approximate = true;
}

/* ---- the math ---------------------------------------------------------------------------- */

static void emit_input(ReproWalk *w, Val *tv) {
  TensorView *t = TV(tv);
  StrBuf *b = &w->c;
  sb_puts(b, "  cf_tv *");
  tv_var(b, tv);
  if (t->nlogical == 0) {
    sb_printf(b, " = cf_scalar_input(f, %s);\n", exec_repro_dtype_enum(tv->dtype));
    return;
  }
  bool concrete = true;
  for (int i = 0; i < t->nlogical; i++) concrete &= ir_scalar_is_const(ID(t->logical[i])->extent);
  if (t->has_strides) sb_printf(b, " = cf_tensor_strided(f, %s, %d);\n", exec_repro_dtype_enum(tv->dtype), t->nlogical);
  else if (!concrete) sb_printf(b, " = cf_tensor_symbolic(f, %s, %d);\n", exec_repro_dtype_enum(tv->dtype), t->nlogical);
  else {
    sb_printf(b, " = cf_tensor_concrete(f, %s, %d, ", exec_repro_dtype_enum(tv->dtype), t->nlogical);
    extents(b, t->logical, t->nlogical, w);
    sb_puts(b, ");\n");
  }
}

/* The logical axes of tv's input that its root domain reduces. */
static int reduced_axes(const Val *out, int *axes) {
  const TensorView *t = TV((Val *)out);
  Val **root = t->nroot ? t->root : t->logical;
  int n = 0, nr = t->nroot ? t->nroot : t->nlogical;
  for (int i = 0; i < nr; i++)
    if (ID(root[i])->iter_type == CF_ITER_REDUCTION) axes[n++] = i;
  return n;
}

static const char *reduction_call(IrOp op) {
  switch (op) {
  case OP_SUM: return "cf_sum";
  case OP_MAX_REDUCE: return "cf_max_reduce";
  case OP_MIN_REDUCE: return "cf_min_reduce";
  case OP_PROD: return "cf_prod";
  default: return "cf_welford";
  }
}

/* A sum whose only use is a division by its element count: cf_mean made the pair. */
static bool is_mean_sum(const Expr *e) {
  if (e->op != OP_SUM || e->out[0]->uses.len != 1) return false;
  const Expr *d = e->out[0]->uses.items[0];
  return d->op == OP_DIV && d->attr.scalar_rhs.is_scalar_rhs && d->attr.scalar_rhs.val;
}

static void emit_args(StrBuf *b, const Expr *e) {
  for (int i = 0; i < e->nin; i++) {
    sb_puts(b, ", ");
    tv_var(b, e->in[i]);
  }
}

static void emit_shape_op(ReproWalk *w, const Expr *e, Val *out) {
  StrBuf *b = &w->c;
  TensorView *o = TV(out);
  int v[CF_MAX_RANK + 1], n = 0;
  switch (e->op) {
  case OP_BROADCAST:
    sb_printf(b, "cf_broadcast(f, t%d, %d, (bool[]){", e->in[0]->name, e->attr.broadcast.rank);
    for (int i = 0; i < e->attr.broadcast.rank; i++) sb_printf(b, "%s%d", i ? ", " : "", e->attr.broadcast.is_broadcast[i]);
    sb_puts(b, "})");
    return;
  case OP_PERMUTE:
    sb_printf(b, "cf_permute(f, t%d, %d, ", e->in[0]->name, e->attr.permute.rank);
    ints(b, e->attr.permute.rank, e->attr.permute.perm);
    sb_puts(b, ")");
    return;
  case OP_SQUEEZE:
    for (int i = 0; i < e->attr.squeeze.rank; i++)
      if (e->attr.squeeze.is_squeezed[i]) v[n++] = i;
    sb_printf(b, "cf_squeeze(f, t%d, %d, ", e->in[0]->name, n);
    ints(b, n, v);
    sb_puts(b, ")");
    return;
  case OP_EXPAND: sb_printf(b, "cf_expand(f, t%d, %d, ", e->in[0]->name, o->nlogical); break;
  case OP_RESHAPE: sb_printf(b, "cf_reshape(f, t%d, %d, ", e->in[0]->name, o->nlogical); break;
  default: /* OP_FULL; a complex constant keeps its imaginary part */
    if (ir_dtype_is_complex(out->dtype) && o->nlogical == 0) {
      sb_printf(b, "cf_const_complex(f, %s, %.17g, %.17g)", exec_repro_dtype_enum(out->dtype), e->attr.full.value,
                e->attr.full.imag);
      return;
    }
    sb_printf(b, "cf_full(f, %d, ", o->nlogical);
    extents(b, o->logical, o->nlogical, w);
    sb_printf(b, ", %.17g, %s)", e->attr.full.value, exec_repro_dtype_enum(out->dtype));
    return;
  }
  extents(b, o->logical, o->nlogical, w);
  sb_puts(b, ")");
}

static void emit_binary(ReproWalk *w, const Expr *e) {
  StrBuf *b = &w->c;
  const char *name = ir_op_name(e->op);
  if (!e->attr.scalar_rhs.is_scalar_rhs) {
    sb_printf(b, "cf_%s(f", name);
    emit_args(b, e);
    sb_puts(b, ")");
  } else if (e->attr.scalar_rhs.val) {
    note(w, "a binary op by a run-time scalar, written by its value at definition (1)", e->out[0]);
    sb_printf(b, "cf_%s(f, t%d, cf_full_like(f, t%d, 1))", name, e->in[0]->name, e->in[0]->name);
  } else if (e->op == OP_ADD || e->op == OP_MUL) {
    sb_printf(b, "cf_%s_scalar(f, t%d, %.17g)", name, e->in[0]->name, e->attr.scalar_rhs.value);
  } else {
    sb_printf(b, "cf_%s(f, t%d, cf_full_like(f, t%d, %.17g))", name, e->in[0]->name, e->in[0]->name,
              e->attr.scalar_rhs.value);
  }
}

static void emit_expr(ReproWalk *w, const Expr *e) {
  StrBuf *b = &w->c;
  Val *out = e->out[0];
  if (is_mean_sum(e)) return; /* written with its division, as cf_mean */
  sb_puts(b, "  cf_tv *");
  tv_var(b, out);
  sb_puts(b, " = ");
  int axes[CF_MAX_RANK + 1], n;
  OpKind k = ir_op_kind(e->op);
  if (e->op == OP_DIV && e->attr.scalar_rhs.is_scalar_rhs && e->attr.scalar_rhs.val && e->in[0]->def &&
      is_mean_sum(e->in[0]->def)) {
    n = reduced_axes(e->in[0], axes);
    sb_printf(b, "cf_mean(f, t%d, %d, ", e->in[0]->def->in[0]->name, n);
    ints(b, n, axes);
    sb_puts(b, ")");
  } else if (e->op == OP_SET) {
    sb_printf(b, "cf_set(f, t%d)", e->in[0]->name);
  } else if (e->op == OP_CAST) {
    sb_printf(b, "cf_cast(f, t%d, %s)", e->in[0]->name, exec_repro_dtype_enum(e->attr.cast.to));
  } else if (k == OPK_UNARY) {
    sb_printf(b, "cf_%s(f, t%d)", ir_op_name(e->op), e->in[0]->name);
  } else if (k == OPK_BINARY) {
    emit_binary(w, e);
  } else if (e->op == OP_WHERE) {
    sb_puts(b, "cf_where(f");
    emit_args(b, e);
    sb_puts(b, ")");
  } else if (k == OPK_REDUCTION) {
    n = reduced_axes(out, axes);
    for (int i = 0; i < TV(out)->nroot; i++)
      if (ID(TV(out)->root[i])->rfactor) {
        note(w, "an rfactor, written as the reduction it computes", out);
        break;
      }
    sb_printf(b, "%s(f, t%d, %d, ", reduction_call(e->op), e->in[0]->name, n);
    ints(b, n, axes);
    sb_puts(b, ")");
  } else {
    emit_shape_op(w, e, out);
  }
  sb_puts(b, ";\n");
}

/* ---- the schedule ------------------------------------------------------------------------ */

static int pos_of(Val **v, int n, const Val *id) {
  for (int i = 0; i < n; i++)
    if (v[i] == id) return i;
  return -1;
}

#define MAX_LOOP (4 * CF_MAX_RANK + 8)

/* A tensor's loop domain as the replayed calls leave it. */
typedef struct LoopState {
  Val *tv;
  Val *cur[MAX_LOOP];
  int n;
} LoopState;

/* One transform of st's history as the call that makes it (a reorder first when a merge's
 * axes are not adjacent). */
static void replay(ReproWalk *w, LoopState *st, const Expr *e) {
  StrBuf *b = &w->c;
  Val **cur = st->cur;
  int n = st->n, p = pos_of(cur, n, e->in[0]), t = st->tv->name;
  if (p < 0 || n + 1 > MAX_LOOP) return; /* not on the loop path */
  if (e->op == OP_SPLIT && ir_scalar_is_const(e->attr.split.factor)) {
    sb_printf(b, "  cf_%s(f, t%d, %d, %lld);\n", e->attr.split.inner ? "split" : "split_outer", t, p,
              (long long)SC(e->attr.split.factor)->i);
    memmove(cur + p + 2, cur + p + 1, sizeof *cur * (size_t)(n - p - 1));
    cur[p] = e->out[0], cur[p + 1] = e->out[1], st->n++;
  } else if (e->op == OP_MERGE) {
    int q = pos_of(cur, n, e->in[1]);
    if (q < 0) return;
    if (q != p + 1) { /* bring in[1] right after in[0] */
      Val *y = cur[q];
      memmove(cur + q, cur + q + 1, sizeof *cur * (size_t)(n - q - 1));
      p = pos_of(cur, n - 1, e->in[0]);
      memmove(cur + p + 2, cur + p + 1, sizeof *cur * (size_t)(n - p - 2));
      cur[p + 1] = y;
      sb_printf(b, "  cf_reorder(f, t%d, 1, (int[]){%d, %d});\n", t, q, q < p ? p : p + 1);
    }
    sb_printf(b, "  cf_merge(f, t%d, %d);\n", t, p);
    cur[p] = e->out[0];
    memmove(cur + p + 1, cur + p + 2, sizeof *cur * (size_t)(n - p - 2));
    st->n--;
  } else {
    note(w, e->op == OP_SWIZZLE ? "a swizzle, left out" : "a split by a symbolic factor, left out", st->tv);
  }
}

/* A reorder when the replayed loop order is not the tensor's. */
static void final_order(ReproWalk *w, LoopState *st) {
  TensorView *t = TV(st->tv);
  if (st->n != t->nloop) return;
  int to[MAX_LOOP];
  bool same = true;
  for (int i = 0; i < st->n; i++) same &= (to[i] = pos_of(t->loop, t->nloop, st->cur[i])) == i;
  if (same) return;
  sb_printf(&w->c, "  cf_reorder_all(f, t%d, %d, ", st->tv->name, st->n);
  ints(&w->c, st->n, to);
  sb_puts(&w->c, ");\n");
}

typedef struct Step {
  const Expr *e;
  int tv; /* index into the states */
} Step;

static int by_expr_id(const void *a, const void *b) {
  const Step *x = a, *y = b;
  return (x->e->id > y->e->id) - (x->e->id < y->e->id);
}

/* Every tensor's transforms, replayed in the order they were made (expr ids), so that
 * the rebuilt axes get the original's names. */
static void emit_transforms(ReproWalk *w, cf_fusion *f, Val **tvs, int n) {
  LoopState *st = calloc((size_t)n + 1, sizeof *st);
  int total = 0, k = 0;
  for (int i = 0; i < n; i++) {
    int nh = 0;
    ir_tv_history(f, tvs[i], &nh);
    total += nh;
  }
  Step *steps = malloc(sizeof *steps * (size_t)(total + 1));
  for (int i = 0; st && steps && i < n; i++) {
    int nh = 0;
    Expr **h = ir_tv_history(f, tvs[i], &nh);
    st[i].tv = tvs[i];
    st[i].n = TV(tvs[i])->nlogical <= MAX_LOOP ? TV(tvs[i])->nlogical : 0;
    memcpy(st[i].cur, TV(tvs[i])->logical, sizeof *st[i].cur * (size_t)st[i].n);
    for (int j = 0; j < nh; j++) steps[k++] = (Step){h[j], i};
  }
  if (st && steps) {
    qsort(steps, (size_t)k, sizeof *steps, by_expr_id);
    for (int i = 0; i < k; i++) replay(w, &st[steps[i].tv], steps[i].e);
    for (int i = 0; i < n; i++) final_order(w, &st[i]);
  }
  free(steps);
  free(st);
}

static void emit_placement(ReproWalk *w, cf_fusion *f, Val *tv) {
  StrBuf *b = &w->c;
  TensorView *t = TV(tv);
  for (int i = 0; i < t->nloop; i++)
    if (ID(t->loop[i])->ptype != CF_PT_SERIAL)
      sb_printf(b, "  cf_parallelize(f, t%d, %d, %s);\n", tv->name, i, ptype_enum(ID(t->loop[i])->ptype));
  bool io = ir_tv_is_input(f, tv) || ir_tv_is_output(f, tv);
  if (t->mem != (io ? CF_MEM_GLOBAL : CF_MEM_LOCAL))
    sb_printf(b, "  cf_set_memory_type(f, t%d, %s);\n", tv->name, mem_enum(t->mem));
}

/* True when nothing was scheduled by hand: every loop domain is the logical one, serial,
 * nothing inlined, memory types the defaults. */
static bool unscheduled(cf_fusion *f, Val **tvs, int n) {
  for (int i = 0; i < n; i++) {
    TensorView *t = TV(tvs[i]);
    int nh = 0;
    ir_tv_history(f, tvs[i], &nh);
    bool io = ir_tv_is_input(f, tvs[i]) || ir_tv_is_output(f, tvs[i]);
    if (nh || t->ca_pos || t->mem != (io ? CF_MEM_GLOBAL : CF_MEM_LOCAL)) return false;
    for (int k = 0; k < t->nloop; k++)
      if (ID(t->loop[k])->ptype != CF_PT_SERIAL || t->loop[k] != t->logical[k]) return false;
  }
  return true;
}

static int by_name(const void *a, const void *b) {
  const Val *x = *(Val *const *)a, *y = *(Val *const *)b;
  return (x->name > y->name) - (x->name < y->name);
}

/* The fusion's tensors in the order to create them: by name when that order is
 * topological (so the rebuilt fusion names every tensor as the original did, and its
 * messages read the same: a copy's ids need not follow its names), else by id. */
static Val **creation_order(cf_fusion *f, int *n) {
  Val **v = malloc(sizeof *v * (size_t)(f->vals.len + 1));
  if (!v) return NULL;
  *n = 0;
  for (int i = 0; i < f->vals.len; i++)
    if (((Val *)f->vals.items[i])->kind == VAL_TV) v[(*n)++] = f->vals.items[i];
  Val **named = malloc(sizeof *named * (size_t)(*n + 1));
  if (!named) return v;
  memcpy(named, v, sizeof *v * (size_t)*n);
  qsort(named, (size_t)*n, sizeof *named, by_name);
  bool topological = true;
  for (int i = 0; i < *n && topological; i++)
    for (int k = 0; named[i]->def && k < named[i]->def->nin; k++)
      topological &= named[i]->def->in[k]->kind != VAL_TV || named[i]->def->in[k]->name < named[i]->name;
  if (!topological) {
    free(named);
    return v; /* ids are topological: producers first */
  }
  free(v);
  return named;
}

cf_status exec_repro_walk(cf_fusion *f, ReproWalk *w) {
  memset(w, 0, sizeof *w);
  int n = 0, nt = 0;
  Val **tvs = ir_fusion_all_tvs(f, &n), **order = creation_order(f, &nt);
  if (!order) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "write_repro: out of memory");
  w->scheduled = !unscheduled(f, tvs, n);
  for (int i = 0; i < nt; i++) {
    Val *v = order[i];
    if (!v->def) emit_input(w, v);
    else if (v->def->out[0] == v && ir_op_kind(v->def->op) != OPK_TRANSFORM) emit_expr(w, v->def);
  }
  free(order);
  for (int i = 0; i < f->inputs.len; i++) sb_printf(&w->c, "  cf_fusion_add_input(f, t%d);\n", ((Val *)f->inputs.items[i])->name);
  for (int i = 0; i < f->outputs.len; i++) sb_printf(&w->c, "  cf_fusion_add_output(f, t%d);\n", ((Val *)f->outputs.items[i])->name);
  if (w->scheduled) emit_transforms(w, f, tvs, n);
  for (int i = 0; w->scheduled && i < n; i++) emit_placement(w, f, tvs[i]);
  for (int i = 0; w->scheduled && i < n; i++)
    if (TV(tvs[i])->ca_pos) sb_printf(&w->c, "  cf_inline_at(f, t%d, %d);\n", tvs[i]->name, TV(tvs[i])->ca_pos);
  return CF_OK;
}
