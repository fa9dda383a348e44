/* The size cap of the disk cache and its least-recently-used eviction, and what `cfuser
 * cache info|clear` see (cf_disk_cache_stat, cf_disk_cache_clear): past the cap the
 * kernels used longest ago go first, a hit counts as a use, the cache ends under the cap,
 * clear removes the cache's files and nothing else; CFUSER_CACHE_MAX_SIZE is read in bytes,
 * K, M or G. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "executor/disk_cache.h"
#include "tests/host/host_test_util.h"

static char g_dir[64];

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (g_dir[0] && system(cmd) != 0) cr_log_warn("could not remove %s", g_dir);
}

TestSuite(disk_cache_cap, .fini = cleanup);

static void fresh_cache(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cfuser-cap-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
  setenv("CFUSER_CACHE_DIR", g_dir, 1);
}

/* Compiles kernel k (a hit when cached); its entry's path into path. */
static bool compile_kernel(int k, char *path, size_t len) {
  char kernel[256], name[32];
  kernel_writing(k, name, kernel);
  ExecHostModule *m = compile_ok(kernel, name);
  bool hit = exec_host_module_cache_hit(m);
  snprintf(path, len, "%s", exec_host_module_path(m));
  exec_host_module_free(m);
  return hit;
}

static int64_t disk_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_blocks * 512 : -1;
}

/* Sets the file's last use seconds_ago seconds back. */
static void used_ago(const char *path, int seconds_ago) {
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= seconds_ago;
  t[1] = t[0];
  cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0, "%s", path);
}

Test(disk_cache_cap, the_least_recently_used_kernels_are_evicted_past_the_cap) {
  fresh_cache();
  char p[5][4200];
  compile_kernel(1, p[1], sizeof p[1]);
  int64_t one = disk_bytes(p[1]);
  cr_assert_gt(one, 0);
  char cap[32];
  snprintf(cap, sizeof cap, "%lld", (long long)(one * 7 / 2)); /* room for three kernels and a half */
  setenv("CFUSER_CACHE_MAX_SIZE", cap, 1);
  compile_kernel(2, p[2], sizeof p[2]);
  compile_kernel(3, p[3], sizeof p[3]);
  used_ago(p[1], 300);
  used_ago(p[2], 200);
  used_ago(p[3], 100);
  cr_expect(compile_kernel(1, p[1], sizeof p[1]), "kernel 1 is a hit, and so used now");
  cr_expect_eq(access(p[2], F_OK), 0, "three kernels fit: nothing evicted yet");
  compile_kernel(4, p[4], sizeof p[4]); /* over the cap: down to 80% of it, oldest first */
  cr_expect_neq(access(p[2], F_OK), 0, "kernel 2, used longest ago, is evicted");
  cr_expect_neq(access(p[3], F_OK), 0, "kernel 3, used next, is evicted");
  cr_expect_eq(access(p[1], F_OK), 0, "kernel 1, used by the hit, stays");
  cr_expect_eq(access(p[4], F_OK), 0, "kernel 4, just compiled, stays");
  cf_disk_cache_stats s;
  char err[4800];
  cr_assert_eq(cf_disk_cache_stat(&s, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(s.host_kernels, 2);
  cr_expect_leq(s.bytes, one * 7 / 2, "%lld bytes under a cap of %lld", (long long)s.bytes, (long long)(one * 7 / 2));
  cr_expect_eq(s.cap_bytes, one * 7 / 2);
  cr_expect(!compile_kernel(2, p[2], sizeof p[2]), "an evicted kernel is compiled again");
}

Test(disk_cache_cap, clear_removes_the_caches_files_and_nothing_else) {
  fresh_cache();
  char p[4200], notes[4200], old[4200];
  compile_kernel(5, p, sizeof p);
  compile_kernel(6, p, sizeof p);
  snprintf(notes, sizeof notes, "%s/notes.txt", g_dir);
  snprintf(old, sizeof old, "%s/0123456789abcdef.idx", g_dir); /* an entry of the earlier layout */
  FILE *f = fopen(notes, "w");
  fputs("mine", f);
  fclose(f);
  f = fopen(old, "w");
  fputs("old index", f);
  fclose(f);
  cf_disk_cache_stats s;
  char err[4800];
  cr_assert_eq(cf_disk_cache_stat(&s, err, sizeof err), CF_OK, "%s", err);
  cr_expect_str_eq(s.dir, g_dir);
  cr_expect(s.enabled);
  cr_expect_eq(s.host_kernels, 2);
  cr_expect_eq(s.cubins, 0);
  cr_expect_eq(s.old_entries, 1);
  cr_expect_eq(s.temporaries, 0);
  cr_expect_gt(s.bytes, 0);
  int64_t removed = -1;
  cr_assert_eq(cf_disk_cache_clear(&removed, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(removed, 3);
  cr_assert_eq(cf_disk_cache_stat(&s, err, sizeof err), CF_OK, "%s", err);
  cr_expect_eq(s.host_kernels + s.old_entries + s.bytes, 0);
  cr_expect_eq(access(notes, F_OK), 0, "a file that is not the cache's stays");
  cr_expect(!compile_kernel(5, p, sizeof p), "cleared: compiled again");
}

/* The command-line view: `cfuser cache info` and `cfuser cache clear` on the same directory. */
Test(disk_cache_cap, the_cache_command_shows_and_clears) {
  const char *bin = getenv("CFUSER_BIN");
  if (!bin) cr_skip_test("CFUSER_BIN is not set (run through ctest)");
  fresh_cache();
  setenv("CFUSER_CACHE_MAX_SIZE", "2G", 1);
  char p[4200], cmd[4400], out[8192] = "";
  compile_kernel(7, p, sizeof p);
  int64_t b = disk_bytes(p);
  snprintf(cmd, sizeof cmd, "'%s' cache info && '%s' cache clear && '%s' cache info", bin, bin, bin);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  cr_assert_eq(pclose(f), 0, "%s", out);
  char want[2048];
  snprintf(want, sizeof want,
           "directory: %s\nenabled: yes\nhost kernels: 1\nhost runtime objects: 0\ncubins: 0\nentries of an older cfuser: 0\ntemporaries: 0\n"
           "size: %.1f KiB (%lld bytes)\ncap: 2.0 GiB (2147483648 bytes)\n"
           "removed 1 files from %s\n"
           "directory: %s\nenabled: yes\nhost kernels: 0\nhost runtime objects: 0\ncubins: 0\nentries of an older cfuser: 0\ntemporaries: 0\n"
           "size: 0 B (0 bytes)\ncap: 2.0 GiB (2147483648 bytes)\n",
           g_dir, (double)b / 1024, (long long)b, g_dir, g_dir);
  cr_expect_str_eq(out, want);
}

Test(disk_cache_cap, the_cap_is_read_in_bytes_k_m_g) {
  static const struct {
    const char *text;
    int64_t bytes;
  } cases[] = {{"1048576", 1048576}, {"500M", 500LL << 20}, {"2G", 2LL << 30},  {"1.5K", 1536},
               {"64MiB", 64LL << 20},  {"0", 0},             {"lots", 1LL << 30}, {"-5M", 1LL << 30}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("CFUSER_CACHE_MAX_SIZE", cases[i].text, 1);
    cr_expect_eq(exec_disk_cache_cap(), cases[i].bytes, "%s", cases[i].text);
  }
  unsetenv("CFUSER_CACHE_MAX_SIZE");
  cr_expect_eq(exec_disk_cache_cap(), EXEC_CACHE_DEFAULT_CAP);
}
