/* codegen/host.c: the host-backend dialect of the code generator: the same kernel as
 * the CUDA generator prints, as C11 against the host runtime (codegen/runtime/host_*.h,
 * prepended): tensor parameters are plain structs by value (one typedef per element
 * type and rank, since C has no templates), shared buffers live in the block's emulated
 * shared memory (cfh_smem()) and are accessed through host_race.h's recording accessors
 * (cfh_smem_r/w, for its race detector), vector copies are memcpy, and tcgen05 instructions are calls
 * into the runtime's tensor-memory emulation, which checks the hardware rules at run time.
 * Key decision: the kernel keeps the CUDA kernel's exact parameter list and body, so a
 * difference between the two backends' results is a runtime bug, not a codegen one. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static void struct_name(StrBuf *b, const KTensor *t) {
  sb_printf(b, "Tensor_%s_%d_%d", cg_ctype(t->dtype), t->rank, t->alloc_rank);
}

static void tensor_typedefs(Emitter *e) {
  const KKernel *k = e->k;
  for (int i = 0; i < k->nparams; i++) {
    const KTensor *t = k->params[i];
    bool seen = false;
    for (int j = 0; j < i; j++)
      seen |= k->params[j]->dtype == t->dtype && k->params[j]->rank == t->rank && k->params[j]->alloc_rank == t->alloc_rank;
    if (seen) continue;
    StrBuf name = {0};
    struct_name(&name, t);
    if (t->rank == 0 && t->alloc_rank == 0)
      sb_printf(&e->out, "typedef struct { %s *data; } %s;\n", cg_ctype(t->dtype), name.data);
    else
      sb_printf(&e->out, "typedef struct { %s *data; cf_index_t logical_size[%d]; cf_index_t alloc_stride[%d]; } %s;\n",
                cg_ctype(t->dtype), t->rank, t->alloc_rank, name.data);
    sb_free(&name);
  }
}

const char *const cg_host_runtime_parts[] = {"host_runtime.h", "host_tmem.h", "host_mma.h", "host_race.h",
                                             "host_async.h", "host_mbarrier.h", "host_tma.h", "host_math.h", "host_wgmma.h", "host_tcgen05.h", "fp8.h", "special_math.h", "philox.h",
                                             "ops_math.h", "welford.h", "complex.h", "host_grid.h", NULL};

/* The bytes of the kernel's local arrays (constant sizes: lowering refuses others), each
 * aligned to 16 as buffers() declares them: the host runtime adds them to every emulated
 * thread's stack. */
static int64_t local_bytes(const KKernel *k) {
  int64_t total = 0, n;
  for (int i = 0; i < k->nallocs; i++)
    if (k->allocs[i]->mem == CF_MEM_LOCAL && kx_is_const(k->allocs[i]->size, &n))
      total += (n * (int64_t)cf_dtype_size(k->allocs[i]->dtype) + 15) / 16 * 16;
  return total;
}

/* The names the kernel's TMA loads, mbarriers and setmaxnreg print with (codegen/emit.c:
 * one text for both dialects, tma.cuh's functions on CUDA) over host_tma.h and
 * host_mbarrier.h; setmaxnreg moves no registers on the host. Macros of the kernel's own
 * source: the runtime's headers keep their cfh_ names. */
static void mbarrier_names(Emitter *e) {
  sb_puts(&e->out, "#define cf_mbar_init(bar, n) cfh_mbarrier_init((uint64_t *)(bar), (n))\n"
                   "#define cf_mbar_expect_tx(bar, bytes) cfh_mbarrier_arrive_expect_tx((uint64_t *)(bar), (bytes))\n"
                   "#define cf_mbar_wait(bar, parity) cfh_mbarrier_wait_parity((uint64_t *)(bar), (parity))\n"
                   "#define cf_mbar_arrive(bar) cfh_mbarrier_arrive((uint64_t *)(bar))\n"
                   "#define cf_tma_load(dst, map, bar, ...) cfh_tma_load_tile((dst), (map), (const int32_t[]){__VA_ARGS__}, "
                   "(uint64_t *)(bar))\n"
                   "#define cf_setmaxnreg(dir, n) ((void)0)\n");
}

