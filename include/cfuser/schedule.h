/* cfuser/schedule.h: scheduling a Fusion by transforming the loop domains of its
 * TensorViews, placing them in memory and inlining them into one another.
 *
 * Transforms never mutate an IterDomain; they replace loop axes by new ones linked to the
 * old ones by a split, merge or swizzle. Axis arguments may be negative (counting from the
 * end). Every call records the first error on the fusion (see fusion.h). */
#ifndef CFUSER_SCHEDULE_H
#define CFUSER_SCHEDULE_H

#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

/* in{N} -> outer{ceilDiv(N, factor)}, inner{factor}; index in = outer * factor + inner.
 * Non-divisible splits are legal and predicated. factor must be positive. */
CF_API cf_status cf_split(cf_fusion *f, cf_tv *tv, int axis, int64_t factor);
/* The outer split: in{N} -> outer{factor}, inner{ceilDiv(N, factor)}. */
CF_API cf_status cf_split_outer(cf_fusion *f, cf_tv *tv, int axis, int64_t factor);
/* Axes axis and axis+1 become one axis of extent N_a * N_b; index out = i_a * N_b + i_b. */
CF_API cf_status cf_merge(cf_fusion *f, cf_tv *tv, int axis);
/* Moves axes: npairs pairs {old0, new0, old1, new1, ...}; the other axes keep their
 * relative order (nvFuser's reorder({{old, new}, ...})). */
CF_API cf_status cf_reorder(cf_fusion *f, cf_tv *tv, int npairs, const int *pairs);
/* A whole permutation: axis i moves to new_pos[i] (nvFuser's reorder({3, 0, 2, 1})). */
CF_API cf_status cf_reorder_all(cf_fusion *f, cf_tv *tv, int n, const int *new_pos);
/* XOR swizzle of axes x and y: (i, j) -> (i, i ^ j). Extents must be equal powers of 2. */
CF_API cf_status cf_swizzle_xor(cf_fusion *f, cf_tv *tv, int x, int y);
CF_API cf_status cf_parallelize(cf_fusion *f, cf_tv *tv, int axis, cf_parallel_type p);
CF_API cf_status cf_set_memory_type(cf_fusion *f, cf_tv *tv, cf_memory_type m);
/* A Local tensor whose allocation is too large for registers at the occupancy wanted:
 * each thread keeps its first reg_elems elements (in allocation order) in registers and
 * the rest in shared memory, one slot per thread, in 16-byte chunks (lower/shared_spill.c);
 * where the tensor is filled by 16-byte copies from global memory, the chunks in shared
 * memory are filled by cp.async, so they never pass through registers. reg_elems 0 keeps
 * everything in registers again. Lowering refuses, naming the tensor, a tensor that is not
 * Local when lowered, a block size that is not a constant, elements wider than a chunk, and
 * a reg_elems that is not below the size or not a multiple of a chunk. The host backend places the
 * elements as CUDA does and stops, naming the tensor, at an access outside the shared part. */
CF_API cf_status cf_spill_to_shared(cf_fusion *f, cf_tv *tv, int64_t reg_elems);
/* Sets the allocation domain to n IterDomains of tv (taken from its loop domain or its
 * transform history) with contiguity per axis (1 true, 0 false, -1 none for broadcast). */
CF_API cf_status cf_set_allocation_domain(cf_fusion *f, cf_tv *tv, int n, cf_id *const *ids,
                                          const int8_t *contiguity);
/* Sets the allocation domain to the current loop domain, all contiguous or not
 * (nvFuser's tv->setAllocationDomain(tv->getLoopDomain(), contiguous)). */
CF_API cf_status cf_set_allocation_to_loop(cf_fusion *f, cf_tv *tv, bool contiguous);
/* Tensor memory only: axes of the allocation domain left of pos address lanes, the
 * others columns. Negative pos counts from the end (-1 == rank). */
CF_API cf_status cf_set_tmem_dim_sep_pos(cf_fusion *f, cf_tv *tv, int pos);
/* Tensor memory only: the n TensorViews share one region (one tcgen05.alloc), placed side
 * by side in its columns in the order given. Without a group each tensor-memory
 * TensorView has a region of its own. Errors: an empty group, a tensor not in tensor
 * memory, a tensor listed twice or already in another group. */
