/* The matmul scheduler (the registry's row "matmul", scheduler/matmul_sched.c): cf_matmul
 * and cf_linear of small odd shapes (1, 7, 33, 127 ...), exact tiles, symbolic sizes,
 * float / half / bfloat16, batched and broadcast-batch operands, transposed operands, bias,
 * gelu and cast epilogues, each scheduled by the row and run against the evaluator
 * (NVRTC for sm_90a, the host backend, the GPU when there is one), and through define and
 * run (the plan names the row, one kernel); the kernel keeps the operand tiles in shared
 * memory; refusals with their exact reasons. Operand chains (sets, transposes, prologue
 * casts) in every dtype load their tiles straight from the inputs: no per-thread copy. */
#include <criterion/criterion.h>
#include <string.h>

#include "executor/fusion_cache.h"
#include "kernels/kernel_check.h"
#include "scheduler/registry.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(matmul_sched, .init = setup, .fini = teardown);

/* Half and bfloat16 operands run on tensor cores (scheduler/matmul_mma.c), float and
 * double on CUDA cores (scheduler/matmul_simt.c); both params name each operand tile's
 * fill: the test sets what it expects of A and B. */
static const char *fill_a = "cp.async16", *fill_b = "cp.async16";

static void fresh(void) {
  cf_fusion_destroy(f);
  f = cf_fusion_create();
  fill_a = fill_b = "cp.async16";
}

static double tol_of(cf_dtype dt) { return dt == CF_FLOAT ? 1e-4 : dt == CF_DOUBLE ? 1e-10 : 1e-2; }

/* The row accepts f and schedules it with tu_mma_params(fill_a, fill_b) for 16-bit
 * operands, else tu_simt_params(fill_a, fill_b). */
static void apply_row(bool mma) {
  const SchedRow *r = sched_row_named("matmul");
  cr_assert_not_null(r);
  SchedCall call = {0, NULL, sched_device_default()};
  char why[SCHED_WHY_MAX] = "";
  SchedParams p, used;
  cr_assert(r->can_schedule(f, &call, why), "%s", why);
  cr_assert(r->plan(f, &call, &p, why), "%s", why);
  cr_expect_str_eq(p.text, mma ? tu_mma_params(fill_a, fill_b) : tu_simt_params(fill_a, fill_b));
  cr_assert_eq(r->apply(&f, &call, &p, &used), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(sched_params_equal(&p, &used));
}

/* The row accepts f, schedules it with its params, and the kernel equals the evaluator;
 * returns the CUDA source (caller frees). */
static char *row_check(int n, const KcInput *in, double tol) {
  apply_row(in[0].dtype == CF_HALF || in[0].dtype == CF_BFLOAT16);
  if (getenv("CFUSER_MATMUL_PRINT")) cf_fusion_print_kernel(f, stdout);
  if (getenv("CFUSER_MATMUL_PRINT")) cf_fusion_print_transforms(f, stdout);
  return kc_check(f, n, in, tol);
}

static void refused(const char *want) {
  const SchedRow *r = sched_row_named("matmul");
  SchedCall call = {0, NULL, sched_device_default()};
  char why[SCHED_WHY_MAX] = "";
  cr_expect_not(r->can_schedule(f, &call, why));
  cr_expect_str_eq(why, want);
}

/* matmul of [m, k] @ [k, n] in dt; sizes of 1 come symbolic (a constant 1 is a broadcast
 * axis, which would make the operand a vector). */
static void plain(cf_dtype dt, int64_t m, int64_t k, int64_t n) {
  fresh();
  /* A along K, B along N (matmul's [K, N]): 16-byte vectors when their elements divide */
  static char fa[32], fb[32];
  bool sym = m == 1 || k == 1 || n == 1;
  int64_t vec = 16 / (int64_t)cf_dtype_size(dt);
  snprintf(fa, sizeof fa, sym ? "scalar(K symbolic)" : k % vec ? "scalar(K=%lld)" : "cp.async16", (long long)k);
  snprintf(fb, sizeof fb, sym ? "scalar(N symbolic)" : n % vec ? "scalar(N=%lld)" : "cp.async16", (long long)n);
  fill_a = fa, fill_b = fb;
  KcInput in[2] = {{dt, 2, {m, k}, NULL}, {dt, 2, {k, n}, NULL}};
  cf_tv *a = tu_input(f, dt, 2, sym ? NULL : in[0].sizes), *b = tu_input(f, dt, 2, sym ? NULL : in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  free(row_check(2, in, tol_of(dt)));
}

Test(matmul_sched, odd_and_exact_shapes_equal_the_evaluator) {
  static const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 127, 65}, {64, 16, 64}, {65, 17, 63}, {1, 7, 1},
                                      {127, 1, 33}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) plain(CF_FLOAT, shapes[i][0], shapes[i][1], shapes[i][2]);
}

