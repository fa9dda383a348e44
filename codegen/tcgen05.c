/* codegen/tcgen05.c: Blackwell's tcgen05.mma in both dialects of the code generator
 * (lower/mma_tcgen05.c builds the nodes): the instruction (a KN_MMA of the tcgen05 row),
 * its commit to an mbarrier (KN_TC05_COMMIT) and the fences (KN_TC05_FENCE).
 *
 * CUDA: the elected thread (linear thread 0) forms the two shared-memory descriptors (the
 * constant fields or'ed with the tile's shared address >> 4), the accumulator's tensor-
 * memory address (its region's base from the shared slot tcgen05.alloc wrote, plus its
 * lane and column) and issues
 *   tcgen05.mma.cta_group::1.kind::f16 [d], a-desc, b-desc, idesc, enable-input-d;
 * and later tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar];
 * the fences are tcgen05.fence::after_thread_sync (before_thread_sync), all volatile.
 * Host: the same structure against codegen/runtime/host_tcgen05.h, which queues the
 * instruction and performs it from the descriptors when its commit's barrier is waited
 * for. Key decision: one file for both dialects, so the two spell the same operands in
 * the same order; the host's descriptors are built by the runtime from the same constant
 * fields, never recomputed here. */
#include <stdlib.h>

#include "codegen/codegen.h"

/* The accumulator's tensor-memory address: region base + (lane << 16) + column. */
static char *tmem_addr(Emitter *e, const KAccess *acc) {
  const KTensor *t = acc->t;
  const KTensor *slot = e->k->regions[t->tmem_region].slot;
  char *ls = cg_expr(e, acc->lane), *cs = cg_expr(e, acc->col);
  StrBuf b = {0};
  sb_printf(&b, "(%s[0] + ((uint32_t)((%s) + %lld) << 16) + (uint32_t)((%s) * %zu / 4 + %lld))", slot->name, ls,
            (long long)t->tmem_lane_offset, cs, cf_dtype_size(t->dtype), (long long)t->tmem_col_offset);
  free(ls), free(cs);
  return sb_take(&b);
}

/* "&T2[i]": the element at a descriptor's start. */
static char *start_of(Emitter *e, const KAccess *s) {
  char *idx = cg_expr(e, s->index);
  StrBuf b = {0};
  sb_printf(&b, "&%s[%s]", s->t->name, idx);
  free(idx);
  return sb_take(&b);
}

static char *bar_of(Emitter *e, const KNode *n) {
  const KAccess *bar = &n->u.mbar.bar;
  char *bi = bar->index ? cg_expr(e, bar->index) : NULL;
  StrBuf b = {0};
  sb_printf(&b, "&%s[%s]", bar->t->name, bi ? bi : "0");
  free(bi);
  return sb_take(&b);
}

static void cuda_mma(Emitter *e, const KNode *n) {
  char *d = tmem_addr(e, &n->u.mma.acc[0]), *en = cg_expr(e, n->u.mma.enable_d);
  cg_line(e, "if (cf_linear_tid() == 0) {");
  e->indent++;
  for (int op = 0; op < 2; op++) {
    char *s = start_of(e, &n->u.mma.desc_start[op]);
    cg_line(e, "const unsigned long long cft_d%c = 0x%016llxull | (unsigned long long)(((unsigned)"
            "__cvta_generic_to_shared(%s) >> 4) & 0x3FFFu);", op ? 'b' : 'a', (unsigned long long)n->u.mma.desc[op], s);
    free(s);
  }
  cg_line(e, "const uint32_t cft_tmem = %s;", d);
  cg_line(e, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%4, 0; tcgen05.mma.cta_group::1.kind::f16 [%%0], %%1, "
          "%%2, %%3, p; }\" :: \"r\"(cft_tmem), \"l\"(cft_da), \"l\"(cft_db), \"r\"(0x%08xu), \"r\"((unsigned)(%s)) : "
          "\"memory\");", (unsigned)n->u.mma.idesc, en);
  e->indent--;
  cg_line(e, "}");
  free(d), free(en);
}

void cg_tcgen05_cuda(Emitter *e, const KNode *n) {
  if (n->kind == KN_MMA) {
    cuda_mma(e, n);
  } else if (n->kind == KN_TC05_COMMIT) {
    char *b = bar_of(e, n);
    cg_line(e, "if (cf_linear_tid() == 0) asm volatile(\"tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::"
            "cluster.b64 [%%0];\" :: \"r\"((uint32_t)__cvta_generic_to_shared(%s)) : \"memory\");", b);
    free(b);
  } else {
    cg_line(e, "asm volatile(\"tcgen05.fence::%s_thread_sync;\" ::: \"memory\");", n->u.mbar.value ? "before" : "after");
  }
}

static void host_mma(Emitter *e, const KNode *n) {
  char *d = tmem_addr(e, &n->u.mma.acc[0]), *en = cg_expr(e, n->u.mma.enable_d);
  cg_line(e, "if (cf_linear_tid() == 0) {");
  e->indent++;
  for (int op = 0; op < 2; op++) {
    char *s = start_of(e, &n->u.mma.desc_start[op]);
    cg_line(e, "const uint64_t cft_d%c = cfh_tcgen05_desc(0x%016llxull, %s);", op ? 'b' : 'a',
            (unsigned long long)n->u.mma.desc[op], s);
    free(s);
  }
  cg_line(e, "cfh_tcgen05_mma(%s, cft_da, cft_db, 0x%08xu, (%s) != 0);", d, (unsigned)n->u.mma.idesc, en);
  e->indent--;
  cg_line(e, "}");
  free(d), free(en);
}

void cg_tcgen05_host(Emitter *e, const KNode *n) {
  if (n->kind == KN_MMA) {
    host_mma(e, n);
  } else if (n->kind == KN_TC05_COMMIT) {
    char *b = bar_of(e, n);
    cg_line(e, "if (cf_linear_tid() == 0) cfh_tcgen05_commit((uint64_t *)%s);", b);
    free(b);
  } else {
    cg_line(e, "/* tcgen05.fence::%s_thread_sync */", n->u.mbar.value ? "before" : "after");
  }
}
