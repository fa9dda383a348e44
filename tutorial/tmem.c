/*
> [!NOTE]
> This file is both C and Markdown: `tutorial/tmem.c` is a Criterion test suite, and
> `tutorial/tmem.md` is rendered from it by `tools/render_tutorial.py`. Every test shown
> here runs in cfuser's test suite (`ctest -R tutorial_tmem`).

# Tensor Memory Support in cfuser

This tutorial is a port, test for test, of nvFuser's tensor-memory tutorial
(`doc/dev/tmem.md`) to cfuser's C API. Where nvFuser writes
`tv2->setMemoryType(MemoryType::Tensor)`, cfuser writes
`cf_set_memory_type(f, tv2, CF_MEM_TENSOR)`; `KernelExecutor` is `cf_executor`, and
`scheduler_utils::parallelizeAllLike(tv4)` is `cf_parallelize_all_like(f, tv4, 0, NULL)`.

Kernels that use tensor memory need a Blackwell GPU (`sm_100a`). Every valid example is
compiled by NVRTC into an `sm_100a` cubin, which needs no GPU. If the machine has a GPU
of compute capability 10.0, the example runs there. Otherwise it runs on cfuser's host
backend, which emulates the GPU on the CPU, tensor memory included, and enforces the
same hardware rules at run time. Either way the output is compared with cfuser's
reference evaluator.

To see prints in the test, change below to `true`:
*/
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cfuser.h>

static const bool verbose = false;

/*
The helpers below are the plumbing the C++ tests get from their fixtures. Every
tensor-memory example compiles for Blackwell with these options:
*/
static const cf_executor_options blackwell = {.backend = CF_BACKEND_CUDA, .arch = "sm_100a"};

/*
A random host tensor, like `at::rand(sizes)`:
*/
static DLManagedTensor *rand_tensor(cf_dtype dtype, int rank, const int64_t *sizes) {
  DLManagedTensor *t = cf_tensor_host(dtype, rank, sizes);
  cr_assert_not_null(t);
  cf_tensor_fill_random(&t->dl_tensor, 2025);
  return t;
}

/*
`run` is `ke.run({t0})[0]`: it runs a compiled executor on one host input, copying
through the GPU when the executor was compiled for one, and returns the output as a
host tensor. It also checks the output against the reference evaluator.
*/
static DLManagedTensor *to_host(cf_dtype dtype, const DLTensor *t) {
  DLManagedTensor *h = cf_tensor_host(dtype, t->ndim, t->shape);
  cr_assert_not_null(h);
  cr_assert_eq(cf_tensor_copy(&h->dl_tensor, t), CF_OK);
  return h;
}

static DLManagedTensor *run(cf_executor *e, cf_fusion *f, DLManagedTensor *t0) {
  const DLTensor *in = &t0->dl_tensor;
  DLManagedTensor *dev = NULL, *out = NULL;
  if (cf_executor_backend(e) == CF_BACKEND_CUDA) {
    dev = cf_tensor_device(cf_tv_dtype(cf_fusion_input(f, 0)), in->ndim, in->shape);
    cr_assert_not_null(dev);
    cr_assert_eq(cf_tensor_copy(&dev->dl_tensor, in), CF_OK);
    in = &dev->dl_tensor;
  }
  cr_assert_eq(cf_executor_run(e, 1, &in, 1, &out), CF_OK, "run failed: %s", cf_executor_error(e));
  if (dev) {
    DLManagedTensor *h = to_host(cf_tv_dtype(cf_fusion_output(f, 0)), &out->dl_tensor);
    cf_tensor_free(out);
    cf_tensor_free(dev);
    out = h;
  }
  DLManagedTensor *ref = NULL;
  const DLTensor *host_in = &t0->dl_tensor;
  cr_assert_eq(cf_fusion_evaluate(f, 1, &host_in, &ref), CF_OK, "%s", cf_fusion_error(f));
  cr_expect(cf_tensor_equal(&out->dl_tensor, &ref->dl_tensor), "the kernel disagrees with the reference evaluator");
  cf_tensor_free(ref);
  return out;
}

/*
`expect_equal(out, t0)` is `EXPECT_TRUE(at::equal(out, t0))`; it frees both.
*/
static void expect_equal(DLManagedTensor *out, DLManagedTensor *t0) {
  cr_expect(cf_tensor_equal(&out->dl_tensor, &t0->dl_tensor), "the output differs from the input");
  cf_tensor_free(out);
  cf_tensor_free(t0);
}

/*
`compile_blackwell` compiles for `sm_100a`. If that produced a kernel this machine can
run (a GPU of compute capability 10.0), it returns that executor. Otherwise it checks
that NVRTC accepted the code, keeps the source for inspection, and returns an executor
of the host backend. Where NVRTC is missing (no CUDA toolkit), it keeps the CUDA kernel's
text and returns the host backend's executor, which sees the same lowering.
*/
static char *cuda_kernel_text(cf_fusion *f) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  cr_assert_eq(cf_fusion_print_kernel(f, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  return text;
}

static cf_executor *compile_blackwell(cf_fusion *f, cf_lowering_hook hook, void *user, char **cuda_source) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  const char *why = NULL;
  if (!cf_nvrtc_available(&why)) { /* no CUDA toolkit: the host backend alone */
    cr_log_info("NVRTC unavailable (%s): the sm_100a compile is skipped", why);
    if (cuda_source) *cuda_source = cuda_kernel_text(f);
    cf_executor *h = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    if (hook) cf_executor_set_lowering_hook(h, hook, user);
    cr_assert_eq(cf_executor_compile(h, f), CF_OK, "compile for the host backend failed: %s", cf_executor_error(h));
    return h;
  }
  cf_executor *e = cf_executor_create(&blackwell);
  if (hook) cf_executor_set_lowering_hook(e, hook, user);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "compile for sm_100a failed: %s", cf_executor_error(e));
  if (cuda_source) *cuda_source = strdup(cf_executor_source(e));
  if (!cf_executor_compile_only(e)) return e; /* this GPU is a Blackwell */
  cf_executor_destroy(e);
  cf_executor_options host = {.backend = CF_BACKEND_HOST};
  e = cf_executor_create(&host);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "compile for the host backend failed: %s", cf_executor_error(e));
  return e;
}