Test(matmul_sched, sixteen_bit_operands_accumulate_in_float) {
  plain(CF_HALF, 33, 70, 17);
  plain(CF_BFLOAT16, 7, 127, 66);
}

/* The tensor-core kernel loads A's fragments with ldmatrix.x4 (its tile K-contiguous, as
 * A [M, K] is stored) and B's with .x2.trans (its tile N-contiguous, as B [K, N] is: rows
 * of K) from tiles stored through Sw<2,3,3> (A: the XOR of a row's chunk with bits 1..2 of
 * its row) and Sw<3,3,4> (B's rows of 128 elements), 3 stages deep; the host emulation
 * checks every lane's elements; NVRTC compiles it for sm_90a and sm_80. */
Test(matmul_sched, tensor_core_fragments_come_from_ldmatrix_on_swizzled_tiles) {
  KcInput in[2] = {{CF_HALF, 2, {130, 70}, NULL}, {CF_HALF, 2, {70, 20}, NULL}};
  cf_tv *a = tu_input(f, CF_HALF, 2, in[0].sizes), *b = tu_input(f, CF_HALF, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  fill_a = "scalar(K=70)", fill_b = "scalar(N=20)";
  char *src = row_check(2, in, 1e-2);
  cr_expect(strstr(src, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"));
  cr_expect(strstr(src, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"));
  cr_expect(!strstr(src, "x4.trans"));
  cr_expect(strstr(src, "/ 2) % 4) ^ "), "the tiles are not swizzled");
  free(src);
  /* mma.sync, ldmatrix and the staged tiles are sm_80 instructions: NVRTC compiles them for Ampere too */
  free(kc_compile_for(f, "sm_80"));
}

/* The product itself an output (float, no epilogue cast) of half inputs that carry their
 * broadcast axes ([M, 1, K] and [1, N, K], cast straight to float): the tensor-core
 * schedule stages each input through a copy, its shared-memory tile, and sums into a
 * local cache written out by a copy (the accumulator's fragments were addresses in the
 * global output: "subscripted value is neither array nor pointer" from the host
 * compiler); the kernel equals the evaluator. */
Test(matmul_sched, tensor_core_product_of_inputs_as_the_output) {
  KcInput in[2] = {{CF_HALF, 3, {33, 1, 40}, NULL}, {CF_HALF, 3, {1, 17, 40}, NULL}};
  cf_tv *x = tu_input(f, CF_HALF, 3, in[0].sizes), *y = tu_input(f, CF_HALF, 3, in[1].sizes);
  cf_tv *p = cf_mul(f, cf_cast(f, x, CF_FLOAT), cf_cast(f, y, CF_FLOAT));
  cf_fusion_add_output(f, cf_sum(f, p, 1, (int[]){2}));
  char *src = row_check(2, in, 1e-4);
  cr_expect(strstr(src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  free(src);
  fresh(); /* the same product of 2-d inputs broadcast in the fusion (symbolic sizes) */
  KcInput in2[2] = {{CF_BFLOAT16, 2, {33, 40}, NULL}, {CF_BFLOAT16, 2, {17, 40}, NULL}};
  x = tu_input(f, CF_BFLOAT16, 2, NULL), y = tu_input(f, CF_BFLOAT16, 2, NULL);
  fill_a = fill_b = "scalar(K symbolic)"; /* the row applied directly: no size to decide from */
  cf_tv *xb = cf_broadcast(f, x, 3, (bool[]){false, true, false}), *yb = cf_broadcast(f, y, 3, (bool[]){true, false, false});
  p = cf_mul(f, cf_cast(f, xb, CF_FLOAT), cf_cast(f, yb, CF_FLOAT));
  cf_fusion_add_output(f, cf_sum(f, p, 1, (int[]){2}));
  free(row_check(2, in2, 1e-4));
}

Test(matmul_sched, batched_and_broadcast_batch) {
  KcInput in[2] = {{CF_FLOAT, 3, {3, 7, 13}, NULL}, {CF_FLOAT, 3, {3, 13, 5}, NULL}};
  cf_tv *a = tu_input(f, CF_FLOAT, 3, in[0].sizes), *b = tu_input(f, CF_FLOAT, 3, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  fill_a = "scalar(K=13)", fill_b = "scalar(N=5)";
  free(row_check(2, in, 1e-4));
  fresh();
  KcInput in2[2] = {{CF_FLOAT, 4, {2, 3, 9, 13}, NULL}, {CF_FLOAT, 2, {13, 5}, NULL}};
  a = tu_input(f, CF_FLOAT, 4, in2[0].sizes), b = tu_input(f, CF_FLOAT, 2, in2[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, a, b));
  fill_a = "scalar(K=13)", fill_b = "scalar(N=5)";
  free(row_check(2, in2, 1e-4));
}

Test(matmul_sched, transposed_operands) {
  KcInput in[2] = {{CF_FLOAT, 2, {19, 7}, NULL}, {CF_FLOAT, 2, {5, 19}, NULL}};
  cf_tv *at = tu_input(f, CF_FLOAT, 2, in[0].sizes), *bt = tu_input(f, CF_FLOAT, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_matmul(f, cf_transpose(f, at, 0, 1), cf_transpose(f, bt, 0, 1)));
  /* bt [N, K] is K-contiguous: B's tile K-major, swizzled */
  fill_a = "scalar(a permute of T0)", fill_b = "swizzled";
  free(row_check(2, in, 1e-4));
}

/* gelu(x @ w^T + bias) in bfloat16 with constant sizes, the row applied directly: the
 * bias's cast to float is a computed tensor of lower rank broadcast along M, which the row
 * hoists after its broadcast (as define and run does) so that it takes the accumulator's
 * whole fragment layout; the kernel equals the evaluator (it was refused: "T9 is in Local
 * memory, but T10 reads its axis 3 (ithreadIdx.x228{4}) on threadIdx.x from other threads"). */
Test(matmul_sched, linear_bias_gelu_epilogue) {
  KcInput in[3] = {{CF_BFLOAT16, 2, {33, 40}, NULL}, {CF_BFLOAT16, 2, {17, 40}, NULL}, {CF_BFLOAT16, 1, {17}, NULL}};
  cf_tv *x = tu_input(f, CF_BFLOAT16, 2, in[0].sizes), *w = tu_input(f, CF_BFLOAT16, 2, in[1].sizes);
  cf_tv *bias = tu_input(f, CF_BFLOAT16, 1, in[2].sizes);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  char *src = row_check(3, in, 1e-2);
  cr_expect(strstr(src, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  free(src);
  fresh(); /* the same with symbolic sizes and half, 130 x 70 against 150 x 70 */
  KcInput in2[3] = {{CF_HALF, 2, {130, 70}, NULL}, {CF_HALF, 2, {150, 70}, NULL}, {CF_HALF, 1, {150}, NULL}};
  x = tu_input(f, CF_HALF, 2, NULL), w = tu_input(f, CF_HALF, 2, NULL), bias = tu_input(f, CF_HALF, 1, NULL);
  fill_a = fill_b = "scalar(K symbolic)";
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  free(row_check(3, in2, 1e-2));
}

Test(matmul_sched, epilogue_with_a_float_output_and_a_cast) {
  KcInput in[2] = {{CF_HALF, 2, {9, 31}, NULL}, {CF_HALF, 2, {31, 70}, NULL}};
  cf_tv *a = tu_input(f, CF_HALF, 2, in[0].sizes), *b = tu_input(f, CF_HALF, 2, in[1].sizes);
  cf_tv *c = cf_matmul(f, a, b);
  cf_fusion_add_output(f, cf_relu(f, cf_cast(f, c, CF_FLOAT)));
  fill_a = "scalar(K=31)", fill_b = "scalar(N=70)";
  free(row_check(2, in, 1e-2));
}

Test(matmul_sched, refusals) {
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *v = tu_input(f, CF_FLOAT, 1, (int64_t[]){7});
  cf_fusion_add_output(f, cf_matmul(f, a, v));
  refused("matmul: T4 is not a product with M, N and one K axis (a vector operand is a reduction)");
  fresh();
  cf_tv *x = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7});
  cf_fusion_add_output(f, cf_sum(f, x, 1, (int[]){1}));
  refused("matmul: the sum's input T0 is not a mul read only by it");
  fresh();
  cf_tv *p = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *q = tu_input(f, CF_FLOAT, 2, (int64_t[]){7, 3});
  cf_tv *c = cf_matmul(f, p, q);
  cf_fusion_add_output(f, c);
  cf_fusion_add_output(f, cf_sum(f, c, 1, (int[]){0}));
  refused("matmul: T6 is a second reduction");
  fresh();
  cf_tv *y = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7});
  cf_fusion_add_output(f, cf_sum(f, cf_mul_scalar(f, y, 2.0), 1, (int[]){1}));
  refused("matmul: T1 multiplies by a scalar");
  fresh(); /* inputs with broadcast axes: no prologue op to write a tile */
  cf_tv *u = tu_input(f, CF_FLOAT, 3, (int64_t[]){5, 7, 1}), *w = tu_input(f, CF_FLOAT, 3, (int64_t[]){1, 7, 3});
  cf_fusion_add_output(f, cf_sum(f, cf_mul(f, u, w), 1, (int[]){1}));
  refused("matmul: operand T0 is a fusion input (no prologue op writes its tile)");
  fresh(); /* a second output that does not read the product */
  cf_tv *g = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 7}), *h = tu_input(f, CF_FLOAT, 2, (int64_t[]){7, 3});
  cf_tv *z = tu_input(f, CF_FLOAT, 2, (int64_t[]){5, 3});
  cf_fusion_add_output(f, cf_matmul(f, g, h));
  cf_fusion_add_output(f, cf_neg(f, z));
  refused("matmul: output T7 does not read the product's sum");
}

/* Runs f (one output) by define and run on the host backend through c against the
 * evaluator: one segment, the matmul row with `params`; returns the segment's CUDA kernel
 * as cf_fusion_cache_print_kernel prints it (caller frees). */
static char *dnr_check(cf_fusion_cache *c, int n, const KcInput *in, double tol, const char *params) {
  DLManagedTensor *t[3], *got = NULL, *want = NULL;
  const DLTensor *ins[3];
  for (int i = 0; i < n; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 5 + (uint64_t)i))->dl_tensor;
  cr_assert_eq(cf_fusion_execute(c, n, ins, 1, &got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, n, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, tol, tol, msg, sizeof msg), "%lldx%lld: %s",
            (long long)in[0].sizes[0], (long long)in[1].sizes[0], msg);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 1);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "matmul");
  cr_expect_str_eq(cf_fusion_cache_last_params(c, 0), params);
  char *src = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&src, &len);
  cr_assert_eq(cf_fusion_cache_print_kernel(c, 0, out), CF_OK);
  fclose(out);
  for (int i = 0; i < n; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got), cf_tensor_free(want);
  return src;
}

