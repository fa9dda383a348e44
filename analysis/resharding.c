/* analysis/resharding.c: where a consumer needs another layout of its producer than the
 * producer has (analysis/sharding.h's AnReshard), from the layouts sharding.c computed.
 *
 * For each tensor expression and each tensor operand, the layout the expression needs is
 * its output's, carried back axis by axis through the pairwise map; the operand's reduced
 * axes keep their own (a local reduction of a sharded axis is legal: it leaves partial
 * results), except that an axis the output is scattered on must be whole before a
 * reduce-scatter. A reduction over an axis sharded on mesh axis k leaves partials to
 * combine over k: by a reduce-scatter when the output is sharded on k, else an
 * allreduce. An operand on another mesh than the output's is gathered whole, moved, and
 * sliced there (no partials cross meshes). Key decision: refuse what cannot be computed
 * shard by shard rather than compute it wrong: ops making their elements (iota, random
 * numbers, full) producing a sharded tensor, resizes and reshapes of a sharded axis (a
 * slice of another axis is fine), and a Welford or online softmax over a sharded axis
 * (their states have no NCCL reduction). */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sharding.h"

static int pos_in(const Val *tv, const Val *id) {
  for (int a = 0; a < TV((Val *)tv)->nlogical; a++)
    if (TV((Val *)tv)->logical[a] == id) return a;
  return -1;
}

/* Ops whose output elements are made, not read from operand elements: by their position
 * (iota, random numbers) or from nothing (full). */
static bool makes_elements(IrOp op) {
  return ir_op_kind(op) == OPK_FULL || op == OP_RAND || op == OP_RAND64 || op == OP_RANDN;
}

/* Whether operand axis a (counted without reduction axes) is resized by e: every axis of
 * a reshape, the cut axes of a slice, the padded ones of a pad, the joined one of a cat. */
static bool resized_axis(const Expr *e, int a) {
  Val *p = e->in[0], *pid = NULL, *pids[CF_MAX_RANK], *cids[CF_MAX_RANK];
  for (int i = 0, k = 0; i < TV(p)->nlogical && !pid; i++)
    if (ID(TV(p)->logical[i])->iter_type != CF_ITER_REDUCTION && k++ == a) pid = TV(p)->logical[i];
  if (e->op == OP_SLICE || e->op == OP_PAD) {
    int n = an_shard_pairs(p, e->out[0], pids, cids);
    for (int i = 0; i < n; i++)
      if (pids[i] == pid) return false;
    return true;
  }
  if (e->op == OP_CAT) return a == e->attr.cat.axis;
  return true;
}

/* Whether tv (an operand or the output of a resize or reshape e) is sharded on an axis
 * e resizes. */
static bool sharded_resized(const Expr *e, Val *tv, const AnSharding *l) {
  for (int a = 0, k = 0; a < TV(tv)->nlogical; a++) {
    if (ID(TV(tv)->logical[a])->iter_type == CF_ITER_REDUCTION) continue;
    if (l->dim[a] >= 0 && resized_axis(e, k)) return true;
    k++;
  }
  return false;
}

static cf_status refuse(cf_fusion *f, const Expr *e, Val *tv, const char *why) {
  return ir_error_tv(f, CF_ERR_UNSUPPORTED, tv, "sharding: %s (%s) %s", TV(e->out[0])->display_name,
                     ir_op_name(e->op), why);
}

static cf_status check_expr(const AnShardings *s, const Expr *e) {
  Val *c = e->out[0];
  const AnSharding *cl = an_sharding_of(s, c);
  OpKind k = ir_op_kind(e->op);
  if (makes_elements(e->op) && an_sharding_any(c, cl, false))
    return refuse(s->f, e, c, "is sharded, but it makes its elements rather than reading a shard; shard a consumer "
                              "instead");
  if (k != OPK_RESIZE && k != OPK_RESHAPE) return CF_OK;
  for (int i = 0; i < e->nin; i++)
    if (e->in[i]->kind == VAL_TV && sharded_resized(e, e->in[i], an_sharding_of(s, e->in[i])))
      return refuse(s->f, e, e->in[i], "reads a sharded axis it resizes; resizes and reshapes of sharded axes are not "
                                       "supported");
  if (sharded_resized(e, c, cl))
    return refuse(s->f, e, c, "is sharded on a resized axis; resizes and reshapes of sharded axes are not supported");
  return CF_OK;
}

