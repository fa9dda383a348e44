/* cfuser/repro.h: a reproducer of a fusion, to attach to a bug report (nvFuser's
 * fd.repro()).
 *
 * cf_fusion_write_repro writes a standalone C program that rebuilds the fusion through
 * this API (inputs, ops, dtypes, shapes and, for a hand-scheduled fusion, its schedule:
 * splits, merges, reorders, parallel types, memory types, inlining), makes random inputs
 * of the given tensors' shapes and dtypes, and runs it as the failing call did: through
 * define and run (cf_fusion_execute) when define_and_run, else cf_executor_compile and
 * cf_executor_run. Run alone it prints "repro: <STATUS>: <message>" and exits 1 when that
 * fails, "repro: ok" otherwise; with the argument --print it prints the fusion's math and
 * transforms first. What the API cannot rebuild exactly (an rfactor, a swizzle) is written
 * the closest way and listed in the program's header comment.
 *
 * Build it with `cc -std=c11 repro.c $(pkg-config --cflags --libs cfuser)`.
 *
 * With $CFUSER_REPRO_DIR set, every failing cf_executor_compile and cf_fusion_execute writes
 * one there (repro-<hash>.c, named by its contents) and says so on stderr. */
#ifndef CFUSER_REPRO_H
#define CFUSER_REPRO_H

#include <stdio.h>

#include "executor.h"
#include "fusion.h"

#ifdef __cplusplus
extern "C" {
#endif

/* inputs may be NULL (ninputs 0): the inputs are then made of the fusion's constant
 * extents, 8 for each symbolic one. The message of an error is the fusion's. */
CF_API cf_status cf_fusion_write_repro(cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool define_and_run,
                                       cf_backend backend, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
