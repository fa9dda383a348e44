/* The disk cache of compiled kernels (cubins and host shared objects): a second process
 * compiles nothing, eight processes compiling at once all succeed, a truncated or foreign
 * entry is compiled again, and the cache directory is used only when it is the user's own:
 * created 0700, refused when another user owns it or others may write it (the /tmp
 * fallback included), an error when its path is too long, off with CFUSER_CACHE=0; an
 * entry holds its key's SHA-256, never the key (tests/executor/test_disk_cache_stress.c:
 * FIFOs, links, huge files, the directory removed; test_disk_cache_cap.c: the cap). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/disk_cache.h"
#include "executor/executor_internal.h"
#include "test_util.h"

/* out = a * k + 1 over [64], 16 threads per block: k makes distinct kernels. */
static cf_fusion *build(double k) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){64});
  cf_fusion_add_input(f, a);
  cf_tv *b = cf_add_scalar(f, cf_mul_scalar(f, a, k), 1.0);
  cf_fusion_add_output(f, b);
  cf_split(f, b, 0, 16);
  cf_parallelize(f, b, 0, CF_PT_BIDX);
  cf_parallelize(f, b, 1, CF_PT_TIDX);
  return f;
}

static char g_made[64]; /* the test's cache directory, removed after it */

static void remove_made(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_made);
  if (g_made[0] && system(cmd) != 0) cr_log_warn("could not remove %s", g_made);
}

TestSuite(disk_cache, .fini = remove_made);

/* A fresh private cache directory as CFUSER_CACHE_DIR (malloc'd path). */
static char *fresh_cache(void) {
  char *dir = strdup("/tmp/cfuser-test-cache-XXXXXX");
  cr_assert(mkdtemp(dir));
  snprintf(g_made, sizeof g_made, "%s", dir);
  setenv("CFUSER_CACHE_DIR", dir, 1);
  return dir;
}

static void need_nvrtc(void) {
  const char *reason = NULL;
  if (!exec_nvrtc_available(&reason)) cr_skip_test("NVRTC unavailable: %s", reason);
}

/* An architecture other than the device's, so that the executor is compile-only and the
 * tests' forked processes never touch the driver. */
static const char *other_arch(void) {
  const char *dev = cf_cuda_available(NULL) ? exec_device_arch() : NULL;
  return dev && !strcmp(dev, "sm_90a") ? "sm_100a" : "sm_90a";
}

/* NVRTC compiles caused by compiling build(k) compile-only (no device needed). */
static int64_t cubin_compiles(double k) {
  int64_t before = exec_nvrtc_compile_count();
  cf_fusion *f = build(k);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = other_arch()});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return exec_nvrtc_compile_count() - before;
}

/* Compiles and runs build(k) on the host backend; true when out[i] == k * i + 1. */
static bool host_runs(double k, cf_status *status, char *msg, size_t msglen) {
  cf_fusion *f = build(k);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 1, (int64_t[]){64}), *out = NULL;
  cf_tensor_fill_iota(&in->dl_tensor);
  const DLTensor *ins[1] = {&in->dl_tensor};
  *status = cf_executor_compile(e, f);
  if (!*status) *status = cf_executor_run(e, 1, ins, 1, &out);
  snprintf(msg, msglen, "%s", cf_executor_error(e));
  bool ok = !*status;
  for (int i = 0; ok && i < 64; i++) ok = cf_tensor_get(&out->dl_tensor, i) == (double)(float)((float)i * k + 1);
  cf_tensor_free(in);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
  return ok;
}

static void expect_host_runs(double k) {
  cf_status s;
  char msg[4096];
  cr_assert(host_runs(k, &s, msg, sizeof msg), "status %s: %s", cf_status_name(s), msg);
}

/* The files of dir whose names end with suffix. */
static int count_files(const char *dir, const char *suffix, char *first, size_t len) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *x; d && (x = readdir(d));) {
    size_t a = strlen(x->d_name), b = strlen(suffix);
    if (a >= b && !strcmp(x->d_name + a - b, suffix) && strcmp(x->d_name, ".") && strcmp(x->d_name, "..")) {
      if (!n++ && first) snprintf(first, len, "%s/%s", dir, x->d_name);
    }
  }
  if (d) closedir(d);
  return n;
}

