/* Tests of the public domain API (include/cfuser/domain.h, scheduler/domain.c) and of
 * cf_propagate_transforms_to: a tensor's four domains (a permute's root in the input's
 * order, an rfactor tensor's root split into its logical domain), setting a loop domain to
 * IterDomains of the history (undoing a split, checked against the evaluator) and each of
 * its refusals, the exact / permissive / loop maps, and propagation limited to a position
 * and to a selection of tensors. */
#include "../kernels/kernel_check.h"
#include "cfuser/domain.h"
#include "sched_test_util.h"

static cf_fusion *f;
static void setup(void) { f = cf_fusion_create(); }
static void teardown(void) { cf_fusion_destroy(f); }
TestSuite(domain, .init = setup, .fini = teardown);

static cf_tv *input(int rank, const int64_t *sizes) {
  cf_tv *t = cf_tensor_concrete(f, CF_FLOAT, rank, sizes);
  cf_fusion_add_input(f, t);
  return t;
}

static char *id_str(const cf_id *id) {
  char *s = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&s, &n);
  fprintf(m, "%s%lld", cf_id_iter_type(id) == CF_ITER_REDUCTION ? "r" : "i", (long long)cf_id_extent(id));
  fclose(m);
  return s;
}

/* "i4 i8" for the domain d of t. */
static char *domain_str(cf_tv *t, cf_domain d) {
  char buf[256] = "";
  for (int i = 0; i < cf_tv_domain_size(t, d); i++) {
    char *s = id_str(cf_tv_domain_axis(t, d, i));
    strcat(buf, i ? " " : "");
    strcat(buf, s);
    free(s);
  }
  return strdup(buf);
}

#define EXPECT_DOMAIN(t, d, want)        \
  do {                                   \
    char *got_ = domain_str((t), (d));   \
    cr_expect_str_eq(got_, (want));      \
    free(got_);                          \
  } while (0)

Test(domain, the_four_domains_of_a_permute_and_an_rfactor) {
  cf_tv *x = input(2, (int64_t[]){4, 6});
  cf_tv *p = cf_transpose(f, x, 0, 1);
  cf_tv *s = cf_sum(f, p, 1, (int[]){1});
  cf_fusion_add_output(f, s);
  EXPECT_DOMAIN(p, CF_DOMAIN_ROOT, "i4 i6");
  EXPECT_DOMAIN(p, CF_DOMAIN_LOGICAL, "i6 i4");
  EXPECT_DOMAIN(p, CF_DOMAIN_ALLOCATION, "i6 i4");
  EXPECT_OK(cf_split(f, s, 1, 2));
  cf_tv *r = cf_rfactor(f, s, 1, (int[]){1});
  EXPECT_DOMAIN(r, CF_DOMAIN_ROOT, "i6 r4");
  EXPECT_DOMAIN(r, CF_DOMAIN_LOGICAL, "i6 r2 i2");
  EXPECT_DOMAIN(r, CF_DOMAIN_LOOP, "i6 r2 i2");
  EXPECT_DOMAIN(s, CF_DOMAIN_LOGICAL, "i6 r2");
  cr_expect_eq(cf_tv_domain_axis(r, CF_DOMAIN_LOOP, -1), cf_tv_axis(r, -1));
  cr_expect_null(cf_tv_domain_axis(r, CF_DOMAIN_ROOT, 2));
  cr_expect_eq(cf_tv_domain_size(NULL, CF_DOMAIN_LOOP), 0);
  cr_expect_eq(cf_tv_domain_size(r, (cf_domain)9), 0);
}

/* x[8, 12] -> y = neg(x), y split and merged, then its loop set back to a split's input
 * and outputs of another split: runs like the evaluator. */
Test(domain, set_loop_domain_undoes_and_redoes_splits) {
  cf_tv *x = input(2, (int64_t[]){8, 12});
  cf_tv *y = cf_neg(f, x);
  cf_fusion_add_output(f, y);
  cf_id *a0 = cf_tv_axis(y, 0), *a1 = cf_tv_axis(y, 1);
  EXPECT_OK(cf_split(f, y, 1, 4));
  cf_id *i1o = cf_tv_axis(y, 1), *i1i = cf_tv_axis(y, 2);
  EXPECT_OK(cf_merge(f, y, 0));
  EXPECT_TV(y, "T1_g_float[iS6{24}, iS5{4}]");
  EXPECT_OK(cf_set_loop_domain(f, y, 2, (cf_id *[]){a0, a1}));
  EXPECT_TV(y, "T1_g_float[iS2{8}, iS3{12}]");
  EXPECT_OK(cf_set_loop_domain(f, y, 3, (cf_id *[]){i1i, a0, i1o}));
  EXPECT_TV(y, "T1_g_float[iS5{4}, iS2{8}, iS4{3}]");
  EXPECT_OK(cf_parallelize(f, y, 0, CF_PT_TIDX));
  EXPECT_OK(cf_parallelize(f, y, 1, CF_PT_BIDX));
  KcInput in = {CF_FLOAT, 2, {8, 12}, NULL};
  free(kc_check(f, 1, &in, 0));
}

