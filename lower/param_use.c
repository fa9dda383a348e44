/* lower/param_use.c: pass "param_use", the last: which kernel parameters the kernel
 * dereferences.
 *
 * Requires: the kernel IR complete (every op, copy, fragment, reduction buffer and sync in
 * place). Establishes: KTensor.data_used of each parameter: true when some node loads,
 * stores or takes the address of one of its elements (kn_data_tensors, kir_visit.c, the
 * one list of what a node dereferences).
 * Key decision: a parameter the kernel reads only through its sizes and strides (a scalar
 * input that gave a size at run time, an input whose shape alone sizes an output) keeps
 * its place in the signature, so the executor binds its sizes and strides as always, but
 * its data may live anywhere: the executor does not ask for it to be in the backend's
 * memory or aligned (executor/run.c). The flag is computed from the tree, never assumed, so
 * a parameter some node reaches is always checked. */
#include "lower/lower.h"

static void mark(KTensor *t, void *user) {
  (void)user;
  if (t->param >= 0) t->data_used = true;
}

static bool on_node(KVisitor *v, KNode *n) {
  kn_data_tensors(v->user, n, mark, NULL);
  return true;
}

void lower_param_use(LowerCtx *c) {
  for (int p = 0; p < c->k->nparams; p++) c->k->params[p]->data_used = false;
  KVisitor v = {.user = c->k, .arena = c->a};
  kir_visit_all(&v, on_node, NULL);
  kir_visit(&v, &c->k->body);
}