static void truncate_half(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "%s", path);
  cr_assert_eq(truncate(path, st.st_size / 2), 0);
}

Test(disk_cache, a_second_process_compiles_no_cubin) {
  need_nvrtc();
  char *dir = fresh_cache();
  cr_expect_eq(cubin_compiles(3.0), 1);
  cr_expect_eq(count_files(dir, ".cubin", NULL, 0), 1);
  pid_t pid = fork();
  if (pid == 0) _exit((int)cubin_compiles(3.0)); /* another process: 0 NVRTC compiles */
  int ws = 0;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the second process ran NVRTC %d times", WEXITSTATUS(ws));
  free(dir);
}

Test(disk_cache, a_truncated_cubin_is_compiled_again) {
  need_nvrtc();
  char *dir = fresh_cache(), path[4200];
  cr_expect_eq(cubin_compiles(4.0), 1);
  cr_assert_eq(count_files(dir, ".cubin", path, sizeof path), 1);
  truncate_half(path);
  cr_expect_eq(cubin_compiles(4.0), 1);
  cr_expect_eq(cubin_compiles(4.0), 0); /* the entry was replaced by a whole one */
  free(dir);
}

Test(disk_cache, cfuser_cache_0_turns_the_disk_cache_off) {
  need_nvrtc();
  char *dir = fresh_cache();
  setenv("CFUSER_CACHE", "0", 1);
  cr_expect_eq(cubin_compiles(5.0), 1);
  cr_expect_eq(cubin_compiles(5.0), 1);
  expect_host_runs(5.0);
  cr_expect_eq(count_files(dir, "", NULL, 0), 0, "nothing is written to %s", dir);
  free(dir);
}

Test(disk_cache, eight_processes_compiling_at_once_all_succeed) {
  char *dir = fresh_cache();
  const char *reason = NULL;
  bool nvrtc = exec_nvrtc_available(&reason);
  pid_t pids[8];
  for (int i = 0; i < 8; i++) {
    if ((pids[i] = fork()) == 0) {
      cf_status s;
      char msg[4096];
      bool ok = host_runs(6.0, &s, msg, sizeof msg);
      if (ok && nvrtc) ok = cubin_compiles(6.0) <= 1;
      _exit(ok ? 0 : 1);
    }
  }
  for (int i = 0; i < 8; i++) {
    int ws = 0;
    cr_assert_eq(waitpid(pids[i], &ws, 0), pids[i]);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "process %d failed", i);
  }
  cr_expect_eq(count_files(dir, ".so", NULL, 0), 1, "one file per host kernel");
  cr_expect_eq(count_files(dir, ".idx", NULL, 0) + count_files(dir, ".c", NULL, 0), 0, "no index, no source");
  cr_expect_eq(count_files(dir, ".cubin", NULL, 0), nvrtc ? 1 : 0);
  DIR *d = opendir(dir);
  for (struct dirent *x; d && (x = readdir(d));) cr_expect(!strstr(x->d_name, ".tmp."), "left behind: %s", x->d_name);
  if (d) closedir(d);
  free(dir);
}

Test(disk_cache, a_truncated_shared_object_is_compiled_again) {
  char *dir = fresh_cache(), path[4200];
  expect_host_runs(7.0);
  cr_assert_eq(count_files(dir, ".so", path, sizeof path), 1);
  struct stat whole;
  cr_assert_eq(stat(path, &whole), 0);
  truncate_half(path);
  expect_host_runs(7.0); /* not SIGBUS in dlopen */
  struct stat again;
  cr_assert_eq(stat(path, &again), 0);
  cr_expect_eq(again.st_size, whole.st_size);
  free(dir);
}

