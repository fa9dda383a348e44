/* picture/picture.h: the pictures' shared SVG writer (internal header).
 *
 * The pictures (picture/transforms.c: a fusion's transform graph as Graphviz DOT and SVG;
 * picture/tmem_map.c: a kernel's tensor-memory regions as a lane/column map) write SVG
 * themselves through these few helpers, so nothing is needed at run time to draw them.
 * Text is XML-escaped here and nowhere else. Coordinates are in pixels. */
#ifndef CFUSER_PICTURE_H
#define CFUSER_PICTURE_H

#include "cfuser/picture.h"
#include "ir/ir.h"

enum { PIC_FONT_PX = 12 };
#define PIC_CHAR_PX 7.3 /* the width of one character of the monospace font */

/* An SVG document being written into a StrBuf. */
void pic_begin(StrBuf *b, double width, double height, const char *title);
void pic_end(StrBuf *b);
/* A rectangle; fill/stroke are CSS colors ("none" allowed); dash NULL for solid. */
void pic_rect(StrBuf *b, double x, double y, double w, double h, const char *fill, const char *stroke,
              double stroke_width, const char *dash);
void pic_line(StrBuf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
              const char *dash);
/* An arrow from (x1, y1) to (x2, y2), its head at the end. */
void pic_arrow(StrBuf *b, double x1, double y1, double x2, double y2);
/* Text; anchor is "start", "middle" or "end"; weight "normal" or "bold". */
void pic_text(StrBuf *b, double x, double y, const char *anchor, const char *weight, const char *text);
/* A <title> (a tooltip) for the element opened by pic_group_begin. */
void pic_group_begin(StrBuf *b, const char *title);
void pic_group_end(StrBuf *b);
/* Appends s as a DOT string: in double quotes, " and \ escaped (NULL: ""). */
void pic_dot_quoted(StrBuf *b, const char *s);
/* Appends s with &, <, >, " escaped. */
void pic_escape(StrBuf *b, const char *s);
/* The fill color of an IterDomain of parallel type p (one helper beside the table). */
const char *pic_ptype_fill(cf_parallel_type p);
/* The dataflow of n fusions, one panel each under its title (picture/dataflow.c); a NULL
 * fusion is a panel of its title only. CF_ERR_OUT_OF_MEMORY (b partly written) or CF_OK. */
cf_status pic_dataflow(StrBuf *b, cf_picture_format format, int n, cf_fusion **fusions, const char **titles,
                       const char *title);
/* Writes b to out (or fails when out is NULL) and frees it. */
cf_status pic_emit(StrBuf *b, FILE *out);

#endif
