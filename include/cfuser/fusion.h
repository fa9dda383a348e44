/* cfuser/fusion.h: building a Fusion, a dataflow graph of TensorViews.
 *
 * A cf_fusion owns every node made in it; cf_fusion_destroy frees them all at once, so a
 * cf_tv handle stays valid exactly as long as its fusion. Every call takes the fusion
 * first. Errors are sticky, as in cairo: the first failed call records a message on the
 * fusion (cf_fusion_error), returns NULL or a non-OK status, and every later building or
 * scheduling call on that fusion does nothing and returns the same status. Messages name
 * the tensor and axis involved and print its domain, e.g.
 *   split: axis 3 out of range for T2_l_float[iS0{4}, iS1{8}]
 * No call aborts or exits on a user's mistake. */
#ifndef CFUSER_FUSION_H
#define CFUSER_FUSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_fusion cf_fusion; /* a Fusion: owns everything made in it */
typedef struct cf_tv cf_tv;         /* a TensorView of some fusion */
typedef struct cf_id cf_id;         /* an IterDomain (an axis) of some TensorView */

/* ---- the fusion ------------------------------------------------------------------ */

/* Creates an empty fusion; NULL only when out of memory. */
CF_API cf_fusion *cf_fusion_create(void);
/* Frees the fusion and every TensorView, IterDomain and scalar made in it. NULL is ok. */
CF_API void cf_fusion_destroy(cf_fusion *f);
/* CF_OK, or the status of the first failed call on f. */
CF_API cf_status cf_fusion_status(const cf_fusion *f);
/* The message of the first failed call on f, or "" when there was none. Errors are
 * sticky, so it stays valid until cf_fusion_clear_error or cf_fusion_destroy. */
CF_API const char *cf_fusion_error(const cf_fusion *f);
/* Forgets the recorded error so the fusion can be used again (e.g. after a test). */
CF_API void cf_fusion_clear_error(cf_fusion *f);

/* A deep copy of f's math in a new fusion: the inputs (same dtypes, constant or
 * symbolic sizes, strides, contiguity), every tensor op with its attributes, and the
 * outputs, in the same order and with the same names, so cf_fusion_print_math prints the
 * same text. Nothing of a schedule is copied: the copy is unscheduled (loop domains are
 * the logical ones, axes serial, intermediates local) and independent of f. NULL only
 * when out of memory; when f has an error, or is scheduled beyond what a copy of the math
 * can hold (rfactor domains, an allocation domain of split axes), the copy carries an
 * error (cf_fusion_error) saying so. Free it with cf_fusion_destroy. */
CF_API cf_fusion *cf_fusion_copy(const cf_fusion *f);

CF_API cf_status cf_fusion_add_input(cf_fusion *f, cf_tv *tv);
CF_API cf_status cf_fusion_add_output(cf_fusion *f, cf_tv *tv);
CF_API int cf_fusion_num_inputs(const cf_fusion *f);
CF_API int cf_fusion_num_outputs(const cf_fusion *f);
CF_API cf_tv *cf_fusion_input(const cf_fusion *f, int i);
CF_API cf_tv *cf_fusion_output(const cf_fusion *f, int i);
/* Every TensorView of the fusion, inputs, intermediates (those made by composite ops such
 * as cf_var_mean and by cf_cache_after/cf_rfactor included) and outputs, in creation order
 * (nvFuser's allTvs). cf_fusion_tv returns NULL when i is out of range. */
CF_API int cf_fusion_num_tvs(const cf_fusion *f);
CF_API cf_tv *cf_fusion_tv(const cf_fusion *f, int i);

/* ---- tensors ------------------------------------------------------------------------ */

/* A contiguous tensor of the given concrete sizes (nvFuser's makeContigConcreteTensor).
 * Size 1 axes are broadcast axes. */
CF_API cf_tv *cf_tensor_concrete(cf_fusion *f, cf_dtype dtype, int rank, const int64_t *sizes);
/* A contiguous tensor of the given rank whose sizes are named scalars (i0, i1, ...)
 * bound from the input tensor at run time (nvFuser's makeContigTensor). */
