/* tests/executor/model_fusions.h: fusions written the way users of nvFuser's frontend
 * write them (casts around float math, broadcast_in_dim, var_mean, extra outputs such as
 * a layer norm's mean and invstd), each over symbolic inputs of one dtype, with the input
 * sizes of a case for a pair (r, c) of sizes. The registry's invariant test
 * (tests/scheduler/test_registry.c) and define and run's tests
 * (tests/executor/test_segments.c) share them. Header-only. */
#ifndef CFUSER_MODEL_FUSIONS_H
#define CFUSER_MODEL_FUSIONS_H

#include <cfuser.h>
#include <stdbool.h>

typedef struct MfInputs {
  int n;
  int rank[4];
  int64_t sizes[4][3];
} MfInputs;

typedef struct MfCase {
  const char *name;
  void (*build)(cf_fusion *f, cf_dtype dt);
  MfInputs (*inputs)(int64_t r, int64_t c);
} MfCase;

static inline cf_tv *mf_in(cf_fusion *f, cf_dtype dt, int rank) {
  cf_tv *x = cf_tensor_symbolic(f, dt, rank);
  cf_fusion_add_input(f, x);
  return x;
}
static inline cf_tv *mf_float(cf_fusion *f, cf_tv *x) { return cf_tv_dtype(x) == CF_FLOAT ? x : cf_cast(f, x, CF_FLOAT); }
static inline void mf_out(cf_fusion *f, cf_tv *y, cf_dtype dt) { cf_fusion_add_output(f, cf_cast(f, y, dt)); }
/* broadcast_in_dim of a [r] tensor to [r, 1] (dim 0 kept) or of a [c] one to [1, c]. */
static inline cf_tv *mf_col(cf_fusion *f, cf_tv *x) { return cf_broadcast(f, x, 2, (bool[]){false, true}); }
static inline cf_tv *mf_row(cf_fusion *f, cf_tv *x) { return cf_broadcast(f, x, 2, (bool[]){true, false}); }

static inline MfInputs mf_x(int64_t r, int64_t c) { return (MfInputs){1, {2}, {{r, c}}}; }
static inline MfInputs mf_xwb(int64_t r, int64_t c) { return (MfInputs){3, {2, 1, 1}, {{r, c}, {c}, {c}}}; }
static inline MfInputs mf_xw(int64_t r, int64_t c) { return (MfInputs){2, {2, 1}, {{r, c}, {c}}}; }
static inline MfInputs mf_xy(int64_t r, int64_t c) { return (MfInputs){2, {2, 2}, {{r, c}, {r, c}}}; }
static inline MfInputs mf_x1c(int64_t r, int64_t c) { return (MfInputs){1, {3}, {{r, 1, c}}}; }
static inline MfInputs mf_2cr(int64_t r, int64_t c) { return (MfInputs){1, {3}, {{2, c, r}}}; }

/* softmax over the last axis. */
static inline void mf_softmax(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2));
  cf_tv *e = cf_exp(f, cf_sub(f, x, mf_col(f, cf_max_reduce(f, x, 1, (int[]){1}))));
  mf_out(f, cf_div(f, e, mf_col(f, cf_sum(f, e, 1, (int[]){1}))), dt);
}

/* log_softmax: x - max - log(sum(exp(x - max))). */
static inline void mf_log_softmax(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2));
  cf_tv *d = cf_sub(f, x, mf_col(f, cf_max_reduce(f, x, 1, (int[]){1})));
  mf_out(f, cf_sub(f, d, mf_col(f, cf_log(f, cf_sum(f, cf_exp(f, d), 1, (int[]){1})))), dt);
}

/* nvFuser's layer norm: var, mean = var_mean(x, 1, correction=0); y, mean, invstd out. */
static inline void mf_layer_norm_stats(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2)), *w = mf_float(f, mf_in(f, dt, 1)), *b = mf_float(f, mf_in(f, dt, 1));
  cf_tv *var = NULL, *mean = NULL;
  cf_var_mean(f, x, 1, (int[]){1}, 0, false, &var, &mean);
  cf_tv *invstd = cf_rsqrt(f, cf_add_scalar(f, mf_col(f, var), 1e-5));
  cf_tv *y = cf_mul(f, cf_sub(f, x, mf_col(f, mean)), invstd);
  mf_out(f, cf_add(f, cf_mul(f, y, mf_row(f, w)), mf_row(f, b)), dt);
  cf_fusion_add_output(f, mean);
  cf_fusion_add_output(f, invstd);
}

/* The same layer norm with y alone. */
static inline void mf_layer_norm(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2)), *w = mf_float(f, mf_in(f, dt, 1)), *b = mf_float(f, mf_in(f, dt, 1));
  cf_tv *var = NULL, *mean = NULL;
  cf_var_mean(f, x, 1, (int[]){1}, 0, false, &var, &mean);
  cf_tv *y = cf_mul(f, cf_sub(f, x, mf_col(f, mean)), cf_rsqrt(f, cf_add_scalar(f, mf_col(f, var), 1e-5)));
  mf_out(f, cf_add(f, cf_mul(f, y, mf_row(f, w)), mf_row(f, b)), dt);
}

/* RMS norm: x * rsqrt(mean(x^2) + eps) * w. */
static inline void mf_rms_norm(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2)), *w = mf_float(f, mf_in(f, dt, 1));
  cf_tv *ms = cf_mean(f, cf_mul(f, x, x), 1, (int[]){1});
  mf_out(f, cf_mul(f, cf_mul(f, x, cf_rsqrt(f, cf_add_scalar(f, mf_col(f, ms), 1e-6))), mf_row(f, w)), dt);
}