Test(domain, set_loop_domain_refusals_name_the_axis) {
  cf_tv *x = input(2, (int64_t[]){8, 12});
  cf_tv *y = cf_neg(f, x), *z = cf_neg(f, y);
  cf_fusion_add_output(f, z);
  cf_id *a0 = cf_tv_axis(y, 0), *a1 = cf_tv_axis(y, 1);
  EXPECT_OK(cf_split(f, y, 1, 4));
  cf_id *i1o = cf_tv_axis(y, 1);
  EXPECT_ERROR(cf_set_loop_domain(f, y, 2, (cf_id *[]){a0, cf_tv_axis(z, 1)}), CF_ERR_INVALID_ARGUMENT,
               "set_loop_domain: axis 1 (iS5{12}) is not derived from the logical domain for T1_l_float[iS2{8}, "
               "iS6{3}, iS7{4}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_set_loop_domain(f, y, 1, (cf_id *[]){a0}), CF_ERR_INVALID_ARGUMENT,
               "set_loop_domain: iS3{12} of T1 (a logical axis) is not covered for T1_l_float[iS2{8}, iS6{3}, iS7{4}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_set_loop_domain(f, y, 2, (cf_id *[]){a0, i1o}), CF_ERR_INVALID_ARGUMENT,
               "set_loop_domain: iS7{4} of T1 is not covered (the given axes take only part of the transform making "
               "it) for T1_l_float[iS2{8}, iS6{3}, iS7{4}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_set_loop_domain(f, y, 3, (cf_id *[]){a0, a1, i1o}), CF_ERR_INVALID_ARGUMENT,
               "set_loop_domain: axis 2 (iS6{3}) derives from another given axis for T1_l_float[iS2{8}, iS6{3}, "
               "iS7{4}]");
  cf_fusion_clear_error(f);
  EXPECT_ERROR(cf_set_loop_domain(f, y, 2, (cf_id *[]){a0, a0}), CF_ERR_INVALID_ARGUMENT,
               "set_loop_domain: axis 1 (iS2{8}) is given twice for T1_l_float[iS2{8}, iS6{3}, iS7{4}]");
  cf_fusion_clear_error(f);
  EXPECT_OK(cf_inline_at(f, y, 1));
  EXPECT_ERROR(cf_set_loop_domain(f, y, 2, (cf_id *[]){a0, a1}), CF_ERR_INVALID_SCHEDULE,
               "set_loop_domain: T1 is inlined already; set its loop domain before inlining for T1_l_float[iS2{8}, "
               "iS6{3}, iS7{4}]");
}

Test(domain, exact_permissive_and_loop_maps) {
  cf_tv *x = input(2, (int64_t[]){4, 6}), *v = input(1, (int64_t[]){6});
  cf_tv *b = cf_broadcast(f, v, 2, (bool[]){true, false});
  cf_tv *y = cf_add(f, x, b);
  cf_fusion_add_output(f, y);
  bool m = true;
  EXPECT_OK(cf_ids_mapped(f, CF_MAP_EXACT, cf_tv_axis(b, 1), cf_tv_axis(y, 1), &m));
  cr_expect(m);
  EXPECT_OK(cf_ids_mapped(f, CF_MAP_EXACT, cf_tv_axis(b, 0), cf_tv_axis(y, 0), &m));
  cr_expect(!m, "a broadcast axis is not exactly mapped to its concrete partner");
  EXPECT_OK(cf_ids_mapped(f, CF_MAP_PERMISSIVE, cf_tv_axis(b, 0), cf_tv_axis(y, 0), &m));
  cr_expect(m, "it is permissively mapped");
  EXPECT_OK(cf_ids_mapped(f, CF_MAP_LOOP, cf_tv_axis(b, 1), cf_tv_axis(y, 1), &m));
  cr_expect(!m, "no loop is shared before inlining");
  EXPECT_OK(cf_inline_most(f));
  EXPECT_OK(cf_ids_mapped(f, CF_MAP_LOOP, cf_tv_axis(b, 1), cf_tv_axis(y, 1), &m));
  cr_expect(m, "inlined, they share the loop");
  EXPECT_ERROR(cf_ids_mapped(f, CF_MAP_EXACT, NULL, cf_tv_axis(y, 1), &m), CF_ERR_INVALID_ARGUMENT,
               "ids_mapped: a is not an IterDomain of this fusion");
}

/* Only the reference's first axis is replayed; the producer keeps its other axes. */
Test(domain, propagation_limited_to_a_position_and_a_selection) {
  cf_tv *x = input(2, (int64_t[]){8, 12});
  cf_tv *y = cf_neg(f, x), *z = cf_relu(f, y), *o = cf_exp(f, z);
  cf_fusion_add_output(f, o);
  EXPECT_OK(cf_split(f, o, 0, 4));
  EXPECT_OK(cf_split(f, o, 2, 3));
  EXPECT_TV(o, "T3_g_float[iS8{2}, iS9{4}, iS10{4}, iS11{3}]");
  EXPECT_OK(cf_propagate_transforms_to(f, o, 1, 1, (cf_tv *[]){z}));
  EXPECT_TV(z, "T2_l_float[iS12{2}, iS13{4}, iS5{12}]");
  EXPECT_TV(y, "T1_l_float[iS2{8}, iS3{12}]");
  EXPECT_OK(cf_propagate_transforms_to(f, o, -1, 0, NULL));
  EXPECT_TV(y, "T1_l_float[iS16{2}, iS17{4}, iS18{4}, iS19{3}]");
  EXPECT_ERROR(cf_propagate_transforms_to(f, o, 6, 0, NULL), CF_ERR_INVALID_ARGUMENT,
               "propagate_transforms_to: position 6 out of range for T3_g_float[iS8{2}, iS9{4}, iS10{4}, iS11{3}]");
}
