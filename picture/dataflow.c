/* picture/dataflow.c: the dataflow of fusions, tensors and the ops between them, as
 * Graphviz DOT or as SVG laid out here: cf_fusion_draw_dataflow (one fusion) and, through
 * pic_dataflow, the segments of a define-and-run call (picture/segments.c: one panel per
 * segment, each its scheduled fusion).
 *
 * A panel holds the tensor ops reachable from the fusion's outputs (ir_fusion_tensor_exprs)
 * and their tensors: inputs green, outputs blue, intermediates white, ops grey ovals
 * (reductions orange). Layout, for SVG: rows alternate tensors and ops, an op one row below
 * the lowest of its inputs and its outputs one row below it; each node wants to be centered
 * under what it comes from, and each row is swept left to right so that no two overlap.
 * Key decision: nothing but the IR decides the picture (deterministic; tests compare it
 * byte for byte), and the labels are the printed math's (T3, float, logical extents, r for a
 * reduced axis and b for a broadcast one). */
#include <stdlib.h>
#include <string.h>

#include "picture/picture.h"

enum { DF_ROW_PITCH = 46, DF_NODE_H = 26, DF_HEAD = 40, DF_MARGIN = 16, DF_GAP = 16 };

typedef struct DfNode {
  Val *tv;  /* a tensor, or NULL for an op */
  Expr *e;  /* the op, for op nodes */
  int row;
  double x, w, want;
  char *label;
} DfNode;

typedef struct DfPanel {
  cf_fusion *f;
  const char *title;
  DfNode *nodes;
  int n, rows;
  double width;
} DfPanel;

static void tv_label(StrBuf *b, Val *tv) {
  TensorView *t = TV(tv);
  sb_printf(b, "%s %s[", t->display_name, cf_dtype_name(tv->dtype));
  for (int i = 0; i < t->nlogical; i++) {
    cf_iter_type it = ID(t->logical[i])->iter_type;
    sb_puts(b, i ? ", " : "");
    sb_puts(b, it == CF_ITER_REDUCTION ? "r" : it == CF_ITER_BROADCAST ? "b" : ""); /* as the printed math marks them */
    ir_print_scalar(b, ID(t->logical[i])->extent);
  }
  sb_puts(b, "]");
}

static void op_label(StrBuf *b, const Expr *e) {
  sb_puts(b, ir_op_name(e->op));
  if (e->op == OP_CAST) sb_printf(b, " to %s", cf_dtype_name(e->attr.cast.to));
}

static DfNode *tv_node(DfPanel *p, Val *tv) {
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].tv == tv) return &p->nodes[i];
  return NULL;
}

static DfNode *add(DfPanel *p, Val *tv, Expr *e, int row) {
  StrBuf b = {0};
  if (tv) tv_label(&b, tv);
  else op_label(&b, e);
  DfNode *n = &p->nodes[p->n++];
  *n = (DfNode){tv, e, row, 0, 0, 0, sb_take(&b)};
  n->w = (double)strlen(n->label ? n->label : "") * PIC_CHAR_PX + 16;
  if (row + 1 > p->rows) p->rows = row + 1;
  return n;
}

/* The panel's nodes with their rows; false when out of memory. */
static bool build(DfPanel *p) {
  if (!p->f) return (p->nodes = calloc(1, sizeof *p->nodes)) != NULL; /* a panel of its title only */
  int ne = 0;
  Expr **ex = ir_fusion_tensor_exprs(p->f, &ne);
  size_t most = (size_t)p->f->inputs.len + (size_t)p->f->outputs.len;
  for (int i = 0; i < ne; i++) most += 1 + (size_t)ex[i]->nin + (size_t)ex[i]->nout;
  p->nodes = calloc(most + 1, sizeof *p->nodes);
  if (!p->nodes) return false;
  for (int i = 0; i < p->f->inputs.len; i++) add(p, p->f->inputs.items[i], NULL, 0);
  for (int i = 0; i < ne; i++) {
    int row = 0;
    for (int k = 0; k < ex[i]->nin; k++) {
      Val *in = ex[i]->in[k];
      if (in->kind != VAL_TV) continue;
      DfNode *n = tv_node(p, in);
      if (!n) n = add(p, in, NULL, 0);
      if (n->row > row) row = n->row;
    }
    add(p, NULL, ex[i], row + 1);
    for (int k = 0; k < ex[i]->nout; k++)
      if (ex[i]->out[k]->kind == VAL_TV && !tv_node(p, ex[i]->out[k])) add(p, ex[i]->out[k], NULL, row + 2);
  }
  for (int i = 0; i < p->f->outputs.len; i++)
    if (!tv_node(p, p->f->outputs.items[i])) add(p, p->f->outputs.items[i], NULL, 0);
  return true;
}

