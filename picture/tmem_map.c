/* picture/tmem_map.c: cf_fusion_draw_tmem: the lane/column map of every tensor-memory
 * region of a fusion's kernel, as SVG.
 *
 * The fusion is lowered (it is only read); each region of the kernel (KTMemRegion) is one
 * panel: 128 lanes down, its allocated 32-bit columns across. Each tensor of the region
 * is a colored box at its lane and column offsets, cut into bands where the index of one
 * of its outer lane or column axes changes (labelled "iS5=1"), with a tooltip giving the
 * whole mapping; the columns allocated past the tensors' sum (the power-of-two rounding)
 * are hatched; dashed lines mark the 32-lane sub-partitions a warp reaches.
 * Which axes are the lanes and the columns is read from the TensorView: its allocation
 * domain (its loop domain when none was set) split at its dim-sep position, keeping the
 * axes lowering allocates (tensors.c's rule: iteration axes of extent > 1, not on blocks
 * or devices, on threads or right of the compute-at position). Key decision: the bands
 * are drawn only when those axes' sizes give exactly the lanes and columns lowering
 * computed, so the picture never shows a mapping the kernel does not use. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "picture/picture.h"

enum { LANES = 128, LANE_PX = 3, LEFT = 150, TOP = 56, MAX_AXES = 16, MAX_BANDS = 64 };

typedef struct Axes {
  Val *ids[MAX_AXES];
  int64_t extents[MAX_AXES];
  int n;
  bool exact; /* the axes' sizes match lowering's lanes or columns */
} Axes;

/* Distinct fills for the tensors of a region, in order (one helper beside the list). */
static const char *tensor_fill(int i) {
  static const char *const fills[] = {"#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc", "#fc9272", "#c7e9c0"};
  return fills[i % (int)(sizeof fills / sizeof fills[0])];
}

static Val *fusion_tv(cf_fusion *f, int name) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind == VAL_TV && v->name == name) return v;
  }
  return NULL;
}

static bool left_of_ca(const TensorView *t, const Val *id) {
  for (int i = 0; i < t->ca_pos && i < t->nloop; i++)
    if (t->loop[i] == id) return true;
  return false;
}

/* The allocated axes of tv's allocation domain in [lo, hi) (tensors.c's rule). */
static void allocated_axes(Val *tv, int lo, int hi, Axes *a) {
  TensorView *t = TV(tv);
  Val **dom = t->alloc ? t->alloc : t->loop;
  a->n = 0;
  for (int i = lo; i < hi && a->n < MAX_AXES; i++) {
    IterDomain *d = ID(dom[i]);
    int64_t e = -1;
    bool known = ir_scalar_const_value(d->extent, &e);
    if (d->iter_type != CF_ITER_ITERATION || (known && e == 1)) continue;
    if (ir_ptype_is_block(d->ptype) || ir_ptype_is_device(d->ptype)) continue;
    if (!ir_ptype_is_thread(d->ptype) && left_of_ca(t, dom[i])) continue;
    a->ids[a->n] = dom[i];
    a->extents[a->n++] = known ? e : -1;
  }
}

static int64_t product(const Axes *a) {
  int64_t p = 1;
  for (int i = 0; i < a->n; i++) p = a->extents[i] < 0 || p < 0 ? -1 : p * a->extents[i];
  return p;
}

/* Lane and column axes of kernel tensor kt, checked against lowering's figures. */
static void tensor_axes(cf_fusion *f, const KTensor *kt, Axes *lanes, Axes *cols) {
  Val *tv = fusion_tv(f, kt->fusion_tv_name);
  lanes->n = cols->n = 0;
  lanes->exact = cols->exact = false;
  if (!tv) return;
  TensorView *t = TV(tv);
  int n = t->alloc ? t->nalloc : t->nloop, sep = t->tmem_dim_sep < 0 ? 0 : t->tmem_dim_sep;
  if (sep > n) sep = n;
  allocated_axes(tv, 0, sep, lanes);
  allocated_axes(tv, sep, n, cols);
  int64_t bytes = (int64_t)cf_dtype_size(kt->dtype), pc = product(cols);
  lanes->exact = product(lanes) == kt->tmem_lanes;
  cols->exact = pc > 0 && (pc * bytes + 3) / 4 == kt->tmem_columns;
}

