/*
> [!NOTE]
> This file is both C and Markdown: `tutorial/matmul.c` is a Criterion test suite, and
> `tutorial/matmul.md` is rendered from it by `tools/render_tutorial.py`. Every test
> shown here runs in cfuser's test suite (`ctest -R tutorial_matmul`).

# A matmul on Hopper's tensor cores, scheduled by hand

This tutorial schedules a linear layer, `y = x @ w^T` with `x` of M x K and `w` of N x K
in bfloat16 and the products summed in float, for the warpgroup instruction of Hopper
(`wgmma.mma_async`, `sm_90a`), one step at a time with cfuser's public scheduling calls.
They are the steps the matmul scheduler takes for you in define and run
(`scheduler/matmul_mma.c`); doing them by hand shows what each one is for and what the
lowering does with it:

1. block tiles: each block computes a 128 x 256 tile of `y`, looping over K 64 at a time;
2. operand tiles in shared memory, stored in the layout the instruction reads, filled by
   all the block's threads with 16-byte `cp.async`;
3. the instruction: two warpgroups of 128 threads, each a 64 x 256 x 16 wgmma per 16 of K;
4. everything else follows the accumulator, and is inlined;
5. circular buffering: the next K tiles load while the tensor cores work on this one.

Every schedule is compiled by NVRTC for `sm_90a` (no GPU needed) where cfuser was built
with the CUDA toolkit; without it, that step is skipped and said so. The kernel runs on
cfuser's host backend, which emulates wgmma from its matrix descriptors (decoded as the
PTX ISA specifies them, independently of the lowering that builds them), so a wrong
descriptor field reads other elements and the result differs from the reference
evaluator, which every run is compared with. It runs on the GPU too where there is a
Hopper one. The last sections schedule the same linear for Blackwell's `tcgen05.mma`
(`sm_100a`), which one thread issues and which accumulates in tensor memory
(`tutorial/tmem.md` introduces it).
*/
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cfuser.h>

/*
The helpers: `printed` captures what a printing call writes, `expect_tv` compares a
tensor's printed domain.
*/
static char *printed_tv(cf_fusion *f, cf_tv *tv) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(cf_tv_print(f, tv, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  return buf;
}

static void expect_tv(cf_fusion *f, cf_tv *tv, const char *want) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  char *got = printed_tv(f, tv);
  cr_expect_str_eq(got, want);
  free(got);
}

static char *kernel_text(cf_fusion *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(cf_fusion_print_kernel(f, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  return buf;
}

/*
`run` compiles the fusion with NVRTC for `sm_90a` (`run_on` for another architecture;
where cfuser has NVRTC), runs it on a GPU of that architecture if there is one and on the
host backend otherwise, and compares `y` with the reference evaluator on the same random
inputs (bfloat16: 2% tolerance, the products are summed in float in another order).
*/
static bool have_nvrtc(void) {
  const char *why = NULL;
  bool ok = cf_nvrtc_available(&why);
  static bool said;
  if (!ok && !said) /* a note, not a warning: Criterion fails a run that logged a warning */
    printf("skipped: the NVRTC compiles (NVRTC unavailable: %s); the kernels run on the host backend\n", why);
  said = true;
  return ok;
}

static void run_on(cf_fusion *f, int64_t m, int64_t n, int64_t k, const char *arch) {
  const int64_t shape[2][2] = {{m, k}, {n, k}};
  cf_executor *e = NULL;
  bool gpu = false;
  if (have_nvrtc()) {
    e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = arch});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "NVRTC: %s", cf_executor_error(e));
    gpu = !cf_executor_compile_only(e);
  }
  if (!gpu) {
    cf_executor_destroy(e);
    e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    cr_assert_eq(cf_executor_compile(e, f), CF_OK, "host: %s", cf_executor_error(e));
  }
  DLManagedTensor *host[2], *dev[2] = {NULL, NULL}, *out = NULL, *ref = NULL;
  const DLTensor *in[2], *host_in[2];
  for (int i = 0; i < 2; i++) {
    const int64_t *sizes = shape[i];
    host[i] = cf_tensor_host(CF_BFLOAT16, 2, sizes);
    cf_tensor_fill_random(&host[i]->dl_tensor, 2024 + (uint64_t)i);
    in[i] = host_in[i] = &host[i]->dl_tensor;
    if (gpu) {
      dev[i] = cf_tensor_device(CF_BFLOAT16, 2, sizes);
      cf_tensor_copy(&dev[i]->dl_tensor, host_in[i]);
      in[i] = &dev[i]->dl_tensor;
    }
  }
  cr_assert_eq(cf_executor_run(e, 2, in, 1, &out), CF_OK, "%s", cf_executor_error(e));
  cr_assert_eq(cf_fusion_evaluate(f, 2, host_in, &ref), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *got = cf_tensor_host(CF_BFLOAT16, out->dl_tensor.ndim, out->dl_tensor.shape);
  cf_tensor_copy(&got->dl_tensor, &out->dl_tensor);
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&got->dl_tensor, &ref->dl_tensor, 2e-2, 2e-2, msg, sizeof msg),
            "the kernel disagrees with the evaluator: %s", msg);
  for (int i = 0; i < 2; i++) cf_tensor_free(host[i]), cf_tensor_free(dev[i]);
  cf_tensor_free(got), cf_tensor_free(out), cf_tensor_free(ref);
  cf_executor_destroy(e);
}

