/* lower/smem_layout.c: the smem_layout pass. Lays out dynamic shared memory: every shared buffer
 * (including the 32-bit slots that hold tensor-memory region addresses) gets a byte
 * offset, each aligned to 16 bytes (or its smem_align: a wgmma tile's swizzle period, the
 * dynamic shared memory's base aligned alike by the code generators), and the kernel's dynamic shared-memory size is the
 * end of the last one.
 * Requires: the kernel's allocations with their sizes. Establishes: KTensor.smem_offset
 * and k->smem (an expression when a buffer has a symbolic size).
 * Key decision: buffers are laid out in allocation order with no reuse; the size is not
 * rounded up after the last buffer, so a single buffer of N floats takes exactly 4N
 * bytes, as the seed tutorial's GSGCopy test expects. */
#include "lower/lower.h"

static KExpr *align_to(LowerCtx *c, KExpr *x, int64_t align) {
  return kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_CEILDIV, x, kx_const(c->a, align)), kx_const(c->a, align));
}

/* Symbolic offsets are named in the kernel (`const cf_index_t cf_off_T3 = ...`), each
 * defined from the previous one: spelled out, the n-th offset would repeat all n - 1
 * before it, and a kernel with many symbolic shared buffers would take the C compiler
 * minutes and gigabytes. k->smem, which the executor evaluates, stays in closed form. */
void lower_smem_layout(LowerCtx *c) {
  KKernel *k = c->k;
  KExpr *end = kx_const(c->a, 0), *end_named = end;
  for (int i = 0; i < k->nallocs; i++) {
    KTensor *t = k->allocs[i];
    if (t->mem != CF_MEM_SHARED) continue;
    int64_t al = t->smem_align > 16 ? t->smem_align : 16;
    KExpr *off = align_to(c, end, al), *bytes = kx_bin(c->a, OP_MUL, t->size, kx_const(c->a, (int64_t)cf_dtype_size(t->dtype)));
    t->smem_offset = off;
    if (!kx_is_const(off, NULL)) {
      t->smem_offset_def = align_to(c, end_named, al);
      t->smem_offset = kx_var(c->a, arena_printf(c->a, "cf_off_%s", t->name));
    }
    end = kx_bin(c->a, OP_ADD, off, bytes);
    end_named = kx_bin(c->a, OP_ADD, t->smem_offset, bytes);
  }
  k->smem = end;
}
