/* lower/tma.c: a circular-buffered tile marked by cf_tma_load becomes TMA boxes. Called by
 * the circular_buffer pass (circular_buffer.c) on the tile's fill statement before it moves
 * the fill: the statement (its threads' copies of a fusion input, indexed by the index
 * pass) is replaced by
 *   if (elected thread) { mbarrier.arrive.expect_tx(bar[0], bytes); TMA box 0; box 1; .. }
 * whose destination, barrier and coordinates the circular buffer then stages like any fill.
 * The box is found, not declared: every element the fill copies (its loops inside the
 * tile's compute-at loop enumerated, vector lanes included, outer indices at 0 and again
 * at 1) gives its coordinate along each allocation axis of the input and its offset in the
 * tile; the box is the coordinates' extent along each axis, its inner row cut into chunks
 * of the swizzle's span (each a box of its own, stored one after the other), and the tile
 * must be exactly that: each element where a TMA load of that box with that swizzle puts
 * it (no swizzle is tried first, then 32-, 64- and 128-byte ones), every offset of the
 * tile once.
 * Else the tile is refused, naming the element that no box places. Elements outside the
 * input are zero, as the fill's zero-filling predicate made them.
 * Requires: index (ops' accesses), predicate, sync. Establishes: k->tmaps, the tile's
 * barrier buffer (<tile>_mbar: an int64 a stage), initialized at the kernel's start.
 * Key decision: the checking enumeration is the whole analysis: a schedule that stores
 * the tile in the layout TMA writes is accepted whatever transforms made it, and one that
 * does not is refused before anything runs. */
#include <string.h>

#include "lower/lower.h"

enum { TMA_MAX_POINTS = 1 << 16, TMA_MAX_LEAVES = 16, TMA_MAX_BOX = 256 };

/* The fill's copy op and the leaves (loop indices) of its loops inside the tile's loop. */
typedef struct TmaFill {
  LowerCtx *c;
  KTensor *t;
  KNode *op;
  int ops;
  const KExpr *leaf[TMA_MAX_LEAVES];
  int64_t extent[TMA_MAX_LEAVES], value[TMA_MAX_LEAVES];
  int nleaves;
  int64_t outer; /* the value of every other leaf */
} TmaFill;

static bool find_op(KVisitor *v, KNode *n) {
  TmaFill *tf = v->user;
  tf->ops++;
  if (n->u.op.out.t == tf->t) tf->op = n;
  return true;
}

static bool leaf_value(void *user, const KExpr *leaf, int64_t *out) {
  const TmaFill *tf = user;
  for (int i = 0; i < tf->nleaves; i++)
    if (kx_equal(leaf, tf->leaf[i])) {
      *out = tf->value[i];
      return true;
    }
  *out = tf->outer;
  return true;
}

static KExpr *zero_leaves(const TmaFill *tf, KExpr *e) {
  Arena *a = tf->c->a;
  switch (e->kind) {
  case KX_VAR:
  case KX_THREAD:
    for (int i = 0; i < tf->nleaves; i++)
      if (kx_equal(e, tf->leaf[i])) return kx_const(a, 0);
    return e;
  case KX_BINARY: return kx_bin(a, e->op, zero_leaves(tf, e->a), zero_leaves(tf, e->b));
  case KX_SELECT: return kx_select(a, zero_leaves(tf, e->a), zero_leaves(tf, e->b), zero_leaves(tf, e->c));
  default: return e;
  }
}

/* The geometry found: per allocation axis of the input (outer first), the coordinate
 * extent; the point list's coordinates relative to the origin and tile offsets. */
typedef struct TmaGeom {
  int rank, vector;
  KExpr *axis[KN_TMA_MAX_RANK]; /* the fill's index along each axis */
  int64_t ext[KN_TMA_MAX_RANK];
  int64_t *rel;                 /* npoints x rank */
  int64_t *off;                 /* npoints: the lane-0 element's offset in the tile */
  int npoints;
  int64_t tile;                 /* the tile's elements */
} TmaGeom;

static const char *tv_name(const TmaFill *tf) { return tf->t->name; }

