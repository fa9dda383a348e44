/* executor/disk_cache_evict.c: the size cap of the on-disk kernel cache, its least recently
 * used eviction, and the public view of it (cf_disk_cache_stat, cf_disk_cache_clear; the
 * `cfuser cache info|clear` commands).
 *
 * Which files are the cache's is decided by name alone (classify): <sha256>.so,
 * <sha256>.o (the host runtime's objects, executor/host.c) and <sha256>.cubin are entries, <name>.tmp.XXXXXX their temporaries, 16-hex-digit names the
 * entries of an earlier layout; nothing else in the directory is ever counted or removed.
 * Key decisions: the eviction order is the files' mtime, which a hit sets
 * (exec_disk_entry_read): atime is unreliable under relatime/noatime. A trim runs after
 * every write, under a non-blocking lock so that concurrent writers never wait on each
 * other (a busy lock means another process is trimming), and brings the cache down to
 * EXEC_CACHE_TRIM_PERCENT of the cap so that it runs in batches. Removing an entry another
 * process is about to load only makes that load a miss: the loader compiles privately. */
#include "executor/disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_MAX_AGE_SECONDS 3600 /* a temporary older than this was left by a killed process */

typedef enum { F_OTHER, F_HOST, F_RUNTIME, F_CUBIN, F_OLD, F_TEMP } FileKind;

static bool hex_run(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

/* What a directory entry of the cache is, by its name. */
static FileKind classify(const char *name) {
  size_t n = strlen(name);
  if (n > 64 && hex_run(name, 64) && name[64] == '.') {
    const char *ext = name + 64;
    if (!strcmp(ext, ".so")) return F_HOST;
    if (!strcmp(ext, ".o")) return F_RUNTIME;
    if (!strcmp(ext, ".cubin")) return F_CUBIN;
    if (strstr(ext, ".tmp.")) return F_TEMP;
    return F_OTHER;
  }
  if (n > 16 && hex_run(name, 16) && name[16] == '.') {
    static const char *const old[] = {".c", ".so", ".idx", ".cubin"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
      if (!strcmp(name + 16, old[i])) return F_OLD;
    if (strstr(name + 16, ".tmp.")) return F_TEMP;
  }
  return F_OTHER;
}

int64_t exec_disk_cache_cap(void) {
  const char *v = getenv("CFUSER_CACHE_MAX_SIZE");
  if (!v || !*v) return EXEC_CACHE_DEFAULT_CAP;
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  double unit = 1;
  if (end && *end) {
    switch (*end == 'k' ? 'K' : *end == 'm' ? 'M' : *end == 'g' ? 'G' : *end) {
    case 'K': unit = 1024.0; break;
    case 'M': unit = 1024.0 * 1024; break;
    case 'G': unit = 1024.0 * 1024 * 1024; break;
    default: unit = -1;
    }
    end++;
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
  }
  if (errno || end == v || *end || unit < 0 || !(x >= 0) || x * unit > 9e18) {
    char msg[256];
    snprintf(msg, sizeof msg, "CFUSER_CACHE_MAX_SIZE=%.40s is not a size (bytes, or with K, M or G); the cache "
             "keeps its default cap of 1G", v);
    exec_disk_cache_warn_once(EXEC_WARN_CACHE_CAP, msg);
    return EXEC_CACHE_DEFAULT_CAP;
  }
  return (int64_t)(x * unit);
}

/* One file of the cache as a scan sees it. */
typedef struct Scanned {
  char *name;
  FileKind kind;
  int64_t bytes;
  struct timespec used;
} Scanned;

typedef struct Scan {
  Scanned *files;
  size_t n, cap;
  int64_t bytes;
} Scan;

static void scan_free(Scan *s) {
  for (size_t i = 0; i < s->n; i++) free(s->files[i].name);
  free(s->files);
}

/* The cache's files in dir (links and non-regular files never count); false when the
 * directory cannot be read. */
static bool scan_dir(const char *dir, Scan *s) {
  *s = (Scan){0};
  DIR *d = opendir(dir);
  if (!d) return false;
  for (struct dirent *e; (e = readdir(d));) {
    FileKind k = classify(e->d_name);
    struct stat st;
    if (k == F_OTHER || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 256;
      Scanned *p = realloc(s->files, cap * sizeof *p);
      if (!p) break;
      s->files = p, s->cap = cap;
    }
    char *name = strdup(e->d_name);
    if (!name) break;
    s->files[s->n++] = (Scanned){name, k, (int64_t)st.st_blocks * 512, st.st_mtim};
    s->bytes += (int64_t)st.st_blocks * 512;
  }
  closedir(d);
  return true;
}

static int older_first(const void *a, const void *b) {
  const Scanned *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

static void remove_file(const char *dir, const char *name) {
  char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) >= 0) unlink(path);
  free(path);
}

/* Removes stale temporaries, then the least recently used entries down to the trim target. */
static void evict(const char *dir, Scan *s, int64_t cap) {
  time_t now = time(NULL);
  for (size_t i = 0; i < s->n; i++)
    if (s->files[i].kind == F_TEMP && now - s->files[i].used.tv_sec > TEMP_MAX_AGE_SECONDS) {
      remove_file(dir, s->files[i].name);
      s->bytes -= s->files[i].bytes;
    }
  if (cap <= 0 || s->bytes <= cap) return;
  qsort(s->files, s->n, sizeof *s->files, older_first);
  int64_t target = cap / 100 * EXEC_CACHE_TRIM_PERCENT;
  for (size_t i = 0; i < s->n && s->bytes > target; i++) {
    if (s->files[i].kind == F_TEMP) continue; /* being written: its writer renames it */
    remove_file(dir, s->files[i].name);
    s->bytes -= s->files[i].bytes;
  }
}

void exec_disk_cache_trim(const char *dir, int64_t cap) {
  char *lock = NULL;
  if (asprintf(&lock, "%s/lock", dir) < 0) return;
  int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  free(lock);
  struct stat st;
  if (fd < 0) return;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) {
    Scan s;
    if (scan_dir(dir, &s)) evict(dir, &s, cap);
    scan_free(&s);
  }
  close(fd); /* releases the lock */
}

