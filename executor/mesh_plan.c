/* executor/mesh_plan.c: communication lowering. A fusion whose tensors are laid out over
 * device meshes (analysis/sharding.h) becomes a list of steps: compute segments, run per
 * device on local shards by define and run, and primitive communications between them.
 *
 * Walking the expressions in topological order, each joins the open segment unless it
 * reads a tensor in another layout than the one that tensor has (a resharding), or runs
 * on another mesh; then the segment closes and the communications that make the needed
 * layout come first: every axis sharded differently is gathered (allgather along its mesh
 * axis), then every axis newly sharded is sliced (local, no communication); a move to
 * another mesh gathers whole, broadcasts from the first device of the source mesh (a
 * send/recv between single devices), and slices. A reduction over a sharded axis closes
 * its segment right after it: its output holds partial results, combined by an allreduce
 * per partial mesh axis, or a reduce-scatter when the output is sharded on that axis or
 * every reader needs it sharded there. A set reading another layout is its communication
 * (no kernel copies it), and a segment reads each tensor in one layout.
 * Key decision: values, not tensors, flow between steps. A tensor may exist in several
 * layouts (the gathered and the sharded one); each (tensor, layout, mesh) is one value
 * made once and reused by every later reader, so a tensor gathered for two consumers is
 * gathered once. */
#include <stdlib.h>
#include <string.h>

#include "executor/mesh.h"
#include "ir/dtype.h"

static const char *const comm_names[] = {
#define MC_X(e, name) [e] = name,
    MESH_COMM_TABLE(MC_X)
#undef MC_X
};

const char *mesh_comm_name(MeshCommKind k) { return (unsigned)k < MC_COUNT ? comm_names[k] : "?"; }
bool mesh_comm_communicates(MeshCommKind k) { return k != MC_SLICE; }

/* The state of one lowering: the plan, the open segment and each tensor's own value. */
typedef struct Builder {
  MeshPlan *p;
  const AnShardings *s;
  const cf_executor_options *opts;
  int *natural; /* by Val id: the value of the tensor in its own layout, or -1 */
  Expr **seg;   /* the open segment's expressions */
  int nseg;
  const cf_device_mesh *seg_mesh;
  const AnReshard *rs;
  int nrs;
} Builder;

static cf_status oom(Builder *b) { return ir_error(b->p->global, CF_ERR_OUT_OF_MEMORY, "mesh plan: out of memory"); }

/* The value of tv laid out `dim` on mesh (not partial) made so far, or -1. */
static int find_value(const Builder *b, Val *tv, const int8_t *dim, const cf_device_mesh *mesh) {
  const MeshPlan *p = b->p;
  for (int i = 0; i < p->nvalues; i++)
    if (p->values[i].tv == tv && !p->values[i].partial && !memcmp(p->values[i].dim, dim, CF_MAX_RANK) &&
        cf_device_mesh_equal(p->values[i].mesh, mesh))
      return i;
  return -1;
}

static int add_value(Builder *b, Val *tv, const int8_t *dim, const cf_device_mesh *mesh, bool partial) {
  MeshPlan *p = b->p;
  int found = partial ? -1 : find_value(b, tv, dim, mesh);
  if (found >= 0) return found;
  if (p->nvalues == p->capvalues) {
    int cap = p->capvalues ? 2 * p->capvalues : 16;
    MeshValue *v = realloc(p->values, sizeof(MeshValue) * (size_t)cap);
    if (!v) return oom(b), -1;
    p->values = v;
    p->capvalues = cap;
  }
  MeshValue *v = &p->values[p->nvalues];
  v->tv = tv;
  memcpy(v->dim, dim, CF_MAX_RANK);
  v->mesh = mesh;
  v->partial = partial;
  return p->nvalues++;
}