static void run(cf_fusion *f, int64_t m, int64_t n, int64_t k) { run_on(f, m, n, k, "sm_90a"); }

/*
## The product

`cf_linear(f, x, w, NULL)` builds what nvFuser's `linear` builds: both operands broadcast
to [M, N, K] (x along N, w along M), cast to float, multiplied, summed over K, and the sum
cast back to bfloat16. The tensors, in the order they are made: T2 and T4 the broadcasts
(they become the operand tiles), T3 and T5 the casts, T6 the product, T7 the sum (the
accumulator), T8 the output.
*/
typedef struct Linear {
  cf_fusion *f;
  cf_tv *x, *w, *xs, *x32, *ws, *w32, *prod, *acc, *y;
} Linear;

static Linear define_linear(int64_t m, int64_t n, int64_t k) {
  Linear l = {.f = cf_fusion_create()};
  l.x = cf_tensor_concrete(l.f, CF_BFLOAT16, 2, (int64_t[]){m, k});
  l.w = cf_tensor_concrete(l.f, CF_BFLOAT16, 2, (int64_t[]){n, k});
  cf_fusion_add_input(l.f, l.x);
  cf_fusion_add_input(l.f, l.w);
  l.y = cf_linear(l.f, l.x, l.w, NULL);
  cf_fusion_add_output(l.f, l.y);
  l.xs = cf_fusion_tv(l.f, 2), l.x32 = cf_fusion_tv(l.f, 3);
  l.ws = cf_fusion_tv(l.f, 4), l.w32 = cf_fusion_tv(l.f, 5);
  l.prod = cf_fusion_tv(l.f, 6), l.acc = cf_fusion_tv(l.f, 7);
  return l;
}

Test(MatmulTutorial, TheProduct) {
  Linear l = define_linear(256, 256, 128);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  cr_assert_eq(cf_fusion_print_math(l.f, m), CF_OK);
  fclose(m);
  cr_expect_str_eq(buf, "Inputs:\n"
                        "  T0_g___bfloat[iS0{256}, iS1{128}]\n"
                        "  T1_g___bfloat[iS2{256}, iS3{128}]\n"
                        "Outputs:\n"
                        "  T8_g___bfloat[iS22{256}, iS23{256}]\n"
                        "\n"
                        "%kernel_math {\n"
                        "T2_l___bfloat[iS4{256}, bS5{1}, iS6{128}]\n"
                        "   = broadcast( T0_g___bfloat[iS0{256}, iS1{128}], {false, true, false} );\n"
                        "T3_l_float[iS7{256}, bS8{1}, iS9{128}]\n"
                        "   = cast( T2_l___bfloat[iS4{256}, bS5{1}, iS6{128}], float );\n"
                        "T4_l___bfloat[bS10{1}, iS11{256}, iS12{128}]\n"
                        "   = broadcast( T1_g___bfloat[iS2{256}, iS3{128}], {true, false, false} );\n"
                        "T5_l_float[bS13{1}, iS14{256}, iS15{128}]\n"
                        "   = cast( T4_l___bfloat[bS10{1}, iS11{256}, iS12{128}], float );\n"
                        "T6_l_float[iS16{256}, iS17{256}, iS18{128}]\n"
                        "   = mul( T3_l_float[iS7{256}, bS8{1}, iS9{128}],\n"
                        "        T5_l_float[bS13{1}, iS14{256}, iS15{128}] );\n"
                        "T7_l_float[iS19{256}, iS20{256}, rS21{128}]\n"
                        "   = sum( T6_l_float[iS16{256}, iS17{256}, iS18{128}] );\n"
                        "T8_g___bfloat[iS22{256}, iS23{256}]\n"
                        "   = cast( T7_l_float[iS19{256}, iS20{256}, rS21{128}], __bfloat );\n"
                        "} // %kernel_math\n");
  free(buf);
  cf_fusion_destroy(l.f);
}

