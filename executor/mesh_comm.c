/* executor/mesh_comm.c: a process group over NCCL (cf_comm, multidevice.h): bootstrap
 * from the launcher's environment, sub-communicators for lines of a mesh, and waits that
 * never hang.
 *
 * RANK, WORLD_SIZE and LOCAL_RANK come from the environment (torchrun's); NCCL's unique
 * id travels from rank 0 through our TCP store (MASTER_ADDR:MASTER_PORT + 1, so that a
 * torch.distributed store on MASTER_PORT can run beside it) or the file
 * CFUSER_NCCL_ID_FILE. The communicators are non-blocking (config.blocking = 0): every
 * call that answers ncclInProgress is polled, and every wait for a stream polls, with
 * one deadline, the stream, ncclCommGetAsyncError of each communicator and the store's
 * failure channel; an error, a failed peer or the deadline aborts the communicators
 * (ncclCommAbort) and is reported, naming the rank that failed when one said so.
 * Key decision: after an abort the group is dead; later calls fail at once with the
 * first message, as NCCL's own communicators would. */
#include <dlfcn.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "executor/exec_cuda.h"
#include "executor/mesh_comm.h"

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static cf_status comm_fail(cf_comm *c, cf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_status comm_fail(cf_comm *c, cf_status st, const char *fmt, ...) {
  if (c->error[0]) return c->status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->error, sizeof c->error, fmt, ap);
  va_end(ap);
  c->status = st;
  return st;
}

/* Aborts every communicator (the group is dead) and tells the other ranks. */
static cf_status comm_abort(cf_comm *c, const char *why) {
  if (c->aborted) return c->status;
  c->aborted = true;
  if (c->store) mesh_store_report(c->store, why);
  for (int i = 0; i < c->nsubs; i++)
    if (c->subs[i].comm && c->subs[i].comm != c->world) c->nccl->ncclCommAbort(c->subs[i].comm);
  if (c->world) c->nccl->ncclCommAbort(c->world);
  c->world = NULL;
  c->nsubs = 0;
  return comm_fail(c, CF_ERR_RUNTIME, "%s", why);
}

/* How long a poll spins (yielding the core) before it sleeps between checks: a
 * collective or a step of microseconds must not wait out a sleep (the first two-GPU run
 * measured 1 MiB all-reduces at a third of torch's bus bandwidth with 100 us sleeps). */
enum { MESH_POLL_SPIN_MS = 2, MESH_POLL_SLEEP_US = 100 };

/* Polls until check() is done, an NCCL error, a failed peer or the deadline. */
cf_status mesh_comm_poll(cf_comm *c, int (*check)(void *), void *arg, const char *what) {
  if (c->aborted) return c->status;
  long long start = now_ms(), deadline = start + c->timeout_ms;
  char msg[300];
  for (;;) {
    int r = check ? check(arg) : 1;
    if (r < 0) return comm_abort(c, what);
    ncclResult_t e = ncclSuccess;
    for (int i = -1; i < c->nsubs && e != ncclInProgress && (e == ncclSuccess); i++) {
      ncclComm_t k = i < 0 ? c->world : c->subs[i].comm;
      if (k) c->nccl->ncclCommGetAsyncError(k, &e);
    }
    if (e != ncclSuccess && e != ncclInProgress) {
      snprintf(msg, sizeof msg, "rank %d: %s: NCCL error: %s", c->rank, what, c->nccl->ncclGetErrorString(e));
      return comm_abort(c, msg);
    }
    if (r > 0 && e == ncclSuccess) return CF_OK;
    if (mesh_store_failed(c->store, msg, sizeof msg)) {
      char why[400];
      snprintf(why, sizeof why, "rank %d: %s: %s", c->rank, what, msg);
      mesh_store_report(c->store, why); /* already aborting: nothing new for the others */
      return comm_abort(c, why);
    }
    if (now_ms() > deadline) {
      snprintf(msg, sizeof msg, "rank %d: %s: timed out after %d ms (a peer did not join)", c->rank, what, c->timeout_ms);
      return comm_abort(c, msg);
    }
    if (now_ms() - start < MESH_POLL_SPIN_MS) sched_yield();
    else usleep(MESH_POLL_SLEEP_US);
  }
}