static MeshStep *add_step(Builder *b) {
  MeshPlan *p = b->p;
  if (p->nsteps == p->capsteps) {
    int cap = p->capsteps ? 2 * p->capsteps : 16;
    MeshStep *s = realloc(p->steps, sizeof(MeshStep) * (size_t)cap);
    if (!s) return oom(b), NULL;
    p->steps = s;
    p->capsteps = cap;
  }
  MeshStep *s = &p->steps[p->nsteps++];
  memset(s, 0, sizeof *s);
  return s;
}

/* Appends a communication from value src; returns the value it makes. A value made
 * before (a tensor gathered for an earlier reader) is reused, with no step. */
static int comm(Builder *b, MeshCommKind k, int src, int dim, int axis, int8_t *layout, const cf_device_mesh *mesh,
                bool partial) {
  Val *tv = b->p->values[src].tv;
  IrOp redop = tv->def ? tv->def->op : OP_SUM;
  int made = partial ? -1 : find_value(b, tv, layout, mesh);
  if (made >= 0) return made;
  int dst = add_value(b, tv, layout, mesh, partial);
  MeshStep *s = dst >= 0 ? add_step(b) : NULL;
  if (!s) return -1;
  s->is_comm = true;
  s->comm = (MeshComm){k, src, dst, dim, axis, redop, mesh ? b->p->values[src].mesh->devices[0] : 0, false};
  return dst;
}

/* The value of tv laid out `to` on `mesh`, made from its natural value by gathers, a
 * move between meshes and slices. */
static int relayout(Builder *b, Val *tv, const int8_t *to, const cf_device_mesh *mesh) {
  int v = b->natural[tv->id];
  MeshValue cur = b->p->values[v];
  int8_t l[CF_MAX_RANK];
  memcpy(l, cur.dim, CF_MAX_RANK);
  bool cross = !cf_device_mesh_equal(cur.mesh, mesh);
  for (int a = 0; a < TV(tv)->nlogical && v >= 0; a++)
    if (l[a] >= 0 && (cross || l[a] != to[a])) {
      int dim = l[a];
      l[a] = -1;
      v = comm(b, MC_ALLGATHER, v, dim, a, l, cur.mesh, false);
    }
  if (cross && v >= 0) {
    bool single = cf_device_mesh_size(cur.mesh) == 1 && cf_device_mesh_size(mesh) == 1;
    v = comm(b, single ? MC_SEND_RECV : MC_BROADCAST, v, -1, -1, l, mesh, false);
  }
  for (int a = 0; a < TV(tv)->nlogical && v >= 0; a++)
    if (to[a] >= 0 && l[a] != to[a]) {
      l[a] = to[a];
      v = comm(b, MC_SLICE, v, to[a], a, l, mesh, false);
    }
  return v;
}

static const AnReshard *reshard_of(const Builder *b, const Expr *e, const Val *p) {
  for (int i = 0; i < b->nrs; i++)
    if (b->rs[i].expr == e && b->rs[i].producer == p) return &b->rs[i];
  return NULL;
}

static bool in_open_segment(const Builder *b, const Expr *e) {
  for (int i = 0; i < b->nseg; i++)
    if (b->seg[i] == e) return true;
  return false;
}


/* The layout of tv's iteration axes in its own sharding (reduction axes: -1). */
static void own_layout(const Builder *b, Val *tv, int8_t *l) {
  const AnSharding *sh = an_sharding_of(b->s, tv);
  memset(l, -1, CF_MAX_RANK);
  for (int a = 0; a < TV(tv)->nlogical; a++)
    if (ID(TV(tv)->logical[a])->iter_type != CF_ITER_REDUCTION) l[a] = sh->dim[a];
}

/* Closes the open segment: its inputs (values read from outside it), its outputs
 * (tensors read after it or fusion outputs), its local fusion and cache. */
