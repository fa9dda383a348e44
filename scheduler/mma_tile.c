/* scheduler/mma_tile.c: cf_mma_tile, the tiling transform that hands a sum of a product's
 * innermost M x N x K tile to a tensor-core instruction (ir/mma.h's table; nvFuser's
 * MmaOp with ParallelType::Mma). It validates the product (ir_mma_match), the axes' roles
 * and extents against the instruction's tile, then reshapes the M x N tile into the
 * accumulator's fragment layout: M split into (M-registers, lane groups), N into (lanes of
 * a group, N-registers), the lane axes merged onto threadIdx.x: [lane{32}, M-regs, N-regs,
 * K], the last three on CF_PT_MMA. Key decision: the fragment layout is an ordinary
 * schedule, so the accumulator allocated by the allocation rule is exactly the lane's
 * registers, and the epilogue, given the same transforms (cf_propagate_transforms_to),
 * reads them as plain local memory of its own thread; only the instruction itself (lower/
 * mma.c) knows more. tcgen05.mma's accumulator is in tensor memory instead: its tile stays
 * [M{128}, N, K{16}] on MMA (row m in lane m, column n in column n, tensor memory's own
 * layout), and the reader copies it into registers (tcgen05.ld). */
#include <string.h>

#include "ir/mma.h"
#include "scheduler/sched.h"

/* Axis `a` of r has the instruction's extent `want` for `role`, and the iter type. */
static bool axis_ok(cf_fusion *f, Val *r, int a, int64_t want, bool reduced, const char *role, const IrMmaInstr *in) {
  Val *id = TV(r)->loop[a];
  int64_t e;
  StrBuf b = {0};
  ir_print_id(&b, id);
  bool ok = true, n_free = in->n_max && !strcmp(role, "N"); /* wgmma: N is the tile's */
  if ((ID(id)->iter_type == CF_ITER_REDUCTION) != reduced) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d (%s) of %s must be %s axis, the instruction's %s tile",
                a, b.data, TV(r)->display_name, reduced ? "the reduced" : "an iteration", role);
    ok = false;
  } else if (n_free && (!ir_scalar_const_value(ID(id)->extent, &e) || e % want || e > in->n_max)) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d (%s) of %s is the N tile; %s needs its extent to be "
                "a constant multiple of %lld up to %d", a, b.data, TV(r)->display_name, in->name, (long long)want,
                in->n_max);
    ok = false;
  } else if (!n_free && (!ir_scalar_const_value(ID(id)->extent, &e) || e != want)) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d (%s) of %s is the %s tile; %s needs its extent to be "
                "exactly %lld (split it by %lld first)", a, b.data, TV(r)->display_name, role, in->name,
                (long long)want, (long long)want);
    ok = false;
  } else if (ID(id)->ptype != CF_PT_SERIAL) {
    ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d (%s) of %s is already on %s", a, b.data,
                TV(r)->display_name, cf_parallel_type_name(ID(id)->ptype));
    ok = false;
  }
  sb_free(&b);
  return ok;
}

/* Whether each of the n root axes of r is iterated by `it` and broadcast by `bc` (an M
 * axis's, or an N axis's: a batch of A alone merged with M is an M axis). */
static bool all_roots(const int *roots, int n, Val *it, Val *bc) {
  for (int i = 0; i < n; i++)
    if (ID(TV(bc)->logical[roots[i]])->iter_type != CF_ITER_BROADCAST ||
        ID(TV(it)->logical[roots[i]])->iter_type == CF_ITER_BROADCAST)
      return false;
  return n > 0;
}

/* The roles of the M and N tiles: each derives from root axes of r through splits and
 * merges, the M one's all iterated by a alone, the N one's by b alone. */
static bool roles_ok(cf_fusion *f, Val *r, int a, const IrMmaInstr *in, IrMmaPattern *p) {
  char why[512];
  int roots[3][CF_MAX_RANK + 1], n[3]; /* of the M, N and K axes */
  for (int k = 0; k < 3; k++) n[k] = ir_mma_root_axes(r, TV(r)->loop[a + k], roots[k], CF_MAX_RANK + 1);
  if (!ir_mma_match(r, in, n[0] > 0 ? roots[0][n[0] - 1] : -1, p, why, sizeof why, "mma_tile"))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "%s", why), false;
  if (!all_roots(roots[0], n[0], p->a, p->b))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d of %s is not an M axis: it must come "
                       "from root axes through splits and merges, each iterated by %s and broadcast by %s", a,
                       TV(r)->display_name, TV(p->a)->display_name, TV(p->b)->display_name), false;
  if (!all_roots(roots[1], n[1], p->b, p->a))
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d of %s is not an N axis: it must come "
                       "from root axes through splits and merges, each broadcast by %s and iterated by %s", a + 1,
                       TV(r)->display_name, TV(p->a)->display_name, TV(p->b)->display_name), false;
  if (n[2] != 1 || roots[2][0] != p->k_axis)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d of %s is not a split of its reduced axis",
                       a + 2, TV(r)->display_name), false;
  return true;
}