/* Define and run picks the row and runs one kernel equal to the evaluator. */
Test(matmul_sched, define_and_run_picks_the_row) {
  cf_tv *x = cf_tensor_symbolic(f, CF_HALF, 2), *w = cf_tensor_symbolic(f, CF_HALF, 2);
  cf_tv *bias = cf_tensor_symbolic(f, CF_HALF, 1);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w), cf_fusion_add_input(f, bias);
  cf_fusion_add_output(f, cf_gelu(f, cf_linear(f, x, w, bias)));
  KcInput in[3] = {{CF_HALF, 2, {37, 45}, NULL}, {CF_HALF, 2, {29, 45}, NULL}, {CF_HALF, 1, {29}, NULL}};
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  free(dnr_check(c, 3, in, 1e-2, tu_mma_params("scalar(K=45)", "scalar(K=45)")));
  cf_fusion_cache_destroy(c);
}

/* ---- operand chains in load order (scheduler/matmul_operands.c) ------------------------ */

/* The largest local array of a printed kernel, in elements ("alignas(16) float T9[128];"). */
static long long largest_local(const char *src) {
  long long most = 0, n;
  for (const char *p = strstr(src, "alignas(16) "); p; p = strstr(p + 1, "alignas(16) ")) {
    const char *b = strchr(p, '['), *e = strchr(p, ';');
    if (b && e && b < e && !strstr(p, "alignas(16) extern") && sscanf(b, "[%lld]", &n) == 1 && n > most) most = n;
  }
  return most;
}