static void preamble(Emitter *e) {
  const char *runtime = cg_host_kernel_runtime(); /* the runtime's declarations (host_split.c) */
  sb_puts(&e->out, runtime ? runtime : "#error \"out of memory making the host runtime's declarations\"\n");
  /* the runtime's generic helpers are macros: one that a header of the host compiler's
   * undefined would compile as a call to an undeclared function, so say which */
  sb_puts(&e->out, "\n#if !defined(max) || !defined(min) || !defined(ceilDiv)\n"
                   "#error \"a header of the host C compiler undefined the host runtime's max, min or ceilDiv\"\n"
                   "#endif\n");
  sb_printf(&e->out, "\n#include <string.h>\ntypedef %s cf_index_t;\n", e->k->index32 ? "int" : "long long");
  if (e->k->signed_coords) /* host_runtime.h's cfh_idim3: no unsigned times a negative stride */
    sb_puts(&e->out, "#undef cfh__coord3\n#define cfh__coord3 cfh_idim3\n");
  sb_printf(&e->out, "CFH_KERNEL_VAR size_t cfh__kernel_local_bytes = %lldu;\n", (long long)local_bytes(e->k));
  sb_printf(&e->out, "CFH_KERNEL_VAR int cfh__kernel_cooperative = %d;\n", e->k->grid_sem != NULL);
  sb_puts(&e->out, "static inline unsigned cf_linear_tid(void) {\n"
                   "  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n}\n");
  tensor_typedefs(e);
  if (e->k->ntmaps || e->k->tcgen05_mma) mbarrier_names(e);
  sb_puts(&e->out, "\n");
}

static void signature(Emitter *e) {
  const KKernel *k = e->k;
  StrBuf b = {0};
  sb_printf(&b, "__attribute__((visibility(\"default\"))) void %s(", k->name);
  for (int i = 0; i < k->nparams; i++) {
    if (i) sb_puts(&b, ", ");
    struct_name(&b, k->params[i]);
    sb_printf(&b, " %s%s", k->params[i]->name, cg_param_note(k->params[i]));
  }
  if (!k->nparams) sb_puts(&b, "void");
  sb_puts(&b, ") {");
  cg_line(e, "%s", b.data);
  sb_free(&b);
}

/* The TMA loads' tensor maps, built from their parameters (CUDA's come encoded by the
 * executor): the allocation axes innermost first, byte strides. */
static void tensor_maps(Emitter *e) {
  const KKernel *k = e->k;
  for (int i = 0; i < k->ntmaps; i++) {
    const KTmaMap *m = &k->tmaps[i];
    const KTensor *t = k->params[m->param];
    StrBuf sz = {0}, st = {0}, box = {0};
    for (int d = 0; d < m->rank; d++) {
      int a = t->rank - 1 - d;
      sb_printf(&sz, "%s(uint64_t)%s.logical_size[%d]", d ? ", " : "", t->name, a);
      sb_printf(&st, "%s(uint64_t)%s.alloc_stride[%d] * sizeof(%s)", d ? ", " : "", t->name, a, cg_ctype(t->dtype));
      sb_printf(&box, "%s%lld", d ? ", " : "", (long long)m->box[d]);
    }
    cg_line(e, "const cfh_tensor_map cf_tmap%d = {%s.data, %d, sizeof(%s), {%s}, {%s}, {%s}, %d};", i, t->name, m->rank,
            cg_ctype(t->dtype), sz.data, st.data, box.data, m->swizzle);
    sb_free(&sz), sb_free(&st), sb_free(&box);
  }
}