/*
A compile error is checked the way the C++ tests use `EXPECT_THAT(..., ThrowsMessage)`:
*/
static void expect_compile_error(cf_fusion *f, const char *message) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&blackwell);
  cr_expect_neq(cf_executor_compile(e, f), CF_OK, "compiling should fail with: %s", message);
  cr_expect_str_eq(cf_executor_error(e), message);
  cf_executor_destroy(e);
}

static void expect_compile_error_prefix(cf_fusion *f, const char *prefix) {
  cr_assert_eq(cf_fusion_status(f), CF_OK, "scheduling failed: %s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(&blackwell);
  cr_expect_neq(cf_executor_compile(e, f), CF_OK, "compiling should fail with: %s", prefix);
  cr_expect(strncmp(cf_executor_error(e), prefix, strlen(prefix)) == 0, "got: %s", cf_executor_error(e));
  cf_executor_destroy(e);
}

/*
Tensor memory is new a memory type added in the Blackwell architecture.
Similar to shared memory, it is a memory in the SM that is accessible by threads
in the CTA. Although there are many differences between tensor memory and shared
memory, the fact that they are shared by threads and distributed across
different CTAs makes the behavior of tensor memory similar to shared memory when
talking about allocation and how it is affected by inlining and parallelization.

Before diving deep into tensor memory, let's first do a quick review of inlining
and parallelization, and how they impact allocation and indexing. This review
will give us a rough idea of how tensor memory should behave.

## Review of inlining and parallelization

Let's consider a simple gmem->smem->gmem copy kernel. Let's look at the kernels
with different inlining and parallelization strategies. The six variants share
everything but the schedule, so the test runs each through one helper; `smem` is
`ke.lastLaunchParams().smem()`:
*/
typedef enum Schedule { NONE = 0, BIDX_AXIS1 = 1, INLINE_AT_1 = 2, TIDX_AXIS0 = 4 } Schedule;

static void gsg_copy(int schedule, int64_t expected_smem) {
  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 2, (int64_t[]){2, 4});

  cf_fusion *f = cf_fusion_create();
  cf_tv *tv0 = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_fusion_add_input(f, tv0);
  cf_tv *tv1 = cf_set(f, tv0);
  cf_tv *tv2 = cf_set(f, tv1);
  cf_fusion_add_output(f, tv2);

  cf_set_memory_type(f, tv1, CF_MEM_SHARED);
  if (schedule & INLINE_AT_1) cf_inline_at(f, tv1, 1);
  if (schedule & TIDX_AXIS0) {
    cf_parallelize(f, tv1, 0, CF_PT_TIDX);
    cf_parallelize(f, tv2, 0, CF_PT_TIDX);
  }
  if (schedule & BIDX_AXIS1) {
    cf_parallelize(f, tv1, 1, CF_PT_BIDX);
    cf_parallelize(f, tv2, 1, CF_PT_BIDX);
  }

  if (verbose) cf_fusion_print_kernel(f, stdout);

  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cf_executor *e = cf_executor_create(NULL);
  cr_assert_eq(cf_executor_compile(e, f), CF_OK, "%s", cf_executor_error(e));
  DLManagedTensor *out = run(e, f, t0);
  cr_expect_eq(cf_executor_last_launch_params(e).smem, expected_smem);
  expect_equal(out, t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

Test(ReviewInliningParallelization, GSGCopy) {
  // Naive copy kernel, no inlining, no parallelization.
  // T1 is allocated in full size.
  gsg_copy(NONE, 8 * sizeof(float));

  // No inlining, has BIDx parallelization.
  // Because smem is distributed across different CTAs, only the first
  // dimension of T1 is allocated.
  gsg_copy(BIDX_AXIS1, 2 * sizeof(float));

  // Inline at 1, no parallelization.
  // Because the first dimension of T1 is inlined, inside the outer loop, T1
  // is consumed right after it is produced. So the first dimension of T1 is
  // not allocated.
  gsg_copy(INLINE_AT_1, 4 * sizeof(float));

  // Inline at 1, with BIDx parallelization.
  // Due to inlining, the first dimension of T1 is not allocated. Due to
  // BIDx parallelization, the second dimension of T1 is not allocated. So T1
  // is only allocated in size 1.
  gsg_copy(INLINE_AT_1 | BIDX_AXIS1, 1 * sizeof(float));

  // Inline at 1, with TIDx parallelization.
  // Although the first dimension of T1 is inlined, because shared memory is
  // shared by threads, the TIDx parallelization will override the inlining,
  // and make the first dimension of T1 allocated. The second dimension of T1
  // is allocated normally because it is on the right of the compute-at
  // position. So T1 is allocated in full size.
  gsg_copy(INLINE_AT_1 | TIDX_AXIS0, 8 * sizeof(float));

  // Inline at 1, with TIDx and BIDx parallelization.
  // Although the first dimension of T1 is inlined, because shared memory is
  // shared by threads, the TIDx parallelization will override the inlining,
  // and make the first dimension of T1 allocated. The second dimension of T1
  // is not allocated due to BIDx parallelization. So T1 is allocated in
  // size 2.
  gsg_copy(INLINE_AT_1 | TIDX_AXIS0 | BIDX_AXIS1, 2 * sizeof(float));
}

/*
From the above example, we can see that:
1. If the memory type of a tensor is distributed across a parallel type, then
   IterDomains with this parallel type are not allocated, regardless of
   the tensor's compute-at position.
2. If the memory type of a tensor is shared among a parallel type, then
   IterDomains with this parallel type are always allocated, regardless of
   the tensor's compute-at position.
3. Except for the above two rules, the allocation of a tensor is determined by
   its compute-at position. IterDomains on the right of the compute-at position
   are allocated, while IterDomains on the left of the compute-at position are
   not allocated.

Tensor memory is similar to shared memory, that is, it is distributed across
`BIDx`, `BIDy`, `BIDz`, `DIDx`, `DIDy`, and `DIDz`, and shared across `TIDx`,
`TIDy`, and `TIDz`. So the above rules applies to tensor memory the same way
as they do to shared memory.

## Tensor memory

NVIDIA's official document for tensor memory can be found
[here](https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tensor-memory).

Unlike any other memory type that we commonly see in computer architecture, the
addresses of tensor memory do not form a linear space. Instead, the addresses
of tensor memory are two-dimensional, and the two dimensions are called `row`
(or `lane`) and `column`.

![Tensor-Memory-Layout](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tensor-memory-layout.png)

In cfuser, as in nvFuser, the allocation domain is the domain that specifies how
a tensor is allocated in memory. For all other memory types, because these memory
types are linear spaces, the allocation domain is just a vector of `IterDomain`s.
But for tensor memory, because it is 2D, the allocation domain is a vector of
`IterDomain`s plus a position that splits the vector into two parts: the left
part specifies the lane, and the right part specifies the column. The position
is called *Tensor Memory Dimension Separator Position*, or *TMem DimSep
Position* in short, and is set with `cf_set_tmem_dim_sep_pos`.

In practice, to support some MMA shapes, we might want to allocate a tensor in
tensor memory like the figure below:

![TMEM-Allocation-Example](tmem/alloc-example.svg)

That is, the tensor is not a contiguous rectangle in tensor memory, but instead,
is strided in the row dimension. Because cfuser already supports strided
allocation of global memory tensors, the concepts in that space easily extend to
tensor memory:

The TMem dimsep position does not only apply to the allocation domain, but also
applies to contiguity and stride. The contiguity and stride on the left of the
TMem dimsep position are for the lane, and the contiguity and stride on the
right are for the column.

In the above example, the allocation domain, contiguity, and stride of the
tensor could be:

```text
allocation domain: [ BIDx,  4, 16, | , BIDy, 8 ]
       contiguity: [    ?,  F,  T, | ,    ?, T ]
           stride: [    ?, 32,  1, | ,    ?, 1 ]
```

It worth noting that, because the tensor memory is distributed across `BIDx` and
`BIDy`, IterDomains with these parallel types are not allocated. So whether
these IterDomains are on the left or right of the TMem dimsep position does not
matter. The value of their contiguity and stride does not matter either (The `?`
in the above example).

Also, please note that the term "row", "lane" and "column" when referring to the
memory layout of tensor memory are not related to the "row" and "column" of the
tensor itself. We can store an arbitrary part of the tensor in an arbitrary form
in tensor memory. That is, in the language of cfuser, the logical domain of a
TMem TensorView and the allocation domain of that TensorView can have arbitrary
transformations between them. The important thing is not the transformation
between the logical domain and the allocation domain, but the transformation
between the allocation domain and the loop domain, which specifies how we access
tensor memory in the kernel.

Now let's take a look at a few code examples of invalid tensor memory
allocation. Valid examples will be discussed in the next section. For all
valid and invalid examples, we will be looking at
gmem->register->tmem->register->gmem copy kernels. Note that there is no
data path between gmem and tmem, so we have to use registers as transfer
station. This helper builds that chain, `tv0` to `tv4`, with `tv2` in tensor memory:
*/
static cf_fusion *tmem_copy(cf_dtype dtype, int rank, const int64_t *sizes, cf_tv *tv[5]) {
  cf_fusion *f = cf_fusion_create();
  tv[0] = sizes ? cf_tensor_concrete(f, dtype, rank, sizes) : cf_tensor_symbolic(f, dtype, rank);
  cf_fusion_add_input(f, tv[0]);
  tv[1] = cf_set(f, tv[0]);
  tv[2] = cf_set(f, tv[1]);
  tv[3] = cf_set(f, tv[2]);
  tv[4] = cf_set(f, tv[3]);
  cf_fusion_add_output(f, tv[4]);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  return f;
}

Test(TMemTutorialC, TooManyLanes) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 7, (int64_t[]){2, 3, 5, 7, 11, 13, 17}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDY);
  cf_parallelize_all_like(f, tv[4], 0, NULL);
  cf_inline_all_at(f, tv[4], 3);

  cf_set_tmem_dim_sep_pos(f, tv[2], -2);

  // Tries to allocate (429, 17) for tv2.
  expect_compile_error(f, "Not enough tensor memory lanes: tried to allocate 429, but only 128 available.");
  cf_fusion_destroy(f);
}

