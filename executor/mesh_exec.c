/* executor/mesh_exec.c: the multi-device executor (cf_mesh_executor, multidevice.h):
 * define and run over a device mesh.
 *
 * At creation it reads the layouts of the user's fusion (analysis/sharding.c) and keeps
 * a copy of its math with the layout of every tensor beside it, so the user's fusion may
 * die. A run derives each input's global sizes from its local shard (a sharded axis is
 * D times longer), makes the math concrete at those sizes and lowers it to a plan
 * (mesh_plan.c), kept while the sizes repeat; the plan's segments hold define-and-run
 * caches, so their kernels are compiled once. Key decision: the plan is a function of
 * the global sizes only, so every device of a real mesh, lowering independently, makes
 * the same plan and calls the same collectives in the same order (NCCL needs that).
 * Decision: the backend of the segments follows where the shards live, not the machine:
 * the host mesh's shards and collectives are host memory, so its devices run on the host
 * backend even where a GPU exists; cf_mesh_run's shards are CUDA tensors, so CUDA. The
 * options' AUTO means that backend, and an explicit other one is refused with the reason. */
#include <stdlib.h>
#include <string.h>

#include "executor/exec_host.h"
#include "executor/mesh.h"
#include "lower/lower.h"

struct cf_mesh_executor {
  cf_fusion *g;                /* the math, a copy */
  AnSharding *layout;          /* by Val id of g */
  cf_device_mesh *meshes;      /* by Val id of g: the copies layout[] points at */
  const cf_device_mesh *fmesh; /* the fusion's mesh */
  cf_executor_options opts;
  bool has_opts;
  cf_status status;            /* of the creation */
  char *create_error;
  MeshPlan plan;
  bool has_plan;
  uint64_t plan_gen; /* counts the plans made: the run state's buffers belong to one */
  MeshState state;
  cf_backend plan_backend; /* the backend the plan's segments run on */
  int64_t key[64 * CF_MAX_RANK]; /* the global input sizes the plan was made for */
  ErrMsg error;
  cf_status error_status; /* of the last failed check */
};

static cf_status set_error(cf_mesh_executor *x, cf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static cf_status set_error(cf_mesh_executor *x, cf_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  errmsg_vset(&x->error, fmt, ap);
  va_end(ap);
  return st;
}

/* Copies f's math and its layouts into x. */
static cf_status adopt(cf_mesh_executor *x, cf_fusion *f) {
  AnShardings s;
  if (an_shardings_compute(f, &s)) return f->status;
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, f, &n) : NULL;
  Val **map = calloc((size_t)f->vals.len + 1, sizeof(Val *));
  x->g = scratch && map ? ir_fusion_copy_part(f, n, exprs, f->inputs.len, (Val *const *)f->inputs.items, f->outputs.len,
                                              (Val *const *)f->outputs.items, NULL, map)
                        : NULL;
  arena_destroy(scratch);
  if (x->g && !x->g->status) {
    x->layout = calloc((size_t)x->g->vals.len + 1, sizeof(AnSharding));
    x->meshes = calloc((size_t)x->g->vals.len + 1, sizeof(cf_device_mesh));
    for (int i = 0; x->layout && x->meshes && i < f->vals.len; i++) {
      Val *v = f->vals.items[i], *c = map[i];
      if (v->kind != VAL_TV || !c) continue;
      x->layout[c->id] = s.by_id[i];
      if (s.by_id[i].mesh) x->meshes[c->id] = *s.by_id[i].mesh, x->layout[c->id].mesh = &x->meshes[c->id];
      if (s.by_id[i].mesh && !x->fmesh) x->fmesh = &x->meshes[c->id];
    }
  }
  free(map);
  an_shardings_free(&s);
  if (!x->g || !x->layout || !x->meshes) return CF_ERR_OUT_OF_MEMORY;
  if (x->g->status) x->create_error = strdup(cf_fusion_error(x->g));
  return x->g->status;
}

cf_mesh_executor *cf_mesh_executor_create(cf_fusion *f, const cf_executor_options *opts) {
  cf_mesh_executor *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  if (opts) x->opts = *opts, x->has_opts = true;
  if (!f) {
    x->status = CF_ERR_INVALID_ARGUMENT;
    x->create_error = strdup("mesh_executor: the fusion is NULL");
    return x;
  }
  bool had_error = f->status != CF_OK;
  x->status = had_error ? f->status : adopt(x, f);
  if (x->status && !x->create_error)
    x->create_error = strdup(cf_fusion_error(f)[0] ? cf_fusion_error(f) : "mesh_executor: out of memory");
  /* the analysis records a refused layout on f; that error is the executor's to report */
  if (x->status && !had_error) cf_fusion_clear_error(f);
  return x;
}

void cf_mesh_executor_destroy(cf_mesh_executor *x) {
  if (!x) return;
  mesh_state_free(&x->state);
  if (x->has_plan) mesh_plan_free(&x->plan);
  cf_fusion_destroy(x->g);
  free(x->layout);
  free(x->meshes);
  free(x->create_error);
  errmsg_free(&x->error);
  free(x);
}