static double mid(const DfNode *n) { return n->x + n->w / 2; }

static DfNode *op_node(DfPanel *p, const Expr *e) {
  for (int i = 0; i < p->n; i++)
    if (!p->nodes[i].tv && p->nodes[i].e == e) return &p->nodes[i];
  return NULL;
}

/* Where n wants its center: under its inputs (an op), under its op (a tensor), or next in
 * line (a tensor nothing in the panel defines). */
static double wanted(DfPanel *p, DfNode *n, double *next_x) {
  DfNode *src = NULL;
  if (!n->tv) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n->e->nin; i++)
      if ((src = tv_node(p, n->e->in[i]))) s += mid(src), k++;
    if (k) return s / k;
  } else if (n->tv->def && (src = op_node(p, n->tv->def))) {
    int k = 0;
    while (k < n->tv->def->nout && n->tv->def->out[k] != n->tv) k++;
    return mid(src) + (k - (n->tv->def->nout - 1) / 2.0) * (n->w + DF_GAP);
  }
  double c = *next_x + n->w / 2;
  *next_x += n->w + DF_GAP;
  return c;
}

static int by_want(const void *a, const void *b) {
  const DfNode *x = *(DfNode *const *)a, *y = *(DfNode *const *)b;
  return x->want < y->want ? -1 : x->want > y->want;
}

static void place(DfPanel *p) {
  DfNode **row = malloc(sizeof *row * (size_t)(p->n ? p->n : 1));
  if (!row) return;
  double next_x = DF_MARGIN;
  p->width = 420;
  for (int r = 0; r < p->rows; r++) {
    int n = 0;
    for (int i = 0; i < p->n; i++)
      if (p->nodes[i].row == r) row[n++] = &p->nodes[i], p->nodes[i].want = wanted(p, &p->nodes[i], &next_x);
    qsort(row, (size_t)n, sizeof *row, by_want);
    double right = DF_MARGIN - DF_GAP;
    for (int i = 0; i < n; i++) {
      double x = row[i]->want - row[i]->w / 2;
      row[i]->x = x > right + DF_GAP ? x : right + DF_GAP;
      right = row[i]->x + row[i]->w;
    }
    if (right + DF_MARGIN > p->width) p->width = right + DF_MARGIN;
  }
  free(row);
}

static double panel_height(const DfPanel *p) { return DF_HEAD + p->rows * DF_ROW_PITCH + 8; }

static const char *fill_of(DfPanel *p, const DfNode *n) {
  if (!n->tv) return ir_op_is_reduction(n->e->op) ? "#fde7c8" : "#eeeeee";
  if (ir_tv_is_input(p->f, n->tv)) return "#e6f4ea";
  return ir_tv_is_output(p->f, n->tv) ? "#e3ecfd" : "#ffffff";
}

/* ---- SVG ---------------------------------------------------------------------------------- */

static void svg_panel(StrBuf *b, DfPanel *p, double top, double width) {
  pic_rect(b, 6, top + 4, width - 12, panel_height(p) - 8, "#fafafa", "#cccccc", 1, NULL);
  pic_text(b, DF_MARGIN, top + 24, "start", "bold", p->title);
  double y0 = top + DF_HEAD;
  for (int i = 0; i < p->n; i++) { /* edges first: nodes paint over their ends */
    DfNode *n = &p->nodes[i];
    if (n->tv) continue;
    for (int k = 0; k < n->e->nin; k++) {
      DfNode *s = tv_node(p, n->e->in[k]);
      if (s) pic_arrow(b, mid(s), y0 + s->row * DF_ROW_PITCH + DF_NODE_H, mid(n), y0 + n->row * DF_ROW_PITCH);
    }
    for (int k = 0; k < n->e->nout; k++) {
      DfNode *d = tv_node(p, n->e->out[k]);
      if (d) pic_arrow(b, mid(n), y0 + n->row * DF_ROW_PITCH + DF_NODE_H, mid(d), y0 + d->row * DF_ROW_PITCH);
    }
  }
  for (int i = 0; i < p->n; i++) {
    DfNode *n = &p->nodes[i];
    double y = y0 + n->row * DF_ROW_PITCH;
    pic_group_begin(b, n->label);
    pic_rect(b, n->x, y, n->w, DF_NODE_H, fill_of(p, n), n->tv ? "#333333" : "#888888", n->tv ? 1.5 : 1,
             n->tv ? NULL : "4 2");
    pic_text(b, mid(n), y + 17, "middle", n->tv ? "bold" : "normal", n->label);
    pic_group_end(b);
  }
}

