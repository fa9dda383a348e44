/* The host backend's run-time tensor-memory checks, each firing on a deliberately wrong
 * kernel that the compiler generated: the seed tutorial's invalid schedules compiled with
 * the static access validation turned off (the internal option skip_tmem_validation), and
 * kernels whose tensor-memory management a lowering hook breaks on purpose. Every launch
 * fails with the runtime's message and the caller's process goes on. */
#include <criterion/criterion.h>
#include <string.h>

#include "lower/lower.h"
#include "tests/lower/tmem_test_util.h"

typedef void (*Breaker)(KKernel *k);

/* A lowering hook sees a cf_kernel_info, which is the lowered kernel: this internal test
 * casts it back to break the kernel before code generation. */
static void break_kernel(const cf_kernel_info *info, void *user) {
  Breaker b = *(Breaker *)user;
  b((KKernel *)(uintptr_t)(const void *)info);
}

/* Compiles the chain on the host backend (validation off, optional hook) and runs it;
 * returns the launch status and copies the executor's message. */
static cf_status run_broken(cf_fusion *f, Breaker breaker, char *msg, size_t len) {
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST, .skip_tmem_validation = true});
  if (breaker) cf_executor_set_lowering_hook(e, break_kernel, &breaker);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cf_tv *in = cf_fusion_input(f, 0);
  int rank = cf_tv_logical_rank(in);
  int64_t sizes[8];
  for (int i = 0; i < rank; i++) sizes[i] = cf_id_extent(cf_tv_axis(in, i));
  DLManagedTensor *t = cf_tensor_host(CF_FLOAT, rank, sizes), *out = NULL;
  const DLTensor *ins[1] = {&t->dl_tensor};
  cf_status s = cf_executor_run(e, 1, ins, 1, &out);
  snprintf(msg, len, "%s", cf_executor_error(e));
  cf_tensor_free(t);
  cf_tensor_free(out);
  cf_executor_destroy(e);
  return s;
}

static void drop_deallocs_in(KBlock *b) {
  for (int i = 0; i < b->len; i++)
    if (b->items[i]->kind == KN_TMEM_DEALLOC) b->items[i]->kind = KN_COMMENT, b->items[i]->u.comment = "dealloc removed";
}
static void drop_deallocs(KKernel *k) { drop_deallocs_in(&k->body); }
/* Deallocates every region twice: the second time its columns are no longer allocated. */
static void dealloc_twice(KKernel *k) {
  for (int i = 0; i < k->body.len; i++)
    if (k->body.items[i]->kind == KN_TMEM_DEALLOC) {
      kb_insert(k->arena, &k->body, i + 1, k->body.items[i]);
      return;
    }
}

/* The seed's WrongSubpartition2: two warps both on lanes 0..31. */
Test(tmem_rules_generated, wrong_sub_partition) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[5];
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){32, 2}, tv);
  tt_parallelize(f, tv, 2, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  char msg[1024];
  cr_expect_eq(run_broken(f, NULL, msg, sizeof msg), CF_ERR_RUNTIME);
  cr_expect_str_eq(msg, "run: tcgen05.st: block (0,0,0) warp 1 accessed lanes 0..31, but warp 1 may only access "
                        "sub-partition 1 (lanes 32..63)");
  cf_fusion_destroy(f);
}

/* The seed's NotWarpCollective: 16 threads, half a warp. */
Test(tmem_rules_generated, partial_warp) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[5];
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){16, 2}, tv);
  tt_parallelize(f, tv, 1, (cf_parallel_type[]){CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  char msg[1024];
  cr_expect_eq(run_broken(f, NULL, msg, sizeof msg), CF_ERR_RUNTIME);
  cr_expect_str_eq(msg, "run: tcgen05.alloc: block (0,0,0) warp 0: partial warp: the instruction needs lanes 0..31, "
                        "but lanes 16..31 do not exist (the block has 16 threads)");
  cf_fusion_destroy(f);
}

static cf_fusion *valid_copy(void) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[5];
  tt_chain(f, CF_FLOAT, 2, (int64_t[]){128, 2}, tv);
  tt_parallelize(f, tv, 1, (cf_parallel_type[]){CF_PT_TIDX});
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  return f;
}

Test(tmem_rules_generated, cta_ends_with_columns_allocated) {
  cf_fusion *f = valid_copy();
  char msg[1024];
  cr_expect_eq(run_broken(f, drop_deallocs, msg, sizeof msg), CF_ERR_RUNTIME);
  cr_expect_str_eq(msg, "run: block (0,0,0) ended with 32 tensor-memory columns still allocated");
  cf_fusion_destroy(f);
}

Test(tmem_rules_generated, dealloc_of_columns_never_allocated) {
  cf_fusion *f = valid_copy();
  char msg[1024];
  cr_expect_eq(run_broken(f, dealloc_twice, msg, sizeof msg), CF_ERR_RUNTIME);
  cr_expect_str_eq(msg, "run: tcgen05.dealloc: block (0,0,0) warp 0: dealloc of columns never allocated: columns "
                        "0..31 (allocated: none)");
  cf_fusion_destroy(f);
}

Test(tmem_rules_generated, the_valid_copy_runs) {
  cf_fusion *f = valid_copy();
  char msg[1024];
  cr_expect_eq(run_broken(f, NULL, msg, sizeof msg), CF_OK, "%s", msg);
  cf_fusion_destroy(f);
}
