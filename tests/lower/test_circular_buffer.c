/* Circular buffering (cf_circular_buffer, scheduler/circular_buffer.c; the circular_buffer
 * pass, lower/circular_buffer.c; cp.async in codegen and the host emulation, codegen/
 * runtime/host_async.h): a tile of half rows copied 16 bytes per thread into shared memory
 * at a serial row loop and read across threads, in 2 and 3 stages, equals the evaluator on
 * the host backend (NVRTC compiles the cp.async kernel for sm_90a); the kernel with its
 * waits removed, or waiting for one group too few, reads stale shared memory on the host
 * (the emulation completes a group's copies only at its wait) and differs; a fill that is
 * not vectorized stays a plain store; a producer inlined into the fill moves with it, one
 * computed before the loop is read as it is; the primitive's rules, each refused by name
 * (a producer beside the fill at the tile's loop among them). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "lower/kir.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(circular_buffer, .init = setup, .fini = teardown);

enum { ROWS = 7, COLS = 64 };

/* out = float(T1), T1 = set(T0) a shared tile per row: written [row, tidx{8}, V{vec}] (16
 * bytes a thread when vec is 8), read [row, 8, tidx{8}] (other threads' elements: a
 * __syncthreads between). Returns T1. */
static cf_tv *staged_rows(int vec, int stages) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in), *out = cf_cast(f, t, CF_FLOAT);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 1, 8);
  cf_parallelize(f, out, 2, CF_PT_TIDX);
  cf_split(f, t, 1, COLS / 8);
  cf_split(f, t, 2, vec);
  cf_merge(f, t, 1); /* [row, tidx{8}, vec] */
  cf_parallelize(f, t, 1, CF_PT_TIDX);
  if (vec > 1) cf_parallelize(f, t, 2, CF_PT_VECTORIZE);
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_inline_at(f, t, 1);
  if (stages) cf_circular_buffer(f, t, stages);
  return t;
}

static const KcInput IN[1] = {{CF_HALF, 2, {ROWS, COLS}, NULL}};

Test(circular_buffer, cp_async_tiles_in_three_stages_equal_the_evaluator) {
  staged_rows(8, 3);
  char *src = kc_check(f, 1, IN, 0);
  cr_expect(strstr(src, "cp.async.cg.shared.global [%0], [%1], 16;"));
  cr_expect(strstr(src, "cp.async.wait_group %0;\" :: \"n\"(1)")); /* stages - 2 in flight */
  cr_expect(strstr(src, "cp.async.commit_group;"));
  free(src);
  free(kc_compile_for(f, "sm_80"));
}

Test(circular_buffer, two_stages_wait_for_everything) {
  staged_rows(8, 2);
  char *src = kc_check(f, 1, IN, 0);
  cr_expect(strstr(src, "cp.async.wait_group %0;\" :: \"n\"(0)"));
  free(src);
}

/* Copies of one element are plain stores into the stages (no cp.async for 2 bytes). */
Test(circular_buffer, scalar_fills_are_plain_stores) {
  staged_rows(1, 3);
  char *src = kc_check(f, 1, IN, 0);
  const char *kernel = strstr(src, "cfuser_kernel("); /* past the runtime helpers, which name cp.async */
  cr_assert(kernel, "%s", src);
  cr_expect(!strstr(kernel, "cp.async"), "%s", kernel);
  free(src);
}

/* out = float(T2), T2 = set(T1) the shared tile per row as staged_rows(1, 3) makes it,
 * T1 = neg(T0) its producer, scheduled alike (local, one element a thread) and inlined at
 * producer_pos: 3 is inside the fill, 1 beside it in the row loop, 0 before that loop. */