static cf_status close_segment(Builder *b, const int *reads) {
  if (!b->nseg) return CF_OK;
  MeshPlan *p = b->p;
  int n = b->nseg, nin = 0, nout = 0;
  int *in = malloc(sizeof(int) * (size_t)(4 * n + 1)), *out = malloc(sizeof(int) * (size_t)(n + 1));
  if (!in || !out) return free(in), free(out), oom(b);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < b->seg[i]->nin; j++) {
      Val *v = b->seg[i]->in[j];
      if (v->kind != VAL_TV || (v->def && in_open_segment(b, v->def))) continue;
      int val = reads[i * 4 + j], k = 0;
      while (k < nin && in[k] != val) k++;
      if (k == nin) in[nin++] = val;
    }
  for (int i = 0; i < n; i++) {
    Val *c = b->seg[i]->out[0];
    bool used_after = ir_tv_is_output(p->global, c);
    for (int u = 0; u < c->uses.len; u++) used_after |= !in_open_segment(b, c->uses.items[u]);
    if (used_after) out[nout++] = b->natural[c->id];
  }
  MeshStep *s = add_step(b);
  if (!s) return free(in), free(out), p->global->status;
  s->seg = (MeshSegment){NULL, NULL, nin, nout, in, out, b->seg_mesh};
  s->seg.local = mesh_local_fusion(p, n, b->seg, nin, in, nout, out);
  if (!s->seg.local) return oom(b);
  if (cf_fusion_status(s->seg.local))
    return ir_error(p->global, cf_fusion_status(s->seg.local), "%s", cf_fusion_error(s->seg.local));
  s->seg.cache = cf_fusion_cache_create(s->seg.local, b->opts);
  b->nseg = 0;
  return s->seg.cache ? CF_OK : oom(b);
}

/* The iteration axis of c that every reader of c needs sharded on mesh axis dim, where
 * c's own layout l leaves it whole, or -1. Then the partials over dim go straight to that
 * layout by a reduce-scatter, where an allreduce would be followed by a local slice: the
 * same result with (D-1)/D of the traffic and no replicated copy. A fusion output keeps
 * its own layout, and a reader on another mesh gathers whole: -1 for both. */
static int scatter_for_readers(const Builder *b, Val *c, const int8_t *l, int dim) {
  if (ir_tv_is_output(b->p->global, c)) return -1;
  int axis = -1;
  for (int u = 0; u < c->uses.len; u++) {
    const AnReshard *r = reshard_of(b, c->uses.items[u], c);
    int a = -1;
    for (int k = 0; r && !r->cross_mesh && k < TV(c)->nlogical; k++)
      if (r->to[k] == dim && l[k] < 0 && ID(TV(c)->logical[k])->iter_type != CF_ITER_REDUCTION) a = k;
    if (a < 0 || (axis >= 0 && a != axis)) return -1;
    axis = a;
  }
  return axis;
}

/* The combining communications after a reduction over sharded axes: a reduce-scatter
 * onto the axis c's own layout shards on the partial mesh axis, or onto the one all its
 * readers need sharded there (scatter_for_readers), else an allreduce. */
static cf_status combine_partials(Builder *b, const AnReshard *r, const int *reads) {
  Val *c = r->consumer;
  int8_t l[CF_MAX_RANK];
  int scatter[2] = {-1, -1};
  own_layout(b, c, l);
  for (int k = 0; k < r->npartial; k++)
    if (r->scatter_axis[k] >= 0) l[r->scatter_axis[k]] = -1;
  for (int k = 0; k < r->npartial; k++)
    scatter[k] = r->scatter_axis[k] >= 0 ? r->scatter_axis[k] : scatter_for_readers(b, c, l, r->partial_dim[k]);
  const cf_device_mesh *mesh = an_sharding_of(b->s, c)->mesh;
  int v = add_value(b, c, l, mesh, true);
  b->natural[c->id] = v;
  if (v < 0 || close_segment(b, reads)) return b->p->global->status;
  for (int k = 0; k < r->npartial && v >= 0; k++) {
    int ax = scatter[k];
    if (ax >= 0) l[ax] = (int8_t)r->partial_dim[k];
    v = comm(b, ax >= 0 ? MC_REDUCE_SCATTER : MC_ALLREDUCE, v, r->partial_dim[k], ax, l, mesh, false);
  }
  b->natural[c->id] = v;
  return b->p->global->status;
}

