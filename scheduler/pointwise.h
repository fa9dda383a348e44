/* scheduler/pointwise.h: the pointwise scheduler's vector widths (pointwise_vector.c;
 * internal header, prefix sched_pw_), read by its plan (pointwise.c). */
#ifndef CFUSER_SCHED_POINTWISE_H
#define CFUSER_SCHED_POINTWISE_H

#include "scheduler/sched.h"

/* Whether input `in` runs along the reference's innermost axis: its rank, not broadcast
 * there (the inputs the scheduler caches for vector loads). */
bool sched_pw_full_rank_input(Val *in, Val *ref);
/* Whether an output of f has a packed dtype (float4_e2m1fn). */
bool sched_pw_packed_output(cf_fusion *f);
/* The vector width along rows: 16 bytes over the widest element of the outputs and the
 * full-rank inputs, halved until it divides the reference's constant innermost extent; 1
 * for a symbolic one or a touched tensor without unit innermost stride; packed outputs
 * (written by even vectors) make it at least 2. */
int64_t sched_pw_row_vector(cf_fusion *f, Val *ref);
/* The vector width along the flat tensor (issue 22): 16 bytes over the widest element of
 * the outputs and the inputs that vary along every axis the reference does, when each of
 * them lies in memory as one contiguous run in logical order (an_flat_contiguous) and no
 * tensor is packed; 0 otherwise. *tail: whether the reference's element count may leave a
 * partial vector (a symbolic extent, or a constant product v does not divide). */
int64_t sched_pw_flat_vector(cf_fusion *f, Val *ref, bool *tail);

#endif
