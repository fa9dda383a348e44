/* codegen/cuda.c: the CUDA C++ dialect of the code generator. Kernel parameters are
 * tensors by value (codegen/runtime/tensor.cuh), dynamic shared memory holds the shared
 * buffers at their lowered offsets, local buffers are register arrays, vector copies go
 * through Array<T, N>, and tensor memory is driven by inline tcgen05 PTX (all volatile):
 * warp 0 allocates, relinquishes and deallocates; each ld/st is followed by its wait.
 * Key decision: 32-bit indexing (CF_INDEX_TYPE int) when every tensor fits, as DESIGN.md
 * section 12 asks (lowering's KKernel.index32), the thread and block coordinates read as
 * int (cf_idim3) where a tensor has run-time strides or the schedule asks
 * (KKernel.signed_coords);
 * __launch_bounds__ when the block size is a constant. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static bool uses_dtype(const KKernel *k, cf_dtype t) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i]->dtype == t) return true;
  for (int i = 0; i < k->nallocs; i++)
    if (k->allocs[i]->dtype == t) return true;
  return false;
}

static void preamble(Emitter *e) {
  sb_printf(&e->out, "#define CF_INDEX_TYPE %s\n", e->k->index32 ? "int" : "long long");
  if (uses_dtype(e->k, CF_HALF)) sb_puts(&e->out, "#include <cuda_fp16.h>\n");
  if (uses_dtype(e->k, CF_BFLOAT16)) sb_puts(&e->out, "#include <cuda_bf16.h>\n");
  sb_puts(&e->out, cg_embedded_file("tensor.cuh"));
  sb_puts(&e->out, cg_embedded_file("cuda_helpers.cuh"));
  sb_puts(&e->out, cg_embedded_file("special_math.h"));
  sb_puts(&e->out, cg_embedded_file("philox.h"));
  sb_puts(&e->out, cg_embedded_file("ops_math.h"));
  if (uses_dtype(e->k, CF_FLOAT8_E4M3FN) || uses_dtype(e->k, CF_FLOAT8_E5M2) || uses_dtype(e->k, CF_FLOAT4_E2M1FN))
    sb_puts(&e->out, cg_embedded_file("fp8.h"));
  if (uses_dtype(e->k, CF_COMPLEX_FLOAT) || uses_dtype(e->k, CF_COMPLEX_DOUBLE))
    sb_puts(&e->out, cg_embedded_file("complex.h"));
  if (uses_dtype(e->k, CF_WELFORD_FLOAT) || uses_dtype(e->k, CF_WELFORD_DOUBLE))
    sb_puts(&e->out, cg_embedded_file("welford.h"));
  if (e->k->grid_sem) sb_puts(&e->out, cg_embedded_file("grid_sync.cuh"));
  if (e->k->ntmaps || e->k->tcgen05_mma) sb_puts(&e->out, cg_embedded_file("tma.cuh")); /* the mbarriers */
  sb_puts(&e->out, "\n");
}

static void signature(Emitter *e) {
  const KKernel *k = e->k;
  int64_t threads = 1, v;
  for (int d = 0; d < 3; d++) threads = kx_is_const(k->block[d], &v) && threads > 0 ? threads * v : -1;
  StrBuf b = {0};
  sb_puts(&b, "extern \"C\" __global__ void ");
  if (threads > 0 && k->min_blocks_per_sm > 1) /* a cooperative grid: registers that let it all be resident */
    sb_printf(&b, "__launch_bounds__(%lld, %d) ", (long long)threads, k->min_blocks_per_sm);
  else if (threads > 0)
    sb_printf(&b, "__launch_bounds__(%lld) ", (long long)threads);
  sb_printf(&b, "%s(", k->name);
  for (int i = 0; i < k->nparams; i++) {
    const KTensor *t = k->params[i];
    sb_printf(&b, "%sTensor<%s, %d, %d> %s%s", i ? ", " : "", cg_ctype(t->dtype), t->rank, t->alloc_rank, t->name,
              cg_param_note(t));
  }
  for (int i = 0; i < k->ntmaps; i++) /* after the tensors: executor/run_cuda.c encodes them */
    sb_printf(&b, ", const __grid_constant__ CfTensorMap cf_tmap%d /* %s */", i, k->params[k->tmaps[i].param]->name);
  sb_puts(&b, ") {");
  cg_line(e, "%s", b.data);
  sb_free(&b);
  if (k->signed_coords) /* cuda_helpers.cuh's cf_signed: no unsigned times a negative stride */
    cg_line(e, "  const cf_idim3 threadIdx = cf_signed(::threadIdx), blockIdx = cf_signed(::blockIdx), "
            "blockDim = cf_signed(::blockDim), gridDim = cf_signed(::gridDim);");
}

