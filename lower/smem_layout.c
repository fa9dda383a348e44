/* lower/smem_layout.c: pass 12. Lays out dynamic shared memory: every shared buffer
 * (including the 32-bit slots that hold tensor-memory region addresses) gets a byte
 * offset, each aligned to 16 bytes, and the kernel's dynamic shared-memory size is the
 * end of the last one.
 * Requires: the kernel's allocations with their sizes. Establishes: KTensor.smem_offset
 * and k->smem (an expression when a buffer has a symbolic size).
 * Key decision: buffers are laid out in allocation order with no reuse; the size is not
 * rounded up after the last buffer, so a single buffer of N floats takes exactly 4N
 * bytes, as the seed tutorial's GSGCopy test expects. */
#include "lower/lower.h"

static KExpr *align16(LowerCtx *c, KExpr *x) {
  return kx_bin(c->a, OP_MUL, kx_bin(c->a, OP_CEILDIV, x, kx_const(c->a, 16)), kx_const(c->a, 16));
}

void lower_smem_layout(LowerCtx *c) {
  KKernel *k = c->k;
  KExpr *end = kx_const(c->a, 0);
  for (int i = 0; i < k->nallocs; i++) {
    KTensor *t = k->allocs[i];
    if (t->mem != CF_MEM_SHARED) continue;
    t->smem_offset = align16(c, end);
    end = kx_bin(c->a, OP_ADD, t->smem_offset, kx_bin(c->a, OP_MUL, t->size, kx_const(c->a, (int64_t)cf_dtype_size(t->dtype))));
  }
  k->smem = end;
}
