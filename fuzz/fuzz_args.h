/* fuzz/fuzz_args.h: DLPack arguments described by a libFuzzer input (header-only, shared
 * by fuzz_run_args.c and fuzz_execute.c): for every input and output, a DLTensor with a
 * random dtype, rank, sizes (hostile ones included), strides of any sign, byte offset
 * (now and then far beyond the address space), device and data (a buffer sized for
 * exactly what the tensor claims, NULL, or a view into another argument's buffer, so
 * aliasing is tried). Every buffer has guard bytes after it, which an accepted call must
 * leave alone. */
#ifndef CFUSER_FUZZ_ARGS_H
#define CFUSER_FUZZ_ARGS_H

#include <cfuser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"

enum { MAX_ARGS = 4, MAX_DIMS = 4, GUARD = 64 };

typedef struct Arg {
  DLTensor t;
  DLManagedTensor m;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  unsigned char *buf; /* owned: the claimed footprint, then GUARD bytes */
  size_t bytes;
} Arg;

static const DLDataType dtypes[4] = {{kDLFloat, 32, 1}, {kDLInt, 32, 1}, {kDLFloat, 64, 1}, {kDLFloat, 32, 2}};

/* Elements the tensor's strides reach (0 when empty), or -1 when huge; *below: how many
 * of them lie before element 0 (negative strides: a NumPy x[::-1] view). */
static int64_t footprint(const Arg *a, int64_t *below) {
  int64_t span = 1;
  *below = 0;
  for (int d = 0; d < a->t.ndim; d++) {
    if (a->shape[d] == 0) return 0;
    if (a->shape[d] < 0 || a->shape[d] > 64 || a->strides[d] < -64 || a->strides[d] > 64) return -1;
    int64_t step = (a->shape[d] - 1) * a->strides[d];
    span += step < 0 ? -step : step;
    if (step < 0) *below -= step;
  }
  return span;
}

static void describe(FuzzIn *in, Arg *a, Arg *args, int nargs) {
  memset(a, 0, sizeof *a);
  a->t.dtype = dtypes[fz_byte(in) < 224 ? 0 : fz_pick(in, 4)];
  a->t.ndim = fz_byte(in) < 224 ? 2 : fz_pick(in, MAX_DIMS + 1);
  a->t.shape = a->shape;
  int64_t row = 1;
  bool own_strides = fz_pick(in, 4);
  for (int d = a->t.ndim - 1; d >= 0; d--) {
    a->shape[d] = fz_byte(in) < 192 ? 1 + fz_pick(in, 8) : fz_size(in);
    /* Without strides the tensor is row-major: the footprint below must say so too. */
    a->strides[d] = fz_byte(in) < 192 || !own_strides ? row : fz_pick(in, 13) - 4;
    row = a->shape[d] > 0 && a->shape[d] <= 64 ? row * a->shape[d] : row;
  }
  a->t.strides = own_strides ? a->strides : NULL;
  a->t.device = (DLDevice){fz_byte(in) < 240 ? kDLCPU : kDLCUDA, 0};
  a->t.byte_offset = fz_byte(in) < 224 ? 0 : (uint64_t)fz_pick(in, 3) * 4;
  int64_t below, span = footprint(a, &below);
  uint64_t esz = (uint64_t)a->t.dtype.bits / 8 * a->t.dtype.lanes, lead = (uint64_t)below * esz;
  unsigned how = fz_byte(in);
  if (how >= 232 && nargs > 0) { /* a view into an earlier argument's buffer */
    Arg *o = &args[fz_pick(in, nargs)];
    a->t.data = o->buf;
    a->t.byte_offset = o->buf ? lead + (uint64_t)fz_pick(in, 4) * 4 : 0;
    if (span < 0 || !o->buf || (size_t)span * 8 + a->t.byte_offset > o->bytes) a->t.data = NULL;
  } else if (how >= 220 || span < 0) {
    a->t.data = NULL;
  } else {
    a->t.byte_offset += lead; /* element 0 after the elements negative strides reach */
    a->bytes = (size_t)span * 8 + a->t.byte_offset; /* room for the widest dtype */
    a->buf = malloc(a->bytes + GUARD);
    memset(a->buf, 0x5a, a->bytes + GUARD);
    a->t.data = a->buf;
  }
  if (fz_byte(in) >= 252) a->t.byte_offset = (uint64_t)1 << (60 + fz_pick(in, 4)); /* far away */
  a->m.dl_tensor = a->t;
}

static void check_guards(const Arg *args, int n) {
  for (int i = 0; i < n; i++)
    for (size_t k = 0; args[i].buf && k < GUARD; k++)
      if (args[i].buf[args[i].bytes + k] != 0x5a) {
        fprintf(stderr, "fuzz: an accepted call wrote past argument %d's buffer\n", i);
        abort();
      }
}

/* One call's arguments: give_in inputs (a few of them NULL) then give_out outputs, each
 * given (its DLManagedTensor) or left to the callee (NULL). */
static void describe_call(FuzzIn *in, Arg *args, int give_in, int give_out, const DLTensor **ins,
                          DLManagedTensor **outs) {
  for (int i = 0; i < give_in; i++) {
    describe(in, &args[i], args, i);
    ins[i] = fz_byte(in) < 250 ? &args[i].t : NULL;
  }
  for (int o = 0; o < give_out; o++) {
    Arg *a = &args[give_in + o];
    describe(in, a, args, give_in + o);
    outs[o] = fz_pick(in, 3) ? &a->m : NULL;
  }
}

/* Which of nfusions fusions a call runs, and how many inputs and outputs it gives: each
 * fusion's own counts, now and then one input too many or one output too few. */
static void pick_call(FuzzIn *in, int nfusions, const int *nin_of, const int *nout_of, int *which, int *give_in,
                      int *give_out) {
  *which = fz_pick(in, nfusions);
  *give_in = nin_of[*which] + (fz_byte(in) >= 248 ? 1 : 0);
  *give_out = nout_of[*which] - (fz_byte(in) >= 248 ? 1 : 0);
}

/* After the call: the guards checked, the outputs the callee allocated and the buffers
 * freed. */
static void finish_call(Arg *args, int give_in, int give_out, DLManagedTensor **outs) {
  check_guards(args, give_in + give_out);
  for (int o = 0; outs && o < give_out; o++)
    if (outs[o] && outs[o] != &args[give_in + o].m) cf_tensor_free(outs[o]);
  for (int i = 0; i < give_in + give_out; i++) free(args[i].buf);
}

/* Under CFUSER_FUZZ_PRINT: the arguments of a call (replaying a finding). */
static void print_args(const char *what, const Arg *args, int n) {
  if (!getenv("CFUSER_FUZZ_PRINT")) return;
  for (int i = 0; i < n; i++) {
    const DLTensor *t = &args[i].t;
    fprintf(stderr, "%s %d: dtype %u/%u/%u ndim %d data %p (+%zu bytes) byte_offset %llu shape", what, i,
            t->dtype.code, t->dtype.bits, t->dtype.lanes, t->ndim, t->data, args[i].bytes,
            (unsigned long long)t->byte_offset);
    for (int d = 0; d < t->ndim && d < MAX_DIMS; d++) fprintf(stderr, " %lld", (long long)args[i].shape[d]);
    fprintf(stderr, " strides");
    for (int d = 0; t->strides && d < t->ndim && d < MAX_DIMS; d++) fprintf(stderr, " %lld", (long long)t->strides[d]);
    fprintf(stderr, "\n");
  }
}

#endif
