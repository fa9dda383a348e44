/* TMA fills (cf_tma_load, scheduler/circular_buffer.c; lower/tma.c; the mbarriers and tile
 * loads of codegen/runtime/tma.cuh and the host's host_mbarrier.h / host_tma.h): a
 * circular-buffered tile of half rows filled by one thread's box per row equals the
 * evaluator on the host backend (NVRTC compiles it for sm_90a), its kernel IR exactly;
 * the box and swizzle are found from the tile's schedule (the matmul's 128-byte-swizzled
 * operand tiles: tests/scheduler/test_matmul_wgmma.c); a tile stored in an order no box
 * writes is refused naming the element; warp-specialized, a producer thread fills the rows
 * as the readers release them, and readers that synchronize are refused; the primitives'
 * rules, each refused by name. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/kernel_check.h"
#include "lower/kir.h"
#include "kernel_ir.h"
#include "lower/lower.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(tma, .init = setup, .fini = teardown);

enum { ROWS = 7, COLS = 64 };
static const KcInput IN[1] = {{CF_HALF, 2, {ROWS, COLS}, NULL}};

/* out = float(T1), T1 = set(T0) a shared tile per row, 3 stages: written [row, tidx{8},
 * inner{8}] (inner vectorized when vec, else a serial loop; transposed: the 64 columns
 * stored as [8, 8] swapped), read [row, 8, tidx{8}] (other threads' elements). */
static cf_tv *tma_rows(bool vec, bool transposed) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in), *out = cf_cast(f, t, CF_FLOAT);
  cf_fusion_add_output(f, out);
  cf_split(f, out, 1, 8);
  cf_parallelize(f, out, 2, CF_PT_TIDX);
  cf_split(f, t, 1, 8); /* [row, 8, 8] */
  if (transposed) {
    cf_reorder(f, t, 1, (int[]){1, 2});
    cf_merge(f, t, 1);
    cf_split(f, t, 1, 8);
  }
  cf_parallelize(f, t, 1, CF_PT_TIDX);
  if (vec) cf_parallelize(f, t, 2, CF_PT_VECTORIZE);
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_inline_at(f, t, 1);
  cr_assert_eq(cf_circular_buffer(f, t, 3), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_tma_load(f, t), CF_OK, "%s", cf_fusion_error(f));
  return t;
}

static char *kernel_ir(void) { return test_kernel_ir(f); }

/* One box of 64 x 1 a row (no swizzle: the tile is stored as it is read), the elected
 * thread's, its 128 bytes completing on the stage's barrier; the readers wait for the
 * stage's phase instead of a __syncthreads (the one after the reads stays: a stage is
 * refilled only after every thread read it). */
