/* codegen/codegen.h: printing a lowered kernel (lower/kir.h) as source code (internal).
 *
 * One emitter (emit.c) walks the kernel IR and prints the structure (loops, ifs, ops,
 * indices) once; a Dialect supplies what differs between CUDA C++ (cuda.c) and the host
 * backend's C11 (host.c): the preamble, how parameters, buffers, vector copies, type
 * conversions, barriers and tcgen05 instructions are spelled. */
#ifndef CFUSER_CODEGEN_H
#define CFUSER_CODEGEN_H

#include "ir/dtype.h"
#include "lower/kir.h"

typedef struct Emitter Emitter;

typedef struct Dialect {
  const char *name; /* "cuda" or "host" */
  void (*preamble)(Emitter *e);
  void (*signature)(Emitter *e);      /* up to and including the opening brace */
  void (*buffers)(Emitter *e);        /* declarations of shared and local buffers */
  void (*epilogue)(Emitter *e);       /* the closing brace and anything after */
  void (*sync)(Emitter *e);
  /* Element access of a kernel tensor at an index expression already printed; is_write
   * when the element is assigned (a reduction's output is also read by the same thread). */
  void (*element)(Emitter *e, const KTensor *t, const char *index, bool is_write);
  void (*vector_copy)(Emitter *e, const KNode *op, const char *dst, const char *src);
  /* An expression converting `value` of type `from` to `to`. */
  void (*convert)(Emitter *e, cf_dtype from, cf_dtype to, const char *value);
  void (*tmem_admin)(Emitter *e, const KNode *n); /* alloc / relinquish / dealloc */
  void (*tmem_access)(Emitter *e, const KNode *n, const char *addr, const char *reg);
  bool is_cuda; /* which code form of the op table (ir_op_form) the dialect prints */
  void (*mma)(Emitter *e, const KNode *n); /* a warp's tensor-core instruction (KN_MMA) */
  /* The asynchronous instructions' bookkeeping: cp.async, an async copy op (dst and src its
   * printed element accesses), or a commit or wait node; wgmma's fence, commit and wait;
   * a barrier's fence.proxy.async (KN_SYNC: printed before the barrier); dst and src NULL
   * but for the copy. */
  void (*cp_async)(Emitter *e, const KNode *n, const char *dst, const char *src);
  /* tcgen05.mma (a KN_MMA of its row), its commit (KN_TC05_COMMIT) and fences
   * (KN_TC05_FENCE): codegen/tcgen05.c's cg_tcgen05_cuda and cg_tcgen05_host. */
  void (*tcgen05)(Emitter *e, const KNode *n);
} Dialect;

struct Emitter {
  StrBuf out;
  int indent;
  const KKernel *k;
  const Dialect *d;
  const char *const *param_names; /* the kernel's (KKernel.param_names) */
  /* The first parameter whose element was printed though lowering marked its data unused
   * (KTensor.data_used; cg_generate reports it). NULL: none. */
  const KTensor *unmarked;
  /* blockDim.x, .y, .z where lowering fixed them (the launch's constants), else 0: block
   * reductions print the constants (reduction.c). */
  int64_t block_size[3];
};

