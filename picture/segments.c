/* picture/segments.c: cf_fusion_cache_draw_segments: the segments of a define-and-run
 * call (include/cfuser/execute.h), one dataflow panel each (picture/dataflow.c), in the
 * order they run. A panel's title says which scheduler took the segment and where its
 * tensors come from and go: the call's inputs and outputs, or intermediates an earlier
 * segment wrote. A view segment (a reshape run as a pointer) has no kernel and no
 * fusion: its panel is its title. Reads the cache's last plan (executor/fusion_cache.h);
 * the picture module sits above the executor for this one call. */
#include <stdlib.h>

#include "executor/fusion_cache.h"
#include "picture/picture.h"

/* "input 0", "output 1" or "intermediate 2" for a segment's tensor reference. */
static void ref_name(StrBuf *b, int ref, int nin, int nout) {
  if (ref < nin) sb_printf(b, "input %d", ref);
  else if (ref < nin + nout) sb_printf(b, "output %d", ref - nin);
  else sb_printf(b, "intermediate %d", ref - nin - nout);
}

static char *segment_title(const FcSegment *s, int i, int nin, int nout) {
  StrBuf b = {0};
  sb_printf(&b, "segment %d: %s; reads ", i, s->e ? s->plan.row->name : "a view (no kernel)");
  for (int k = 0; k < s->nin; k++) {
    if (k) sb_puts(&b, ", ");
    ref_name(&b, s->in_ref[k], nin, nout);
  }
  sb_puts(&b, "; writes ");
  for (int k = 0; k < s->nout; k++) {
    if (k) sb_puts(&b, ", ");
    ref_name(&b, s->out_ref[k], nin, nout);
  }
  return sb_take(&b);
}

cf_status cf_fusion_cache_draw_segments(cf_fusion_cache *c, cf_picture_format format, FILE *out) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  if (format != CF_PICTURE_DOT && format != CF_PICTURE_SVG)
    return fc_error(c, CF_ERR_INVALID_ARGUMENT, "draw_segments: unknown picture format %d (expected "
                    "CF_PICTURE_DOT or CF_PICTURE_SVG)", (int)format);
  if (!out) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "draw_segments: out is NULL");
  const FcEntry *en = c->last;
  if (!en) return fc_error(c, CF_ERR_INVALID_ARGUMENT, "draw_segments: no call has run yet (call cf_fusion_execute first)");
  int n = en->nseg, nin = c->f->inputs.len, nout = c->f->outputs.len;
  cf_fusion **fs = calloc((size_t)n + 1, sizeof *fs);
  char **titles = calloc((size_t)n + 1, sizeof *titles);
  bool ok = fs && titles;
  for (int i = 0; ok && i < n; i++) {
    fs[i] = en->seg[i].k ? en->seg[i].k->scheduled : NULL;
    ok = (titles[i] = segment_title(&en->seg[i], i, nin, nout)) != NULL;
  }
  StrBuf b = {0};
  cf_status s = ok ? pic_dataflow(&b, format, n, fs, (const char **)titles,
                                  "cfuser: the segments of the last call, in the order they run")
                   : CF_ERR_OUT_OF_MEMORY;
  for (int i = 0; titles && i < n; i++) free(titles[i]);
  free(titles);
  free(fs);
  if (s) {
    sb_free(&b);
    return fc_error(c, s, "draw_segments: out of memory");
  }
  return pic_emit(&b, out);
}