Test(disk_cache, another_kernels_object_under_the_name_is_not_loaded) {
  char *dir = fresh_cache(), a[4200], b[4200];
  expect_host_runs(8.0);
  cr_assert_eq(count_files(dir, ".so", a, sizeof a), 1);
  char *moved = NULL;
  cr_assert(asprintf(&moved, "%s.first", a) > 0);
  cr_assert_eq(rename(a, moved), 0);
  expect_host_runs(9.0);
  cr_assert_eq(count_files(dir, ".so", b, sizeof b), 1);
  cr_assert_eq(rename(b, a), 0); /* kernel 9's object where kernel 8's belongs */
  expect_host_runs(8.0);         /* right result: kernel 8 compiled again */
  free(moved);
  free(dir);
}

Test(disk_cache, the_directory_is_created_private) {
  char *dir = fresh_cache(), *sub = NULL;
  cr_assert(asprintf(&sub, "%s/a/b", dir) > 0);
  setenv("CFUSER_CACHE_DIR", sub, 1);
  expect_host_runs(10.0);
  struct stat st;
  cr_assert_eq(stat(sub, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0700);
  cr_expect_eq(count_files(sub, ".so", NULL, 0), 1);
  free(sub);
  free(dir);
}

Test(disk_cache, a_directory_others_may_write_is_refused) {
  char *dir = fresh_cache(), *d = NULL, err[4400];
  bool too_long = true;
  cr_assert_eq(chmod(dir, 0777), 0);
  cr_expect_eq(exec_disk_cache_dir(&d, &too_long, err, sizeof err), CF_ERR_IO);
  cr_expect(!too_long);
  char want[4400];
  snprintf(want, sizeof want, "the kernel cache directory %s is writable by other users (mode 777); its kernels are "
           "not trusted (chmod 700 it, or set CFUSER_CACHE_DIR)", dir);
  cr_expect_str_eq(err, want);
  expect_host_runs(11.0); /* compiled in a private directory instead */
  cr_expect_eq(count_files(dir, "", NULL, 0), 0, "nothing is read from or written to %s", dir);
  free(dir);
}

Test(disk_cache, a_directory_of_another_user_is_refused) {
  if (geteuid() != 0) cr_skip_test("needs root to give a directory to another user");
  char *dir = fresh_cache(), *d = NULL, err[4400], want[4400];
  bool too_long = true;
  cr_assert_eq(chown(dir, 65534, 65534), 0);
  cr_expect_eq(exec_disk_cache_dir(&d, &too_long, err, sizeof err), CF_ERR_IO);
  snprintf(want, sizeof want, "the kernel cache directory %s belongs to user 65534, not to this user (0); its "
           "kernels are not trusted", dir);
  cr_expect_str_eq(err, want);
  expect_host_runs(12.0);
  cr_expect_eq(count_files(dir, "", NULL, 0), 0);
  free(dir);
}

Test(disk_cache, a_planted_tmp_fallback_is_refused) {
  unsetenv("CFUSER_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  char tmp[64], *d = NULL, err[4400], want[4400];
  snprintf(tmp, sizeof tmp, "/tmp/cfuser-%u", (unsigned)geteuid());
  struct stat st;
  if (lstat(tmp, &st) == 0) cr_skip_test("%s exists; the test will not touch it", tmp);
  cr_assert_eq(mkdir(tmp, 0777), 0);
  cr_assert_eq(chmod(tmp, 0777), 0); /* as another user would have made it */
  bool too_long = true;
  cf_status s = exec_disk_cache_dir(&d, &too_long, err, sizeof err);
  snprintf(want, sizeof want, "the kernel cache directory %s is writable by other users (mode 777); its kernels are "
           "not trusted (chmod 700 it, or set CFUSER_CACHE_DIR)", tmp);
  cf_status run;
  char msg[4096];
  bool ok = host_runs(13.0, &run, msg, sizeof msg);
  int left = count_files(tmp, "", NULL, 0);
  rmdir(tmp);
  cr_expect_eq(s, CF_ERR_IO);
  cr_expect_str_eq(err, want);
  cr_expect(ok, "%s", msg);
  cr_expect_eq(left, 0);
}

Test(disk_cache, a_cache_path_too_long_is_an_error) {
  char *dir = fresh_cache(), *longer = malloc(4101);
  snprintf(longer, 4101, "%s/", dir);
  size_t n = strlen(longer);
  memset(longer + n, 'a', 4100 - n);
  longer[4100] = 0;
  setenv("CFUSER_CACHE_DIR", longer, 1);
  cf_status s;
  char msg[4096];
  cr_expect(!host_runs(14.0, &s, msg, sizeof msg));
  cr_expect_eq(s, CF_ERR_IO);
  cr_expect_str_eq(msg, "compile: the kernel cache directory (from CFUSER_CACHE_DIR) is 4100 characters long; the "
                        "limit is 3900");
  free(longer);
  free(dir);
}

/* An entry's record (56 bytes: magic, the key's SHA-256, length and hash of the payload)
 * leads or trails its payload; the key itself is not in the file. */
static void entry_round_trip(ExecRecordPlace place) {
  char *dir = fresh_cache(), *path = NULL;
  cr_assert(asprintf(&path, "%s/e.bin", dir) > 0);
  const char payload[] = "the payload of an entry";
  cr_assert(exec_disk_entry_write(path, place, "key A", 5, payload, sizeof payload));
  void *got = NULL;
  size_t n = 0;
  cr_assert(exec_disk_entry_read(path, place, "key A", 5, &got, &n));
  cr_expect_eq(n, sizeof payload);
  cr_expect_str_eq(got, payload);
  free(got);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_expect_eq(st.st_size, (off_t)sizeof payload + 56, "the payload and a 56-byte record, not the key");
  cr_expect_eq(st.st_mode & 0777, 0600);
  cr_expect_not(exec_disk_entry_read(path, place, "key B", 5, &got, &n), "another key under the same name");
  cr_expect_not(exec_disk_entry_read(path, place, "key", 3, &got, &n), "a prefix of the key");
  cr_expect_not(exec_disk_entry_read(path, 1 - place, "key A", 5, &got, &n), "the record in the other place");
  int fd = open(path, O_RDWR); /* one payload byte flipped */
  off_t at = place == EXEC_RECORD_FIRST ? st.st_size - 3 : 3;
  char c;
  cr_assert_eq(pread(fd, &c, 1, at), 1);
  c ^= 1;
  cr_assert_eq(pwrite(fd, &c, 1, at), 1);
  close(fd);
  cr_expect_not(exec_disk_entry_read(path, place, "key A", 5, &got, &n), "a corrupted payload");
  cr_assert(exec_disk_entry_write(path, place, "key A", 5, payload, sizeof payload));
  cr_assert_eq(truncate(path, st.st_size - 1), 0);
  cr_expect_not(exec_disk_entry_read(path, place, "key A", 5, &got, &n), "a truncated entry");
  cr_assert_eq(truncate(path, 3), 0);
  cr_expect_not(exec_disk_entry_read(path, place, "key A", 5, &got, &n), "less than a record");
  free(path);
  free(dir);
}

Test(disk_cache, an_entry_reads_back_only_whole_and_under_its_own_key) { entry_round_trip(EXEC_RECORD_FIRST); }
Test(disk_cache, an_entry_with_its_record_last_likewise) { entry_round_trip(EXEC_RECORD_LAST); }

/* SHA-256 against the standard's examples (FIPS 180-2, appendix B), and a two-block tail. */
Test(disk_cache, sha256_of_the_standard_examples) {
  char hex[65];
  exec_sha256_hex("abc", 3, hex);
  cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  exec_sha256_hex("", 0, hex);
  cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  exec_sha256_hex(two, strlen(two), hex);
  cr_expect_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

Test(disk_cache, a_corrupted_cubin_is_compiled_again) {
  need_nvrtc();
  char *dir = fresh_cache(), path[4200];
  cr_expect_eq(cubin_compiles(15.0), 1);
  cr_assert_eq(count_files(dir, ".cubin", path, sizeof path), 1);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  int fd = open(path, O_RDWR);
  char c;
  cr_assert_eq(pread(fd, &c, 1, st.st_size / 2 + 100), 1);
  c ^= 0x40;
  cr_assert_eq(pwrite(fd, &c, 1, st.st_size / 2 + 100), 1);
  close(fd);
  cr_expect_eq(cubin_compiles(15.0), 1);
  cr_expect_eq(cubin_compiles(15.0), 0);
  free(dir);
}
