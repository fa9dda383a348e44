/* lower/kir_print.c: a compact text dump of the kernel IR for CFUSER_DUMP, one node per
 * line with indentation: loops with their extent and parallel type, ifs with their
 * condition, ops with their indexed operands, syncs and tensor-memory management.
 * Key decision: independent of the code generators, so it shows the IR as it is between
 * passes, before anything is lowered to a language. */
#include "lower/lower.h"

static void pad(StrBuf *b, int depth) {
  for (int i = 0; i < depth; i++) sb_puts(b, "  ");
}

static const char *const *param_names(const KKernel *k) { return k->param_names; }

static void access(StrBuf *b, const KKernel *k, const KAccess *a) {
  if (!a->t && a->var) {
    sb_puts(b, a->var);
    return;
  }
  if (!a->t && a->scalar_expr) {
    sb_puts(b, "(double)(");
    kx_print(b, a->scalar_expr, param_names(k));
    sb_puts(b, ")");
    return;
  }
  if (!a->t) {
    sb_printf(b, "%g", a->scalar);
    return;
  }
  sb_printf(b, "%s[", a->t->name);
  if (a->lane) {
    sb_puts(b, "lane=");
    kx_print(b, a->lane, param_names(k));
    sb_puts(b, ", col=");
    kx_print(b, a->col, param_names(k));
  } else if (a->index) {
    kx_print(b, a->index, param_names(k));
  }
  sb_puts(b, "]");
}

static void node(StrBuf *b, const KKernel *k, const KNode *n, int depth);

static void block(StrBuf *b, const KKernel *k, const KBlock *blk, int depth) {
  for (int i = 0; i < blk->len; i++) node(b, k, blk->items[i], depth);
}

static void node(StrBuf *b, const KKernel *k, const KNode *n, int depth) {
  pad(b, depth);
  switch (n->kind) {
  case KN_FOR:
    sb_printf(b, "FOR %s in 0..", n->u.loop.var ? n->u.loop.var : "-");
    kx_print(b, n->u.loop.extent, param_names(k));
    sb_printf(b, " (%s)\n", cf_parallel_type_name(n->u.loop.pt));
    block(b, k, &n->u.loop.body, depth + 1);
    return;
  case KN_IF:
    sb_puts(b, "IF ");
    kx_print(b, n->u.cond.cond, param_names(k));
    sb_puts(b, "\n");
    block(b, k, &n->u.cond.then, depth + 1);
    return;
  case KN_OP:
    access(b, k, &n->u.op.out);
    sb_printf(b, " = %s%s(", n->u.op.reduction_init ? "init:" : "", ir_op_name(n->u.op.op));
    for (int i = 0; i < n->u.op.nin; i++) {
      if (i) sb_puts(b, ", ");
      access(b, k, &n->u.op.in[i]);
    }
    sb_puts(b, ")");
    if (n->u.op.vector > 1) sb_printf(b, " x%d", n->u.op.vector);
    sb_puts(b, "\n");
    return;
  case KN_TMEM_LD:
  case KN_TMEM_ST:
    sb_printf(b, "%s x%d ", n->kind == KN_TMEM_LD ? "TMEM_LD" : "TMEM_ST", n->u.tmem.words);
    access(b, k, &n->u.tmem.reg);
    sb_puts(b, " <-> ");
    access(b, k, &n->u.tmem.tmem);
    sb_puts(b, "\n");
    return;
  case KN_ALLOC: sb_printf(b, "ALLOC %s\n", n->u.alloc.t->name); return;
  case KN_SYNC: sb_puts(b, "SYNC\n"); return;
  case KN_TMEM_ALLOC: sb_printf(b, "TMEM_ALLOC region %d\n", n->u.region.region); return;
  case KN_TMEM_RELINQUISH: sb_puts(b, "TMEM_RELINQUISH\n"); return;
  case KN_TMEM_DEALLOC: sb_printf(b, "TMEM_DEALLOC region %d\n", n->u.region.region); return;
  case KN_COMMENT: sb_printf(b, "// %s\n", n->u.comment); return;
  case KN_ACC_DECL: sb_printf(b, "ACC %s %s = init:%s\n", cf_dtype_name(n->u.acc.dtype), n->u.acc.var, ir_op_name(n->u.acc.op)); return;
  case KN_BLOCK_REDUCE:
    sb_printf(b, "BLOCK_REDUCE %s %s over%s%s%s%s\n", ir_op_name(n->u.acc.op), n->u.acc.var, n->u.acc.reduce[0] ? " x" : "",
              n->u.acc.reduce[1] ? " y" : "", n->u.acc.reduce[2] ? " z" : "", n->u.acc.warp ? " (warp shuffles)" : "");
    return;
  }
}

void kir_print(StrBuf *b, const KKernel *k) {
  for (int i = 0; i < k->nallocs; i++) {
    sb_printf(b, "alloc %s %s[", k->allocs[i]->name, cf_memory_type_name(k->allocs[i]->mem));
    if (k->allocs[i]->size) kx_print(b, k->allocs[i]->size, param_names(k));
    sb_puts(b, "]\n");
  }
  block(b, k, &k->body, 0);
}