Test(tma, a_row_tile_in_three_stages_equals_the_evaluator) {
  tma_rows(true, false);
  char *src = kc_check(f, 1, IN, 0);
  cr_expect(strstr(src, ", const __grid_constant__ CfTensorMap cf_tmap0 /* T0 */) {"), "%s", src);
  cr_expect(strstr(src, "cf_mbar_init(&T1_mbar[2], 1u);"));
  cr_expect(strstr(src, "cf_mbar_expect_tx(&T1_mbar[((i0 + 2) % 3)], 128u);"), "%s", src);
  cr_expect(strstr(src, "cf_tma_load(&T1[(((i0 + 2) % 3) * 64)], &cf_tmap0, &T1_mbar[((i0 + 2) % 3)], (int)(0), "
                        "(int)((i0 + 2)));"), "%s", src);
  cr_expect(strstr(src, "cf_mbar_wait(&T1_mbar[(i0 % 3)], (unsigned)(((i0 / 3) % 2)));"), "%s", src);
  cr_expect(!strstr(src, "cp.async.cg"), "no thread copies");
  free(src);
  char *ir = kernel_ir();
  cr_expect(strstr(ir, "IF (threadIdx.x == 0)\n"
                       "  MBAR_INIT T1_mbar[0] arrivals 1\n"
                       "  MBAR_INIT T1_mbar[1] arrivals 1\n"
                       "  MBAR_INIT T1_mbar[2] arrivals 1\n"
                       "SYNC\n"
                       "IF (threadIdx.x == 0)\n"
                       "  MBAR_EXPECT_TX T1_mbar[0] bytes 128\n"
                       "  TMA_LOAD cf_tmap0(T0 box 64x1 swizzle 0) at {0, 0} -> T1[0] on T1_mbar[0]\n"), "%s", ir);
  cr_expect(strstr(ir, "  IF (i0 < 5)\n"
                       "    IF (threadIdx.x == 0)\n"
                       "      MBAR_EXPECT_TX T1_mbar[((i0 + 2) % 3)] bytes 128\n"
                       "      TMA_LOAD cf_tmap0(T0 box 64x1 swizzle 0) at {0, (i0 + 2)} -> T1[(((i0 + 2) % 3) * 64)] on "
                       "T1_mbar[((i0 + 2) % 3)]\n"
                       "  MBAR_WAIT T1_mbar[(i0 % 3)] parity ((i0 / 3) % 2)\n"
                       "  FOR i1 in 0..8 (S)\n"), "the wait in place of the sync: %s", ir);
  free(ir);
}

/* A fill of one element a thread (no vector) is a box all the same: the same kernel. */
Test(tma, a_scalar_fill_is_the_same_box) {
  tma_rows(false, false);
  char *src = kc_check(f, 1, IN, 0);
  cr_expect(strstr(src, "cf_tma_load(&T1[(((i0 + 2) % 3) * 64)], &cf_tmap0,"), "%s", src);
  free(src);
}

/* Columns stored [8, 8] transposed: element (row 0, column 8) sits at offset 1, where no
 * box of rows (swizzled or not) puts it. */
Test(tma, a_tile_no_box_writes_is_refused_naming_the_element) {
  tma_rows(false, true);
  KKernel *k = NULL;
  char *err = NULL;
  cr_expect_eq(lower_fusion(f, &(LowerOptions){0}, &k, &err), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(err, "compile: T1 cannot be filled by TMA: no box places its element (0, 8) (relative to the tile's "
                        "first) at offset 1, where its schedule stores it (rows of 32, 64 or 128 bytes under their "
                        "swizzle, or unswizzled rows, are what TMA writes)");
  free(err);
  kkernel_free(k);
}

/* Warp-specialized (lower/warp_specialize.c): threadIdx.y 1 is the producer, filling row
 * after row as the 8 readers release them (each arrives after its reads); equal to the
 * evaluator on the host, and no __syncthreads left in the loop. */
Test(tma, a_producer_thread_fills_the_rows) {
  cf_tv *t = tma_rows(true, false);
  cr_assert_eq(cf_warp_specialize(f, t, CF_PT_TIDY), CF_OK, "%s", cf_fusion_error(f));
  char *src = kc_check(f, 1, IN, 0);
  free(src);
  char *ir = kernel_ir();
  cr_expect(strstr(ir, "  MBAR_INIT cf_empty[2] arrivals 8\n"
                       "SYNC\n"
                       "IF (threadIdx.y >= 1) (concurrently with the else branch)\n"
                       "  IF (threadIdx.x == 0)\n"
                       "    FOR i2 in 0..7 (S)\n"
                       "      IF (i2 >= 3)\n"
                       "        MBAR_WAIT cf_empty[(i2 % 3)] parity (((i2 / 3) + 1) % 2)\n"
                       "      MBAR_EXPECT_TX T1_mbar[(i2 % 3)] bytes 128\n"
                       "      TMA_LOAD cf_tmap0(T0 box 64x1 swizzle 0) at {0, i2} -> T1[((i2 % 3) * 64)] on T1_mbar[(i2 % 3)]\n"
                       "ELSE\n"
                       "  FOR i0 in 0..7 (S)\n"
                       "    MBAR_WAIT T1_mbar[(i0 % 3)] parity ((i0 / 3) % 2)\n"), "%s", ir);
  cr_expect(strstr(ir, "        T2[((i0 * 64) + ((i1 * 8) + threadIdx.x))] = cast(T1[(((i1 * 8) + threadIdx.x) + ((i0 % 3) * "
                       "64))])\n"
                       "    MBAR_ARRIVE cf_empty[(i0 % 3)]\n"), "%s", ir);
  cr_expect(!strstr(ir, "  SYNC\n"), "no __syncthreads but the barriers' init: %s", ir);
  free(ir);
}

/* Readers that synchronize the block (a reduction across the row's threads) would wait for
 * the producer's thread: refused by name. */
Test(tma, readers_that_synchronize_are_refused) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in), *out = cf_sum(f, cf_cast(f, t, CF_FLOAT), 1, (int[]){1});
  cf_fusion_add_output(f, out);
  cf_parallelize(f, out, 1, CF_PT_TIDX);
  cf_split(f, t, 1, 8);
  cf_parallelize(f, t, 2, CF_PT_VECTORIZE);
  cf_parallelize(f, t, 1, CF_PT_TIDX);
  cf_set_memory_type(f, t, CF_MEM_SHARED);
  cf_inline_at(f, t, 1);
  cr_assert_eq(cf_circular_buffer(f, t, 3), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_tma_load(f, t), CF_OK, "%s", cf_fusion_error(f));
  cr_assert_eq(cf_warp_specialize(f, t, CF_PT_TIDY), CF_OK, "%s", cf_fusion_error(f));
  KKernel *k = NULL;
  char *err = NULL;
  cr_expect_eq(lower_fusion(f, &(LowerOptions){0}, &k, &err), CF_ERR_INVALID_SCHEDULE);
  cr_expect_str_eq(err, "compile: the loop cannot be warp-specialized: its readers have a block reduction, which would "
                        "wait for the producer's threads (they run the fills alone)");
  free(err);
  kkernel_free(k);
}

