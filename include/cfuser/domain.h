/* cfuser/domain.h: a TensorView's domains and the maps between IterDomains, as nvFuser's
 * users reach for them (TensorView::getRootDomain / getLogicalDomain / getLoopDomain,
 * setLoopDomain, the IdModel's exact, permissive and loop graphs).
 *
 * A TensorView has up to four domains, each an array of IterDomains (cf_id):
 *   root       what its definition reads (differs from logical for a permute, whose root
 *              is in the input's order, and for the partial tensor of cf_rfactor, whose
 *              logical axes are splits of its root axes);
 *   logical    its shape, what its consumers read;
 *   allocation how it is laid out in memory (the logical domain unless set);
 *   loop       what scheduling transforms: the loops that compute it.
 * Every call records the first error on the fusion (see fusion.h), naming the tensor and
 * the axis. */
#ifndef CFUSER_DOMAIN_H
#define CFUSER_DOMAIN_H

#include <stdbool.h>

#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cf_domain { CF_DOMAIN_ROOT, CF_DOMAIN_LOGICAL, CF_DOMAIN_ALLOCATION, CF_DOMAIN_LOOP } cf_domain;

/* The number of IterDomains of tv's domain d (0 for a NULL tensor or an unknown d). */
CF_API int cf_tv_domain_size(const cf_tv *tv, cf_domain d);
/* IterDomain i of tv's domain d (negative i counts from the end), or NULL when out of
 * range. cf_tv_axis(tv, i) is cf_tv_domain_axis(tv, CF_DOMAIN_LOOP, i). */
CF_API cf_id *cf_tv_domain_axis(const cf_tv *tv, cf_domain d, int i);

/* Makes the n IterDomains ids tv's loop domain (nvFuser's setLoopDomain): any IterDomains
 * of tv's transform history that together cover its logical domain exactly once, e.g. the
 * axis a split made, to undo the split, or the outputs of transforms made for another loop
 * order. Refused, naming the axis: an IterDomain of another tensor or not derived from tv's
 * logical domain, one derived from another given one, a logical axis left out or covered
 * twice, only part of a split's outputs; and a tv already inlined or with producers
 * inlined into it (its loops are shared). */
CF_API cf_status cf_set_loop_domain(cf_fusion *f, cf_tv *tv, int n, cf_id *const *ids);

/* The relations between IterDomains that scheduling and lowering use (analysis/):
 *   CF_MAP_EXACT       the same extent and index: an op's output axis and the input axis
 *                      it reads, equal splits and merges of such axes;
 *   CF_MAP_PERMISSIVE  the exact map, plus a broadcast axis with the axis it meets, merges
 *                      with a broadcast forwarded: the axes that may share a loop;
 *   CF_MAP_LOOP        the axes that share one for-loop under the compute-at positions. */
typedef enum cf_id_map { CF_MAP_EXACT, CF_MAP_PERMISSIVE, CF_MAP_LOOP } cf_id_map;

/* *mapped receives whether a and b (IterDomains of f's tensors) are related by m. */
CF_API cf_status cf_ids_mapped(cf_fusion *f, cf_id_map m, const cf_id *a, const cf_id *b, bool *mapped);

#ifdef __cplusplus
}
#endif
#endif