/*
In the above example, the fusion is scheduled as:
```text
[BIDx{2}, TIDx{3}, 5, (CA), BIDy{7}, TIDy{11}, 13, (DimSep), 17]
```
(Note that, when the allocation domain is not set, cfuser takes the loop domain as
the allocation domain of an intermediate tensor)

Because 2 and 7 are parallelized on `BID`s, they are not allocated. Because 3
and 11 are parallelized on `TID`s, they are allocated. Because 5 is on the left
of the compute-at position, it is not allocated. Because 13 and 17 is on the right
of the compute-at position, it is allocated. So the total number of lanes required
for this tensor is: `3 * 11 * 13 = 429`, which is larger than the total available
lanes `128`.

Now let's take a look at another example:
*/
Test(TMemTutorialC, TooManyCols) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 7, (int64_t[]){32, 3, 5, 7, 11, 13, 17}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 5, CF_PT_TIDZ);
  cf_parallelize_all_like(f, tv[4], 0, NULL);
  cf_inline_all_at(f, tv[4], 4);

  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  // Tries to allocate (32, 1105) for tv2.
  expect_compile_error(f, "Not enough tensor memory columns: tried to allocate 1105, but only 512 available.");
  cf_fusion_destroy(f);
}

/*
In the above example, the fusion is scheduled as:
```text
[TIDx{32}, (DimSep), BIDx{3}, TIDy{5}, 7, (CA), BIDy{11}, TIDz{13}, 17]
```

Because 3 and 11 are parallelized on `BID`s, they are not allocated. Because
32, 5, and 13 are parallelized on `TID`s, they are allocated. Because 7 is on
the left of the compute-at position, it is not allocated. Because 17 is on the
right of the compute-at position, it is allocated. So the total number of
columns required for this tensor is: `5 * 13 * 17 = 1105`, which is larger than
the total available columns `512`.

## The loop domain of TMem load and store

In cfuser, as in nvFuser, the loop structure, parallelization and compute-at
strategy of an expression is determined by the loop domain of the output of the
expression. Unlike shared memory, which allows threads to access it arbitrarily, tensor
memory must be accessed in a specific way. That is, the transformations between
the allocation domain of the TMem TensorView and the loop domain of the consumer
of the TMem accessing expression must satisfy specific patterns. That is, for
the case of a TMem store `T0_r -> T1_t`, `T1_t`'s loop domain and allocation
domain must satisfy specific patterns. For the case of a TMem load `T0_t ->
T1_r`, the loop domain of `T1_r` and allocation domain of `T0_t` must satisfy
specific patterns.

The TMem<->register transfer are warp-collective operations, and the threads in
a warp must access the tensor memory in a specific way.
The specific patterns of TMem<->register transfer is specified in the
[PTX-documentation](https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#tcgen05-memory-layout).
These patterns are:

<details>
<summary>32x32b:</summary>

![32x32b](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tcgen05-mma-fragment-3232b.png)
</details>

<details>
<summary>16x64b:</summary>

![16x64b](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tcgen05-mma-fragment-1664b.png)
</details>

<details>
<summary>16x128b:</summary>

![16x128b](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tcgen05-mma-fragment-16128b.png)
</details>


<details>
<summary>16x256b:</summary>

![16x256b](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tcgen05-mma-fragment-16256b.png)
</details>


<details>
<summary>16x32bx2:</summary>

![16x32bx2](https://docs.nvidia.com/cuda/parallel-thread-execution/_images/tcgen05-mma-fragment-1632b2.png)
</details>

cfuser implements the 32x32b pattern: thread `l` of a warp accesses lane
`base + l` of 32 consecutive lanes, at the same columns as the other threads of its
warp.

Besides threads in a warp must satisfy specific pattern, another restriction of
the TMem<->register transfer is: not all warps can access all lanes of the tensor
memory. The entire 128 lanes of the tensor memory is divided into 4
subpartitions, each has 32 lanes. The warp `i` can only access the subpartition
`i % 4`.

With the above restrictions in mind, let's take a look at a few examples of how
NOT to schedule TMem load and store:
*/
Test(TMemTutorialC, NotWarpCollective) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){16, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  expect_compile_error(f, "Invalid data access pattern in TMem load/store: TMem load/store must be warp-collective, "
                          "but the innermost extent is not a multiple of 32.");
  cf_fusion_destroy(f);
}

