/* bench/long_chain.c: scale of the compile path on a long chain of elementwise ops
 * (issue 16). Builds in -> neg -> relu -> neg -> ... (N ops) -> out over [1024] floats,
 * splits the output by 128 onto blocks and threads, propagates the transforms, inlines
 * everything, verifies, lowers and prints the CUDA kernel, and with --host compiles it for
 * the host backend too (the system C compiler), with --nvrtc for sm_90a (NVRTC, no GPU).
 * Prints one line per phase with its seconds and the process's peak resident memory so far:
 *   long_chain N=<n> phase=<name> s=<seconds> maxrss_mb=<MiB>
 * Usage: bench_long_chain [N=100000] [--host|--nvrtc]. Runs anywhere (no GPU needed). */
#define _POSIX_C_SOURCE 199309L
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double t0;
static int report(long n, const char *phase, cf_status s, const char *err) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double t = now_s();
  printf("long_chain N=%ld phase=%s s=%.3f maxrss_mb=%.1f%s%s\n", n, phase, t - t0, (double)ru.ru_maxrss / 1024.0,
         s ? " error=" : "", s ? err : "");
  fflush(stdout);
  t0 = t;
  return s ? 1 : 0;
}

int main(int argc, char **argv) {
  long n = argc > 1 && argv[1][0] != '-' ? strtol(argv[1], NULL, 10) : 100000;
  bool host = argc > 1 && !strcmp(argv[argc - 1], "--host"), nvrtc = argc > 1 && !strcmp(argv[argc - 1], "--nvrtc");
  t0 = now_s();
  cf_fusion *f = cf_fusion_create();
  cf_tv *t = cf_tensor_concrete(f, CF_FLOAT, 1, (int64_t[]){1024});
  cf_fusion_add_input(f, t);
  for (long i = 0; i < n; i++) t = i % 2 ? cf_relu(f, t) : cf_neg(f, t);
  cf_fusion_add_output(f, t);
  int bad = report(n, "build", cf_fusion_status(f), cf_fusion_error(f));
  cf_split(f, t, 0, 128);
  cf_propagate_transforms(f, t);
  bad |= report(n, "propagate", cf_fusion_status(f), cf_fusion_error(f));
  cf_parallelize(f, t, 0, CF_PT_BIDX);
  cf_parallelize(f, t, 1, CF_PT_TIDX);
  cf_parallelize_all_like(f, t, 0, NULL);
  bad |= report(n, "parallelize", cf_fusion_status(f), cf_fusion_error(f));
  cf_inline_most(f);
  bad |= report(n, "inline", cf_fusion_status(f), cf_fusion_error(f));
  bad |= report(n, "verify", cf_fusion_verify(f), cf_fusion_error(f));
  FILE *null = fopen("/dev/null", "w");
  bad |= report(n, "lower_and_print", cf_fusion_print_kernel(f, null), cf_fusion_error(f));
  fclose(null);
  if (host && !bad) {
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    bad |= report(n, "host_compile", cf_executor_compile(e, f), cf_executor_error(e));
    cf_executor_destroy(e);
  }
  if (nvrtc && !bad) {
    cf_executor *e = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_CUDA, .arch = "sm_90a"});
    bad |= report(n, "nvrtc_compile", cf_executor_compile(e, f), cf_executor_error(e));
    cf_executor_destroy(e);
  }
  cf_fusion_destroy(f);
  return bad;
}
