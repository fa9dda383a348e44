/* ir/welford.c: Welford states on the host, for the reference evaluator: the merge of two
 * states, and their memory layout, which must be the kernels' (CfWelfordF and CfWelfordD
 * of codegen/runtime/cuda_helpers.cuh and host_math.h: {avg, m2} in the scalar type, then
 * the count as int64).
 *
 * The merge is Chan, Golub and LeVeque's pairwise update: with n = na + nb and
 * d = avg_b - avg_a, avg = avg_a + d * nb / n and m2 = m2_a + m2_b + d * d * na * nb / n.
 * Folding one element x is merging the state {x, 0, 1}; the empty state {0, 0, 0} is the
 * identity, returned as it is (so an infinite element gives mean inf and M2 0 rather than
 * inf * 0, and two empty states never divide 0 by 0). A state whose mean is not finite (an
 * infinite or NaN element) merges as a sum of means, M2 NaN: the mean of elements with +inf
 * is +inf (NumPy's), +inf with -inf or NaN gives NaN, and the variance is NaN; the update
 * formula would give inf - inf = NaN or inf depending on the order of the merges, so a tree
 * of merges (a block reduction) and a serial fold disagreed. The kernels
 * compute the same formula in the same order of operations. The online softmax's merge
 * (ir_softmax_merge) shares the layout. */
#include <math.h>
#include <string.h>

#include "ir/dtype.h"

bool ir_dtype_is_welford(cf_dtype t) { return t == CF_WELFORD_FLOAT || t == CF_WELFORD_DOUBLE; }

cf_dtype ir_welford_scalar(cf_dtype state) { return state == CF_WELFORD_DOUBLE ? CF_DOUBLE : CF_FLOAT; }

cf_dtype ir_welford_state_of(cf_dtype t) {
  if (!ir_dtype_is_float(t)) return CF_DTYPE_COUNT;
  return t == CF_DOUBLE ? CF_WELFORD_DOUBLE : CF_WELFORD_FLOAT;
}

IrWelford ir_welford_empty(void) { return (IrWelford){0, 0, 0}; }

IrWelford ir_welford_of(double x) { return (IrWelford){x, 0, 1}; }

IrWelford ir_welford_merge(IrWelford a, IrWelford b) {
  if (a.n == 0) return b; /* exact even for infinite elements (no inf * 0) */
  if (b.n == 0) return a;
  int64_t n = a.n + b.n;
  if (!isfinite(a.avg) || !isfinite(b.avg)) return (IrWelford){a.avg + b.avg, NAN, n};
  double d = b.avg - a.avg, nb_n = (double)b.n / (double)n;
  return (IrWelford){a.avg + d * nb_n, a.m2 + b.m2 + d * d * (double)a.n * nb_n, n};
}

IrWelford ir_welford_load(const void *p, cf_dtype state) {
  IrWelford s;
  if (state == CF_WELFORD_DOUBLE) {
    double v[2];
    memcpy(v, p, sizeof v);
    memcpy(&s.n, (const char *)p + sizeof v, sizeof s.n);
    s.avg = v[0], s.m2 = v[1];
  } else {
    float v[2];
    memcpy(v, p, sizeof v);
    memcpy(&s.n, (const char *)p + 8, sizeof s.n);
    s.avg = v[0], s.m2 = v[1];
  }
  return s;
}

void ir_welford_store(void *p, cf_dtype state, IrWelford s) {
  if (state == CF_WELFORD_DOUBLE) {
    double v[2] = {s.avg, s.m2};
    memcpy(p, v, sizeof v);
    memcpy((char *)p + sizeof v, &s.n, sizeof s.n);
  } else {
    float v[2] = {(float)s.avg, (float)s.m2};
    memcpy(p, v, sizeof v);
    memcpy((char *)p + 8, &s.n, sizeof s.n);
  }
}

IrWelford ir_softmax_merge(IrWelford a, IrWelford b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  double m = a.avg > b.avg ? a.avg : b.avg;
  double fa = a.avg == m ? 1.0 : exp(a.avg - m), fb = b.avg == m ? 1.0 : exp(b.avg - m);
  return (IrWelford){m, (a.m2 + 1.0) * fa + (b.m2 + 1.0) * fb - 1.0, a.n + b.n};
}