/* Evaluates the fill at every point of its inner loops for outer indices `outer`. */
static void enumerate(TmaFill *tf, TmaGeom *g, int64_t outer, bool record) {
  LowerCtx *c = tf->c;
  KxEnv env = {.leaf = leaf_value, .user = tf};
  int64_t origin[KN_TMA_MAX_RANK];
  tf->outer = outer;
  for (int i = 0; i < tf->nleaves; i++) tf->value[i] = 0;
  for (int d = 0; d < g->rank; d++)
    if (!kx_eval(g->axis[d], &env, &origin[d]))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its index along the input's "
                 "axis %d depends on a size known only when the kernel runs", tv_name(tf), d);
  for (int p = 0; p < g->npoints; p++) {
    int64_t rest = p, x, off;
    bool same = true;
    for (int i = tf->nleaves - 1; i >= 0; i--) tf->value[i] = rest % tf->extent[i], rest /= tf->extent[i];
    for (int d = 0; d < g->rank; d++) {
      if (!kx_eval(g->axis[d], &env, &x))
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its index along the input's "
                   "axis %d cannot be evaluated in its loops", tv_name(tf), d);
      x -= origin[d];
      if (record) g->rel[(size_t)p * g->rank + d] = x;
      else same = same && g->rel[(size_t)p * g->rank + d] == x;
    }
    if (!kx_eval(tf->op->u.op.out.index, &env, &off))
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its offset in the tile cannot be "
                 "evaluated in its loops", tv_name(tf));
    if (record) g->off[p] = off;
    else if (!same || g->off[p] != off)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its layout differs from one tile "
                 "to the next (the box must be the same at every iteration and block)", tv_name(tf));
  }
}

/* Where a TMA load of the box (inner row `chunk` elements, `copies` boxes side by side
 * along the inner axis, stored one after the other) under `swizzle` puts the element at
 * relative coordinates rel: its byte offset in the tile. */
static int64_t tma_byte(const TmaGeom *g, const int64_t *rel, int64_t esz, int64_t chunk, int swizzle) {
  int64_t inner = rel[g->rank - 1], box_elems = chunk;
  for (int d = 0; d < g->rank - 1; d++) box_elems *= g->ext[d];
  int64_t li = inner % chunk, m = chunk;
  for (int d = g->rank - 2; d >= 0; d--) li += rel[d] * m, m *= g->ext[d];
  int64_t byte = (inner / chunk) * box_elems * esz + li * esz;
  int64_t bits = swizzle == 128 ? 7 : swizzle == 64 ? 3 : swizzle == 32 ? 1 : 0;
  return byte ^ (((byte >> 7) & bits) << 4);
}

/* Whether every element sits where the box and swizzle put it; *bad the first that does not. */
static bool places(const TmaGeom *g, int64_t esz, int64_t chunk, int swizzle, int *bad) {
  for (int p = 0; p < g->npoints; p++)
    for (int v = 0; v < g->vector; v++) {
      int64_t rel[KN_TMA_MAX_RANK];
      memcpy(rel, &g->rel[(size_t)p * g->rank], sizeof(int64_t) * (size_t)g->rank);
      rel[g->rank - 1] += v;
      if (tma_byte(g, rel, esz, chunk, swizzle) != (g->off[p] + v) * esz) {
        *bad = p;
        return false;
      }
    }
  return true;
}

/* The extents of the coordinates, and that the tile holds each element once. */
static void extents(TmaFill *tf, TmaGeom *g) {
  LowerCtx *c = tf->c;
  unsigned char *seen = arena_alloc(c->a, (size_t)g->tile);
  memset(seen, 0, (size_t)g->tile);
  for (int d = 0; d < g->rank; d++) g->ext[d] = 1;
  for (int p = 0; p < g->npoints; p++) {
    for (int d = 0; d < g->rank; d++) {
      int64_t x = g->rel[(size_t)p * g->rank + d] + (d == g->rank - 1 ? g->vector - 1 : 0);
      if (g->rel[(size_t)p * g->rank + d] < 0)
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its first element is not its "
                   "smallest coordinate along the input's axis %d", tv_name(tf), d);
      if (x + 1 > g->ext[d]) g->ext[d] = x + 1;
    }
    for (int v = 0; v < g->vector; v++) {
      int64_t o = g->off[p] + v;
      if (o < 0 || o >= g->tile || seen[o]++)
        lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its fill writes element %lld "
                   "of the tile %s", tv_name(tf), (long long)o, o < 0 || o >= g->tile ? "outside it" : "twice");
    }
  }
}