static void svg_legend(StrBuf *b, double y) {
  static const struct { const char *fill, *what; } keys[] = {
      {"#e6f4ea", "input"}, {"#e3ecfd", "output"}, {"#ffffff", "intermediate"}, {"#eeeeee", "op"},
      {"#fde7c8", "reduction"}};
  double x = DF_MARGIN;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    pic_rect(b, x, y + 4, 16, 16, keys[i].fill, "#333333", 1, NULL);
    pic_text(b, x + 22, y + 16, "start", "normal", keys[i].what);
    x += 34 + (double)strlen(keys[i].what) * PIC_CHAR_PX;
  }
}

static void draw_svg(StrBuf *b, DfPanel *panels, int n, const char *title) {
  double width = 420, height = 36;
  for (int i = 0; i < n; i++) {
    if (panels[i].width + 12 > width) width = panels[i].width + 12;
    height += panel_height(&panels[i]);
  }
  pic_begin(b, width, height, title);
  svg_legend(b, 6);
  double top = 32;
  for (int i = 0; i < n; i++) {
    svg_panel(b, &panels[i], top, width);
    top += panel_height(&panels[i]);
  }
  pic_end(b);
}

/* ---- DOT ---------------------------------------------------------------------------------- */

static void dot_panel(StrBuf *b, DfPanel *p, int k) {
  sb_printf(b, "  subgraph cluster_%d {\n    label=", k);
  pic_dot_quoted(b, p->title);
  sb_puts(b, ";\n");
  for (int i = 0; i < p->n; i++) {
    DfNode *n = &p->nodes[i];
    sb_printf(b, "    p%d_%c%d [label=", k, n->tv ? 'v' : 'e', n->tv ? n->tv->id : n->e->id);
    pic_dot_quoted(b, n->label);
    sb_printf(b, ", fillcolor=\"%s\"%s];\n", fill_of(p, n), n->tv ? "" : ", shape=ellipse");
  }
  for (int i = 0; i < p->n; i++) {
    DfNode *n = &p->nodes[i];
    if (n->tv) continue;
    for (int j = 0; j < n->e->nin; j++)
      if (tv_node(p, n->e->in[j])) sb_printf(b, "    p%d_v%d -> p%d_e%d;\n", k, n->e->in[j]->id, k, n->e->id);
    for (int j = 0; j < n->e->nout; j++)
      if (tv_node(p, n->e->out[j])) sb_printf(b, "    p%d_e%d -> p%d_v%d;\n", k, n->e->id, k, n->e->out[j]->id);
  }
  sb_puts(b, "  }\n");
}

static void draw_dot(StrBuf *b, DfPanel *panels, int n) {
  sb_puts(b, "digraph dataflow {\n  node [shape=box, style=filled, fontname=\"monospace\"];\n");
  for (int i = 0; i < n; i++) dot_panel(b, &panels[i], i);
  sb_puts(b, "}\n");
}

cf_status pic_dataflow(StrBuf *b, cf_picture_format format, int n, cf_fusion **fusions, const char **titles,
                       const char *title) {
  DfPanel *panels = calloc((size_t)(n ? n : 1), sizeof *panels);
  bool ok = panels != NULL;
  for (int i = 0; i < n && ok; i++) {
    panels[i] = (DfPanel){.f = fusions[i], .title = titles[i]};
    ok = build(&panels[i]);
    if (ok) place(&panels[i]);
  }
  if (ok && format == CF_PICTURE_SVG) draw_svg(b, panels, n, title);
  else if (ok) draw_dot(b, panels, n);
  for (int i = 0; panels && i < n; i++) {
    for (int k = 0; k < panels[i].n; k++) free(panels[i].nodes[k].label);
    free(panels[i].nodes);
  }
  free(panels);
  return ok ? CF_OK : CF_ERR_OUT_OF_MEMORY;
}

cf_status cf_fusion_draw_dataflow(cf_fusion *f, cf_picture_format format, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (format != CF_PICTURE_DOT && format != CF_PICTURE_SVG)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "draw_dataflow: unknown picture format %d (expected "
                    "CF_PICTURE_DOT or CF_PICTURE_SVG)", (int)format);
  if (!out) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "draw_dataflow: out is NULL");
  StrBuf b = {0};
  const char *title = "the fusion";
  cf_status s = pic_dataflow(&b, format, 1, &f, &title, "cfuser: the fusion's dataflow, inputs to outputs");
  if (s) {
    sb_free(&b);
    return ir_error(f, s, "draw_dataflow: out of memory");
  }
  return pic_emit(&b, out);
}
