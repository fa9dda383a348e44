/* executor/disk_cache.c: the cache directory and the verified, atomically written entries
 * of the on-disk kernel cache (see disk_cache.h), used by the host backend's shared objects
 * (host.c) and by the CUDA backend's cubins (cubin_cache.c).
 * Key decisions: the directory must be the user's own and writable by nobody else, because
 * a shared object found there is loaded into the process (another user able to write there
 * could plant code); a directory that fails the check is never "fixed" in place, it is
 * refused and the caller compiles without it, with one warning. An entry carries the
 * SHA-256 of its key (never the key: a host kernel's source is most of its size) and a
 * hash of the payload, and is opened as untrusted input (non-blocking, no link followed, a
 * regular file of a sane size, its record read before its payload), so a FIFO, a link to
 * /dev/zero, a huge or truncated file (a full disk, a killed process) is a miss, not a hang
 * or a crash. The cap and the eviction live in disk_cache_evict.c. */
#include "executor/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

bool exec_disk_cache_enabled(void) {
  const char *v = getenv("CFUSER_CACHE");
  return !(v && strcmp(v, "0") == 0);
}

uint64_t exec_hash64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  if (n > i) memcpy(&tail, p + i, n - i);
  h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

/* The one mutable process-wide state of this file: which warnings were printed. */
static int g_warned[EXEC_WARN_KINDS];

void exec_disk_cache_warn_once(int kind, const char *msg) {
  if (kind < 0 || kind >= EXEC_WARN_KINDS) return;
  if (__atomic_exchange_n(&g_warned[kind], 1, __ATOMIC_RELAXED)) return;
  fprintf(stderr, "cfuser: warning: %s\n", msg);
}

/* The directory asked for (malloc'd) and where the request came from. */
static char *wanted_dir(const char **source) {
  const char *d;
  char *out = NULL;
  int n;
  if ((d = getenv("CFUSER_CACHE_DIR")) && *d) n = (*source = "CFUSER_CACHE_DIR", asprintf(&out, "%s", d));
  else if ((d = getenv("XDG_CACHE_HOME")) && *d) n = (*source = "XDG_CACHE_HOME", asprintf(&out, "%s/cfuser", d));
  else if ((d = getenv("HOME")) && *d) n = (*source = "HOME", asprintf(&out, "%s/.cache/cfuser", d));
  else n = (*source = "the /tmp fallback", asprintf(&out, "/tmp/cfuser-%u", (unsigned)geteuid()));
  return n < 0 ? NULL : out;
}

/* mkdir -p, new directories 0700. */
static bool make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
    *p = '/';
    if (!ok) return false;
  }
  return mkdir(path, 0700) == 0 || errno == EEXIST;
}

/* The directory is ours alone: a directory (not a link), owned by us, writable by nobody
 * else. */
static cf_status check_private(const char *dir, char *err, size_t errlen) {
  struct stat st;
  if (lstat(dir, &st) != 0)
    return snprintf(err, errlen, "the kernel cache directory %s cannot be examined: %s", dir, strerror(errno)),
           CF_ERR_IO;
  if (!S_ISDIR(st.st_mode))
    return snprintf(err, errlen, "the kernel cache directory %s is not a directory%s", dir,
                    S_ISLNK(st.st_mode) ? " (a symbolic link is not accepted)" : ""),
           CF_ERR_IO;
  if (st.st_uid != geteuid())
    return snprintf(err, errlen, "the kernel cache directory %s belongs to user %u, not to this user (%u); "
                    "its kernels are not trusted", dir, (unsigned)st.st_uid, (unsigned)geteuid()),
           CF_ERR_IO;
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return snprintf(err, errlen, "the kernel cache directory %s is writable by other users (mode %03o); its "
                    "kernels are not trusted (chmod 700 it, or set CFUSER_CACHE_DIR)", dir,
                    (unsigned)(st.st_mode & 0777)),
           CF_ERR_IO;
  if (access(dir, W_OK | X_OK) != 0)
    return snprintf(err, errlen, "the kernel cache directory %s is not writable: %s", dir, strerror(errno)),
           CF_ERR_IO;
  return CF_OK;
}