/* The primitive's rules: shared memory, a copy of a fusion input of its dtype. */
Test(tma, the_primitive_refuses_what_is_not_a_tile_of_an_input) {
  cf_tv *in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  cf_tv *t = cf_set(f, in), *c = cf_cast(f, in, CF_FLOAT);
  cf_fusion_add_output(f, cf_add(f, cf_cast(f, t, CF_FLOAT), c));
  cr_expect_eq(cf_tma_load(f, t), CF_ERR_INVALID_SCHEDULE);
  cr_expect(strstr(cf_fusion_error(f), "tma_load: T1 is in Local memory; TMA fills shared-memory tiles"), "%s",
            cf_fusion_error(f));
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  in = tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS});
  c = cf_cast(f, in, CF_FLOAT);
  cf_fusion_add_output(f, cf_neg(f, c));
  cf_set_memory_type(f, c, CF_MEM_SHARED);
  cr_expect_eq(cf_tma_load(f, c), CF_ERR_INVALID_SCHEDULE);
  cr_expect(strstr(cf_fusion_error(f), "tma_load: T1 is not a copy of a fusion input of its dtype (a set, broadcast or "
                                       "permute; cf_cache_after of the input makes one); TMA copies global memory as it is"),
            "%s", cf_fusion_error(f));
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  cf_tv *t2 = cf_set(f, tu_input(f, CF_HALF, 2, (int64_t[]){ROWS, COLS}));
  cf_fusion_add_output(f, cf_neg(f, t2));
  cr_expect_eq(cf_warp_specialize(f, t2, CF_PT_TIDY), CF_ERR_INVALID_SCHEDULE);
  cr_expect(strstr(cf_fusion_error(f), "warp_specialize: T1 is not filled by TMA (cf_tma_load first): a producer slice "
                                       "issues TMA boxes"), "%s", cf_fusion_error(f));
}
