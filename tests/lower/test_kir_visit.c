/* The kernel IR's shared walks (lower/kir_visit.c) on small trees built by hand: the
 * visitor's order, skipping, stopping and path; the mutator's removals, replacements and
 * expansions (and that it rebuilds nothing when nothing changes); deep copies; the
 * printer's and the verifier's if/else. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "test_util.h"

static Arena *A;
static KTensor *T0, *T1;

static void setup(void) {
  A = arena_create();
  T0 = ARENA_NEW(A, KTensor);
  *T0 = (KTensor){.name = "T0", .mem = CF_MEM_GLOBAL, .dtype = CF_FLOAT, .param = 0, .tmem_region = -1};
  T1 = ARENA_NEW(A, KTensor);
  *T1 = (KTensor){.name = "T1", .mem = CF_MEM_LOCAL, .dtype = CF_FLOAT, .param = -1, .tmem_region = -1};
  T1->size = kx_const(A, 4);
}
static void teardown(void) { arena_destroy(A); }

TestSuite(kir_visit, .init = setup, .fini = teardown);

static KNode *node(KnKind kind) {
  KNode *n = ARENA_NEW(A, KNode);
  n->kind = kind;
  return n;
}

static KNode *loop(const char *var, int64_t extent) {
  KNode *l = node(KN_FOR);
  l->u.loop.var = var;
  l->u.loop.index = kx_var(A, var);
  l->u.loop.extent = kx_const(A, extent);
  l->u.loop.pt = CF_PT_SERIAL;
  return l;
}

/* T1[index] = Set(T0[index]), run in the given loops (outermost first). */
static KNode *copy_op(KExpr *index, int nloop, KNode **loops) {
  KNode *op = node(KN_OP);
  op->u.op.op = OP_SET;
  op->u.op.out_dtype = CF_FLOAT;
  op->u.op.out = (KAccess){.t = T1, .index = index};
  op->u.op.in[0] = (KAccess){.t = T0, .index = index};
  op->u.op.nin = 1;
  op->u.op.nloop = nloop;
  op->u.op.loops = ARENA_ARRAY(A, KNode *, nloop);
  op->u.op.loop_index = ARENA_ARRAY(A, KExpr *, nloop);
  for (int j = 0; j < nloop; j++) {
    op->u.op.loops[j] = loops[j];
    op->u.op.loop_index[j] = loops[j]->u.loop.index;
  }
  return op;
}

static KNode *comment(const char *text) {
  KNode *c = node(KN_COMMENT);
  c->u.comment = text;
  return c;
}

/* FOR i0 in 0..4 { IF (i0 < 3) { op } ELSE { // else }  SYNC  FOR i1 in 0..2 { op } } */
typedef struct Tree {
  KBlock body;
  KNode *outer, *cond, *then_op, *inner, *inner_op, *sync;
} Tree;

static Tree tree(void) {
  Tree t = {0};
  t.outer = loop("i0", 4);
  t.cond = node(KN_IF);
  t.cond->u.cond.cond = kx_bin(A, OP_LT, kx_var(A, "i0"), kx_const(A, 3));
  t.then_op = copy_op(kx_var(A, "i0"), 1, &t.outer);
  kb_push(A, &t.cond->u.cond.then, t.then_op);
  kb_push(A, &t.cond->u.cond.otherwise, comment("else"));
  t.sync = node(KN_SYNC);
  t.inner = loop("i1", 2);
  t.inner_op = copy_op(kx_var(A, "i1"), 2, (KNode *[]){t.outer, t.inner});
  kb_push(A, &t.inner->u.loop.body, t.inner_op);
  kb_push(A, &t.outer->u.loop.body, t.cond);
  kb_push(A, &t.outer->u.loop.body, t.sync);
  kb_push(A, &t.outer->u.loop.body, t.inner);
  kb_push(A, &t.body, t.outer);
  return t;
}

static const char *kind_name(KnKind k) {
  switch (k) {
  case KN_FOR: return "FOR";
  case KN_IF: return "IF";
  case KN_OP: return "OP";
  case KN_SYNC: return "SYNC";
  case KN_COMMENT: return "COMMENT";
  default: return "?";
  }
}

typedef struct Log {
  StrBuf b;
  int skip;     /* pre returns false for this kind (-1: none) */
  int stop_at;  /* pre stops the walk at this kind (-1: none) */
} Log;