static void buffers(Emitter *e) {
  const KKernel *k = e->k;
  for (int i = 0; i < k->nallocs; i++) {
    const KTensor *t = k->allocs[i];
    char *size = cg_expr(e, t->size);
    if (t->mem == CF_MEM_SHARED) {
      cg_smem_offset_decl(e, t);
      char *off = cg_expr(e, t->smem_offset);
      cg_line(e, "%s *%s = (%s *)((char *)cfh_smem() + %s);", cg_ctype(t->dtype), t->name, cg_ctype(t->dtype), off);
      free(off);
    } else if (t->mem == CF_MEM_LOCAL && t->spill) { /* the registers' part; T_s holds the rest */
      cg_line(e, "_Alignas(16) %s %s[%lld];", cg_ctype(t->dtype), t->name, (long long)t->reg_elems);
    } else if (t->mem == CF_MEM_LOCAL) {
      cg_line(e, "_Alignas(16) %s %s[%s];", cg_ctype(t->dtype), t->name, size);
    }
    free(size);
  }
  tensor_maps(e);
}

static void epilogue(Emitter *e) { cg_line(e, "}"); }

/* n elements of a spilled tensor from `index`, placed as on CUDA (host_race.h's
 * cfh_spill_at: a pointer, checked and recorded in the shared part). */
static void spill_at(StrBuf *b, const KTensor *t, const char *index, int n, bool is_write) {
  int64_t ns = 0;
  kx_is_const(t->spill->size, &ns); /* a constant (shared_spill.c) */
  sb_printf(b, "cfh_spill_at(%s, %s, %lld, %d, %lld, %s, %lld, %d, %s)", t->name, t->spill->name, (long long)t->reg_elems,
            16 / (int)cf_dtype_size(t->dtype), (long long)t->spill_threads, index, (long long)ns, n,
            is_write ? "true" : "false");
}

/* Shared-memory elements (a spilled tensor's shared part too) go through host_race.h's
 * accessors, which record the access for the race detector; other tensors are indexed as
 * in CUDA. */
static void element(Emitter *e, const KTensor *t, const char *index, bool is_write) {
  if (t->spill) {
    sb_puts(&e->out, "(*");
    spill_at(&e->out, t, index, 1, is_write);
    sb_puts(&e->out, ")");
  } else if (t->mem == CF_MEM_SHARED && t->param < 0)
    sb_printf(&e->out, "cfh_smem_%c(%s, %s)", is_write ? 'w' : 'r', t->name, index);
  else
    cg_element(e, t, index, is_write);
}

/* The address of a vector copy's side: for shared memory, all `n` elements are recorded. */
static void vector_side(Emitter *e, StrBuf *b, const KAccess *a, int n, const char *access, bool is_write) {
  if (a->t->spill) {
    char *idx = cg_expr(e, a->index);
    spill_at(b, a->t, idx, n, is_write);
    free(idx);
    return;
  }
  if (a->t->mem != CF_MEM_SHARED || a->t->param >= 0) {
    sb_printf(b, "&%s", access);
    return;
  }
  char *idx = cg_expr(e, a->index);
  sb_printf(b, "cfh_smem_%cn(%s, %s, %d)", is_write ? 'w' : 'r', a->t->name, idx, n);
  free(idx);
}

static void vector_copy(Emitter *e, const KNode *op, const char *dst, const char *src) {
  if (cg_packed_copy(e, op, dst, src)) return;
  StrBuf d = {0}, s = {0};
  vector_side(e, &d, &op->u.op.out, op->u.op.vector, dst, true);
  vector_side(e, &s, &op->u.op.in[0], op->u.op.vector, src, false);
  cg_line(e, "memcpy(%s, %s, %d * sizeof(%s));", d.data, s.data, op->u.op.vector, cg_ctype(op->u.op.out_dtype));
  sb_free(&d), sb_free(&s);
}

/* cp.async: the copy is queued in the thread's open group and done at the wait that
 * completes it (host_async.h), its shared-memory write recorded then. */