/*
## Step 1: block tiles

The accumulator's [M, N, K] split into 128 x 256 tiles of `y` and 64-wide tiles of K,
reordered so that the block's tile comes after the K-tile loop: [M/128, N/256, K/64, 128,
256, 64]. Propagated to every tensor, the tile indices go to blockIdx.y and blockIdx.x.
*/
static void block_tiles(Linear *l) {
  cf_split(l->f, l->acc, 2, 64);
  cf_split(l->f, l->acc, 1, 256);
  cf_split(l->f, l->acc, 0, 128); /* [M/128, 128, N/256, 256, K/64, 64] */
  cf_reorder(l->f, l->acc, 2, (int[]){1, 3, 3, 4});
  cf_propagate_transforms(l->f, l->acc);
  cf_parallelize(l->f, l->acc, 0, CF_PT_BIDY);
  cf_parallelize(l->f, l->acc, 1, CF_PT_BIDX);
  cf_parallelize_all_like(l->f, l->acc, 2, (cf_parallel_type[]){CF_PT_BIDY, CF_PT_BIDX});
}

/*
## Step 2: operand tiles in shared memory

At a K tile, a block reads x's 128 x 64 tile and w's 256 x 64 tile many times, so they
are staged in shared memory. wgmma reads its operands from there through a matrix
descriptor, which names a few canonical layouts; for K-contiguous ("K-major") tiles of
16-bit elements it is rows of 64 elements (128 bytes), their 16-byte chunks XOR-swizzled
by the row: chunk c of row r is stored at chunk c ^ (r % 8), the hardware's 128-byte
swizzle (CuTe's `Sw<3,4,3>` on byte addresses, `Sw<3,3,3>` on elements; layout/ computes
it, see `tutorial/layout.md`). The same swizzle makes the 8 rows a wgmma reads at once hit
all 32 banks.

A shared tensor's loop domain is its storage order, so the layout is made with transforms
of the tile itself: its [rows, 64] split into [rows / 8, 8, chunks{8}, 8], the row-in-8
and chunk axes XOR-swizzled (`cf_swizzle_xor`), everything merged back into one axis, and
that axis split over the block's 256 threads ([iterations, threadIdx.y{2},
threadIdx.x{128}]) in vectors of 8 elements: a vectorized copy of 16 bytes from global
memory into shared memory, which the lowering turns into `cp.async`.
*/
static void operand_tile(cf_fusion *f, cf_tv *t) {
  int p = 3;                          /* after [M/128, N/256, K/64] */
  cf_merge(f, t, p);                  /* the tile's rows and its broadcast: [.., rows, 64] */
  cf_split(f, t, p + 1, 8);           /* [.., rows, chunks{8}, 8] */
  cf_split(f, t, p, 8);               /* [.., rows / 8, 8, chunks{8}, 8] */
  cf_swizzle_xor(f, t, p + 1, p + 2); /* chunk ^= row % 8 */
  cf_merge(f, t, p);
  cf_merge(f, t, p);
  cf_merge(f, t, p);                  /* [.., rows * 64] in the swizzled order */
  cf_split(f, t, p, 8);               /* 16-byte vectors */
  cf_split(f, t, p, 256);             /* [.., iterations, 256, 8] */
  cf_split(f, t, p + 1, 128);         /* [.., iterations, 2, 128, 8] */
  cf_parallelize(f, t, p + 1, CF_PT_TIDY);
  cf_parallelize(f, t, p + 2, CF_PT_TIDX);
  cf_parallelize(f, t, p + 3, CF_PT_VECTORIZE);
  cf_set_memory_type(f, t, CF_MEM_SHARED);
}

