/* tests/layout/test_layout_laws.c: property tests of the layout algebra's laws on many
 * random layouts (a fixed seed per law, so a failure is reproducible). The laws are stated
 * for admissible operands, which the generators build: a tile or a right-hand side made
 * of factors of the other layout's modes (so every divisibility condition holds), and
 * injective layouts made of a subset of the modes of a compact layout. */
#include "layout_test_util.h"

#define CASES 400

static cf_layout must(cf_status s, const cf_layout *l, const cf_layout_err *e, const char *what)
{
  cr_assert_eq(s, CF_OK, "%s: %s", what, e->message);
  return *l;
}

Test(layout_laws, composition_evaluates_as_function_composition)
{
  LtRng r = {0x9e3779b97f4a7c15ull};
  for (int c = 0; c < CASES; c++) {
    LtModes am = lt_any_modes(&r);
    cf_layout a = lt_layout_of(&r, &am, 60, 60);
    LtModes refined = lt_refine(&r, &am), bm = lt_subset(&r, &refined, false);
    cf_layout b = lt_layout_of(&r, &bm, 60, 60), out;
    cf_layout_err e;
    cf_layout rl = must(cf_layout_composition(&a, &b, &out, &e), &out, &e, "composition");
    for (int64_t i = 0; i < lt_size(&b); i++)
      cr_assert_eq(lt_eval(&rl, i), lt_eval(&a, lt_eval(&b, i)), "(%s o %s)(%lld) = %s(%lld)",
                   lt_str(&a), lt_str(&b), (long long)i, lt_str(&rl), (long long)i);
    cf_int_tuple sb, sr;
    cf_layout_shape(&b, &sb);
    cf_layout_shape(&rl, &sr);
    cr_assert(cf_tuple_compatible(&sb, &sr), "%s o %s = %s: shape not compatible", lt_str(&a),
              lt_str(&b), lt_str(&rl));
  }
}

/* An injective layout: some of the modes of a compact layout of a random shape, whose
 * size is returned in *m. */
static cf_layout injective(LtRng *r, int64_t *m)
{
  LtModes base = lt_shape_modes(r), refined = lt_refine(r, &base);
  LtModes sub = lt_subset(r, &refined, false);
  *m = 1;
  for (int k = 0; k < base.n; k++)
    *m *= base.s[k];
  return lt_layout_of(r, &sub, 60, 100); /* complement needs static strides */
}

