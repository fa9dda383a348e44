/* fuzz/fuzz_run_args.c: libFuzzer harness for the executor's argument checks (issue 16).
 * Three small fusions are compiled once for the host backend; each input then describes
 * one cf_executor_run call: for every input and output, NULL or a DLTensor described by
 * fuzz_args.h, and outputs given or left to the executor. A finding: a crash or sanitizer
 * report, an internal error, or a run the executor accepted that wrote past a buffer. */
#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_args.h"

enum { NFUSIONS = 3 };

static cf_executor *execs[NFUSIONS];
static int nin_of[NFUSIONS], nout_of[NFUSIONS];

/* 0: symbolic [i0, i1] * 2 on blocks x threads; 1: concrete [2, 4] -> neg, abs (two
 * outputs); 2: int [i0, i1] + a strided row broadcast over it, split by 4 (a
 * non-divisible, predicated split) on blocks. */
static cf_fusion *make(int which) {
  cf_fusion *f = cf_fusion_create();
  if (which == 0) {
    cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2);
    cf_fusion_add_input(f, a);
    cf_tv *b = cf_mul_scalar(f, a, 2.0);
    cf_fusion_add_output(f, b);
    cf_parallelize(f, b, 0, CF_PT_BIDX);
    cf_parallelize(f, b, 1, CF_PT_TIDX);
  } else if (which == 1) {
    cf_tv *a = cf_tensor_concrete(f, CF_FLOAT, 2, (int64_t[]){2, 4});
    cf_fusion_add_input(f, a);
    cf_fusion_add_output(f, cf_neg(f, a));
    cf_fusion_add_output(f, cf_abs(f, a));
  } else {
    cf_tv *a = cf_tensor_symbolic(f, CF_INT32, 2), *r = cf_tensor_strided(f, CF_INT32, 1);
    cf_fusion_add_input(f, a);
    cf_fusion_add_input(f, r);
    cf_tv *c = cf_add(f, a, cf_broadcast(f, r, 2, (bool[]){true, false}));
    cf_fusion_add_output(f, c);
    cf_split(f, c, 1, 4);
    cf_propagate_transforms(f, c);
    cf_parallelize(f, c, 0, CF_PT_BIDX);
    cf_parallelize_all_like(f, c, 0, NULL);
    cf_inline_most(f);
  }
  return f;
}

static void setup(void) {
  for (int i = 0; i < NFUSIONS; i++) {
    cf_fusion *f = make(i);
    execs[i] = cf_executor_create(&(cf_executor_options){.backend = CF_BACKEND_HOST});
    if (cf_executor_compile(execs[i], f)) {
      fprintf(stderr, "fuzz_run_args: fusion %d does not compile: %s\n", i, cf_executor_error(execs[i]));
      abort();
    }
    nin_of[i] = cf_fusion_num_inputs(f);
    nout_of[i] = cf_fusion_num_outputs(f);
    cf_fusion_destroy(f);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!execs[0]) setup();
  FuzzIn in = {data, size};
  int which, give_in, give_out;
  pick_call(&in, NFUSIONS, nin_of, nout_of, &which, &give_in, &give_out);
  Arg args[MAX_ARGS + 1];
  const DLTensor *ins[MAX_ARGS];
  DLManagedTensor *outs[MAX_ARGS];
  describe_call(&in, args, give_in, give_out, ins, outs);
  print_args("run arg", args, give_in + give_out);
  cf_executor *e = execs[which];
  cf_status s = cf_executor_run(e, give_in, ins, give_out, outs);
  static long runs, accepted;
  runs++, accepted += s == CF_OK;
  if (getenv("CFUSER_FUZZ_STATS") && !(runs % 10000))
    fprintf(stderr, "fuzz_run_args: %ld of %ld runs accepted\n", accepted, runs);
  if (s == CF_ERR_INTERNAL) {
    fprintf(stderr, "fuzz_run_args: internal error: %s\n", cf_executor_error(e));
    abort();
  }
  finish_call(args, give_in, give_out, outs);
  return 0;
}
