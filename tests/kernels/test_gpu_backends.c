// labels: gpu
/* Every scheduled fusion of cases.h run on the CUDA device and on the host backend:
 * copies must agree bit for bit, math within the case's tolerance (CUDA's and the C
 * library's transcendental functions round differently). Skipped, with the reason,
 * where there is no CUDA device. */
#include "cases.h"

static void run_both(int i) {
  const char *reason = NULL;
  if (!cf_cuda_available(&reason)) cr_skip_test("no CUDA device: %s", reason);
  cf_fusion *f = cf_fusion_create();
  KcInput in[TU_MAX_IO];
  int nin = 0;
  kc_cases[i].build(f, in, &nin);
  tu_assert_io_fits(f, nin);
  DLManagedTensor *host_in[TU_MAX_IO] = {0}, *host_out[TU_MAX_IO] = {0};
  const DLTensor *ins[TU_MAX_IO];
  for (int k = 0; k < nin; k++) {
    host_in[k] = kc_make_input(&in[k], 77 + (uint64_t)k);
    ins[k] = &host_in[k]->dl_tensor;
  }
  cf_executor_options ho = {.backend = CF_BACKEND_HOST};
  cf_executor *he = cf_executor_create(&ho);
  cr_assert_eq(cf_executor_compile(he, f), CF_OK, "%s", cf_executor_error(he));
  cr_assert_eq(cf_executor_run(he, nin, ins, cf_fusion_num_outputs(f), host_out), CF_OK, "%s", cf_executor_error(he));
  /* the CUDA run is compared with the host backend's outputs */
  kc_run_backend(f, CF_BACKEND_CUDA, nin, host_in, host_out, kc_cases[i].tol);
  for (int k = 0; k < TU_MAX_IO; k++) {
    cf_tensor_free(host_in[k]);
    cf_tensor_free(host_out[k]);
  }
  cf_executor_destroy(he);
  cf_fusion_destroy(f);
}

Test(gpu_backends, every_scheduled_case_agrees_with_the_host_backend) {
  for (int i = 0; i < KC_NCASES; i++) run_both(i);
}
#include "gpu_main.h"