static void cp_async(Emitter *e, const KNode *n, const char *dst, const char *src) {
  if (n->kind == KN_OP && n->u.op.out.t->spill) { /* done at once: the thread's wait follows before any read */
    vector_copy(e, n, dst, src);
    return;
  }
  switch (n->kind) { /* wgmma completes at its wait here (host_wgmma.h), as cp.async does */
  case KN_SYNC: cg_line(e, "/* fence.proxy.async.shared::cta */"); return;
  case KN_WGMMA_FENCE: cg_line(e, "/* wgmma.fence */"); return;
  case KN_WGMMA_COMMIT: cg_line(e, "cfh_wgmma_commit();"); return;
  case KN_WGMMA_WAIT: cg_line(e, "cfh_wgmma_wait(%d);", n->u.async.pending); return;
  default: break;
  }
  if (n->kind == KN_ASYNC_COMMIT) {
    cg_line(e, "cfh_cp_async_commit();");
    return;
  }
  if (n->kind == KN_ASYNC_WAIT) {
    cg_line(e, "cfh_cp_async_wait(%d);", n->u.async.pending);
    return;
  }
  const KAccess *o = &n->u.op.out;
  char *idx = cg_expr(e, o->index), *z = n->u.op.zfill ? cg_expr(e, n->u.op.zfill) : strdup("1");
  cg_line(e, "cfh_cp_async(%s, &%s[%s], &%s, 16, (%s) ? 16u : 0u, sizeof %s[0], \"%s\");", o->t->name, o->t->name, idx,
          src, z, o->t->name, o->t->name);
  free(idx), free(z);
}

static void tmem_admin(Emitter *e, const KNode *n) {
  if (n->kind == KN_TMEM_RELINQUISH) {
    cg_line(e, "if (cf_linear_tid() < 32) cfh_tcgen05_relinquish_alloc_permit();");
    return;
  }
  const KTMemRegion *r = &e->k->regions[n->u.region.region];
  if (n->kind == KN_TMEM_ALLOC)
    cg_line(e, "if (cf_linear_tid() < 32) cfh_tcgen05_alloc(&%s[0], %lldu);", r->slot->name, (long long)r->num_columns);
  else
    cg_line(e, "if (cf_linear_tid() < 32) cfh_tcgen05_dealloc(%s[0], %lldu);", r->slot->name, (long long)r->num_columns);
}

static void tmem_access(Emitter *e, const KNode *n, const char *addr, const char *reg) {
  if (n->kind == KN_TMEM_LD) {
    cg_line(e, "cfh_tcgen05_ld_32x32b(%s, %d, (uint32_t *)(%s));", addr, n->u.tmem.words, reg);
    cg_line(e, "cfh_tcgen05_wait_ld();");
  } else {
    cg_line(e, "cfh_tcgen05_st_32x32b(%s, %d, (const uint32_t *)(%s));", addr, n->u.tmem.words, reg);
    cg_line(e, "cfh_tcgen05_wait_st();");
  }
}

/* ldmatrix for operand op: each lane gives its row (recorded as a read of 8 elements by
 * the race detector) and the elements its registers must receive (checked by the runtime);
 * the halves land in cfm_<op>v. */
static void ldmatrix(Emitter *e, const KNode *n, int op, int nel) {
  const KAccess *r = &n->u.mma.ldm_row[op], *el = op ? n->u.mma.b : n->u.mma.a;
  char c = op ? 'b' : 'a', *idx = cg_expr(e, r->index);
  StrBuf ex = {0};
  for (int i = 0; i < nel; i++) {
    char *ei = cg_expr(e, el[i].index);
    sb_printf(&ex, "%s&%s[%s]", i ? ", " : "", el[i].t->name, ei);
    free(ei);
  }
  cg_line(e, "const void *const cfm_%ce[%d] = {%s};", c, nel, ex.data);
  cg_line(e, "%s cfm_%cv[%d];", cg_ctype(n->u.mma.in_dtype), c, nel);
  cg_line(e, "cfh_ldmatrix(%d, %d, cfh_smem_rn(%s, %s, 8), cfm_%ce, cfm_%cv);", n->u.mma.ldm[op], n->u.mma.ldm_trans[op],
          r->t->name, idx, c, c);
  free(idx), sb_free(&ex);
}