/*
## Step 3: the instruction

`wgmma.mma_async.m64nNk16` is issued by a warpgroup (4 warps, 128 threads) together: it
multiplies a 64 x 16 tile of A by a 16 x N tile of B (N up to 256) into 64 x N floats
held in the 128 threads' registers. The block tile [128, 256, 64] becomes [warpgroup{2}
(threadIdx.y), K/16{4}, 64, 256, 16], and `cf_mma_tile` makes the last three one
instruction: its M axis becomes [threadIdx.x{128}, M-registers{2}] and N N-registers, the
accumulator's layout (PTX ISA, "wgmma .m64nNk16 register fragment layout"), so each
thread holds 128 of the floats.
*/
static void instruction(Linear *l) {
  cf_split(l->f, l->acc, 5, 16);               /* [.., 128, 256, 4, 16] */
  cf_split(l->f, l->acc, 3, 64);               /* [.., 2, 64, 256, 4, 16] */
  cf_reorder(l->f, l->acc, 1, (int[]){6, 4});  /* [.., 2, 4, 64, 256, 16] */
  cf_parallelize(l->f, l->acc, 3, CF_PT_TIDY);
  cf_mma_tile(l->f, l->acc, 5, CF_MMA_WGMMA_M64NK16);
}

/*
## Step 4: the rest follows the accumulator

The casts, the product and the output take the accumulator's transforms and thread
types (`cf_propagate_transforms_to`, `cf_parallelize_all_like`); then everything is
inlined as deep as it may be: the casts and the product into the instruction (which reads
the tiles itself), the output into the accumulator's registers, and the tiles at the
K-tile loop (position 3), where each K tile is loaded. The output's two register axes are
unrolled, so the accumulator stays in registers (wgmma writes them asynchronously; an
array the compiler put in local memory would not see those writes).
*/
static void follow(Linear *l) {
  cf_fusion *f = l->f;
  cf_propagate_transforms_to(f, l->acc, -1, 4, (cf_tv *[]){l->x32, l->w32, l->prod, l->y});
  cf_parallelize_all_like(f, l->acc, 3, (cf_parallel_type[]){CF_PT_TIDZ, CF_PT_TIDY, CF_PT_TIDX});
  cf_tv *deep[4] = {l->y, l->prod, l->w32, l->x32};
  for (int i = 0; i < 4; i++) cf_inline_at_best_effort(f, deep[i], cf_tv_naxes(deep[i]));
  cf_inline_at(f, l->ws, 3);
  cf_inline_at(f, l->xs, 3);
  int n = cf_tv_naxes(l->y);
  cf_parallelize(f, l->y, n - 2, CF_PT_UNROLL);
  cf_parallelize(f, l->y, n - 1, CF_PT_UNROLL);
}