CF_API cf_status cf_fusion_group_tmem(cf_fusion *f, int n, cf_tv *const *tvs);

/* ---- tensor cores ------------------------------------------------------------------- */

/* Tensor-core instructions, by their tile shape M x N x K (ir/mma.c holds each one's
 * dtypes, architecture and fragment layouts). */
typedef enum cf_mma_macro {
  CF_MMA_M16N8K16,     /* mma.sync m16n8k16: half or bfloat16 operands, float accumulator, sm_80+ */
  CF_MMA_WGMMA_M64NK16, /* wgmma.mma_async m64nNk16 (sm_90a): a warpgroup of 128 threads, N the N
                         * tile's extent (a multiple of 8 up to 256), half or bfloat16 operands read
                         * from shared memory through matrix descriptors, float accumulator */
  CF_MMA_TCGEN05_M128NK16 /* tcgen05.mma m128nNk16 (sm_100a): issued by one thread, N the N tile's
                           * extent (a multiple of 16 up to 256), half or bfloat16 operands read
                           * from shared memory through descriptors, a float accumulator in tensor
                           * memory (row m in lane m, column n in column n) */
} cf_mma_macro;

/* Runs the last three loop axes of tv, from `axis` (which must be rank - 3), as one
 * tensor-core instruction per iteration of the axes left of them (nvFuser's MmaOp and
 * ParallelType::Mma). tv must be a float sum over one axis of mul(cast(a), cast(b)), a and b
 * half or bfloat16 of one dtype (the pattern cf_matmul builds); axis is the instruction's
 * M tile (an axis b broadcasts, extent exactly M), axis + 1 its N tile (a broadcasts it,
 * extent N), axis + 2 its K tile (the reduced axis, extent K). They become the
 * accumulator's fragment layout: [lane{32} (threadIdx.x), M-registers (MMA), N-registers
 * (MMA), K (MMA)], so each thread holds its 4 accumulator elements and whatever reads tv
 * can be scheduled alike (cf_propagate_transforms_to). The kernel must launch threadIdx.x
 * as exactly the 32 lanes; a and b are read from shared or local memory by the lowering.
 * CF_MMA_WGMMA_M64NK16: M is 64, N any multiple of 8 up to 256, K 16; the layout is
 * [lane{128} (threadIdx.x: warp w of the warpgroup holds rows 16w..16w+15), M-registers{2},
 * N-registers{N/4}, K] (mma.sync's C layout repeated N/8 times, PTX ISA "wgmma .m64nNk16
 * register fragment layout for accumulator matrix D"), threadIdx.x launched as exactly 128,
 * and a and b must be shared-memory tiles stored in a layout a wgmma matrix descriptor can
 * name (K- or MN-major rows of 32, 64 or 128 bytes under their swizzle; the lowering finds
 * which and refuses otherwise).
 * CF_MMA_TCGEN05_M128NK16: M is 128, N any multiple of 16 up to 256, K 16; tv must be in
 * tensor memory (cf_set_memory_type CF_MEM_TENSOR, its dim-sep position between the M
 * and N tiles: lanes are rows, columns are columns); the three axes go on MMA as they are
 * (no lane axis: one thread issues the instruction, whatever the block's threads), a and b
 * shared-memory tiles as for wgmma; whatever reads tv copies it into registers first
 * (tcgen05.ld, a set scheduled with tensor memory's 32x32b pattern). Errors name the rule
 * and the axis. */
CF_API cf_status cf_mma_tile(cf_fusion *f, cf_tv *tv, int axis, cf_mma_macro macro);
/* Circular buffering (nvFuser's circularBuffer(stages)): the shared-memory tile tv,
 * computed at a serial loop (its compute-at position, so call it after inlining), gets
 * `stages` buffers; the fills of the first stages - 1 iterations run before the loop and
 * iteration i fills the tile of i + stages - 1 while the others are read. 16-byte
 * vectorized copies from global memory become cp.async with commit and wait groups.
 * Errors name the rule: 2..CF_MAX_CB_STAGES stages, shared memory, computed elementwise
 * in the kernel, a serial compute-at loop, no producer computed at that loop beside the
 * fill (inline it into tv, or compute it before the loop: the fill runs ahead of it), and,
 * when lowering, one fill statement that reaches a __syncthreads before the tile is read
 * and writes nothing read elsewhere. */