CF_API cf_tv *cf_tensor_symbolic(cf_fusion *f, cf_dtype dtype, int rank);
/* A tensor of symbolic sizes and arbitrary strides (no contiguity promised). */
CF_API cf_tv *cf_tensor_strided(cf_fusion *f, cf_dtype dtype, int rank);

/* ---- ops: each makes a new TensorView in f (in local memory), or NULL on error ----- */

#define CF_UNARY_OP_TABLE(X) \
  X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(reciprocal) X(relu) X(sigmoid) X(tanh) \
  X(gelu) X(sin) X(cos) X(tan) X(erf) X(floor) X(ceil) \
  X(acos) X(acosh) X(asin) X(asinh) X(atan) X(atanh) X(cosh) X(sinh) X(erfc) X(expm1) \
  X(exp2) X(log1p) X(log2) X(log10) X(lgamma) X(erfinv) X(erfcinv) X(digamma) X(silu) \
  X(round) X(trunc) X(frac) X(sign) X(isfinite) X(isinf) X(isnan) X(isneginf) X(isposinf) \
  X(isreal) X(signbit) X(logical_not) X(bitwise_not) \
  X(real) X(imag) X(conj)
#define CF_BINARY_OP_TABLE(X) \
  X(add) X(sub) X(mul) X(div) X(max) X(min) X(pow) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) \
  X(truediv) X(mod) X(fmod) X(remainder) X(floor_divide) X(atan2) X(nextafter) \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(logical_and) X(logical_or) \
  X(bitwise_left_shift) X(bitwise_right_shift) X(gcd)

/* set: a copy (the data-movement op of the scheduling tutorials). */
CF_API cf_tv *cf_set(cf_fusion *f, cf_tv *in);
/* Unary ops, with torch's semantics and result dtypes (the op table's type rule):
 * - floating math (exp ... silu, erfinv, digamma): floating inputs keep their dtype,
 *   integers and bool give float; relu keeps NaN; sigmoid, gelu, silu as torch;
 * - abs, relu, floor, ceil, round (half to even), trunc, sign keep the dtype (the
 *   identity on integers where torch's is; sign of NaN is 0); neg refuses bool;
 *   frac takes floating inputs only;
 * - predicates (isfinite, isinf, isnan, isneginf, isposinf, isreal, signbit,
 *   logical_not) give bool; integers are finite, real and never NaN;
 * - bitwise_not takes integers and bool (for bool it is logical_not);
 * - complex operands (CF_COMPLEX_FLOAT, CF_COMPLEX_DOUBLE) go to neg, abs (giving the real
 *   type: |z|), exp, log, sqrt, rsqrt, reciprocal (torch's principal branches), real and
 *   imag (the parts, of the real type; real of a real tensor is itself, imag refuses
 *   one) and conj (the identity on real types); the other unary ops refuse them.
 * An operand of a dtype the op does not take is refused with a message naming it. */
#define CF_X(name) CF_API cf_tv *cf_##name(cf_fusion *f, cf_tv *in);
CF_UNARY_OP_TABLE(CF_X)
#undef CF_X
/* Binary ops. Operands broadcast numpy-style: a lower rank gets leading broadcast axes
 * (0-d operands included); then each axis pair must have equal extents or a broadcast
 * side. The result dtype is torch's (torch.result_type): a tensor with axes decides
 * unless a 0-d tensor or a scalar (cf_scalar_input, cf_const_*) is of a higher category
 * (bool < integer < floating < complex), where a floating scalar counts as float32 and a
 * complex one as complex_float: float32 tensor
 * * double scalar is float32, int32 tensor * double scalar is float32, int8 tensor + int64
 * scalar is int8 (an operand wider than the result is cast first). Comparisons and
 * logical_and/or give bool. Semantics, identical on every backend:
 * - div divides (integers: truncated, nvFuser's div); truediv always gives a floating
 *   result (integers: float); floor_divide rounds toward -inf (torch's //);
 * - mod and fmod: the remainder of truncated division (C's % and fmod); remainder: the
 *   divisor's sign (torch.remainder, Python's %);
 * - integer division by zero gives -1 and its remainders the dividend; INT_MIN / -1
 *   gives INT_MIN (wraps) with remainder 0; no trap on any backend;
 * - max and min (maximum, minimum) propagate NaN; pow of integers is exact integer pow
 *   (a negative exponent gives 0 unless the base is 1 or -1);
 * - bitwise_and/or/xor take integers and bool; bitwise_left_shift and
 *   bitwise_right_shift integers (arithmetic shift; an amount < 0 or >= the width gives 0,
 *   or the sign for right shifts); atan2 gives a floating result; nextafter takes float
 *   and double only;
 * - gcd takes integers (torch.gcd): the greatest common divisor of |a| and |b|, never
 *   negative, gcd(0, 0) = 0; |INT_MIN| wraps to INT_MIN as in torch's two's complement.
 * - complex operands go to add, sub, mul, div, truediv (C99's complex arithmetic), eq,
 *   ne and where; the other binary ops refuse them, as torch does. */