/*
## Step 5: circular buffering

With one buffer per tile, the tensor cores wait for every K tile's load. Four stages
(`cf_circular_buffer`) load K tiles i + 1 .. i + 3 while tile i is multiplied: the first
three are loaded before the loop, and iteration i starts the load of tile i + 3 into the
stage tile i - 1 used, each stage's `cp.async` group waited for only when its tile is
needed (`cp.async.wait_group 2`).

Here is the whole schedule, and what each step made of the tensors:
*/
Test(MatmulTutorial, HopperLinear) {
  Linear l = define_linear(256, 256, 128);
  block_tiles(&l);
  expect_tv(l.f, l.acc,
            "T7_l_float[iblockIdx.y28{2}, iblockIdx.x26{1}, rS24{2}, iS29{128}, iS27{256}, rS25{64}]\n");
  operand_tile(l.f, l.xs);
  operand_tile(l.f, l.ws);
  expect_tv(l.f, l.xs,
            "T2_s___bfloat[iblockIdx.y48{2}, bblockIdx.x50{1}, iS52{2}, iS84{4}, ithreadIdx.y86{2}, "
            "ithreadIdx.x87{128}, iV83{8}]\n");
  expect_tv(l.f, l.ws,
            "T4_s___bfloat[bblockIdx.y54{1}, iblockIdx.x56{1}, iS58{2}, iS100{8}, ithreadIdx.y102{2}, "
            "ithreadIdx.x103{128}, iV99{8}]\n");
  instruction(&l);
  expect_tv(l.f, l.acc,
            "T7_l_float[iblockIdx.y28{2}, iblockIdx.x26{1}, rS24{2}, ithreadIdx.y106{2}, rS104{4}, "
            "ithreadIdx.x117{128}, iMMA115{2}, iMMA118{64}, rMMA105{16}]\n");
  follow(&l);
  expect_tv(l.f, l.y,
            "T8_g___bfloat[iblockIdx.y60{2}, iblockIdx.x62{1}, ithreadIdx.y164{2}, ithreadIdx.x175{128}, "
            "iUR169{2}, iUR176{64}] ca_pos( 6 )\n");
  cf_circular_buffer(l.f, l.xs, 4);
  cf_circular_buffer(l.f, l.ws, 4);
  cr_assert_eq(cf_fusion_status(l.f), CF_OK, "%s", cf_fusion_error(l.f));
  /*
  The kernel: the first three K tiles' loads before the loop; in the loop, a wait for the
  oldest group, the next load, the proxy fence (the tiles were written by `cp.async` and
  are read by wgmma's asynchronous proxy), a barrier, then each warpgroup's four wgmmas
  between `wgmma.fence` and `wgmma.commit_group`, and `wgmma.wait_group 0` before the
  barrier that lets the next load overwrite the stage. The descriptors' constant fields
  (leading and stride byte offsets, the 128-byte swizzle) are found by the lowering from
  the tiles' own index expressions (`lower/mma_wgmma.c`), not assumed:
  */
  char *k = kernel_text(l.f);
  static const char *const parts[] = {
      "extern \"C\" __global__ void __launch_bounds__(256) cfuser_kernel(",
      "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\"",
      "asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(2) : \"memory\");",
      "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");",
      "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");",
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
      "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");",
      "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(0) : \"memory\");",
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    cr_expect(strstr(k, parts[i]), "the kernel has no `%s`", parts[i]);
  free(k);
  run(l.f, 256, 256, 128);
  cf_fusion_destroy(l.f);
}

/*
## Sizes that are not multiples of the tiles

The same schedule on M = 200, N = 300, K = 136: the last block tiles and the last K tile
pass the ends. The lowering zero-fills the shared tiles where an operand is out of bounds
(a `cp.async` whose source size is 0 writes 16 zero bytes), so the instruction reads
whole tiles and the zeros add nothing; the output's stores are predicated. K must still
be a multiple of 8 here, for the 16-byte copies (the matmul scheduler copies one element
a thread otherwise).
*/
Test(MatmulTutorial, HopperLinearOddSizes) {
  Linear l = define_linear(200, 300, 136);
  block_tiles(&l);
  operand_tile(l.f, l.xs);
  operand_tile(l.f, l.ws);
  instruction(&l);
  follow(&l);
  cf_circular_buffer(l.f, l.xs, 4);
  cf_circular_buffer(l.f, l.ws, 4);
  cr_assert_eq(cf_fusion_status(l.f), CF_OK, "%s", cf_fusion_error(l.f));
  run(l.f, 200, 300, 136);
  cf_fusion_destroy(l.f);
}