/*
The above example is invalid because there are only 16 threads in the kernel.
Warp collective operations require at least a whole warp to run.
*/
Test(TMemTutorialC, NotContiguous) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 3, (int64_t[]){64, 2, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 2);

  expect_compile_error(f, "Invalid data access pattern in TMem load/store: Warp linearly accessing lanes, but not "
                          "with stride 1.");
  cf_fusion_destroy(f);
}

/*
The above example is invalid because the tensor memory is not accessed in any of
the specified pattern. In the above example, because the lane allocation domain is
`[TIDx{64}, TIDy{2}]`, where `TIDx` is not the innermost, threads in a warp access
lanes of the tensor memory in a stride-2 manner, while all the specified
patterns requires the warp to access a contiguous 32 or 16 lanes of data
.
*/
Test(TMemTutorialC, OneLane) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){32, 32}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  // The message goes on with why each data path does not match, one per line.
  expect_compile_error_prefix(f, "Invalid data access pattern in TMem load/store: ");
  cf_fusion_destroy(f);
}

/*
The above example is invalid because the tensor memory is not accessed in any of
the specified pattern. In the above example, each warp access one lane and 32
columns of the tensor memory, while all the specified patterns requires the warp
to access a contiguous 32 or 16 lanes of data.
*/
Test(TMemTutorialC, WrongSubpartition) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 4, (int64_t[]){2, 2, 32, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 3);

  expect_compile_error(f, "Invalid data access pattern in TMem load/store: Warps are not accessing the correct "
                          "sub-partition.");
  cf_fusion_destroy(f);
}

