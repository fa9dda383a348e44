/* tools/cmd_cache.c: `cfuser cache info` and `cfuser cache clear`: what the on-disk kernel
 * cache holds and how big it may grow, and emptying it (include/cfuser/cache.h).
 * `info` prints one "name: value" line each, for people and for scripts alike. */
#include <cfuser.h>
#include <stdio.h>
#include <string.h>

#include "tools.h"

static int usage(FILE *out) {
  fprintf(out, "usage: cfuser cache info    the cache directory, its entries, size and cap\n"
               "       cfuser cache clear   remove every cached kernel\n"
               "The cap is $CFUSER_CACHE_MAX_SIZE (bytes, or 500M, 2G; default 1G; 0: none); the\n"
               "directory $CFUSER_CACHE_DIR (default $XDG_CACHE_HOME/cfuser, else ~/.cache/cfuser).\n");
  return out == stderr ? 2 : 0;
}

/* Bytes as "12.3 MiB". */
static void human(char *out, size_t len, int64_t bytes) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = (double)bytes;
  int u = 0;
  while (x >= 1024 && u < 4) x /= 1024, u++;
  snprintf(out, len, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
}

static int info(void) {
  cf_disk_cache_stats s;
  char err[4800], size[32], cap[32];
  if (cf_disk_cache_stat(&s, err, sizeof err) != CF_OK) {
    fprintf(stderr, "cfuser cache: %s\n", err);
    return 1;
  }
  human(size, sizeof size, s.bytes);
  human(cap, sizeof cap, s.cap_bytes);
  printf("directory: %s\n", s.dir);
  printf("enabled: %s\n", s.enabled ? "yes" : "no (CFUSER_CACHE=0)");
  printf("host kernels: %lld\n", (long long)s.host_kernels);
  printf("host runtime objects: %lld\n", (long long)s.host_runtimes);
  printf("cubins: %lld\n", (long long)s.cubins);
  printf("entries of an older cfuser: %lld\n", (long long)s.old_entries);
  printf("temporaries: %lld\n", (long long)s.temporaries);
  printf("size: %s (%lld bytes)\n", size, (long long)s.bytes);
  if (s.cap_bytes > 0) printf("cap: %s (%lld bytes)\n", cap, (long long)s.cap_bytes);
  else printf("cap: none\n");
  return 0;
}

static int clear(void) {
  int64_t removed = 0;
  char err[4800];
  cf_disk_cache_stats s;
  if (cf_disk_cache_clear(&removed, err, sizeof err) != CF_OK || cf_disk_cache_stat(&s, err, sizeof err) != CF_OK) {
    fprintf(stderr, "cfuser cache: %s\n", err);
    return 1;
  }
  printf("removed %lld files from %s\n", (long long)removed, s.dir);
  return 0;
}

int cf_tool_cache(int argc, char **argv) {
  if (argc != 2) return usage(stderr);
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) return usage(stdout);
  if (!strcmp(argv[1], "info")) return info();
  if (!strcmp(argv[1], "clear")) return clear();
  fprintf(stderr, "cfuser cache: unknown subcommand '%s'\n", argv[1]);
  return usage(stderr);
}
