/* cfuser/picture.h: pictures of a fusion, for people who would rather look than read.
 *
 * cf_fusion_draw_transforms draws every TensorView's transform graph: its logical (root)
 * axes at the top, each split, merge and swizzle below the axes it consumes, down to the
 * loop domain, whose axes are outlined and colored by parallel type (threads blue, blocks
 * green, vectorize orange, unroll yellow, devices violet). As Graphviz DOT (render it
 * with `dot -Tsvg`) or as SVG written directly (no Graphviz needed).
 *
 * cf_fusion_draw_tmem lowers the fusion (like cf_fusion_print_kernel) and draws each
 * tensor-memory region as a map of its 128 lanes by its allocated 32-bit columns: which
 * tensor lives where, which index of which lane and column axis each band of lanes and
 * columns holds, and the columns allocated but unused. Each tensor's box carries a
 * tooltip with the whole mapping. A kernel without tensor memory gives a picture saying
 * so.
 *
 * cf_fusion_draw_dataflow draws the fusion's dataflow: its tensors (inputs green, outputs
 * blue) and the ops between them (reductions orange), inputs at the top.
 * cf_fusion_cache_draw_segments draws the segments of the last cf_fusion_execute call of
 * a define-and-run cache, in the order they run: each its scheduled fusion's dataflow,
 * titled with the scheduler that took it and the tensors it reads and writes (the call's
 * inputs and outputs, or intermediates). These functions only read what they draw. */
#ifndef CFUSER_PICTURE_H_PUBLIC
#define CFUSER_PICTURE_H_PUBLIC

#include <stdio.h>

#include "execute.h"
#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_picture_format {
  CF_PICTURE_DOT = 0, /* Graphviz DOT text */
  CF_PICTURE_SVG = 1  /* an SVG document */
} cf_picture_format;

CF_API cf_status cf_fusion_draw_transforms(cf_fusion *f, cf_picture_format format, FILE *out);
CF_API cf_status cf_fusion_draw_tmem(cf_fusion *f, FILE *out);
CF_API cf_status cf_fusion_draw_dataflow(cf_fusion *f, cf_picture_format format, FILE *out);
/* CF_ERR_INVALID_ARGUMENT (message on c) when no call has run yet. */
CF_API cf_status cf_fusion_cache_draw_segments(cf_fusion_cache *c, cf_picture_format format, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