/* Whether a reader of p other than e needs p laid out as r makes it. */
static bool layout_shared(const Builder *b, const Expr *e, Val *p, const AnReshard *r) {
  for (int u = 0; u < p->uses.len; u++) {
    const AnReshard *o = p->uses.items[u] == e ? NULL : reshard_of(b, p->uses.items[u], p);
    if (o && !memcmp(o->to, r->to, sizeof o->to) && cf_device_mesh_equal(o->to_mesh, r->to_mesh)) return true;
  }
  return false;
}

/* A set reading its operand in another layout is that resharding itself (nvFuser lowers
 * such a set to a communication, not a kernel): when the communications that make the
 * layout made a new value (first) just now, and no other reader needs it, that value
 * becomes the set's output, and no segment copies it. True when so. */
static bool set_is_communication(Builder *b, const Expr *e, int read, int first) {
  const AnReshard *r = e->op == OP_SET ? reshard_of(b, e, e->in[0]) : NULL;
  if (!r || !an_reshard_moves_input(r) || r->npartial || read < first || layout_shared(b, e, e->in[0], r)) return false;
  MeshValue *v = &b->p->values[read];
  v->tv = e->out[0];
  own_layout(b, e->out[0], v->dim);
  b->natural[e->out[0]->id] = read;
  return true;
}

/* The values e reads (mine[j]; -1 for a scalar), made by the communications its operands
 * need; the resharding of a partial operand in *partial. -1 on an error. */
static int read_values(Builder *b, const Expr *e, int *mine, const AnReshard **partial) {
  for (int j = 0; j < e->nin; j++) {
    Val *in = e->in[j];
    mine[j] = -1;
    if (in->kind != VAL_TV) continue;
    const AnReshard *r = reshard_of(b, e, in);
    if (r && r->npartial) *partial = r;
    mine[j] = r && an_reshard_moves_input(r) ? relayout(b, in, r->to, r->to_mesh) : b->natural[in->id];
    if (mine[j] < 0) return -1;
  }
  return 0;
}

/* Whether the open segment reads an operand of e as another value (another layout): a
 * local fusion has one input per tensor, in one layout. */
static bool reads_another_layout(const Builder *b, const Expr *e, const int *mine, const int *reads) {
  for (int j = 0; j < e->nin; j++)
    for (int i = 0; i < b->nseg && e->in[j]->kind == VAL_TV; i++)
      for (int k = 0; k < b->seg[i]->nin; k++)
        if (b->seg[i]->in[k] == e->in[j] && reads[i * 4 + k] != mine[j]) return true;
  return false;
}

/* Adds e to the open segment (closing it first where e cannot join). */
static cf_status add_expr(Builder *b, Expr *e, int *reads) {
  Val *c = e->out[0];
  const cf_device_mesh *mesh = an_sharding_of(b->s, c)->mesh;
  bool close = b->nseg && !cf_device_mesh_equal(mesh, b->seg_mesh);
  for (int j = 0; j < e->nin; j++) {
    const AnReshard *r = reshard_of(b, e, e->in[j]);
    close |= r && an_reshard_moves_input(r) && e->in[j]->def && in_open_segment(b, e->in[j]->def);
  }
  if (close && close_segment(b, reads)) return b->p->global->status;
  if (e->nin > 4) return IR_INTERNAL(b->p->global, e->nin <= 4);
  const AnReshard *partial = NULL;
  int first = b->p->nvalues, mine[4];
  if (read_values(b, e, mine, &partial)) return b->p->global->status;
  if (set_is_communication(b, e, mine[0], first)) return CF_OK;
  if (reads_another_layout(b, e, mine, reads) && close_segment(b, reads)) return b->p->global->status;
  memcpy(&reads[b->nseg * 4], mine, sizeof(int) * (size_t)e->nin);
  b->seg_mesh = mesh;
  b->seg[b->nseg++] = e;
  if (partial) return combine_partials(b, partial, reads);
  int8_t l[CF_MAX_RANK];
  own_layout(b, c, l);
  b->natural[c->id] = add_value(b, c, l, mesh, false);
  return b->natural[c->id] < 0 ? b->p->global->status : CF_OK;
}