/* How linear's operands reach the product: as inputs, through a set (define and run moves
 * the broadcast onto the input: set(broadcast(x))), stored transposed ([K, M] and [K, N],
 * permuted in the fusion before linear broadcasts them), or x stored in another dtype
 * (float for 16-bit operands, half for float) and cast to the operands' (a prologue cast:
 * cast(broadcast(x)) once hoisted). */
typedef enum Form { PLAIN, SET, TRANSPOSED, CAST } Form;

/* The params of linear in that form in dt (K = 40, so copies of the inputs are filled by
 * 16-byte vectors; a transposed input is a permute, a cast one a cast); on CUDA cores
 * (float) w's K-major tile is swizzled, filled element by element. */
static const char *form_params(cf_dtype dt, Form form) {
  bool simt = dt == CF_FLOAT;
  fill_a = form == TRANSPOSED ? "scalar(a permute of T0)" : form == CAST ? "scalar(a cast of T0)" : "cp.async16";
  fill_b = form == TRANSPOSED ? "scalar(a permute of T1)" : simt ? "swizzled" : "cp.async16";
  return simt ? tu_simt_params(fill_a, fill_b) : tu_mma_params(fill_a, fill_b);
}

/* The inputs of linear(x, w) of [m, k] and [n, k] in dt in the given form. */
static void form_inputs(cf_dtype dt, Form form, int64_t m, int64_t n, int64_t k, KcInput in[2]) {
  bool t = form == TRANSPOSED;
  cf_dtype other = dt == CF_FLOAT ? CF_HALF : CF_FLOAT;
  in[0] = (KcInput){form == CAST ? other : dt, 2, {t ? k : m, t ? m : k}, NULL};
  in[1] = (KcInput){dt, 2, {t ? k : n, t ? n : k}, NULL};
}

