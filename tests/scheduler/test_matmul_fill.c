/* The tensor-core matmul's operand tiles filled by 16-byte cp.async, zero-filled at the
 * edges (scheduler/matmul_mma.c decides the fill, lower/predicate.c zero-fills a
 * circular-buffered tile, lower/circular_buffer.c issues cp.async with its source size,
 * lower/mma.c drops the fragments' masks of a zero-filled tile):
 *   - a cast round trip before the product (bfloat16 -> float -> bfloat16) is dropped from
 *     the operand chain: the printed fusion's tile is broadcast(x), filled by cp.async;
 *   - an aligned bfloat16 matmul fills both tiles by 16-byte cp.async that read 0 bytes
 *     out of bounds (printed kernel IR and CUDA source), K = 70 one element a thread,
 *     still zero-filled; neither has a mask on its fragments;
 *   - tiles that overhang M, N and K (130 x 40 x 136, and 130 x 70 x 17 scalar) equal the
 *     evaluator on the host backend, whose cp.async writes the zeros (host_async.h);
 *   - without its waits the same kernel reads stages before their copies land and
 *     differs from the evaluator (the emulation completes a copy only at its wait). */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "kernel_ir.h"
#include "lower/lower.h"
#include "scheduler/registry.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(matmul_fill, .init = setup, .fini = teardown);

/* The matmul row applied to f, its params those of fills a and b. */
static void apply_row(const char *fill_a, const char *fill_b) {
  const SchedRow *r = sched_row_named("matmul");
  SchedCall call = {0, NULL, sched_device_default()};
  char why[SCHED_WHY_MAX] = "";
  SchedParams p, used;
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect_str_eq(p.text, tu_mma_params(fill_a, fill_b));
  cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(sched_params_equal(&p, &used));
}

/* bfloat16 matmul of [m, k] @ [k, n] with constant sizes; in[] gets the inputs. */
static void matmul_of(int64_t m, int64_t k, int64_t n, KcInput in[2]) {
  in[0] = (KcInput){CF_BFLOAT16, 2, {m, k}, NULL}, in[1] = (KcInput){CF_BFLOAT16, 2, {k, n}, NULL};
  cf_tv *a = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *b = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
}

static char *kernel_ir(void) { return test_kernel_ir(f); }

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* Both operands' fragments come from ldmatrix and no half of a register is cleared after
 * it (the masks a tile with garbage out of bounds needs: `if (!(..)) cfm_a0 &= 0xFFFF0000u`). */
