/* executor/disk_cache.h: the on-disk cache of compiled kernels shared by both backends
 * (internal): the checked cache directory, and verified entries written atomically.
 *
 * The directory is $CFUSER_CACHE_DIR, else $XDG_CACHE_HOME/cfuser, else
 * $HOME/.cache/cfuser, else /tmp/cfuser-<uid>; it is created 0700 and used only when it is
 * a directory owned by the user and writable by nobody else. An entry is one file: a
 * header (magic, lengths, a hash of the payload), the key, the payload. It appears by
 * rename, so concurrent processes never read half of one, and it is verified when read
 * (the whole key compared, the payload's hash checked), so a truncated, corrupted or
 * colliding entry reads as a miss and is compiled again. */
#ifndef CFUSER_DISK_CACHE_H
#define CFUSER_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser/status.h"

/* The longest cache directory path accepted (longer is an error, never truncated). */
#define EXEC_CACHE_DIR_MAX 3900

/* False when $CFUSER_CACHE is "0" (nothing is read from or written to disk). */
bool exec_disk_cache_enabled(void);

/* The checked cache directory (malloc'd) in *dir. CF_ERR_IO with the reason in err when it
 * is unusable (cannot be created, not a directory, owned by another user, writable by
 * others) or its path is longer than EXEC_CACHE_DIR_MAX; *too_long tells the latter apart
 * (callers treat it as an error; the others degrade to compiling without the cache). */
cf_status exec_disk_cache_dir(char **dir, bool *too_long, char *err, size_t errlen);

/* Prints "cfuser: warning: <msg>" on stderr, once per process for a given kind. */
void exec_disk_cache_warn_once(int kind, const char *msg);
enum { EXEC_WARN_CUBIN_CACHE, EXEC_WARN_HOST_CACHE, EXEC_WARN_KINDS };

/* 64-bit hash of bytes (a multiply-xorshift mix); for file names and corruption checks. */
uint64_t exec_hash64(const void *p, size_t n);
/* Writes all n bytes to fd, retrying short writes and EINTR; false on an error. */
bool exec_write_all(int fd, const void *data, size_t n);

/* Reads entry `path`: true and the payload (malloc'd) when the file is a complete entry
 * whose key equals key[0..keylen) and whose payload matches its hash; false otherwise (a
 * miss, whatever was wrong). */
bool exec_disk_entry_read(const char *path, const void *key, size_t keylen, void **payload,
                          size_t *size);
/* Writes the entry atomically (a private temporary file in the same directory, renamed
 * over `path`); false (errno set) when it could not. */
bool exec_disk_entry_write(const char *path, const void *key, size_t keylen, const void *payload,
                           size_t size);

/* Reads a whole file (malloc'd, NUL-terminated); NULL when it cannot. */
char *exec_read_file(const char *path, size_t *size);

#endif