#define CF_MAX_CB_STAGES 4
CF_API cf_status cf_circular_buffer(cf_fusion *f, cf_tv *tv, int stages);
/* The same with the fill `prefetch` iterations ahead (nvFuser's circularBuffer(stages,
 * prefetch_distance); cf_circular_buffer's is stages - 1), 1 to stages - 1: the prologue
 * fills the first `prefetch` tiles and iteration i fills tile i + prefetch, so a stage is
 * refilled stages - prefetch iterations after it was read. With prefetch <= stages - 2 a
 * wgmma reading the tiles keeps one group in flight across iterations (lower/mma_wgmma.c:
 * wgmma.wait_group 1 in the loop, 0 after it). An error names the tensor, the stages and
 * the distance. */
CF_API cf_status cf_circular_buffer_prefetch(cf_fusion *f, cf_tv *tv, int stages, int prefetch);
/* Fills the circular-buffered shared tile tv with the Tensor Memory Accelerator (Hopper's
 * cp.async.bulk.tensor; nvFuser's LoadStoreOpType::CpAsyncBulkTensorTile) instead of its
 * threads' copies: one thread issues the tile's boxes each iteration, their bytes complete
 * on an mbarrier per stage, and the readers wait on that barrier's phase, not on a
 * __syncthreads. tv must be a copy of a fusion input stored as the box a tensor map
 * describes: the lowering (lower/tma.c) finds the box and the 128-, 64- or 32-byte
 * swizzle from tv's schedule by checking every element of the tile, and refuses, naming
 * the element, a layout no box reproduces. Out-of-bounds elements read as zero. The input
 * must be contiguous along its innermost axis with 16-byte aligned data and strides
 * (checked when it runs). CUDA on sm_90 and later, and the host backend. An error names
 * the tensor and the rule. */
CF_API cf_status cf_tma_load(cf_fusion *f, cf_tv *tv);
/* Warp specialization (nvFuser's circularBuffer(stages, prefetch, WarpSpecialized(pt))):
 * the TMA tile tv's fills move into an extra slice of threads along pt (only
 * CF_PT_TIDY: one more value of threadIdx.y, a producer warpgroup when blockDim.x is
 * 128), which runs the tile's loop on its own, filling stage after stage as soon as the
 * readers release it (an mbarrier a stage, on which every reader arrives once it is done
 * with the stage: after its wgmma's wait, or after its reads); the readers (every other
 * thread) run the rest of the kernel and wait only for full stages. With three warpgroups
 * the producer gives registers to the readers (setmaxnreg 40 / 232). Refused when
 * lowering, naming the rule, when the readers synchronize the block otherwise (a
 * __syncthreads or block reduction they would wait on without the producer). An error
 * names the tensor. */
CF_API cf_status cf_warp_specialize(cf_fusion *f, cf_tv *tv, cf_parallel_type pt);

/* ---- caching ------------------------------------------------------------------------- */

/* Inserts a local copy of tv right after it: every consumer of tv reads the copy instead
 * (nvFuser's cacheAfter); tv's loop domain is replayed onto the copy. Typically used on
 * fusion inputs, so their loads can be vectorized. Returns the copy, or NULL on error (tv
 * inlined already, or unused). */
CF_API cf_tv *cf_cache_after(cf_fusion *f, cf_tv *tv);
/* Inserts a local tensor that tv's defining expression now writes, and tv becomes a copy
 * of it (nvFuser's cacheBefore). Typically used on fusion outputs, so their stores can be
 * vectorized. The cache takes tv's whole domain (a schedule made on tv so far now schedules
 * the computation; a reduction's cache keeps the reduction axes), and tv gets fresh axes
 * with the cache's loop domain replayed on them. tv must be computed in a kernel (not an
 * input nor a reshape) and not inlined, nor have producers inlined into it. Returns the
 * new producer, or NULL on error. */
