/* cfuser/cache.h: the on-disk cache of compiled kernels (cubins and host-backend shared
 * objects), as `cfuser cache info` and `cfuser cache clear` show and clear it.
 *
 * Where it is: $CFUSER_CACHE_DIR, else $XDG_CACHE_HOME/cfuser, else ~/.cache/cfuser, else
 * /tmp/cfuser-<uid> (a directory of the user's own, writable by nobody else). Its size is
 * capped by $CFUSER_CACHE_MAX_SIZE (bytes, or 500M, 2G...; default 1G; 0: no cap): past the
 * cap the least recently used kernels are removed. CFUSER_CACHE=0 turns it off. Each kernel
 * is one file named by the SHA-256 of what was compiled; a damaged entry is compiled again,
 * and the cache never makes a compile fail. */
#ifndef CFUSER_CACHE_H
#define CFUSER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the cache holds. */
typedef struct cf_disk_cache_stats {
  char dir[4000];          /* the cache directory */
  bool enabled;            /* false under CFUSER_CACHE=0 */
  int64_t host_kernels;    /* host-backend shared objects (<sha256>.so) */
  int64_t cubins;          /* CUDA cubins (<sha256>.cubin) */
  int64_t old_entries;     /* files of an earlier cfuser's cache layout (evicted like the rest) */
  int64_t temporaries;     /* files being written now, or left by a killed process */
  int64_t bytes;           /* disk space of all of them (allocated blocks) */
  int64_t cap_bytes;       /* the size cap; 0: none */
  int64_t host_runtimes;   /* the host runtime's objects the host kernels link, one per compiler
                              command (<sha256>.o) */
} cf_disk_cache_stats;

/* Fills *out. CF_ERR_IO (reason in err) when the directory is unusable (someone else's,
 * writable by others, its path too long); CF_ERR_INVALID_ARGUMENT when out is NULL. */
CF_API cf_status cf_disk_cache_stat(cf_disk_cache_stats *out, char *err, size_t errlen);
/* Removes every entry and temporary of the cache directory (never anything else in it);
 * *removed (may be NULL) counts the files removed. Errors as cf_disk_cache_stat. */
CF_API cf_status cf_disk_cache_clear(int64_t *removed, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