/*
The above example is invalid because the warp accesses the wrong subpartition of
the tensor memory. In the above example, there are two warps, where warp 0
accesses the subpartition 0 and 1, and warp 1 accesses the subpartition 2 and 3.
However, warp 0 can only access subpartition 0, and warp 1 can only access
subpartition 1.
*/
Test(TMemTutorialC, WrongSubpartition2) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){32, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  expect_compile_error(f, "Invalid data access pattern in TMem load/store: Warps are not accessing the correct "
                          "sub-partition.");
  cf_fusion_destroy(f);
}

/*
The above example is also invalid because the warp accesses the wrong subpartition.
In the above example, there are two warps, both accessing subpartition 0, which
is not allowed.

Now, let's take a look at some valid examples. Each compiles into a kernel of one
`tcgen05.st` and one `tcgen05.ld` per element (`.x1`), which this check looks for in
the CUDA source:
*/
static void expect_ptx(const char *source, int st_words, int ld_words) {
  char st[96], ld[96];
  snprintf(st, sizeof st, "tcgen05.st.sync.aligned.32x32b.x%d.b32", st_words);
  snprintf(ld, sizeof ld, "tcgen05.ld.sync.aligned.32x32b.x%d.b32", ld_words);
  cr_expect(strstr(source, st) != NULL, "the kernel has no %s", st);
  cr_expect(strstr(source, ld) != NULL, "the kernel has no %s", ld);
}

/*
and this one compiles, runs and compares a whole example with its input:
*/
static void expect_copy(cf_fusion *f, int rank, const int64_t *sizes) {
  char *source = NULL;
  cf_executor *e = compile_blackwell(f, NULL, NULL, &source);
  expect_ptx(source, 1, 1);
  free(source);

  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, rank, sizes);
  DLManagedTensor *out = run(e, f, t0);
  expect_equal(out, t0);
  cf_executor_destroy(e);
}

Test(TMemTutorialR, WarpXYZ) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 4, (int64_t[]){2, 4, 4, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDZ);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 3);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  expect_copy(f, 4, (int64_t[]){2, 4, 4, 2});
  cf_fusion_destroy(f);
}

/*
In the above example, each CTA only has one warp, and this warp is split into
TIDz, TIDy, and TIDx. The above kernel uses a loop of 2, where each iteration
accesses a 32x1 box of the tensor memory. This is a valid 32x32b pattern
.
*/
Test(TMemTutorialR, WarpGroupXYZ) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 4, (int64_t[]){2, 8, 8, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDZ);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDX);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 3);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  expect_copy(f, 4, (int64_t[]){2, 8, 8, 2});
  cf_fusion_destroy(f);
}

/*
In the above example, each CTA has one warp group (a group of 4 consecutive warps).
This entire warp group is accessing a whole column, with each warp accessing its
subpartition of 32 lanes. This is a valid 32x32b pattern.
*/
Test(TMemTutorialR, WarpGroupXYColZ) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 3, (int64_t[]){8, 16, 8}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDZ);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 2);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  expect_copy(f, 3, (int64_t[]){8, 16, 8});
  cf_fusion_destroy(f);
}

/*
In the above example, each CTA has 8 warp groups, each warp group accesses a
whole column. Warp group `i` is accessing column `i`.
This is a valid 32x32b pattern.
*/
Test(TMemTutorialR, WarpGroupXColYZ) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 3, (int64_t[]){128, 2, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDZ);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  expect_copy(f, 3, (int64_t[]){128, 2, 2});
  cf_fusion_destroy(f);
}

/*
In the above example, each CTA has 4 warp groups, each warp group accesses a
whole column. The warp group id and the column each warp group accesses are
shown in the table below:

| Warp Group | 0 | 1 | 2 | 3 |
|------------|---|---|---|---|
| Column     | 0 | 2 | 1 | 3 |

This is a valid 32x32b pattern.
*/
Test(TMemTutorialR, X1WarpGroupYColZ) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 3, (int64_t[]){1, 128, 2}, tv);

  cf_parallelize(f, tv[4], 0, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDZ);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  cf_set_tmem_dim_sep_pos(f, tv[2], 2);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  expect_copy(f, 3, (int64_t[]){1, 128, 2});
  cf_fusion_destroy(f);
}

/*
In the above example, each CTA has 2 warp groups, each warp group accesses a
whole column. Warp group `i` is accessing column `i`. This is a valid 32x32b
pattern. Note that although the order of `TIDx` and `TIDy` seems wrong, it
does not matter because the size of `TIDx` is just 1.

Now, let's take a look at a few more complicated examples that puts a lot
of what we have learned so far into practice.

First, to show that the logical domain and the allocation domain are independent,
we will XOR swizzle the logical domain in a very complicated fashion. What we
want to show is, the row and column of the tensor memory are not related to the
row and column of the tensor itself, and we have the freedom to choose to place
which items of the tensor to where of the tensor memory. In real applications,
it is unlikely that we will XOR swizzle the logical domain, but here we are just
showing that it is possible:
*/
// Apply a fancy transformation to transform a [4096, 4096] tensor back to its
// original shape.
static void fancy_transformations(cf_fusion *f, cf_tv *tv) {
  static const int order[4] = {3, 0, 2, 1};
  cf_swizzle_xor(f, tv, 0, 1);
  cf_split(f, tv, 1, 64);
  cf_split(f, tv, 0, 64);
  cf_reorder_all(f, tv, 4, order);
  cf_swizzle_xor(f, tv, 0, 1);
  cf_swizzle_xor(f, tv, 2, 3);
  cf_swizzle_xor(f, tv, 1, 2);
  cf_reorder_all(f, tv, 4, order);
  cf_merge(f, tv, 2);
  cf_merge(f, tv, 0);
}

