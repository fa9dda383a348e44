/* lower/tmem_info.c: the tmem_info pass. Tensor-memory allocation info (DESIGN.md section 6): which
 * regions the kernel allocates with tcgen05.alloc, how many lanes and columns each tensor
 * takes, and where each tensor sits inside its region.
 *
 * A region is one allocation: the tensors the user grouped with cf_fusion_group_tmem, or
 * else a single tensor-memory TensorView. A tensor takes lanes = the product of its
 * allocated lane axes (<= 128) and columns = ceilDiv(product of its allocated column axes
 * x dtype bytes, 4) (32-bit cells); the tensors of a region sit side by side in its columns
 * (lane offset 0, column offset = the columns of the tensors before it), and the region
 * allocates max(32, next power of two) of their sum (<= 512 before rounding). The rounded
 * regions together must fit in the 512 columns.
 * Requires: TvInfo from the tensors pass (allocated axes, dim-sep position).
 * Establishes: k->regions (with a shared-memory uint32 slot per region, appended to
 * k->allocs), k->uses_tmem, and KTensor.tmem_region / tmem_lanes / tmem_columns /
 * tmem_lane_offset / tmem_col_offset (columns, i.e. 32-bit cells) of every tensor-memory
 * tensor.
 * Key decision: the limits go through lower_validate, so constant sizes fail at compile
 * time with nvFuser's messages and symbolic ones become run-time checks; a region of
 * symbolic size allocates all 512 columns, the most its run-time check lets it need. */
#include <string.h>

#include "lower/lower.h"

enum { TMEM_LANES = 128, TMEM_COLUMNS = 512 };

/* The product of the extents of tv's allocated axes in [lo, hi). */
static KExpr *allocated_product(LowerCtx *c, TvInfo *ti, int lo, int hi) {
  KExpr *p = kx_const(c->a, 1);
  for (int i = lo; i < hi; i++)
    if (ti->allocated[i]) p = kx_bin(c->a, OP_MUL, p, lower_extent(c, ti->alloc_ids[i]));
  return p;
}

/* An expression as text for messages: a number when constant. */
static const char *expr_text(LowerCtx *c, const KExpr *e) {
  StrBuf b = {0};
  kx_print(&b, e, c->k->param_names);
  char *s = arena_strdup(c->a, b.data ? b.data : "");
  sb_free(&b);
  return s;
}

static int64_t const_or_unknown(const KExpr *e) {
  int64_t v;
  return kx_is_const(e, &v) ? v : -1;
}

/* Lanes and raw columns of one tensor, validated; returns its raw columns. */
static KExpr *measure_tensor(LowerCtx *c, Val *tv) {
  TvInfo *ti = lower_info(c, tv);
  KExpr *lanes = allocated_product(c, ti, 0, ti->dim_sep);
  lower_validate(c, kx_bin(c->a, OP_LE, lanes, kx_const(c->a, TMEM_LANES)),
                 "Not enough tensor memory lanes: tried to allocate %s, but only %d available.", expr_text(c, lanes),
                 TMEM_LANES);
  KExpr *bytes = kx_bin(c->a, OP_MUL, allocated_product(c, ti, ti->dim_sep, ti->nalloc_ids),
                        kx_const(c->a, (int64_t)cf_dtype_size(tv->dtype)));
  KExpr *cols = kx_bin(c->a, OP_CEILDIV, bytes, kx_const(c->a, 4));
  ti->kt->tmem_lanes = const_or_unknown(lanes);
  ti->kt->tmem_columns = const_or_unknown(cols);
  return cols;
}

static int64_t round_columns(int64_t n) {
  int64_t p = 32;
  while (p < n) p <<= 1;
  return p;
}

static KTensor *new_slot(LowerCtx *c, int r) {
  KTensor *s = ARENA_NEW(c->a, KTensor);
  s->name = arena_printf(c->a, "tmem_slot%d", r);
  s->fusion_tv_name = -1;
  s->mem = CF_MEM_SHARED;
  s->dtype = CF_UINT32;
  s->param = -1;
  s->size = kx_const(c->a, 1);
  s->tmem_region = -1;
  return s;
}

