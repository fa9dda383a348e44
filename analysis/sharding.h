/* analysis/sharding.h: how each tensor of a fusion is laid out over a device mesh, and
 * where a consumer needs another layout than its producer has (resharding).
 *
 * One analysis (sharding.c), computed once per fusion and read by the communication
 * lowering (executor/mesh_plan.c), cf_propagate_shardings and the tests. Internal. */
#ifndef CFUSER_ANALYSIS_SHARDING_H
#define CFUSER_ANALYSIS_SHARDING_H

#include "ir/ir.h"

/* The layout of one tensor: its mesh (NULL only when the fusion has no mesh at all) and,
 * per logical axis, the mesh axis sharding it or -1 (replicated along it). A sharded
 * reduction axis (rdeviceIdx.x) says the tensor is reduced over a sharded producer axis:
 * its iteration axes then hold partial results until a collective combines them. */
typedef struct AnSharding {
  const cf_device_mesh *mesh;
  int8_t dim[CF_MAX_RANK];
} AnSharding;

/* Every tensor's layout, by Val id (entries of non-tensor Vals unused). */
typedef struct AnShardings {
  cf_fusion *f;
  const cf_device_mesh *mesh; /* the fusion's mesh: the first one placed, or NULL */
  AnSharding *by_id;
} AnShardings;

/* Computes the layouts of f: declared (a tensor with a mesh: its DID loop axes, each the
 * logical axis itself or the outer output of a split of one), or propagated from the
 * producers (a tensor without a mesh). Errors are recorded on f and returned; on success
 * the caller frees s->by_id with an_shardings_free. */
cf_status an_shardings_compute(cf_fusion *f, AnShardings *s);
void an_shardings_free(AnShardings *s);
static inline const AnSharding *an_sharding_of(const AnShardings *s, const Val *tv) { return &s->by_id[tv->id]; }
/* Whether any axis of the layout is sharded (reduction axes left out when iter_only). */
bool an_sharding_any(const Val *tv, const AnSharding *l, bool iter_only);
/* The pairs of p's and consumer c's axes that share a sharding: the pairwise map, plus
 * the axes a slice or pad leaves whole. At most CF_MAX_RANK; -1 when p is not c's
 * producer. */
int an_shard_pairs(Val *p, Val *c, Val **pids, Val **cids);
/* The size of mesh axis `dim` of m. */
int an_mesh_axis_size(const cf_device_mesh *m, int dim);

/* One resharding: expression `expr` reads `producer` laid out `from` but needs it laid
 * out `to` (per producer logical axis; equal when only a reduction needs combining), on
 * `to_mesh` (another mesh than the producer's: cross_mesh). A reduction over sharded
 * axes leaves partial results: npartial mesh axes to combine after it, each by an
 * allreduce (scatter_axis -1) or a reduce-scatter onto the consumer's logical axis
 * scatter_axis. */
typedef struct AnReshard {
  const Expr *expr;
  Val *producer, *consumer;
  int8_t from[CF_MAX_RANK], to[CF_MAX_RANK];
  const cf_device_mesh *to_mesh;
  bool cross_mesh;
  int npartial;
  int partial_dim[2], scatter_axis[2];
} AnReshard;

/* Whether r moves data of its producer before the expression (layout or mesh change). */
bool an_reshard_moves_input(const AnReshard *r);

/* The reshardings of f in topological order of their expressions, at most one per
 * (expression, producer); written to *out (malloc'd, caller frees), their count
 * returned, or -1 with the error recorded on f (an op cfuser cannot shard: a reshape of
 * a sharded axis, a slice/pad/cat on one, a sharded iota or random tensor, a Welford
 * over a sharded axis, a sharded axis moving to another axis of the same mesh axis). */
int an_reshardings(const AnShardings *s, AnReshard **out);

/* Prints a layout as a domain: [ideviceIdx.x, iS, rS] (parallel type per logical axis). */
void an_sharding_print(StrBuf *b, const Val *tv, const int8_t *dim, const cf_device_mesh *m);

#endif
