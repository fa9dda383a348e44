/* analysis/broadcast_readers.c: where a broadcast axis is concretized, the check two
 * schedulers ask before they inline a whole fusion into one tile of loops (pointwise.c and
 * transpose_sched.c).
 * Inlined into the loops of each reader, a broadcast axis shares the loop of the axis its
 * reader concretizes it against. When two readers concretize it against unrelated axes
 * (b = broadcast(v) in x - b and b * y, x and y of unrelated rows), one loop would iterate
 * both, which lowering refuses ("a broadcast concretized to two extents in one loop"); a
 * scheduler that accepted the fusion would break "accepts => lowers" (DAG fuzzer mode 4,
 * seed 438; the hostile define-and-run fuzzer's seed 41200614).
 * The walk follows each broadcast axis down its readers that keep it where the loops keep
 * it (elementwise ops of its rank, permutes and broadcasts, which move or add axes), past
 * readers in which it is still a broadcast (relu(b)), to the first concrete axis on every
 * path, and asks whether all of those are one class of the exact IdMap. Only tensors the
 * outputs need are walked (a dead reader is in no loop). Other readers (a reduction, a
 * resize, a squeeze) end the path: the schedulers that ask take none of them inlined with
 * the broadcast. Depends on ir/ only. */
#include <string.h>

#include "analysis/analysis.h"

int an_operand_axis(const Expr *e, int oa) {
  if (oa < 0) return -1;
  if (ir_op_kind(e->op) == OPK_PERMUTE) return e->attr.permute.perm[oa];
  if (ir_op_kind(e->op) != OPK_BROADCAST) return oa;
  if (e->attr.broadcast.is_broadcast[oa]) return -1;
  int ia = 0;
  for (int k = 0; k < oa; k++) ia += !e->attr.broadcast.is_broadcast[k];
  return ia;
}

/* The axis of e's output that reads axis a of e's operand tv; -1 when e is not a reader
 * the walk follows or reads tv along no axis (a 0-d operand of an elementwise op). */
static int reader_axis(const Expr *e, Val *tv, int a) {
  Val *o = e->out[0];
  bool follows = ir_op_kind(e->op) == OPK_PERMUTE || ir_op_kind(e->op) == OPK_BROADCAST ||
                 (ir_op_is_elementwise(e->op) && TV(o)->nlogical == TV(tv)->nlogical);
  for (int oa = 0; follows && oa < TV(o)->nlogical; oa++)
    if (an_operand_axis(e, oa) == a) return oa;
  return -1;
}

typedef struct Walk {
  IdMap *m;
  bool *seen; /* by Val id * stride + axis: an axis reached already (diamonds) */
  bool *live; /* by Val id: a tensor the outputs need (a dead reader is no loop) */
  int stride;
  AnBroadcastConflict *c; /* c->first, c->first_axis: the first concrete axis found */
} Walk;

/* Walks the readers of tv's broadcast axis a; false at the first concrete axis unrelated
 * to the first one found (c->second). */
static bool walk(Walk *w, Val *tv, int a) {
  if (w->seen[tv->id * w->stride + a]) return true;
  w->seen[tv->id * w->stride + a] = true;
  for (int u = 0; u < tv->uses.len; u++) {
    const Expr *e = tv->uses.items[u];
    int oa = reader_axis(e, tv, a);
    if (oa < 0 || !w->live[e->out[0]->id]) continue;
    Val *o = e->out[0], *id = TV(o)->logical[oa];
    if (ID(id)->iter_type == CF_ITER_BROADCAST) {
      if (!walk(w, o, oa)) return false;
    } else if (!w->c->first) {
      w->c->first = o, w->c->first_axis = oa;
    } else if (!an_idmap_same(w->m, TV(w->c->first)->logical[w->c->first_axis], id)) {
      w->c->second = o, w->c->second_axis = oa;
      return false;
    }
  }
  return true;
}

/* Whether some tensor of tvs has a broadcast axis (no map is built for a fusion without). */
static bool any_broadcast(Val *const *tvs, int n) {
  for (int i = 0; i < n; i++)
    for (int ax = 0; ax < TV(tvs[i])->nlogical; ax++)
      if (ID(TV(tvs[i])->logical[ax])->iter_type == CF_ITER_BROADCAST) return true;
  return false;
}

static int first_conflict(Walk *w, Val *const *tvs, int n, size_t seen_bytes) {
  for (int i = 0; i < n; i++)
    for (int ax = 0; ax < TV(tvs[i])->nlogical; ax++) {
      if (ID(TV(tvs[i])->logical[ax])->iter_type != CF_ITER_BROADCAST) continue;
      memset(w->seen, 0, seen_bytes);
      *w->c = (AnBroadcastConflict){.tv = tvs[i], .axis = ax};
      if (!walk(w, tvs[i], ax)) return 1;
    }
  return 0;
}

int an_broadcast_conflict(Arena *a, cf_fusion *f, AnBroadcastConflict *c) {
  int n, stride = 1;
  Val **tvs = ir_fusion_all_tvs_in(a, f, &n);
  if (!tvs) return -1;
  if (!any_broadcast(tvs, n)) return 0;
  for (int i = 0; i < n; i++)
    if (TV(tvs[i])->nlogical > stride) stride = TV(tvs[i])->nlogical;
  Walk w = {.m = an_idmap_build(f, false), .stride = stride, .c = c, .live = ARENA_ARRAY(a, bool, f->vals.len)};
  w.seen = w.m && w.live ? ARENA_ARRAY(a, bool, f->vals.len * stride) : NULL;
  for (int i = 0; w.live && i < n; i++) w.live[tvs[i]->id] = true;
  int found = w.seen ? first_conflict(&w, tvs, n, sizeof(bool) * (size_t)(f->vals.len * stride)) : -1;
  an_idmap_free(w.m);
  return found;
}

void an_broadcast_conflict_str(const AnBroadcastConflict *c, const char *prefix, char *buf, size_t size) {
  snprintf(buf, size, "%s%s is broadcast along axis %d, which %s and %s read against unrelated axes (one loop cannot "
           "iterate both)", prefix, TV(c->tv)->display_name, c->axis, TV(c->first)->display_name, TV(c->second)->display_name);
}