/*
Second, let's use the following lowering hook to check the allocation size of tensor
memory. The executor calls it with the lowered kernel, before generating code:
*/
typedef struct AllocationSize {
  int nregions;
  int64_t ncols; /* of the first region */
} AllocationSize;

static void record_allocation_size(const cf_kernel_info *kernel, void *user) {
  AllocationSize *a = user;
  a->nregions = cf_kernel_num_tmem_regions(kernel);
  a->ncols = a->nregions ? cf_kernel_tmem_region(kernel, 0).num_columns : 0;
}

static void check_allocation_size(const AllocationSize *a, int64_t expected_ncols) {
  cr_expect_eq(a->nregions, 1);
  cr_expect_eq(a->ncols, expected_ncols);
}

/*
Here comes the example 1:
*/
Test(TMemTutorialR, Complicated1) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){4096, 4096}, tv);

  // apply fancy transformations, shape is still [4096, 4096]
  fancy_transformations(f, tv[4]);

  // We want the first 4096 to go into lanes, and the second 4096 to go into
  // columns.

  // We want to split the second 4096 into [2, 4, 8, 64], where these dimensions
  // will eventually have the following properties:
  // -  2: serial,  left of CA (not allocated)
  // -  4:   BIDy,  left of CA (not allocated)
  // -  8:   BIDz, right of CA (not allocated)
  // - 64: serial, right of CA (allocated)
  cf_split(f, tv[4], 1, 64);
  cf_split(f, tv[4], 1, 8);
  cf_split(f, tv[4], 1, 4);

  // We want to split the first 4096 into [2, 16, 8, 2, 8, 1], where these
  // dimensions will eventually have the following properties:
  // -  2:   TIDz,  left of CA (allocated)
  // - 16: serial,  left of CA (not allocated)
  // -  8:   TIDy, right of CA (allocated)
  // -  2:   BIDx, right of CA (not allocated)
  // -  8:   TIDx, right of CA (allocated)
  // -  1: serial, right of CA (trivial allocated)
  cf_split(f, tv[4], 0, 1);
  cf_split(f, tv[4], 0, 8);
  cf_split(f, tv[4], 0, 2);
  cf_split(f, tv[4], 0, 8);
  cf_split(f, tv[4], 0, 16);

  // Parallelize:
  cf_parallelize(f, tv[4], 0, CF_PT_TIDZ);
  cf_parallelize(f, tv[4], 2, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDX);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 7, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 8, CF_PT_BIDZ);

  cf_propagate_transforms_checked(f, tv[4]);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  // Set the allocation domain of TMem tensor
  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 6);

  // Reorder and inlining
  cf_reorder(f, tv[4], 2, (int[]){6, 2, 7, 3});
  cf_propagate_transforms_checked(f, tv[4]);
  cf_inline_all_at(f, tv[4], 4);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  // Check that tv2 is allocated 64 columns.
  AllocationSize alloc = {0};
  char *source = NULL;
  cf_executor *e = compile_blackwell(f, record_allocation_size, &alloc, &source);
  check_allocation_size(&alloc, 64);
  expect_ptx(source, 1, 1);
  free(source);

  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 2, (int64_t[]){4096, 4096});
  DLManagedTensor *out = run(e, f, t0);
  expect_equal(out, t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/*
Here comes the example 2:
*/
Test(TMemTutorialR, Complicated2) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){4096, 4096}, tv);

  // apply fancy transformations, shape is still [4096, 4096]
  fancy_transformations(f, tv[4]);

  // We want the first 4096 to go into lanes, and the second 4096 to go into
  // columns.

  // We want to split the second 4096 into [4, 8, 2, 16, 2, 2], where these
  // dimensions will eventually have the following properties:
  // -  4: serial,  left of CA (not allocated)
  // -  8:   BIDy,  left of CA (not allocated)
  // -  2:   TIDy,  left of CA (allocated)
  // - 16: serial, right of CA (allocated)
  // -  2:   BIDz, right of CA (not allocated)
  // -  2:   TIDz, right of CA (allocated)
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 16);
  cf_split(f, tv[4], 1, 2);
  cf_split(f, tv[4], 1, 8);

  // We want to split the first 4096 into [32, 128], where these
  // dimensions will eventually have the following properties:
  // -  32: serial,   left of CA (not allocated)
  // - 128:   TIDx,  right of CA (allocated)
  cf_split(f, tv[4], 0, 128);

  // Parallelize:
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_parallelize(f, tv[4], 3, CF_PT_BIDY);
  cf_parallelize(f, tv[4], 4, CF_PT_TIDY);
  cf_parallelize(f, tv[4], 6, CF_PT_BIDZ);
  cf_parallelize(f, tv[4], 7, CF_PT_TIDZ);

  cf_propagate_transforms_checked(f, tv[4]);
  cf_parallelize_all_like(f, tv[4], 0, NULL);

  // Set the allocation domain of TMem tensor
  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 2);

  // Reorder and inlining
  cf_reorder(f, tv[4], 1, (int[]){1, 4});
  cf_propagate_transforms_checked(f, tv[4]);
  cf_inline_all_at(f, tv[4], 4);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  // Check that tv2 is allocated 64 columns.
  AllocationSize alloc = {0};
  char *source = NULL;
  cf_executor *e = compile_blackwell(f, record_allocation_size, &alloc, &source);
  check_allocation_size(&alloc, 64);
  expect_ptx(source, 1, 1);
  free(source);

  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 2, (int64_t[]){4096, 4096});
  DLManagedTensor *out = run(e, f, t0);
  expect_equal(out, t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/*
It also worth mentioning that the storing and loading of tensor memory is not
required to be scheduled in the same way. As long as both matches an allowed
pattern. The following example shows how to use tensor memory to do a transpose
:
*/
Test(TMemTutorialR, Transpose) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv0 = cf_tensor_concrete(f, CF_FLOAT, 3, (int64_t[]){128, 2, 2});
  cf_fusion_add_input(f, tv0);
  cf_tv *tv1 = cf_set(f, tv0);
  cf_tv *tv2 = cf_set(f, tv1);
  cf_tv *tv3 = cf_transpose(f, tv2, 1, 2);
  cf_tv *tv4 = cf_set(f, tv3);
  cf_fusion_add_output(f, tv4);
  cf_set_memory_type(f, tv2, CF_MEM_TENSOR);

  cf_tv *all[4] = {tv1, tv2, tv3, tv4};
  for (int i = 0; i < 4; i++) {
    cf_parallelize(f, all[i], 0, CF_PT_TIDX);
    cf_parallelize(f, all[i], 1, CF_PT_TIDY);
    cf_parallelize(f, all[i], 2, CF_PT_TIDZ);
  }

  cf_set_tmem_dim_sep_pos(f, tv2, 1);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  char *source = NULL;
  cf_executor *e = compile_blackwell(f, NULL, NULL, &source);
  expect_ptx(source, 1, 1);
  free(source);

  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 3, (int64_t[]){128, 2, 2});
  DLManagedTensor *out = run(e, f, t0);
  // t0.transpose(1, 2): the same data seen with the strides of axes 1 and 2 swapped.
  DLTensor t0_transposed = t0->dl_tensor;
  int64_t strides[3] = {4, 1, 2};
  t0_transposed.strides = strides;
  cr_expect(cf_tensor_equal(&out->dl_tensor, &t0_transposed), "the output is not the transposed input");
  cf_tensor_free(out);
  cf_tensor_free(t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/*
In the above example, we store and load the tensor memory like the table below:

| Warp Group   | 0 | 1 | 2 | 3 |
|--------------|---|---|---|---|
| Store Column | 0 | 2 | 1 | 3 |
| Load Column  | 0 | 1 | 2 | 3 |

Because the threads that load an element from tensor memory are not the ones that
stored it, the kernel synchronizes the block between the store and the load, as it
would for shared memory.

## Vectorization of TMem load and store

Tensor memory load and store can be vectorized as a power of 2, from 1 all the
way to 128 32-bit words (`.x1` to `.x128`, 4 to 512 bytes per thread):
*/
static void vectorization(int64_t st_vec, int64_t ld_vec) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 2, (int64_t[]){128, 256}, tv);

  for (int i = 1; i <= 4; i++) cf_parallelize(f, tv[i], 0, CF_PT_TIDX);

  cf_split(f, tv[2], 1, st_vec);
  cf_split(f, tv[1], 1, st_vec);
  cf_parallelize(f, tv[2], -1, CF_PT_VECTORIZE);
  cf_split(f, tv[3], 1, ld_vec);
  cf_split(f, tv[4], 1, ld_vec);
  cf_parallelize(f, tv[3], -1, CF_PT_VECTORIZE);

  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);

  cf_inline_most(f);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  // Check the number of columns allocated for tv2. When the store and the load
  // are vectorized alike, inlining goes one level deeper and only one vector of
  // columns is allocated (at least 32); otherwise all 256 columns are.
  AllocationSize alloc = {0};
  char *source = NULL;
  cf_executor *e = compile_blackwell(f, record_allocation_size, &alloc, &source);
  check_allocation_size(&alloc, st_vec == ld_vec ? (st_vec > 32 ? st_vec : 32) : 256);

  // Check that vectorized PTX instructions are used
  expect_ptx(source, (int)st_vec, (int)ld_vec);
  free(source);

  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 2, (int64_t[]){128, 256});
  DLManagedTensor *out = run(e, f, t0);
  expect_equal(out, t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

Test(TMemTutorialR, Vectorization) {
  static const int64_t vec_factors[] = {1, 2, 4, 8, 16, 32, 64, 128};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) vectorization(vec_factors[i], vec_factors[j]);
}

