/* scheduler/val_map.h: a hashed map from Vals to pointers for the scratch tables a
 * single replay or walk uses (internal header).
 *
 * ValTab (sched.h) is an array indexed by Val id: ideal for tables over a whole fusion,
 * but one made per replay costs as much as the largest id it holds, which along a chain
 * of n tensors made replays quadratic in memory. A ValMap costs what it holds: open
 * addressing keyed by Val id, arena storage, doubled when half full. */
#ifndef CFUSER_SCHED_VAL_MAP_H
#define CFUSER_SCHED_VAL_MAP_H

#include "ir/ir.h"

typedef struct ValMap {
  Arena *arena;
  int *keys; /* Val id + 1; 0 is an empty slot */
  void **v;
  int cap, len;
} ValMap;

/* false only when out of memory; a NULL value means "absent", as in ValTab. */
bool sched_map_put(ValMap *m, const Val *k, void *value);
void *sched_map_get(const ValMap *m, const Val *k);

#endif
