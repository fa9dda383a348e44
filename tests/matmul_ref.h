/* tests/matmul_ref.h: a naive matmul and linear on host tensors, written from
 * torch.matmul's shape rules and the evaluator's documented rounding (each product rounded
 * to the accumulation dtype, K summed in increasing order in double and rounded once to
 * it, a bias added to that, then one rounding to the operands' dtype). The oracle the IR
 * tests hold the evaluator to; header-only (static functions). */
#ifndef CFUSER_TESTS_MATMUL_REF_H
#define CFUSER_TESTS_MATMUL_REF_H

#include <stdlib.h>

#include "ir/dtype.h"
#include "ir/ir.h"

/* v rounded to dt (as the evaluator stores it). */
static inline double mr_round(double v, cf_dtype dt) {
  unsigned char buf[8];
  ir_elem_store(buf, dt, (IrElem){.d = v}, CF_DOUBLE);
  return ir_elem_load(buf, dt).d;
}

/* Element (batch index bi over the broadcast batch, row r, column c) of a matrix operand t
 * with nbatch = t's batch axes, the output batch bsz[0..nob); 1-D operands have no batch. */
static inline double mr_at(const DLTensor *t, int nob, const int64_t *bsz, int64_t bi, int64_t r, int64_t c,
                           bool vec_is_row) {
  if (t->ndim == 1) return cf_tensor_get(t, vec_is_row ? c : r);
  int nbt = t->ndim - 2;
  int64_t off = 0, rest = bi;
  int64_t idx[16] = {0};
  for (int d = nob - 1; d >= 0; d--) idx[d] = rest % bsz[d], rest /= bsz[d];
  for (int d = 0; d < nbt; d++) {
    int64_t i = t->shape[d] == 1 ? 0 : idx[nob - nbt + d];
    off = off * t->shape[d] + i;
  }
  off = (off * t->shape[nbt] + r) * t->shape[nbt + 1] + c;
  return cf_tensor_get(t, off);
}

/* matmul(a, b), or linear(a, b, bias) when lin (b is [N, K] or [K]); a new host tensor. */
static inline DLManagedTensor *mr_reference(bool lin, const DLTensor *a, const DLTensor *b, const DLTensor *bias) {
  cf_dtype dt;
  ir_dtype_from_dl(a->dtype, &dt);
  cf_dtype acc = dt == CF_DOUBLE ? CF_DOUBLE : CF_FLOAT;
  int64_t m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, k = a->shape[a->ndim - 1];
  bool bn = b->ndim >= 2;
  int64_t n = !bn ? 1 : lin ? b->shape[0] : b->shape[b->ndim - 1];
  int nba = a->ndim >= 2 ? a->ndim - 2 : 0, nbb = bn && !lin ? b->ndim - 2 : 0;
  int nob = nba > nbb ? nba : nbb;
  int64_t bsz[16], nbatch = 1, shape[18];
  int rank = 0;
  for (int d = 0; d < nob; d++) {
    int da = d - (nob - nba), db = d - (nob - nbb);
    int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
    bsz[d] = ea > eb ? ea : eb, nbatch *= bsz[d], shape[rank++] = bsz[d];
  }
  if (a->ndim >= 2) shape[rank++] = m;
  if (bn) shape[rank++] = n;
  DLManagedTensor *out = cf_tensor_host(dt, rank, shape);
  if (!out) return NULL;
  int64_t o = 0;
  for (int64_t bi = 0; bi < nbatch; bi++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t kk = 0; kk < k; kk++) {
          double x = mr_at(a, nob, bsz, bi, i, kk, true);
          double y = lin ? mr_at(b, 0, bsz, 0, j, kk, true) : mr_at(b, nob, bsz, bi, kk, j, false);
          s += mr_round(x * y, acc);
        }
        s = mr_round(s, acc);
        if (bias) s = mr_round(s + cf_tensor_get(bias, bias->ndim ? j : 0), acc);
        ir_elem_store(ir_dl_elem_ptr(&out->dl_tensor, o++), dt, (IrElem){.d = s}, CF_DOUBLE);
      }
  return out;
}

/* t ([R, C]) transposed into a new contiguous host tensor [C, R]. */
static inline DLManagedTensor *mr_transpose(const DLTensor *t) {
  cf_dtype dt;
  ir_dtype_from_dl(t->dtype, &dt);
  int64_t r = t->shape[0], c = t->shape[1];
  DLManagedTensor *out = cf_tensor_host(dt, 2, (int64_t[]){c, r});
  for (int64_t i = 0; out && i < r; i++)
    for (int64_t j = 0; j < c; j++)
      ir_elem_store(ir_dl_elem_ptr(&out->dl_tensor, j * r + i), dt, (IrElem){.d = cf_tensor_get(t, i * c + j)},
                    CF_DOUBLE);
  return out;
}

#endif