static cf_status build(Builder *b, Expr **exprs, int n) {
  MeshPlan *p = b->p;
  cf_fusion *g = p->global;
  int *reads = calloc((size_t)(4 * n + 4), sizeof(int));
  p->inputs = calloc((size_t)g->inputs.len + 1, sizeof(int));
  p->outputs = calloc((size_t)g->outputs.len + 1, sizeof(int));
  if (!reads || !p->inputs || !p->outputs) return free(reads), oom(b);
  p->ninputs = g->inputs.len;
  p->noutputs = g->outputs.len;
  for (int i = 0; i < g->inputs.len; i++) {
    Val *tv = g->inputs.items[i];
    int8_t l[CF_MAX_RANK];
    own_layout(b, tv, l);
    p->inputs[i] = b->natural[tv->id] = add_value(b, tv, l, an_sharding_of(b->s, tv)->mesh, false);
  }
  for (int i = 0; i < n && !g->status; i++) add_expr(b, exprs[i], reads);
  if (!g->status) close_segment(b, reads);
  for (int i = 0; i < g->outputs.len && !g->status; i++) p->outputs[i] = b->natural[((Val *)g->outputs.items[i])->id];
  free(reads);
  if (!g->status) mesh_plan_in_place(p);
  return g->status;
}

/* How many times value v is read: by steps, and as an input or output of the plan
 * (each counts as a reader that needs the value's own buffer). */
static int readers(const MeshPlan *p, int v) {
  int n = 0;
  for (int i = 0; i < p->nsteps; i++) {
    const MeshStep *s = &p->steps[i];
    if (s->is_comm) n += s->comm.src == v;
    for (int k = 0; !s->is_comm && k < s->seg.nin; k++) n += s->seg.in[k] == v;
  }
  for (int i = 0; i < p->ninputs; i++) n += p->inputs[i] == v;
  for (int i = 0; i < p->noutputs; i++) n += p->outputs[i] == v;
  return n;
}

void mesh_plan_in_place(MeshPlan *p) {
  for (int i = 0; i < p->nsteps; i++) {
    MeshComm *c = &p->steps[i].comm;
    if (p->steps[i].is_comm && c->kind == MC_ALLREDUCE) c->in_place = readers(p, c->src) == 1;
  }
}

/* A packed dtype (float4_e2m1fn, two elements per byte) among the fusion's tensors: the
 * mesh's shard copies move whole elements of cf_dtype_size bytes, so it is refused. */
static cf_status refuse_packed(cf_fusion *f) {
  for (int i = 0; i < f->vals.len; i++) {
    Val *v = f->vals.items[i];
    if (v->kind == VAL_TV && ir_dtype_is_packed(v->dtype))
      return ir_error(f, CF_ERR_UNSUPPORTED, "mesh plan: %s has dtype %s, two elements per byte; multi-device "
                      "fusions do not take packed dtypes yet (cast it to a wider dtype first)",
                      TV(v)->display_name, cf_dtype_name(v->dtype));
  }
  return CF_OK;
}

