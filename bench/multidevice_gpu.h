/* bench/multidevice_gpu.h: the GPU half of bench/multidevice.c (included once by it):
 * one process per GPU under torchrun, the group through cf_comm_init. */
#ifndef CFUSER_BENCH_MULTIDEVICE_GPU_H
#define CFUSER_BENCH_MULTIDEVICE_GPU_H

/* A float tensor on this rank's GPU (LOCAL_RANK's ordinal). */
static DLManagedTensor *on_gpu(cf_comm *c, int rank, const int64_t *sizes) {
  DLManagedTensor *d = NULL;
  exec_tensor_device_async(c->local_rank, NULL, CF_FLOAT, rank, sizes, &d, NULL, 0);
  return d;
}

static DLManagedTensor *to_device(cf_comm *c, const DLTensor *h) {
  DLManagedTensor *d = on_gpu(c, h->ndim, h->shape);
  if (d && cf_tensor_copy(&d->dl_tensor, h)) cf_tensor_free(d), d = NULL;
  return d;
}

static DLManagedTensor *to_host(const DLTensor *d) {
  DLManagedTensor *h = cf_tensor_host(CF_FLOAT, d->ndim, d->shape);
  if (h && cf_tensor_copy(&h->dl_tensor, d)) cf_tensor_free(h), h = NULL;
  return h;
}

/* This rank's shards of the global inputs g on its GPU, into dev[0..n) and views ins; the
 * host shards in loc. */
static void device_inputs(cf_comm *c, cf_fusion *f, DLManagedTensor **g, DLManagedTensor **loc, DLManagedTensor **dev,
                          const DLTensor **ins) {
  int n = cf_fusion_num_inputs(f);
  shard_inputs(f, g, cf_comm_rank(c), loc, ins);
  for (int i = 0; i < n; i++) {
    dev[i] = loc[i] ? to_device(c, &loc[i]->dl_tensor) : NULL;
    ins[i] = dev[i] ? &dev[i]->dl_tensor : NULL;
  }
}

/* One sharded case on the GPUs: checked (check) or timed (us != NULL). */
static int gpu_case(cf_comm *c, const Case *k, int scale, bool check, double *us) {
  int me = cf_comm_rank(c), bad = 0;
  cf_fusion *f = make_case(k, cf_comm_size(c), scale);
  int n = cf_fusion_num_inputs(f);
  DLManagedTensor *g[MAX_IN], *ref = NULL, *loc[MAX_IN], *dev[MAX_IN], *out = NULL;
  const DLTensor *in[MAX_IN];
  reference(f, g, check ? &ref : NULL);
  device_inputs(c, f, g, loc, dev, in);
  cf_mesh_executor *x = cf_mesh_executor_create(f, NULL);
  cf_status st = cf_mesh_run(x, c, n, in, 1, &out);
  if (!st && check) {
    DLManagedTensor *h = to_host(&out->dl_tensor);
    bad = !same_shard(f, &h->dl_tensor, &ref->dl_tensor, me, k);
    cf_tensor_free(h);
  }
  double t[20];
  MeshStats before = mesh_exec_stats(x);
  for (int it = 0; !st && us && it < 25; it++) { /* each call ends with its own wait, as torch's side syncs */
    cf_tensor_free(out);
    double t0 = bu_now_us();
    st = cf_mesh_run(x, c, n, in, 1, &out);
    if (it >= 5) t[it - 5] = bu_now_us() - t0;
    if (it == 4) before = mesh_exec_stats(x);
  }
  if (us && !st) {
    MeshStats after = mesh_exec_stats(x);
    *us = bu_median(t, 20);
    if (me == 0) /* the steady state: no kept buffer, no event, one output per call */
      printf("# %s: 20 calls made %lld kept buffers, %lld events, %lld outputs\n", k->name,
             (long long)(after.buffers - before.buffers), (long long)(after.events - before.events),
             (long long)(after.outputs - before.outputs));
  }
  if (st) printf("rank %d: FAILED %s: %s\n", me, k->name, cf_mesh_executor_error(x)), bad = 1;
  else if (check) printf("rank %d: %s %s\n", me, k->name, bad ? "MISMATCH" : "ok");
  cf_tensor_free(out), cf_tensor_free(ref);
  free_all(dev, n), free_all(loc, n), free_all(g, n);
  cf_mesh_executor_destroy(x);
  cf_fusion_destroy(f);
  return bad;
}

/* NCCL through the group's world line (its blocking twin, mesh_comm_collective, as
 * cf_mesh_run calls it) and streams: the median of 20 timed calls after 5 warm-ups, each
 * call and its wait for the stream timed, as bench/multidevice_torch.py times torch's. */
typedef struct BwCtx {
  cf_comm *c;
  int kind; /* 0 allreduce, 1 allgather, 2 reduce-scatter */
  void *send, *recv;
  size_t count; /* floats per rank sent (allreduce, reduce-scatter: the whole buffer) */
} BwCtx;