/* The mesh axis of a reduced, sharded axis of p whose output axis is a reduction. */
static bool is_partial_dim(const Val *p, const int8_t *from, Val *const *pids, Val *const *cids, int n, int dim) {
  for (int k = 0; k < n; k++) {
    int pa = pos_in(p, pids[k]);
    if (pa >= 0 && from[pa] == dim && ID(cids[k])->iter_type == CF_ITER_REDUCTION) return true;
  }
  return false;
}

/* The partial mesh axes of r and the consumer axis each scatters to (-1: allreduce). */
static void find_partials(AnReshard *r, const AnSharding *cl, Val *const *pids, Val *const *cids, int n) {
  for (int k = 0; k < n && r->npartial < 2; k++) {
    int pa = pos_in(r->producer, pids[k]);
    if (pa < 0 || r->from[pa] < 0 || ID(cids[k])->iter_type != CF_ITER_REDUCTION) continue;
    int dim = r->from[pa];
    r->partial_dim[r->npartial] = dim;
    r->scatter_axis[r->npartial] = -1;
    for (int a = 0; a < TV(r->consumer)->nlogical; a++)
      if (cl->dim[a] == dim && ID(TV(r->consumer)->logical[a])->iter_type != CF_ITER_REDUCTION)
        r->scatter_axis[r->npartial] = a;
    r->npartial++;
  }
}

/* The layout expression e needs of operand p (r->to), and its partials. */
static void needed_layout(const AnShardings *s, const Expr *e, Val *p, AnReshard *r) {
  Val *c = e->out[0];
  const AnSharding *pl = an_sharding_of(s, p), *cl = an_sharding_of(s, c);
  memset(r, 0, sizeof *r);
  r->expr = e;
  r->producer = p;
  r->consumer = c;
  memcpy(r->from, pl->dim, sizeof r->from);
  memset(r->to, -1, sizeof r->to);
  r->to_mesh = cl->mesh;
  r->cross_mesh = pl->mesh && cl->mesh && !cf_device_mesh_equal(pl->mesh, cl->mesh);
  Val *pids[CF_MAX_RANK], *cids[CF_MAX_RANK];
  int n = an_shard_pairs(p, c, pids, cids);
  for (int k = 0; k < n; k++) {
    int pa = pos_in(p, pids[k]), ca = pos_in(c, cids[k]);
    if (pa < 0 || ca < 0 || ID(pids[k])->iter_type == CF_ITER_BROADCAST) continue; /* never sharded */
    if (ID(cids[k])->iter_type == CF_ITER_REDUCTION) r->to[pa] = r->cross_mesh ? -1 : r->from[pa];
    else if (!r->cross_mesh && cl->dim[ca] >= 0 && is_partial_dim(p, r->from, pids, cids, n, cl->dim[ca])) r->to[pa] = -1;
    else r->to[pa] = cl->dim[ca];
  }
  if (!r->cross_mesh) find_partials(r, cl, pids, cids, n);
}

int an_reshardings(const AnShardings *s, AnReshard **out) {
  cf_fusion *f = s->f;
  *out = NULL;
  Arena *scratch = arena_create();
  int n = 0, count = 0, cap = 0;
  Expr **exprs = scratch ? ir_fusion_tensor_exprs_in(scratch, f, &n) : NULL;
  if (!exprs && n) ir_error(f, CF_ERR_OUT_OF_MEMORY, "sharding: out of memory");
  for (int i = 0; i < n && !f->status; i++) {
    const Expr *e = exprs[i];
    if (check_expr(s, e)) break;
    for (int j = 0; j < e->nin && !f->status; j++) {
      if (e->in[j]->kind != VAL_TV) continue;
      AnReshard r;
      needed_layout(s, e, e->in[j], &r);
      if (!an_reshard_moves_input(&r) && !r.npartial) continue;
      if (r.npartial && (e->op == OP_WELFORD || e->op == OP_ONLINE_SOFTMAX)) {
        refuse(f, e, e->in[j], "reduces a sharded axis; its states have no collective (use sums: mean, var)");
        break;
      }
      if (count == cap) {
        cap = cap ? 2 * cap : 8;
        AnReshard *g = realloc(*out, sizeof(AnReshard) * (size_t)cap);
        if (!g) {
          ir_error(f, CF_ERR_OUT_OF_MEMORY, "sharding: out of memory");
          break;
        }
        *out = g;
      }
      (*out)[count++] = r;
    }
  }
  arena_destroy(scratch);
  if (f->status) {
    free(*out);
    *out = NULL;
    return -1;
  }
  return count;
}
