/* lower/loop_model.c: the first pass: the loop model of analysis/ (analysis.h: the exact
 * and permissive maps, the loop graph, promotion, effective parallel types), built once
 * and held in c->model for every later pass, which reads loops through it and re-derives
 * nothing; and each TensorView's transform history.
 * Requires: a valid Fusion. Establishes: c->tvs, c->model, TvInfo.history. A schedule
 * whose loops cannot be built is refused with the loop model's message. */
#include <stdlib.h>

#include "lower/lower.h"

void lower_loop_model(LowerCtx *c) {
  char *err = NULL;
  cf_status s = an_loop_model_build(c->f, c->a, &c->model, &err);
  if (s != CF_OK) {
    const char *msg = arena_strdup(c->a, err ? err : "compile: out of memory");
    free(err);
    lower_fail(c, s, "%s", msg);
  }
  c->tvs = c->model.tvs;
  c->ntvs = c->model.ntvs;
  for (int i = 0; i < c->ntvs; i++) {
    TvInfo *ti = lower_info(c, c->tvs[i]);
    ti->history = ir_tv_history_in(c->a, c->tvs[i], &ti->nhistory);
  }
}

int lower_pairwise(LowerCtx *c, const Val *p, const Val *cv, Val ***pids, Val ***cids) {
  int n = an_pairwise_map(p, cv, NULL, NULL, 0);
  if (n < 0) n = 0;
  *pids = ARENA_ARRAY(c->a, Val *, n);
  *cids = ARENA_ARRAY(c->a, Val *, n);
  if (n) an_pairwise_map(p, cv, *pids, *cids, n);
  return n;
}