static void buffers(Emitter *e) {
  const KKernel *k = e->k;
  bool any_shared = false;
  for (int i = 0; i < k->nallocs; i++) any_shared |= k->allocs[i]->mem == CF_MEM_SHARED;
  int64_t align = 16; /* a wgmma tile's swizzle needs its period (KTensor.smem_align) */
  for (int i = 0; i < k->nallocs; i++)
    if (k->allocs[i]->mem == CF_MEM_SHARED && k->allocs[i]->smem_align > align) align = k->allocs[i]->smem_align;
  if (any_shared) cg_line(e, "alignas(%lld) extern __shared__ char cf_smem[];", (long long)align);
  for (int i = 0; i < k->nallocs; i++) {
    const KTensor *t = k->allocs[i];
    char *size = cg_expr(e, t->size);
    if (t->mem == CF_MEM_SHARED) {
      cg_smem_offset_decl(e, t);
      char *off = cg_expr(e, t->smem_offset);
      cg_line(e, "%s* %s = reinterpret_cast<%s*>(cf_smem + %s);", cg_ctype(t->dtype), t->name, cg_ctype(t->dtype), off);
      free(off);
    } else if (t->mem == CF_MEM_LOCAL && t->spill) { /* the registers' part; T_s holds the rest */
      cg_line(e, "alignas(16) %s %s[%lld];", cg_ctype(t->dtype), t->name, (long long)t->reg_elems);
    } else if (t->mem == CF_MEM_LOCAL) {
      cg_line(e, "alignas(16) %s %s[%s];", cg_ctype(t->dtype), t->name, size);
    }
    free(size);
  }
}

static void epilogue(Emitter *e) { cg_line(e, "}"); }

static void vector_copy(Emitter *e, const KNode *op, const char *dst, const char *src) {
  if (cg_packed_copy(e, op, dst, src)) return;
  const char *ty = cg_ctype(op->u.op.out_dtype);
  int n = op->u.op.vector;
  cg_line(e, "*reinterpret_cast<Array<%s, %d>*>(&%s) = *reinterpret_cast<const Array<%s, %d>*>(&%s);", ty, n, dst, ty,
          n, src);
}

/* cp.async.cg.shared.global (16 bytes, cached in L2 only) of an async copy op; the group's
 * commit and wait. A zero-filling copy gives its source size as the fourth operand: 16
 * where its bounds hold, 0 where they fail (no byte read, 16 zero bytes written). */
/* An empty asm naming each accumulator register of wgmma m "+f" (CUTLASS's
 * warpgroup_fence_operand): no access to them moves across the wgmma group's fence or wait. */
static void pin_accumulators(Emitter *e, const KNode *m) {
  for (int i = 0; m && i < m->u.mma.nacc; i++) {
    char *idx = cg_expr(e, m->u.mma.acc[i].index);
    cg_line(e, "asm volatile(\"\" : \"+f\"(%s[%s]) :: \"memory\");", m->u.mma.acc[i].t->name, idx);
    free(idx);
  }
}

