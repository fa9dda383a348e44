/* picture/svg.c: the SVG writer the pictures share: a document with a white background,
 * a monospace font and an arrowhead marker, and rectangles, lines, arrows, text and
 * groups with tooltips. Key decision: SVG is written directly (no Graphviz or other
 * library at run time), and every piece of text goes through pic_escape, so a picture is
 * always well-formed XML whatever the names in it. */
#include "picture/picture.h"

#include <string.h>

void pic_escape(StrBuf *b, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': sb_puts(b, "&amp;"); break;
    case '<': sb_puts(b, "&lt;"); break;
    case '>': sb_puts(b, "&gt;"); break;
    case '"': sb_puts(b, "&quot;"); break;
    default: sb_printf(b, "%c", *s); break;
    }
  }
}

void pic_begin(StrBuf *b, double width, double height, const char *title) {
  sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\" font-size=\"%d\">\n",
            width, height, width, height, PIC_FONT_PX);
  sb_puts(b, "<title>");
  pic_escape(b, title);
  sb_puts(b, "</title>\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
             "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" "
             "fill=\"#555\"/></marker></defs>\n");
  sb_printf(b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
}

void pic_end(StrBuf *b) { sb_puts(b, "</svg>\n"); }

void pic_rect(StrBuf *b, double x, double y, double w, double h, const char *fill, const char *stroke,
              double stroke_width, const char *dash) {
  sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"3\" fill=\"%s\" stroke=\"%s\" "
               "stroke-width=\"%.1f\"",
            x, y, w, h, fill, stroke, stroke_width);
  if (dash) sb_printf(b, " stroke-dasharray=\"%s\"", dash);
  sb_puts(b, "/>\n");
}

void pic_line(StrBuf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
              const char *dash) {
  sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"", x1, y1,
            x2, y2, stroke, width);
  if (dash) sb_printf(b, " stroke-dasharray=\"%s\"", dash);
  sb_puts(b, "/>\n");
}

void pic_arrow(StrBuf *b, double x1, double y1, double x2, double y2) {
  sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"1.2\" "
               "marker-end=\"url(#arrow)\"/>\n",
            x1, y1, x2, y2);
}

void pic_text(StrBuf *b, double x, double y, const char *anchor, const char *weight, const char *text) {
  sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-weight=\"%s\">", x, y, anchor, weight);
  pic_escape(b, text);
  sb_puts(b, "</text>\n");
}

void pic_group_begin(StrBuf *b, const char *title) {
  sb_puts(b, "<g><title>");
  pic_escape(b, title);
  sb_puts(b, "</title>\n");
}

void pic_group_end(StrBuf *b) { sb_puts(b, "</g>\n"); }

const char *pic_ptype_fill(cf_parallel_type p) {
  if (ir_ptype_is_thread(p)) return "#cfe2ff";
  if (ir_ptype_is_block(p)) return "#d3f2d3";
  if (p == CF_PT_VECTORIZE) return "#ffe0b3";
  if (p == CF_PT_UNROLL) return "#fff3b0";
  if (p == CF_PT_UNSWITCH) return "#e8f5c8";
  if (p != CF_PT_SERIAL) return "#f0d6f0"; /* device */
  return "#ffffff";
}

cf_status pic_emit(StrBuf *b, FILE *out) {
  if (!out) {
    sb_free(b);
    return CF_ERR_INVALID_ARGUMENT;
  }
  if (b->len) fwrite(b->data, 1, b->len, out);
  sb_free(b);
  return CF_OK;
}

void pic_dot_quoted(StrBuf *b, const char *s) {
  sb_puts(b, "\"");
  for (; s && *s; s++) sb_printf(b, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
  sb_puts(b, "\"");
}