/* f = linear(x, w) in that form, of in[]'s sizes when `sizes`, else symbolic. */
static void linear_of(Form form, const KcInput in[2], bool sizes) {
  cf_tv *x = tu_input(f, in[0].dtype, 2, sizes ? in[0].sizes : NULL);
  cf_tv *w = tu_input(f, in[1].dtype, 2, sizes ? in[1].sizes : NULL);
  if (form == SET) x = cf_set(f, x), w = cf_set(f, w);
  if (form == TRANSPOSED) x = cf_transpose(f, x, 0, 1), w = cf_transpose(f, w, 0, 1);
  if (form == CAST) x = cf_cast(f, x, in[1].dtype);
  cf_fusion_add_output(f, cf_linear(f, x, w, NULL));
}

/* Each form of linear in float, half and bfloat16 by define and run on the host (one
 * kernel per shape: M from 64 to 130 against N = 72, K = 40, and the block tile's and the
 * instruction's shapes), equal to the evaluator. Half and bfloat16 run the tensor-core
 * schedule (mma.sync emulated lane by lane), float the CUDA-core one. Every tensor of an
 * operand's chain is inlined into its tile's writes: no local array but the accumulator
 * (128 floats a thread on tensor cores, 64 on CUDA cores: an 8 x 8 register tile; it was 1,
 * the sum accumulating into the global output at every k). It was, for half set(x): "internal error: kernel IR invalid after pass
 * circular_buffer: T11 is read before it is written" (broadcast(x) a 128 x 32 per-thread
 * array computed in the K loop beside the tile's fill, which runs 2 iterations ahead), and
 * for the transposed operands a per-thread copy of the block's whole K panel (8192 halves,
 * or 3 x 16 x 4 floats at K = 40: growing with K). */
