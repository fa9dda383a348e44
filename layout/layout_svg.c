/* layout/layout_svg.c: pictures of layouts, in SVG, in the spirit of CuTe's print_layout and
 * print_latex: the grid of a rank-2 layout (row m, column n holds the index l(m,n), colored
 * by index), and the thread-value picture of a TV layout over an M x N tile (the cell an
 * index falls on says which thread and which of its values it is, colored by thread).
 *
 * Key decision: the pictures are plain text made with the module's bounded printer
 * (snprintf's contract: the full length is always reported), so a caller sizes a buffer
 * with a first call and nothing here allocates. The pictures are meant to be read, so the
 * number of cells is limited (LAY_SVG_MAX_CELLS) and a bigger layout is refused with an
 * error rather than drawn unreadably small. Rank-1 layouts are drawn as one column, as
 * their coordinates are the rows; deeper modes are indexed by their 1-D coordinate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

/* Most cells one picture may have. */
#define LAY_SVG_MAX_CELLS 4096

/* Eight light colors, cycled by index (grid) or by thread (TV picture). */
static const char *const PALETTE[8] = {"#cfe2f3", "#f4cccc", "#d9ead3", "#fff2cc",
                                       "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc"};

/* Pixels: a cell, the margin of the row and column numbers, the caption, one character. */
enum { CELL_W = 44, CELL_H = 28, MARGIN = 28, CAPTION = 22, CHAR_W = 8 };

static const char *color_of(int64_t k) { return PALETTE[((k % 8) + 8) % 8]; }

static void svg_begin(LayText *x, int64_t rows, int64_t cols, int cell_h, const char *caption)
{
  int64_t w = MARGIN + cols * CELL_W + 2, h = CAPTION + MARGIN + rows * cell_h + 2;
  int64_t text_w = (int64_t)strlen(caption) * CHAR_W + 8; /* the caption fits too */
  w = text_w > w ? text_w : w;
  lay_text_printf(x, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%lld\" height=\"%lld\" "
                     "font-family=\"monospace\" font-size=\"12\" text-anchor=\"middle\">\n",
                  (long long)w, (long long)h);
  lay_text_printf(x, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  lay_text_printf(x, "<text x=\"%lld\" y=\"15\">%s</text>\n", (long long)(w / 2), caption);
  for (int64_t n = 0; n < cols; n++)
    lay_text_printf(x, "<text x=\"%lld\" y=\"%d\">%lld</text>\n",
                    (long long)(MARGIN + n * CELL_W + CELL_W / 2), CAPTION + MARGIN - 8,
                    (long long)n);
  for (int64_t m = 0; m < rows; m++)
    lay_text_printf(x, "<text x=\"%d\" y=\"%lld\">%lld</text>\n", MARGIN / 2,
                    (long long)(CAPTION + MARGIN + m * cell_h + cell_h / 2 + 4), (long long)m);
}

/* One cell at row m, column n with one or two lines of text (line2 may be NULL). */
static void svg_cell(LayText *x, int64_t m, int64_t n, int cell_h, const char *fill,
                     const char *line1, const char *line2)
{
  int64_t x0 = MARGIN + n * CELL_W, y0 = CAPTION + MARGIN + m * cell_h;
  lay_text_printf(x, "<rect x=\"%lld\" y=\"%lld\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                     "stroke=\"black\"/>\n",
                  (long long)x0, (long long)y0, CELL_W, cell_h, fill);
  if (!line2) {
    lay_text_printf(x, "<text x=\"%lld\" y=\"%lld\">%s</text>\n", (long long)(x0 + CELL_W / 2),
                    (long long)(y0 + cell_h / 2 + 4), line1);
    return;
  }
  lay_text_printf(x, "<text x=\"%lld\" y=\"%lld\">%s</text>\n", (long long)(x0 + CELL_W / 2),
                  (long long)(y0 + cell_h / 2 - 2), line1);
  lay_text_printf(x, "<text x=\"%lld\" y=\"%lld\">%s</text>\n", (long long)(x0 + CELL_W / 2),
                  (long long)(y0 + cell_h / 2 + 12), line2);
}

/* The number of rows and columns of l's grid: size(mode 0) x size(mode 1), or
 * size(l) x 1 for rank 1; fails for other ranks and for too many cells. */
static bool grid_dims(const cf_tuple_tree *l, const char *what, int64_t *rows, int64_t *cols,
                      cf_layout_err *e)
{
  int r = lay_rank_at(l, 0);
  if (r != 1 && r != 2) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: a layout of rank %d; only rank 1 and 2 can be "
             "drawn (group its modes first)", what, r);
    return false;
  }
  *rows = lay_product(l, lay_child(l, 0, 0), 0, e).value;
  *cols = r == 2 ? lay_product(l, lay_child(l, 0, 1), 0, e).value : 1;
  int64_t cells;
  if (lay_ok(e) && (__builtin_mul_overflow(*rows, *cols, &cells) || cells > LAY_SVG_MAX_CELLS))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "%s: %lld x %lld cells are too many to draw (at most "
             "%d)", what, (long long)*rows, (long long)*cols, LAY_SVG_MAX_CELLS);
  return lay_ok(e);
}

static cf_status finish(cf_layout_err *e, const LayText *x, size_t *len)
{
  if (lay_ok(e) && len)
    *len = x->len;
  return e->status;
}

