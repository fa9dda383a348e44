/* tests/picture/test_pictures.c: the pictures (include/cfuser/picture.h) and `cfuser
 * picture`. The transform graph of a small fusion as DOT, exactly; as SVG, well-formed
 * (parsed by Python's xml.etree) with every axis and transform in it; the tensor-memory
 * map of two tensors sharing a region, well-formed, with each tensor's mapping; a kernel
 * without tensor memory; a bad format. The pictures the README and the TMEM tutorial show
 * (docs/pictures/NAME.svg) must equal what `cfuser picture` draws now:
 * CFUSER_UPDATE_PICTURES=1 rewrites them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

static char *draw(cf_status (*fn)(cf_fusion *, FILE *), cf_fusion *f) { return tu_capture_fusion(fn, f); }

static cf_status transforms_dot(cf_fusion *f, FILE *out) { return cf_fusion_draw_transforms(f, CF_PICTURE_DOT, out); }
static cf_status transforms_svg(cf_fusion *f, FILE *out) { return cf_fusion_draw_transforms(f, CF_PICTURE_SVG, out); }

/* Parses svg with Python's xml.etree; returns "<root tag> <element count>". */
static char *parse_svg(const char *svg) {
  char path[] = "/tmp/cfuser-picture-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *w = fdopen(fd, "w");
  fputs(svg, w);
  fclose(w);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                            "print(r.tag, len(list(r.iter())))' %s 2>&1", path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char *out = calloc(1, 4096);
  size_t n = fread(out, 1, 4095, p);
  out[n] = 0;
  int st = pclose(p);
  unlink(path);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "not well-formed XML: %s", out);
  return out;
}

static void expect_svg(const char *svg) {
  char *parsed = parse_svg(svg);
  cr_expect(!strncmp(parsed, "{http://www.w3.org/2000/svg}svg ", 32), "%s", parsed);
  free(parsed);
}

/* out[8] = in[8] + 1, split by 4, inner on threads. */
static cf_fusion *split_on_threads(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_add_scalar(f, a, 1.0);
  cf_fusion_add_output(f, b);
  cf_split(f, b, 0, 4);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  return f;
}

Test(picture, transforms_as_dot) {
  cf_fusion *f = split_on_threads();
  char *dot = draw(transforms_dot, f);
  cr_expect_str_eq(dot, "digraph transforms {\n"
                        "  node [shape=box, style=filled, fillcolor=\"#ffffff\", fontname=\"monospace\"];\n"
                        "  subgraph cluster_T0 {\n"
                        "    label=\"T0_g_float[iS0{8}]\";\n"
                        "    T0_v1 [label=\"iS0{8}\" + \"\\nloop 0\", penwidth=2, fillcolor=\"#ffffff\"];\n"
                        "  }\n"
                        "  subgraph cluster_T1 {\n"
                        "    label=\"T1_g_float[iS2{2}, ithreadIdx.x3{4}]\";\n"
                        "    T1_v3 [label=\"iS1{8}\"];\n"
                        "    T1_e1 [label=\"split by 4\", shape=ellipse, fillcolor=\"#eeeeee\"];\n"
                        "    T1_v7 [label=\"iS2{2}\" + \"\\nloop 0\", penwidth=2, fillcolor=\"#ffffff\"];\n"
                        "    T1_v8 [label=\"ithreadIdx.x3{4}\" + \"\\nloop 1\", penwidth=2, fillcolor=\"#cfe2ff\"];\n"
                        "    T1_v3 -> T1_e1;\n"
                        "    T1_e1 -> T1_v7;\n"
                        "    T1_e1 -> T1_v8;\n"
                        "  }\n"
                        "}\n");
  /* Where Graphviz is installed (it is optional), it must accept the DOT. */
  FILE *p = popen("if command -v dot >/dev/null; then dot -Tsvg >/dev/null; else cat >/dev/null; fi", "w");
  cr_assert_not_null(p);
  fputs(dot, p);
  cr_expect_eq(pclose(p), 0, "dot -Tsvg rejected the DOT");
  free(dot);
  cf_fusion_destroy(f);
}

Test(picture, transforms_as_svg) {
  cf_fusion *f = split_on_threads();
  char *svg = draw(transforms_svg, f);
  expect_svg(svg);
  const char *want[] = {">T1_g_float[iS2{2}, ithreadIdx.x3{4}]</text>", ">iS1{8}</text>", ">split by 4</text>",
                        ">ithreadIdx.x3{4}</text>", ">loop 1</text>", "fill=\"#cfe2ff\""};
  TU_EXPECT_CONTAINS(svg, want);
  free(svg);
  cf_fusion_destroy(f);
}