/*
## What the scheduler adds

Define and run does all of the above for you (`cf_fusion_execute` on a Hopper GPU, or
with a device description whose compute capability is 9.0), and more: an operand that is
a fusion input read directly gets a copy to be its tile, an M- or N-contiguous operand
(B of `cf_matmul`'s [K, N]) is stored MN-major (the transpose bit of the descriptor),
casts, bias and activation after the sum are fused as the epilogue, and a problem of a
few rows takes a narrower block tile so that more SMs get a block, and one K tile's wgmmas
stay in flight while the next K tile's issue: the tiles are filled two K tiles ahead
instead of three (`cf_circular_buffer_prefetch(f, tile, 4, 2)`), which leaves the stage
the pending wgmmas read untouched, so the loop waits with `wgmma.wait_group 1` and only
the epilogue waits for all (15-30% faster on an H200 than the schedule above). Tiles
that are plain copies of their inputs are filled by TMA (`cf_tma_load`: one thread issues
each tile's boxes, which `lower/tma.c` finds from the tile's layout, above: the 128-byte
swizzled rows are exactly what a TMA box with the 128-byte swizzle writes), their readers
waiting on an mbarrier per stage instead of a `__syncthreads`; a producer warpgroup
(`cf_warp_specialize(f, tile, CF_PT_TIDY)`: threadIdx.y 2, 384 threads) issues them on
its own, the two compute warpgroups releasing each stage after the wgmma wait that
retires it; the epilogue stores a thread's two adjacent columns as one vector, and when B
is larger than the L2 consecutive blocks take 16 M tiles of one N tile (bf16 8192^3 at
0.93x cuBLAS on an H200, 4096^3 at 0.88x). Still to come: split-K.

## On Blackwell: `tcgen05.mma`

Blackwell (`sm_100a`) has a new instruction, `tcgen05.mma.cta_group::1.kind::f16`: one
thread issues it, it reads A (128 x 16) and B (16 x N, N a multiple of 16 up to 256) from
shared memory through descriptors in the same canonical layouts as wgmma's, and it
accumulates the 128 x N floats in **tensor memory**, row m in lane m and column n in
column n, not in registers. Steps 1 and 2 stay as they are (the tiles' layout is the
one its descriptors name too); step 3 puts the accumulator in tensor memory, whole: its
block tile [128, 256] split by nothing, the 16 of K outside, the dim-sep position
between the M and N tiles, so its lanes are the tile's rows and its columns the tile's
columns:
*/
static void tcgen05_instruction(Linear *l) {
  cf_fusion *f = l->f;
  cf_split(f, l->acc, 5, 16);                  /* [.., 128, 256, 4, 16] */
  cf_reorder(f, l->acc, 1, (int[]){5, 3});     /* [.., 4, 128, 256, 16] */
  cf_set_memory_type(f, l->acc, CF_MEM_TENSOR);
  cf_set_allocation_to_loop(f, l->acc, true);
  cf_set_tmem_dim_sep_pos(f, l->acc, -3);      /* lanes | columns: [.., 128 | 256, 16] */
  cf_mma_tile(f, l->acc, 4, CF_MMA_TCGEN05_M128NK16);
}

/*
The instruction's axes stay as they are, on MMA: no thread holds a part of the
accumulator. Nothing but a copy into registers reads tensor memory (`tcgen05.ld`), so
the accumulator gets one (`cf_cache_after`), and the epilogue is scheduled from it with
tensor memory's rule for such a copy (`tcgen05.ld.32x32b`: thread l of warp w reads lane
32 (w % 4) + l, the warp's 32 threads the same columns): [128 rows (threadIdx.x), 256
columns split [2 (threadIdx.y), 4, 32]], each thread reading 32 columns of its row at a
time (the copy's innermost 32 vectorized: `.x32`), the two warpgroups one half of the
columns each. The casts and the product follow the accumulator, as before; the copy is
inlined into the output's loop of 32 columns, so a thread holds 32 floats, not 256.
*/
static cf_tv *tcgen05_follow(Linear *l) {
  cf_fusion *f = l->f;
  cf_propagate_transforms_to(f, l->acc, -1, 3, (cf_tv *[]){l->x32, l->w32, l->prod});
  cf_tv *reg = cf_cache_after(f, l->acc);        /* [M/128, N/256, 128, 256] */
  cf_split(f, reg, 3, 128);
  cf_split(f, reg, 4, 32);                       /* [.., 128, 2, 4, 32] */
  cf_propagate_transforms_to(f, reg, -1, 1, (cf_tv *[]){l->y});
  cf_tv *epi[2] = {reg, l->y};
  for (int i = 0; i < 2; i++) {
    cf_parallelize(f, epi[i], 0, CF_PT_BIDY);
    cf_parallelize(f, epi[i], 1, CF_PT_BIDX);
    cf_parallelize(f, epi[i], 2, CF_PT_TIDX);
    cf_parallelize(f, epi[i], 3, CF_PT_TIDY);
  }
  cf_parallelize(f, reg, 5, CF_PT_VECTORIZE);
  cf_tv *deep[5] = {l->y, reg, l->prod, l->w32, l->x32};
  for (int i = 0; i < 5; i++) cf_inline_at_best_effort(f, deep[i], cf_tv_naxes(deep[i]));
  cf_inline_at_best_effort(f, l->acc, cf_tv_naxes(l->acc)); /* at the block tile: K's loops are its own */
  cf_inline_at(f, l->ws, 3);
  cf_inline_at(f, l->xs, 3);
  return reg;
}

