/* cfuser/optable.h: the op table, for frontends and conformance tests.
 *
 * Every tensor op of cfuser is a row of one table inside the library (its printed name,
 * its Python binding name, its kind, the dtypes it takes, its evaluator form and its CUDA
 * and host code forms). These calls let a frontend or a test enumerate the rows instead
 * of keeping a copy: the Python package can make fd.ops from them, and the conformance
 * matrix (tests/conformance) runs every op on every dtype it takes, so an op added to the
 * table is in the matrix by construction. */
#ifndef CFUSER_OPTABLE_H
#define CFUSER_OPTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_op_info {
  const char *name;    /* printed in the IR; for "unary" and "binary" rows with api set, the op
                        * is cf_<name>(f, in) or cf_<name>(f, a, b) */
  const char *py_name; /* nvFuser's Python name: fd.ops.<py_name> (maximum for max, ...) */
  const char *kind;    /* "set" "unary" "binary" "ternary" "cast" "broadcast" "reduction"
                        * "permute" "squeeze" "full" "reshape" "transform" */
  const char *rule;    /* the type rule: "float" (integers give float), "same", "signed",
                        * "float_only", "predicate", "integral", "integer", "promote", "numeric",
                        * "true_div", "float_pair", "compare", "logical", "select", "random",
                        * "random64", "move",
                        * "cast", "make", "welford", "reduce", "none" */
  uint32_t dtypes;     /* bit t set: the op takes operands of cf_dtype t */
  bool api;            /* cf_<name> of the kind's signature exists */
} cf_op_info;

/* The number of rows, and row i (CF_ERR_INVALID_ARGUMENT when i is out of range or out is
 * NULL). The rows' order is the library's and may change between versions. */
CF_API int cf_op_count(void);
CF_API cf_status cf_op_get(int i, cf_op_info *out);
/* Row i's result dtype for operands whose promoted dtype is `promoted`
 * (CF_DTYPE_COUNT when the row does not take it). */
CF_API cf_dtype cf_op_result_dtype(int i, cf_dtype promoted);

#ifdef __cplusplus
}
#endif
#endif