cf_status mesh_comm_check(cf_comm *c, ncclResult_t r, const char *what) {
  if (r == ncclSuccess || r == ncclInProgress) return mesh_comm_poll(c, NULL, NULL, what);
  char msg[300];
  snprintf(msg, sizeof msg, "rank %d: %s: %s", c->rank, what, c->nccl->ncclGetErrorString(r));
  return comm_abort(c, msg);
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static ncclConfig_2_18 nonblocking_config(void) {
  return (ncclConfig_2_18){sizeof(ncclConfig_2_18), NCCL_API_MAGIC, NCCL_CONFIG_2_18_VERSION, 0,
                           NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NULL,
                           NCCL_CONFIG_UNDEF_INT};
}

/* The unique id from rank 0: through the id file when CFUSER_NCCL_ID_FILE is set, else
 * through the TCP store. */
static cf_status exchange_id(cf_comm *c, ncclUniqueId *id) {
  char err[300];
  const char *file = getenv("CFUSER_NCCL_ID_FILE");
  if (c->rank == 0 && c->nccl->ncclGetUniqueId(id) != ncclSuccess)
    return comm_fail(c, CF_ERR_RUNTIME, "rank 0: ncclGetUniqueId failed");
  if (file && *file) {
    cf_status st = mesh_id_file_exchange(file, c->rank, id, sizeof *id, c->timeout_ms, err, sizeof err);
    return st ? comm_fail(c, st, "%s", err) : CF_OK;
  }
  const char *addr = getenv("MASTER_ADDR");
  int port = env_int("MASTER_PORT", 29500) + 1;
  c->store = mesh_store_open(c->rank, c->size, addr && *addr ? addr : "127.0.0.1", port, c->timeout_ms, err, sizeof err);
  if (!c->store) return comm_fail(c, CF_ERR_RUNTIME, "%s", err);
  cf_status st = mesh_store_broadcast(c->store, id, sizeof *id, err, sizeof err);
  return st ? comm_fail(c, st, "%s", err) : CF_OK;
}

static cf_status comm_start(cf_comm *c) {
  const char *why = NULL;
  char err[300];
  if (!(c->nccl = nccl_api(&why))) return comm_fail(c, CF_ERR_UNSUPPORTED, "%s", why);
  if (c->rank < 0 || c->size < 1 || c->rank >= c->size)
    return comm_fail(c, CF_ERR_INVALID_ARGUMENT, "cf_comm_init: RANK and WORLD_SIZE are unset or out of range "
                                                 "(run under torchrun, or set them)");
  const ExecDeviceInfo *info = NULL;
  if (exec_device_open(c->local_rank, &info, err, sizeof err)) return comm_fail(c, CF_ERR_NO_DEVICE, "%s", err);
  if (exec_stream_create(c->local_rank, &c->comm_stream, err, sizeof err) ||
      exec_stream_create(c->local_rank, &c->compute_stream, err, sizeof err))
    return comm_fail(c, CF_ERR_CUDA, "%s", err);
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (exchange_id(c, &id)) return c->status;
  ncclConfig_2_18 cfg = nonblocking_config();
  return mesh_comm_check(c, c->nccl->ncclCommInitRankConfig(&c->world, c->size, id, c->rank, &cfg),
                         "ncclCommInitRankConfig");
}

cf_status cf_comm_init(cf_comm **out, int timeout_ms, char *err, size_t errlen) {
  if (!out) return CF_ERR_INVALID_ARGUMENT;
  cf_comm *c = calloc(1, sizeof *c);
  *out = c;
  if (!c) return CF_ERR_OUT_OF_MEMORY;
  c->rank = env_int("RANK", -1);
  c->size = env_int("WORLD_SIZE", -1);
  c->local_rank = env_int("LOCAL_RANK", c->rank < 0 ? 0 : c->rank);
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : env_int("CFUSER_NCCL_TIMEOUT_MS", 60000);
  cf_status st = comm_start(c);
  if (err && errlen) snprintf(err, errlen, "%s", c->error);
  return st;
}

void cf_comm_destroy(cf_comm *c) {
  if (!c) return;
  for (int i = 0; i < c->nsubs; i++)
    if (c->subs[i].comm && c->subs[i].comm != c->world) c->nccl->ncclCommDestroy(c->subs[i].comm);
  if (c->world) c->nccl->ncclCommDestroy(c->world);
  if (c->comm_stream) exec_stream_destroy(c->local_rank, c->comm_stream);
  if (c->compute_stream) exec_stream_destroy(c->local_rank, c->compute_stream);
  mesh_store_close(c->store);
  free(c);
}

int cf_comm_rank(const cf_comm *c) { return c ? c->rank : -1; }
int cf_comm_size(const cf_comm *c) { return c ? c->size : 0; }
const char *cf_comm_error(const cf_comm *c) { return c ? c->error : ""; }

cf_status cf_comm_report_failure(cf_comm *c, const char *what) {
  if (!c) return CF_ERR_INVALID_ARGUMENT;
  char why[300];
  snprintf(why, sizeof why, "rank %d failed: %s", c->rank, what ? what : "");
  return comm_abort(c, why);
}

/* The communicator of the line through this rank along mesh axis dim: the world when the
 * line is every rank in order, else a split of the world made once (every rank calls
 * the split, those off every line with NCCL_SPLIT_NOCOLOR, -1). NULL when this rank is
 * on no line (it takes no part). */
cf_status mesh_comm_line(cf_comm *c, const cf_device_mesh *m, int dim, ncclComm_t *out) {
  *out = NULL;
  int n = cf_device_mesh_size(m), line = -1, pos = 0, team[CF_MESH_MAX_DEVICES];
  bool world = m->ndims == 1 && n == c->size;
  for (int i = 0; world && i < n; i++) world = m->devices[i] == i;
  if (world) return *out = c->world, CF_OK;
  for (int i = 0; i < c->nsubs; i++)
    if (c->subs[i].dim == dim && cf_device_mesh_equal(&c->subs[i].mesh, m)) return *out = c->subs[i].comm, CF_OK;
  if (c->nsubs == MESH_COMM_MAX_SUBS)
    return comm_fail(c, CF_ERR_UNSUPPORTED, "mesh: more than %d mesh lines in one group", MESH_COMM_MAX_SUBS);
  if (mesh_team(m, dim, c->rank, team, &pos) > 0) {
    int idx = cf_device_mesh_index(m, c->rank);
    line = dim < 0 || m->ndims == 1 ? 0 : dim == 0 ? idx % m->shape[1] : idx / m->shape[1];
  }
  ncclConfig_2_18 cfg = nonblocking_config();
  /* kept before the wait, so that the poll watches the new communicator's initialization
   * (non-blocking: it answers ncclInProgress until ready) */
  MeshSub *sub = &c->subs[c->nsubs++];
  *sub = (MeshSub){*m, dim, NULL};
  cf_status st = mesh_comm_check(c, c->nccl->ncclCommSplit(c->world, line, pos, &sub->comm, &cfg), "ncclCommSplit");
  *out = st ? NULL : sub->comm;
  return st;
}