/* Prints a line at the current indentation. */
void cg_line(Emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints an index expression into a fresh malloc'd string. */
char *cg_expr(Emitter *e, const KExpr *x);
/* The definition of a shared buffer's symbolic offset variable, if it has one. */
void cg_smem_offset_decl(Emitter *e, const KTensor *t);
/* The C type name of a dtype in the dialect ("float", "__half", "int64_t"). */
const char *cg_ctype(cf_dtype t);
/* Pieces both dialects spell alike. */
void cg_convert(Emitter *e, cf_dtype from, cf_dtype to, const char *v);
void cg_sync(Emitter *e);
/* A grid-wide sync on the kernel's counter (cf_grid_sync of runtime/grid_sync.cuh and
 * host_grid.h): every thread of every block arrives before any goes on. */
void cg_grid_sync(Emitter *e);
/* The start value of a reduction's accumulator of dtype t (compute type ct), malloc'd. */
char *cg_reduction_init(Emitter *e, IrOp op, cf_dtype ct, cf_dtype t);
/* reduction.c: a reduction's accumulator declaration and its block all-reduce, printed up
 * to its tail (a grid reduction's last-block store, which the walk prints next); _end
 * closes it. */
void cg_acc_decl(Emitter *e, const KNode *n);
void cg_block_reduce(Emitter *e, const KNode *n);
void cg_block_reduce_end(Emitter *e, const KNode *n);
void cg_element(Emitter *e, const KTensor *t, const char *index, bool is_write);
/* A vector copy with a packed parameter on either side (float4_e2m1fn in global memory):
 * printed as cf_fp4_pack / cf_fp4_unpack of its elements (both dialects; true), or false
 * for any other copy. */
bool cg_packed_copy(Emitter *e, const KNode *op, const char *dst, const char *src);
/* What a parameter's declaration says after its name: a comment "sizes only" when the
 * kernel never touches its elements (KTensor.data_used), else "". */
const char *cg_param_note(const KTensor *t);
/* Element i of a tensor-core operand (b: B, else A) as the expression `(mask ? <bits> : 0)`
 * where <bits> is the element through `wrap` ("__half_as_ushort(%s)") or, with wrap NULL,
 * converted to float (malloc'd); `value` (an expression of the operand's dtype, as ldmatrix
 * delivered it) instead of the tile's element when not NULL. */
char *cg_mma_operand(Emitter *e, const KNode *n, bool b, int i, const char *wrap, const char *value);
/* An op's code form in the emitter's dialect with %0 %1 %2 replaced by args (malloc'd). */
char *cg_op_form(const Emitter *e, IrOp op, char *const *args);
/* The type an op computes in (emit.c): a Welford state type, double, float or int64. */
cf_dtype cg_compute_type(const KNode *op);
/* An operand or output as the dialect spells it (a tensor element, a register, a constant). */
char *cg_access_str(Emitter *e, const KAccess *a, bool is_write);
/* v of dtype `from` converted to `to` (malloc'd). */
char *cg_converted(Emitter *e, cf_dtype from, cf_dtype to, const char *v);
/* gather, take_along_axis, scatter and the scans (indexed.c). */
void cg_indexed_op(Emitter *e, const KNode *n);
/* tcgen05.c: the two dialects' tcgen05.mma, commit and fence. */
void cg_tcgen05_cuda(Emitter *e, const KNode *n);
void cg_tcgen05_host(Emitter *e, const KNode *n);
/* Generates the whole kernel source with the given dialect (malloc'd); *unmarked (unmarked
 * may be NULL) receives the name of a parameter whose element the code reads or writes
 * though lowering marked its data unused (KTensor.data_used), else NULL. */
char *cg_generate(const KKernel *k, const Dialect *d, const char **unmarked);
/* The embedded runtime snippet named `name` (codegen/runtime/), or NULL. */
const char *cg_embedded_file(const char *name);

/* The host runtime's parts (codegen/runtime/), in the order every host kernel source
 * starts with them; NULL-terminated. */
extern const char *const cg_host_runtime_parts[];

/* The host runtime in two translation units (host_split.c): what a kernel's source starts
 * with (the parts behind CG_HOST_KERNEL_TU_LINE, each CFH_FN function declared, not
 * defined) and the runtime's own unit (the parts whole behind `#define CFH_RUNTIME_TU 1`),
 * compiled once into the object every kernel links. Made once; NULL without memory. */
#define CG_HOST_KERNEL_TU_LINE "#define CFH_KERNEL_TU 1\n"
const char *cg_host_kernel_runtime(void);
const char *cg_host_runtime_unit(void);
/* text with each CFH_FN function's body replaced by `;` (malloc'd). */
char *cg_host_strip_bodies(const char *text);

/* Entry points: the whole source for a backend (unmarked: as for cg_generate; a name there
 * means lowering's list of dereferences, kn_data_tensors, missed an access: the executor
 * then refuses the kernel as an internal error, since it no longer checks where such a
 * parameter's data lives). */
char *cg_cuda_source(const KKernel *k, const char **unmarked);
char *cg_host_source(const KKernel *k, const char **unmarked);
extern const Dialect cg_cuda_dialect;
extern const Dialect cg_host_dialect;

#endif
