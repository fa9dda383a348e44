/* picture/transforms.c: cf_fusion_draw_transforms: every TensorView's transform graph,
 * from its root (logical) axes through its splits, merges and swizzles to its loop
 * domain, as Graphviz DOT or as SVG laid out here.
 *
 * The graph of one tensor is read from the IR as cf_fusion_print_transforms reads it
 * (ir_tv_history). Layout, for SVG: one panel per tensor, in topological order, stacked
 * top to bottom. Inside a panel, rows alternate between axes and transforms: the root
 * axes form row 0, a transform sits one row below the lowest of its inputs and its
 * outputs one row below it. Each node wants to be centered under what it comes from (a
 * transform under the mean of its inputs, outputs spread under their transform); each
 * row is then swept left to right so that no two nodes overlap. Key decision: nothing
 * but the IR decides the picture, so it is deterministic and tests can compare it
 * byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "picture/picture.h"

enum { ROW_PITCH = 44, NODE_H = 24, PANEL_HEAD = 44, MARGIN = 16, GAP = 14 };

typedef struct Node {
  Val *id;       /* an axis, or NULL for a transform */
  Expr *e;       /* the transform, for transform nodes */
  int row;
  double x, w;   /* left edge and width */
  char *label;
} Node;

typedef struct Panel {
  Val *tv;
  Node *nodes;
  int n, rows;
  double width;
} Panel;

/* The panel's nodes are allocated once, for the most it can have (build_panel). */
static Node *add_node(Panel *p, Val *id, Expr *e, int row, StrBuf *label) {
  Node *n = &p->nodes[p->n++];
  *n = (Node){id, e, row, 0, 0, sb_take(label)};
  n->w = (double)strlen(n->label) * PIC_CHAR_PX + 14;
  if (row + 1 > p->rows) p->rows = row + 1;
  return n;
}

static Node *find_id(Panel *p, const Val *id) {
  for (int i = 0; i < p->n; i++)
    if (p->nodes[i].id == id) return &p->nodes[i];
  return NULL;
}

static Node *find_expr(Panel *p, const Expr *e) {
  for (int i = 0; i < p->n; i++)
    if (!p->nodes[i].id && p->nodes[i].e == e) return &p->nodes[i];
  return NULL;
}

static Node *id_node(Panel *p, Val *id, int row) {
  Node *n = find_id(p, id);
  if (n) return n;
  StrBuf b = {0};
  ir_print_id(&b, id);
  return add_node(p, id, NULL, row, &b);
}

static void expr_label(StrBuf *b, const Expr *e) {
  if (e->op == OP_SPLIT) {
    sb_puts(b, e->attr.split.inner ? "split by " : "outer split by ");
    ir_print_scalar(b, e->attr.split.factor);
  } else {
    sb_puts(b, e->op == OP_MERGE ? "merge" : e->op == OP_SWIZZLE ? "swizzle xor" : ir_op_name(e->op));
  }
}

/* The nodes of tv's graph, with rows (positions come later); false when out of memory. */
static bool build_panel(cf_fusion *f, Val *tv, Panel *p) {
  TensorView *t = TV(tv);
  p->tv = tv;
  int nh;
  Expr **hist = ir_tv_history(f, tv, &nh);
  int most = t->nroot + t->nlogical + t->nloop;
  for (int i = 0; i < nh; i++) most += 1 + hist[i]->nin + hist[i]->nout;
  p->nodes = calloc((size_t)most + 1, sizeof *p->nodes);
  if (!p->nodes) return false;
  for (int i = 0; i < t->nroot; i++) id_node(p, t->root[i], 0);
  for (int i = 0; i < nh; i++) {
    int row = 0;
    for (int k = 0; k < hist[i]->nin; k++) {
      Node *in = id_node(p, hist[i]->in[k], 0);
      if (in->row > row) row = in->row;
    }
    StrBuf b = {0};
    expr_label(&b, hist[i]);
    add_node(p, NULL, hist[i], row + 1, &b);
    for (int k = 0; k < hist[i]->nout; k++) id_node(p, hist[i]->out[k], row + 2);
  }
  for (int i = 0; i < t->nlogical; i++) id_node(p, t->logical[i], 0);
  for (int i = 0; i < t->nloop; i++) id_node(p, t->loop[i], 0);
  return true;
}

static double center(const Node *n) { return n->x + n->w / 2; }

/* Where node n would like its center, given the rows above it (already placed). */
static double wanted_center(Panel *p, Node *n, double *next_root_x) {
  if (!n->id) {
    double s = 0;
    for (int k = 0; k < n->e->nin; k++) s += center(find_id(p, n->e->in[k]));
    return s / n->e->nin;
  }
  Expr *def = n->id->def;
  Node *en = def && n->row > 0 ? find_expr(p, def) : NULL;
  if (!en) {
    double c = *next_root_x + n->w / 2;
    *next_root_x += n->w + GAP;
    return c;
  }
  int k = 0;
  while (k < def->nout && def->out[k] != n->id) k++;
  if (def->nout == 1) return center(en);
  double half = (n->w + GAP) / 2;
  return center(en) + (k == 0 ? -half : half);
}