cf_status exec_disk_cache_dir(char **dir, bool *too_long, char *err, size_t errlen) {
  const char *source = "";
  *dir = NULL;
  *too_long = false;
  char *d = wanted_dir(&source);
  if (!d) return snprintf(err, errlen, "out of memory"), CF_ERR_OUT_OF_MEMORY;
  size_t n = strlen(d);
  if (n > EXEC_CACHE_DIR_MAX) {
    *too_long = true;
    snprintf(err, errlen, "the kernel cache directory (from %s) is %zu characters long; the limit is %d", source, n,
             EXEC_CACHE_DIR_MAX);
    free(d);
    return CF_ERR_IO;
  }
  while (n > 1 && d[n - 1] == '/') d[--n] = 0;
  cf_status s = CF_OK;
  if (!make_dirs(d)) {
    snprintf(err, errlen, "cannot create the kernel cache directory %s (from %s): %s", d, source, strerror(errno));
    s = CF_ERR_IO;
  }
  if (!s) s = check_private(d, err, errlen);
  if (s) free(d);
  else *dir = d;
  return s;
}

int exec_disk_open_regular(const char *path, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > EXEC_CACHE_ENTRY_MAX) {
    close(fd);
    return -1;
  }
  *size = (uint64_t)st.st_size;
  return fd;
}

/* Reads exactly n bytes at off; false on an error or a short file. */
static bool read_at(int fd, void *buf, size_t n, uint64_t off) {
  char *p = buf;
  while (n) {
    ssize_t k = pread(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= (size_t)k, off += (uint64_t)k;
  }
  return true;
}

/* The record of an entry: before its payload (a cubin) or after it (a shared object). */
typedef struct EntryRecord {
  char magic[8]; /* "CFUSERK2" */
  unsigned char key[EXEC_SHA256_BYTES];
  uint64_t payload_len, payload_hash;
} EntryRecord;

static const char k_magic[8] = {'C', 'F', 'U', 'S', 'E', 'R', 'K', '2'};

char *exec_disk_entry_path(const char *dir, const void *key, size_t keylen, const char *suffix) {
  char hex[2 * EXEC_SHA256_BYTES + 1], *path = NULL;
  exec_sha256_hex(key, keylen, hex);
  return asprintf(&path, "%s/%s%s", dir, hex, suffix) < 0 ? NULL : path;
}

bool exec_disk_entry_read(const char *path, ExecRecordPlace place, const void *key, size_t keylen, void **payload,
                          size_t *size) {
  uint64_t n = 0;
  int fd = exec_disk_open_regular(path, &n);
  if (fd < 0) return false;
  EntryRecord r;
  unsigned char want[EXEC_SHA256_BYTES];
  exec_sha256(key, keylen, want);
  uint64_t rec_at = place == EXEC_RECORD_FIRST ? 0 : n - sizeof r, body_at = place == EXEC_RECORD_FIRST ? sizeof r : 0;
  bool ok = n >= sizeof r && read_at(fd, &r, sizeof r, rec_at) && !memcmp(r.magic, k_magic, sizeof k_magic) &&
            !memcmp(r.key, want, sizeof want) && r.payload_len == n - sizeof r;
  char *body = ok ? malloc(r.payload_len ? r.payload_len : 1) : NULL;
  ok = ok && body && read_at(fd, body, r.payload_len, body_at) && exec_hash64(body, r.payload_len) == r.payload_hash;
  if (ok) futimens(fd, NULL); /* used now: the eviction order (best effort) */
  close(fd);
  if (!ok) {
    free(body);
    return false;
  }
  *payload = body;
  *size = r.payload_len;
  return true;
}

bool exec_write_all(int fd, const void *data, size_t n) {
  const char *s = data;
  while (n) {
    ssize_t k = write(fd, s, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    s += k;
    n -= (size_t)k;
  }
  return true;
}

bool exec_disk_entry_write(const char *path, ExecRecordPlace place, const void *key, size_t keylen,
                           const void *payload, size_t size) {
  char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) return false;
  int fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
  EntryRecord r = {{0}, {0}, size, exec_hash64(payload, size)};
  memcpy(r.magic, k_magic, sizeof k_magic);
  exec_sha256(key, keylen, r.key);
  bool first = place == EXEC_RECORD_FIRST;
  bool ok = fd >= 0 && (!first || exec_write_all(fd, &r, sizeof r)) && exec_write_all(fd, payload, size) &&
            (first || exec_write_all(fd, &r, sizeof r));
  int saved = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  ok = ok && rename(tmp, path) == 0;
  if (!ok) {
    saved = errno ? errno : saved;
    if (fd >= 0) unlink(tmp);
    errno = saved;
  }
  free(tmp);
  if (ok) {
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0, exec_disk_cache_trim(dir, exec_disk_cache_cap());
    free(dir);
  }
  return ok;
}
