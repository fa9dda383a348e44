/* tools/tools.h: the subcommands of the `cfuser` program, one file each. Each takes the
 * arguments after the program name (argv[0] is the subcommand) and returns the exit
 * status: 0 on success, 2 on bad input, 1 on any other failure. */
#ifndef CFUSER_TOOLS_H
#define CFUSER_TOOLS_H

int cf_tool_demo(int argc, char **argv);
int cf_tool_layout(int argc, char **argv);
int cf_tool_picture(int argc, char **argv);
int cf_tool_cache(int argc, char **argv);

/* The demo's fusion, scheduled (the caller destroys it). */
struct cf_fusion *cf_tool_demo_fusion(void);

#endif