CF_API cf_status cf_layout_svg(const cf_layout *l, char *buf, size_t n, size_t *len,
                               cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  LayText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  int64_t rows, cols;
  if (!lay_require_layout(&l->tree, "svg", e) || !grid_dims(&l->tree, "svg", &rows, &cols, e))
    return e->status;
  char caption[CF_LAYOUT_TEXT_MAX];
  cf_layout_snprint(caption, sizeof caption, l);
  svg_begin(&x, rows, cols, CELL_H, caption);
  for (int64_t m = 0; m < rows && lay_ok(e); m++)
    for (int64_t c = 0; c < cols && lay_ok(e); c++) {
      int64_t v = 0;
      cf_layout_eval(l, m + rows * c, &v, e);
      char text[24];
      snprintf(text, sizeof text, "%lld", (long long)v);
      svg_cell(&x, m, c, CELL_H, color_of(v), text, NULL);
    }
  lay_text_printf(&x, "</svg>\n");
  return finish(e, &x, len);
}

/* The tile's rows and columns: the sizes of the two modes of a rank-2 shape. */
static bool tile_dims(const cf_int_tuple *tile, int64_t *rows, int64_t *cols, cf_layout_err *e)
{
  const cf_tuple_tree *t = &tile->tree;
  for (int i = 0; i < t->count; i++)
    if (lay_is_underscore(t, i) || (lay_is_leaf(t, i) && t->node[i].v[0] < 1)) {
      lay_fail(e, CF_ERR_INVALID_ARGUMENT, "svg-tv: the tile shape has a '_' or a size below 1");
      return false;
    }
  if (t->count == 0 || lay_rank_at(t, 0) != 2) {
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "svg-tv: the tile must be a shape of rank 2, (M,N)");
    return false;
  }
  *rows = lay_product(t, lay_child(t, 0, 0), 0, e).value;
  *cols = lay_product(t, lay_child(t, 0, 1), 0, e).value;
  int64_t cells;
  if (lay_ok(e) && (__builtin_mul_overflow(*rows, *cols, &cells) || cells > LAY_SVG_MAX_CELLS))
    lay_fail(e, CF_ERR_INVALID_ARGUMENT, "svg-tv: %lld x %lld cells are too many to draw (at "
             "most %d)", (long long)*rows, (long long)*cols, LAY_SVG_MAX_CELLS);
  return lay_ok(e);
}

/* Which (thread, value) lands on each cell of the tile; -1 where none does. */
static bool tv_cells(const cf_layout *tv, int64_t rows, int64_t cols, int64_t *thr, int64_t *val,
                     cf_layout_err *e)
{
  int64_t threads, values;
  if (!grid_dims(&tv->tree, "svg-tv", &threads, &values, e))
    return false;
  for (int64_t k = 0; k < rows * cols; k++)
    thr[k] = val[k] = -1;
  for (int64_t v = 0; v < values && lay_ok(e); v++)
    for (int64_t t = 0; t < threads && lay_ok(e); t++) {
      int64_t idx = 0;
      cf_layout_eval(tv, t + threads * v, &idx, e);
      if (lay_ok(e) && (idx < 0 || idx >= rows * cols)) {
        lay_fail(e, CF_ERR_INVALID_ARGUMENT, "svg-tv: thread %lld, value %lld is at index %lld, "
                 "outside the %lld x %lld tile", (long long)t, (long long)v, (long long)idx,
                 (long long)rows, (long long)cols);
        return false;
      }
      thr[idx] = t;
      val[idx] = v;
    }
  return lay_ok(e);
}

static void draw_tv(LayText *x, const cf_layout *tv, int64_t rows, int64_t cols,
                    const int64_t *thr, const int64_t *val)
{
  char caption[CF_LAYOUT_TEXT_MAX];
  cf_layout_snprint(caption, sizeof caption, tv);
  svg_begin(x, rows, cols, 2 * CELL_H, caption);
  for (int64_t m = 0; m < rows; m++)
    for (int64_t c = 0; c < cols; c++) {
      int64_t k = m + rows * c;
      char t[24], v[24];
      snprintf(t, sizeof t, "T%lld", (long long)thr[k]);
      snprintf(v, sizeof v, "V%lld", (long long)val[k]);
      if (thr[k] < 0)
        svg_cell(x, m, c, 2 * CELL_H, "white", "", NULL);
      else
        svg_cell(x, m, c, 2 * CELL_H, color_of(thr[k]), t, v);
    }
  lay_text_printf(x, "</svg>\n");
}

CF_API cf_status cf_layout_svg_tv(const cf_layout *tv, const cf_int_tuple *tile, char *buf,
                                  size_t n, size_t *len, cf_layout_err *err)
{
  cf_layout_err local, *e = lay_err_begin(err, &local);
  LayText x = {buf, n, 0};
  if (n > 0)
    buf[0] = '\0';
  int64_t rows, cols, *thr = NULL, *val = NULL;
  if (lay_require_layout(&tv->tree, "svg-tv", e) && tile_dims(tile, &rows, &cols, e)) {
    thr = malloc((size_t)(rows * cols) * sizeof *thr);
    val = malloc((size_t)(rows * cols) * sizeof *val);
    if (!thr || !val)
      lay_fail(e, CF_ERR_OUT_OF_MEMORY, "svg-tv: cannot allocate %lld cells",
               (long long)(rows * cols));
    else if (tv_cells(tv, rows, cols, thr, val, e))
      draw_tv(&x, tv, rows, cols, thr, val);
  }
  free(thr);
  free(val);
  return finish(e, &x, len);
}