/* The tensor map (a new one unless an equal one exists) and the chosen box. */
static int map_of(LowerCtx *c, int param, int rank, const int64_t *box, int swizzle) {
  KKernel *k = c->k;
  for (int i = 0; i < k->ntmaps; i++)
    if (k->tmaps[i].param == param && k->tmaps[i].rank == rank && k->tmaps[i].swizzle == swizzle &&
        !memcmp(k->tmaps[i].box, box, sizeof(int64_t) * (size_t)rank))
      return i;
  KTmaMap *m = ARENA_ARRAY(c->a, KTmaMap, k->ntmaps + 1);
  if (k->ntmaps) memcpy(m, k->tmaps, sizeof(KTmaMap) * (size_t)k->ntmaps);
  m[k->ntmaps] = (KTmaMap){.param = param, .rank = rank, .swizzle = swizzle};
  memcpy(m[k->ntmaps].box, box, sizeof(int64_t) * (size_t)rank);
  k->tmaps = m;
  return k->ntmaps++;
}

bool lower_tma_only(const KNode *n, bool *loads) {
  if (n->kind == KN_TMA_LOAD && loads) *loads = true;
  if (n->kind == KN_TMA_LOAD || n->kind == KN_MBAR_EXPECT_TX || n->kind == KN_MBAR_WAIT || n->kind == KN_COMMENT) return true;
  if (n->kind != KN_IF) return false;
  for (int k = 0; k < 2; k++) {
    const KBlock *b = k ? &n->u.cond.otherwise : &n->u.cond.then;
    for (int i = 0; i < b->len; i++)
      if (!lower_tma_only(b->items[i], loads)) return false;
  }
  return true;
}

KExpr *lower_elected_thread(LowerCtx *c) {
  Arena *a = c->a;
  KExpr *x = kx_bin(a, OP_EQ, kx_thread(a, CF_PT_TIDX, false), kx_const(a, 0));
  KExpr *y = kx_bin(a, OP_EQ, kx_thread(a, CF_PT_TIDY, false), kx_const(a, 0));
  KExpr *z = kx_bin(a, OP_EQ, kx_thread(a, CF_PT_TIDZ, false), kx_const(a, 0));
  return kx_bin(a, OP_AND, kx_bin(a, OP_AND, x, y), z);
}

/* The tile's barriers: an int64 a stage in shared memory, initialized (one arrival a
 * phase: the elected thread's expect_tx) by the elected thread at the kernel's start,
 * before a __syncthreads. */
static KTensor *barriers(LowerCtx *c, KTensor *t, int stages) {
  KKernel *k = c->k;
  KTensor *b = ARENA_NEW(c->a, KTensor);
  *b = (KTensor){.name = arena_printf(c->a, "%s_mbar", t->name), .fusion_tv_name = -1, .mem = CF_MEM_SHARED,
                 .dtype = CF_INT64, .param = -1, .size = kx_const(c->a, stages), .tmem_region = -1};
  KTensor **all = ARENA_ARRAY(c->a, KTensor *, k->nallocs + 1);
  if (k->nallocs) memcpy(all, k->allocs, sizeof(KTensor *) * (size_t)k->nallocs);
  all[k->nallocs++] = b;
  k->allocs = all;
  KNode *init = k->body.len ? k->body.items[0] : NULL; /* another tile's: one block of inits, one sync */
  if (!init || init->kind != KN_IF || !init->u.cond.then.len || init->u.cond.then.items[0]->kind != KN_MBAR_INIT) {
    init = lower_node(c, KN_IF);
    init->u.cond.cond = lower_elected_thread(c);
    kb_insert(c->a, &k->body, 0, lower_node(c, KN_SYNC));
    kb_insert(c->a, &k->body, 0, init);
  }
  for (int s = 0; s < stages; s++) {
    KNode *i = lower_node(c, KN_MBAR_INIT);
    i->u.mbar.bar = (KAccess){.t = b, .index = kx_const(c->a, s)};
    i->u.mbar.value = 1;
    kb_push(c->a, &init->u.cond.then, i);
  }
  return b;
}

