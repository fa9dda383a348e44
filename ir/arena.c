/* ir/arena.c: the bump allocator that owns every node of a Fusion (and of a lowered
 * kernel), plus the two small containers everything else uses: PtrVec (a growable
 * pointer array whose storage lives in an arena) and StrBuf (a malloc'd text buffer for
 * printers and code generators).
 *
 * Key decision: nothing in the IR is freed individually. Chunks grow geometrically and
 * are released together by arena_destroy, so IR code never tracks ownership and an error
 * can unwind from anywhere without leaking. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct Chunk {
  struct Chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
  Chunk *head;
};

Arena *arena_create(void) { return calloc(1, sizeof(Arena)); }

void arena_destroy(Arena *a) {
  if (!a) return;
  for (Chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t want = c ? c->size * 2 : 16384;
    if (want > (size_t)1 << 24) want = (size_t)1 << 24;
    if (want < size) want = size;
    Chunk *n = malloc(sizeof(Chunk) + want);
    if (!n) return NULL;
    n->size = want;
    n->used = 0;
    n->next = c;
    a->head = c = n;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *arena_memdup(Arena *a, const void *p, size_t size) {
  void *q = arena_alloc(a, size ? size : 1);
  if (q && size) memcpy(q, p, size);
  return q;
}

char *arena_strdup(Arena *a, const char *s) { return arena_memdup(a, s, strlen(s) + 1); }

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *s = arena_alloc(a, (size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = arena_vprintf(a, fmt, ap);
  va_end(ap);
  return s;
}

void ptrvec_push(Arena *a, PtrVec *v, void *p) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 4;
    void **items = arena_alloc(a, sizeof(void *) * (size_t)cap);
    if (!items) return;
    if (v->len) memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
    v->items = items;
    v->cap = cap;
  }
  v->items[v->len++] = p;
}

bool ptrvec_contains(const PtrVec *v, const void *p) {
  for (int i = 0; i < v->len; i++)
    if (v->items[i] == p) return true;
  return false;
}

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return;
    b->data = d;
    b->cap = cap;
  }
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

void sb_puts(StrBuf *b, const char *s) { sb_printf(b, "%s", s); }

void sb_free(StrBuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *sb_take(StrBuf *b) {
  char *s = b->data ? b->data : calloc(1, 1);
  b->data = NULL;
  b->len = b->cap = 0;
  return s;
}

void sb_vset(char **slot, const char *fmt, va_list ap) {
  StrBuf b = {0};
  sb_vprintf(&b, fmt, ap);
  free(*slot);
  *slot = sb_take(&b);
}

void errmsg_begin(ErrMsg *m) { m->fresh = false; }

void errmsg_vset(ErrMsg *m, const char *fmt, va_list ap) {
  if (!m->fresh) {
    free(m->prev);
    m->prev = m->cur;
    m->cur = NULL;
    m->fresh = true;
  }
  sb_vset(&m->cur, fmt, ap);
}

void errmsg_retract(ErrMsg *m) {
  if (!m->fresh) return;
  free(m->cur);
  m->cur = m->prev;
  m->prev = NULL;
  m->fresh = false;
}

const char *errmsg_get(const ErrMsg *m) { return m->cur ? m->cur : ""; }

void errmsg_free(ErrMsg *m) {
  free(m->cur);
  free(m->prev);
  *m = (ErrMsg){0};
}