static void staged_negated_rows(int producer_pos) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *p = cf_neg(f, in), *t = cf_set(f, p), *out = cf_cast(f, t, CF_FLOAT);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 1, 8);
  cf_parallelize(f, out, 2, CF_PT_TIDX);
  cf_tv *tiles[2] = {p, t};
  for (int i = 0; i < 2; i++) {
    cf_split(f, tiles[i], 1, COLS / 8);
    cf_split(f, tiles[i], 2, 1);
    cf_merge(f, tiles[i], 1); /* [row, tidx{64}, 1] */
    cf_parallelize(f, tiles[i], 1, CF_PT_TIDX);
  }
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_inline_at(f, t, 1);
  cf_inline_at(f, p, producer_pos);
  cf_circular_buffer(f, t, 3);
}

/* The producer inside the fill moves with it: the prologue's fills (out of the row loop)
 * compute it too, and the kernel equals the evaluator. */
Test(circular_buffer, a_producer_inlined_into_the_fill_is_prefetched_with_it) {
  staged_negated_rows(3);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, 1, IN, 0));
}

Test(circular_buffer, a_producer_computed_before_the_loop_is_read_as_it_is) {
  staged_negated_rows(0);
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  free(kc_check(f, 1, IN, 0));
}

/* ---- the emulation shows a broken pipeline ------------------------------------------------ */

static int edit_waits; /* -1: remove them; else the pending count to set */

static void remove_or_loosen(KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_ASYNC_WAIT && edit_waits < 0) {
      kb_remove(b, i--);
      continue;
    }
    if (n->kind == KN_ASYNC_WAIT && n->u.async.pending) n->u.async.pending = edit_waits;
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++) remove_or_loosen(inner[k]);
  }
}

/* The lowering hook sees the kernel before code generation; this test edits it. */
static void hook(const cf_kernel_info *k, void *user) {
  (void)user;
  remove_or_loosen(&((KKernel *)(void *)k)->body);
}

