/* ir/rules.c: the rules about parallel and memory types, one table each (DESIGN.md 4a).
 *
 * A parallel type has a level (serial < thread < block < device), for launch types the
 * launch dimension it indexes, and for serial ones whether it says how the loop runs
 * (Unroll, Unswitch: a type of the whole loop, whose predicates lowering hoists). A memory type has the lowest level across which it is
 * distributed (each thread, block or device has its own copy): Local per thread, Shared
 * and Tensor per block, Global per device. Everything else follows from these two
 * columns: memory is distributed across the levels at or above its own, and shared by
 * the launch levels below it. Allocation (lower/tensors.c), the cross-thread read check
 * (lower/validate_parallel.c), the redundant-write guard (lower/predicate.c) and the sync
 * analysis (lower/sync.c) all ask these helpers; none keeps a copy. */
#include "ir/ir.h"

static const struct {
  PtLevel level;
  int dim;          /* launch dimension 0..2 (x, y, z), or -1 */
  bool shapes_loop; /* a serial type saying how its loop runs (ir_ptype_shapes_loop) */
} pt_rules[] = {
    [CF_PT_SERIAL] = {PT_LEVEL_SERIAL, -1, false},    [CF_PT_TIDX] = {PT_LEVEL_THREAD, 0, false},
    [CF_PT_TIDY] = {PT_LEVEL_THREAD, 1, false},       [CF_PT_TIDZ] = {PT_LEVEL_THREAD, 2, false},
    [CF_PT_BIDX] = {PT_LEVEL_BLOCK, 0, false},        [CF_PT_BIDY] = {PT_LEVEL_BLOCK, 1, false},
    [CF_PT_BIDZ] = {PT_LEVEL_BLOCK, 2, false},        [CF_PT_DIDX] = {PT_LEVEL_DEVICE, 0, false},
    [CF_PT_DIDY] = {PT_LEVEL_DEVICE, 1, false},       [CF_PT_DIDZ] = {PT_LEVEL_DEVICE, 2, false},
    [CF_PT_VECTORIZE] = {PT_LEVEL_SERIAL, -1, false}, [CF_PT_UNROLL] = {PT_LEVEL_SERIAL, -1, true},
    [CF_PT_UNSWITCH] = {PT_LEVEL_SERIAL, -1, true},   [CF_PT_MMA] = {PT_LEVEL_SERIAL, -1, false},
};
_Static_assert(sizeof pt_rules / sizeof pt_rules[0] == CF_PT_COUNT, "a parallel type without its rules");

static const PtLevel mem_distributed_from[] = {
    [CF_MEM_LOCAL] = PT_LEVEL_THREAD,
    [CF_MEM_SHARED] = PT_LEVEL_BLOCK,
    [CF_MEM_GLOBAL] = PT_LEVEL_DEVICE,
    [CF_MEM_TENSOR] = PT_LEVEL_BLOCK,
};
_Static_assert(sizeof mem_distributed_from / sizeof mem_distributed_from[0] == CF_MEM_COUNT,
               "a memory type without its rules");

PtLevel ir_ptype_level(cf_parallel_type p) {
  return (unsigned)p < CF_PT_COUNT ? pt_rules[p].level : PT_LEVEL_INVALID;
}

int ir_ptype_launch_dim(cf_parallel_type p) { return (unsigned)p < CF_PT_COUNT ? pt_rules[p].dim : -1; }

bool ir_ptype_shapes_loop(cf_parallel_type p) { return (unsigned)p < CF_PT_COUNT && pt_rules[p].shapes_loop; }

bool ir_ptype_is_thread(cf_parallel_type p) { return ir_ptype_level(p) == PT_LEVEL_THREAD; }
bool ir_ptype_is_block(cf_parallel_type p) { return ir_ptype_level(p) == PT_LEVEL_BLOCK; }
bool ir_ptype_is_device(cf_parallel_type p) { return ir_ptype_level(p) == PT_LEVEL_DEVICE; }

static PtLevel distributed_from(cf_memory_type m) {
  return (unsigned)m < CF_MEM_COUNT ? mem_distributed_from[m] : PT_LEVEL_INVALID;
}

bool ir_mem_distributed_across(cf_memory_type m, cf_parallel_type p) {
  PtLevel l = ir_ptype_level(p);
  return l != PT_LEVEL_SERIAL && l != PT_LEVEL_INVALID && l >= distributed_from(m);
}

bool ir_mem_shared_across(cf_memory_type m, cf_parallel_type p) {
  PtLevel l = ir_ptype_level(p);
  return l != PT_LEVEL_SERIAL && l != PT_LEVEL_INVALID && l < distributed_from(m);
}
