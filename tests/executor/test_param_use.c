/* Which parameters a kernel dereferences (lower/param_use.c, cf_kernel_param) and what the
 * executor asks of the others (executor/run.c): nothing about where their data lies or how
 * it is aligned, since only their sizes and strides are read.
 *
 * The fusion is the one the first GPU run failed on: full({n0, n1}, 2.5) + y + s +
 * full_like(x, 1), with n0 and n1 scalar inputs giving sizes at run time (read from host
 * memory when the call is made concrete, then parameters the kernel never reads), s a
 * scalar the kernel reads, x a tensor read only through its sizes. Flags are asserted on
 * the kernel of the concrete fusion compiled for sm_90a (NVRTC, no device) and on the host
 * backend; define and run on the host backend takes the unread ones in memory it could
 * not read (kDLCUDAManaged sizes, a kDLCUDA x) and still refuses a read scalar there, as
 * CUDA refuses a read scalar in host memory. With a device, the CUDA run itself. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/kir.h"
#include "test_util.h"

TU_CACHE_SUITE(param_use);

enum { NIN = 5 };

/* Inputs T0 n0 (int64), T1 n1 (int64), T2 s (float), T3 x [i, j], T4 y [i, j]. */
static void build(void) {
  cf_tv *n0 = cf_scalar_input(f, CF_INT64), *n1 = cf_scalar_input(f, CF_INT64), *s = cf_scalar_input(f, CF_FLOAT);
  cf_tv *x = tu_input(f, CF_FLOAT, 2, NULL), *y = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *sum = cf_add(f, cf_add(f, cf_full_dynamic(f, 2, (cf_tv *[]){n0, n1}, 2.5, CF_FLOAT), y), s);
  cf_fusion_add_output(f, cf_add(f, sum, cf_full_like(f, x, 1.0)));
}

static DLManagedTensor *scalar_i64(int64_t v) {
  DLManagedTensor *t = cf_tensor_host(CF_INT64, 0, NULL);
  *(int64_t *)t->dl_tensor.data = v;
  return t;
}

/* The call's host tensors: n0 = 3, n1 = 4, s = 0.5, x and y [3, 4] (y iota). */
static void make_inputs(DLManagedTensor **in) {
  in[0] = scalar_i64(3);
  in[1] = scalar_i64(4);
  in[2] = cf_tensor_host(CF_FLOAT, 0, NULL);
  *(float *)in[2]->dl_tensor.data = 0.5f;
  in[3] = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 4});
  in[4] = cf_tensor_host(CF_FLOAT, 2, (int64_t[]){3, 4});
  cf_tensor_fill_iota(&in[4]->dl_tensor);
}

static void views(DLManagedTensor **in, const DLTensor **ins) {
  for (int i = 0; i < NIN; i++) ins[i] = &in[i]->dl_tensor;
}

static void free_inputs(DLManagedTensor **in) {
  for (int i = 0; i < NIN; i++) cf_tensor_free(in[i]);
}

/* ---- the flags ------------------------------------------------------------------------ */

typedef struct Seen {
  int n;
  cf_param_info p[8];
  char names[8][16]; /* p[i].tensor copied: the kernel's strings go with the executor */
  cf_param_info before, after; /* parameters -1 and n: out of range */
} Seen;

static void record(const cf_kernel_info *k, void *user) {
  Seen *s = user;
  s->n = cf_kernel_num_params(k);
  for (int i = 0; i < s->n && i < 8; i++) {
    s->p[i] = cf_kernel_param(k, i);
    snprintf(s->names[i], sizeof s->names[i], "%s", s->p[i].tensor ? s->p[i].tensor : "(null)");
  }
  s->before = cf_kernel_param(k, -1);
  s->after = cf_kernel_param(k, s->n);
}

/* Compiles the concrete fusion of the call for `backend` (arch for CUDA) and returns what
 * the lowering hook saw of the parameters. */