/* Runs the edited kernel on the host; returns how many outputs differ from the evaluator. */
static int wrong_elements(void) {
  DLManagedTensor *in = kc_make_input(&IN[0], 3), *want = NULL, *got = NULL;
  const DLTensor *ins[1] = {&in->dl_tensor};
  cr_assert_eq(cf_fusion_evaluate(f, 1, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_executor_set_lowering_hook(e, hook, NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 1, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
  int bad = 0;
  const float *g = got->dl_tensor.data, *w = want->dl_tensor.data;
  for (int i = 0; i < ROWS * COLS; i++) bad += !(g[i] == w[i]);
  cf_executor_destroy(e);
  cf_tensor_free(in), cf_tensor_free(want), cf_tensor_free(got);
  return bad;
}

Test(circular_buffer, without_its_waits_the_kernel_reads_stale_tiles) {
  staged_rows(8, 3);
  edit_waits = -1;
  cr_expect_eq(wrong_elements(), ROWS * COLS); /* every tile read before its copies land */
}

Test(circular_buffer, waiting_for_one_group_too_few_reads_a_stage_in_flight) {
  staged_rows(8, 3);
  edit_waits = 2; /* the right count is 1: tile i's group is the third newest */
  cr_expect_gt(wrong_elements(), 0);
  edit_waits = 1; /* and the right count gives the evaluator's values (the edit is a no-op) */
  cr_expect_eq(wrong_elements(), 0);
}

/* ---- the rules ------------------------------------------------------------------------------ */

static void expect_error(const char *want) {
  cr_expect_eq(cf_fusion_status(f), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(cf_fusion_error(f), want);
}

/* A prefetch distance below stages - 1 (nvFuser's circularBuffer(stages, prefetch)): the
 * prologue fills that many tiles, iteration i fills tile i + prefetch and waits for all but
 * prefetch - 1 groups; equal to the evaluator, with cp.async and with scalar copies. */
Test(circular_buffer, a_shorter_prefetch_distance_equals_the_evaluator) {
  for (int vec = 1; vec <= 8; vec += 7) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    cf_tv *t = staged_rows(vec, 0);
    cr_assert_eq(cf_circular_buffer_prefetch(f, t, 4, 2), CF_OK, "%s", cf_fusion_error(f));
    char *src = kc_check(f, 1, IN, 0);
    if (vec == 8) cr_expect(strstr(src, "cp.async.wait_group %0;\" :: \"n\"(1)"), "%s", src); /* prefetch - 1 */
    free(src);
  }
}

Test(circular_buffer, refuses_a_prefetch_distance_out_of_range) {
  cf_tv *t = staged_rows(8, 0);
  cf_circular_buffer_prefetch(f, t, 4, 4);
  expect_error("circular_buffer: T1 asks to fill 4 iterations ahead with 4 stages; 1 to 3 (stages - 1) are possible "
               "for T1_s___half[iS2{7}, ithreadIdx.x12{8}, iV11{8}]");
}

Test(circular_buffer, refuses_a_stage_count_out_of_range) {
  cf_tv *t = staged_rows(8, 0);
  cf_circular_buffer(f, t, 5);
  expect_error("circular_buffer: T1 asks for 5 stages; 2 to 4 are supported for T1_s___half[iS2{7}, "
               "ithreadIdx.x12{8}, iV11{8}]");
}

Test(circular_buffer, refuses_a_tile_not_in_shared_memory) {
  cf_tv *t = staged_rows(8, 0);
  cf_set_memory_type(f, t, CF_MEM_LOCAL);
  cf_circular_buffer(f, t, 2);
  expect_error("circular_buffer: T1 is in Local memory; only shared-memory tiles are circular-buffered for "
               "T1_l___half[iS2{7}, ithreadIdx.x12{8}, iV11{8}]");
}

Test(circular_buffer, refuses_a_fusion_input) {
  cf_tv *in = tu_input(f, CF_HALF, 1, (int64_t[]){8});
  cf_fusion_add_output(f, cf_neg(f, in));
  cf_circular_buffer(f, in, 2);
  expect_error("circular_buffer: T0 is in Global memory; only shared-memory tiles are circular-buffered for "
               "T0_g___half[iS0{8}]");
}

Test(circular_buffer, refuses_a_tile_not_computed_at_a_serial_loop) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in);
  cf_fusion_add_output(f, cf_cast(f, t, CF_FLOAT));
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_circular_buffer(f, t, 2);
  expect_error("circular_buffer: T1 must be computed at a serial loop, the one its stages circulate over; its "
               "compute-at position is 0 (inline it at that loop first) for T1_s___half[iS2{7}, iS3{64}]");
}

/* A producer at the tile's own loop, a statement beside the fill: the fill of iteration
 * i + 2 would read it before iteration i + 2 computes it (the matmul row's tensor-core
 * tiles of set(broadcast(x)) did this: "internal error: kernel IR invalid after pass
 * circular_buffer: T11 is read before it is written"). */
Test(circular_buffer, refuses_a_producer_beside_the_fill) {
  staged_negated_rows(1);
  expect_error("circular_buffer: T2 reads T1, computed at the same loop as a statement of its own (both at "
               "compute-at position 1): the fill, run 2 iterations ahead, would read it before it is written "
               "(inline T1 into T2's fill, or compute it before that loop) for T2_s___half[iS4{7}, "
               "ithreadIdx.x19{64}, iS18{1}]");
}

/* A tile read only by the threads that wrote it has no __syncthreads after its fill: the
 * pass refuses rather than judge the synchronization again. */
Test(circular_buffer, lowering_refuses_a_fill_without_a_sync) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in), *out = cf_cast(f, t, CF_FLOAT);
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_parallelize(f, t, 1, CF_PT_TIDX);
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_inline_at(f, t, 1);
  cf_circular_buffer(f, t, 2);
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_expect_eq(cf_executor_compile(e, f), CF_ERR_INVALID_SCHEDULE);
  cr_expect(strstr(cf_executor_error(e), "cannot be circular-buffered: its fill must be one write in a serial loop at "
                                         "its compute-at position, followed by a __syncthreads"),
            "%s", cf_executor_error(e));
  cf_executor_destroy(e);
}