static void dnr_forms(cf_dtype dt, Form form) {
  static const int64_t shapes[][3] = {{64, 72, 40}, {97, 72, 40}, {130, 72, 40}, {128, 128, 32}, {16, 8, 16}};
  KcInput in[2];
  form_inputs(dt, form, 1, 1, 1, in);
  linear_of(form, in, false);
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  for (size_t i = form == SET ? 0 : 2; i < sizeof shapes / sizeof shapes[0]; i += form == SET ? 1 : 2) {
    form_inputs(dt, form, shapes[i][0], shapes[i][1], shapes[i][2], in);
    char *src = dnr_check(c, 2, in, tol_of(dt), form_params(dt, form));
    cr_expect_eq(largest_local(src), dt == CF_FLOAT ? 64 : 128, "dtype %d form %d shape %zu", dt, form, i);
    free(src);
  }
  cf_fusion_cache_destroy(c);
}

/* check(dt, form) on a fresh fusion for each dtype and form. */
static void each_form(void (*check)(cf_dtype, Form)) {
  static const cf_dtype dts[] = {CF_FLOAT, CF_HALF, CF_BFLOAT16};
  for (int d = 0; d < 3; d++)
    for (Form form = PLAIN; form <= CAST; form++) {
      fresh();
      check(dts[d], form);
    }
}

Test(matmul_sched, operand_chains_load_tiles_from_the_inputs) { each_form(dnr_forms); }

/* The same forms with constant sizes (130 x 72 x 40), the row applied directly (it hoists
 * the broadcasts as define and run does): NVRTC compiles each kernel for sm_90a, the host
 * backend runs it equal to the evaluator, and the CUDA source has no local array but the
 * accumulator either. */
static void nvrtc_forms(cf_dtype dt, Form form) {
  KcInput in[2];
  form_inputs(dt, form, 130, 72, 40, in);
  linear_of(form, in, true);
  form_params(dt, form);
  apply_row(dt != CF_FLOAT);
  char *src = kc_check(f, 2, in, tol_of(dt));
  cr_expect_eq(largest_local(src), dt == CF_FLOAT ? 64 : 128, "dtype %d form %d", dt, form);
  free(src);
}

Test(matmul_sched, operand_chains_compile_for_sm90a) { each_form(nvrtc_forms); }

/* A residual linear, y = x @ w^T + x with w square (nvFuser's test_reduction_transpose_sched_
 * issue2317): the add maps x's axis 1 (K) onto the output's N, so one kernel would read x
 * in two orders. No row takes that segment (registry.c: reads_in_one_order); define and
 * run cuts it into the matmul and the add, and the result equals the evaluator (it was an
 * internal error: "the matmul row's schedule ... is refused by lowering"). */
