/* tests/fuzz/fuzz_layout.c: a libFuzzer harness for the layout parser and calculator.
 *
 * The input is read two ways. As text, all of it goes to the three parsers (IntTuple,
 * layout, tiler) and, when it parses, back through the printer, whose output must parse
 * to the same value. As a command, the first byte picks an operation of `cfuser layout`
 * and the rest, split at newlines, are its arguments (at most 4): the calculator runs
 * in-process (run with -close_fd_mask=3: its output is thrown away, reports are not). Built and run by tests/fuzz/run_layout_fuzz.sh
 * (clang -fsanitize=fuzzer,address,undefined); any crash, sanitizer report or abort()
 * below is a finding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfuser/layout.h"
#include "tools.h"

static const char *const OPS[] = {
    "print", "size", "cosize", "rank", "depth", "shape", "stride", "table", "crd2idx",
    "idx2crd", "slice", "get", "select", "take", "group", "flatten", "append", "prepend",
    "replace", "make_layout", "make_layout_right", "make_layout_like", "coalesce", "filter", "complement",
    "right_inverse", "left_inverse", "composition", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product",
    "flat_product", "blocked_product", "raked_product", "svg", "svg-tv", "help"};
enum { NOPS = sizeof OPS / sizeof OPS[0], MAX_ARGS = 4 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A printed value parses back to an equal one. */
static void round_trip(const char *text)
{
  cf_layout l, back;
  cf_int_tuple t, tback;
  char buf[CF_LAYOUT_TEXT_MAX];
  if (cf_layout_parse(text, &l, NULL) == CF_OK) {
    cf_layout_snprint(buf, sizeof buf, &l);
    if (cf_layout_parse(buf, &back, NULL) != CF_OK || !cf_layout_equal(&l, &back))
      abort();
  }
  if (cf_layout_parse_tiler(text, &l, NULL) == CF_OK) {
    cf_layout_snprint(buf, sizeof buf, &l);
    if (cf_layout_parse_tiler(buf, &back, NULL) != CF_OK || !cf_layout_equal(&l, &back))
      abort();
  }
  if (cf_tuple_parse(text, &t, NULL) == CF_OK) {
    cf_tuple_snprint(buf, sizeof buf, &t);
    if (cf_tuple_parse(buf, &tback, NULL) != CF_OK || !cf_tuple_equal(&t, &tback))
      abort();
  }
}

static void run_command(const char *text, size_t n, uint8_t pick)
{
  char *copy = malloc(n + 1);
  if (!copy)
    return;
  memcpy(copy, text, n);
  copy[n] = '\0';
  char *argv[2 + MAX_ARGS] = {"layout", (char *)OPS[pick % NOPS]};
  int argc = 2;
  for (char *p = copy; argc < 2 + MAX_ARGS && p;) {
    argv[argc++] = p;
    p = strchr(p, '\n');
    if (p)
      *p++ = '\0';
  }
  if (n == 0)
    argc = 2;
  cf_tool_layout(argc, argv);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  round_trip(text);
  if (size > 0)
    run_command(text + 1, strnlen(text + 1, size - 1), data[0]);
  free(text);
  return 0;
}
