/* executor/fusion_graph.c: an entry of define and run whose plan launches several kernels,
 * captured once as a CUDA graph and replayed as one launch (cuStreamBeginCapture,
 * cuStreamEndCapture, cuGraphInstantiate, cuGraphLaunch through executor/cuda_driver.c's
 * dlopen table), saving the launch cost of each kernel after the first.
 *
 * The rule (fc_graph_step, documented in include/cfuser/execute.h), for an asynchronous
 * call on the CUDA backend: a graph bakes in the addresses of every tensor, so it is used
 * only where they repeat: the call gives a stream (the legacy default stream cannot be
 * captured) and every output (the cache's own allocations would move), the entry launches
 * at least two kernels, none with workspaces (a grid reduction's buffers belong to its
 * executor, which entries of other sizes share and may resize), and the call's tensors
 * (and the stream is) where the entry's previous call had them: the first such repeat captures, later
 * ones replay; other addresses drop the graph and run kernel by kernel, remembered for
 * the next call. A capture that fails (a driver refusing an operation in it) runs the
 * kernels normally and is not tried again for that entry. cf_fusion_cache_set_cuda_graphs
 * turns graphs off, or captures at the first eligible call.
 * Key decision: on by default under that rule: a training or serving loop that keeps its
 * buffers gets one launch per call, and any other caller sees no difference. */
#include <stdlib.h>
#include <string.h>

#include "executor/executor_internal.h"
#include "executor/fusion_cache.h"

struct FcGraph {
  void *stream; /* the stream of the entry's last call */
  void **ptrs;  /* the tensors' addresses of that call: inputs, then outputs */
  int nptrs;
  ExecGraph exec;
  bool failed;
};

const char *fc_graph_step_name(FcGraphStep s) {
  static const char *const names[] = {"no", "remember", "capture", "replay"};
  return names[s];
}

FcGraphStep fc_graph_step(const FcGraphFacts *f, const char **why) {
  const char *no = f->mode < 0          ? "turned off"
                   : !f->cuda           ? "not on the CUDA backend"
                   : !f->stream         ? "the legacy default stream cannot be captured"
                   : f->kernels < 2     ? "fewer than two kernels"
                   : !f->outputs_given  ? "an output the cache allocates would move"
                   : f->workspaces      ? "a kernel has workspaces its executor may resize"
                   : f->failed          ? "a capture of this entry failed"
                                        : NULL;
  *why = no ? no : f->captured && f->same_pointers ? "the tensors are where the capture had them"
                 : f->same_pointers                 ? "the tensors are where the previous call had them"
                 : f->mode > 0                      ? "capture at the first eligible call"
                                                    : "the tensors moved: remembered for the next call";
  if (no) return FC_GRAPH_NO;
  if (f->captured && f->same_pointers) return FC_GRAPH_REPLAY;
  return f->same_pointers || f->mode > 0 ? FC_GRAPH_CAPTURE : FC_GRAPH_REMEMBER;
}

void fc_graph_free(FcGraph *g) {
  if (!g) return;
  exec_graph_destroy(&g->exec);
  free(g->ptrs);
  free(g);
}

