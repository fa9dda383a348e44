/* welford.h: Welford states in generated kernels, the same text for CUDA C++ and the host
 * backend's C (embedded into libcfuser; codegen/cuda.c prepends it to kernels that use a
 * Welford dtype, the host runtime always has it, after host_math.h).
 *
 * CfWelfordF and CfWelfordD are the elements of the CF_WELFORD_FLOAT and CF_WELFORD_DOUBLE
 * dtypes: {running mean, sum of squared deviations M2, count}, laid out as ir/welford.c
 * reads them. The merge is Chan et al.'s, in the order of operations of ir/welford.c:
 * n = na + nb, d = avg_b - avg_a, avg = avg_a + d * nb / n, m2 = m2_a + m2_b + d * d * na *
 * nb / n; the empty state merges as the identity, and a state whose mean is not finite
 * (x - x is not 0: inf or NaN) as ir/welford.c's: mean avg_a + avg_b, M2 NaN, the same in
 * any order of merges. The generic names the code generators
 * print (cf_welford_merge, cf_welford_avg, cf_welford_m2, cf_welford_n, cf_welford_volatile,
 * and __shfl_xor_sync of a state) are overloads in C++ and _Generic selections in C.
 * cf_softmax_merge is the online softmax's merge of two states of the same layout ({max,
 * sum - 1, count}; ir/dtype.h), in ir/welford.c's order of operations. */
#ifndef CF_WELFORD_H
#define CF_WELFORD_H

#ifdef __cplusplus
#define CF_WELFORD_FN __device__ __forceinline__
#else
#define CF_WELFORD_FN CFH_INLINE
#endif

typedef struct CfWelfordF {
  float avg, m2;
  long long n;
} CfWelfordF;
typedef struct CfWelfordD {
  double avg, m2;
  long long n;
} CfWelfordD;

#define CF_WELFORD_DEFINE(s, S, T)                                                          \
  CF_WELFORD_FN S cf_welford_empty_##s(void) {                                            \
    S r;                                                                                  \
    r.avg = 0, r.m2 = 0, r.n = 0;                                                         \
    return r;                                                                             \
  }                                                                                       \
  CF_WELFORD_FN S cf_welford_of_##s(T x) {                                                \
    S r;                                                                                  \
    r.avg = x, r.m2 = 0, r.n = 1;                                                         \
    return r;                                                                             \
  }                                                                                       \
  CF_WELFORD_FN S cf_welford_merge_##s(S a, S b) {                                        \
    if (a.n == 0) return b;                                                               \
    if (b.n == 0) return a;                                                               \
    long long n = a.n + b.n;                                                              \
    T d = b.avg - a.avg, nb_n = (T)b.n / (T)n;                                            \
    S r;                                                                                  \
    if (a.avg - a.avg != (T)0 || b.avg - b.avg != (T)0) {                                 \
      r.avg = a.avg + b.avg, r.m2 = (T)NAN, r.n = n;                                      \
      return r;                                                                           \
    }                                                                                     \
    r.avg = a.avg + d * nb_n;                                                             \
    r.m2 = a.m2 + b.m2 + d * d * (T)a.n * nb_n;                                           \
    r.n = n;                                                                              \
    return r;                                                                             \
  }                                                                                       \
  CF_WELFORD_FN T cf_welford_avg_##s(S a) { return a.n ? a.avg : (T)NAN; } /* nothing: nan */ \
  CF_WELFORD_FN T cf_welford_m2_##s(S a) { return a.m2; }                                 \
  CF_WELFORD_FN long long cf_welford_n_##s(S a) { return a.n; }                           \
  CF_WELFORD_FN S cf_welford_volatile_##s(const volatile S *p) {                          \
    S r;                                                                                  \
    r.avg = p->avg, r.m2 = p->m2, r.n = p->n;                                             \
    return r;                                                                             \
  }                                                                                       \
  CF_WELFORD_FN S cf_softmax_merge_##s(S a, S b) {                                        \
    if (a.n == 0) return b;                                                               \
    if (b.n == 0) return a;                                                               \
    T m = a.avg > b.avg ? a.avg : b.avg;                                                  \
    T fa = a.avg == m ? (T)1 : CF_WELFORD_EXP(a.avg - m), fb = b.avg == m ? (T)1 : CF_WELFORD_EXP(b.avg - m);   \
    S r;                                                                                  \
    r.avg = m;                                                                            \
    r.m2 = (a.m2 + (T)1) * fa + (b.m2 + (T)1) * fb - (T)1;                                \
    r.n = a.n + b.n;                                                                      \
    return r;                                                                             \
  }
