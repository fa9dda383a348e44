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
 * Collectives run on each line's blocking twin (mesh_comm.h, MeshLine): a split of the
 * non-blocking communicator sharing its resources, made under the same deadline, whose
 * calls enqueue on the calling thread; the first call of each signature waits for a
 * barrier on the non-blocking one first, so a call that connects never waits inside NCCL
 * for a peer that is gone.
 * Key decision: after an abort the group is dead; later calls fail at once with the
 * first message, as NCCL's own communicators would. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "executor/exec_cuda.h"
#include "executor/mesh_comm.h"

static MeshCu g_cu;
static bool g_cu_all;
static pthread_once_t g_cu_once = PTHREAD_ONCE_INIT;

/* Resolved once, from the libcuda exec_device_open loaded (RTLD_NOLOAD: never a second). */
static void cu_load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return;
  *(void **)&g_cu.memcpy2d = dlsym(h, "cuMemcpy2DAsync_v2");
  *(void **)&g_cu.event_create = dlsym(h, "cuEventCreate");
  *(void **)&g_cu.event_record = dlsym(h, "cuEventRecord");
  *(void **)&g_cu.event_destroy = dlsym(h, "cuEventDestroy_v2");
  *(void **)&g_cu.stream_wait_event = dlsym(h, "cuStreamWaitEvent");
  *(void **)&g_cu.stream_query = dlsym(h, "cuStreamQuery");
  g_cu_all = g_cu.memcpy2d && g_cu.event_create && g_cu.event_record && g_cu.event_destroy &&
             g_cu.stream_wait_event && g_cu.stream_query;
}

const MeshCu *mesh_cu(void) {
  pthread_once(&g_cu_once, cu_load);
  return g_cu_all ? &g_cu : NULL;
}

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

/* Ends line l's communicators, the twin first (it shares the other's resources). */
static void line_end(cf_comm *c, MeshLine *l, bool abort) {
  if (l->fast || l->comm) { /* then NCCL is loaded */
    ncclResult_t (*end)(ncclComm_t) = abort ? c->nccl->ncclCommAbort : c->nccl->ncclCommDestroy;
    if (l->fast && l->fast != l->comm) end(l->fast);
    if (l->comm) end(l->comm);
  }
  free(l->warm);
  *l = (MeshLine){0};
}

/* Aborts every communicator (the group is dead) and tells the other ranks. */
static cf_status comm_abort(cf_comm *c, const char *why) {
  if (c->aborted) return c->status;
  c->aborted = true;
  if (c->store) mesh_store_report(c->store, why);
  for (int i = 0; i < c->nsubs; i++) line_end(c, &c->subs[i].line, true);
  line_end(c, &c->world, true);
  c->nsubs = 0;
  return comm_fail(c, CF_ERR_RUNTIME, "%s", why);
}

/* NCCL's asynchronous error of any communicator of the group (ncclSuccess: none). A
 * twin is asked only once made: until then its split writes it from NCCL's thread. */
static ncclResult_t async_error(cf_comm *c) {
  ncclResult_t e = ncclSuccess;
  for (int i = -1; i < c->nsubs && e == ncclSuccess; i++) {
    const MeshLine *l = i < 0 ? &c->world : &c->subs[i].line;
    if (l->comm) c->nccl->ncclCommGetAsyncError(l->comm, &e);
    if (e == ncclSuccess && l->ready) c->nccl->ncclCommGetAsyncError(l->fast, &e);
  }
  return e;
}

/* How long a poll spins (yielding the core) before it sleeps between checks, and the
 * sleeps' bounds (doubling from the first to the last): a collective or a step of
 * microseconds must not wait out a sleep (the first two-GPU run measured 1 MiB
 * all-reduces at a third of torch's bus bandwidth with 100 us sleeps); a wait past the
 * spin is one of milliseconds, which a sleep of at most MESH_POLL_SLEEP_MAX_US (plus the
 * kernel's timer slack) lengthens by a few percent at most. */
enum { MESH_POLL_SPIN_MS = 10, MESH_POLL_SLEEP_MIN_US = 20, MESH_POLL_SLEEP_MAX_US = 200 };

