/* executor/host.c: the host backend's compiler driver, disk cache and loader.
 *
 * The last stage of the host path: codegen/host.c has printed a kernel as C11 behind the
 * host runtime (codegen/runtime/host_*.h); this file compiles it with the system C compiler
 * into a shared object, caches the object on disk and dlopens it (see exec_host.h for the
 * API; executor/host_call.c calls and launches the kernel). Key decisions: the cache key is the exact
 * text compiled — a comment carrying the compile command, then the source — whose SHA-256
 * names the entry and is stored in it (never the text: one file per kernel, the object and
 * a 56-byte record), so a changed $CC is another entry; a miss compiles in a private
 * temporary directory, loads the object from there and only then stores it into the cache
 * (by rename), so nothing the cache directory does (removed, full, a FIFO or a link where an
 * entry belongs) can make a compile fail or hang: at worst it is a miss. The
 * compiler runs through /bin/sh (so $CC may carry words, e.g. "ccache gcc") with its
 * output captured from a pipe. A kernel's unit links the runtime's object of its command,
 * compiled once per process (and cached): a kernel compile compiles only the kernel. */
#include "executor/exec_host.h"
#include "executor/host_module.h"

#include "codegen/codegen.h" /* the embedded runtime and the list of its parts */
#include "executor/disk_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;


