/* executor/disk_cache.h: the on-disk cache of compiled kernels shared by both backends
 * (internal): the checked cache directory, verified entries written once atomically, the
 * size cap with least-recently-used eviction, and what `cfuser cache info|clear` reads.
 *
 * The directory is $CFUSER_CACHE_DIR, else $XDG_CACHE_HOME/cfuser, else
 * $HOME/.cache/cfuser, else /tmp/cfuser-<uid>; it is created 0700 and used only when it is
 * a directory owned by the user and writable by nobody else. An entry is one file named by
 * the SHA-256 of its key (the exact text compiled and how), holding a 56-byte record
 * (magic, that SHA-256, the payload's length and 64-bit hash) and the payload: the record
 * leads a cubin entry and trails a host shared object (so the file stays a loadable ELF
 * object). Keys are never stored whole. An entry is opened non-blocking, without following
 * a link, and only when it is a regular file of a sane size; its record is checked before
 * its payload is read, and the payload is hashed before anything trusts it: a FIFO, a link,
 * a huge, truncated, corrupted or colliding file is a miss, and the caller compiles
 * privately. Entries appear by rename, so concurrent processes never read half of one. */
#ifndef CFUSER_DISK_CACHE_H
#define CFUSER_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfuser/cache.h"
#include "cfuser/status.h"

/* The longest cache directory path accepted (longer is an error, never truncated). */
#define EXEC_CACHE_DIR_MAX 3900
/* The largest entry file read (a bigger one is a miss, read no further than its size). */
#define EXEC_CACHE_ENTRY_MAX ((uint64_t)1 << 30)
/* The default size cap (CFUSER_CACHE_MAX_SIZE overrides it). */
#define EXEC_CACHE_DEFAULT_CAP ((int64_t)1 << 30)
/* Eviction brings the cache down to this percentage of the cap, so that it runs in batches. */
#define EXEC_CACHE_TRIM_PERCENT 80

#define EXEC_SHA256_BYTES 32
/* SHA-256 of n bytes (sha256.c), and the same as 64 lowercase hex digits. */
void exec_sha256(const void *data, size_t n, unsigned char out[EXEC_SHA256_BYTES]);
void exec_sha256_hex(const void *data, size_t n, char out[2 * EXEC_SHA256_BYTES + 1]);

/* False when $CFUSER_CACHE is "0" (nothing is read from or written to disk). */
bool exec_disk_cache_enabled(void);

/* The checked cache directory (malloc'd) in *dir. CF_ERR_IO with the reason in err when it
 * is unusable (cannot be created, not a directory, owned by another user, writable by
 * others) or its path is longer than EXEC_CACHE_DIR_MAX; *too_long tells the latter apart
 * (callers treat it as an error; the others degrade to compiling without the cache). */
cf_status exec_disk_cache_dir(char **dir, bool *too_long, char *err, size_t errlen);

/* Prints "cfuser: warning: <msg>" on stderr, once per process for a given kind. */
void exec_disk_cache_warn_once(int kind, const char *msg);
enum { EXEC_WARN_CUBIN_CACHE, EXEC_WARN_HOST_CACHE, EXEC_WARN_CACHE_CAP, EXEC_WARN_KINDS };

/* 64-bit hash of bytes (a multiply-xorshift mix); for corruption checks, not for keys. */
uint64_t exec_hash64(const void *p, size_t n);
/* Writes all n bytes to fd, retrying short writes and EINTR; false on an error. */
bool exec_write_all(int fd, const void *data, size_t n);

/* "<dir>/<sha256 of key in hex><suffix>" (malloc'd; NULL when out of memory). */
char *exec_disk_entry_path(const char *dir, const void *key, size_t keylen, const char *suffix);

/* Where an entry keeps its record: before the payload, or after it (a shared object). */
typedef enum { EXEC_RECORD_FIRST, EXEC_RECORD_LAST } ExecRecordPlace;

/* Reads entry `path`: true and the payload (malloc'd) when the file is a complete entry of
 * the SHA-256 of key[0..keylen) whose payload matches its hash; false otherwise (a miss,
 * whatever was wrong). A hit marks the entry used now (its mtime: the eviction order). */
bool exec_disk_entry_read(const char *path, ExecRecordPlace place, const void *key, size_t keylen,
                          void **payload, size_t *size);
/* Writes the entry atomically (a private temporary file in the same directory, renamed
 * over `path`), then evicts the least recently used entries if the cache is over its cap;
 * false (errno set) when it could not write. */
bool exec_disk_entry_write(const char *path, ExecRecordPlace place, const void *key, size_t keylen,
                           const void *payload, size_t size);

/* Opens path for reading as a cache file may be: non-blocking, no link followed, close on
 * exec; -1 unless it is a regular file of at most EXEC_CACHE_ENTRY_MAX bytes (*size). */
int exec_disk_open_regular(const char *path, uint64_t *size);

/* The size cap in bytes: $CFUSER_CACHE_MAX_SIZE (bytes, or with a K, M or G suffix; 0 turns
 * the cap off), else EXEC_CACHE_DEFAULT_CAP. An unreadable value warns once and is the
 * default. */
int64_t exec_disk_cache_cap(void);
/* Evicts least recently used entries of dir until it is under EXEC_CACHE_TRIM_PERCENT of
 * cap when it is over cap, and removes temporaries that a killed process left behind (an
 * hour old). One process at a time (a lock file); a busy lock skips the trim. */
void exec_disk_cache_trim(const char *dir, int64_t cap);

#endif