const char *cf_mesh_executor_error(const cf_mesh_executor *x) { return x ? errmsg_get(&x->error) : ""; }

/* The global sizes of input i from a local shard: sharded axes times the mesh axis. */
static void global_sizes(const cf_mesh_executor *x, int i, const DLTensor *t, int64_t *sizes) {
  Val *tv = x->g->inputs.items[i];
  const AnSharding *l = &x->layout[tv->id];
  for (int a = 0; a < t->ndim; a++)
    sizes[a] = t->shape[a] * (a < TV(tv)->nlogical && l->dim[a] >= 0 ? an_mesh_axis_size(l->mesh, l->dim[a]) : 1);
}

/* The global sizes the shards of input i make agree with its constant extents. */
static cf_status check_extents(cf_mesh_executor *x, int i, const int64_t *sizes) {
  Val *tv = x->g->inputs.items[i];
  for (int a = 0; a < TV(tv)->nlogical; a++) {
    int64_t ext;
    if (ir_scalar_const_value(ID(TV(tv)->logical[a])->extent, &ext) && ext != sizes[a])
      return x->error_status = set_error(x, CF_ERR_INVALID_ARGUMENT,
                                         "mesh: the shards of input %d (%s) make axis %d of extent %lld, not %lld", i,
                                         TV(tv)->display_name, a, (long long)sizes[a], (long long)ext);
  }
  return CF_OK;
}

/* The backend every device of a run uses (see the top of this file): host for the host
 * mesh, CUDA for cf_mesh_run; an explicit option naming the other one is refused. */
static cf_status run_backend(cf_mesh_executor *x, bool host_mesh, cf_backend *out) {
  cf_backend asked = x->has_opts ? x->opts.backend : CF_BACKEND_AUTO;
  *out = host_mesh ? CF_BACKEND_HOST : CF_BACKEND_CUDA;
  if (asked == CF_BACKEND_AUTO || asked == *out) return CF_OK;
  if (asked != CF_BACKEND_HOST && asked != CF_BACKEND_CUDA)
    return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: unknown backend %d in the executor's options", (int)asked);
  if (host_mesh)
    return set_error(x, CF_ERR_INVALID_ARGUMENT,
                     "mesh: the host mesh keeps its shards in host memory and runs every device on the host backend, "
                     "but the executor's options ask for CUDA: use CF_BACKEND_AUTO or CF_BACKEND_HOST (cf_mesh_run "
                     "runs a mesh of GPUs)");
  return set_error(x, CF_ERR_INVALID_ARGUMENT,
                   "mesh: cf_mesh_run runs this process's GPU on CUDA tensors, but the executor's options ask for the "
                   "host backend: use CF_BACKEND_AUTO or CF_BACKEND_CUDA (cf_mesh_run_host simulates a mesh on the host)");
}

/* Every shard given (NULL: a device outside the input's mesh) is in memory that backend b
 * reads; device < 0: the shards of this process (cf_mesh_run), one per input. */
static cf_status check_memory(cf_mesh_executor *x, cf_backend b, int ndev, int nin, const DLTensor *const *shards,
                              int device) {
  for (int k = 0; k < ndev * nin; k++) {
    const DLTensor *t = shards[k];
    if (!t || exec_backend_reads(b, t->device.device_type)) continue;
    const char *name = TV((Val *)x->g->inputs.items[k % nin])->display_name;
    if (device < 0)
      return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: input %d (%s) is in %s, but cf_mesh_run needs device memory",
                       k % nin, name, exec_memory_name(t->device.device_type));
    return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: device %d: input %d (%s) is in %s, but the host mesh needs "
                     "host memory", k / nin, k % nin, name, exec_memory_name(t->device.device_type));
  }
  return CF_OK;
}

/* Makes (or keeps) the plan for the global sizes of `shards` (one local shard per input),
 * its segments run on backend b. */