/*
When using tensor memory for non-matmul purposes, the allocation domain of the
tensor memory tensor is usually dictated by the global scheduling of the
problem, and the vectorization factor used for TMem load/store are the product
of the unroll factor and the vectorization factor of the global memory load/store.
The following example demonstrates a performant copy kernel
gmem -> register -> tmem -> register -> gmem with vectorization 4 and unroll
factor 2:
*/
Test(TMemTutorialR, PerformantVectorizedCopy) {
  cf_tv *tv[5];
  cf_fusion *f = tmem_copy(CF_FLOAT, 1, NULL, tv);

  cf_split(f, tv[4], 0, 4);
  cf_parallelize(f, tv[4], 1, CF_PT_VECTORIZE);
  cf_split(f, tv[4], 0, 128);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDX);
  cf_split(f, tv[4], 0, 2);
  cf_parallelize(f, tv[4], 1, CF_PT_TIDY);
  cf_split(f, tv[4], 0, 2);
  cf_parallelize(f, tv[4], 1, CF_PT_SERIAL);
  cf_parallelize(f, tv[4], 0, CF_PT_BIDX);

  cf_propagate_transforms_checked(f, tv[4]);
  cf_parallelize_all_like(f, tv[4], 3, (cf_parallel_type[]){CF_PT_TIDX, CF_PT_TIDY, CF_PT_BIDX});
  cf_parallelize(f, tv[1], -1, CF_PT_VECTORIZE);

  // [BIDx, Serial, TIDy, TIDx, Vec'] ->
  //   [BIDx, TIDx, |, TIDy, Vec{Serial * Vec'}]
  // Where the Vec' above are the vectorization dims of gmem access, not
  // the vectorization of the tmem access, and Vec is the the vectorization
  // of tmem access.
  for (int i = 2; i <= 3; i++) {
    cf_reorder(f, tv[i], 2, (int[]){1, 3, 3, 1});
    cf_merge(f, tv[i], -2);
    cf_parallelize(f, tv[i], -1, CF_PT_VECTORIZE);
  }
  cf_set_allocation_to_loop(f, tv[2], true);
  cf_set_tmem_dim_sep_pos(f, tv[2], 2);

  cf_inline_most(f);

  if (verbose) cf_fusion_print_kernel(f, stdout);

  // Check that tv2 is allocated 32 columns. We actually only need
  // TIDy{2} * Serial{2} * Vec'{4} = 16 columns, but 32 is the minimum
  // unit of allocation.
  AllocationSize alloc = {0};
  char *source = NULL;
  cf_executor *e = compile_blackwell(f, record_allocation_size, &alloc, &source);
  check_allocation_size(&alloc, 32);

  // Check that vectorized PTX instructions are used
  expect_ptx(source, 8, 8);
  free(source);

  // 256Mi elements on a GPU; the host backend's emulation copies 1Mi.
  int64_t n = cf_executor_backend(e) == CF_BACKEND_CUDA ? 256 * 1024 * 1024 : 1024 * 1024;
  DLManagedTensor *t0 = rand_tensor(CF_FLOAT, 1, &n);
  DLManagedTensor *out = run(e, f, t0);
  expect_equal(out, t0);
  cf_executor_destroy(e);
  cf_fusion_destroy(f);
}

