/* executor/disk_cache.c: the cache directory and the verified, atomically written entries
 * of the on-disk kernel cache (see disk_cache.h), used by the host backend's shared objects
 * (host.c) and by the CUDA backend's cubins (cubin_cache.c).
 * Key decisions: the directory must be the user's own and writable by nobody else, because
 * a shared object found there is loaded into the process (another user able to write there
 * could plant code); a directory that fails the check is never "fixed" in place, it is
 * refused and the caller compiles without it, with one warning. Entries carry the whole key
 * and a hash of the payload, so reading one verifies it completely before anything trusts
 * it: a truncated file (a full disk, a killed process) is a miss, not a crash. */
#include "executor/disk_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

char *exec_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, k;
  bool bad = false;
  do {
    if (len + 65536 + 1 > cap) {
      cap = cap ? 2 * cap : 65536 * 2;
      char *p = realloc(buf, cap);
      if (!p) {
        bad = true;
        break;
      }
      buf = p;
    }
    k = fread(buf + len, 1, 65536, f);
    len += k;
  } while (k > 0);
  bad = bad || ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  buf[len] = 0;
  if (size) *size = len;
  return buf;
}

/* The header of an entry; the key, then the payload, follow it. */
typedef struct EntryHeader {
  char magic[8]; /* "CFUSERK1" */
  uint64_t key_len, payload_len, payload_hash;
} EntryHeader;

static const char k_magic[8] = {'C', 'F', 'U', 'S', 'E', 'R', 'K', '1'};

bool exec_disk_entry_read(const char *path, const void *key, size_t keylen, void **payload, size_t *size) {
  size_t n = 0;
  char *file = exec_read_file(path, &n);
  EntryHeader h;
  bool ok = file && n >= sizeof h;
  if (ok) memcpy(&h, file, sizeof h);
  ok = ok && !memcmp(h.magic, k_magic, sizeof k_magic) && h.key_len == keylen && h.payload_len <= n - sizeof h &&
       n - sizeof h - h.payload_len == keylen && !memcmp(file + sizeof h, key, keylen);
  const char *body = ok ? file + sizeof h + keylen : NULL;
  ok = ok && exec_hash64(body, h.payload_len) == h.payload_hash;
  if (ok && (*payload = malloc(h.payload_len ? h.payload_len : 1))) {
    memcpy(*payload, body, h.payload_len);
    *size = h.payload_len;
  } else {
    ok = false;
  }
  free(file);
  return ok;
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

bool exec_disk_entry_write(const char *path, const void *key, size_t keylen, const void *payload, size_t size) {
  char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) return false;
  int fd = mkstemp(tmp); /* mode 0600 */
  EntryHeader h = {{0}, keylen, size, exec_hash64(payload, size)};
  memcpy(h.magic, k_magic, sizeof k_magic);
  bool ok = fd >= 0 && exec_write_all(fd, &h, sizeof h) && exec_write_all(fd, key, keylen) && exec_write_all(fd, payload, size);
  int saved = errno;
  if (fd >= 0 && close(fd) != 0) ok = false;
  ok = ok && rename(tmp, path) == 0;
  if (!ok) {
    saved = errno ? errno : saved;
    if (fd >= 0) unlink(tmp);
    errno = saved;
  }
  free(tmp);
  return ok;
}
