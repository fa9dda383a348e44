/* scheduler/val_map.c: ValMap, the hashed Val -> pointer map of replay and span-tree
 * scratch tables (see val_map.h). Linear probing over a power-of-two table with a
 * multiplicative hash of the dense Val id; the table doubles at half full, the old one
 * left in the scratch arena (geometric, so the total stays linear in what is put). */

#include "scheduler/val_map.h"

static int slot_of(const ValMap *m, int key) {
  unsigned h = (unsigned)key * 2654435761u;
  int mask = m->cap - 1, i = (int)(h & (unsigned)mask);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & mask;
  return i;
}

static bool grow(ValMap *m) {
  int cap = m->cap ? m->cap * 2 : 16;
  ValMap n = {m->arena, ARENA_ARRAY(m->arena, int, cap), ARENA_ARRAY(m->arena, void *, cap), cap, 0};
  if (!n.keys || !n.v) return false;
  for (int i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      int s = slot_of(&n, m->keys[i]);
      n.keys[s] = m->keys[i];
      n.v[s] = m->v[i];
      n.len++;
    }
  *m = n;
  return true;
}

bool sched_map_put(ValMap *m, const Val *k, void *value) {
  if (2 * (m->len + 1) > m->cap && !grow(m)) return false;
  int s = slot_of(m, k->id + 1);
  if (!m->keys[s]) {
    m->keys[s] = k->id + 1;
    m->len++;
  }
  m->v[s] = value;
  return true;
}

void *sched_map_get(const ValMap *m, const Val *k) {
  if (!k || !m->cap) return NULL;
  int s = slot_of(m, k->id + 1);
  return m->keys[s] ? m->v[s] : NULL;
}