/*
## Pictures of tensor memory

Where each tensor lands in tensor memory is easier seen than read. `cf_fusion_draw_tmem`
(`#include <cfuser/picture.h>`) lowers a fusion and draws each tensor-memory region as a
map of its 128 lanes by its allocated 32-bit columns: which tensor lives where, and which
index of which lane and column axis each band holds (a tooltip over a tensor gives its
whole mapping). Below, the `[128, 12]` copy chain of the earlier sections keeps two
tensors, `tv2` and `tv4`, in tensor memory, grouped into one region with
`cf_fusion_group_tmem`: rows on the lanes (one thread each), the 12 columns split 3 x 4,
so each tensor takes 12 columns, and the region allocates the next power of two, 32.

![T2 and T4 sharing one region: 24 of its 32 columns used](../docs/pictures/tmem.svg)

`cf_fusion_draw_transforms` draws how each tensor's loop domain was made from its logical
domain, its loop axes colored by parallel type; here for the small fusion of
`cfuser demo` (`relu(a * broadcast(b) + a)`, merged, split by 8, on blocks and threads):

![The demo fusion's transforms](../docs/pictures/transforms.svg)

Both pictures are what `cfuser picture tmem` and `cfuser picture transforms` print, and
the test suite checks that these files are what they print now. The test below draws the
region above and checks what the picture says:
*/
Test(TMemTutorialPictures, TwoTensorsShareARegion) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *tv[7];
  tv[0] = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){128, 12});
  cf_fusion_add_input(f, tv[0]);
  for (int i = 1; i < 7; i++) tv[i] = cf_set(f, tv[i - 1]);
  cf_fusion_add_output(f, tv[6]);
  cf_split(f, tv[6], 1, 4);
  cf_parallelize(f, tv[6], 0, CF_PT_TIDX);
  cf_propagate_transforms(f, tv[6]);
  cf_parallelize_all_like(f, tv[6], 0, NULL);
  cf_set_memory_type(f, tv[2], CF_MEM_TENSOR);
  cf_set_memory_type(f, tv[4], CF_MEM_TENSOR);
  cf_set_tmem_dim_sep_pos(f, tv[2], 1);
  cf_set_tmem_dim_sep_pos(f, tv[4], 1);
  cf_fusion_group_tmem(f, 2, (cf_tv *[]){tv[2], tv[4]});

  char *svg = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&svg, &len);
  cr_assert_eq(cf_fusion_draw_tmem(f, m), CF_OK, "%s", cf_fusion_error(f));
  fclose(m);
  if (verbose) printf("%s", svg);
  cr_expect(strstr(svg, "region 0: 24 of 32 allocated columns used, 128 lanes") != NULL, "%s", svg);
  cr_expect(strstr(svg, "T2 (float): lanes 0..127 = ithreadIdx.x4{128}; columns 0..11 = iS22{3} x iS23{4}") != NULL);
  cr_expect(strstr(svg, "T4 (float): lanes 0..127 = ithreadIdx.x8{128}; columns 12..23 = iS18{3} x iS19{4}") != NULL);
  free(svg);
  cf_fusion_destroy(f);
}