Test(matmul_sched, residual_linear_is_cut_where_k_meets_n) {
  cf_tv *x = cf_tensor_symbolic(f, CF_FLOAT, 2), *w = cf_tensor_symbolic(f, CF_FLOAT, 2);
  cf_fusion_add_input(f, x), cf_fusion_add_input(f, w);
  cf_fusion_add_output(f, cf_add(f, cf_linear(f, x, w, NULL), x));
  KcInput in[2] = {{CF_FLOAT, 2, {9, 24}, NULL}, {CF_FLOAT, 2, {24, 24}, NULL}};
  DLManagedTensor *t[2], *got = NULL, *want = NULL;
  const DLTensor *ins[2];
  for (int i = 0; i < 2; i++) ins[i] = &(t[i] = kc_make_input(&in[i], 11 + (uint64_t)i))->dl_tensor;
  cf_fusion_cache *c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
  cr_assert_eq(cf_fusion_execute(c, 2, ins, 1, &got), CF_OK, "%s", cf_fusion_cache_error(c));
  cr_assert_eq(cf_fusion_evaluate(f, 2, ins, &want), CF_OK, "%s", cf_fusion_error(f));
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &want->dl_tensor, 1e-4, 1e-4, msg, sizeof msg), "%s", msg);
  cr_expect_eq(cf_fusion_cache_last_segments(c), 2);
  cr_expect_str_eq(cf_fusion_cache_last_scheduler(c, 0), "matmul");
  cf_fusion_cache_destroy(c);
  for (int i = 0; i < 2; i++) cf_tensor_free(t[i]);
  cf_tensor_free(got), cf_tensor_free(want);
}

/* Compiles f (CUDA for sm_90a where NVRTC is, else the host backend) with CFUSER_DUMP=times
 * going to the file `times` reads (the process opens its dump file once); returns the
 * lowering time the dump reports, in ms, and the source (caller frees). The dump's second
 * line times each pass: the mma pass among them. */
static double dumped_lowering_ms(FILE *times, char **src, bool *cuda) {
  *cuda = tu_nvrtc_or_note();
  cf_executor *e = cf_executor_create(
      &(cf_executor_options){.backend = *cuda ? CF_BACKEND_CUDA : CF_BACKEND_HOST, .arch = *cuda ? "sm_90a" : NULL});
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  *src = strdup(cf_executor_source(e));
  cf_executor_destroy(e);
  char line[2][4096] = {"", ""};
  cr_assert(fgets(line[0], sizeof line[0], times) && fgets(line[1], sizeof line[1], times), "two lines of times");
  const char *low = strstr(line[0], "): lowering ");
  double ms = -1;
  cr_assert(low && sscanf(low, "): lowering %lf ms", &ms) == 1, "%s", line[0]);
  cr_expect(strstr(line[1], "=== lowering of ") == line[1] && strstr(line[1], " by pass: loop_model ") &&
            strstr(line[1], " ms, mma "), "%s", line[1]);
  return ms;
}

/* The tensor-core kernel's lowering does not grow with K: the mma pass's ldmatrix proof
 * evaluates one period of the K loop (3, its stages: lower/kx_period.c), not its K / 32
 * iterations. It took 3.1 s at K = 4096 and 6 s at 8192 on this 2-core machine (5.5 s on
 * the GPU machine's cores), and beyond K = 16384 gave up on ldmatrix for per-lane loads. A
 * loose pin: lowering under 2 s, fragments still by ldmatrix, at K = 8192 and 65536. */
