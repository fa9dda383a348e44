/* tests/multidevice/test_mesh_failure.c: the failure model of the multi-device executor
 * where it runs without GPUs: the group's TCP store (executor/mesh_store.c) carries a
 * rank's failure to every rank within the timeout, a rank that dies is reported as gone,
 * the NCCL id file exchange, NCCL's absence said plainly, and the host mesh reporting a
 * device whose input was killed. Ranks are forked processes on this machine. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "executor/mesh_store.h"
#include "multidevice/mesh_util.h"

static long long ms_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A port for this test run: distinct per process so parallel ctest runs do not meet. */
static int test_port(void) { return 20000 + (int)(getpid() % 20000); }

/* Each rank waits (as a collective would) until the store reports a failure or 5 s pass;
 * it exits 0 when the message is `want` and came within 2 s. Rank `bad` reports `what`
 * (or dies, when what is NULL) after joining. */
static int rank_main(int rank, int size, int port, int bad, const char *what, const char *want) {
  char err[300], msg[300] = "";
  MeshStore *s = mesh_store_open(rank, size, "127.0.0.1", port, 5000, err, sizeof err);
  if (!s) return 10;
  unsigned char id[128] = {0};
  if (rank == 0) memset(id, 7, sizeof id);
  if (mesh_store_broadcast(s, id, sizeof id, err, sizeof err) || id[5] != 7) return 11;
  if (rank == bad) {
    if (!what) _exit(0); /* dies without a word */
    mesh_store_report(s, what);
    usleep(300000);
    mesh_store_close(s);
    return 0;
  }
  long long t0 = ms_now();
  while (!mesh_store_failed(s, msg, sizeof msg) && ms_now() - t0 < 5000) usleep(1000);
  long long took = ms_now() - t0;
  usleep(200000); /* rank 0 keeps relaying a moment */
  mesh_store_close(s);
  if (strcmp(msg, want)) {
    fprintf(stderr, "rank %d heard '%s', not '%s'\n", rank, msg, want);
    return 12;
  }
  return took < 2000 ? 0 : 13;
}

static void run_group(int size, int bad, const char *what, const char *want) {
  int port = test_port();
  pid_t pids[8];
  for (int r = 0; r < size; r++)
    if ((pids[r] = fork()) == 0) _exit(rank_main(r, size, port, bad, what, want));
  for (int r = 0; r < size; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank %d exited with %d", r, WEXITSTATUS(status));
  }
}

Test(mesh_failure, a_failed_rank_is_reported_on_every_rank) {
  run_group(4, 1, "input 0 is NULL", "rank 1 failed: input 0 is NULL");
}

Test(mesh_failure, rank_0_failing_is_reported_too) {
  run_group(3, 0, "out of memory", "rank 0 failed: out of memory");
}

Test(mesh_failure, a_rank_that_dies_is_reported_as_gone) {
  run_group(3, 2, NULL, "rank 2 exited");
}

Test(mesh_failure, joining_times_out_instead_of_hanging) {
  char err[300];
  long long t0 = ms_now();
  MeshStore *s = mesh_store_open(1, 2, "127.0.0.1", test_port() + 1, 300, err, sizeof err);
  cr_expect_null(s);
  cr_expect(ms_now() - t0 < 3000);
  char want[128];
  snprintf(want, sizeof want, "mesh store: rank 1 cannot reach rank 0 at 127.0.0.1:%d within 300 ms", test_port() + 1);
  cr_expect_str_eq(err, want);
}

Test(mesh_failure, id_file_exchange) {
  char path[64], err[300];
  snprintf(path, sizeof path, "/tmp/cfuser_nccl_id_%d", (int)getpid());
  unlink(path);
  unsigned char id[128], got[128];
  memset(id, 3, sizeof id);
  pid_t p = fork();
  if (p == 0) _exit(mesh_id_file_exchange(path, 1, got, sizeof got, 5000, err, sizeof err) || got[100] != 3);
  usleep(50000);
  cr_expect_eq(mesh_id_file_exchange(path, 0, id, sizeof id, 5000, err, sizeof err), CF_OK, "%s", err);
  int status = 0;
  waitpid(p, &status, 0);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  unlink(path);
  cr_expect_eq(mesh_id_file_exchange("/tmp/cfuser_no_such_id_file", 1, got, sizeof got, 100, err, sizeof err),
               CF_ERR_RUNTIME);
  cr_expect_str_eq(err, "mesh: the NCCL id file /tmp/cfuser_no_such_id_file did not appear within 100 ms");
}

Test(mesh_failure, nccl_missing_is_said_plainly) {
  setenv("CFUSER_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  const char *why = NULL;
  cr_expect(!cf_nccl_available(&why));
  cr_expect(strncmp(why, "NCCL unavailable: /nonexistent/libnccl.so.2 not found", 53) == 0, "%s", why);
  cf_comm *c = NULL;
  char err[300];
  cr_expect_eq(cf_comm_init(&c, 1000, err, sizeof err), CF_ERR_UNSUPPORTED);
  cr_expect(strncmp(err, "NCCL unavailable", 16) == 0, "%s", err);
  cf_comm_destroy(c);
}

/* On the host mesh a killed input on one device fails the run, naming that device. */
Test(mesh_failure, host_mesh_reports_the_device_whose_input_died) {
  cf_fusion *f = cf_fusion_create();
  cf_device_mesh m = mu_mesh(4);
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv_set_device_mesh(f, a, &m);
  cf_parallelize(f, a, 0, CF_PT_DIDX);
  cf_fusion_add_output(f, cf_sum(f, a, 1, (int[]){0}));
  cf_mesh_executor *x = cf_mesh_executor_create(f, NULL);
  DLManagedTensor *in = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){1, 8}), *out[4];
  const DLTensor *ins[4] = {&in->dl_tensor, &in->dl_tensor, NULL, &in->dl_tensor};
  cr_expect_eq(cf_mesh_run_host(x, 4, 1, ins, 1, out), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_mesh_executor_error(x), "mesh: device 2 has no shard of T0");
  cf_tensor_free(in);
  cf_mesh_executor_destroy(x);
  cf_fusion_destroy(f);
}
