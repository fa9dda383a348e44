/* executor/repro.h: reproducers of failing fusions (internal; the public call is
 * cf_fusion_write_repro in include/cfuser/repro.h). executor/repro.c walks a fusion into
 * the C calls that rebuild it; repro_program.c wraps them into a standalone program. */
#ifndef CFUSER_EXEC_REPRO_H
#define CFUSER_EXEC_REPRO_H

#include "cfuser/repro.h"
#include "ir/ir.h"

/* The calls that rebuild a fusion, as C statements on `cf_fusion *f` (c), and what they
 * cannot rebuild exactly (notes: " *   - ..." lines; approximate set when any). */
typedef struct ReproWalk {
  StrBuf c, notes;
  bool scheduled;   /* scheduled by hand: the program compiles it as it is */
  bool approximate; /* some part is not rebuilt exactly (listed in notes) */
} ReproWalk;

cf_status exec_repro_walk(cf_fusion *f, ReproWalk *w);
/* The enumerator's name of a dtype, e.g. "CF_FLOAT". */
const char *exec_repro_dtype_enum(cf_dtype t);

/* Called where a compile or a define-and-run call fails: with $CFUSER_REPRO_DIR set, writes
 * the reproducer there (repro-<hash>.c) and says so on stderr; otherwise nothing. */
void exec_repro_failed(cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool define_and_run,
                       cf_backend backend, cf_status status, const char *message);

#endif