static void *address(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

static bool same_pointers(const FcGraph *g, void *stream, int nin, const DLTensor *const *in, int nout,
                          DLManagedTensor **out) {
  if (!g->ptrs || g->nptrs != nin + nout || g->stream != stream) return false;
  for (int i = 0; i < nin; i++)
    if (g->ptrs[i] != address(in[i])) return false;
  for (int o = 0; o < nout; o++)
    if (g->ptrs[nin + o] != address(&out[o]->dl_tensor)) return false;
  return true;
}

static void remember(FcGraph *g, void *stream, int nin, const DLTensor *const *in, int nout, DLManagedTensor **out) {
  g->stream = stream;
  if (g->nptrs != nin + nout) {
    free(g->ptrs);
    g->nptrs = (g->ptrs = calloc((size_t)(nin + nout) + 1, sizeof *g->ptrs)) ? nin + nout : 0;
  }
  for (int i = 0; i < g->nptrs; i++) g->ptrs[i] = address(i < nin ? in[i] : &out[i - nin]->dl_tensor);
}

/* What the rule reads of this entry and call. */
static FcGraphFacts facts_of(const cf_fusion_cache *c, const FcEntry *en, void *stream, int nin,
                             const DLTensor *const *in, int nout, DLManagedTensor **out) {
  FcGraphFacts f = {.mode = c->graphs, .cuda = true, .stream = stream != NULL, .outputs_given = true};
  for (int k = 0; k < en->nseg; k++) {
    cf_executor *e = en->seg[k].e;
    if (!e) continue;
    f.kernels++;
    f.cuda &= cf_executor_backend(e) == CF_BACKEND_CUDA;
    f.workspaces |= e->cc && e->cc->k->nparams > en->seg[k].nin + en->seg[k].nout;
  }
  for (int o = 0; o < nout; o++) f.outputs_given &= out[o] != NULL;
  const FcGraph *g = en->graph;
  f.failed = g && g->failed;
  f.captured = g && g->exec.exec;
  f.same_pointers = g && f.outputs_given && same_pointers(g, stream, nin, in, nout, out);
  return f;
}

/* Captures the entry's launches on stream and replays them; *ran false (and the graph
 * marked failed) when the capture did not work, nothing having run. */
static cf_status capture(cf_fusion_cache *c, FcEntry *en, void *stream, int nin, const DLTensor *const *in,
                         int nout, DLManagedTensor **out, bool *ran) {
  FcGraph *g = en->graph;
  char err[512];
  int device = nin > 0 ? in[0]->device.device_id : out[0]->dl_tensor.device.device_id;
  exec_graph_destroy(&g->exec);
  if (exec_graph_begin(device, stream, err, sizeof err)) return g->failed = true, CF_OK;
  cf_status s = fc_run_segments(c, en, stream, true, nin, in, nout, out);
  if (exec_graph_end(device, stream, s == CF_OK, &g->exec, err, sizeof err) || s || !g->exec.exec) {
    exec_graph_destroy(&g->exec);
    errmsg_retract(&c->error); /* nothing ran: the caller runs the kernels and reports their errors */
    return g->failed = true, CF_OK;
  }
  remember(g, stream, nin, in, nout, out);
  c->graph_captures++;
  s = exec_graph_launch(&g->exec, stream, err, sizeof err);
  *ran = true;
  return s ? fc_error(c, s, "execute: replaying the CUDA graph of %d segments: %s", en->nseg, err) : CF_OK;
}

cf_status fc_graph_run(cf_fusion_cache *c, FcEntry *en, void *stream, int nin, const DLTensor *const *in, int nout,
                       DLManagedTensor **out, bool *ran) {
  const char *why;
  *ran = false;
  FcGraphFacts facts = facts_of(c, en, stream, nin, in, nout, out);
  FcGraphStep step = fc_graph_step(&facts, &why);
  if (step == FC_GRAPH_NO) return CF_OK;
  if (!en->graph && !(en->graph = calloc(1, sizeof *en->graph))) return CF_OK; /* out of memory: no graph */
  FcGraph *g = en->graph;
  if (step == FC_GRAPH_REMEMBER) {
    exec_graph_destroy(&g->exec);
    remember(g, stream, nin, in, nout, out);
    return CF_OK;
  }
  if (step == FC_GRAPH_CAPTURE) return capture(c, en, stream, nin, in, nout, out, ran);
  char err[512];
  cf_status s = exec_graph_launch(&g->exec, stream, err, sizeof err);
  *ran = true;
  c->graph_replays++;
  return s ? fc_error(c, s, "execute: replaying the CUDA graph of %d segments: %s", en->nseg, err) : CF_OK;
}