Test(matmul_sched, lowering_time_does_not_grow_with_k) {
  static const int64_t ks[] = {8192, 65536};
  char path[] = "/tmp/cfuser-matmul-times-XXXXXX";
  tu_dump_times_to_temp(path);
  FILE *times = fopen(path, "r");
  cr_assert_not_null(times);
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    fresh();
    cf_tv *a = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){256, ks[i]}), *b = tu_input(f, CF_BFLOAT16, 2, (int64_t[]){ks[i], 256});
    cf_fusion_add_output(f, cf_matmul(f, a, b));
    apply_row(true);
    char *src;
    bool cuda;
    double ms = dumped_lowering_ms(times, &src, &cuda);
    cr_log_info("K = %lld: lowering %.1f ms", (long long)ks[i], ms);
    cr_expect_lt(ms, 2000.0, "K = %lld: lowering took %.1f ms", (long long)ks[i], ms);
    cr_expect(strstr(src, cuda ? "ldmatrix.sync.aligned.m8n8.x4.shared.b16" : "cfh_ldmatrix(4, 0, "),
              "K = %lld: A's fragments are not loaded by ldmatrix", (long long)ks[i]);
    free(src);
  }
  fclose(times);
  unlink(path);
}

/* The SIMT schedule (scheduler/matmul_simt.c) of a float linear of whole tiles (256 x 64
 * against 128 x 64, K-contiguous operands: linear's x and w, as the tensor-parallel MLP's
 * are): A's tile filled by 16-byte cp.async, double-buffered; B's tile K-major with its
 * rows' k XOR-swizzled by the row bits above the bank line ((n / 2) % 8: threadIdx.x / 2
 * in the reads, 16 consecutive columns on 16 banks); the 64 products accumulated in a
 * local array over unrolled loops with no predicate (whole tiles), and the output stored
 * from it, each warp writing 16 consecutive columns. Equal to the evaluator on the host
 * and compiled by NVRTC for sm_90a. */
Test(matmul_sched, simt_linear_of_whole_tiles) {
  KcInput in[2] = {{CF_FLOAT, 2, {256, 64}, NULL}, {CF_FLOAT, 2, {128, 64}, NULL}};
  cf_tv *x = tu_input(f, CF_FLOAT, 2, in[0].sizes), *w = tu_input(f, CF_FLOAT, 2, in[1].sizes);
  cf_fusion_add_output(f, cf_linear(f, x, w, NULL));
  fill_a = "cp.async16", fill_b = "swizzled";
  char *src = row_check(2, in, 1e-4);
  cr_expect(strstr(src, "cp.async.cg.shared.global [%0], [%1], 16"));
  cr_expect(strstr(src, "((threadIdx.x / 2) ^ (i3 % 8))"), "B's tile is not swizzled");
  cr_expect(strstr(src, "float T6[64];"), "no 8 x 8 accumulator");
  cr_expect(strstr(src, "T6[((i4 * 8) + i5)] = (T6[((i4 * 8) + i5)] + T4[0]);"));
  const char *loop = strstr(src, "for (cf_index_t i3 = 0; i3 < 16; ++i3) {");
  cr_assert(loop, "no k loop of 16");
  const char *end = strstr(loop, "__syncthreads();");
  cr_assert(end);
  for (const char *p = strstr(loop, "if ("); p && p < end; p = NULL) cr_expect(0, "a predicate in the k loop");
  free(src);
  fresh(); /* double, odd sizes: B's rows of 16 doubles fill the bank line, k XORed by n % 16 */
  KcInput in2[2] = {{CF_DOUBLE, 2, {33, 40}, NULL}, {CF_DOUBLE, 2, {17, 40}, NULL}};
  x = tu_input(f, CF_DOUBLE, 2, in2[0].sizes), w = tu_input(f, CF_DOUBLE, 2, in2[1].sizes);
  cf_fusion_add_output(f, cf_linear(f, x, w, NULL));
  fill_a = "cp.async16", fill_b = "swizzled";
  src = row_check(2, in2, 1e-10);
  cr_expect(strstr(src, "(threadIdx.x ^ i3)"), "B's double tile is not swizzled by n %% 16");
  free(src);
}