static void expect_unmasked_ldmatrix(const char *src) {
  cr_expect(strstr(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") && strstr(src, "ldmatrix.sync.aligned.m8n8.x2.trans"));
  cr_expect(!strstr(src, "&= 0xFFFF0000u") && !strstr(src, "&= 0x0000FFFFu"), "a fragment element is masked");
}

Test(matmul_fill, a_cast_round_trip_before_the_product_is_dropped) {
  KcInput in[2] = {{CF_BFLOAT16, 2, {130, 72}, NULL}, {CF_BFLOAT16, 2, {72, 40}, NULL}};
  cf_tv *x = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *w = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *xr = cf_cast(f, cf_cast(f, x, CF_FLOAT), CF_BFLOAT16);
  cf_fusion_add_output(f, cf_matmul(f, xr, w));
  apply_row("cp.async16", "cp.async16");
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  /* x's chain is its broadcast (the tile) and one cast to float: no float -> bfloat16 */
  cr_expect(strstr(math, "= broadcast( T0_g___bfloat["), "%s", math);
  cr_expect_eq(count(math, "= cast( "), 3, "x's and w's casts to float and the result's: %s", math);
  cr_expect_eq(count(math, ", __bfloat );"), 1, "the result's cast alone: %s", math);
  free(math);
  char *src = kc_check(f, 2, in, 1e-2);
  cr_expect_eq(count(src, "cp.async.cg.shared.global [%0], [%1], 16, %2;"), 6, "2 tiles: 2 prologue stages and the loop's");
  free(src);
}

/* The fills of an aligned bfloat16 matmul (K = 40, N = 136): 16-byte cp.async whose
 * source size is 0 out of bounds; the fragments read the zero-filled tiles unmasked. */
Test(matmul_fill, aligned_tiles_are_filled_by_16_byte_cp_async) {
  KcInput in[2];
  matmul_of(130, 40, 136, in);
  apply_row("cp.async16", "cp.async16");
  char *ir = kernel_ir();
  /* 2 tiles x the 2 prologue stages: K = 40 is two steps of 32, so the loop's prefetch of a
   * third stage never runs, and simplify removes it (its condition (i0 + 2) < 2 is false) */
  cr_expect_eq(count(ir, " x8 cp.async zero unless "), 4, "%s", ir);
  free(ir);
  char *src = kc_check(f, 2, in, 1e-2);
  cr_expect(strstr(src, "\"l\"(&T0.data[((("), "the source address of A's copies");
  cr_expect(strstr(src, ") ? 16u : 0u) : \"memory\");"), "the copies' source size");
  expect_unmasked_ldmatrix(src);
  free(src);
}

/* K = 70 is not a multiple of 8: one element a thread, plain stores of zero out of bounds,
 * and still no masks on the fragments. */
Test(matmul_fill, an_odd_k_is_filled_one_element_a_thread_and_zero_filled) {
  KcInput in[2];
  matmul_of(130, 70, 17, in);
  apply_row("scalar(K=70)", "scalar(N=17)");
  char *ir = kernel_ir();
  cr_expect(!strstr(ir, "cp.async"), "%s", ir);
  cr_expect_eq(count(ir, " zero unless "), 6, "%s", ir);
  free(ir);
  char *src = kc_check(f, 2, in, 1e-2);
  expect_unmasked_ldmatrix(src);
  free(src);
}

/* Tiles overhanging M, N and K in every combination of vector and scalar fills equal the
 * evaluator (kc_check: the host backend, and NVRTC for sm_90a). */
Test(matmul_fill, tiles_overhanging_m_n_and_k_equal_the_evaluator) {
  static const int64_t shapes[][3] = {{130, 40, 136}, {130, 40, 17}, {7, 70, 136}, {2, 8, 8}};
  static const char *const fills[][2] = {{"cp.async16", "cp.async16"}, {"cp.async16", "scalar(N=17)"},
                                         {"scalar(K=70)", "cp.async16"}, {"cp.async16", "cp.async16"}};
  for (int i = 0; i < 4; i++) {
    cf_fusion_destroy(f);
    f = cf_fusion_create();
    KcInput in[2];
    matmul_of(shapes[i][0], shapes[i][1], shapes[i][2], in);
    apply_row(fills[i][0], fills[i][1]);
    free(kc_check(f, 2, in, 1e-2));
  }
}

/* ---- the emulation shows a missing wait ---------------------------------------------- */

static void remove_waits(KBlock *b) {
  for (int i = 0; i < b->len; i++) {
    KNode *n = b->items[i];
    if (n->kind == KN_ASYNC_WAIT) {
      kb_remove(b, i--);
      continue;
    }
    KBlock *inner[KN_MAX_BLOCKS];
    int nb = kn_blocks(n, inner);
    for (int k = 0; k < nb; k++) remove_waits(inner[k]);
  }
}

static void hook(const cf_kernel_info *k, void *user) {
  (void)user;
  remove_waits(&((KKernel *)(void *)k)->body);
}

Test(matmul_fill, without_its_waits_the_kernel_reads_stages_in_flight) {
  KcInput in[2];
  matmul_of(130, 40, 136, in);
  apply_row("cp.async16", "cp.async16");
  DLManagedTensor *t[2], *want = NULL, *got = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 3 + (uint64_t)i))->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_executor_set_lowering_hook(e, hook, NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_executor_run(e, 2, ins, 1, &got), CF_OK, "%s", cf_executor_error(e));
  char msg[256] = "";
  cr_expect_not(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-2, 1e-2, msg, sizeof msg));
  cf_executor_destroy(e);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(want), cf_tensor_free(got);
}
