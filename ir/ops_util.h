/* ir/ops_util.h: the helpers the op files of ir/ share (internal): argument checks, the
 * axes an op sees, the Expr linking an op's output to its operands, and the errors they
 * record. Implemented in ops.c. */
#ifndef CFUSER_IR_OPS_UTIL_H
#define CFUSER_IR_OPS_UTIL_H

#include "ir/ir.h"

/* Argument `pos` (counted after f, named `name`) of `what`: non-NULL and a TensorView of f;
 * NULL after recording the error. */
Val *ir_op_arg(cf_fusion *f, const char *what, int pos, const char *name, cf_tv *t);
/* The axes an op sees: tv's logical domain without its reduction axes (in f's arena). */
Val **ir_op_axes(cf_fusion *f, Val *tv, int *n);
/* Refuses (the fusion's error, false) an operand whose dtype op does not take: a complex
 * tensor in an op ir_op_takes_complex does not list, a dtype outside the op's accepted
 * ones (ir_op_accepts). The one check every op builder makes (ops.c). */
bool ir_op_check_accepts(cf_fusion *f, const char *what, IrOp op, int n, Val *const *tvs);
/* Records "<what>: out of memory"; returns NULL. */
void *ir_op_oom(cf_fusion *f, const char *what);
/* Links out to its inputs with a new Expr (refusing tensors of Welford states for ops that
 * do not take them); NULL after recording the error. */
Expr *ir_op_wire(cf_fusion *f, const char *what, IrOp op, int nin, Val *const *in, Val *out);
/* Whether two extents may be equal (symbolic ones are assumed to be, checked at run time). */
bool ir_op_extents_compatible(Val *x, Val *y);
/* Records "<what>: rank mismatch: ..." naming both tensors; returns NULL. */
void *ir_op_rank_error(cf_fusion *f, const char *what, Val *x, int nx, Val *y, int ny);

/* expand (ops_shape.c): the axes ax[k] of tv (its op axes) with extent[k] where that is not
 * NULL and ax[k] is a broadcast axis. */
cf_tv *ir_op_expand(cf_fusion *f, const char *what, Val *tv, Val **ax, int n, Val *const *extent);

/* Python's slice bound v on an axis of extent n: negative counts from the end, clamped to [0, n]. */
int64_t ir_py_bound(int64_t v, int64_t n);
static inline cf_tv *ir_op_result(Expr *e) { return e ? ir_tv_handle(e->out[0]) : NULL; }
/* A fresh axis of id's extent and the given type. */
static inline Val *ir_op_axis_copy(cf_fusion *f, Val *id, cf_iter_type type) { return ir_id_new(f, ID(id)->extent, type); }

#endif
