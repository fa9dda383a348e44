/* tools/cmd_picture.c: `cfuser picture`: draws the built-in examples with the picture API
 * (include/cfuser/picture.h), on standard output:
 *   cfuser picture transforms [svg|dot]   the demo fusion's transform graph (default svg)
 *   cfuser picture tmem                   a fusion keeping two tensors in one tensor-memory
 *                                         region: its lane/column map, as SVG
 *   cfuser picture dataflow [svg|dot]     the demo fusion's dataflow (tensors and ops)
 *   cfuser picture segments [svg|dot]     a softmax run by define and run on the host backend:
 *                                         its segments, each its scheduled dataflow
 * The tmem example is nvFuser's tutorial pattern: a [128, 12] float input copied through
 * T2 and T4 in tensor memory (rows on the 128 lanes, the 12 columns split 3 x 4), grouped
 * into one region (24 columns, 32 allocated), one thread per lane. */
#include <cfuser.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"

static int usage(FILE *out) {
  fprintf(out, "usage: cfuser picture transforms [svg|dot]   the demo fusion's transform graph\n"
               "       cfuser picture tmem                   a tensor-memory region's lane/column map (svg)\n"
               "       cfuser picture dataflow [svg|dot]     the demo fusion's dataflow\n"
               "       cfuser picture segments [svg|dot]     a softmax's define-and-run segments\n");
  return out == stderr ? 2 : 0;
}

/* t0 -> t1 -> t2 (tmem) -> t3 -> t4 (tmem) -> t5 -> t6 over [128, 12] floats. */
static cf_fusion *tmem_example(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[7];
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, 12});
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 7; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[6]);
  cf_split(f, tv[6], 1, 4);
  cf_parallelize(f, tv[6], 0, CF_PT_TIDX);
  cf_propagate_transforms(f, tv[6]);
  cf_parallelize_all_like(f, tv[6], 0, NULL);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_set_memory_type(f, tv[4], CF_MEM_TENSOR);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_set_tmem_dim_sep_pos(f, tv[4], 1);
  cf_fusion_group_tmem(f, 2, (cf_tv *[]){tv[2], tv[4]});
  return f;
}

/* softmax over the rows of a [64, 100] input, run once by define and run on the host
 * backend; then its segments are drawn. */
static cf_status draw_segments(cf_picture_format format) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  bool bcast[2] = {false, true};
  cf_tv *m = cf_broadcast(f, cf_max_reduce(f, x, 1, (int[]){1}), 2, bcast);
  cf_tv *ex = cf_exp(f, cf_sub(f, x, m));
  cf_fusion_add_output(f, cf_div(f, ex, cf_broadcast(f, cf_sum(f, ex, 1, (int[]){1}), 2, bcast)));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){64, 100}), *out = NULL;
  cf_tensor_fill_random(&in->dl_tensor, 1);
  const DLTensor *ins[1] = {&in->dl_tensor};
  cf_status s = cf_fusion_execute(c, 1, ins, 1, &out);
  if (!s) s = cf_fusion_cache_draw_segments(c, format, stdout);
  if (s) fprintf(stderr, "cfuser picture: %s\n", cf_fusion_cache_error(c));
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
  return s;
}

int cf_tool_picture(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) return usage(stdout);
  bool transforms = !strcmp(argv[1], "transforms"), tmem = !strcmp(argv[1], "tmem");
  bool dataflow = !strcmp(argv[1], "dataflow"), segments = !strcmp(argv[1], "segments");
  const char *format = argc > 2 ? argv[2] : "svg";
  if ((!transforms && !tmem && !dataflow && !segments) || argc > 3 || (strcmp(format, "svg") && strcmp(format, "dot")) ||
      (tmem && strcmp(format, "svg"))) {
    fprintf(stderr, "cfuser picture: unknown picture '%s%s%s'\n", argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
    return usage(stderr);
  }
  cf_picture_format fmt = strcmp(format, "dot") ? CF_PICTURE_SVG : CF_PICTURE_DOT;
  if (segments) return draw_segments(fmt) == CF_OK ? 0 : 1;
  cf_fusion *f = transforms || dataflow ? cf_tool_demo_fusion() : tmem_example();
  cf_status s = transforms ? cf_fusion_draw_transforms(f, fmt, stdout)
                : dataflow ? cf_fusion_draw_dataflow(f, fmt, stdout)
                           : cf_fusion_draw_tmem(f, stdout);
  if (s != CF_OK) fprintf(stderr, "cfuser picture: %s\n", cf_fusion_error(f));
  cf_fusion_destroy(f);
  return s == CF_OK ? 0 : 1;
}
