/* lower/kx_program.c: a KExpr compiled for evaluating it many times (kir.h's kx_program),
 * for the passes that prove a property of an index by evaluating it at every point of a
 * tile and at samples of the loops around it (lower/mma_wgmma.c: a wgmma operand's index
 * at 4096 points for each of up to hundreds of samples, 3.1 s of a 128 x 256 tile's
 * compile through kx_eval).
 *
 * The program lists the expression's distinct subexpressions, operands first: a node
 * reached twice (a DAG) and nodes structurally equal (the same kind, operator, constant or
 * leaf slot and the same operands: an index repeats (i0 * 8 + blockIdx.y) * 128 ... in
 * every term of its swizzle) become one instruction, so a 2,000-character index is about
 * a hundred of them. Leaves are slots the caller fills; a leaf the caller has no slot for,
 * a parameter's size or stride and a block vote are unknown, as kx_eval without them.
 * Key decision: every instruction is computed, each with a flag saying whether kx_eval
 * would have its value, so the result is the same as kx_eval's: a division by zero in
 * the branch a select does not take leaves the result known, one in a taken branch or an
 * operand makes it unknown. */
#include <string.h>

#include "lower/kir.h"

typedef enum { KXP_CONST, KXP_LEAF, KXP_UNKNOWN, KXP_BIN, KXP_SELECT } KxpKind;

typedef struct KxpInstr {
  KxpKind kind;
  IrOp op;
  int64_t value; /* KXP_CONST: the constant; KXP_LEAF: the slot */
  int a, b, c;   /* operands: earlier instructions */
} KxpInstr;

/* An entry of the tables: a node pointer or an instruction's key, and its instruction. */
typedef struct KxpSlot {
  const void *ptr; /* the pointer table's key */
  int instr;       /* -1: empty */
} KxpSlot;

struct KxProgram {
  Arena *arena;
  KxpInstr *code;
  int n, nptr, cap;         /* instructions, pointers met; each at most cap */
  KxpSlot *by_ptr, *by_key; /* open addressing, cap * 2 entries each */
  int (*leaf_slot)(void *user, const KExpr *leaf);
  void *user;
  int64_t *val; /* the run's values, n of them */
  bool *known;
};

static uint64_t mix(uint64_t h, uint64_t x) { return (h ^ x) * 0x100000001B3ULL; }

static uint64_t key_hash(const KxpInstr *x) {
  uint64_t h = 0xCBF29CE484222325ULL;
  h = mix(h, (uint64_t)x->kind), h = mix(h, (uint64_t)x->op), h = mix(h, (uint64_t)x->value);
  return mix(mix(mix(h, (uint64_t)x->a), (uint64_t)x->b), (uint64_t)x->c);
}

static bool same_key(const KxpInstr *x, const KxpInstr *y) {
  return x->kind == y->kind && x->op == y->op && x->value == y->value && x->a == y->a && x->b == y->b && x->c == y->c;
}

static int table_size(const KxProgram *p) { return 2 * p->cap; }

/* The table entry of ptr (by pointer) or of instruction x (by key): its own or the empty
 * one where it would go. */
static KxpSlot *find_ptr(KxProgram *p, const void *ptr) {
  int m = table_size(p);
  for (uint64_t i = ((uintptr_t)ptr >> 4) % (uint64_t)m;; i = (i + 1) % (uint64_t)m)
    if (p->by_ptr[i].instr < 0 || p->by_ptr[i].ptr == ptr) return &p->by_ptr[i];
}

static KxpSlot *find_key(KxProgram *p, const KxpInstr *x) {
  int m = table_size(p);
  for (uint64_t i = key_hash(x) % (uint64_t)m;; i = (i + 1) % (uint64_t)m)
    if (p->by_key[i].instr < 0 || same_key(&p->code[p->by_key[i].instr], x)) return &p->by_key[i];
}