static void axes_text(StrBuf *b, const Axes *a) {
  if (!a->n) sb_puts(b, "(none)");
  for (int i = 0; i < a->n; i++) {
    if (i) sb_puts(b, " x ");
    ir_print_id(b, a->ids[i]);
  }
}

/* The tooltip: where the tensor lives and what indexes it. */
static void tooltip(StrBuf *b, const KTensor *kt, const Axes *lanes, const Axes *cols) {
  sb_printf(b, "%s (%s): lanes %lld..%lld = ", kt->name, cf_dtype_name(kt->dtype), (long long)kt->tmem_lane_offset,
            (long long)(kt->tmem_lane_offset + kt->tmem_lanes - 1));
  axes_text(b, lanes);
  sb_printf(b, "; columns %lld..%lld = ", (long long)kt->tmem_col_offset,
            (long long)(kt->tmem_col_offset + kt->tmem_columns - 1));
  axes_text(b, cols);
  sb_printf(b, " (%zu-byte elements in 32-bit columns, row-major over the axes)", cf_dtype_size(kt->dtype));
}

/* Bands of the outer axes of one side: a line and a label where axis i's index changes.
 * unit: lanes or columns per innermost element; horizontal: columns (else lanes). */
static void bands(StrBuf *b, const Axes *a, double x0, double y0, double px, double unit, bool horizontal,
                  double room) {
  if (!a->exact || a->n < 2) return;
  double stride = unit;
  for (int i = a->n - 1; i >= 1; i--) stride *= (double)a->extents[i];
  if (a->extents[0] > MAX_BANDS) return;
  for (int64_t j = 0; j < a->extents[0]; j++) {
    double at = (double)j * stride * px;
    StrBuf label = {0};
    ir_print_id(&label, a->ids[0]);
    char *s = sb_take(&label);
    char text[128];
    snprintf(text, sizeof text, "%.*s=%lld", (int)(strchr(s, '{') ? strchr(s, '{') - s : (long)strlen(s)), s,
             (long long)j);
    free(s);
    if (horizontal) {
      if (j) pic_line(b, x0 + at, y0, x0 + at, y0 + room, "#333333", 1, NULL);
      if (stride * px >= (double)strlen(text) * PIC_CHAR_PX + 4) pic_text(b, x0 + at + 3, y0 + 14, "start", "normal", text);
    } else {
      if (j) pic_line(b, x0, y0 + at, x0 + room, y0 + at, "#333333", 1, NULL);
      if (stride * px >= 14) pic_text(b, x0 + 4, y0 + at + 13, "start", "normal", text);
    }
  }
}

static void draw_tensor(StrBuf *b, cf_fusion *f, const KTensor *kt, int index, double top, double colw) {
  Axes lanes, cols;
  tensor_axes(f, kt, &lanes, &cols);
  double x = LEFT + (double)kt->tmem_col_offset * colw, y = top + (double)kt->tmem_lane_offset * LANE_PX;
  double w = (double)kt->tmem_columns * colw, h = (double)kt->tmem_lanes * LANE_PX;
  StrBuf tip = {0};
  tooltip(&tip, kt, &lanes, &cols);
  pic_group_begin(b, tip.data);
  sb_free(&tip);
  pic_rect(b, x, y, w, h, tensor_fill(index), "#222222", 1.5, NULL);
  for (int64_t c = 1; colw >= 4 && c < kt->tmem_columns; c++) /* one 32-bit column each */
    pic_line(b, x + (double)c * colw, y, x + (double)c * colw, y + h, "#ffffff", 0.6, NULL);
  double bytes = (double)cf_dtype_size(kt->dtype);
  bands(b, &cols, x, y, colw, bytes / 4, true, h);
  bands(b, &lanes, x, y, LANE_PX, 1, false, w);
  double nw = (double)strlen(kt->name) * PIC_CHAR_PX + 12, ny = y + h * 0.375;
  pic_rect(b, x + w / 2 - nw / 2, ny - 12, nw, 18, "#ffffff", "#222222", 1, NULL);
  pic_text(b, x + w / 2, ny + 1, "middle", "bold", kt->name);
  pic_group_end(b);
  /* the lane and column axes, spelled out under the map */
  StrBuf side = {0};
  sb_printf(&side, "%s (%s): lanes = ", kt->name, cf_dtype_name(kt->dtype));
  axes_text(&side, &lanes);
  sb_puts(&side, "; columns = ");
  axes_text(&side, &cols);
  pic_text(b, 8, top + LANES * LANE_PX + 20 + 16.0 * index, "start", "normal", side.data);
  sb_free(&side);
}