#define CF_X(name) CF_API cf_tv *cf_##name(cf_fusion *f, cf_tv *a, cf_tv *b);
CF_BINARY_OP_TABLE(CF_X)
#undef CF_X
/* Binary ops with a scalar constant on the right (x + 2.5). */
CF_API cf_tv *cf_add_scalar(cf_fusion *f, cf_tv *a, double b);
CF_API cf_tv *cf_mul_scalar(cf_fusion *f, cf_tv *a, double b);
/* min(max(x, lo), hi), printed as those two ops; lo <= hi, neither NaN. Like cf_max and
 * cf_min, a NaN element stays NaN (torch.clamp). An integer x keeps its dtype when both
 * bounds are integers. */
CF_API cf_tv *cf_clamp(cf_fusion *f, cf_tv *x, double lo, double hi);
/* where(cond, a, b): cond must be CF_BOOL; shapes broadcast like binary ops. */
CF_API cf_tv *cf_where(cf_fusion *f, cf_tv *cond, cf_tv *a, cf_tv *b);
CF_API cf_tv *cf_cast(cf_fusion *f, cf_tv *in, cf_dtype to);
/* Inserts size-1 broadcast axes: the output has out_rank axes, and is_broadcast[i] says
 * whether output axis i is new; the other axes take the input's axes in order. */
CF_API cf_tv *cf_broadcast(cf_fusion *f, cf_tv *in, int out_rank, const bool *is_broadcast);
/* Reductions over the given axes (negative counts from the end). The output keeps the
 * reduced axes as reduction axes (rS), as nvFuser does. */