static bool log_pre(KVisitor *v, KNode *n) {
  Log *l = v->user;
  sb_printf(&l->b, "<%s@%d ", kind_name(n->kind), v->path.depth);
  if ((int)n->kind == l->stop_at) v->stop = true;
  return (int)n->kind != l->skip;
}
static void log_post(KVisitor *v, KNode *n) { sb_printf(&((Log *)v->user)->b, "%s> ", kind_name(n->kind)); }
static void log_between(KVisitor *v, KNode *n, int i) { sb_printf(&((Log *)v->user)->b, "|%s.%d ", kind_name(n->kind), i); }

static char *walk_log(KBlock *b, int skip, int stop_at, bool *finished) {
  Log l = {{0}, skip, stop_at};
  KVisitor v = {.between = log_between, .user = &l};
  kir_visit_all(&v, log_pre, log_post);
  *finished = kir_visit(&v, b);
  cr_expect_null(v.path.node, "the walk frees its path");
  return sb_take(&l.b);
}

Test(kir_visit, pre_and_post_order_with_the_else_branch_between) {
  Tree t = tree();
  bool done;
  char *s = walk_log(&t.body, -1, -1, &done);
  cr_expect(done);
  cr_expect_str_eq(s, "<FOR@1 <IF@2 <OP@3 OP> |IF.1 <COMMENT@3 COMMENT> IF> <SYNC@2 SYNC> <FOR@2 <OP@3 OP> FOR> FOR> ");
  free(s);
}

Test(kir_visit, pre_returning_false_skips_the_blocks_but_not_post) {
  Tree t = tree();
  bool done;
  char *s = walk_log(&t.body, KN_IF, -1, &done);
  cr_expect_str_eq(s, "<FOR@1 <IF@2 IF> <SYNC@2 SYNC> <FOR@2 <OP@3 OP> FOR> FOR> ");
  free(s);
}

Test(kir_visit, a_callback_stops_the_walk) {
  Tree t = tree();
  bool done;
  char *s = walk_log(&t.body, -1, KN_SYNC, &done);
  cr_expect_not(done);
  cr_expect_str_eq(s, "<FOR@1 <IF@2 <OP@3 OP> |IF.1 <COMMENT@3 COMMENT> IF> <SYNC@2 ");
  free(s);
}

static bool check_path(KVisitor *v, KNode *n) {
  Tree *t = v->user;
  if (n != t->inner_op) return true;
  cr_expect_eq(v->path.depth, 3);
  cr_expect_eq(v->path.node[0], t->outer);
  cr_expect_eq(v->path.block[0], &t->body);
  cr_expect_eq(v->path.node[1], t->inner);
  cr_expect_eq(v->path.block[1], &t->outer->u.loop.body);
  cr_expect_eq(v->path.node[2], n);
  cr_expect_eq(v->path.block[2], &t->inner->u.loop.body);
  return true;
}

Test(kir_visit, the_path_holds_the_enclosing_nodes_and_their_blocks) {
  Tree t = tree();
  KVisitor v = {.pre = {[KN_OP] = check_path}, .user = &t};
  cr_expect(kir_visit(&v, &t.body));
}

Test(kir_visit, the_kind_table_says_which_nodes_are_collective) {
  cr_expect(kn_is_collective(KN_SYNC));
  cr_expect(kn_is_collective(KN_BLOCK_REDUCE));
  cr_expect(kn_is_collective(KN_TMEM_LD));
  cr_expect_not(kn_is_collective(KN_OP));
  cr_expect_not(kn_is_collective(KN_IF));
  KNode *r = node(KN_BLOCK_REDUCE);
  KBlock *b[KN_MAX_BLOCKS];
  cr_expect_eq(kn_blocks(r, b), 1);
  cr_expect_eq(b[0], &r->u.acc.tail);
  cr_expect_eq(kn_blocks(node(KN_OP), b), 0);
}

/* ---- the mutator ---------------------------------------------------------------------- */

static void drop(KMutator *m, KNode *n, KBlock *out) {
  (void)m, (void)n, (void)out; /* appends nothing: removed */
}

static void twice(KMutator *m, KNode *n, KBlock *out) {
  kb_push(m->arena, out, n);
  kb_push(m->arena, out, comment("after"));
}