static const MeshCommKind bw_kinds[3] = {MC_ALLREDUCE, MC_ALLGATHER, MC_REDUCE_SCATTER};

static cf_status bw_call(BwCtx *b) {
  size_t count = b->kind == 2 ? b->count / (size_t)b->c->size : b->count;
  return mesh_comm_collective(b->c, &b->c->world, bw_kinds[b->kind], b->send, b->recv, count, ncclFloat32, ncclSum,
                              "bandwidth");
}

static int bw_sync(void *arg) {
  BwCtx *b = arg;
  cf_status st = exec_stream_synchronize(b->c->local_rank, b->c->comm_stream, NULL, 0);
  return st ? -1 : 1;
}

static void run_bandwidth(cf_comm *c) {
  static const char *names[3] = {"allreduce", "allgather", "reduce_scatter"};
  int n = cf_comm_size(c);
  if (cf_comm_rank(c) == 0) printf("collective bytes cfuser_nccl_busbw_GBps\n");
  for (int kind = 0; kind < 3; kind++)
    for (int64_t bytes = 1 << 20; bytes <= (int64_t)1 << 30; bytes *= 4) {
      int64_t fl = bytes / 4, recv_fl = kind == 1 ? fl * n : fl;
      DLManagedTensor *s = on_gpu(c, 1, &fl), *r = on_gpu(c, 1, &recv_fl);
      BwCtx b = {c, kind, s->dl_tensor.data, r->dl_tensor.data, (size_t)fl};
      double t[20];
      for (int it = 0; it < 25; it++) {
        double t0 = bu_now_us();
        if (bw_call(&b) || mesh_comm_poll(c, bw_sync, &b, names[kind])) break;
        if (it >= 5) t[it - 5] = bu_now_us() - t0;
      }
      double us = bu_median(t, 20), size = kind == 1 ? (double)bytes * n : (double)bytes;
      double factor = kind == 0 ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
      if (cf_comm_rank(c) == 0) printf("%s %lld %.2f\n", names[kind], (long long)size, size / us / 1e3 * factor);
      cf_tensor_free(s);
      cf_tensor_free(r);
    }
  if (cf_comm_rank(c) == 0) printf("barriers %lld\n", (long long)c->barriers);
}

/* Rank 1 runs without its input; every rank must report a failure naming it. */
static int run_failure(cf_comm *c) {
  const Case *k = &cases[1];
  int me = cf_comm_rank(c);
  cf_fusion *f = make_case(k, cf_comm_size(c), 1);
  DLManagedTensor *g[MAX_IN], *ref, *loc[MAX_IN], *dev[MAX_IN], *out = NULL;
  const DLTensor *in[MAX_IN];
  reference(f, g, &ref);
  device_inputs(c, f, g, loc, dev, in);
  if (me == 1) in[0] = NULL;
  cf_mesh_executor *x = cf_mesh_executor_create(f, NULL);
  double t0 = bu_now_us();
  cf_status st = cf_mesh_run(x, c, 1, in, 1, &out);
  double ms = (bu_now_us() - t0) / 1e3;
  bool named = strstr(cf_mesh_executor_error(x), "rank 1") != NULL;
  printf("rank %d: failure %s in %.0f ms: %s\n", me, st && named ? "reported" : "NOT REPORTED", ms,
         cf_mesh_executor_error(x));
  free_all((DLManagedTensor *[]){out, dev[0], loc[0], g[0], ref}, 5);
  cf_mesh_executor_destroy(x);
  cf_fusion_destroy(f);
  return st && named ? 0 : 1;
}

static int run_gpu(bool check, bool bw, bool fusions, bool failure) {
  cf_comm *c = NULL;
  char err[512];
  if (cf_comm_init(&c, 0, err, sizeof err)) {
    printf("skipped: %s\n", err);
    cf_comm_destroy(c);
    return 77;
  }
  int bad = 0, me = cf_comm_rank(c);
  if (!check && !bw && !fusions && !failure) check = bw = fusions = true;
  for (size_t k = 0; check && k < sizeof cases / sizeof cases[0]; k++) bad += gpu_case(c, &cases[k], 1, true, NULL);
  if (bw) run_bandwidth(c);
  if (fusions && me == 0) printf("fusion devices rows cols cfuser_us\n");
  for (size_t k = 0; fusions && k < sizeof cases / sizeof cases[0]; k++) {
    double us = 0;
    bad += gpu_case(c, &cases[k], 32, false, &us);
    if (me == 0) printf("%s %d %d %d %.1f\n", cases[k].name, cf_comm_size(c), cases[k].rows * 32, cases[k].cols * 32, us);
  }
  if (failure) bad += run_failure(c);
  cf_comm_destroy(c);
  return bad ? 1 : 0;
}

#endif
