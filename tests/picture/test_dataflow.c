/* tests/picture/test_dataflow.c: the dataflow pictures (include/cfuser/picture.h). A small
 * fusion's dataflow as DOT, exactly, and as SVG (well-formed, parsed by Python's
 * xml.etree, every tensor and op in it); the segments of a define-and-run call, one panel
 * per segment titled with its scheduler and its tensors; asking before any call is an
 * error with a message; a bad format. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

static cf_status dataflow_dot(cf_fusion *f, FILE *out) { return cf_fusion_draw_dataflow(f, CF_PICTURE_DOT, out); }
static cf_status dataflow_svg(cf_fusion *f, FILE *out) { return cf_fusion_draw_dataflow(f, CF_PICTURE_SVG, out); }

/* T0[4, 8] -> exp -> T1; sum over axis 1 -> T2 (out); T0 + 1 -> T3 (out). */
static cf_fusion *small(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_fusion_add_input(f, a);
  cf_tv *e = cf_exp(f, a);
  cf_fusion_add_output(f, cf_sum(f, e, 1, (int[]){1}));
  cf_fusion_add_output(f, cf_add_scalar(f, a, 1.0));
  return f;
}

Test(dataflow, a_small_fusion_as_dot) {
  cf_fusion *f = small();
  char *dot = tu_capture_fusion(dataflow_dot, f);
  cr_expect_str_eq(dot,
                   "digraph dataflow {\n  node [shape=box, style=filled, fontname=\"monospace\"];\n"
                   "  subgraph cluster_0 {\n    label=\"the fusion\";\n"
                   "    p0_v4 [label=\"T0 float[4, 8]\", fillcolor=\"#e6f4ea\"];\n"
                   "    p0_e0 [label=\"exp\", fillcolor=\"#eeeeee\", shape=ellipse];\n"
                   "    p0_v7 [label=\"T1 float[4, 8]\", fillcolor=\"#ffffff\"];\n"
                   "    p0_e1 [label=\"sum\", fillcolor=\"#fde7c8\", shape=ellipse];\n"
                   "    p0_v10 [label=\"T2 float[4, r8]\", fillcolor=\"#e3ecfd\"];\n"
                   "    p0_e2 [label=\"add\", fillcolor=\"#eeeeee\", shape=ellipse];\n"
                   "    p0_v13 [label=\"T3 float[4, 8]\", fillcolor=\"#e3ecfd\"];\n"
                   "    p0_v4 -> p0_e0;\n    p0_e0 -> p0_v7;\n    p0_v7 -> p0_e1;\n    p0_e1 -> p0_v10;\n"
                   "    p0_v4 -> p0_e2;\n    p0_e2 -> p0_v13;\n  }\n}\n");
  free(dot);
  cf_fusion_destroy(f);
}

Test(dataflow, a_small_fusion_as_svg) {
  cf_fusion *f = small();
  char *svg = tu_capture_fusion(dataflow_svg, f);
  cr_expect(!strncmp(svg, "<svg ", 5) || !strncmp(svg, "<?xml", 5), "%.80s", svg);
  cr_expect_not_null(strstr(svg, "</svg>"));
  static const char *const texts[] = {">T0 float[4, 8]<", ">exp<", ">T1 float[4, 8]<", ">sum<", ">T2 float[4, r8]<",
                                      ">add<", ">T3 float[4, 8]<", ">reduction<"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) cr_expect_not_null(strstr(svg, texts[i]), "%s", texts[i]);
  char path[] = "/tmp/cfuser-dataflow-XXXXXX";
  int fd = mkstemp(path);
  FILE *w = fdopen(fd, "w");
  fputs(svg, w);
  fclose(w);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' %s", path);
  int st = system(cmd);
  unlink(path);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "well-formed XML");
  free(svg);
  cf_fusion_destroy(f);
}

Test(dataflow, the_segments_of_a_define_and_run_call) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x);
  cf_fusion_add_output(f, cf_relu(f, cf_mul_scalar(f, x, 2.0)));
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  char *text = NULL;
  size_t n = 0;
  FILE *out = open_memstream(&text, &n);
  cr_expect_eq(cf_fusion_cache_draw_segments(c, CF_PICTURE_DOT, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "draw_segments: no call has run yet (call cf_fusion_execute first)");
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){8, 16}), *o = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_fusion_execute(c, 1, ins, 1, &o), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_expect_eq(cf_fusion_cache_draw_segments(c, 7, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_eq(cf_fusion_cache_draw_segments(c, CF_PICTURE_DOT, out), CF_OK, "%s", cf_fusion_cache_error(c));
  fclose(out);
  cr_expect_not_null(strstr(text, "label=\"segment 0: pointwise; reads input 0; writes output 0\";"), "%s", text);
  cr_expect_not_null(strstr(text, "[label=\"mul\""), "%s", text);
  cr_expect_not_null(strstr(text, "[label=\"relu\""), "%s", text);
  free(text);
  cf_tensor_free(in);
  cf_tensor_free(o);
  cf_fusion_cache_destroy(c);
  cf_fusion_destroy(f);
}

Test(dataflow, a_bad_format_is_refused) {
  cf_fusion *f = small();
  cr_expect_eq(cf_fusion_draw_dataflow(f, 5, stdout), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f),
                   "draw_dataflow: unknown picture format 5 (expected CF_PICTURE_DOT or CF_PICTURE_SVG)");
  cf_fusion_destroy(f);
}
