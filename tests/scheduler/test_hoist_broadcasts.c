/* The rewrite define and run applies before any row is asked (sched_hoist_broadcasts,
 * scheduler/hoist_broadcasts.c): a broadcast of a tensor computed from fusion inputs by
 * elementwise ops becomes the ops recomputed on broadcasts of the inputs. The printed math
 * after it (the broadcast's result keeps its name; a chain another op reads stays; one no
 * one reads is gone), the fusions it leaves alone (a leaf computed by a full, a chain
 * longer than SCHED_HOIST_MAX_OPS), and cf_fusion_verify on the result. */
#include <criterion/criterion.h>
#include <string.h>

#include "scheduler/registry.h"
#include "test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(hoist_broadcasts, .init = setup, .fini = teardown);

static void expect_math(const char *want) {
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  cr_expect_str_eq(math, want);
  free(math);
}

static void hoist(void) {
  cr_assert_eq(sched_hoist_broadcasts(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
}

/* gelu(cast(x) + broadcast(cast(bias))): the bias is broadcast, then cast; its cast of
 * rank 1 (T2) is gone. */
Test(hoist_broadcasts, a_bias_cast_moves_after_its_broadcast) {
  cf_tv *x = tu_input(f, CF_HALF, 2, (int64_t[]){4, 8}), *b = tu_input(f, CF_HALF, 1, (int64_t[]){8});
  cf_tv *bb = cf_broadcast(f, cf_cast(f, b, CF_FLOAT), 2, (bool[]){true, false});
  cf_fusion_add_output(f, cf_gelu(f, cf_add(f, cf_cast(f, x, CF_FLOAT), bb)));
  hoist();
  expect_math("Inputs:\n"
              "  T0_g___half[iS0{4}, iS1{8}]\n"
              "  T1_g___half[iS2{8}]\n"
              "Outputs:\n"
              "  T6_g_float[iS10{4}, iS11{8}]\n"
              "\n"
              "%kernel_math {\n"
              "T4_l_float[iS6{4}, iS7{8}]\n"
              "   = cast( T0_g___half[iS0{4}, iS1{8}], float );\n"
              "T7_l___half[bS12{1}, iS13{8}]\n"
              "   = broadcast( T1_g___half[iS2{8}], {true, false} );\n"
              "T3_l_float[bS4{1}, iS5{8}]\n"
              "   = cast( T7_l___half[bS12{1}, iS13{8}], float );\n"
              "T5_l_float[iS8{4}, iS9{8}]\n"
              "   = add( T4_l_float[iS6{4}, iS7{8}],\n"
              "        T3_l_float[bS4{1}, iS5{8}] );\n"
              "T6_g_float[iS10{4}, iS11{8}]\n"
              "   = gelu( T5_l_float[iS8{4}, iS9{8}] );\n"
              "} // %kernel_math\n");
}

/* c = (b + 1) * s (s a 0-d scalar, itself broadcast to [1]) broadcast to x's rows and
 * summed: the chain is recomputed on [1, 8] (s's two broadcasts composed into one) and
 * stays for the sum. */
Test(hoist_broadcasts, a_chain_another_op_reads_stays_for_it) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8}), *b = tu_input(f, CF_FLOAT, 1, (int64_t[]){8});
  cf_tv *s = cf_scalar_input(f, CF_FLOAT);
  cf_fusion_add_input(f, s);
  cf_tv *c = cf_mul(f, cf_add_scalar(f, b, 1.0), s);
  cf_fusion_add_output(f, cf_mul(f, x, cf_broadcast(f, c, 2, (bool[]){true, false})));
  cf_fusion_add_output(f, cf_sum(f, c, 1, (int[]){0}));
  hoist();
  expect_math("Inputs:\n"
              "  T0_g_float[iS0{4}, iS1{8}]\n"
              "  T1_g_float[iS2{8}]\n"
              "  T2_g_float[]\n"
              "Outputs:\n"
              "  T7_g_float[iS8{4}, iS9{8}]\n"
              "  T8_g_float[rS10{8}]\n"
              "\n"
              "%kernel_math {\n"
              "T9_l_float[bS11{1}, iS12{8}]\n"
              "   = broadcast( T1_g_float[iS2{8}], {true, false} );\n"
              "T10_l_float[bS13{1}, iS14{8}]\n"
              "   = add( T9_l_float[bS11{1}, iS12{8}], 1 );\n"
              "T11_l_float[bS15{1}, bS16{1}]\n"
              "   = broadcast( T2_g_float[], {true, true} );\n"
              "T6_l_float[bS6{1}, iS7{8}]\n"
              "   = mul( T10_l_float[bS13{1}, iS14{8}],\n"
              "        T11_l_float[bS15{1}, bS16{1}] );\n"
              "T7_g_float[iS8{4}, iS9{8}]\n"
              "   = mul( T0_g_float[iS0{4}, iS1{8}],\n"
              "        T6_l_float[bS6{1}, iS7{8}] );\n"
              "T3_l_float[iS3{8}]\n"
              "   = add( T1_g_float[iS2{8}], 1 );\n"
              "T4_l_float[bS4{1}]\n"
              "   = broadcast( T2_g_float[], {true} );\n"
              "T5_l_float[iS5{8}]\n"
              "   = mul( T3_l_float[iS3{8}],\n"
              "        T4_l_float[bS4{1}] );\n"
              "T8_g_float[rS10{8}]\n"
              "   = sum( T5_l_float[iS5{8}] );\n"
              "} // %kernel_math\n");
}

/* A chain from a full (or a reduction, or a random op) is not recomputed. */
Test(hoist_broadcasts, a_chain_from_a_full_stays) {
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8});
  cf_tv *e = cf_exp(f, cf_full(f, 1, (int64_t[]){4}, 2.0, CF_FLOAT));
  cf_fusion_add_output(f, cf_sub(f, x, cf_broadcast(f, e, 2, (bool[]){false, true})));
  char *before = tu_capture_fusion(cf_fusion_print_math, f);
  hoist();
  expect_math(before);
  free(before);
}

/* A chain of n negations of b, broadcast and added to x: whether the broadcast reads the
 * input b after the rewrite. */
static bool hoists_a_chain_of(int n) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){4, 8}), *c = tu_input(f, CF_FLOAT, 1, (int64_t[]){8});
  for (int i = 0; i < n; i++) c = cf_neg(f, c);
  cf_fusion_add_output(f, cf_add(f, x, cf_broadcast(f, c, 2, (bool[]){true, false})));
  hoist();
  char *math = tu_capture_fusion(cf_fusion_print_math, f);
  bool moved = strstr(math, "= broadcast( T1_g_float[iS2{8}], {true, false} );") != NULL;
  free(math);
  return moved;
}

Test(hoist_broadcasts, chains_up_to_the_limit_are_recomputed) {
  cr_expect(hoists_a_chain_of(1));
  cr_expect(hoists_a_chain_of(SCHED_HOIST_MAX_OPS));
  cr_expect_not(hoists_a_chain_of(SCHED_HOIST_MAX_OPS + 1));
}
