/* fuzz/fuzz_execute.c: libFuzzer harness for define and run (issue 28): each input
 * describes one cf_fusion_execute call on one of three unscheduled fusions, whose caches
 * live across inputs (new signatures compile, known ones run cached), with arguments from
 * fuzz_args.h: hostile sizes and byte offsets, strides of any sign (arbitrary strides are
 * declared by fusions 0 and 2), NULL inputs and arrays, outputs given over inputs or
 * each other. Fusion 1 runs as two segments (a sum, then a product reading it), so an
 * output written by the first over an input the second reads is tried; fusion 2 reads a
 * tensor in two orders (x^T + x), which define and run cuts into kernels of their own.
 * A finding: a crash or sanitizer report, an internal error, or an accepted call that
 * wrote past a buffer. Sizes are mostly 1..8, so the signatures (and host compiles) stay
 * few; the kernel disk cache keeps them across runs. */
#include "fuzz_args.h"

enum { NFUSIONS = 3 };

static cf_fusion_cache *caches[NFUSIONS];
static int nin_of[NFUSIONS], nout_of[NFUSIONS];

/* 0: [i0, i1] * 2 + a strided row broadcast over it; 1: s = sum(a, 1), y = b * s, both
 * outputs; 2: x^T + x of a strided square x, and -x. */
static cf_fusion *make(int which) {
  cf_fusion *f = cf_fusion_create();
  if (which == 0) {
    cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2), *r = cf_tensor_strided(f, CF_FLOAT, 1);
    cf_fusion_add_input(f, a);
    cf_fusion_add_input(f, r);
    cf_fusion_add_output(f, cf_add(f, cf_mul_scalar(f, a, 2.0), cf_broadcast(f, r, 2, (bool[]){true, false})));
  } else if (which == 1) {
    cf_tv *a = cf_tensor_symbolic(f, CF_FLOAT, 2), *b = cf_tensor_symbolic(f, CF_FLOAT, 2);
    cf_fusion_add_input(f, a);
    cf_fusion_add_input(f, b);
    cf_tv *s = cf_sum(f, a, 1, (int[]){1});
    cf_fusion_add_output(f, s);
    cf_fusion_add_output(f, cf_mul(f, b, cf_broadcast(f, s, 2, (bool[]){false, true})));
  } else {
    cf_tv *x = cf_tensor_strided(f, CF_FLOAT, 2);
    cf_fusion_add_input(f, x);
    cf_fusion_add_output(f, cf_add(f, cf_transpose(f, x, 0, 1), x));
    cf_fusion_add_output(f, cf_neg(f, x));
  }
  return f;
}

static void setup(void) {
  for (int i = 0; i < NFUSIONS; i++) {
    cf_fusion *f = make(i);
    caches[i] = cf_fusion_cache_create(f, &(cf_executor_options){.backend = CF_BACKEND_HOST});
    if (!caches[i] || cf_fusion_status(f)) {
      fprintf(stderr, "fuzz_execute: fusion %d: %s\n", i, cf_fusion_error(f));
      abort();
    }
    nin_of[i] = cf_fusion_num_inputs(f);
    nout_of[i] = cf_fusion_num_outputs(f);
    cf_fusion_destroy(f);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!caches[0]) setup();
  FuzzIn in = {data, size};
  int which, give_in, give_out;
  pick_call(&in, NFUSIONS, nin_of, nout_of, &which, &give_in, &give_out);
  bool null_ins = fz_byte(&in) >= 252, null_outs = fz_byte(&in) >= 252;
  Arg args[MAX_ARGS + 1];
  const DLTensor *ins[MAX_ARGS];
  DLManagedTensor *outs[MAX_ARGS];
  describe_call(&in, args, give_in, give_out, ins, outs);
  cf_fusion_cache *c = caches[which];
  print_args("fusion arg", args, give_in + give_out);
  if (getenv("CFUSER_FUZZ_PRINT")) fprintf(stderr, "fusion %d, %d inputs, %d outputs\n", which, give_in, give_out);
  cf_status s = cf_fusion_execute(c, give_in, null_ins ? NULL : ins, give_out, null_outs ? NULL : outs);
  if (s == CF_ERR_INTERNAL || (s != CF_OK && !*cf_fusion_cache_error(c))) {
    fprintf(stderr, "fuzz_execute: internal error or no message: %s\n", cf_fusion_cache_error(c));
    abort();
  }
  if (getenv("CFUSER_FUZZ_PRINT")) fprintf(stderr, "status %d: %s\n", (int)s, s ? cf_fusion_cache_error(c) : "");
  finish_call(args, give_in, give_out, null_outs ? NULL : outs);
  return 0;
}
