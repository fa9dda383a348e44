/* The disk cache under stress (issue 28): whatever sits where an entry belongs, or happens
 * to the directory, a compile neither hangs nor fails, and never reads more than a record
 * of a file it does not trust. A FIFO where an entry belongs (a blocking open would hang
 * forever), a link to /dev/zero (read whole, it never ends), a sparse file of a terabyte (a
 * whole read exhausts memory), and the cache directory removed over and over while eight
 * processes compile: each is a miss, and the kernel is compiled privately, loaded and right.
 * Each compile runs in a child process under an alarm, so a hang fails the test instead of
 * stalling it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/disk_cache.h"
#include "tests/host/host_test_util.h"

#define HANG_SECONDS 60 /* a compile taking longer is a hang */

static char g_dir[64]; /* the test's cache directory */

/* Removes the files of dir (one level: the cache has no subdirectories), then dir. */
static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  char path[4200];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static void cleanup(void) {
  if (g_dir[0]) remove_tree(g_dir);
}

TestSuite(disk_cache_stress, .fini = cleanup);

static void fresh_cache(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cfuser-stress-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
  setenv("CFUSER_CACHE_DIR", g_dir, 1);
}

/* Compiles kernel k (it writes k into its 8 outputs), runs it; 0 when the output is right. */
static int compile_and_check(int k) {
  char kernel[256], name[32];
  kernel_writing(k, name, kernel);
  char *src = with_runtime(kernel);
  ExecHostError err = {{0}, NULL, NULL};
  ExecHostModule *m = NULL;
  cf_status st = exec_host_compile(src, name, &m, &err);
  float out[8] = {0};
  Arg a;
  if (st == CF_OK) {
    arg_1d(&a, out, 8);
    st = run1(m, 1, 8, 0, 1, &a, &err);
  }
  if (st != CF_OK) fprintf(stderr, "kernel %d: %s\n", k, err.msg);
  exec_host_error_clear(&err);
  exec_host_module_free(m);
  free(src);
  return st == CF_OK && out[7] == (float)k ? 0 : 1;
}

/* compile_and_check(k) in a child under an alarm: "ok", "wrong", or how it died. */
static const char *in_child(int k) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(HANG_SECONDS);
    _exit(compile_and_check(k));
  }
  int ws = 0;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  if (WIFSIGNALED(ws)) return WTERMSIG(ws) == SIGALRM ? "a hang" : "a crash";
  return WEXITSTATUS(ws) == 0 ? "ok" : "a failure";
}

/* The path of kernel k's entry: compiled once, so the cache names it. */
static void entry_of(int k, char *path, size_t len) {
  char kernel[256], name[32];
  kernel_writing(k, name, kernel);
  ExecHostModule *m = compile_ok(kernel, name);
  snprintf(path, len, "%s", exec_host_module_path(m));
  exec_host_module_free(m);
  cr_assert(!strncmp(path, g_dir, strlen(g_dir)), "the kernel was stored in the cache: %s", path);
  cr_assert_eq(unlink(path), 0);
}

/* After the miss, the entry is a whole, regular one again. */
static void expect_entry_restored(const char *path) {
  struct stat st;
  cr_assert_eq(lstat(path, &st), 0, "%s", path);
  cr_expect(S_ISREG(st.st_mode), "the entry was replaced by a regular file");
}

Test(disk_cache_stress, a_fifo_where_an_entry_belongs_is_a_miss_not_a_hang) {
  fresh_cache();
  char path[4200];
  entry_of(1, path, sizeof path);
  cr_assert_eq(mkfifo(path, 0600), 0);
  cr_expect_str_eq(in_child(1), "ok");
  expect_entry_restored(path);
}

Test(disk_cache_stress, a_link_to_dev_zero_is_a_miss_not_an_endless_read) {
  fresh_cache();
  char path[4200];
  entry_of(2, path, sizeof path);
  cr_assert_eq(symlink("/dev/zero", path), 0);
  cr_expect_str_eq(in_child(2), "ok");
  expect_entry_restored(path);
}

Test(disk_cache_stress, a_terabyte_entry_is_a_miss_without_reading_it) {
  fresh_cache();
  char path[4200];
  entry_of(3, path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(ftruncate(fd, (off_t)1 << 40), 0, "a sparse file of 1 TiB");
  close(fd);
  cr_expect_str_eq(in_child(3), "ok");
  expect_entry_restored(path);
}

/* The same cases through the entry reader itself, record first (cubins) and last (objects),
 * each answered at once. */
Test(disk_cache_stress, the_entry_reader_refuses_fifos_links_and_huge_files) {
  fresh_cache();
  char fifo[4200], link[4200], huge[4200], dir[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
  snprintf(link, sizeof link, "%s/link", g_dir);
  snprintf(huge, sizeof huge, "%s/huge", g_dir);
  snprintf(dir, sizeof dir, "%s/dir", g_dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(symlink("/dev/zero", link), 0);
  cr_assert_eq(mkdir(dir, 0700), 0);
  int fd = open(huge, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert_eq(ftruncate(fd, (off_t)EXEC_CACHE_ENTRY_MAX + 1), 0);
  close(fd);
  const char *paths[] = {fifo, link, huge, dir};
  alarm(HANG_SECONDS);
  for (int place = 0; place < 2; place++)
    for (int i = 0; i < 4; i++) {
      void *p = NULL;
      size_t n = 0;
      uint64_t size = 0;
      cr_expect_not(exec_disk_entry_read(paths[i], (ExecRecordPlace)place, "key", 3, &p, &n), "%s", paths[i]);
      cr_expect_eq(exec_disk_open_regular(paths[i], &size), -1, "%s", paths[i]);
    }
  alarm(0);
  rmdir(dir);
}

/* Eight processes compile two new kernels each while the parent removes the whole cache
 * directory every few milliseconds: every compile succeeds and computes the right values. */
Test(disk_cache_stress, the_cache_directory_removed_while_eight_processes_compile) {
  fresh_cache();
  for (int i = 0; i < 8; i++) {
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
      alarm(HANG_SECONDS * 4);
      _exit(compile_and_check(100 + 2 * i) | compile_and_check(101 + 2 * i));
    }
  }
  int left = 8, failed = 0, removals = 0;
  while (left) {
    remove_tree(g_dir);
    removals++;
    usleep(2000);
    int ws;
    pid_t done;
    while (left && (done = waitpid(-1, &ws, WNOHANG)) > 0) {
      left--;
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) failed++;
    }
  }
  cr_expect_eq(failed, 0, "%d of 8 processes failed to compile (the directory was removed %d times)", failed,
               removals);
  cr_expect_gt(removals, 8);
}