void exec_host_set_error(ExecHostError *e, const char *fmt, ...) {
  if (!e) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

void exec_host_error_clear(ExecHostError *e) {
  if (!e) return;
  free(e->compiler_output);
  free(e->source);
  e->compiler_output = e->source = NULL;
  e->msg[0] = 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *exec_host_runtime_source(void) {
  size_t len = 0, pos = 0;
  for (size_t i = 0; cg_host_runtime_parts[i]; i++) {
    const char *t = cg_embedded_file(cg_host_runtime_parts[i]);
    if (!t) return NULL;
    len += strlen(t) + 1;
  }
  char *s = malloc(len + 1);
  if (!s) return NULL;
  for (size_t i = 0; cg_host_runtime_parts[i]; i++) {
    const char *t = cg_embedded_file(cg_host_runtime_parts[i]);
    size_t n = strlen(t);
    memcpy(s + pos, t, n);
    pos += n;
    s[pos++] = '\n';
  }
  s[pos] = 0;
  return s;
}

/* ---- small string and file helpers ----------------------------------------------------------- */

/* A growable string; on allocation failure `failed` is set and appends stop. */
typedef struct Buf {
  char *p;
  size_t len, cap;
  bool failed;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

static void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Appends s quoted for /bin/sh. */
static void buf_shell_quoted(Buf *b, const char *s) {
  buf_str(b, "'");
  for (; *s; s++) {
    if (*s == '\'') buf_str(b, "'\\''");
    else buf_add(b, s, 1);
  }
  buf_str(b, "'");
}


/* ---- the cache ------------------------------------------------------------------------------- */

/* "$CC -std=c11 -O2 -shared -fPIC -fno-strict-aliasing -fwrapv
 * -Werror=implicit-function-declaration $CFUSER_HOST_CFLAGS": -fwrapv because integer
 * kernels wrap in two's complement, as the evaluator does; a call to a function no header
 * declares is the compiler's error, with its message, where compilers before GCC 14 would
 * leave an undefined symbol that fails only when the kernel is loaded */
static void compiler_command(Buf *b) {
  const char *cc = getenv("CC"), *extra = getenv("CFUSER_HOST_CFLAGS");
  buf_str(b, cc && *cc ? cc : "cc");
  buf_str(b, " -std=c11 -O2 -shared -fPIC -fno-strict-aliasing -fwrapv -Werror=implicit-function-declaration");
  if (extra && *extra) {
    buf_str(b, " ");
    buf_str(b, extra);
  }
}

/* The text compiled and cached: the command in a comment, then the source. */
static void cache_key(Buf *b, const char *command, const char *source) {
  buf_str(b, "/* cfuser host kernel, compiled with: ");
  for (const char *c = command; *c; c++) buf_add(b, c[0] == '*' && c[1] == '/' ? "+" : c, 1);
  buf_str(b, " */\n#line 1 \"host_kernel.c\"\n");
  buf_str(b, source);
}

/* Runs `cmd` with /bin/sh; its stdout and stderr go to *output (malloc'd). */
static cf_status run_shell(const char *cmd, char **output, int *status, ExecHostError *err) {
  int fds[2];
  if (pipe(fds) != 0) {
    exec_host_set_error(err, "cannot run the host C compiler: pipe: %s", strerror(errno));
    return CF_ERR_INTERNAL;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  char *argv[] = {"sh", "-c", (char *)cmd, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  Buf out = {0};
  buf_str(&out, "");
  char chunk[4096];
  ssize_t n;
  while (rc == 0 && ((n = read(fds[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) buf_add(&out, chunk, (size_t)n);
  close(fds[0]);
  int ws = 0;
  while (rc == 0 && waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (rc != 0 || out.failed) {
    free(out.p);
    exec_host_set_error(err, "cannot run the host C compiler: %s", rc ? strerror(rc) : "out of memory");
    return rc ? CF_ERR_INTERNAL : CF_ERR_OUT_OF_MEMORY;
  }
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  *output = out.p;
  return CF_OK;
}

/* The first line of the compiler's output that says "error", else its first line. */
static const char *first_error_line(const char *output) {
  const char *e = strstr(output, "error");
  if (!e) return output;
  while (e > output && e[-1] != '\n') e--;
  return e;
}

/* Writes n bytes to path (a new file), false with errno on failure. */
static bool write_new_file(const char *path, const void *bytes, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool wrote = fd >= 0 && exec_write_all(fd, bytes, n);
  if (fd >= 0 && close(fd) != 0) wrote = false;
  return wrote;
}

/* Compiles key (the text compiled) in the private directory priv into <priv>/<hex><ext>
 * (out), with `inputs` (shell words: objects to link, libraries) after the source, the
 * compiler writing nothing anywhere else: so a cache directory removed, full or unwritable
 * never makes a compile fail. */
static cf_status compile_private(const char *priv, const char *hex, const char *command, const Buf *key,
                                 const char *source, const char *ext, const char *inputs, char *out,
                                 size_t out_len, ExecHostError *err) {
  char cpath[4200];
  snprintf(cpath, sizeof cpath, "%s/%s.c", priv, hex);
  snprintf(out, out_len, "%s/%s%s", priv, hex, ext);
  if (!write_new_file(cpath, key->p, key->len)) {
    exec_host_set_error(err, "cannot write a host kernel into the private directory %s: %s", priv, strerror(errno));
    return CF_ERR_IO;
  }
  Buf cmd = {0};
  buf_str(&cmd, command);
  buf_str(&cmd, " -o ");
  buf_shell_quoted(&cmd, out);
  buf_str(&cmd, " ");
  buf_shell_quoted(&cmd, cpath);
  buf_str(&cmd, inputs);
  char *output = NULL;
  int status = 0;
  cf_status st = cmd.failed ? CF_ERR_OUT_OF_MEMORY : run_shell(cmd.p, &output, &status, err);
  if (st == CF_OK && status != 0) {
    const char *line = first_error_line(output), *nl = strchr(line, '\n');
    exec_host_set_error(err, "the host C compiler failed (exit status %d): %s\n%.*s", status, cmd.p,
              (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
    if (err) {
      err->compiler_output = output;
      err->source = strdup(source);
      output = NULL;
    }
    st = CF_ERR_COMPILE;
  }
  free(output);
  free(cmd.p);
  unlink(cpath);
  return st;
}

/* ---- loading ----------------------------------------------------------------------------------- */

/* Loads the object at sopath, whose bytes were just read and verified (m->binary). By path,
 * not through /proc/self/fd: the dynamic loader takes an object already loaded under the
 * same name for the same one, and every fd path of a process looks alike; a name here is
 * the SHA-256 of the kernel's key, so the same name is the same kernel. Between the check
 * and the load only cfuser processes of this user write to the directory (it is private),
 * and what they rename in under this name is the same kernel. */
static cf_status load_module(const char *sopath, const char *kernel_name, ExecHostModule *m,
                             ExecHostError *err) {
  m->handle = dlopen(sopath, RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    exec_host_set_error(err, "cannot load the compiled host kernel: %s", dlerror());
    return CF_ERR_COMPILE;
  }
  void *kernel = dlsym(m->handle, kernel_name), *launch = dlsym(m->handle, "cfh_launch");
  if (!kernel || !launch) {
    exec_host_set_error(err, kernel ? "the compiled host kernel %s has no cfh_launch: the host runtime "
                            "was not prepended to its source"
                          : "the compiled host kernel %s has no function %s (it must be "
                            "defined, and not static)", sopath, kernel_name);
    dlclose(m->handle);
    m->handle = NULL;
    return CF_ERR_COMPILE;
  }
  memcpy(&m->kernel, &kernel, sizeof kernel); /* object to function pointer, as POSIX allows */
  memcpy(&m->launch, &launch, sizeof launch);
  free(m->path);
  m->path = strdup(sopath);
  return m->path ? CF_OK : CF_ERR_OUT_OF_MEMORY;
}

/* A hit: the entry of exactly this key, its object verified (disk_cache.c), then loaded. */
static bool try_cached(const char *entry, const Buf *key, const char *kernel_name, ExecHostModule *m) {
  void *payload = NULL;
  size_t n = 0;
  if (!exec_disk_entry_read(entry, EXEC_RECORD_LAST, key->p, key->len, &payload, &n)) return false;
  free(m->binary);
  m->binary = payload;
  m->binary_size = n;
  ExecHostError ignored = {{0}, NULL, NULL};
  bool ok = load_module(entry, kernel_name, m, &ignored) == CF_OK;
  exec_host_error_clear(&ignored);
  return ok;
}

/* Reads a freshly compiled file into *bytes (malloc'd; a regular file of a sane size). */
static cf_status read_compiled(const char *path, void **bytes, size_t *size, ExecHostError *err) {
  uint64_t n = 0;
  int fd = exec_disk_open_regular(path, &n);
  char *b = fd >= 0 ? malloc(n ? n : 1) : NULL;
  bool ok = b && pread(fd, b, n, 0) == (ssize_t)n;
  int saved = errno;
  if (fd >= 0) close(fd);
  if (!ok) {
    free(b);
    exec_host_set_error(err, "cannot read the compiled host kernel %s: %s", path, strerror(saved));
    return CF_ERR_IO;
  }
  *bytes = b;
  *size = n;
  return CF_OK;
}

/* Reads the freshly compiled object into m->binary. */
static cf_status read_object(const char *sopath, ExecHostModule *m, ExecHostError *err) {
  void *bytes = NULL;
  size_t n = 0;
  cf_status st = read_compiled(sopath, &bytes, &n, err);
  if (st) return st;
  free(m->binary);
  m->binary = bytes;
  m->binary_size = n;
  return CF_OK;
}

/* A private directory for one compile under $TMPDIR (else /tmp), malloc'd. */
static cf_status private_dir(char **dir, ExecHostError *err) {
  const char *t = getenv("TMPDIR");
  if (asprintf(dir, "%s/cfuser-XXXXXX", t && *t && strlen(t) < 1024 ? t : "/tmp") < 0) {
    *dir = NULL;
    exec_host_set_error(err, "out of memory");
    return CF_ERR_OUT_OF_MEMORY;
  }
  if (mkdtemp(*dir)) return CF_OK;
  exec_host_set_error(err, "cannot create a private directory %s for a host kernel: %s", *dir, strerror(errno));
  free(*dir);
  *dir = NULL;
  return CF_ERR_IO;
}

/* Stores the loaded object as the cache entry (best effort: a failure warns once). */
static void publish(const char *entry, const Buf *key, ExecHostModule *m) {
  if (exec_disk_entry_write(entry, EXEC_RECORD_LAST, key->p, key->len, m->binary, m->binary_size)) {
    char *p = strdup(entry);
    if (p) free(m->path), m->path = p;
    return;
  }
  char msg[4600];
  snprintf(msg, sizeof msg, "cannot write the kernel cache entry %s (%s); host kernels are compiled privately "
           "where it fails", entry, strerror(errno));
  exec_disk_cache_warn_once(EXEC_WARN_HOST_CACHE, msg);
}

/* The runtime's object (codegen/host_split.c's runtime unit) compiled with one kernel
 * command plus -c: made once per command and process, kept in memory (and in the disk
 * cache), written beside each kernel compiled with that command and linked into it, so a
 * kernel compile compiles only the kernel. `name` ("<SHA-256 of its key>-rt.o") names it
 * in the link line and in the keys of the kernels that link it. */
typedef struct RuntimeObject {
  char *command;
  char name[2 * EXEC_SHA256_BYTES + 8];
  void *bytes;
  size_t size;
  struct RuntimeObject *next;
} RuntimeObject;

static RuntimeObject *g_runtimes; /* every command's, for the process's lifetime */
static pthread_mutex_t g_runtimes_lock = PTHREAD_MUTEX_INITIALIZER;

static cf_status cache_dir(char **dir, ExecHostError *err);

/* Compiles the runtime's unit (key) privately into r->bytes. */
static cf_status compile_runtime(const char *command, const Buf *key, const char *hex, RuntimeObject *r,
                                 ExecHostError *err) {
  char *priv = NULL, opath[4200];
  cf_status st = private_dir(&priv, err);
  if (st) return st;
  st = compile_private(priv, hex, command, key, cg_host_runtime_unit(), ".o", "", opath, sizeof opath, err);
  if (st == CF_OK) st = read_compiled(opath, &r->bytes, &r->size, err);
  unlink(opath);
  rmdir(priv);
  free(priv);
  return st;
}

/* r's object for the kernel command `command`: from the disk cache, else compiled (and
 * stored there, best effort). */
static cf_status build_runtime(const char *command, RuntimeObject *r, ExecHostError *err) {
  const char *unit = cg_host_runtime_unit();
  Buf cmd = {0}, key = {0};
  buf_str(&cmd, command);
  buf_str(&cmd, " -c");
  if (unit && !cmd.failed) cache_key(&key, cmd.p, unit);
  char *dir = NULL, *entry = NULL, hex[2 * EXEC_SHA256_BYTES + 1];
  cf_status st = !unit || cmd.failed || key.failed ? CF_ERR_OUT_OF_MEMORY : cache_dir(&dir, err);
  if (st == CF_ERR_OUT_OF_MEMORY) exec_host_set_error(err, "out of memory");
  if (st == CF_OK) {
    exec_sha256_hex(key.p, key.len, hex);
    snprintf(r->name, sizeof r->name, "%s-rt.o", hex);
    entry = dir ? exec_disk_entry_path(dir, key.p, key.len, ".o") : NULL;
    if (!(entry && exec_disk_entry_read(entry, EXEC_RECORD_LAST, key.p, key.len, &r->bytes, &r->size))) {
      st = compile_runtime(cmd.p, &key, hex, r, err);
      if (st == CF_OK && entry) (void)exec_disk_entry_write(entry, EXEC_RECORD_LAST, key.p, key.len, r->bytes, r->size);
    }
  }
  free(entry);
  free(dir);
  free(cmd.p);
  free(key.p);
  return st;
}

/* The runtime's object for `command`, built on its first use in the process. */
static cf_status runtime_for(const char *command, const RuntimeObject **out, ExecHostError *err) {
  pthread_mutex_lock(&g_runtimes_lock);
  RuntimeObject *r = g_runtimes;
  while (r && strcmp(r->command, command) != 0) r = r->next;
  cf_status st = CF_OK;
  if (!r) {
    r = calloc(1, sizeof *r);
    char *c = r ? strdup(command) : NULL;
    st = c ? build_runtime(command, r, err) : CF_ERR_OUT_OF_MEMORY;
    if (!c) exec_host_set_error(err, "out of memory");
    if (st == CF_OK) {
      r->command = c;
      r->next = g_runtimes;
      g_runtimes = r;
    } else {
      free(c);
      if (r) free(r->bytes);
      free(r);
      r = NULL;
    }
  }
  pthread_mutex_unlock(&g_runtimes_lock);
  *out = r;
  return st;
}

/* A miss: compiles privately (beside the runtime's object rt, when the kernel links one),
 * loads the object from there, stores it into the cache under `entry` (NULL: no cache)
 * and removes the private files. */
static cf_status compile_fresh(const char *entry, const char *command, const RuntimeObject *rt, const Buf *key,
                               const char *source, const char *kernel_name, ExecHostModule *m, ExecHostError *err) {
  char *priv = NULL, sopath[4200] = "", rtpath[4200] = "", hex[2 * EXEC_SHA256_BYTES + 1];
  cf_status st = private_dir(&priv, err);
  if (st) return st;
  exec_sha256_hex(key->p, key->len, hex);
  Buf inputs = {0};
  if (rt) {
    snprintf(rtpath, sizeof rtpath, "%s/%s", priv, rt->name);
    if (!write_new_file(rtpath, rt->bytes, rt->size)) {
      exec_host_set_error(err, "cannot write the host runtime's object into the private directory %s: %s", priv,
                strerror(errno));
      st = CF_ERR_IO;
    }
    buf_str(&inputs, " ");
    buf_shell_quoted(&inputs, rtpath);
  }
  buf_str(&inputs, " -lm");
  if (st == CF_OK && inputs.failed) {
    exec_host_set_error(err, "out of memory");
    st = CF_ERR_OUT_OF_MEMORY;
  }
  if (st == CF_OK) st = compile_private(priv, hex, command, key, source, ".so", inputs.p, sopath, sizeof sopath, err);
  if (st == CF_OK) st = read_object(sopath, m, err);
  if (st == CF_OK) st = load_module(sopath, kernel_name, m, err);
  if (st == CF_OK && entry) publish(entry, key, m);
  if (sopath[0]) unlink(sopath); /* the mapping outlives the file */
  if (rtpath[0]) unlink(rtpath);
  rmdir(priv);
  free(priv);
  free(inputs.p);
  return st;
}

/* The cache directory (malloc'd), or NULL when the cache is off or its directory unusable
 * (one warning). Only a path too long, or no memory, is an error. */
static cf_status cache_dir(char **dir, ExecHostError *err) {
  char why[4400];
  bool too_long = false;
  *dir = NULL;
  if (!exec_disk_cache_enabled()) return CF_OK;
  cf_status st = exec_disk_cache_dir(dir, &too_long, why, sizeof why);
  if (st == CF_OK) return CF_OK;
  if (st == CF_ERR_OUT_OF_MEMORY || too_long) {
    exec_host_set_error(err, "%s", why);
    return st;
  }
  char msg[4600];
  snprintf(msg, sizeof msg, "%s; host kernels are compiled in private temporary directories instead", why);
  exec_disk_cache_warn_once(EXEC_WARN_HOST_CACHE, msg);
  return CF_OK;
}

/* Looks the key up in the cache, compiles on a miss (or when a cached object does not
 * verify or load), and loads the object. A kernel's unit (codegen/host.c's source, behind
 * CG_HOST_KERNEL_TU_LINE) links the runtime's object of its command, whose name joins the
 * command in the key; any other source is compiled alone. */
static cf_status compile_and_load(const char *source, const char *kernel_name, ExecHostModule *m,
                                  ExecHostError *err) {
  char *dir = NULL, *entry = NULL;
  cf_status st = cache_dir(&dir, err);
  if (st != CF_OK) return st;
  Buf command = {0}, key = {0}, keyed = {0};
  const RuntimeObject *rt = NULL;
  compiler_command(&command);
  bool kernel_unit = strncmp(source, CG_HOST_KERNEL_TU_LINE, strlen(CG_HOST_KERNEL_TU_LINE)) == 0;
  if (!command.failed && kernel_unit) st = runtime_for(command.p, &rt, err);
  buf_str(&keyed, command.p ? command.p : "");
  if (rt) buf_str(&keyed, " "), buf_str(&keyed, rt->name);
  if (st == CF_OK && !keyed.failed) cache_key(&key, keyed.p, source);
  if (st == CF_OK && !command.failed && !key.failed && dir) entry = exec_disk_entry_path(dir, key.p, key.len, ".so");
  if (st == CF_OK && (command.failed || keyed.failed || key.failed || (dir && !entry))) {
    exec_host_set_error(err, "out of memory");
    st = CF_ERR_OUT_OF_MEMORY;
  } else if (st == CF_OK) {
    m->cache_hit = entry && try_cached(entry, &key, kernel_name, m);
    if (!m->cache_hit) st = compile_fresh(entry, command.p, rt, &key, source, kernel_name, m, err);
  }
  free(entry);
  free(dir);
  free(command.p);
  free(keyed.p);
  free(key.p);
  return st;
}

cf_status exec_host_compile(const char *source, const char *kernel_name, ExecHostModule **out,
                            ExecHostError *err) {
  double t0 = now_seconds();
  if (err) exec_host_error_clear(err);
  if (!out) return CF_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (!source || !kernel_name || !*kernel_name) {
    exec_host_set_error(err, "exec_host_compile: source and kernel name are required");
    return CF_ERR_INVALID_ARGUMENT;
  }
  ExecHostModule *m = calloc(1, sizeof *m);
  if (!m) {
    exec_host_set_error(err, "out of memory");
    return CF_ERR_OUT_OF_MEMORY;
  }
  cf_status st = compile_and_load(source, kernel_name, m, err);
  if (st != CF_OK) {
    exec_host_module_free(m);
    return st;
  }
  m->seconds = now_seconds() - t0;
  *out = m;
  return CF_OK;
}

void exec_host_module_free(ExecHostModule *m) {
  if (!m) return;
  if (m->handle) dlclose(m->handle);
  free(m->path);
  free(m->binary);
  free(m);
}

bool exec_host_module_cache_hit(const ExecHostModule *m) { return m && m->cache_hit; }
double exec_host_module_compile_seconds(const ExecHostModule *m) { return m ? m->seconds : 0; }
const char *exec_host_module_path(const ExecHostModule *m) { return m ? m->path : NULL; }

cf_status exec_host_module_binary(ExecHostModule *m, const void **data, size_t *size,
                                  ExecHostError *err) {
  if (!m || !data || !size) return CF_ERR_INVALID_ARGUMENT;
  if (!m->binary) {
    exec_host_set_error(err, "the compiled host kernel %s was not kept in memory", m->path ? m->path : "");
    return CF_ERR_INTERNAL;
  }
  *data = m->binary;
  *size = m->binary_size;
  return CF_OK;
}
