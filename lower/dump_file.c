/* lower/dump_file.c: where CFUSER_DUMP writes: $CFUSER_DUMP_FILE (opened once, appended to,
 * line-buffered, so a dump of a long run can be read while it runs and survives a crash),
 * else standard error. Every dump site (lowering passes, sources, PTX, launches, the
 * define-and-run segments, compile times) writes through lower_dump_out(). A file that
 * cannot be opened falls back to standard error after saying so there once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

static FILE *g_dump;
static pthread_once_t g_dump_once = PTHREAD_ONCE_INIT;

static void open_dump(void) {
  const char *path = getenv("CFUSER_DUMP_FILE");
  g_dump = stderr;
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) {
    fprintf(stderr, "cfuser: warning: CFUSER_DUMP_FILE=%s cannot be opened; dumping to standard error\n", path);
    return;
  }
  setvbuf(f, NULL, _IOLBF, 0);
  g_dump = f;
}

FILE *lower_dump_out(void) {
  pthread_once(&g_dump_once, open_dump);
  return g_dump;
}