static Seen flags_of(cf_backend backend, const char *arch) {
  DLManagedTensor *in[NIN];
  const DLTensor *ins[NIN];
  make_inputs(in);
  views(in, ins);
  cf_fusion *g = ir_concretize(f, ins, "test");
  cr_assert(g && !g->status, "%s", g ? cf_fusion_error(g) : "out of memory");
  cr_assert_eq(cf_inline_most(g), CF_OK, "%s", cf_fusion_error(g));
  Seen seen = {0};
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = backend, .arch = arch});
  cf_executor_set_lowering_hook(e, record, &seen);
  cr_assert_eq(cf_executor_compile(e, g), CF_OK, "%s", cf_executor_error(e));
  /* the generated code says so on each unread parameter */
  const char *src = cf_executor_source(e);
  cr_expect(strstr(src, " T0 /* sizes only */") && strstr(src, " T1 /* sizes only */") &&
            strstr(src, " T3 /* sizes only */") && !strstr(src, " T2 /* sizes only */") &&
            !strstr(src, " T4 /* sizes only */"), "%s", src);
  cf_executor_destroy(e);
  cf_fusion_destroy(g);
  free_inputs(in);
  return seen;
}

static void expect_flags(const Seen *s) {
  static const struct {
    const char *name;
    cf_dtype dtype;
    int rank;
    bool is_output, data_used;
  } want[] = {{"T0", CF_INT64, 0, false, false}, {"T1", CF_INT64, 0, false, false}, {"T2", CF_FLOAT, 0, false, true},
              {"T3", CF_FLOAT, 2, false, false}, {"T4", CF_FLOAT, 2, false, true}};
  cr_assert_eq(s->n, NIN + 1, "%d parameters", s->n);
  for (int i = 0; i < NIN; i++) {
    cr_expect_str_eq(s->names[i], want[i].name);
    cr_expect_eq(s->p[i].dtype, want[i].dtype, "%s", want[i].name);
    cr_expect_eq(s->p[i].rank, want[i].rank, "%s", want[i].name);
    cr_expect_eq(s->p[i].is_output, want[i].is_output, "%s", want[i].name);
    cr_expect_eq(s->p[i].data_used, want[i].data_used, "%s", want[i].name);
  }
  cr_expect(s->p[NIN].is_output && s->p[NIN].data_used && !s->p[NIN].is_workspace, "the output is written");
  cr_expect(!s->before.tensor && !s->before.data_used && !s->after.tensor && !s->after.data_used);
  cr_expect_eq(cf_kernel_num_params(NULL), 0);
  cr_expect_null(cf_kernel_param(NULL, 0).tensor);
}

Test(param_use, flags_of_the_cuda_kernel_compiled_for_sm_90a) {
  TU_SKIP_WITHOUT_NVRTC();
  build();
  Seen s = flags_of(CF_BACKEND_CUDA, "sm_90a");
  expect_flags(&s);
}

Test(param_use, flags_of_the_host_kernel) {
  build();
  Seen s = flags_of(CF_BACKEND_HOST, NULL);
  expect_flags(&s);
}

/* A lowering that missed an access (simulated: T4's flag cleared by the hook) fails the
 * compile as an internal error, found by the code generator, instead of giving a kernel
 * the executor would run on a tensor it did not check. */
static void forget_t4(const cf_kernel_info *k, void *user) {
  (void)user;
  ((const KKernel *)(const void *)k)->params[4]->data_used = false;
}

Test(param_use, a_dereference_lowering_did_not_list_fails_the_compile) {
  build();
  DLManagedTensor *in[NIN];
  const DLTensor *ins[NIN];
  make_inputs(in);
  views(in, ins);
  cf_fusion *g = ir_concretize(f, ins, "test");
  cr_assert(g && !g->status);
  cr_assert_eq(cf_inline_most(g), CF_OK, "%s", cf_fusion_error(g));
  cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
  cf_executor_set_lowering_hook(e, forget_t4, NULL);
  cr_expect_eq(cf_executor_compile(e, g), CF_ERR_INTERNAL);
  cr_expect_str_eq(cf_executor_error(e), "internal error: kernel cfuser_kernel reads or writes elements of T4, which "
                   "lowering (param_use) marked unused; please report this bug");
  cf_executor_destroy(e);
  cf_fusion_destroy(g);
  free_inputs(in);
}

/* ---- define and run ---------------------------------------------------------------------- */

/* Runs the cache (made for `backend` on first use) on ins; on success compares output 0
 * with the evaluator's on the host tensors `ref`. */