static double region_height(const KTMemRegion *r) { return TOP + LANES * LANE_PX + 24 + 16.0 * r->ntensors; }

static void draw_region(StrBuf *b, cf_fusion *f, const KTMemRegion *r, int index, double top, double colw) {
  char head[256];
  snprintf(head, sizeof head, "region %d: %lld of %lld allocated columns used, %lld lanes", index,
           (long long)r->raw_columns, (long long)r->num_columns, (long long)r->num_lanes);
  pic_text(b, 8, top + 20, "start", "bold", head);
  double y0 = top + TOP, x1 = LEFT + (double)r->num_columns * colw;
  for (int64_t c = 0; c <= r->num_columns; c += r->num_columns >= 128 ? 32 : 8) {
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)c);
    pic_text(b, LEFT + (double)c * colw, y0 - 10, "middle", "normal", t);
  }
  pic_text(b, 8, y0 - 10, "start", "normal", "column");
  pic_rect(b, LEFT, y0, x1 - LEFT, LANES * LANE_PX, "#eeeeee", "#999999", 1, "4 3");
  if (r->num_columns > r->raw_columns)
    pic_text(b, LEFT + ((double)r->raw_columns + (double)(r->num_columns - r->raw_columns) / 2) * colw,
             y0 + LANES * LANE_PX * 0.375, "middle", "normal", "unused");
  for (int i = 0; i < r->ntensors; i++) draw_tensor(b, f, r->tensors[i], i, y0, colw);
  for (int l = 0; l <= LANES; l += 32) {
    char t[32];
    snprintf(t, sizeof t, "lane %d", l);
    pic_text(b, LEFT - 8, y0 + l * LANE_PX + 4, "end", "normal", t);
    if (l && l < LANES) pic_line(b, LEFT, y0 + l * LANE_PX, x1, y0 + l * LANE_PX, "#555555", 1, "6 4");
  }
}

static void draw_kernel(StrBuf *b, cf_fusion *f, const KKernel *k) {
  int64_t most = 32;
  double height = 10;
  for (int i = 0; i < k->nregions; i++) {
    if (k->regions[i].num_columns > most) most = k->regions[i].num_columns;
    height += region_height(&k->regions[i]);
  }
  double colw = 960.0 / (double)most;
  pic_begin(b, LEFT + 960 + 24, k->nregions ? height : 60, "cfuser: tensor-memory regions, lanes by 32-bit columns");
  if (!k->nregions) pic_text(b, 8, 30, "start", "bold", "this kernel allocates no tensor memory");
  double top = 10;
  for (int i = 0; i < k->nregions; i++) {
    draw_region(b, f, &k->regions[i], i, top, colw);
    top += region_height(&k->regions[i]);
  }
  pic_end(b);
}

cf_status cf_fusion_draw_tmem(cf_fusion *f, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (!out) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "draw_tmem: out is NULL");
  KKernel *k = NULL;
  char *msg = NULL;
  cf_status s = lower_fusion(f, NULL, &k, &msg);
  if (s) {
    ir_error(f, s, "%s", msg ? msg : "draw_tmem: lowering failed");
    free(msg);
    return s;
  }
  StrBuf b = {0};
  draw_kernel(&b, f, k);
  kkernel_free(k);
  return pic_emit(&b, out);
}