static int by_x(const void *a, const void *b) {
  const Node *x = *(Node *const *)a, *y = *(Node *const *)b;
  return x->x < y->x ? -1 : x->x > y->x ? 1 : 0;
}

/* Places every row: wanted centers, then a left-to-right sweep against overlaps. */
static void place(Panel *p) {
  Node **row = malloc(sizeof *row * (size_t)(p->n ? p->n : 1));
  if (!row) return; /* left unplaced: overlapping, but drawn */
  double root_x = MARGIN, min_x = MARGIN;
  for (int r = 0; r < p->rows; r++) {
    int n = 0;
    for (int i = 0; i < p->n; i++)
      if (p->nodes[i].row == r) {
        p->nodes[i].x = wanted_center(p, &p->nodes[i], &root_x) - p->nodes[i].w / 2;
        row[n++] = &p->nodes[i];
      }
    qsort(row, (size_t)n, sizeof *row, by_x);
    for (int i = 1; i < n; i++)
      if (row[i]->x < row[i - 1]->x + row[i - 1]->w + GAP) row[i]->x = row[i - 1]->x + row[i - 1]->w + GAP;
    if (n && row[0]->x < min_x) min_x = row[0]->x;
  }
  free(row);
  p->width = 0;
  for (int i = 0; i < p->n; i++) {
    p->nodes[i].x += MARGIN - min_x;
    if (p->nodes[i].x + p->nodes[i].w + MARGIN > p->width) p->width = p->nodes[i].x + p->nodes[i].w + MARGIN;
  }
}

static int loop_position(const TensorView *t, const Val *id) {
  for (int i = 0; i < t->nloop; i++)
    if (t->loop[i] == id) return i;
  return -1;
}

static void free_panel(Panel *p) {
  for (int i = 0; i < p->n; i++) free(p->nodes[i].label);
  free(p->nodes);
}

/* ---- SVG ------------------------------------------------------------------------------- */

static void svg_node(StrBuf *b, const Panel *p, const Node *n, double top) {
  double y = top + PANEL_HEAD + n->row * ROW_PITCH;
  if (!n->id) {
    pic_rect(b, n->x, y + 2, n->w, NODE_H - 4, "#eeeeee", "#999999", 1, NULL);
    pic_text(b, center(n), y + NODE_H / 2.0 + 4, "middle", "normal", n->label);
    return;
  }
  int pos = loop_position(TV(p->tv), n->id);
  const char *fill = pos >= 0 ? pic_ptype_fill(ID(n->id)->ptype) : "#ffffff";
  pic_rect(b, n->x, y, n->w, NODE_H, fill, pos >= 0 ? "#222222" : "#888888", pos >= 0 ? 2 : 1, NULL);
  pic_text(b, center(n), y + NODE_H / 2.0 + 4, "middle", pos >= 0 ? "bold" : "normal", n->label);
  if (pos >= 0) {
    char tag[32];
    snprintf(tag, sizeof tag, "loop %d", pos);
    pic_text(b, center(n), y + NODE_H + 12, "middle", "normal", tag);
  }
}

static void svg_edges(StrBuf *b, Panel *p, const Node *n, double top) {
  if (n->id) return;
  double y = top + PANEL_HEAD + n->row * ROW_PITCH;
  for (int k = 0; k < n->e->nin; k++) {
    Node *in = find_id(p, n->e->in[k]);
    double iy = top + PANEL_HEAD + in->row * ROW_PITCH + NODE_H;
    pic_arrow(b, center(in), iy + (loop_position(TV(p->tv), in->id) >= 0 ? 14 : 0), center(n), y + 2);
  }
  for (int k = 0; k < n->e->nout; k++) {
    Node *out = find_id(p, n->e->out[k]);
    pic_arrow(b, center(n), y + NODE_H - 2, center(out), top + PANEL_HEAD + out->row * ROW_PITCH);
  }
}

static double panel_height(const Panel *p) { return PANEL_HEAD + p->rows * ROW_PITCH + 24; }

static void svg_panel(StrBuf *b, Panel *p, double top, double width) {
  StrBuf head = {0};
  ir_print_tv(&head, p->tv);
  pic_rect(b, 6, top + 4, width - 12, panel_height(p) - 8, "#fafafa", "#cccccc", 1, NULL);
  pic_text(b, MARGIN, top + 24, "start", "bold", head.data);
  sb_free(&head);
  for (int i = 0; i < p->n; i++) svg_edges(b, p, &p->nodes[i], top);
  for (int i = 0; i < p->n; i++) svg_node(b, p, &p->nodes[i], top);
}