/* Room for cap instructions and tables of twice that, the entries so far placed again. */
static void grow(KxProgram *p) {
  int cap = p->cap ? 2 * p->cap : 64;
  KxpInstr *code = ARENA_ARRAY(p->arena, KxpInstr, cap);
  if (p->n) memcpy(code, p->code, sizeof *code * (size_t)p->n);
  KxpSlot *old = p->by_ptr;
  int old_size = p->cap ? table_size(p) : 0;
  p->code = code, p->cap = cap;
  p->by_ptr = ARENA_ARRAY(p->arena, KxpSlot, table_size(p));
  p->by_key = ARENA_ARRAY(p->arena, KxpSlot, table_size(p));
  for (int i = 0; i < table_size(p); i++) p->by_ptr[i].instr = p->by_key[i].instr = -1;
  for (int i = 0; i < old_size; i++)
    if (old[i].instr >= 0) *find_ptr(p, old[i].ptr) = old[i];
  for (int i = 0; i < p->n; i++) *find_key(p, &p->code[i]) = (KxpSlot){NULL, i};
}

/* The instruction computing x: an equal one already listed, else x appended. */
static int emit(KxProgram *p, KxpInstr x) {
  KxpSlot *s = find_key(p, &x);
  if (s->instr >= 0) return s->instr;
  if (p->n == p->cap) {
    grow(p);
    s = find_key(p, &x);
  }
  p->code[p->n] = x;
  *s = (KxpSlot){NULL, p->n};
  return p->n++;
}

static int compile(KxProgram *p, const KExpr *e) {
  KxpSlot *s = find_ptr(p, e);
  if (s->instr >= 0) return s->instr;
  KxpInstr x = {KXP_UNKNOWN, OP_ADD, 0, -1, -1, -1};
  switch (e->kind) {
  case KX_CONST: x.kind = KXP_CONST, x.value = e->value; break;
  case KX_VAR:
  case KX_THREAD: {
    int slot = p->leaf_slot(p->user, e);
    if (slot >= 0) x.kind = KXP_LEAF, x.value = slot;
    break;
  }
  case KX_BINARY: x.kind = KXP_BIN, x.op = e->op, x.a = compile(p, e->a), x.b = compile(p, e->b); break;
  case KX_SELECT: x.kind = KXP_SELECT, x.a = compile(p, e->a), x.b = compile(p, e->b), x.c = compile(p, e->c); break;
  case KX_PARAM_SIZE:
  case KX_PARAM_STRIDE:
  case KX_BLOCK_ALL: break;
  }
  int i = emit(p, x);
  if (p->nptr == p->cap) grow(p); /* the pointer table keeps half its entries free */
  *find_ptr(p, e) = (KxpSlot){e, i};
  p->nptr++;
  return i;
}

KxProgram *kx_program(Arena *a, const KExpr *e, int (*leaf_slot)(void *user, const KExpr *leaf), void *user) {
  KxProgram *p = ARENA_NEW(a, KxProgram);
  p->arena = a, p->leaf_slot = leaf_slot, p->user = user;
  grow(p);
  compile(p, e);
  p->val = ARENA_ARRAY(a, int64_t, p->n);
  p->known = ARENA_ARRAY(a, bool, p->n);
  return p;
}

int kx_program_length(const KxProgram *p) { return p->n; }

bool kx_program_run(KxProgram *p, const int64_t *slots, int64_t *out) {
  int64_t *v = p->val;
  bool *k = p->known;
  for (int i = 0; i < p->n; i++) {
    const KxpInstr *x = &p->code[i];
    switch (x->kind) {
    case KXP_CONST: v[i] = x->value, k[i] = true; break;
    case KXP_LEAF: v[i] = slots[x->value], k[i] = true; break;
    case KXP_UNKNOWN: k[i] = false; break;
    case KXP_BIN: k[i] = k[x->a] && k[x->b] && ir_int_apply(x->op, v[x->a], v[x->b], &v[i]); break;
    case KXP_SELECT: {
      int taken = k[x->a] ? (v[x->a] ? x->b : x->c) : -1;
      k[i] = taken >= 0 && k[taken];
      if (k[i]) v[i] = v[taken];
      break;
    }
    }
  }
  if (!k[p->n - 1]) return false;
  *out = v[p->n - 1];
  return true;
}