/* wgmma's group bookkeeping and a barrier's proxy fence (KN_SYNC). */
static bool async_proxy(Emitter *e, const KNode *n) {
  switch (n->kind) {
  case KN_SYNC: cg_line(e, "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");"); return true;
  case KN_WGMMA_FENCE:
    pin_accumulators(e, n->u.async.mma);
    cg_line(e, "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
    return true;
  case KN_WGMMA_COMMIT: cg_line(e, "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");"); return true;
  case KN_WGMMA_WAIT:
    cg_line(e, "asm volatile(\"wgmma.wait_group.sync.aligned %%0;\" :: \"n\"(%d) : \"memory\");", n->u.async.pending);
    pin_accumulators(e, n->u.async.mma);
    return true;
  default: return false;
  }
}

/* An element of a tensor spilled to shared memory: cf_spill_at picks its part. */
static void element(Emitter *e, const KTensor *t, const char *index, bool is_write) {
  if (!t->spill) {
    cg_element(e, t, index, is_write);
    return;
  }
  sb_printf(&e->out, "(*cf_spill_at<%lld, %d, %lld>(%s, %s, %s))", (long long)t->reg_elems, 16 / (int)cf_dtype_size(t->dtype),
            (long long)t->spill_threads, t->name, t->spill->name, index);
}

/* A fill of a spilled tensor: the registers' chunks copied, the shared ones by cp.async. */
static void spill_fill(Emitter *e, const KNode *n, const char *dst, const char *src) {
  char *idx = cg_expr(e, n->u.op.out.index);
  cg_line(e, "if ((%s) < %lld) {", idx, (long long)n->u.op.out.t->reg_elems);
  e->indent++;
  vector_copy(e, n, dst, src);
  e->indent--;
  cg_line(e, "} else {");
  e->indent++;
  cg_line(e, "asm volatile(\"cp.async.cg.shared.global [%%0], [%%1], 16;\" :: \"r\"((uint32_t)__cvta_generic_to_shared(&%s)), "
          "\"l\"(&%s) : \"memory\");", dst, src);
  e->indent--;
  cg_line(e, "}");
  free(idx);
}

static void cp_async(Emitter *e, const KNode *n, const char *dst, const char *src) {
  if (async_proxy(e, n)) return;
  if (n->kind == KN_OP && n->u.op.out.t->spill) {
    spill_fill(e, n, dst, src);
    return;
  }
  if (n->kind == KN_ASYNC_COMMIT && n->u.async.issued) {
    const KTensor *t = n->u.async.issued;
    cg_line(e, "cf_loads_issued<%lld>(%s);", (long long)t->reg_elems * (long long)cf_dtype_size(t->dtype) / 4, t->name);
  }
  if (n->kind == KN_ASYNC_COMMIT) cg_line(e, "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
  else if (n->kind == KN_ASYNC_WAIT)
    cg_line(e, "asm volatile(\"cp.async.wait_group %%0;\" :: \"n\"(%d) : \"memory\");", n->u.async.pending);
  else if (!n->u.op.zfill)
    cg_line(e, "asm volatile(\"cp.async.cg.shared.global [%%0], [%%1], 16;\" :: \"r\"((uint32_t)__cvta_generic_to_shared(&%s)), "
            "\"l\"(&%s) : \"memory\");", dst, src);
  else {
    char *z = cg_expr(e, n->u.op.zfill);
    cg_line(e, "asm volatile(\"cp.async.cg.shared.global [%%0], [%%1], 16, %%2;\" :: \"r\"((uint32_t)__cvta_generic_to_shared(&%s)), "
            "\"l\"(&%s), \"r\"((%s) ? 16u : 0u) : \"memory\");", dst, src, z);
    free(z);
  }
}

static void tmem_admin(Emitter *e, const KNode *n) {
  if (n->kind == KN_TMEM_RELINQUISH) {
    cg_line(e, "if (cf_linear_tid() < 32) asm volatile(\"tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\");");
    return;
  }
  const KTMemRegion *r = &e->k->regions[n->u.region.region];
  if (n->kind == KN_TMEM_ALLOC)
    cg_line(e,
            "if (cf_linear_tid() < 32) asm volatile(\"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%%0], "
            "%%1;\" :: \"r\"((uint32_t)__cvta_generic_to_shared(%s)), \"r\"(%lldu) : \"memory\");",
            r->slot->name, (long long)r->num_columns);
  else
    cg_line(e,
            "if (cf_linear_tid() < 32) asm volatile(\"tcgen05.dealloc.cta_group::1.sync.aligned.b32 %%0, %%1;\" :: "
            "\"r\"(%s[0]), \"r\"(%lldu) : \"memory\");",
            r->slot->name, (long long)r->num_columns);
}

/* tcgen05.{ld,st}.sync.aligned.32x32b.x<N>.b32 with N registers viewed as uint32. */
static void tmem_access(Emitter *e, const KNode *n, const char *addr, const char *reg) {
  int w = n->u.tmem.words;
  bool ld = n->kind == KN_TMEM_LD;
  StrBuf regs = {0}, ops = {0};
  for (int i = 0; i < w; i++) {
    sb_printf(&regs, "%s%%%d", i ? ", " : "", ld ? i : i + 1);
    sb_printf(&ops, "%s\"%sr\"(cf_r[%d])", i ? ", " : "", ld ? "=" : "", i);
  }
  cg_line(e, "{");
  e->indent++;
  cg_line(e, "uint32_t* cf_r = reinterpret_cast<uint32_t*>(%s);", reg);
  cg_line(e, "const uint32_t cf_taddr = %s;", addr);
  if (ld) {
    cg_line(e, "asm volatile(\"tcgen05.ld.sync.aligned.32x32b.x%d.b32 {%s}, [%%%d];\" : %s : \"r\"(cf_taddr) : \"memory\");",
            w, regs.data, w, ops.data);
    cg_line(e, "asm volatile(\"tcgen05.wait::ld.sync.aligned;\" ::: \"memory\");");
  } else {
    cg_line(e, "asm volatile(\"tcgen05.st.sync.aligned.32x32b.x%d.b32 [%%0], {%s};\" :: \"r\"(cf_taddr), %s : \"memory\");",
            w, regs.data, ops.data);
    cg_line(e, "asm volatile(\"tcgen05.wait::st.sync.aligned;\" ::: \"memory\");");
  }
  e->indent--;
  cg_line(e, "}");
  sb_free(&regs), sb_free(&ops);
}

/* Operand op's registers by ldmatrix.sync.aligned.m8n8.x<n>[.trans].shared.b16 from the
 * lane's row address, then each half whose mask fails cleared (the rows out of bounds
 * were read from the tile and must count 0). */
static void ldmatrix(Emitter *e, const KNode *n, int op, int nreg, StrBuf *ins) {
  char c = op ? 'b' : 'a', *idx = cg_expr(e, n->u.mma.ldm_row[op].index);
  StrBuf asm_ = {0}, outs = {0};
  for (int r = 0; r < nreg; r++) {
    cg_line(e, "uint32_t cfm_%c%d;", c, r);
    sb_printf(&asm_, "%s%%%d", r ? ", " : "", r);
    sb_printf(&outs, "%s\"=r\"(cfm_%c%d)", r ? ", " : "", c, r);
    sb_printf(ins, "%s\"r\"(cfm_%c%d)", ins->len ? ", " : "", c, r);
  }
  cg_line(e, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [%%%d];\" : %s : "
          "\"r\"((uint32_t)__cvta_generic_to_shared(&%s[%s])));", n->u.mma.ldm[op], n->u.mma.ldm_trans[op] ? ".trans" : "",
          asm_.data ? asm_.data : "", nreg, outs.data ? outs.data : "", n->u.mma.ldm_row[op].t->name, idx);
  for (int i = 0; i < 2 * nreg; i++) {
    const KExpr *mask = op ? n->u.mma.b_mask[i] : n->u.mma.a_mask[i];
    if (!mask) continue;
    char *m = cg_expr(e, mask);
    cg_line(e, "if (!(%s)) cfm_%c%d &= %s;", m, c, i / 2, i % 2 ? "0x0000FFFFu" : "0xFFFF0000u");
    free(m);
  }
  free(idx), sb_free(&asm_), sb_free(&outs);
}

/* A wgmma operand's descriptor: the constant fields or'ed with its tile's shared address >> 4. */
static void wgmma_desc(Emitter *e, const KNode *n, int op) {
  const KAccess *s = &n->u.mma.desc_start[op];
  char *idx = cg_expr(e, s->index);
  cg_line(e, "const unsigned long long cfw_d%c = 0x%016llxull | (unsigned long long)(((unsigned)__cvta_generic_to_shared("
          "&%s[%s]) >> 4) & 0x3FFFu);", op ? 'b' : 'a', (unsigned long long)n->u.mma.desc[op], s->t->name, idx);
  free(idx);
}

/* wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<ab>.<ab> {d..}, desc-a, desc-b, scale-d,
 * 1, 1, trans-a, trans-b: the accumulator's N / 2 registers in place, scale-d 1 (the sum's
 * initialization zeroed them), the transpose bits for MN-major tiles. */
static void wgmma(Emitter *e, const KNode *n) {
  const char *ab = n->u.mma.in_dtype == CF_HALF ? "f16" : "bf16";
  int nc = n->u.mma.nacc;
  StrBuf asm_ = {0}, outs = {0};
  cg_line(e, "{");
  e->indent++;
  for (int op = 0; op < 2; op++) wgmma_desc(e, n, op);
  for (int i = 0; i < nc; i++) {
    char *idx = cg_expr(e, n->u.mma.acc[i].index);
    sb_printf(&outs, "%s\"+f\"(%s[%s])", i ? ", " : "", n->u.mma.acc[i].t->name, idx);
    sb_printf(&asm_, "%s%%%d", i ? ", " : "", i);
    free(idx);
  }
  cg_line(e, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s "
          "{%s}, %%%d, %%%d, p, 1, 1, %d, %d; }\" : %s : \"l\"(cfw_da), \"l\"(cfw_db), \"r\"(1));", nc + 2, n->u.mma.n, ab,
          ab, asm_.data, nc, nc + 1, n->u.mma.mn_major[0], n->u.mma.mn_major[1], outs.data);
  e->indent--;
  cg_line(e, "}");
  sb_free(&asm_), sb_free(&outs);
}

/* mma.sync.aligned.<shape>.row.col.f32.<ab>.<ab>.f32: the lane's operand elements packed
 * two to a 32-bit register (the lower half first), each 0 where its mask fails, or loaded
 * by ldmatrix; the accumulator's registers read and written in place. */
static void mma(Emitter *e, const KNode *n) {
  const IrMmaInstr *in = n->u.mma.instr;
  if (ir_mma_is_wgmma(in)) {
    wgmma(e, n);
    return;
  }
  bool half = n->u.mma.in_dtype == CF_HALF;
  const char *bits = half ? "__half_as_ushort(%s)" : "__bfloat16_as_ushort(%s)";
  int na = in->a.n / 2, nb = in->b.n / 2, nc = n->u.mma.nacc;
  StrBuf asm_ = {0}, outs = {0}, ins = {0};
  cg_line(e, "{");
  e->indent++;
  for (int op = 0; op < 2; op++) {
    if (n->u.mma.ldm[op]) {
      ldmatrix(e, n, op, op ? nb : na, &ins);
      continue;
    }
    for (int r = 0; r < (op ? nb : na); r++) {
      char *lo = cg_mma_operand(e, n, op, 2 * r, bits, NULL), *hi = cg_mma_operand(e, n, op, 2 * r + 1, bits, NULL);
      cg_line(e, "const uint32_t cfm_%c%d = (uint32_t)%s | ((uint32_t)%s << 16);", op ? 'b' : 'a', r, lo, hi);
      sb_printf(&ins, "%s\"r\"(cfm_%c%d)", ins.len ? ", " : "", op ? 'b' : 'a', r);
      free(lo), free(hi);
    }
  }
  for (int i = 0; i < nc; i++) {
    char *idx = cg_expr(e, n->u.mma.acc[i].index);
    sb_printf(&outs, "%s\"+f\"(%s[%s])", i ? ", " : "", n->u.mma.acc[i].t->name, idx);
    free(idx);
  }
  sb_printf(&asm_, "mma.sync.aligned.%s.row.col.f32.%s.%s.f32 {", in->name, half ? "f16" : "bf16", half ? "f16" : "bf16");
  int reg = 0;
  const int groups[4] = {nc, na, nb, -1};
  for (int g = 0; g < 3; g++) {
    for (int i = 0; i < groups[g]; i++) sb_printf(&asm_, "%s%%%d", i ? ", " : "", reg++);
    sb_puts(&asm_, "}, {");
  }
  for (int i = 0; i < nc; i++) sb_printf(&asm_, "%s%%%d", i ? ", " : "", i);
  sb_puts(&asm_, "};");
  cg_line(e, "asm volatile(\"%s\" : %s : %s);", asm_.data, outs.data, ins.data);
  e->indent--;
  cg_line(e, "}");
  sb_free(&asm_), sb_free(&outs), sb_free(&ins);
}

const Dialect cg_cuda_dialect = {"cuda",  preamble,    signature,  buffers,    epilogue,   cg_sync,
                                 element,    vector_copy, cg_convert, tmem_admin, tmem_access, true, mma, cp_async,
                                 cg_tcgen05_cuda};

char *cg_cuda_source(const KKernel *k, const char **unmarked) { return cg_generate(k, &cg_cuda_dialect, unmarked); }