static void svg_legend(StrBuf *b, double y) {
  static const struct { cf_parallel_type p; const char *what; } keys[] = {
      {CF_PT_SERIAL, "serial"}, {CF_PT_TIDX, "threadIdx"}, {CF_PT_BIDX, "blockIdx"},
      {CF_PT_VECTORIZE, "vectorize"}, {CF_PT_UNROLL, "unroll"}, {CF_PT_DIDX, "deviceIdx"}};
  double x = MARGIN;
  pic_text(b, x, y + 16, "start", "normal", "loop axes (bold):");
  x += 18 * PIC_CHAR_PX;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    pic_rect(b, x, y + 4, 16, 16, pic_ptype_fill(keys[i].p), "#222222", 2, NULL);
    pic_text(b, x + 22, y + 16, "start", "normal", keys[i].what);
    x += 34 + (double)strlen(keys[i].what) * PIC_CHAR_PX;
  }
}

static void draw_svg(StrBuf *b, Panel *panels, int n) {
  double width = 760, height = 40;
  for (int i = 0; i < n; i++) {
    if (panels[i].width + 12 > width) width = panels[i].width + 12;
    height += panel_height(&panels[i]);
  }
  pic_begin(b, width, height, "cfuser: transforms of every TensorView, logical axes to loop domain");
  svg_legend(b, 6);
  double top = 36;
  for (int i = 0; i < n; i++) {
    svg_panel(b, &panels[i], top, width);
    top += panel_height(&panels[i]);
  }
  pic_end(b);
}

/* ---- DOT ------------------------------------------------------------------------------- */

static void dot_panel(StrBuf *b, Panel *p) {
  const char *tv = TV(p->tv)->display_name;
  StrBuf head = {0};
  ir_print_tv(&head, p->tv);
  sb_printf(b, "  subgraph cluster_%s {\n    label=", tv);
  pic_dot_quoted(b, head.data);
  sb_puts(b, ";\n");
  sb_free(&head);
  for (int i = 0; i < p->n; i++) {
    const Node *n = &p->nodes[i];
    if (!n->id) {
      sb_printf(b, "    %s_e%d [label=", tv, n->e->id);
      pic_dot_quoted(b, n->label);
      sb_puts(b, ", shape=ellipse, fillcolor=\"#eeeeee\"];\n");
      continue;
    }
    int pos = loop_position(TV(p->tv), n->id);
    sb_printf(b, "    %s_v%d [label=", tv, n->id->id);
    pic_dot_quoted(b, n->label);
    if (pos >= 0) /* DOT's \n: a second line */
      sb_printf(b, " + \"\\nloop %d\", penwidth=2, fillcolor=\"%s\"", pos, pic_ptype_fill(ID(n->id)->ptype));
    sb_puts(b, "];\n");
  }
  for (int i = 0; i < p->n; i++) {
    const Node *n = &p->nodes[i];
    if (n->id) continue;
    for (int k = 0; k < n->e->nin; k++) sb_printf(b, "    %s_v%d -> %s_e%d;\n", tv, n->e->in[k]->id, tv, n->e->id);
    for (int k = 0; k < n->e->nout; k++)
      sb_printf(b, "    %s_e%d -> %s_v%d;\n", tv, n->e->id, tv, n->e->out[k]->id);
  }
  sb_puts(b, "  }\n");
}

static void draw_dot(StrBuf *b, Panel *panels, int n) {
  sb_puts(b, "digraph transforms {\n  node [shape=box, style=filled, fillcolor=\"#ffffff\", "
             "fontname=\"monospace\"];\n");
  for (int i = 0; i < n; i++) dot_panel(b, &panels[i]);
  sb_puts(b, "}\n");
}

cf_status cf_fusion_draw_transforms(cf_fusion *f, cf_picture_format format, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (format != CF_PICTURE_DOT && format != CF_PICTURE_SVG)
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "draw_transforms: unknown picture format %d (expected "
                    "CF_PICTURE_DOT or CF_PICTURE_SVG)", (int)format);
  if (!out) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "draw_transforms: out is NULL");
  int n;
  Val **tvs = ir_fusion_all_tvs(f, &n);
  Panel *panels = calloc((size_t)(n ? n : 1), sizeof *panels);
  if (!panels) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "draw_transforms: out of memory");
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    ok = build_panel(f, tvs[i], &panels[i]);
    if (ok) place(&panels[i]);
  }
  StrBuf b = {0};
  if (!ok) {
    for (int i = 0; i < n; i++) free_panel(&panels[i]);
    free(panels);
    return ir_error(f, CF_ERR_OUT_OF_MEMORY, "draw_transforms: out of memory");
  }
  if (format == CF_PICTURE_SVG) draw_svg(&b, panels, n);
  else draw_dot(&b, panels, n);
  for (int i = 0; i < n; i++) free_panel(&panels[i]);
  free(panels);
  return pic_emit(&b, out);
}