/* wgmma's [.., M{64}, N, K] -> [.., lane{128}, M-regs{2}, N-regs{N/4}, K]: M = 16 w + 8 mr
 * + g, N = 8 j + 2 t + p, the lane 32 w + 4 g + t (warp w of the warpgroup, group g,
 * thread t), N-regs = 2 j + p: register 4 j + 2 mr + p of the PTX ISA's D fragment. */
static void wgmma_layout(cf_fusion *f, cf_tv *t, int a, const IrMmaInstr *in) {
  cf_split(f, t, a + 1, in->acc_n_inner); /* [.., M, N/2, p, K] */
  cf_split(f, t, a + 1, 4);               /* [.., M, j, t, p, K] */
  cf_split(f, t, a, in->acc_m_inner);     /* [.., M/8, g, j, t, p, K] */
  cf_split(f, t, a, 2);                   /* [.., w, mr, g, j, t, p, K] */
  cf_reorder(f, t, 4, (int[]){a + 1, a + 3, a + 2, a + 1, a + 3, a + 4, a + 4, a + 2}); /* [.., w, g, t, mr, j, p, K] */
  cf_merge(f, t, a);
  cf_merge(f, t, a); /* [.., lane, mr, j, p, K] */
  cf_merge(f, t, a + 2);
  cf_parallelize(f, t, a, CF_PT_TIDX);
  for (int i = 1; i <= 3; i++) cf_parallelize(f, t, a + i, CF_PT_MMA);
}

/* [.., M, N, K] -> [.., lane (threadIdx.x), M-regs, N-regs, K], the last three on MMA;
 * tcgen05: [.., M, N, K] on MMA as they are. */
static void fragment_layout(cf_fusion *f, cf_tv *t, int a, const IrMmaInstr *in) {
  if (ir_mma_is_tcgen05(in)) {
    for (int i = 0; i < 3; i++) cf_parallelize(f, t, a + i, CF_PT_MMA);
    return;
  }
  if (ir_mma_is_wgmma(in)) {
    wgmma_layout(f, t, a, in);
    return;
  }
  cf_split(f, t, a + 1, in->acc_n_inner); /* [.., M, lanes of a group, N-regs, K] */
  cf_split(f, t, a, in->acc_m_inner);     /* [.., M-regs, lane groups, lanes, N-regs, K] */
  cf_reorder(f, t, 1, (int[]){a, a + 2}); /* [.., lane groups, lanes, M-regs, N-regs, K] */
  cf_merge(f, t, a);
  cf_parallelize(f, t, a, CF_PT_TIDX);
  for (int i = 1; i <= 3; i++) cf_parallelize(f, t, a + i, CF_PT_MMA);
}

cf_status cf_mma_tile(cf_fusion *f, cf_tv *tv, int axis, cf_mma_macro macro) {
  cf_status s = ir_check_tv(f, "mma_tile", tv);
  if (s) return s;
  Val *r = ir_tv(tv);
  const IrMmaInstr *in = ir_mma_instr(macro);
  if (!in) return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, r, "mma_tile: unknown instruction %d", (int)macro);
  int n = TV(r)->nloop, a = ir_wrap_axis(axis, n);
  if (a < 0 || a != n - 3)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axis %d of %s must start the last three loop axes "
                       "(%d of %d): the instruction's M, N and K tiles are innermost", axis, TV(r)->display_name,
                       n - 3, n);
  if (a < TV(r)->ca_pos || a < TV(r)->max_producer_pos)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: axes %d.. of %s are shared with other tensors' loops "
                       "(inlined); tile before inlining", a, TV(r)->display_name);
  if (ir_mma_is_tcgen05(in) && TV(r)->mem != CF_MEM_TENSOR)
    return ir_error_tv(f, CF_ERR_INVALID_SCHEDULE, r, "mma_tile: %s accumulates in tensor memory for %s; %s is in %s "
                       "memory (cf_set_memory_type(f, %s, CF_MEM_TENSOR) first)", in->name, TV(r)->display_name,
                       TV(r)->display_name, cf_memory_type_name(TV(r)->mem), TV(r)->display_name);
  IrMmaPattern p;
  if (!axis_ok(f, r, a, in->m, false, "M", in) || !axis_ok(f, r, a + 1, in->n, false, "N", in) ||
      !axis_ok(f, r, a + 2, in->k, true, "K", in) || !roles_ok(f, r, a, in, &p))
    return f->status;
  fragment_layout(f, tv, a, in);
  return f->status;
}