/*
The lowering (`lower/mma_tcgen05.c`) makes each 16 of K one instruction, issued by thread
0 into the accumulator's tensor-memory address, with `enable-input-d` false on the first K
step (D = A x B there: the sum needs no zeroing, and gets none); after a K tile's four,
thread 0 commits them to an mbarrier (`tcgen05.commit`), whose phase every thread waits
for before the stage is refilled and, after the last K tile, before the epilogue reads
the accumulator. Tensor memory is allocated at the kernel's start and freed at its end
(`tcgen05.alloc`, 256 columns). The host backend performs the instructions when their
commit's barrier is waited for, reading the operands through the descriptors as the
hardware would, so a missing wait or a wrong descriptor shows as an error or a wrong `y`:
*/
Test(MatmulTutorial, BlackwellLinear) {
  Linear l = define_linear(256, 256, 128);
  block_tiles(&l);
  operand_tile(l.f, l.xs);
  operand_tile(l.f, l.ws);
  tcgen05_instruction(&l);
  expect_tv(l.f, l.acc,
            "T7_t_float[iblockIdx.y28{2}, iblockIdx.x26{1}, rS24{2}, rS104{4}, iMMA29{128}, iMMA27{256}, "
            "rMMA105{16}]\n");
  cf_tv *reg = tcgen05_follow(&l);
  expect_tv(l.f, reg,
            "T9_l_float[iblockIdx.y114{2}, iblockIdx.x116{1}, ithreadIdx.x115{128}, ithreadIdx.y118{2}, iS120{4}, "
            "iV121{32}] ca_pos( 5 ) produce_pos( 2 )\n");
  cf_circular_buffer(l.f, l.xs, 4);
  cf_circular_buffer(l.f, l.ws, 4);
  cr_assert_eq(cf_fusion_status(l.f), CF_OK, "%s", cf_fusion_error(l.f));
  char *k = kernel_text(l.f);
  static const char *const parts[] = {
      "extern \"C\" __global__ void __launch_bounds__(256) cfuser_kernel(",
      "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\" :: \"r\"((uint32_t)__cvta_generic_to_shared("
      "tmem_slot0)), \"r\"(256u)",
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;",
      "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];",
      "cf_mbar_wait(&T7_mma_bar0[0], (unsigned)((i0 % 2)));",
      "tcgen05.ld.sync.aligned.32x32b.x32.b32",
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    cr_expect(strstr(k, parts[i]), "the kernel has no `%s`", parts[i]);
  free(k);
  run_on(l.f, 256, 256, 128, "sm_100a");
  cf_fusion_destroy(l.f);
}

/*
In define and run, the matmul row schedules this for a Blackwell device (compute
capability 10.0; `scheduler/matmul_tcgen05.c`): a block tile of 128 x 128 x 64 and 128
threads, the epilogue (bias, activation, casts) on 32 columns of a row a thread at a
time. Nothing of it has been measured on a Blackwell GPU yet; TMA loads, a producer warp
and instructions in flight across K tiles are its next steps, as they were on Hopper.
*/
