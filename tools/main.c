/* tools/main.c: the `cfuser` command-line program: dispatches to one subcommand per file
 * (demo, layout, picture, cache). `./cfuser ARGS` at the repository root builds and then runs this. */
#include <stdio.h>
#include <string.h>

#include <cfuser/version.h>

#include "tools.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} commands[] = {
    {"demo", cf_tool_demo, "build, schedule, print and run a small fusion"},
    {"layout", cf_tool_layout, "CuTe layout calculator: cfuser layout OP ARG... (cfuser layout help)"},
    {"picture", cf_tool_picture, "draw an example: cfuser picture transforms|dataflow|segments|tmem [svg|dot] (cfuser picture help)"},
    {"cache", cf_tool_cache, "the kernel cache on disk: cfuser cache info|clear"},
};

static int usage(FILE *out) {
  fprintf(out, "usage: cfuser COMMAND [ARGS]  (cfuser --version: the version)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
  return out == stderr ? 2 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return usage(stdout);
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("cfuser %s\n", cf_version()); /* the library's, which the header's must equal */
    return strcmp(cf_version(), CF_VERSION_STRING) ? 1 : 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "cfuser: unknown command '%s'\n\n", argv[1]);
  return usage(stderr);
}
