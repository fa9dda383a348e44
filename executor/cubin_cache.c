/* executor/cubin_cache.c: the disk cache of cubins, in front of NVRTC.
 * The CUDA backend's compile (executor.c) calls exec_nvrtc_compile_cached instead of NVRTC:
 * the key is the exact generated source plus exec_nvrtc_key (NVRTC version, kernel name,
 * architecture and every option), the entry <hash>.cubin in the cache directory shared with
 * the host backend (disk_cache.c) holds the kernel's lowered name, the architecture and the
 * cubin. Key decisions: the cache never makes a compile fail; a directory that cannot be
 * used (unwritable, someone else's, a path too long) compiles without it after one
 * warning, and an entry that does not verify (truncated, corrupted, another key under the
 * same hash) is compiled again and replaced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/disk_cache.h"
#include "executor/exec_cuda.h"

/* The payload of an entry: header, then the lowered name (name_len bytes), then the cubin. */
typedef struct CubinHead {
  char arch[16];
  uint64_t name_len; /* UINT64_MAX: no lowered name */
} CubinHead;

static bool decode(const unsigned char *p, size_t n, ExecCubin *out) {
  CubinHead h;
  if (n < sizeof h) return false;
  memcpy(&h, p, sizeof h);
  size_t name = h.name_len == UINT64_MAX ? 0 : h.name_len;
  if (h.arch[sizeof h.arch - 1] != 0 || name > n - sizeof h || n - sizeof h - name == 0) return false;
  out->data = malloc(n - sizeof h - name);
  out->lowered_name = h.name_len == UINT64_MAX ? NULL : strndup((const char *)p + sizeof h, name);
  if (!out->data || (h.name_len != UINT64_MAX && !out->lowered_name)) return false;
  memcpy(out->data, p + sizeof h + name, n - sizeof h - name);
  out->size = n - sizeof h - name;
  memcpy(out->arch, h.arch, sizeof out->arch);
  return true;
}

static void store(const char *path, const char *key, const ExecCubin *c) {
  CubinHead h = {{0}, c->lowered_name ? strlen(c->lowered_name) : UINT64_MAX};
  memcpy(h.arch, c->arch, sizeof h.arch);
  size_t name = c->lowered_name ? (size_t)h.name_len : 0, n = sizeof h + name + c->size;
  unsigned char *p = malloc(n);
  if (!p) return;
  memcpy(p, &h, sizeof h);
  if (name) memcpy(p + sizeof h, c->lowered_name, name);
  memcpy(p + sizeof h + name, c->data, c->size);
  if (!exec_disk_entry_write(path, EXEC_RECORD_FIRST, key, strlen(key), p, n)) {
    char msg[4400];
    snprintf(msg, sizeof msg, "cannot write the cubin cache entry %s; kernels are compiled without the disk cache "
             "where it fails", path);
    exec_disk_cache_warn_once(EXEC_WARN_CUBIN_CACHE, msg);
  }
  free(p);
}

/* The entry's path and key (both malloc'd), or false when the cache is off or unusable. */
static bool entry_for(const char *source, const ExecNvrtcOptions *o, char **path, char **key) {
  *path = *key = NULL;
  const char *arch = o && o->arch ? o->arch : exec_device_arch();
  char *dir = NULL, *prefix = NULL, why[4400];
  bool too_long = false;
  if (!exec_disk_cache_enabled() || !arch || !(prefix = exec_nvrtc_key(o, arch))) return false;
  if (exec_disk_cache_dir(&dir, &too_long, why, sizeof why) != CF_OK) {
    char msg[4600];
    snprintf(msg, sizeof msg, "%s; CUDA kernels are compiled without the disk cache", why);
    exec_disk_cache_warn_once(EXEC_WARN_CUBIN_CACHE, msg);
    free(prefix);
    return false;
  }
  bool ok = asprintf(key, "cfuser cubin 1\n%s\n%s", prefix, source) >= 0;
  if (!ok) *key = NULL;
  ok = ok && (*path = exec_disk_entry_path(dir, *key, strlen(*key), ".cubin")) != NULL;
  if (!ok) {
    free(*key);
    *path = *key = NULL;
  }
  free(dir);
  free(prefix);
  return ok;
}

cf_status exec_nvrtc_compile_cached(const char *source, const char *program_name,
                                    const ExecNvrtcOptions *opts, ExecCubin *out, bool *hit,
                                    char *err, size_t errlen) {
  *hit = false;
  char *path = NULL, *key = NULL;
  if (out == NULL || source == NULL || !entry_for(source, opts, &path, &key))
    return exec_nvrtc_compile(source, program_name, opts, out, err, errlen);
  void *payload = NULL;
  size_t n = 0;
  memset(out, 0, sizeof *out);
  if (exec_disk_entry_read(path, EXEC_RECORD_FIRST, key, strlen(key), &payload, &n) && decode(payload, n, out)) {
    *hit = true;
  } else {
    exec_cubin_free(out);
    cf_status s = exec_nvrtc_compile(source, program_name, opts, out, err, errlen);
    if (s == CF_OK) store(path, key, out);
    free(payload);
    free(path);
    free(key);
    return s;
  }
  free(payload);
  free(path);
  free(key);
  return CF_OK;
}