/* Fills tf's leaves from the op's loops inside the tile's compute-at loop. */
static void inner_loops(TmaFill *tf, TmaGeom *g, int ca) {
  LowerCtx *c = tf->c;
  const KNode *op = tf->op;
  int64_t points = 1;
  g->vector = op->u.op.vector > 1 ? op->u.op.vector : 1;
  for (int j = ca; j < op->u.op.nloop; j++) {
    const KNode *l = op->u.op.loops[j];
    int64_t e;
    if (!l || kx_is_const(op->u.op.loop_index[j], &e)) continue; /* the vector lane, or a loop of one */
    if (!kx_is_const(l->u.loop.extent, &e) || tf->nleaves == TMA_MAX_LEAVES)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: the loops of its fill must have "
                 "constant extents (at most %d of them)", tv_name(tf), TMA_MAX_LEAVES);
    tf->leaf[tf->nleaves] = op->u.op.loop_index[j];
    tf->extent[tf->nleaves++] = e;
    points *= e;
    if (points > TMA_MAX_POINTS)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its fill has more than %d points",
                 tv_name(tf), TMA_MAX_POINTS);
  }
  g->npoints = (int)points;
}

/* The fill's one copy of a global input parameter, indexed per allocation axis. */
static void copy_of(TmaFill *tf, TmaGeom *g, KNode *fill) {
  LowerCtx *c = tf->c;
  KBlock one = {0};
  kb_push(c->a, &one, fill);
  KVisitor v = {.pre = {[KN_OP] = find_op}, .user = tf, .arena = c->a};
  kir_visit(&v, &one);
  KNode *op = tf->op;
  const KTensor *in = op && op->u.op.nin == 1 ? op->u.op.in[0].t : NULL;
  if (tf->ops != 1 || !in || !ir_op_is_vector_copy(op->u.op.src->op) || in->param < 0 || in->mem != CF_MEM_GLOBAL ||
      in->dtype != tf->t->dtype)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its fill must be one copy of a "
               "fusion input of its dtype (found %d ops)", tv_name(tf), tf->ops);
  Val *src = op->u.op.src->in[0];
  TvInfo *ti = lower_info(c, src);
  int64_t s;
  if (TV(src)->has_strides || !ti->nalloc_ids || !kx_is_const(ti->strides[ti->nalloc_ids - 1], &s) || s != 1)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: %s must be contiguous along its "
               "innermost allocation axis (a tensor map's first dimension)", tv_name(tf), in->name);
  g->rank = lower_index_axes(c, op, src, g->axis, KN_TMA_MAX_RANK);
  if (g->rank < 1)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: %s has more than %d allocation "
               "axes, or one its fill does not index", tv_name(tf), in->name, KN_TMA_MAX_RANK);
}

/* The swizzle and inner chunk that place every element, or a refusal naming one. */
static int choose_swizzle(TmaFill *tf, const TmaGeom *g, int64_t esz, int64_t *chunk) {
  static const int spans[] = {0, 32, 64, 128}; /* the first that places all: a row of one fits any */
  int bad = 0;
  int64_t inner = g->ext[g->rank - 1];
  for (int i = 0; i < 4; i++) {
    int64_t ch = spans[i] ? spans[i] / esz : inner;
    if (inner % ch || ch > TMA_MAX_BOX || (ch * esz) % 16) continue;
    if (places(g, esz, ch, spans[i], &bad)) {
      *chunk = ch;
      return spans[i];
    }
  }
  const int64_t *r = &g->rel[(size_t)bad * g->rank];
  StrBuf b = {0};
  for (int d = 0; d < g->rank; d++) sb_printf(&b, "%s%lld", d ? ", " : "", (long long)r[d]);
  const char *at = arena_printf(tf->c->a, "%s", b.data ? b.data : "");
  sb_free(&b);
  lower_fail(tf->c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: no box places its element (%s) "
             "(relative to the tile's first) at offset %lld, where its schedule stores it (rows of 32, 64 or 128 "
             "bytes under their swizzle, or unswizzled rows, are what TMA writes)", tv_name(tf), at,
             (long long)g->off[bad]);
}