cf_status mesh_plan_build(MeshPlan *p, cf_fusion *f_global, const AnShardings *s, const cf_executor_options *opts) {
  memset(p, 0, sizeof *p);
  p->global = f_global;
  if (refuse_packed(f_global)) return f_global->status;
  Builder b = {p, s, opts, NULL, NULL, 0, NULL, NULL, 0};
  AnReshard *rs = NULL;
  b.nrs = an_reshardings(s, &rs);
  b.rs = rs;
  if (b.nrs < 0) return f_global->status;
  Arena *scratch = arena_create();
  int n = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, f_global, &n) : NULL;
  b.natural = malloc(sizeof(int) * (size_t)(f_global->vals.len + 1));
  b.seg = malloc(sizeof(Expr *) * (size_t)(n + 1));
  if (!scratch || !b.natural || !b.seg) oom(&b);
  else {
    memset(b.natural, -1, sizeof(int) * (size_t)(f_global->vals.len + 1));
    build(&b, exprs, n);
  }
  free(b.natural);
  free(b.seg);
  free(rs);
  arena_destroy(scratch);
  return f_global->status;
}

void mesh_plan_free(MeshPlan *p) {
  for (int i = 0; i < p->nsteps; i++)
    if (!p->steps[i].is_comm) {
      cf_fusion_cache_destroy(p->steps[i].seg.cache);
      cf_fusion_destroy(p->steps[i].seg.local);
      free(p->steps[i].seg.in);
      free(p->steps[i].seg.out);
    }
  free(p->steps);
  free(p->values);
  free(p->inputs);
  free(p->outputs);
  cf_fusion_destroy(p->global);
  memset(p, 0, sizeof *p);
}

static void print_value(StrBuf *sb, const MeshPlan *p, int v) {
  const MeshValue *mv = &p->values[v];
  sb_printf(sb, "%s", TV(mv->tv)->display_name);
  an_sharding_print(sb, mv->tv, mv->dim, mv->mesh);
  if (mv->partial) sb_puts(sb, " partial");
}

static void print_step(StrBuf *sb, const MeshPlan *p, int i) {
  const MeshStep *s = &p->steps[i];
  sb_printf(sb, "  step %d: ", i);
  if (s->is_comm) {
    const MeshComm *c = &s->comm;
    sb_printf(sb, "%s", mesh_comm_name(c->kind));
    if (c->kind == MC_ALLREDUCE || c->kind == MC_REDUCE_SCATTER) sb_printf(sb, "(%s)", ir_op_name(c->redop));
    if (c->in_place) sb_puts(sb, " in place");
    if (c->axis >= 0) sb_printf(sb, " axis %d", c->axis);
    if (c->kind == MC_BROADCAST || c->kind == MC_SEND_RECV) sb_printf(sb, " from device %d", c->root);
    sb_puts(sb, ": ");
    print_value(sb, p, c->src);
    sb_puts(sb, " -> ");
    print_value(sb, p, c->dst);
  } else {
    sb_printf(sb, "compute segment (%d in, %d out):", s->seg.nin, s->seg.nout);
    for (int k = 0; k < s->seg.nout; k++) {
      sb_puts(sb, k ? ", " : " ");
      print_value(sb, p, s->seg.out[k]);
    }
  }
  if (!s->is_comm || s->comm.kind == MC_BROADCAST || s->comm.kind == MC_SEND_RECV) {
    const MeshValue *mv = &p->values[s->is_comm ? s->comm.dst : s->seg.out[0]];
    if (mv->mesh) ir_print_mesh(sb, mv->mesh);
  }
  sb_puts(sb, "\n");
}

void mesh_plan_print(const MeshPlan *p, FILE *out) {
  StrBuf sb = {0};
  int ncomm = 0;
  for (int i = 0; i < p->nsteps; i++) ncomm += p->steps[i].is_comm && mesh_comm_communicates(p->steps[i].comm.kind);
  sb_printf(&sb, "mesh plan: %d steps, %d communications\n", p->nsteps, ncomm);
  for (int i = 0; i < p->nsteps; i++) print_step(&sb, p, i);
  fputs(sb.data ? sb.data : "", out);
  sb_free(&sb);
}