/* The checked directory (*dir, the caller frees it) and its scan, for the public calls. */
static cf_status public_scan(char **dir, Scan *s, char *err, size_t errlen) {
  char why[4600];
  bool too_long = false;
  *s = (Scan){0};
  cf_status st = exec_disk_cache_dir(dir, &too_long, why, sizeof why);
  if (st) {
    if (err && errlen) snprintf(err, errlen, "%s", why);
    return st;
  }
  if (scan_dir(*dir, s)) return CF_OK;
  if (err && errlen) snprintf(err, errlen, "cannot read the kernel cache directory %s: %s", *dir, strerror(errno));
  free(*dir);
  *dir = NULL;
  return CF_ERR_IO;
}

cf_status cf_disk_cache_stat(cf_disk_cache_stats *out, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!out) return CF_ERR_INVALID_ARGUMENT;
  *out = (cf_disk_cache_stats){.enabled = exec_disk_cache_enabled(), .cap_bytes = exec_disk_cache_cap()};
  char *dir = NULL;
  Scan s;
  cf_status st = public_scan(&dir, &s, err, errlen);
  if (st) return st;
  snprintf(out->dir, sizeof out->dir, "%s", dir);
  for (size_t i = 0; i < s.n; i++) {
    FileKind k = s.files[i].kind;
    int64_t *count = k == F_HOST      ? &out->host_kernels
                     : k == F_RUNTIME ? &out->host_runtimes
                     : k == F_CUBIN   ? &out->cubins
                     : k == F_OLD     ? &out->old_entries
                                      : &out->temporaries;
    (*count)++;
  }
  out->bytes = s.bytes;
  scan_free(&s);
  free(dir);
  return CF_OK;
}

cf_status cf_disk_cache_clear(int64_t *removed, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (removed) *removed = 0;
  char *dir = NULL;
  Scan s;
  cf_status st = public_scan(&dir, &s, err, errlen);
  if (st) return st;
  for (size_t i = 0; i < s.n; i++) {
    remove_file(dir, s.files[i].name);
    if (removed) (*removed)++;
  }
  scan_free(&s);
  free(dir);
  return CF_OK;
}
