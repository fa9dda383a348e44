/* scheduler/segment.c: cutting a fusion that no scheduler takes whole into segments
 * (sched_segment), each then scheduled and compiled on its own, run one after the other
 * with the tensors between them in global memory.
 * The cut, for now the simplest useful one: a reduction's output that a later op reads
 * ends a segment (nvFuser's schedulers take a reduction with a prologue; what reads the
 * complete result needs another kernel, or a persistent scheduler that keeps it on chip).
 * Each op gets a level, the largest over its operands of the producer's level, plus one
 * where the operand is such a cut; a segment is the ops of one level, in topological
 * order. When a segment of that cut is refused, the fine cut also puts each reduction in
 * a segment of its own, reading its operand from memory: softmax's middle level (the sum
 * of an exp that the division reads too) becomes a pointwise segment and a reduction.
 * When that is refused too (a level computing outputs of two shapes, which no scheduler
 * takes together), every op becomes a segment of its own.
 * A reshape is always a segment of its own, after its operand's and before its readers':
 * the executor runs it as a view of its operand's memory (executor/fusion_plan.c).
 * Welford states never cross a cut: the fields read from them (welford_avg, _m2, _n)
 * stay in their reduction's segment, and the cut falls after them. */
#include "ir/dtype.h"
#include "scheduler/heuristic.h"

static bool is_tensor_expr(const Expr *e) { return e && ir_op_kind(e->op) != OPK_TRANSFORM && e->out[0]->kind == VAL_TV; }

SchedSegment sched_whole(Arena *a, cf_fusion *f) {
  SchedSegment s = {0};
  s.exprs = ir_fusion_tensor_exprs_in(a, f, &s.nexprs);
  s.nin = f->inputs.len;
  s.ins = (Val **)f->inputs.items;
  s.nout = f->outputs.len;
  s.outs = (Val **)f->outputs.items;
  return s;
}

/* A field of Welford states (welford_avg, _m2, _n): it stays with the Welford reduction
 * it reads, for states are not a tensor a segment can output. */
static bool welford_field(const Expr *e) {
  return e && e->nin == 1 && e->in[0]->kind == VAL_TV && ir_dtype_is_welford(e->in[0]->dtype);
}

/* Whether an op reading tv starts a new segment: tv is a reduction's output, a field of
 * Welford states (the cut after a Welford reduction falls after its fields), or a
 * reshape's (a view between segments, run by no kernel). */
static bool is_cut(const Val *tv) {
  if (ir_dtype_is_welford(tv->dtype)) return false;
  return ir_op_kind(tv->def->op) == OPK_REDUCTION || welford_field(tv->def) || tv->def->op == OP_RESHAPE;
}

static void push_once(Arena *a, PtrVec *v, Val *tv) {
  if (!ptrvec_contains(v, tv)) ptrvec_push(a, v, tv);
}

/* The inputs and outputs of segment k (seg[]: the segment of each Expr id, -1 for none;
 * a tensor read by another segment is read by a later one). */
static void boundaries(Arena *a, cf_fusion *f, Expr **exprs, int n, const int *seg, int k, SchedSegment *s) {
  PtrVec ins = {0}, outs = {0};
  for (int i = 0; i < f->inputs.len; i++) {
    Val *tv = f->inputs.items[i];
    for (int u = 0; u < tv->uses.len; u++) {
      Expr *e = tv->uses.items[u];
      if (is_tensor_expr(e) && seg[e->id] == k) push_once(a, &ins, tv);
    }
  }
  for (int i = 0; i < n; i++) {
    Expr *e = exprs[i];
    for (int j = 0; seg[e->id] == k && j < e->nin; j++)
      if (e->in[j]->kind == VAL_TV && e->in[j]->def && seg[e->in[j]->def->id] != k) push_once(a, &ins, e->in[j]);
  }
  for (int o = 0; o < f->outputs.len; o++) {
    Val *tv = f->outputs.items[o];
    if (tv->def && seg[tv->def->id] == k) push_once(a, &outs, tv);
  }
  for (int i = 0; i < n; i++) {
    Expr *e = exprs[i];
    for (int j = 0; seg[e->id] >= 0 && seg[e->id] != k && j < e->nin; j++)
      if (e->in[j]->kind == VAL_TV && e->in[j]->def && seg[e->in[j]->def->id] == k) push_once(a, &outs, e->in[j]);
  }
  s->nin = ins.len;
  s->ins = (Val **)ins.items;
  s->nout = outs.len;
  s->outs = (Val **)outs.items;
}

/* Levels of the coarse cut: an op reading a reduction's output starts a new level. In
 * the fine cut a reduction also starts one after any op it reads from. */
static int levels(Expr **exprs, int n, bool fine, int *level) { /* fine: FINE or EACH_OP */
  int nlevels = n > 0 ? 1 : 0;
  for (int i = 0; i < n; i++) {
    Expr *e = exprs[i];
    bool red = ir_op_kind(e->op) == OPK_REDUCTION, view = e->op == OP_RESHAPE;
    level[e->id] = 0;
    for (int j = 0; j < e->nin; j++) {
      Val *in = e->in[j];
      if (in->kind != VAL_TV || !in->def) continue;
      int l = level[in->def->id] + (is_cut(in) || view || (fine && red) ? 1 : 0);
      if (l > level[e->id]) level[e->id] = l;
    }
    if (level[e->id] + 1 > nlevels) nlevels = level[e->id] + 1;
  }
  return nlevels;
}

/* Segment ids in topological order: per level, (fine) each reduction alone, then the
 * other ops together; (coarse) the whole level; (each op) every op alone. */
static int assign(Expr **exprs, int n, SchedCut cut, const int *level, int nlevels, int *seg) {
  int nseg = 0;
  bool fine = cut != SCHED_CUT_COARSE;
  for (int l = 0; l < nlevels; l++) {
    int rest = -1;
    for (int i = 0; i < n; i++) {
      Expr *e = exprs[i];
      if (level[e->id] != l) continue;
      if (fine && welford_field(e)) seg[e->id] = seg[e->in[0]->def->id];
      else if (cut == SCHED_CUT_EACH_OP || (fine && ir_op_kind(e->op) == OPK_REDUCTION) || e->op == OP_RESHAPE)
        seg[e->id] = nseg++;
      else seg[e->id] = rest >= 0 ? rest : (rest = nseg++);
    }
  }
  return nseg;
}

int sched_segment(Arena *a, cf_fusion *f, SchedCut cut, SchedSegment **out) {
  int n;
  Expr **exprs = ir_fusion_tensor_exprs_in(a, f, &n);
  int *level = ARENA_ARRAY(a, int, f->exprs.len + 1), *seg = ARENA_ARRAY(a, int, f->exprs.len + 1);
  if (!level || !seg || (n && !exprs)) return -1;
  for (int i = 0; i <= f->exprs.len; i++) seg[i] = -1; /* not reachable from an output */
  int nseg = assign(exprs, n, cut, level, levels(exprs, n, cut != SCHED_CUT_COARSE, level), seg);
  SchedSegment *segs = ARENA_ARRAY(a, SchedSegment, nseg);
  if (!segs) return -1;
  for (int k = 0; k < nseg; k++) {
    PtrVec mine = {0};
    for (int i = 0; i < n; i++)
      if (seg[exprs[i]->id] == k) ptrvec_push(a, &mine, exprs[i]);
    segs[k].nexprs = mine.len;
    segs[k].exprs = (Expr **)mine.items;
    boundaries(a, f, exprs, n, seg, k, &segs[k]);
  }
  *out = segs;
  return nseg;
}