/* Every value of l in [0, n) exactly once (and l has n elements). */
static void expect_bijection(const cf_layout *l, int64_t n, const char *what)
{
  static char seen[1 << 16];
  cr_assert_eq(lt_size(l), n, "%s: %s has size %lld, expected %lld", what, lt_str(l),
               (long long)lt_size(l), (long long)n);
  memset(seen, 0, (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = lt_eval(l, i);
    cr_assert(v >= 0 && v < n && !seen[v], "%s: %s(%lld) = %lld repeats or is out of [0,%lld)",
              what, lt_str(l), (long long)i, (long long)v, (long long)n);
    seen[v] = 1;
  }
}

static void expect_injective(const cf_layout *l, const char *what)
{
  static char seen[1 << 20];
  int64_t n = cf_layout_cosize(l).value;
  cr_assert(n <= (int64_t)sizeof seen, "%s: cosize of %s too large for the test", what, lt_str(l));
  memset(seen, 0, (size_t)n);
  for (int64_t i = 0; i < lt_size(l); i++) {
    int64_t v = lt_eval(l, i);
    cr_assert(v >= 0 && v < n && !seen[v], "%s: %s(%lld) = %lld repeats", what, lt_str(l),
              (long long)i, (long long)v);
    seen[v] = 1;
  }
}

Test(layout_laws, complement_is_disjoint_and_covers_the_cotarget)
{
  LtRng r = {0x2545f4914f6cdd1dull};
  for (int c = 0; c < CASES; c++) {
    int64_t m;
    cf_layout a = injective(&r, &m), comp, both, out;
    cf_layout_err e;
    char text[32];
    snprintf(text, sizeof text, lt_rand(&r, 0, 1) ? "_%lld" : "%lld", (long long)m);
    cf_int_tuple cot = lt_tuple(text);
    comp = must(cf_layout_complement(&a, &cot, &out, &e), &out, &e, "complement");
    cf_layout pair[2] = {a, comp};
    both = must(cf_layout_concat(pair, 2, &out, &e), &out, &e, "concat");
    expect_bijection(&both, m, "(A, complement(A, M))");
    for (int64_t i = 1; i < lt_size(&comp); i++)
      cr_assert_lt(lt_eval(&comp, i - 1), lt_eval(&comp, i), "complement %s of %s is not ordered",
                   lt_str(&comp), lt_str(&a));
  }
}

Test(layout_laws, complement_without_cotarget_fills_the_cosize)
{
  LtRng r = {0x1234567887654321ull};
  for (int c = 0; c < CASES; c++) {
    int64_t m;
    cf_layout a = injective(&r, &m), comp, both, out;
    cf_layout_err e;
    comp = must(cf_layout_complement(&a, NULL, &out, &e), &out, &e, "complement");
    cf_layout pair[2] = {a, comp};
    both = must(cf_layout_concat(pair, 2, &out, &e), &out, &e, "concat");
    int64_t cos = cf_layout_cosize(&a).value, n = lt_size(&both);
    cr_assert_geq(n, cos, "(%s, %s) has %lld elements, fewer than cosize %lld", lt_str(&a),
                  lt_str(&comp), (long long)n, (long long)cos);
    expect_bijection(&both, n, "(A, complement(A))");
  }
}

Test(layout_laws, logical_divide_is_composition_with_tiler_and_complement)
{
  LtRng r = {0xdeadbeefcafef00dull};
  for (int c = 0; c < CASES; c++) {
    LtModes am = lt_any_modes(&r);
    cf_layout a = lt_layout_of(&r, &am, 60, 60), ca, comp, tc, direct, div, out;
    LtModes refined = lt_refine(&r, &am), tm = lt_subset(&r, &refined, false);
    cf_layout t = lt_layout_of(&r, &tm, 60, 100);
    cf_layout_err e;
    div = must(cf_layout_logical_divide(&a, &t, &out, &e), &out, &e, "logical_divide");
    ca = must(cf_layout_coalesce(&a, &out, &e), &out, &e, "coalesce");
    cf_int_tuple shape;
    cf_layout_shape(&ca, &shape);
    comp = must(cf_layout_complement(&t, &shape, &out, &e), &out, &e, "complement");
    cf_layout pair[2] = {t, comp};
    tc = must(cf_layout_concat(pair, 2, &out, &e), &out, &e, "concat");
    direct = must(cf_layout_composition(&a, &tc, &out, &e), &out, &e, "composition");
    cr_assert(cf_layout_equal(&div, &direct), "%s / %s = %s, but A o (T, T*) = %s", lt_str(&a),
              lt_str(&t), lt_str(&div), lt_str(&direct));
    for (int64_t i = 0; i < lt_size(&div); i++)
      cr_assert_eq(lt_eval(&div, i), lt_eval(&a, lt_eval(&tc, i)), "%s / %s at %lld", lt_str(&a),
                   lt_str(&t), (long long)i);
  }
}

Test(layout_laws, zipped_divide_tile_mode_is_the_composition)
{
  LtRng r = {0x0123456789abcdefull};
  for (int c = 0; c < CASES; c++) {
    LtModes m0 = lt_shape_modes(&r), m1 = lt_shape_modes(&r);
    for (int k = 0; k < m0.n; k++)
      m0.d[k] = lt_rand(&r, 0, 30);
    for (int k = 0; k < m1.n; k++)
      m1.d[k] = lt_rand(&r, 0, 30);
    cf_layout a0 = lt_layout_of(&r, &m0, 50, 50), a1 = lt_layout_of(&r, &m1, 50, 50), out;
    LtModes f0 = lt_refine(&r, &m0), f1 = lt_refine(&r, &m1);
    LtModes t0m = lt_subset(&r, &f0, false), t1m = lt_subset(&r, &f1, false);
    cf_layout parts[2] = {a0, a1}, tiles[2] = {lt_layout_of(&r, &t0m, 50, 100),
                                            lt_layout_of(&r, &t1m, 50, 100)};
    cf_layout_err e;
    cf_layout a = must(cf_layout_concat(parts, 2, &out, &e), &out, &e, "concat");
    cf_layout tiler = must(cf_layout_make_tiler(tiles, 2, &out, &e), &out, &e, "make_tile");
    cf_layout z = must(cf_layout_zipped_divide(&a, &tiler, &out, &e), &out, &e, "zipped_divide");
    cf_layout comp = must(cf_layout_composition(&a, &tiler, &out, &e), &out, &e, "composition");
    cf_layout z0;
    int zero = 0;
    cr_assert_eq(cf_layout_get(&z, &zero, 1, &z0, &e), CF_OK);
    cr_assert(cf_layout_equal(&z0, &comp), "layout<0>(zipped_divide(%s, %s)) = %s, composition %s",
              lt_str(&a), lt_str(&tiler), lt_str(&z0), lt_str(&comp));
  }
}

Test(layout_laws, coalesce_preserves_the_function_and_never_adds_modes)
{
  LtRng r = {0x5555aaaa3333ccccull};
  for (int c = 0; c < CASES; c++) {
    LtModes am = lt_any_modes(&r);
    cf_layout a = lt_layout_of(&r, &am, 60, 60), flat, out;
    cf_layout_err e;
    cf_layout co = must(cf_layout_coalesce(&a, &out, &e), &out, &e, "coalesce");
    flat = must(cf_layout_flatten(&a, &out, &e), &out, &e, "flatten");
    cr_assert_eq(lt_size(&co), lt_size(&a), "coalesce(%s) = %s", lt_str(&a), lt_str(&co));
    cr_assert_leq(cf_layout_depth(&co), 1, "coalesce(%s) = %s", lt_str(&a), lt_str(&co));
    cr_assert_leq(cf_layout_rank(&co), cf_layout_rank(&flat), "coalesce(%s) = %s", lt_str(&a),
                  lt_str(&co));
    for (int64_t i = 0; i < lt_size(&a); i++)
      cr_assert_eq(lt_eval(&co, i), lt_eval(&a, i), "coalesce(%s) = %s at %lld", lt_str(&a),
                   lt_str(&co), (long long)i);
  }
}

Test(layout_laws, right_inverse_composed_after_the_layout_is_the_identity)
{
  LtRng r = {0x7777111199992222ull};
  for (int c = 0; c < CASES; c++) {
    LtModes am = lt_any_modes(&r);
    cf_layout a = lt_layout_of(&r, &am, 70, 70), out;
    cf_layout_err e;
    cf_layout inv = must(cf_layout_right_inverse(&a, &out, &e), &out, &e, "right_inverse");
    for (int64_t i = 0; i < lt_size(&inv); i++)
      cr_assert_eq(lt_eval(&a, lt_eval(&inv, i)), i, "%s(right_inverse = %s (%lld))", lt_str(&a),
                   lt_str(&inv), (long long)i);
  }
}

Test(layout_laws, right_inverse_of_a_permutation_is_complete)
{
  LtRng r = {0x1111222233334444ull};
  for (int c = 0; c < CASES; c++) {
    LtModes base = lt_shape_modes(&r), refined = lt_refine(&r, &base);
    LtModes perm = lt_subset(&r, &refined, true);
    cf_layout a = lt_layout_of(&r, &perm, 100, 100), out;
    cf_layout_err e;
    cf_layout inv = must(cf_layout_right_inverse(&a, &out, &e), &out, &e, "right_inverse");
    cr_assert_eq(lt_size(&inv), lt_size(&a), "right_inverse(%s) = %s", lt_str(&a), lt_str(&inv));
    expect_bijection(&inv, lt_size(&a), "right inverse of a permutation");
  }
}

Test(layout_laws, left_inverse_undoes_an_injective_layout)
{
  LtRng r = {0x4444333322221111ull};
  for (int c = 0; c < CASES; c++) {
    int64_t m;
    cf_layout a = injective(&r, &m), out;
    cf_layout_err e;
    cf_layout inv = must(cf_layout_left_inverse(&a, &out, &e), &out, &e, "left_inverse");
    for (int64_t i = 0; i < lt_size(&a); i++)
      cr_assert_eq(lt_eval(&inv, lt_eval(&a, i)), i, "left_inverse(%s) = %s at %lld", lt_str(&a),
                   lt_str(&inv), (long long)i);
  }
}

/* A right-hand side B for which the product with the injective layout a is admissible:
 * its first factor is H, the size of the holes of a below a's extent M, and its second
 * any t, so that B's modes line up with the modes of complement(a, size(a) * H * t). */
static cf_layout product_rhs(LtRng *r, const cf_layout *a)
{
  cf_layout flat;
  cf_layout_err e;
  cr_assert_eq(cf_layout_flatten(a, &flat, &e), CF_OK);
  int64_t extent = 1;
  for (int k = 0; k < cf_layout_rank(&flat); k++) {
    cf_layout mode;
    cr_assert_eq(cf_layout_get(&flat, &k, 1, &mode, &e), CF_OK);
    int64_t x = lt_size(&mode) * lt_eval(&mode, 1 < lt_size(&mode) ? 1 : 0);
    extent = x > extent ? x : extent;
  }
  int64_t h = extent / lt_size(a), t = lt_rand(r, 1, 3);
  LtModes m = lt_rand(r, 0, 1) ? (LtModes){2, {h, t}, {1, h}} : (LtModes){2, {t, h}, {h, 1}};
  if (lt_rand(r, 0, 2) == 0)
    m = (LtModes){1, {h * t}, {1}};
  return lt_layout_of(r, &m, 70, 70);
}

Test(layout_laws, logical_product_contains_the_tile_at_every_offset)
{
  LtRng r = {0xabcdef0123456789ull};
  for (int c = 0; c < CASES; c++) {
    int64_t m;
    cf_layout a = injective(&r, &m), b = product_rhs(&r, &a), out;
    cf_layout_err e;
    cf_layout p = must(cf_layout_logical_product(&a, &b, &out, &e), &out, &e, "logical_product");
    cf_layout tile;
    int zero = 0;
    cr_assert_eq(cf_layout_get(&p, &zero, 1, &tile, &e), CF_OK);
    cr_assert(cf_layout_equal(&tile, &a), "layout<0>(%s x %s) = %s", lt_str(&a), lt_str(&b),
              lt_str(&tile));
    int64_t na = lt_size(&a), nb = lt_size(&b);
    cr_assert_eq(lt_size(&p), na * nb);
    for (int64_t j = 0; j < nb; j++)
      for (int64_t i = 0; i < na; i++)
        cr_assert_eq(lt_eval(&p, i + na * j), lt_eval(&a, i) + lt_eval(&p, na * j),
                     "%s x %s = %s: tile %lld", lt_str(&a), lt_str(&b), lt_str(&p), (long long)j);
    expect_injective(&p, "logical product of injective layouts");
  }
}

/* blocked_product(A, B) at ((a0,b0),(a1,b1)) is A(a0,a1) + offset(b0,b1): A's tile,
 * whole, at every block; raked_product interleaves: ((b0,a0),(b1,a1)). */
Test(layout_laws, blocked_and_raked_products_contain_the_tile)
{
  LtRng r = {0x0f0f0f0f0f0f0f0full};
  for (int c = 0; c < CASES / 4; c++) {
    static const int shapes[] = {1, 2, 3, 4};
    int64_t a0s = shapes[lt_rand(&r, 1, 3)], a1s = shapes[lt_rand(&r, 1, 3)];
    int64_t b0s = shapes[lt_rand(&r, 0, 3)], b1s = shapes[lt_rand(&r, 0, 3)];
    LtModes am = {2, {a0s, a1s}, {a1s, 1}}, bm = {2, {b0s, b1s}, {1, b0s}};
    cf_layout a = lt_flat_layout(&r, &am, 70, 100), b = lt_flat_layout(&r, &bm, 70, 70), bp, rp, out;
    cf_layout_err e;
    bp = must(cf_layout_blocked_product(&a, &b, &out, &e), &out, &e, "blocked_product");
    rp = must(cf_layout_raked_product(&a, &b, &out, &e), &out, &e, "raked_product");
    int64_t as[2], bs[2];
    for (int k = 0; k < 2; k++) {
      cf_layout mode;
      cr_assert_eq(cf_layout_get(&a, &k, 1, &mode, &e), CF_OK);
      as[k] = lt_size(&mode);
      cr_assert_eq(cf_layout_get(&b, &k, 1, &mode, &e), CF_OK);
      bs[k] = lt_size(&mode);
    }
    int64_t base_b = -1, base_r = -1;
    for (int64_t b0 = 0; b0 < bs[0]; b0++)
      for (int64_t b1 = 0; b1 < bs[1]; b1++)
        for (int64_t a0 = 0; a0 < as[0]; a0++)
          for (int64_t a1 = 0; a1 < as[1]; a1++) {
            char cb[96], cr[96];
            snprintf(cb, sizeof cb, "((%lld,%lld),(%lld,%lld))", (long long)a0, (long long)b0,
                     (long long)a1, (long long)b1);
            snprintf(cr, sizeof cr, "((%lld,%lld),(%lld,%lld))", (long long)b0, (long long)a0,
                     (long long)b1, (long long)a1);
            cf_int_tuple tb = lt_tuple(cb), tr = lt_tuple(cr), ta;
            char ca[48];
            snprintf(ca, sizeof ca, "(%lld,%lld)", (long long)a0, (long long)a1);
            ta = lt_tuple(ca);
            cf_tuple_int vb, vr, va;
            cr_assert_eq(cf_layout_crd2idx(&bp, &tb, &vb, &e), CF_OK);
            cr_assert_eq(cf_layout_crd2idx(&rp, &tr, &vr, &e), CF_OK);
            cr_assert_eq(cf_layout_crd2idx(&a, &ta, &va, &e), CF_OK);
            if (a0 == 0 && a1 == 0)
              base_b = vb.value, base_r = vr.value;
            cr_assert_eq(vb.value, va.value + base_b, "blocked %s at %s", lt_str(&bp), cb);
            cr_assert_eq(vr.value, va.value + base_r, "raked %s at %s", lt_str(&rp), cr);
          }
  }
}