/* The warp's instruction is a rendezvous in the runtime (host_mma.h): each lane gives its
 * operand elements (as float, exact for half and bfloat16; 0 where masked) and the
 * addresses of its accumulator registers, the last lane computes the tile. */
/* wgmma: each thread gives the descriptors and its accumulator registers (host_wgmma.h
 * decodes the descriptors as the hardware does). */
static void wgmma(Emitter *e, const KNode *n) {
  StrBuf d = {0};
  cg_line(e, "{");
  e->indent++;
  for (int op = 0; op < 2; op++) {
    const KAccess *s = &n->u.mma.desc_start[op];
    char *idx = cg_expr(e, s->index);
    cg_line(e, "const uint64_t cfw_d%c = cfh_wgmma_desc(0x%016llxull, &%s[%s]);", op ? 'b' : 'a',
            (unsigned long long)n->u.mma.desc[op], s->t->name, idx);
    free(idx);
  }
  for (int i = 0; i < n->u.mma.nacc; i++) {
    char *idx = cg_expr(e, n->u.mma.acc[i].index);
    sb_printf(&d, "%s&%s[%s]", i ? ", " : "", n->u.mma.acc[i].t->name, idx);
    free(idx);
  }
  cg_line(e, "float *const cfw_acc[%d] = {%s};", n->u.mma.nacc, d.data);
  cg_line(e, "cfh_wgmma(%d, %d, %d, %d, cfw_da, cfw_db, cfw_acc);", n->u.mma.n, n->u.mma.in_dtype == CF_BFLOAT16,
          n->u.mma.mn_major[0], n->u.mma.mn_major[1]);
  e->indent--;
  cg_line(e, "}");
  sb_free(&d);
}

static void mma(Emitter *e, const KNode *n) {
  const IrMmaInstr *in = n->u.mma.instr;
  if (ir_mma_is_wgmma(in)) {
    wgmma(e, n);
    return;
  }
  cg_line(e, "{");
  e->indent++;
  for (int op = 0; op < 2; op++) {
    StrBuf s = {0};
    int nel = op ? in->b.n : in->a.n;
    if (n->u.mma.ldm[op]) ldmatrix(e, n, op, nel);
    for (int i = 0; i < nel; i++) {
      char val[32];
      snprintf(val, sizeof val, "cfm_%cv[%d]", op ? 'b' : 'a', i);
      char *v = cg_mma_operand(e, n, op, i, NULL, n->u.mma.ldm[op] ? val : NULL);
      sb_printf(&s, "%s%s", i ? ", " : "", v);
      free(v);
    }
    cg_line(e, "const float cfm_%c[%d] = {%s};", op ? 'b' : 'a', nel, s.data);
    sb_free(&s);
  }
  StrBuf d = {0};
  for (int i = 0; i < n->u.mma.nacc; i++) {
    char *idx = cg_expr(e, n->u.mma.acc[i].index);
    sb_printf(&d, "%s&%s[%s]", i ? ", " : "", n->u.mma.acc[i].t->name, idx);
    free(idx);
  }
  cg_line(e, "float *const cfm_d[%d] = {%s};", n->u.mma.nacc, d.data);
  cg_line(e, "cfh_mma_sync(%d, %d, %d, cfm_a, cfm_b, cfm_d);", in->m, in->n, in->k);
  e->indent--;
  cg_line(e, "}");
  sb_free(&d);
}

const Dialect cg_host_dialect = {"host",     preamble,    signature,  buffers,    epilogue,   cg_sync,
                                 element,    vector_copy, cg_convert, tmem_admin, tmem_access, false, mma, cp_async,
                                 cg_tcgen05_host};

char *cg_host_source(const KKernel *k, const char **unmarked) { return cg_generate(k, &cg_host_dialect, unmarked); }
