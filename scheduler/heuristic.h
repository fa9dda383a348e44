/* scheduler/heuristic.h: the contract of one automatic scheduler (internal header,
 * prefix sched_): the call it plans for (SchedCall: the segment's tensors and the device)
 * and its entry points (SchedHeuristic: accepts, schedule).
 *
 * Every automatic scheduler (pointwise, reduction, inner and outer persistent
 * normalization, transpose) is one file of scheduler/ that fills one SchedHeuristic. The
 * scheduler registry (registry.h) makes each a row of define and run's table, asked in
 * order of preference for each segment of a fusion for the sizes of this call; the first
 * that accepts schedules a private copy of the segment. The user's fusion is never handed
 * to a scheduler.
 *
 * Key decision: a heuristic reads the actual sizes, strides and pointer alignment of the
 * call (SchedCall), not the fusion's symbolic extents, so a symbolic fusion is scheduled
 * as well as a constant one; whatever it assumed about the call that a later call with
 * the same signature might break (divisibility of a vectorized extent, alignment) must be
 * part of the signature or be guarded by a run-time check that refuses with a message. */
#ifndef CFUSER_SCHED_HEURISTIC_H
#define CFUSER_SCHED_HEURISTIC_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "cfuser/fusion.h"
#include "ir/ir.h"

/* The device a heuristic plans for: what nvFuser's heuristics read of the GPU (SM count,
 * registers, shared memory, the L2). The define-and-run executor fills it from the CUDA
 * device it compiles for, and uses sched_device_default() on the host backend (the
 * kernels it runs there are the ones a GPU would run). Tests scale it down (two SMs, a
 * small shared memory) to reach every heuristic branch with small shapes. */
typedef struct SchedDevice {
  int sm_count;              /* streaming multiprocessors */
  int max_threads_per_block; /* 1024 */
  int max_threads_per_sm;    /* 2048 on Hopper */
  int regs_per_sm;           /* 32-bit registers per SM: 65536 */
  int max_regs_per_thread;   /* 255 */
  int64_t smem_per_block;    /* shared memory one block may use (opt-in limit), bytes */
  int64_t smem_per_sm;       /* shared memory of an SM, bytes */
  int64_t l2_bytes;          /* the L2 cache, bytes */
  int max_cluster;           /* blocks per thread-block cluster (8 portable on Hopper; 1: none) */
  int64_t max_coop_threads;  /* the most threads of a cooperative launch (every block resident):
                              * the host backend's fibers (host_grid.h), kept on GPUs too (see
                              * executor/fusion_plan.c); 0: the SMs x the blocks per SM the
                              * kernel allows bound it alone */
  int cc;                    /* compute capability, major * 10 + minor (90: Hopper, which has
                              * wgmma; 100: Blackwell, tcgen05.mma); 0: not known, the heuristics choose instructions every
                              * architecture since sm_80 has (mma.sync) */
} SchedDevice;

/* An H100 SXM (132 SMs, 227 KiB of shared memory per block, 50 MiB of L2, compute
 * capability 9.0). sched_device_default(): the same resources with cc 0, the description
 * of the host backend (with its cooperative limit: its kernels are the portable ones, so
 * that the host runs what any GPU since sm_80 runs; a test names sched_device_h100 for
 * Hopper's), and of a device whose attributes cannot be read. */
extern const SchedDevice sched_device_h100;
/* A B200 (148 SMs, 228 KiB of shared memory per SM, 227 KiB per block, 126 MiB of L2,
 * compute capability 10.0: the matmul row runs tcgen05.mma with its accumulator in tensor
 * memory). Tests name it; define and run reads a Blackwell GPU's own attributes. */
extern const SchedDevice sched_device_b200;
const SchedDevice *sched_device_default(void);

/* What one call tells the heuristics: the segment's inputs, in the order of the
 * segment's fusion inputs (tensors; scalar inputs are 0-d tensors), and the device. A
 * tensor the executor allocates between segments has its sizes and a NULL data pointer. */
typedef struct SchedCall {
  int ninputs;
  const DLTensor *const *inputs;
  const SchedDevice *dev;    /* never NULL */
} SchedCall;

/* The parameters a heuristic chose, printed for CFUSER_DUMP=segments and tests, e.g.
 * "vector=4 threads=128 blocks=65536". */
enum { SCHED_PARAMS_MAX = 256, SCHED_WHY_MAX = 256 };

typedef struct SchedHeuristic {
  const char *name; /* "pointwise", "reduction", "inner_persistent", "outer_persistent", "transpose" */
  /* True when this scheduler can schedule f for this call; otherwise false with the
   * reason in why (NUL-terminated, at most SCHED_WHY_MAX bytes). f is not modified. */
  bool (*accepts)(cf_fusion *f, const SchedCall *call, char *why);
  /* Schedules f (an unscheduled copy that this scheduler accepted) for this call and
   * prints its parameters into params (at most SCHED_PARAMS_MAX bytes). */
  cf_status (*schedule)(cf_fusion *f, const SchedCall *call, char *params);
} SchedHeuristic;

/* The inner-reduction scheduler (scheduler/reduction_sched.c). */
extern const SchedHeuristic sched_reduction_heuristic;
/* The transpose scheduler (scheduler/transpose_sched.c): tiles staged in shared memory. */
extern const SchedHeuristic sched_transpose_heuristic;

/* The inner persistent normalization scheduler: softmax, layer norm, RMS norm, a block
 * per row kept in registers (scheduler/norm_sched.c). */
extern const SchedHeuristic sched_inner_persistent_heuristic;

/* The outer persistent normalization scheduler: batch norm and kin, statistics over the
 * outer axes of each column, a block per column group with the column's reduced axes
 * split over threadIdx.y and kept in registers (scheduler/outer_persistent_sched.c). */
extern const SchedHeuristic sched_outer_persistent_heuristic;

/* The Welford translation (welford_translate.c): a new copy of the unscheduled fusion g
 * in which each Welford reduction whose states are only read by their fields (and whose
 * count, if read, folds into constants) is two sums, mean(x) and sum((x - mean)^2); NULL
 * when there is none to translate (or out of memory). g is not modified. The registry's
 * Welford row offers the copy to the inner persistent scheduler. */
cf_fusion *sched_translate_welford(const cf_fusion *g);

/* The pointwise scheduler (scheduler/pointwise.c): cf_schedule_pointwise. */
extern const SchedHeuristic sched_pointwise_heuristic;

/* Whether every tensor given (n of them, NULL entries and packed tensors skipped: their
 * accesses are byte-wise) starts at a 16-byte aligned address (data + byte_offset). */
bool sched_aligned16(int n, const DLTensor *const *t);
/* Whether a DLTensor is laid out row-major without gaps (ir_dl_noncontiguous_axis: strides
 * of size-1 axes free, any strides when it is empty). */
bool sched_dl_contiguous(const DLTensor *t);
/* Turns every vectorized axis of f into a serial one (always legal), but those of packed
 * tensors (byte-wise accesses, whose writes must stay vectors): the define-and-run
 * executor does it after scheduling a call whose tensors are not all 16-byte aligned, so
 * no heuristic has to consider alignment. */
void sched_devectorize(cf_fusion *f);
/* Vectorizes tv's innermost loop axis (a copy's, of constant extent) when analysis/'s rule
 * for vector accesses of global memory accepts it (an_vector_refusal_any: the rule
 * lowering's validate_vectorize applies), else leaves it serial, so that no scheduler
 * makes a schedule lowering refuses for it; returns whether it vectorized. */
bool sched_vectorize_innermost(cf_fusion *f, Val *tv);

#endif