CF_API cf_tv *cf_cache_before(cf_fusion *f, cf_tv *tv);

/* ---- reductions --------------------------------------------------------------------- */

/* nvFuser's rFactor: tv = op(x) is a reduction whose loop domain has several reduction
 * axes; returns a new tensor computing the partial reduction over tv's loop axes `axes`
 * (its other reduction axes become iteration axes, marked "rf"), and tv now reduces that
 * tensor over its remaining reduction axes. Any schedule of tv works, iteration axes split
 * or merged included: the new tensor's loop domain is tv's, and tv keeps its loop axes
 * but `axes`. Refused: no reduction axis left to tv, tv itself the partial of an rfactor,
 * an allocation axis of tv derived from `axes`. */
CF_API cf_tv *cf_rfactor(cf_fusion *f, cf_tv *tv, int naxes, const int *axes);

/* ---- automatic schedulers ------------------------------------------------------------ */

/* Schedules a fusion of elementwise ops (set, unary, binary, where, cast, broadcast) as
 * nvFuser's pointwise scheduler does: inputs of the output's rank are cached with vector
 * loads and outputs with vector stores (16 bytes, when the innermost extent is a constant
 * multiple and every such tensor is contiguous), the output's axes are merged and split
 * into [blockIdx.x, threadIdx.x{128}, vector], the schedule is propagated to every tensor
 * and everything is inlined. The fusion must be unscheduled; errors name what is refused. */
CF_API cf_status cf_schedule_pointwise(cf_fusion *f);

/* ---- inlining ------------------------------------------------------------------------ */

/* Inlines tv into its consumers at loop position pos (axes left of pos share loops).
 * Positions past the legal maximum are an error naming the limiting axis. */
CF_API cf_status cf_inline_at(cf_fusion *f, cf_tv *tv, int pos);
/* The same, clamping pos to the legal maximum. */
CF_API cf_status cf_inline_at_best_effort(cf_fusion *f, cf_tv *tv, int pos);
/* Inlines every tensor as deep as legal (nvFuser's inlineMost). */
CF_API cf_status cf_inline_most(cf_fusion *f);
/* Inlines every tensor at the position matching ref's position pos (inlineAllAt). */
CF_API cf_status cf_inline_all_at(cf_fusion *f, cf_tv *ref, int pos);
/* Propagates consumer's transforms up to pos onto producer's side of the graph, then
 * inlines (nvFuser's legacy computeAt). */
CF_API cf_status cf_compute_at(cf_fusion *f, cf_tv *producer, cf_tv *consumer, int pos);

/* ---- propagation ----------------------------------------------------------------------- */

/* Replays ref's loop-domain transforms onto every other tensor along a maximum-information
 * spanning tree of the tensor graph (TransformPropagator + MaxLogicalDomainInfoSpanningTree). */
CF_API cf_status cf_propagate_transforms(cf_fusion *f, cf_tv *ref);
/* The same, then checks that every tensor's loop domain matches ref's where it maps
 * (TransformPropagatorWithCheck); a mismatch is an error naming the tensor. */
CF_API cf_status cf_propagate_transforms_checked(cf_fusion *f, cf_tv *ref);
/* Replays only ref's first pos loop axes (pos -1: all; nvFuser's TransformPropagator with a
 * position), onto the ntvs tensors tvs (ntvs == 0: every tensor) along the spanning tree
 * that enters only them: each tensor's leading axes become the images of its tree parent's
 * replayed ones, its other axes keep their order (a tensor already matching is left as
 * it is). Refused as compute_at's replays are: changing axes left of a compute-at or
 * max-producer position. */
CF_API cf_status cf_propagate_transforms_to(cf_fusion *f, cf_tv *ref, int pos, int ntvs, cf_tv *const *tvs);
/* Copies ref's parallel types onto the mapped loop axes of every tensor; ntypes == 0 means
 * every type, else only the listed ones (scheduler_utils::parallelizeAllLike). */
CF_API cf_status cf_parallelize_all_like(cf_fusion *f, cf_tv *ref, int ntypes,
                                         const cf_parallel_type *types);

#ifdef __cplusplus
}
#endif
#endif