Test(picture, an_unknown_format_is_an_error) {
  cf_fusion *f = split_on_threads();
  cr_expect_eq(cf_fusion_draw_transforms(f, (cf_picture_format)7, stdout), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_error(f),
                   "draw_transforms: unknown picture format 7 (expected CF_PICTURE_DOT or CF_PICTURE_SVG)");
  cf_fusion_destroy(f);
}

Test(picture, a_kernel_without_tensor_memory_says_so) {
  cf_fusion *f = split_on_threads();
  char *svg = draw(cf_fusion_draw_tmem, f);
  expect_svg(svg);
  cr_expect(strstr(svg, ">this kernel allocates no tensor memory</text>") != NULL, "%s", svg);
  free(svg);
  cf_fusion_destroy(f);
}

/* [128, 8] floats through T2 and T4 in tensor memory, grouped into one region. */
Test(picture, tmem_map_of_two_tensors_in_one_region) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[7];
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, 8});
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 7; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[6]);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_set_memory_type(f, tv[4], CF_MEM_TENSOR);
  cf_parallelize(f, tv[6], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[6], 0, NULL);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_set_tmem_dim_sep_pos(f, tv[4], 1);
  cf_fusion_group_tmem(f, 2, (cf_tv *[]){tv[2], tv[4]});
  char *svg = draw(cf_fusion_draw_tmem, f);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  expect_svg(svg);
  const char *want[] = {
      ">region 0: 16 of 32 allocated columns used, 128 lanes</text>",
      "<title>T2 (float): lanes 0..127 = ithreadIdx.x4{128}; columns 0..7 = iS5{8} (4-byte elements in "
      "32-bit columns, row-major over the axes)</title>",
      "<title>T4 (float): lanes 0..127 = ithreadIdx.x8{128}; columns 8..15 = iS9{8} (4-byte elements in "
      "32-bit columns, row-major over the axes)</title>",
      ">unused</text>", ">lane 96</text>"};
  TU_EXPECT_CONTAINS(svg, want);
  free(svg);
  cf_fusion_destroy(f);
}

/* Runs `cfuser picture ARGS`; returns its stdout and sets *status. */
static char *cli(const char *args, int *status) {
  const char *bin = getenv("CFUSER_BIN");
  if (!bin) cr_skip_test("CFUSER_BIN is not set");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' picture %s 2>/dev/null", bin, args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 20, n = 0, got;
  char *out = malloc(cap);
  while ((got = fread(out + n, 1, cap - 1 - n, p)) > 0) n += got;
  out[n] = 0;
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

static char *read_file(const char *path) {
  FILE *r = fopen(path, "rb");
  if (!r) return NULL;
  fseek(r, 0, SEEK_END);
  long n = ftell(r);
  rewind(r);
  char *s = calloc(1, (size_t)n + 1);
  if (fread(s, 1, (size_t)n, r) != (size_t)n) s[0] = 0;
  fclose(r);
  return s;
}

/* The README's and the tutorial's picture `name` equals `cfuser picture args`. */
static void expect_fresh(const char *args, const char *name) {
  int status;
  char *now = cli(args, &status);
  cr_assert_eq(status, 0, "cfuser picture %s failed", args);
  expect_svg(now);
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/pictures/%s", getenv("CFUSER_SOURCE_DIR"), name);
  if (getenv("CFUSER_UPDATE_PICTURES")) {
    FILE *w = fopen(path, "w");
    cr_assert_not_null(w, "cannot write %s", path);
    fputs(now, w);
    fclose(w);
  }
  char *committed = read_file(path);
  cr_assert_not_null(committed, "%s is missing: run with CFUSER_UPDATE_PICTURES=1", path);
  cr_expect_str_eq(committed, now, "%s is stale: rerun this test with CFUSER_UPDATE_PICTURES=1", path);
  free(committed);
  free(now);
}

Test(picture_cli, the_readme_pictures_are_fresh) {
  if (!getenv("CFUSER_SOURCE_DIR")) cr_skip_test("CFUSER_SOURCE_DIR is not set");
  expect_fresh("transforms svg", "transforms.svg");
  expect_fresh("tmem", "tmem.svg");
}

Test(picture_cli, dot_and_bad_arguments) {
  int status;
  char *dot = cli("transforms dot", &status);
  cr_expect_eq(status, 0);
  cr_expect(!strncmp(dot, "digraph transforms {\n", 21), "%s", dot);
  free(dot);
  char *none = cli("tmem dot", &status);
  cr_expect_eq(status, 2, "the tensor-memory map is SVG only");
  cr_expect_str_eq(none, "");
  free(none);
  none = cli("graph", &status);
  cr_expect_eq(status, 2);
  free(none);
}