/* Fills region r from its tensors: offsets, lanes, raw and rounded columns. */
static void measure_region(LowerCtx *c, int r, Val **tvs, int n) {
  KTMemRegion *reg = &c->k->regions[r];
  reg->ntensors = n;
  reg->tensors = ARENA_ARRAY(c->a, KTensor *, n);
  reg->slot = new_slot(c, r);
  KExpr *sum = kx_const(c->a, 0);
  for (int i = 0; i < n; i++) {
    KTensor *kt = lower_info(c, tvs[i])->kt;
    KExpr *cols = measure_tensor(c, tvs[i]);
    if (!kx_is_const(sum, &kt->tmem_col_offset))
      lower_fail(c, CF_ERR_UNSUPPORTED,
                 "compile: %s follows a tensor of symbolic size in its tensor-memory region; put tensors of "
                 "symbolic size last in a region or in a region of their own", kt->name);
    kt->tmem_region = r;
    kt->tmem_lane_offset = 0;
    reg->tensors[i] = kt;
    if (i == 0 || kt->tmem_lanes < 0) reg->num_lanes = kt->tmem_lanes;
    else if (reg->num_lanes >= 0 && kt->tmem_lanes > reg->num_lanes) reg->num_lanes = kt->tmem_lanes;
    sum = kx_bin(c->a, OP_ADD, sum, cols);
  }
  lower_validate(c, kx_bin(c->a, OP_LE, sum, kx_const(c->a, TMEM_COLUMNS)),
                 "Not enough tensor memory columns: tried to allocate %s, but only %d available.", expr_text(c, sum),
                 TMEM_COLUMNS);
  reg->raw_columns = const_or_unknown(sum);
  reg->num_columns = reg->raw_columns < 0 ? TMEM_COLUMNS : round_columns(reg->raw_columns);
}

static bool is_tmem_tv(LowerCtx *c, Val *tv) {
  return !ir_tv_is_input(c->f, tv) && !ir_tv_is_output(c->f, tv) && TV(tv)->mem == CF_MEM_TENSOR;
}

static bool in_kernel(LowerCtx *c, const Val *tv) {
  for (int i = 0; i < c->ntvs; i++)
    if (c->tvs[i] == tv) return true;
  return false;
}

/* The user's groups, checked again now that the schedule is final. */
static void user_regions(LowerCtx *c, PtrVec *groups, int *counts, char *grouped) {
  cf_fusion *f = c->f;
  for (int r = 0; r < f->tmem_regions.len; r++) {
    TMemRegionSpec *s = f->tmem_regions.items[r];
    if (s->ntvs <= 0) lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: empty tensor-memory region group");
    for (int i = 0; i < s->ntvs; i++) {
      Val *tv = s->tvs[i];
      if (!in_kernel(c, tv))
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is grouped into a tensor-memory region but is not "
                   "computed by the fusion", TV(tv)->display_name);
      if (!is_tmem_tv(c, tv))
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is grouped into a tensor-memory region but is in %s memory",
                   TV(tv)->display_name, cf_memory_type_name(TV(tv)->mem));
      if (grouped[tv->id])
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s is in two tensor-memory regions; a tensor cannot be in "
                   "multiple regions", TV(tv)->display_name);
      grouped[tv->id] = 1;
    }
    counts[groups->len] = s->ntvs;
    ptrvec_push(c->a, groups, s->tvs);
  }
}

void lower_tmem_info(LowerCtx *c) {
  KKernel *k = c->k;
  int max = c->f->tmem_regions.len + c->ntvs;
  PtrVec groups = {0};
  int *counts = ARENA_ARRAY(c->a, int, max);
  char *grouped = arena_alloc(c->a, (size_t)c->f->vals.len + 1);
  user_regions(c, &groups, counts, grouped);
  for (int i = 0; i < c->ntvs; i++) {
    Val *tv = c->tvs[i];
    if (!is_tmem_tv(c, tv) || grouped[tv->id]) continue;
    Val **one = ARENA_ARRAY(c->a, Val *, 1);
    one[0] = tv;
    counts[groups.len] = 1;
    ptrvec_push(c->a, &groups, one);
  }
  k->nregions = groups.len;
  k->regions = ARENA_ARRAY(c->a, KTMemRegion, groups.len);
  k->uses_tmem = groups.len > 0;
  int64_t total = 0;
  for (int r = 0; r < groups.len; r++) {
    measure_region(c, r, groups.items[r], counts[r]);
    total += k->regions[r].num_columns;
  }
  lower_validate(c, kx_const(c->a, total <= TMEM_COLUMNS),
                 "Not enough tensor memory columns: tried to allocate %lld, but only %d available.", (long long)total,
                 TMEM_COLUMNS);
  if (!groups.len) return;
  KTensor **allocs = ARENA_ARRAY(c->a, KTensor *, k->nallocs + groups.len);
  if (k->nallocs) memcpy(allocs, k->allocs, sizeof(KTensor *) * (size_t)k->nallocs);
  for (int r = 0; r < groups.len; r++) allocs[k->nallocs + r] = k->regions[r].slot;
  k->allocs = allocs;
  k->nallocs += groups.len;
}