KNode *lower_tma_fill(LowerCtx *c, Val *tv, KNode *fill, int stages) {
  TmaFill tf = {.c = c, .t = lower_info(c, tv)->kt};
  TmaGeom g = {0};
  copy_of(&tf, &g, fill);
  if (!kx_is_const(tf.t->size, &g.tile) || g.tile <= 0)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its size is not a constant",
               tv_name(&tf));
  inner_loops(&tf, &g, TV(tv)->ca_pos);
  if ((int64_t)g.npoints * g.vector != g.tile)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its fill copies %lld elements for "
               "a tile of %lld", tv_name(&tf), (long long)g.npoints * g.vector, (long long)g.tile);
  g.rel = ARENA_ARRAY(c->a, int64_t, (size_t)g.npoints * g.rank);
  g.off = ARENA_ARRAY(c->a, int64_t, g.npoints);
  enumerate(&tf, &g, 0, true);
  enumerate(&tf, &g, 1, false);
  extents(&tf, &g);
  int64_t esz = (int64_t)cf_dtype_size(tf.t->dtype), chunk = 0;
  int swizzle = choose_swizzle(&tf, &g, esz, &chunk);
  int64_t box[KN_TMA_MAX_RANK], box_bytes = chunk * esz, copies = g.ext[g.rank - 1] / chunk;
  box[0] = chunk;
  for (int d = 1; d < g.rank; d++) box_bytes *= box[d] = g.ext[g.rank - 1 - d];
  int64_t period = swizzle ? 8 * swizzle : 128;
  for (int d = 1; d < g.rank; d++)
    if (box[d] > TMA_MAX_BOX)
      lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its box spans %lld elements along "
                 "the input's axis %d (a box spans 1 to %d)", tv_name(&tf), (long long)box[d], g.rank - 1 - d,
                 TMA_MAX_BOX);
  if (box_bytes % period || (g.tile * esz) % period)
    lower_fail(c, CF_ERR_INVALID_SCHEDULE, "compile: %s cannot be filled by TMA: its boxes of %lld bytes do not "
               "start at multiples of %lld bytes, the %d-byte swizzle's period", tv_name(&tf), (long long)box_bytes,
               (long long)period, swizzle);
  if (tf.t->smem_align < period) tf.t->smem_align = period;
  KTensor *bar = barriers(c, tf.t, stages);
  int map = map_of(c, tf.op->u.op.in[0].t->param, g.rank, box, swizzle);
  KNode *issue = lower_node(c, KN_IF), *expect = lower_node(c, KN_MBAR_EXPECT_TX);
  issue->u.cond.cond = lower_elected_thread(c);
  expect->u.mbar.bar = (KAccess){.t = bar, .index = kx_const(c->a, 0)};
  expect->u.mbar.value = box_bytes * copies;
  kb_push(c->a, &issue->u.cond.then, expect);
  for (int64_t j = 0; j < copies; j++) {
    KNode *l = lower_node(c, KN_TMA_LOAD);
    l->u.tma.map = map;
    for (int d = 0; d < g.rank; d++) l->u.tma.coord[d] = zero_leaves(&tf, g.axis[g.rank - 1 - d]);
    l->u.tma.coord[0] = kx_bin(c->a, OP_ADD, l->u.tma.coord[0], kx_const(c->a, j * chunk));
    l->u.tma.dst = (KAccess){.t = tf.t, .index = kx_const(c->a, j * (box_bytes / esz))};
    l->u.tma.bar = expect->u.mbar.bar;
    kb_push(c->a, &issue->u.cond.then, l);
  }
  return issue;
}
