/* executor/kernel_info.c: the read-only view of a lowered kernel that lowering hooks get
 * (include/cfuser/executor.h): its parameters (whether the kernel touches their elements),
 * its allocations with memory type and size, and its tensor-memory regions with their
 * column counts. cf_kernel_info is the lowered kernel itself, seen through these
 * accessors only. */
#include "lower/kir.h"

static const KKernel *kk(const cf_kernel_info *k) { return (const KKernel *)(const void *)k; }

int cf_kernel_num_params(const cf_kernel_info *k) { return k ? kk(k)->nparams : 0; }

cf_param_info cf_kernel_param(const cf_kernel_info *k, int i) {
  cf_param_info info = {0};
  if (!k || i < 0 || i >= kk(k)->nparams) return info;
  const KTensor *t = kk(k)->params[i];
  info.tensor = t->name;
  info.dtype = t->dtype;
  info.rank = t->rank;
  info.is_output = t->is_output;
  info.is_workspace = t->is_workspace;
  info.data_used = t->data_used;
  return info;
}

int cf_kernel_num_allocations(const cf_kernel_info *k) { return k ? kk(k)->nallocs : 0; }

cf_allocation_info cf_kernel_allocation(const cf_kernel_info *k, int i) {
  cf_allocation_info info = {0};
  if (!k || i < 0 || i >= kk(k)->nallocs) return info;
  const KTensor *t = kk(k)->allocs[i];
  int64_t size;
  info.tensor = t->name;
  info.memory = t->mem;
  info.dtype = t->dtype;
  info.size = kx_is_const(t->size, &size) ? size : -1;
  return info;
}

int cf_kernel_num_tmem_regions(const cf_kernel_info *k) { return k ? kk(k)->nregions : 0; }

cf_tmem_region_info cf_kernel_tmem_region(const cf_kernel_info *k, int i) {
  cf_tmem_region_info info = {0};
  if (!k || i < 0 || i >= kk(k)->nregions) return info;
  const KTMemRegion *r = &kk(k)->regions[i];
  info.ntensors = r->ntensors;
  info.num_columns = r->num_columns;
  info.raw_columns = r->raw_columns;
  info.num_lanes = r->num_lanes;
  const char **names = ARENA_ARRAY(kk(k)->arena, const char *, r->ntensors);
  for (int t = 0; names && t < r->ntensors; t++) names[t] = r->tensors[t]->name;
  info.tensors = names;
  return info;
}