/* Polls until check() is done, an NCCL error, a failed peer or the deadline. */
cf_status mesh_comm_poll(cf_comm *c, int (*check)(void *), void *arg, const char *what) {
  if (c->aborted) return c->status;
  long long start = now_ms(), deadline = start + c->timeout_ms;
  char msg[300];
  unsigned sleep_us = MESH_POLL_SLEEP_MIN_US;
  for (;;) {
    int r = check ? check(arg) : 1;
    if (r < 0) return comm_abort(c, what);
    ncclResult_t e = async_error(c);
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
    else {
      usleep(sleep_us);
      sleep_us = sleep_us * 2 > MESH_POLL_SLEEP_MAX_US ? MESH_POLL_SLEEP_MAX_US : sleep_us * 2;
    }
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

/* blocking 0: every call returns at once and is polled (the communicators made under the
 * deadline); splitShare 1: their splits (the blocking twins, the lines) share their
 * resources rather than allocate their own; a twin is blocking and shares nothing more. */
static ncclConfig_2_18 comm_config(bool blocking) {
  return (ncclConfig_2_18){sizeof(ncclConfig_2_18), NCCL_API_MAGIC, NCCL_CONFIG_2_18_VERSION, blocking ? 1 : 0,
                           NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NULL,
                           blocking ? NCCL_CONFIG_UNDEF_INT : 1};
}

/* Line l's blocking twin: a split of its non-blocking communicator (every member, in
 * the same order), polled like any split. CFUSER_NCCL_TWIN=0 makes none (the collectives
 * run on the non-blocking communicator, each polled to its launch, and need no barrier):
 * the way to tell a fault of the twins from others on a GPU node. */
static cf_status make_twin(cf_comm *c, MeshLine *l, int key) {
  const char *env = getenv("CFUSER_NCCL_TWIN");
  if (env && !strcmp(env, "0")) return l->fast = l->comm, CF_OK;
  ncclConfig_2_18 cfg = comm_config(true);
  cf_status st = mesh_comm_check(c, c->nccl->ncclCommSplit(l->comm, 0, key, &l->fast, &cfg), "ncclCommSplit (twin)");
  l->ready = !st && l->fast;
  if (!st && !l->fast) return comm_fail(c, CF_ERR_RUNTIME, "rank %d: ncclCommSplit made no twin", c->rank);
  return st;
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
  ncclConfig_2_18 cfg = comm_config(false);
  cf_status st = mesh_comm_check(c, c->nccl->ncclCommInitRankConfig(&c->world.comm, c->size, id, c->rank, &cfg),
                                 "ncclCommInitRankConfig");
  int64_t one = 1;
  if (!st && exec_tensor_device_async(c->local_rank, c->comm_stream, CF_INT32, 1, &one, &c->barrier, err, sizeof err))
    return comm_fail(c, CF_ERR_CUDA, "%s", err);
  return st ? st : make_twin(c, &c->world, c->rank);
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
  for (int i = 0; i < c->nsubs; i++) line_end(c, &c->subs[i].line, false);
  line_end(c, &c->world, false);
  cf_tensor_free(c->barrier); /* in the order of comm_stream, destroyed next */
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

/* The line through this rank along mesh axis dim: the world when the line is every rank
 * in order, else a split of the world made once (every rank calls the split, those off
 * every line with NCCL_SPLIT_NOCOLOR, -1), with its twin. NULL when this rank is on no
 * line (it takes no part). */
cf_status mesh_comm_line(cf_comm *c, const cf_device_mesh *m, int dim, MeshLine **out) {
  *out = NULL;
  int n = cf_device_mesh_size(m), line = -1, pos = 0, team[CF_MESH_MAX_DEVICES];
  bool world = m->ndims == 1 && n == c->size;
  for (int i = 0; world && i < n; i++) world = m->devices[i] == i;
  if (world) return *out = &c->world, CF_OK;
  for (int i = 0; i < c->nsubs; i++)
    if (c->subs[i].dim == dim && cf_device_mesh_equal(&c->subs[i].mesh, m))
      return *out = c->subs[i].line.comm ? &c->subs[i].line : NULL, CF_OK;
  if (c->nsubs == MESH_COMM_MAX_SUBS)
    return comm_fail(c, CF_ERR_UNSUPPORTED, "mesh: more than %d mesh lines in one group", MESH_COMM_MAX_SUBS);
  if (mesh_team(m, dim, c->rank, team, &pos) > 0) {
    int idx = cf_device_mesh_index(m, c->rank);
    line = dim < 0 || m->ndims == 1 ? 0 : dim == 0 ? idx % m->shape[1] : idx / m->shape[1];
  }
  ncclConfig_2_18 cfg = comm_config(false);
  /* kept before the wait, so that the poll watches the new communicator's initialization
   * (non-blocking: it answers ncclInProgress until ready) */
  MeshSub *sub = &c->subs[c->nsubs++];
  *sub = (MeshSub){*m, dim, {0}};
  cf_status st = mesh_comm_check(c, c->nccl->ncclCommSplit(c->world.comm, line, pos, &sub->line.comm, &cfg),
                                 "ncclCommSplit");
  if (!st && sub->line.comm) st = make_twin(c, &sub->line, pos);
  *out = st || !sub->line.comm ? NULL : &sub->line;
  return st;
}

static int comm_stream_done(void *arg) {
  cf_comm *c = arg;
  int q = mesh_cu()->stream_query(c->comm_stream);
  return q == 0 ? 1 : q == 600 /* CUDA_ERROR_NOT_READY */ ? 0 : -1;
}

/* Whether line l's twin has run sig; else records it (false: out of memory too, which
 * only costs a barrier more). */
static bool is_warm(MeshLine *l, MeshCallSig sig) {
  for (int i = 0; i < l->nwarm; i++) {
    const MeshCallSig *w = &l->warm[i];
    if (w->kind == sig.kind && w->op == sig.op && w->type == sig.type && w->count == sig.count) return true;
  }
  if (l->nwarm == l->capwarm) {
    int cap = l->capwarm ? 2 * l->capwarm : 8;
    MeshCallSig *w = realloc(l->warm, sizeof *w * (size_t)cap);
    if (!w) return false;
    l->warm = w;
    l->capwarm = cap;
  }
  l->warm[l->nwarm++] = sig;
  return false;
}

static ncclResult_t call(cf_comm *c, ncclComm_t k, MeshCommKind kind, const void *send, void *recv, size_t count,
                         ncclDataType_t type, ncclRedOp_t op) {
  const NcclApi *n = c->nccl;
  if (kind == MC_ALLREDUCE) return n->ncclAllReduce(send, recv, count, type, op, k, c->comm_stream);
  if (kind == MC_ALLGATHER) return n->ncclAllGather(send, recv, count, type, k, c->comm_stream);
  if (kind == MC_REDUCE_SCATTER) return n->ncclReduceScatter(send, recv, count, type, op, k, c->comm_stream);
  return ncclInvalidArgument;
}

cf_status mesh_comm_collective(cf_comm *c, MeshLine *l, MeshCommKind kind, const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op, const char *what) {
  if (c->aborted) return c->status;
  if (!mesh_cu()) return comm_fail(c, CF_ERR_CUDA, "mesh: the CUDA driver lacks cuStreamQuery or events");
  if (l->fast != l->comm && !is_warm(l, (MeshCallSig){(int)kind, (int)op, (int)type, count})) {
    void *b = c->barrier->dl_tensor.data;
    const char *why = "the barrier before a first collective";
    cf_status st = mesh_comm_check(c, c->nccl->ncclAllReduce(b, b, 1, ncclInt32, ncclSum, l->comm, c->comm_stream), why);
    if (!st) st = mesh_comm_poll(c, comm_stream_done, c, why);
    if (st) return st;
    c->barriers++;
  }
  ncclResult_t r = call(c, l->fast, kind, send, recv, count, type, op);
  if (r == ncclSuccess) return CF_OK; /* blocking: enqueued; the caller's last wait polls it */
  return mesh_comm_check(c, r, what);
}