CF_API cf_tv *cf_sum(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
CF_API cf_tv *cf_max_reduce(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
CF_API cf_tv *cf_min_reduce(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
/* prod: sums and products of integers and bool give int64. mean (floating-point inputs):
 * the sum times 1/count when the reduced extents are constant, else the sum divided by
 * their product at run time (printed `div( T1, ( i0 * i2 ) )`). */
CF_API cf_tv *cf_prod(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
CF_API cf_tv *cf_mean(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
typedef enum cf_reduce_op { CF_REDUCE_SUM, CF_REDUCE_PROD, CF_REDUCE_MAX, CF_REDUCE_MIN, CF_REDUCE_MEAN } cf_reduce_op;
/* Any of the above; keepdim puts the reduced axes back as size-1 broadcast axes (a
 * broadcast op after the reduction, as nvFuser's keep_dim does). */
CF_API cf_tv *cf_reduce(cf_fusion *f, cf_reduce_op op, cf_tv *in, int naxes, const int *axes, bool keepdim);
/* Welford: mean and variance in one pass, numerically stable (Chan et al.'s merge of
 * partial states, in every parallel form a sum has: serial, rfactor, warp, block, grid).
 * cf_welford reduces a floating-point tensor over the axes to a tensor of Welford states
 * (dtype CF_WELFORD_FLOAT, or CF_WELFORD_DOUBLE for double inputs): the running mean, the
 * sum of squared deviations M2 and the count of each reduced group. It is scheduled like
 * any reduction; cf_set, cf_broadcast and cf_permute move states, and the states are read
 * with cf_welford_avg (the mean), cf_welford_m2 (M2, of the state's scalar type) and
 * cf_welford_n (the count, int64). Other ops refuse a tensor of states, and so do fusion
 * inputs and outputs. */
CF_API cf_tv *cf_welford(cf_fusion *f, cf_tv *in, int naxes, const int *axes);
CF_API cf_tv *cf_welford_avg(cf_fusion *f, cf_tv *states);
CF_API cf_tv *cf_welford_m2(cf_fusion *f, cf_tv *states);
CF_API cf_tv *cf_welford_n(cf_fusion *f, cf_tv *states);
/* torch.var_mean: *var = M2 / (count - correction) and *mean, through one cf_welford
 * (correction 1: the unbiased variance; 0: the population variance); keepdim puts the
 * reduced axes back as size-1 broadcast axes. Either output pointer may be NULL. */
CF_API cf_status cf_var_mean(cf_fusion *f, cf_tv *in, int naxes, const int *axes, int64_t correction, bool keepdim,
                             cf_tv **var, cf_tv **mean);
/* iota: the 1-D tensor start + i * step, i in [0, length) (torch.arange, nvFuser's iota);
 * floating dtypes compute each element in double and round once; integer dtypes take
 * integral start and step, exactly. */
CF_API cf_tv *cf_iota(cf_fusion *f, int64_t length, double start, double step, cf_dtype dtype);
/* torch.triu: x with the elements below diagonal `diagonal` of its last two axes set to 0
 * (0 keeps the main diagonal, 1 drops it too, -1 keeps one below); x has 2 axes or more. */
CF_API cf_tv *cf_triu(cf_fusion *f, cf_tv *x, int64_t diagonal);
/* torch.addcmul: input + value * t1 * t2, operands broadcast; value is a scalar. */
CF_API cf_tv *cf_addcmul(cf_fusion *f, cf_tv *input, cf_tv *t1, cf_tv *t2, double value);
/* torch.matmul: a @ b. Both operands have one floating dtype and at least one axis; a
 * 1-D a is a row vector [K] (its M axis is dropped from the result), a 1-D b a column
 * vector [K]; axes before the last two are batch axes, broadcast numpy-style (size 1 or
 * missing on one side). half and bfloat16 (and float) accumulate in float, double in
 * double; the result has the operands' dtype, rounded once. A composite: it prints as
 * broadcasts, casts, a mul over (batch..., M, K, N) and a sum over K (see
 * docs/architecture.md); the evaluator sums K in increasing order in double and rounds
 * once to the accumulation dtype, kernels accumulate in it. Errors name both tensors and
 * the axes (`matmul: T0's axis 1 (K) has extent 3 but T1's axis 0 (K) has extent 4 ...`). */
CF_API cf_tv *cf_matmul(cf_fusion *f, cf_tv *a, cf_tv *b);
/* torch.nn.functional.linear: x @ w^T + bias with w [N, K] (or [K]: the result drops N),
 * x [..., K], bias NULL, 0-d or [N] of the operands' dtype, added to the float (double)
 * accumulator before the one rounding to the operands' dtype. The product is over
 * (batch..., M, N, K), summed over its last axis. */
CF_API cf_tv *cf_linear(cf_fusion *f, cf_tv *x, cf_tv *w, cf_tv *bias);
/* Random numbers (nvFuser's uniform and normal): a tensor of the given sizes (or of x's
 * sizes and dtype for the _like forms) drawn from Philox4x32-10 with the key `seed` and
 * the counter offset `offset`, both 0-d integer tensors (cf_scalar_input for a seed given
 * per call, or cf_const_int). Element i (row-major) depends only on (seed, offset, i):
 * the same on every backend and schedule, and on the evaluator. uniform is in [low,
 * high) (float-precision draws of 24 bits, double of 53); normal is mean + std * z with z
 * by Box-Muller in double. dtype is floating. */
CF_API cf_tv *cf_uniform(cf_fusion *f, int rank, const int64_t *sizes, double low, double high, cf_tv *seed,
                         cf_tv *offset, cf_dtype dtype);
CF_API cf_tv *cf_normal(cf_fusion *f, int rank, const int64_t *sizes, double mean, double std, cf_tv *seed,
                        cf_tv *offset, cf_dtype dtype);
CF_API cf_tv *cf_uniform_like(cf_fusion *f, cf_tv *x, double low, double high, cf_tv *seed, cf_tv *offset);
CF_API cf_tv *cf_normal_like(cf_fusion *f, cf_tv *x, double mean, double std, cf_tv *seed, cf_tv *offset);
/* transpose swaps two axes; permute puts input axis perm[i] at output position i. */
CF_API cf_tv *cf_transpose(cf_fusion *f, cf_tv *in, int axis0, int axis1);
CF_API cf_tv *cf_permute(cf_fusion *f, cf_tv *in, int rank, const int *perm);

/* ---- shape ops and scalar inputs --------------------------------------------------- */

/* Removes the given axes of x (negative counts from the end, nvFuser's squeeze); each
 * must be a broadcast axis or of constant extent 1, else the error names the tensor and
 * axis: "squeeze: axis 1 (iS1{8}) of T0 is neither a broadcast axis nor of extent 1 ...". */
CF_API cf_tv *cf_squeeze(cf_fusion *f, cf_tv *x, int naxes, const int *axes);
/* nvFuser's expand: broadcast axes of x become iteration axes of the given concrete
 * extents (no data is copied: every output element reads element 0 of the axis).
 * sizes[i] == -1 keeps axis i; a non-broadcast axis must keep its extent; rank is x's.
 * An expansion to 1 keeps the broadcast axis. */
CF_API cf_tv *cf_expand(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes);
/* expand to other's extents (constant or symbolic) where x is broadcast and other is not;
 * x and other have equal ranks. */
CF_API cf_tv *cf_expand_as(cf_fusion *f, cf_tv *x, cf_tv *other);
/* expand with an extent per axis: ids[i] (an axis of any tensor of f, e.g. an input's
 * symbolic size) gives axis i its extent; where ids or ids[i] is NULL, sizes[i] does, as
 * in cf_expand (-1 keeps the axis). Frontends use it for nvFuser's broadcast_in_dim and
 * expand to a shape taken from another tensor (t.shape()). */
CF_API cf_tv *cf_expand_to(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes, cf_id *const *ids);
/* A tensor of the given sizes filled with value (converted to dtype as C converts); no
 * inputs. Size-1 axes are broadcast axes, as in cf_tensor_concrete. */
CF_API cf_tv *cf_full(cf_fusion *f, int rank, const int64_t *sizes, double value, cf_dtype dtype);
/* full with x's shape (its extents, constant or symbolic, and broadcast axes) and dtype. */
CF_API cf_tv *cf_full_like(cf_fusion *f, cf_tv *x, double value);
/* full with an integer value held exactly (never through a double): value must be a value
 * of the integer (or bool) dtype. */
CF_API cf_tv *cf_full_int(cf_fusion *f, int rank, const int64_t *sizes, int64_t value, cf_dtype dtype);
/* A scalar fusion input (e.g. an epsilon): a 0-d tensor of dtype, added to the fusion's
 * inputs in call order and passed at run time as a 0-d DLPack tensor (ndim 0). Binary
 * ops and where broadcast any 0-d operand to the other operands' rank (a broadcast op).
 * In type promotion it is a scalar (torch's wrapped number, nvFuser's define_scalar): a
 * float32 tensor times a double scalar input stays float32. */
CF_API cf_tv *cf_scalar_input(cf_fusion *f, cf_dtype dtype);
/* Constants: 0-d tensors of one value (a full of rank 0), scalars in type promotion like
 * cf_scalar_input, usable beside a tensor in every op (nvFuser's define_scalar(value)).
 * cf_const converts value to dtype as C converts a double (integers: truncated and
 * saturated; NaN refused); cf_const_int holds an integer exactly (value must be a value of
 * dtype; for a floating dtype it is rounded): int64 x + cf_const_int(f, CF_INT64, 2^62 + 1)
 * is exact, where a double would be off by one. */
CF_API cf_tv *cf_const(cf_fusion *f, cf_dtype dtype, double value);
CF_API cf_tv *cf_const_int(cf_fusion *f, cf_dtype dtype, int64_t value);
/* A complex constant re + im i of dtype CF_COMPLEX_FLOAT or CF_COMPLEX_DOUBLE (each part
 * rounded to the dtype's precision); a scalar in promotion, as cf_const: a complex_float
 * constant times a float tensor is complex_float, times a double tensor complex_double. */
CF_API cf_tv *cf_const_complex(cf_fusion *f, cf_dtype dtype, double re, double im);
/* The elements of x in row-major order under new sizes (one may be -1: inferred); the
 * element counts must match (checked here when constant, at run time otherwise). x must
 * not be strided (cf_tensor_strided). Size-1 output axes are broadcast axes. Evaluated
 * exactly by cf_fusion_evaluate; cf_fusion_execute runs it as a view (no data moved)
 * where its input is a fusion input or a tensor in global memory between segments; a
 * kernel (cf_executor_compile) refuses it. */
CF_API cf_tv *cf_reshape(cf_fusion *f, cf_tv *x, int rank, const int64_t *sizes);

/* Resize ops (nvFuser's slice, pad and cat). The output reads x at other positions, so
 * each operand of a resize must be in memory a kernel reads whole: a fusion input, or a
 * tensor define and run makes a segment's input (it cuts the fusion before the op; a hand
 * schedule that computes the operand in the same kernel is refused when compiled, with a
 * message). slice: per axis start, stop (exclusive) and step >= 1 (steps NULL: all 1), with
 * Python's (torch's) rules: negative counts from the end, out of range clamps to the axis,
 * a stop at or before the start gives an empty axis, INT64_MAX stops at the end; on a
 * symbolic extent they apply when the size is known (the output's extent and the start
 * are expressions of it, e.g. max(0, i0 - 4) for -4: one kernel for every size). pad:
 * npad widths, a (left, right) pair per axis from the last axis backwards
 * (torch.nn.functional.pad), each >= 0, the new elements `value` (an integer for integer
 * dtypes). cat: n tensors of equal ranks, their other extents equal, joined along
 * dim (negative counts from the end); the dtype is torch.cat's (promoted, operands cast). */
CF_API cf_tv *cf_slice(cf_fusion *f, cf_tv *x, int rank, const int64_t *starts, const int64_t *stops,
                       const int64_t *steps);
CF_API cf_tv *cf_pad(cf_fusion *f, cf_tv *x, int npad, const int64_t *widths, double value);
CF_API cf_tv *cf_cat(cf_fusion *f, int n, cf_tv *const *xs, int dim);

/* ---- sizes given at run time (dynamic ops) ------------------------------------------ */

/* nvFuser's dynamic shapes: each size or bound below is a 0-d integer tensor of f, whose
 * value is known only when the fusion runs: a scalar input (cf_scalar_input, passed as a
 * 0-d integer tensor in host memory: kDLCPU), a constant (cf_const_int), a tensor's size
 * (cf_tv_size), or integer arithmetic on those (cf_add, cf_mul, cf_div ... of 0-d
 * tensors). cf_fusion_execute and cf_fusion_evaluate read the values per call and make a
 * concrete fusion with the static op of those constants (cf_reshape, cf_expand, cf_slice,
 * cf_iota), checked with the static op's errors (`execute: reshape: T0 has 24 elements
 * but the sizes give 20 for T0_g_float[..]`); define and run compiles it once per distinct
 * set of values and keeps it. The outputs' new extents are symbols of their own until
 * then. A fusion with dynamic ops cannot be scheduled by hand: cf_executor_compile refuses
 * it (run it with cf_fusion_cache, or give constant sizes). */

/* A 0-d int64 tensor holding the size of t's logical axis `axis` (negative counts from
 * the end; reduction axes not counted): a constant for a constant extent. Usable as a
 * size of the ops below and as an operand of any op. */
CF_API cf_tv *cf_tv_size(cf_fusion *f, cf_tv *t, int axis);
/* cf_reshape with rank sizes given at run time; one of them may be -1 (inferred). */
CF_API cf_tv *cf_reshape_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *sizes);
/* cf_expand with sizes given at run time: rank is x's; sizes[i] NULL, or a value -1,
 * keeps axis i; a broadcast axis takes the value; another axis must keep its extent. */
CF_API cf_tv *cf_expand_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *sizes);
/* cf_full with sizes given at run time: a full of size-1 broadcast axes, expanded to
 * them (cf_expand_dynamic). nvFuser's broadcast_in_dim with run-time sizes is cf_broadcast
 * then cf_expand_dynamic. */
CF_API cf_tv *cf_full_dynamic(cf_fusion *f, int rank, cf_tv *const *sizes, double value, cf_dtype dtype);
/* cf_slice with bounds given at run time, with Python's rules (negative counts from the
 * end, clamped to the axis): starts, stops or steps NULL (or an entry NULL) mean 0, the
 * end and 1; a step must be positive. */
CF_API cf_tv *cf_slice_dynamic(cf_fusion *f, cf_tv *x, int rank, cf_tv *const *starts, cf_tv *const *stops,
                               cf_tv *const *steps);
/* cf_iota of a length given at run time (>= 0). */
CF_API cf_tv *cf_iota_dynamic(cf_fusion *f, cf_tv *length, double start, double step, cf_dtype dtype);

/* Indexing and scan ops (torch's, nvFuser's spellings; dim negative counts from the end).
 * An index tensor has dtype int32 or int64; a negative index counts from the end of the
 * axis (index + extent). The tensor read at those positions (x of gather, take_along_axis,
 * index_select and select; index and src of scatter; x of the scans) must be in memory a
 * kernel reads whole, as a resize's operand: a fusion input or a segment input (define and
 * run cuts the fusion before the op; a hand schedule computing it in the same kernel is
 * refused when compiled). Indices are computed in the same kernel freely.
 * Out-of-range indices: the evaluator refuses them (torch raises), naming the op, the
 * tensor and the index; a kernel cannot raise, so it clamps the position into the axis
 * (never reading or writing outside the tensor): its result there is unspecified.
 * - take_along_axis(x, index, dim): index of x's rank, each other axis of equal extent or
 *   broadcast on one side; out[..i..] = x[..index[..i..]..] along dim, index's extent there.
 * - gather(x, dim, index) (torch.gather): index of x's rank, other extents <= x's; the
 *   result has index's shape.
 * - index_select(x, dim, index): index 1-D (or 0-d: one position); the result is x with
 *   dim's extent replaced by index's (1 for 0-d).
 * - select(x, dim, index): index a 0-d integer tensor (cf_scalar_input, cf_const_int); the
 *   result is x without axis dim.
 * - scatter(x, dim, index, src) (torch.scatter, out of place): x copied, then out[...
 *   index[i][j] ...] = src[i][j] along dim for every element of index; index of x's rank,
 *   its extents <= src's and, off dim, <= x's. Where several elements name one position,
 *   one of their values is written (the last along dim, on every backend).
 * - cumsum(x, dim): the inclusive prefix sum along dim; integers and bool give int64,
 *   floating dtypes keep theirs and accumulate in float (double for double), summed in
 *   index order on every backend, from 0 (torch's start: cumsum of -0.0 is +0.0).
 * - cumprod(x, dim): the inclusive prefix product (torch.cumprod), dtypes as cumsum's
 *   (integers and bool give int64, wrapping on overflow), multiplied in index order.
 * - cummax(x, dim), cummin(x, dim): the running maximum and minimum along dim: the values
 *   of torch.cummax and torch.cummin (nvFuser's cummax and cummin return no indices); the
 *   dtype is kept (bool and integers too); a NaN propagates: from the first NaN on, the
 *   rest of the row is NaN. Between -0.0 and +0.0 the sign kept is cf_max's (cf_min's).
 * cumsum and cumprod of complex tensors keep the dtype and fold in it (complex64's products
 * in float complex, C99's Annex G special values); cummax and cummin refuse complex
 * tensors, as torch does. */
CF_API cf_tv *cf_take_along_axis(cf_fusion *f, cf_tv *x, cf_tv *index, int dim);
CF_API cf_tv *cf_gather(cf_fusion *f, cf_tv *x, int dim, cf_tv *index);
CF_API cf_tv *cf_index_select(cf_fusion *f, cf_tv *x, int dim, cf_tv *index);
CF_API cf_tv *cf_select(cf_fusion *f, cf_tv *x, int dim, cf_tv *index);
CF_API cf_tv *cf_scatter(cf_fusion *f, cf_tv *x, int dim, cf_tv *index, cf_tv *src);
CF_API cf_tv *cf_cumsum(cf_fusion *f, cf_tv *x, int dim);
CF_API cf_tv *cf_cumprod(cf_fusion *f, cf_tv *x, int dim);
CF_API cf_tv *cf_cummax(cf_fusion *f, cf_tv *x, int dim);
CF_API cf_tv *cf_cummin(cf_fusion *f, cf_tv *x, int dim);
/* The forward of torch.nn.functional.embedding (nvFuser's embedding_fwd): weight's rows at
 * input's indices, [*input, D] of weight's dtype, for input an int32 or int64 tensor of 1
 * to CF_MAX_RANK - 1 axes and weight 2-D [num_embeddings, D] (an input of more than one
 * axis must not be strided: it is flattened by a reshape, a view). The other arguments are
 * NULL or 0-d tensors (cf_scalar_input, cf_const*): padding_idx (integer),
 * scale_grad_by_freq and sparse change only the backward, so they have no effect here;
 * max_norm: each looked-up row whose norm_type-norm (NULL: 2; 1, 2, +-inf and 0 as
 * torch.norm) exceeds max_norm is scaled by max_norm / (norm + 1e-7), as torch's
 * embedding_renorm_, computed in float for 16- and 8-bit weights (max_norm needs a
 * floating weight). Unlike torch, the weight itself is not modified (a fusion never writes
 * its inputs): only the result is renormalized. Indices out of range are the index_select
 * rule above (the evaluator refuses them, kernels clamp). */
CF_API cf_tv *cf_embedding_fwd(cf_fusion *f, cf_tv *input, cf_tv *weight, cf_tv *padding_idx, cf_tv *max_norm,
                               cf_tv *norm_type, cf_tv *scale_grad_by_freq, cf_tv *sparse);

/* ---- inspection ------------------------------------------------------------------- */

/* The nvFuser-style name, e.g. "T2". */
CF_API const char *cf_tv_name(const cf_tv *tv);
CF_API cf_dtype cf_tv_dtype(const cf_tv *tv);
CF_API int cf_tv_logical_rank(const cf_tv *tv);
/* Number of axes of the loop domain (what scheduling transforms). */
CF_API int cf_tv_naxes(const cf_tv *tv);
/* Loop axis i (negative counts from the end), or NULL if out of range. */
CF_API cf_id *cf_tv_axis(const cf_tv *tv, int i);
CF_API cf_memory_type cf_tv_memory_type(const cf_tv *tv);
CF_API int cf_tv_compute_at_pos(const cf_tv *tv);
/* The constant extent of an IterDomain, or -1 when it is symbolic. */
CF_API int64_t cf_id_extent(const cf_id *id);
CF_API cf_parallel_type cf_id_parallel_type(const cf_id *id);
CF_API cf_iter_type cf_id_iter_type(const cf_id *id);

/* ---- printing, in nvFuser's notation ------------------------------------------------ */

/* The math: inputs, outputs and one line per expression. */
CF_API cf_status cf_fusion_print_math(cf_fusion *f, FILE *out);
/* Each TensorView's logical domain, its split/merge/swizzle history and loop domain. */
CF_API cf_status cf_fusion_print_transforms(cf_fusion *f, FILE *out);
/* One TensorView: T2_s_float[iS4{2}, iblockIdx.x5{4}] ca_pos( 1 ) */
CF_API cf_status cf_tv_print(cf_fusion *f, const cf_tv *tv, FILE *out);
/* Checks the IR's invariants; CF_ERR_INTERNAL with a message naming the broken one. Also
 * refuses, before any code is generated (cf_executor_compile runs it): an output or an
 * operand that no expression computes and that is not an input, and a tensor both input
 * and output (CF_ERR_INVALID_ARGUMENT); an allocation domain that does not cover every
 * iteration axis of the logical domain (CF_ERR_INVALID_SCHEDULE). */
CF_API cf_status cf_fusion_verify(cf_fusion *f);

#ifdef __cplusplus
}
#endif
#endif