static cf_status plan_for(cf_mesh_executor *x, const DLTensor *const *shards, cf_backend b) {
  int nin = x->g->inputs.len;
  int64_t key[64 * CF_MAX_RANK] = {0};
  DLTensor fake[64];
  if (nin > 64) return set_error(x, CF_ERR_UNSUPPORTED, "mesh: more than 64 inputs");
  for (int i = 0; i < nin; i++) {
    if (!shards[i]) return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: no device holds input %d", i);
    if (shards[i]->ndim != TV((Val *)x->g->inputs.items[i])->nlogical)
      return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: input %d has %d axes, not %d", i, shards[i]->ndim,
                       TV((Val *)x->g->inputs.items[i])->nlogical);
    global_sizes(x, i, shards[i], &key[i * CF_MAX_RANK]);
    if (check_extents(x, i, &key[i * CF_MAX_RANK])) return x->error_status;
    fake[i] = *shards[i];
    fake[i].shape = &key[i * CF_MAX_RANK];
  }
  if (x->has_plan && x->plan_backend == b && !memcmp(key, x->key, sizeof key)) return CF_OK;
  if (x->has_plan) mesh_plan_free(&x->plan), x->has_plan = false;
  const DLTensor *sizes[64];
  for (int i = 0; i < nin; i++) sizes[i] = &fake[i];
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, x->g, &n) : NULL;
  Val **map = calloc((size_t)x->g->vals.len + 1, sizeof(Val *));
  cf_fusion *c = map && scratch ? ir_fusion_copy_part(x->g, n, exprs, nin, (Val *const *)x->g->inputs.items,
                                                      x->g->outputs.len, (Val *const *)x->g->outputs.items, sizes, map)
                                : NULL;
  arena_destroy(scratch);
  AnShardings s = {c, x->fmesh, c ? calloc((size_t)c->vals.len + 1, sizeof(AnSharding)) : NULL};
  cf_status st = c && s.by_id ? c->status : CF_ERR_OUT_OF_MEMORY;
  for (int i = 0; !st && i < x->g->vals.len; i++)
    if (map[i]) s.by_id[map[i]->id] = x->layout[i];
  free(map);
  if (!st) st = ir_check_extents(c, "mesh");
  cf_executor_options opts = x->has_opts ? x->opts : (cf_executor_options){0};
  opts.backend = b;
  if (!st) st = mesh_plan_build(&x->plan, c, &s, &opts);
  free(s.by_id);
  if (st) {
    set_error(x, st, "%s", c ? cf_fusion_error(c) : "mesh: out of memory");
    if (x->plan.global == c) mesh_plan_free(&x->plan);
    else cf_fusion_destroy(c);
    return st;
  }
  x->has_plan = true;
  x->plan_gen++;
  x->plan_backend = b;
  memcpy(x->key, key, sizeof key);
  if (lower_dump_requested("segments")) mesh_plan_print(&x->plan, stderr);
  return CF_OK;
}

cf_status cf_mesh_run_host(cf_mesh_executor *x, int ndevices, int ninputs, const DLTensor *const *inputs,
                           int noutputs, DLManagedTensor **outputs) {
  if (!x) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&x->error);
  if (x->status) return set_error(x, x->status, "%s", x->create_error);
  if (ndevices < 1 || ndevices > CF_MESH_MAX_DEVICES || !inputs || !outputs || ninputs != x->g->inputs.len ||
      noutputs != x->g->outputs.len)
    return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: run_host takes 1..%d devices, %d inputs and %d outputs per device",
                     CF_MESH_MAX_DEVICES, x->g->inputs.len, x->g->outputs.len);
  cf_backend b;
  if (run_backend(x, true, &b) || check_memory(x, b, ndevices, ninputs, inputs, 0)) return CF_ERR_INVALID_ARGUMENT;
  const DLTensor *first[64] = {0};
  for (int i = 0; i < ninputs && i < 64; i++)
    for (int d = ndevices - 1; d >= 0; d--)
      if (inputs[d * ninputs + i]) first[i] = inputs[d * ninputs + i];
  cf_status st = plan_for(x, first, b);
  if (st) return st;
  char err[512] = "";
  st = mesh_host_run(&x->state, x->plan_gen, &x->plan, ndevices, inputs, outputs, err, sizeof err);
  return st ? set_error(x, st, "%s", err) : CF_OK;
}

cf_status cf_mesh_executor_print_plan(cf_mesh_executor *x, FILE *out) {
  if (!x || !out) return CF_ERR_INVALID_ARGUMENT;
  errmsg_begin(&x->error);
  if (!x->has_plan) return set_error(x, CF_ERR_INVALID_ARGUMENT, "mesh: nothing ran yet");
  mesh_plan_print(&x->plan, out);
  return CF_OK;
}

static int count_steps(const cf_mesh_executor *x, bool comm) {
  int n = 0;
  for (int i = 0; x && x->has_plan && i < x->plan.nsteps; i++)
    n += comm ? x->plan.steps[i].is_comm && mesh_comm_communicates(x->plan.steps[i].comm.kind) : !x->plan.steps[i].is_comm;
  return n;
}

int cf_mesh_executor_num_segments(const cf_mesh_executor *x) { return count_steps(x, false); }
int cf_mesh_executor_num_communications(const cf_mesh_executor *x) { return count_steps(x, true); }

/* For the NCCL executor (mesh_nccl.c): the plan for this device's shards. */
cf_status mesh_exec_plan(cf_mesh_executor *x, const DLTensor *const *shards, const MeshPlan **plan) {
  errmsg_begin(&x->error);
  *plan = NULL;
  if (x->status) return set_error(x, x->status, "%s", x->create_error);
  cf_backend b;
  if (run_backend(x, false, &b) || check_memory(x, b, 1, x->g->inputs.len, shards, -1)) return CF_ERR_INVALID_ARGUMENT;
  cf_status st = plan_for(x, shards, b);
  *plan = st ? NULL : &x->plan;
  return st;
}

void mesh_exec_fail(cf_mesh_executor *x, cf_status st, const char *msg) { set_error(x, st, "%s", msg); }

MeshState *mesh_exec_state(cf_mesh_executor *x, uint64_t *gen) {
  *gen = x->plan_gen;
  return &x->state;
}

MeshStats mesh_exec_stats(const cf_mesh_executor *x) { return x ? x->state.stats : (MeshStats){0}; }