static void sync_to_comment(KMutator *m, KNode *n, KBlock *out) {
  (void)n;
  kb_push(m->arena, out, comment("was a sync"));
}

static char *print(KBlock *b) {
  KKernel k = {.arena = A, .params = &T0, .param_names = (const char *[]){"T0"}, .nparams = 1, .body = *b};
  StrBuf s = {0};
  kir_print(&s, &k);
  return sb_take(&s);
}

static const char *const TREE_TEXT = "FOR i0 in 0..4 (S)\n"
                                     "  IF (i0 < 3)\n"
                                     "    T1[i0] = Set(T0[i0])\n"
                                     "  ELSE\n"
                                     "    // else\n"
                                     "  SYNC\n"
                                     "  FOR i1 in 0..2 (S)\n"
                                     "    T1[i1] = Set(T0[i1])\n";

Test(kir_visit, a_mutator_that_changes_nothing_rebuilds_nothing) {
  Tree t = tree();
  KNode **top = t.body.items, **body = t.outer->u.loop.body.items, **inner = t.inner->u.loop.body.items;
  KMutator m = {.arena = A};
  cr_expect_not(kir_mutate(&m, &t.body));
  cr_expect_eq(t.body.items, top);
  cr_expect_eq(t.outer->u.loop.body.items, body);
  cr_expect_eq(t.inner->u.loop.body.items, inner);
  char *s = print(&t.body);
  cr_expect_str_eq(s, TREE_TEXT);
  free(s);
}

Test(kir_visit, a_mutator_removes_replaces_and_expands_and_rebuilds_only_the_changed_blocks) {
  Tree t = tree();
  KNode **top = t.body.items, **inner = t.inner->u.loop.body.items;
  KMutator m = {.arena = A, .fn = {[KN_COMMENT] = drop, [KN_SYNC] = sync_to_comment}};
  cr_expect_not(kir_mutate(&m, &t.body), "the top block's own items did not change");
  cr_expect_eq(t.body.items, top, "the top block's only item kept its identity");
  cr_expect_eq(t.body.items[0], t.outer);
  cr_expect_eq(t.inner->u.loop.body.items, inner, "a block without changes keeps its items");
  cr_expect_eq(t.cond->u.cond.otherwise.len, 0);
  char *s = print(&t.body);
  cr_expect_str_eq(s, "FOR i0 in 0..4 (S)\n"
                      "  IF (i0 < 3)\n"
                      "    T1[i0] = Set(T0[i0])\n"
                      "  // was a sync\n"
                      "  FOR i1 in 0..2 (S)\n"
                      "    T1[i1] = Set(T0[i1])\n");
  free(s);
  KMutator m2 = {.arena = A, .fn = {[KN_OP] = twice}};
  KNode **before = t.inner->u.loop.body.items;
  kir_mutate(&m2, &t.body);
  cr_expect_neq(t.inner->u.loop.body.items, before, "an expanded op rebuilds its block");
  s = print(&t.body);
  cr_expect_str_eq(s, "FOR i0 in 0..4 (S)\n"
                      "  IF (i0 < 3)\n"
                      "    T1[i0] = Set(T0[i0])\n"
                      "    // after\n"
                      "  // was a sync\n"
                      "  FOR i1 in 0..2 (S)\n"
                      "    T1[i1] = Set(T0[i1])\n"
                      "    // after\n");
  free(s);
}

/* ---- copies --------------------------------------------------------------------------- */

static bool collect_ops(KVisitor *v, KNode *n) {
  PtrVec *ops = v->user;
  ptrvec_push(A, ops, n);
  return true;
}

