/* tools/cmd_picture.c: `cfuser picture`: draws the built-in examples with the picture API
 * (include/cfuser/picture.h), on standard output:
 *   cfuser picture transforms [svg|dot]   the demo fusion's transform graph (default svg)
 *   cfuser picture tmem                   a fusion keeping two tensors in one tensor-memory
 *                                         region: its lane/column map, as SVG
 * The tmem example is nvFuser's tutorial pattern: a [128, 12] float input copied through
 * T2 and T4 in tensor memory (rows on the 128 lanes, the 12 columns split 3 x 4), grouped
 * into one region (24 columns, 32 allocated), one thread per lane. */
#include <cfuser.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"

static int usage(FILE *out) {
  fprintf(out, "usage: cfuser picture transforms [svg|dot]   the demo fusion's transform graph\n"
               "       cfuser picture tmem                   a tensor-memory region's lane/column map (svg)\n");
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

int cf_tool_picture(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) return usage(stdout);
  bool transforms = !strcmp(argv[1], "transforms"), tmem = !strcmp(argv[1], "tmem");
  const char *format = argc > 2 ? argv[2] : "svg";
  if ((!transforms && !tmem) || argc > 3 || (strcmp(format, "svg") && strcmp(format, "dot")) ||
      (tmem && strcmp(format, "svg"))) {
    fprintf(stderr, "cfuser picture: unknown picture '%s%s%s'\n", argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
    return usage(stderr);
  }
  cf_fusion *f = transforms ? cf_tool_demo_fusion() : tmem_example();
  cf_status s = transforms ? cf_fusion_draw_transforms(f, strcmp(format, "dot") ? CF_PICTURE_SVG : CF_PICTURE_DOT, stdout)
                           : cf_fusion_draw_tmem(f, stdout);
  if (s != CF_OK) fprintf(stderr, "cfuser picture: %s\n", cf_fusion_error(f));
  cf_fusion_destroy(f);
  return s == CF_OK ? 0 : 1;
}
