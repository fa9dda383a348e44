/* lower/kir_print.c: a compact text dump of the kernel IR for CFUSER_DUMP, one node per
 * line with indentation: loops with their extent and parallel type, ifs with their
 * condition (and ELSE before an else branch), ops with their indexed operands, syncs,
 * block reductions (a grouped one naming its array's elements, a grid reduction's tail
 * under it) and tensor-memory management.
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
  if (!a->t && a->scalar_complex) {
    sb_printf(b, "complex(%g, %g)", a->scalar, a->scalar_im);
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

typedef struct Printer {
  StrBuf *b;
  const KKernel *k;
} Printer;

/* One line per node, indented by its depth; the walk (kir_visit.c) recurses. */
static bool node(KVisitor *v, KNode *n) {
  Printer *p = v->user;
  StrBuf *b = p->b;
  const KKernel *k = p->k;
  pad(b, v->path.depth - 1);
  switch (n->kind) {
  case KN_FOR:
    sb_printf(b, "FOR %s in 0..", n->u.loop.var ? n->u.loop.var : "-");
    kx_print(b, n->u.loop.extent, param_names(k));
    sb_printf(b, " (%s)\n", cf_parallel_type_name(n->u.loop.pt));
    break;
  case KN_IF:
    sb_puts(b, "IF ");
    kx_print(b, n->u.cond.cond, param_names(k));
    sb_puts(b, n->u.cond.concurrent ? " (concurrently with the else branch)\n" : "\n");
    break;
  case KN_OP:
    access(b, k, &n->u.op.out);
    sb_printf(b, " = %s%s(", n->u.op.reduction_init ? "init:" : "", ir_op_name(n->u.op.op));
    for (int i = 0; i < n->u.op.nin; i++) {
      if (i) sb_puts(b, ", ");
      access(b, k, &n->u.op.in[i]);
    }
    sb_puts(b, ")");
    if (n->u.op.vector > 1) sb_printf(b, " x%d", n->u.op.vector);
    if (n->u.op.async) sb_puts(b, " cp.async");
    if (n->u.op.zfill) {
      sb_puts(b, " zero unless ");
      kx_print(b, n->u.op.zfill, param_names(k));
    }
    sb_puts(b, "\n");
    break;
  case KN_TMEM_LD:
  case KN_TMEM_ST:
    sb_printf(b, "%s x%d ", n->kind == KN_TMEM_LD ? "TMEM_LD" : "TMEM_ST", n->u.tmem.words);
    access(b, k, &n->u.tmem.reg);
    sb_puts(b, " <-> ");
    access(b, k, &n->u.tmem.tmem);
    sb_puts(b, "\n");
    break;
  case KN_ALLOC: sb_printf(b, "ALLOC %s\n", n->u.alloc.t->name); break;
  case KN_SYNC: sb_puts(b, n->u.sync.proxy_async ? "FENCE_PROXY_ASYNC SYNC\n" : "SYNC\n"); break;
  case KN_TMEM_ALLOC: sb_printf(b, "TMEM_ALLOC region %d\n", n->u.region.region); break;
  case KN_TMEM_RELINQUISH: sb_puts(b, "TMEM_RELINQUISH\n"); break;
  case KN_TMEM_DEALLOC: sb_printf(b, "TMEM_DEALLOC region %d\n", n->u.region.region); break;
  case KN_COMMENT: sb_printf(b, "// %s\n", n->u.comment); break;
  case KN_ACC_DECL: sb_printf(b, "ACC %s %s = init:%s\n", cf_dtype_name(n->u.acc.dtype), n->u.acc.var, ir_op_name(n->u.acc.op)); break;
  case KN_BLOCK_REDUCE:
    sb_printf(b, "BLOCK_REDUCE %s %s", ir_op_name(n->u.acc.op), n->u.acc.var);
    if (n->u.acc.group) sb_printf(b, "[0..%d]", n->u.acc.group);
    sb_printf(b, " over%s%s%s%s\n", n->u.acc.reduce[0] ? " x" : "",
              n->u.acc.reduce[1] ? " y" : "", n->u.acc.reduce[2] ? " z" : "",
              n->u.acc.lanes ? " (within a warp)" : n->u.acc.warp ? " (warp shuffles)" : "");
    break;
  case KN_ASYNC_COMMIT:
    if (n->u.async.issued) sb_printf(b, "CP_ASYNC_COMMIT after %s's register loads issue\n", n->u.async.issued->name);
    else sb_puts(b, "CP_ASYNC_COMMIT\n");
    break;
  case KN_ASYNC_WAIT: sb_printf(b, "CP_ASYNC_WAIT %d\n", n->u.async.pending); break;
  case KN_WGMMA_FENCE: sb_puts(b, "WGMMA_FENCE\n"); break;
  case KN_WGMMA_COMMIT: sb_puts(b, "WGMMA_COMMIT\n"); break;
  case KN_WGMMA_WAIT: sb_printf(b, "WGMMA_WAIT %d\n", n->u.async.pending); break;
  case KN_TMA_LOAD: {
    const KTmaMap *m = &k->tmaps[n->u.tma.map];
    sb_printf(b, "TMA_LOAD cf_tmap%d(%s box", n->u.tma.map, k->params[m->param]->name);
    for (int d = 0; d < m->rank; d++) sb_printf(b, "%s%lld", d ? "x" : " ", (long long)m->box[d]);
    sb_printf(b, " swizzle %d) at {", m->swizzle);
    for (int d = 0; d < m->rank; d++) {
      if (d) sb_puts(b, ", ");
      kx_print(b, n->u.tma.coord[d], param_names(k));
    }
    sb_puts(b, "} -> ");
    access(b, k, &n->u.tma.dst);
    sb_puts(b, " on ");
    access(b, k, &n->u.tma.bar);
    sb_puts(b, "\n");
    break;
  }
  case KN_MBAR_INIT:
  case KN_MBAR_EXPECT_TX:
    sb_puts(b, n->kind == KN_MBAR_INIT ? "MBAR_INIT " : "MBAR_EXPECT_TX ");
    access(b, k, &n->u.mbar.bar);
    sb_printf(b, n->kind == KN_MBAR_INIT ? " arrivals %lld\n" : " bytes %lld\n", (long long)n->u.mbar.value);
    break;
  case KN_MBAR_ARRIVE:
    sb_puts(b, "MBAR_ARRIVE ");
    access(b, k, &n->u.mbar.bar);
    sb_puts(b, "\n");
    break;
  case KN_SETMAXNREG: sb_printf(b, "SETMAXNREG %lld\n", (long long)n->u.mbar.value); break;
  case KN_MBAR_WAIT:
    sb_puts(b, "MBAR_WAIT ");
    access(b, k, &n->u.mbar.bar);
    sb_puts(b, " parity ");
    kx_print(b, n->u.mbar.parity, param_names(k));
    sb_puts(b, "\n");
    break;
  case KN_TC05_COMMIT:
    sb_puts(b, "TCGEN05_COMMIT ");
    access(b, k, &n->u.mbar.bar);
    sb_puts(b, "\n");
    break;
  case KN_TC05_FENCE: sb_printf(b, "TCGEN05_FENCE %s\n", n->u.mbar.value ? "before_thread_sync" : "after_thread_sync"); break;
  case KN_MMA:
    if (ir_mma_by_descriptor(n->u.mma.instr)) {
      if (ir_mma_is_tcgen05(n->u.mma.instr))
        sb_printf(b, "TCGEN05_MMA m128n%dk16.%s idesc 0x%08x ", n->u.mma.n, cf_dtype_name(n->u.mma.in_dtype),
                  (unsigned)n->u.mma.idesc);
      else sb_printf(b, "WGMMA m64n%dk16.%s ", n->u.mma.n, cf_dtype_name(n->u.mma.in_dtype));
      access(b, k, &n->u.mma.acc[0]);
      for (int op = 0; op < 2; op++) {
        sb_puts(b, op ? " x desc " : " += desc ");
        access(b, k, &n->u.mma.desc_start[op]);
        sb_printf(b, "|0x%016llx%s", (unsigned long long)n->u.mma.desc[op], n->u.mma.mn_major[op] ? " (MN-major)" : "");
      }
      sb_puts(b, "\n");
      break;
    }
    sb_printf(b, "MMA %s.%s ", n->u.mma.instr->name, cf_dtype_name(n->u.mma.in_dtype));
    access(b, k, &n->u.mma.acc[0]);
    sb_puts(b, " += ");
    access(b, k, &n->u.mma.a[0]);
    sb_puts(b, " x ");
    access(b, k, &n->u.mma.b[0]);
    sb_puts(b, " (lane's first elements)");
    for (int op = 0; op < 2; op++)
      if (n->u.mma.ldm[op]) sb_printf(b, " %c: ldmatrix.x%d%s", op ? 'B' : 'A', n->u.mma.ldm[op], n->u.mma.ldm_trans[op] ? ".trans" : "");
    sb_puts(b, "\n");
    break;
  }
  return true;
}

/* An if's else branch, at the if's depth; a grid reduction's tail prints under it. */
static void between(KVisitor *v, KNode *n, int block) {
  Printer *p = v->user;
  (void)block;
  if (n->kind == KN_IF && n->u.cond.otherwise.len) {
    pad(p->b, v->path.depth - 1);
    sb_puts(p->b, "ELSE\n");
  }
}

void kir_print(StrBuf *b, const KKernel *k) {
  for (int i = 0; i < k->nallocs; i++) {
    sb_printf(b, "alloc %s %s[", k->allocs[i]->name, cf_memory_type_name(k->allocs[i]->mem));
    if (k->allocs[i]->size) kx_print(b, k->allocs[i]->size, param_names(k));
    sb_puts(b, "]\n");
  }
  Printer p = {b, k};
  KVisitor v = {.between = between, .user = &p};
  kir_visit_all(&v, node, NULL);
  kir_visit(&v, (KBlock *)&k->body); /* a read-only walk: printing changes nothing */
}