Test(kir_visit, a_copy_is_deep_shares_expressions_and_points_its_ops_at_its_loops) {
  Tree t = tree();
  KNode *c = kir_clone(A, t.inner);
  cr_expect_neq(c, t.inner);
  cr_expect_neq(c->u.loop.body.items, t.inner->u.loop.body.items);
  KNode *op = c->u.loop.body.items[0];
  cr_expect_neq(op, t.inner_op);
  cr_expect_eq(op->u.op.out.index, t.inner_op->u.op.out.index, "KExprs are shared");
  cr_expect_eq(op->u.op.loops[0], t.outer, "a loop outside the copy stays");
  cr_expect_eq(op->u.op.loops[1], c, "a loop inside the copy is the copy's");
  cr_expect_eq(t.inner_op->u.op.loops[1], t.inner, "the original is untouched");
  cr_expect_neq(op->u.op.loop_index, t.inner_op->u.op.loop_index, "arrays are copied");

  KBlock copy;
  kir_clone_block(A, &t.body, &copy);
  char *a = print(&t.body), *b = print(&copy);
  cr_expect_str_eq(b, a);
  free(a), free(b);
  PtrVec ops = {0};
  KVisitor v = {.pre = {[KN_OP] = collect_ops}, .user = &ops};
  kir_visit(&v, &copy);
  cr_assert_eq(ops.len, 2);
  KNode *copied_outer = copy.items[0], *copied_inner = copied_outer->u.loop.body.items[2];
  cr_expect_eq(((KNode *)ops.items[0])->u.op.loops[0], copied_outer);
  cr_expect_eq(((KNode *)ops.items[1])->u.op.loops[0], copied_outer);
  cr_expect_eq(((KNode *)ops.items[1])->u.op.loops[1], copied_inner);
  KMutator m = {.arena = A, .fn = {[KN_COMMENT] = drop}};
  kir_mutate(&m, &copy);
  cr_expect_eq(t.cond->u.cond.otherwise.len, 1, "mutating the copy leaves the original");
}

/* ---- the verifier on if/else ------------------------------------------------------------ */

static bool verify_body(KBlock *body, KExpr *block_x, char *err, size_t n) {
  KKernel k = {.arena = A, .params = &T0, .param_names = (const char *[]){"T0"}, .nparams = 1,
               .allocs = &T1, .nallocs = 1, .body = *body, .synced = true};
  for (int d = 0; d < 3; d++) k.block[d] = k.grid[d] = kx_const(A, 1);
  k.block[0] = block_x;
  return kir_verify(&k, err, n);
}

static KNode *if_else(KExpr *cond, KNode *then, KNode *otherwise) {
  KNode *n = node(KN_IF);
  n->u.cond.cond = cond;
  if (then) kb_push(A, &n->u.cond.then, then);
  if (otherwise) kb_push(A, &n->u.cond.otherwise, otherwise);
  return n;
}

Test(kir_visit, the_verifier_refuses_a_sync_under_a_thread_dependent_if_only) {
  char err[256];
  KBlock b = {0};
  kb_push(A, &b, if_else(kx_bin(A, OP_LT, kx_thread(A, CF_PT_TIDX, false), kx_const(A, 3)), node(KN_SYNC), NULL));
  cr_expect_not(verify_body(&b, kx_const(A, 32), err, sizeof err));
  cr_expect_str_eq(err, "a __syncthreads under a condition that depends on the thread index");
  KBlock u = {0};
  kb_push(A, &u, if_else(kx_bin(A, OP_LT, kx_thread(A, CF_PT_BIDX, false), kx_const(A, 3)), node(KN_SYNC), node(KN_SYNC)));
  cr_expect(verify_body(&u, kx_const(A, 32), err, sizeof err), "%s", err);
}

Test(kir_visit, the_verifier_checks_each_branch_from_the_state_before_the_if) {
  char err[256];
  KExpr *zero = kx_const(A, 0);
  KNode *write = copy_op(zero, 0, NULL);
  KNode *read = copy_op(zero, 0, NULL);
  read->u.op.in[0].t = T1; /* T1[0] = T1[0]: reads itself, so no read check */
  KNode *reader = copy_op(zero, 0, NULL);
  reader->u.op.out.t = T0;
  reader->u.op.in[0].t = T1; /* T0[0] = T1[0] */
  KBlock b = {0};
  kb_push(A, &b, if_else(kx_bin(A, OP_LT, kx_thread(A, CF_PT_BIDX, false), kx_const(A, 3)), write, reader));
  cr_expect_not(verify_body(&b, kx_const(A, 1), err, sizeof err));
  cr_expect_str_eq(err, "T1 is read before it is written");
  KBlock ok = {0};
  kb_push(A, &ok, if_else(kx_bin(A, OP_LT, kx_thread(A, CF_PT_BIDX, false), kx_const(A, 3)), write, copy_op(zero, 0, NULL)));
  kb_push(A, &ok, reader);
  cr_expect(verify_body(&ok, kx_const(A, 1), err, sizeof err), "written in a branch counts after the if: %s", err);
  (void)read;
}