static cf_status run(cf_backend backend, const DLTensor **ins, const DLTensor **ref) {
  if (!c) c = cf_fusion_cache_create(f, &(cf_executor_options){.backend = backend});
  DLManagedTensor *out = NULL, *want = NULL;
  cf_status s = cf_fusion_execute(c, NIN, ins, 1, &out);
  if (s) return s;
  cr_assert_eq(cf_fusion_evaluate(f, NIN, ref, &want), CF_OK, "%s", cf_fusion_error(f));
  DLManagedTensor *host = out;
  if (out->dl_tensor.device.device_type == kDLCUDA) {
    host = cf_tensor_host(CF_FLOAT, out->dl_tensor.ndim, out->dl_tensor.shape);
    cr_assert_eq(cf_tensor_copy(&host->dl_tensor, &out->dl_tensor), CF_OK);
    cf_tensor_free(out);
  }
  char msg[256] = "";
  cr_expect(cf_tensor_allclose(&host->dl_tensor, &want->dl_tensor, 0, 0, msg, sizeof msg), "%s", msg);
  cr_expect_eq(host->dl_tensor.shape[0], 3);
  cr_expect_eq(host->dl_tensor.shape[1], 4);
  cr_expect_eq(((float *)want->dl_tensor.data)[5], 5.0f + 2.5f + 0.5f + 1.0f);
  cf_tensor_free(host);
  cf_tensor_free(want);
  return CF_OK;
}

Test(param_use, unread_parameters_may_be_in_any_memory_on_the_host_backend) {
  build();
  DLManagedTensor *in[NIN];
  const DLTensor *ref[NIN];
  make_inputs(in);
  views(in, ref);
  DLTensor tagged[NIN];
  const DLTensor *ins[NIN];
  for (int i = 0; i < NIN; i++) tagged[i] = in[i]->dl_tensor, ins[i] = &tagged[i];
  /* host-readable for concretization, not memory the host backend takes (kDLCPU, kDLCUDAHost) */
  tagged[0].device.device_type = tagged[1].device.device_type = kDLCUDAManaged;
  tagged[3].device.device_type = kDLCUDA; /* never dereferenced */
  tagged[3].byte_offset = 2;              /* nor its alignment checked */
  cr_expect_eq(run(CF_BACKEND_HOST, ins, ref), CF_OK, "%s", cf_fusion_cache_error(c));
  /* s is read: it must be in host memory */
  tagged[2].device.device_type = kDLCUDA;
  cr_expect_eq(run(CF_BACKEND_HOST, ins, ref), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "run: input 2 (T2) is in device memory (kDLCUDA), but the kernel "
                   "accesses its elements and the host backend needs host memory");
  free_inputs(in);
}

/* Copies a host tensor to the device (NULL on failure). */
static DLManagedTensor *to_device(const DLManagedTensor *h) {
  DLManagedTensor *d = cf_tensor_device(CF_FLOAT, h->dl_tensor.ndim, h->dl_tensor.shape);
  if (d && cf_tensor_copy(&d->dl_tensor, &h->dl_tensor)) {
    cf_tensor_free(d);
    return NULL;
  }
  return d;
}

Test(param_use, sizes_in_host_memory_run_on_cuda) {
  const char *why = NULL;
  if (!cf_cuda_available(&why)) cr_skip_test("no CUDA device (%s): the flags are checked on the sm_90a compile", why);
  build();
  DLManagedTensor *in[NIN], *dev[NIN] = {0};
  const DLTensor *ref[NIN], *ins[NIN];
  make_inputs(in);
  views(in, ref);
  for (int i = 2; i < NIN; i++) cr_assert_not_null(dev[i] = to_device(in[i]));
  /* n0 and n1 stay in host memory, as Python passes sizes; s, x, y on the device */
  ins[0] = ref[0], ins[1] = ref[1];
  for (int i = 2; i < NIN; i++) ins[i] = &dev[i]->dl_tensor;
  cr_expect_eq(run(CF_BACKEND_CUDA, ins, ref), CF_OK, "%s", cf_fusion_cache_error(c));
  /* x in host memory too: only its sizes are read */
  ins[3] = ref[3];
  cr_expect_eq(run(CF_BACKEND_CUDA, ins, ref), CF_OK, "%s", cf_fusion_cache_error(c));
  /* s is read: in host memory it is refused */
  ins[2] = ref[2];
  cr_expect_eq(run(CF_BACKEND_CUDA, ins, ref), CF_ERR_INVALID_ARGUMENT);
  cr_expect_str_eq(cf_fusion_cache_error(c), "run: input 2 (T2) is in host memory (kDLCPU), but the kernel accesses "
                   "its elements and the CUDA backend needs device memory");
  for (int i = 0; i < NIN; i++) cf_tensor_free(dev[i]);
  free_inputs(in);
}