#define CF_WELFORD_EXP expf
CF_WELFORD_DEFINE(f, CfWelfordF, float)
#undef CF_WELFORD_EXP
#define CF_WELFORD_EXP exp
CF_WELFORD_DEFINE(d, CfWelfordD, double)
#undef CF_WELFORD_EXP

#ifdef __cplusplus
#define CF_WELFORD_OVERLOADS(s, S)                                                           \
  CF_WELFORD_FN S cf_welford_merge(S a, S b) { return cf_welford_merge_##s(a, b); }          \
  CF_WELFORD_FN S cf_softmax_merge(S a, S b) { return cf_softmax_merge_##s(a, b); }          \
  CF_WELFORD_FN auto cf_welford_avg(S a) { return cf_welford_avg_##s(a); }                   \
  CF_WELFORD_FN auto cf_welford_m2(S a) { return cf_welford_m2_##s(a); }                     \
  CF_WELFORD_FN long long cf_welford_n(S a) { return cf_welford_n_##s(a); }                  \
  CF_WELFORD_FN S cf_welford_volatile(const volatile S *p) { return cf_welford_volatile_##s(p); } \
  CF_WELFORD_FN S __shfl_xor_sync(unsigned mask, S v, int lane_mask, int width = 32) {       \
    v.avg = __shfl_xor_sync(mask, v.avg, lane_mask, width);                                 \
    v.m2 = __shfl_xor_sync(mask, v.m2, lane_mask, width);                                   \
    v.n = __shfl_xor_sync(mask, v.n, lane_mask, width);                                     \
    return v;                                                                               \
  }
CF_WELFORD_OVERLOADS(f, CfWelfordF)
CF_WELFORD_OVERLOADS(d, CfWelfordD)
#else
#define CF_WELFORD_SHFL(s, S, T)                                                            \
  CFH_INLINE S cfh__shfl_w##s(int op, unsigned int mask, S v, int arg, int width) {        \
    v.avg = cfh__shfl_##s(op, mask, v.avg, arg, width);                                     \
    v.m2 = cfh__shfl_##s(op, mask, v.m2, arg, width);                                       \
    v.n = cfh__shfl_ll(op, mask, v.n, arg, width);                                          \
    return v;                                                                               \
  }
CF_WELFORD_SHFL(f, CfWelfordF, float)
CF_WELFORD_SHFL(d, CfWelfordD, double)
#define CF_WELFORD_GENERIC(name, x) _Generic((x), CfWelfordF: name##_f, CfWelfordD: name##_d)
#define cf_welford_merge(a, b) CF_WELFORD_GENERIC(cf_welford_merge, a)((a), (b))
#define cf_softmax_merge(a, b) CF_WELFORD_GENERIC(cf_softmax_merge, a)((a), (b))
#define cf_welford_avg(a) CF_WELFORD_GENERIC(cf_welford_avg, a)(a)
#define cf_welford_m2(a) CF_WELFORD_GENERIC(cf_welford_m2, a)(a)
#define cf_welford_n(a) CF_WELFORD_GENERIC(cf_welford_n, a)(a)
#define cf_welford_volatile(p) CF_WELFORD_GENERIC(cf_welford_volatile, *(p))(p)
#endif
#endif