/* Batch norm of a channels-last activation [N*H*W, C]: statistics over axis 0, out y,
 * mean and invstd. */
static inline void mf_batch_norm_cl(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2)), *w = mf_float(f, mf_in(f, dt, 1)), *b = mf_float(f, mf_in(f, dt, 1));
  cf_tv *var = NULL, *mean = NULL;
  cf_var_mean(f, x, 1, (int[]){0}, 0, false, &var, &mean);
  cf_tv *invstd = cf_rsqrt(f, cf_add_scalar(f, var, 1e-5));
  cf_tv *y = cf_mul(f, cf_sub(f, x, mf_row(f, mean)), mf_row(f, invstd));
  mf_out(f, cf_add(f, cf_mul(f, y, mf_row(f, w)), mf_row(f, b)), dt);
  cf_fusion_add_output(f, mean);
  cf_fusion_add_output(f, invstd);
}

/* Batch norm statistics of a channels-first [N, C, HW] activation: mean and var per C. */
static inline void mf_batch_stats_cf(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 3)), *var = NULL, *mean = NULL;
  cf_var_mean(f, x, 2, (int[]){0, 2}, 1, false, &var, &mean);
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
}

/* var_mean over the middle axis of [r, 1, c] (issue 22's [8, 1, 6]). */
static inline void mf_var_mean_middle(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 3)), *var = NULL, *mean = NULL;
  cf_var_mean(f, x, 1, (int[]){1}, 1, false, &var, &mean);
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
}

/* A reshaped input, then var_mean over its last axis: [r, c] -> [c, r]. */
static inline void mf_reshape_var_mean(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_in(f, dt, 2), *var = NULL, *mean = NULL;
  cf_tv *v = mf_float(f, cf_reshape(f, x, 2, (int64_t[]){-1, 2}));
  cf_var_mean(f, v, 1, (int[]){1}, 1, true, &var, &mean);
  cf_fusion_add_output(f, var);
  cf_fusion_add_output(f, mean);
}

static inline void mf_row_sum(cf_fusion *f, cf_dtype dt) {
  mf_out(f, cf_sum(f, mf_float(f, mf_in(f, dt, 2)), 1, (int[]){1}), dt);
}
static inline void mf_column_max(cf_fusion *f, cf_dtype dt) {
  mf_out(f, cf_max_reduce(f, mf_float(f, mf_in(f, dt, 2)), 1, (int[]){0}), dt);
}

/* gelu(x + bias). */
static inline void mf_bias_gelu(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 2)), *b = mf_float(f, mf_in(f, dt, 1));
  mf_out(f, cf_gelu(f, cf_add(f, x, mf_row(f, b))), dt);
}

/* SwiGLU: a * sigmoid(a) * b. */
static inline void mf_swiglu(cf_fusion *f, cf_dtype dt) {
  cf_tv *a = mf_float(f, mf_in(f, dt, 2)), *b = mf_float(f, mf_in(f, dt, 2));
  mf_out(f, cf_mul(f, cf_mul(f, a, cf_sigmoid(f, a)), b), dt);
}

/* A transpose with a cast, and x + transpose(x) (x read in two orders). */
static inline void mf_transpose(cf_fusion *f, cf_dtype dt) {
  mf_out(f, cf_mul_scalar(f, cf_transpose(f, mf_float(f, mf_in(f, dt, 2)), 0, 1), 2.0), dt);
}

/* x * sum(x, keepdim) and a transposed sum: two axis orders after a reduction. */
static inline void mf_sum_and_transpose(cf_fusion *f, cf_dtype dt) {
  cf_tv *x = mf_float(f, mf_in(f, dt, 3));
  cf_tv *s = cf_sum(f, x, 1, (int[]){2});
  mf_out(f, cf_add(f, s, cf_transpose(f, s, 0, 1)), dt);
}
static inline MfInputs mf_sq3(int64_t r, int64_t c) { return (MfInputs){1, {3}, {{r, r, c}}}; }

static const MfCase mf_cases[] = {
    {"softmax", mf_softmax, mf_x},
    {"log_softmax", mf_log_softmax, mf_x},
    {"layer_norm_stats", mf_layer_norm_stats, mf_xwb},
    {"layer_norm", mf_layer_norm, mf_xwb},
    {"rms_norm", mf_rms_norm, mf_xw},
    {"batch_norm_cl", mf_batch_norm_cl, mf_xwb},
    {"batch_stats_cf", mf_batch_stats_cf, mf_2cr},
    {"var_mean_middle", mf_var_mean_middle, mf_x1c},
    {"reshape_var_mean", mf_reshape_var_mean, mf_x},
    {"row_sum", mf_row_sum, mf_x},
    {"column_max", mf_column_max, mf_x},
    {"bias_gelu", mf_bias_gelu, mf_xw},
    {"swiglu", mf_swiglu, mf_xy},
    {"transpose", mf_transpose, mf_x},
    {"sum_and_transpose", mf_sum_and_transpose, mf_sq3},
};
enum { MF_NCASES = sizeof mf_cases / sizeof mf_cases[0] };

/* (r, c) pairs: ones, primes, model hidden sizes, rows past registers; c even (the
 * reshape into pairs). */
static const int64_t mf_shapes[][2] = {{1, 2}, {8, 6}, {3, 130}, {37, 1000}, {5, 4096}, {2, 17002}, {130, 64}, {1, 20000}};
enum { MF_NSHAPES = sizeof mf_shapes / sizeof mf_shapes[0] };

#endif
