/* Tests of ir/ops.c: every op's output (dtype, rank, iteration types, extents), the
 * Expr it records, and the math it prints in nvFuser's notation. */
#include "ops_test_util.h"

typedef cf_tv *(*unary_fn)(cf_fusion *, cf_tv *);
typedef cf_tv *(*binary_fn)(cf_fusion *, cf_tv *, cf_tv *);

static const struct {
  const char *name;
  unary_fn fn;
} unary_ops[] = {
#define CF_X(n) {#n, cf_##n},
    CF_UNARY_OP_TABLE(CF_X)
#undef CF_X
};
static const struct {
  const char *name;
  binary_fn fn;
} binary_ops[] = {
#define CF_X(n) {#n, cf_##n},
    CF_BINARY_OP_TABLE(CF_X)
#undef CF_X
};
enum { NUNARY = sizeof unary_ops / sizeof unary_ops[0], NBINARY = sizeof binary_ops / sizeof binary_ops[0] };


Test(ops, set_copies_shape_and_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_BFLOAT16, 3, (int64_t[]){2, 1, 5});
  cf_tv *b = cf_set(f, a);
  cf_fusion_add_output(f, b);
  char *m = ot_math(f);
  cr_expect_str_eq(m, "Inputs:\n"
                      "  T0_g___bfloat[iS0{2}, bS1{1}, iS2{5}]\n"
                      "Outputs:\n"
                      "  T1_g___bfloat[iS3{2}, bS4{1}, iS5{5}]\n"
                      "\n"
                      "%kernel_math {\n"
                      "T1_g___bfloat[iS3{2}, bS4{1}, iS5{5}]\n"
                      "   = Set( T0_g___bfloat[iS0{2}, bS1{1}, iS2{5}] );\n"
                      "} // %kernel_math\n");
  free(m);
  cr_expect_eq(cf_tv_dtype(b), CF_BFLOAT16);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(b, 1)), CF_ITER_BROADCAST);
  cf_fusion_destroy(f);
}

/* Every unary op on float keeps the shape; the dtype is float except for the predicates
 * (bool); bitwise_not and imag (complex only, as torch's) refuse float. */
Test(ops, every_unary_op_on_float_keeps_shape_and_dtype) {
  for (int i = 0; i < NUNARY; i++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
    cf_tv *b = unary_ops[i].fn(f, a);
    if (strcmp(unary_ops[i].name, "bitwise_not") == 0) {
      cr_expect_null(b);
      cr_expect_str_eq(cf_fusion_error(f), "bitwise_not: T0 has dtype float, but bitwise_not takes integer or bool "
                                           "tensors; cast it first for T0_g_float[iS0{2}, iS1{3}]");
      cf_fusion_destroy(f);
      continue;
    }
    if (strcmp(unary_ops[i].name, "imag") == 0) {
      cr_expect_null(b);
      cr_expect_str_eq(cf_fusion_error(f), "imag: T0 has dtype float, but imag takes complex tensors; cast it first "
                                           "for T0_g_float[iS0{2}, iS1{3}]");
      cf_fusion_destroy(f);
      continue;
    }
    cr_assert_not_null(b, "%s: %s", unary_ops[i].name, cf_fusion_error(f));
    char want[256];
    snprintf(want, sizeof want, "T1_l_%s[iS2{2}, iS3{3}]\n   = %s( T0_g_float[iS0{2}, iS1{3}] );\n",
             ir_op_type_rule(ir_tv(b)->def->op) == TR_PREDICATE ? "bool" : "float", unary_ops[i].name);
    ot_expect_def(b, want);
    cr_expect_eq(ir_op_kind(ir_tv(b)->def->op), OPK_UNARY);
    cr_expect_str_eq(ir_op_name(ir_tv(b)->def->op), unary_ops[i].name);
    cf_fusion_destroy(f);
  }
}

Test(ops, unary_math_on_integers_gives_float) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *i = tu_input(f, CF_INT32, 1, (int64_t[]){4});
  cf_tv *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  cr_expect_eq(cf_tv_dtype(cf_exp(f, i)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_gelu(f, i)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_sqrt(f, b)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_neg(f, i)), CF_INT32);
  cr_expect_eq(cf_tv_dtype(cf_abs(f, i)), CF_INT32);
  cr_expect_eq(cf_tv_dtype(cf_relu(f, i)), CF_INT32);
  cr_expect_eq(cf_tv_dtype(cf_abs(f, b)), CF_BOOL);
  cr_expect_eq(cf_tv_dtype(cf_exp(f, tu_input(f, CF_HALF, 1, (int64_t[]){4}))), CF_HALF);
  cr_expect_eq(cf_fusion_status(f), CF_OK);
  cf_fusion_destroy(f);
}

/* The IrOp of a public binary op (the op table's row of that printed name). */
static IrOp binary_irop(const char *name) {
  for (int op = 0; op < OP_COUNT; op++)
    if (ir_op_kind((IrOp)op) == OPK_BINARY && strcmp(ir_op_name((IrOp)op), name) == 0) return (IrOp)op;
  return OP_COUNT;
}

Test(ops, every_binary_op_records_both_operands) {
  for (int i = 0; i < NBINARY; i++) {
    IrOp op = binary_irop(binary_ops[i].name);
    cr_assert_neq(op, OP_COUNT, "%s has no row in the op table", binary_ops[i].name);
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
    cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
    cf_tv *c = binary_ops[i].fn(f, a, b);
    if (!ir_op_accepts(op, CF_FLOAT)) { /* bitwise ops and shifts: refused with the reason */
      cr_expect_null(c, "%s", binary_ops[i].name);
      cr_expect(strstr(cf_fusion_error(f), "has dtype float, but") != NULL, "%s", cf_fusion_error(f));
      cf_fusion_destroy(f);
      continue;
    }
    cr_assert_not_null(c, "%s: %s", binary_ops[i].name, cf_fusion_error(f));
    char want[256];
    snprintf(want, sizeof want,
             "T2_l_%s[iS4{2}, iS5{3}]\n   = %s( T0_g_float[iS0{2}, iS1{3}],\n        T1_g_float[iS2{2}, iS3{3}] );\n",
             ir_op_is_comparison(op) || ir_op_type_rule(op) == TR_LOGICAL ? "bool" : "float", binary_ops[i].name);
    ot_expect_def(c, want);
    Expr *e = ir_tv(c)->def;
    cr_expect_eq(e->nin, 2);
    cr_expect_eq(e->in[0], ir_tv(a));
    cr_expect_eq(e->in[1], ir_tv(b));
    cr_expect(ptrvec_contains(&ir_tv(a)->uses, e));
    cr_expect(ptrvec_contains(&ir_tv(b)->uses, e));
    cr_expect_str_eq(ir_op_name(e->op), binary_ops[i].name);
    cf_fusion_destroy(f);
  }
}

Test(ops, binary_dtype_promotion) {
  static const struct {
    cf_dtype a, b, want;
  } cases[] = {
      {CF_FLOAT, CF_DOUBLE, CF_DOUBLE}, {CF_HALF, CF_FLOAT, CF_FLOAT},
      {CF_HALF, CF_BFLOAT16, CF_FLOAT}, {CF_BFLOAT16, CF_BFLOAT16, CF_BFLOAT16},
      {CF_INT64, CF_HALF, CF_HALF},     {CF_INT32, CF_FLOAT, CF_FLOAT},
      {CF_INT8, CF_INT32, CF_INT32},    {CF_INT32, CF_INT64, CF_INT64},
      {CF_BOOL, CF_INT8, CF_INT8},      {CF_BOOL, CF_BOOL, CF_BOOL},
      {CF_UINT32, CF_INT32, CF_INT64},  {CF_UINT32, CF_BOOL, CF_UINT32},
      {CF_DOUBLE, CF_BOOL, CF_DOUBLE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cf_fusion *f = cf_fusion_create();
    cf_tv *a = tu_input(f, cases[i].a, 1, (int64_t[]){3});
    cf_tv *b = tu_input(f, cases[i].b, 1, (int64_t[]){3});
    cr_expect_eq(cf_tv_dtype(cf_mul(f, a, b)), cases[i].want, "case %zu", i);
    cr_expect_eq(cf_tv_dtype(cf_mul(f, b, a)), cases[i].want, "case %zu swapped", i);
    cr_expect_eq(cf_tv_dtype(cf_lt(f, a, b)), CF_BOOL, "case %zu", i);
    cf_fusion_destroy(f);
  }
}

Test(ops, binary_broadcasts_size_one_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 3, (int64_t[]){2, 1, 1});
  cf_tv *b = tu_input(f, CF_FLOAT, 3, (int64_t[]){1, 4, 1});
  cf_tv *c = cf_add(f, a, b);
  ot_expect_tv(f, c, "T2_l_float[iS6{2}, iS7{4}, bS8{1}]");
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(c, 0)), CF_ITER_ITERATION);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(c, 2)), CF_ITER_BROADCAST);
  cr_expect_eq(cf_id_extent(cf_tv_axis(c, 1)), 4);
  cf_fusion_destroy(f);
}

Test(ops, binary_symbolic_extents_come_from_an_operand) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *b = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *c = tu_input(f, CF_FLOAT, 2, (int64_t[]){3, 1});
  ot_expect_tv(f, cf_add(f, a, b), "T3_l_float[iS6{i0}, iS7{i1}]");
  /* A constant extent wins over a symbolic one; a broadcast side gives way. */
  ot_expect_tv(f, cf_add(f, a, c), "T4_l_float[iS8{3}, iS9{i1}]");
  cr_expect_eq(cf_fusion_status(f), CF_OK);
  cf_fusion_destroy(f);
}

Test(ops, operands_are_seen_without_their_reduction_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 1, (int64_t[]){2});
  cf_tv *s = cf_sum(f, a, 1, (int[]){1});
  cf_tv *c = cf_add(f, s, b);
  ot_expect_tv(f, c, "T3_l_float[iS5{2}]");
  ot_expect_tv(f, cf_neg(f, s), "T4_l_float[iS6{2}]");
  cf_fusion_destroy(f);
}

Test(ops, scalar_rhs_ops_print_the_constant) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 1, (int64_t[]){4});
  cf_tv *b = cf_add_scalar(f, a, 2.5);
  cf_tv *c = cf_mul_scalar(f, b, -3);
  ot_expect_def(b, "T1_l_float[iS1{4}]\n   = add( T0_g_float[iS0{4}], 2.5 );\n");
  ot_expect_def(c, "T2_l_float[iS2{4}]\n   = mul( T1_l_float[iS1{4}], -3 );\n");
  Expr *e = ir_tv(c)->def;
  cr_expect_eq(e->nin, 1);
  cr_expect(e->attr.scalar_rhs.is_scalar_rhs);
  cr_expect_eq(e->attr.scalar_rhs.value, -3.0);
  cr_expect_eq(e->op, OP_MUL);
  cf_fusion_destroy(f);
}

Test(ops, scalar_rhs_dtype_rules) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *i = tu_input(f, CF_INT32, 1, (int64_t[]){4});
  cf_tv *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){4});
  cr_expect_eq(cf_tv_dtype(cf_add_scalar(f, i, 2)), CF_INT32);
  cr_expect_eq(cf_tv_dtype(cf_mul_scalar(f, i, 0.5)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_add_scalar(f, b, 1)), CF_INT64);
  cr_expect_eq(cf_tv_dtype(cf_mul_scalar(f, b, 1.5)), CF_FLOAT);
  cr_expect_eq(cf_tv_dtype(cf_mul_scalar(f, h, 1e10)), CF_HALF);
  cr_expect_eq(cf_tv_dtype(cf_add_scalar(f, i, INFINITY)), CF_FLOAT);
  cf_fusion_destroy(f);
}

Test(ops, where_broadcasts_three_operands_and_promotes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *c = tu_input(f, CF_BOOL, 2, (int64_t[]){2, 1});
  cf_tv *a = tu_input(f, CF_HALF, 2, (int64_t[]){1, 3});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 1});
  cf_tv *w = cf_where(f, c, a, b);
  ot_expect_def(w, "T3_l_float[iS6{2}, iS7{3}]\n"
                   "   = where( T0_g_bool[iS0{2}, bS1{1}],\n"
                   "        T1_g___half[bS2{1}, iS3{3}],\n"
                   "        T2_g_float[bS4{1}, bS5{1}] );\n");
  cr_expect_eq(ir_tv(w)->def->op, OP_WHERE);
  cr_expect_eq(ir_tv(w)->def->nin, 3);
  cf_fusion_destroy(f);
}

Test(ops, cast_records_the_target_dtype) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *b = cf_cast(f, a, CF_HALF);
  cf_tv *c = cf_cast(f, b, CF_INT64);
  ot_expect_def(b, "T1_l___half[iS2{2}, iS3{3}]\n   = cast( T0_g_float[iS0{2}, iS1{3}], __half );\n");
  ot_expect_def(c, "T2_l_int64_t[iS4{2}, iS5{3}]\n   = cast( T1_l___half[iS2{2}, iS3{3}], int64_t );\n");
  cr_expect_eq(ir_tv(c)->def->attr.cast.to, CF_INT64);
  cr_expect_eq(cf_tv_dtype(c), CF_INT64);
  cf_fusion_destroy(f);
}

Test(ops, broadcast_inserts_size_one_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *b = cf_broadcast(f, a, 4, (bool[]){true, false, true, false});
  ot_expect_def(b, "T1_l_float[bS2{1}, iS3{2}, bS4{1}, iS5{3}]\n"
                   "   = broadcast( T0_g_float[iS0{2}, iS1{3}], {true, false, true, false} );\n");
  cr_expect_eq(cf_tv_logical_rank(b), 4);
  for (int i = 0; i < 4; i++)
    cr_expect_eq(cf_id_iter_type(cf_tv_axis(b, i)), i % 2 ? CF_ITER_ITERATION : CF_ITER_BROADCAST);
  Expr *e = ir_tv(b)->def;
  cr_expect_eq(e->attr.broadcast.rank, 4);
  cr_expect(e->attr.broadcast.is_broadcast[2]);
  cr_expect_not(e->attr.broadcast.is_broadcast[3]);
  /* No new axis at all is a plain copy of the shape. */
  ot_expect_tv(f, cf_broadcast(f, a, 2, (bool[]){false, false}), "T2_l_float[iS6{2}, iS7{3}]");
  cf_fusion_destroy(f);
}

Test(ops, sum_keeps_reduced_axes_as_reduction_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 3, (int64_t[]){2, 3, 4});
  cf_tv *s = cf_sum(f, a, 2, (int[]){0, -1});
  ot_expect_def(s, "T1_l_float[rS3{2}, iS4{3}, rS5{4}]\n   = sum( T0_g_float[iS0{2}, iS1{3}, iS2{4}] );\n");
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(s, 0)), CF_ITER_REDUCTION);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(s, 1)), CF_ITER_ITERATION);
  cr_expect_eq(cf_id_iter_type(cf_tv_axis(s, 2)), CF_ITER_REDUCTION);
  TensorView *t = TV(ir_tv(s));
  cr_expect_eq(t->root, t->logical);
  cr_expect_eq(t->nroot, 3);
  cr_expect_eq(ir_tv(s)->def->op, OP_SUM);
  cf_fusion_destroy(f);
}

Test(ops, reduction_dtypes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *i = tu_input(f, CF_INT8, 1, (int64_t[]){4});
  cf_tv *b = tu_input(f, CF_BOOL, 1, (int64_t[]){4});
  cf_tv *h = tu_input(f, CF_HALF, 1, (int64_t[]){4});
  int ax[] = {0};
  cr_expect_eq(cf_tv_dtype(cf_sum(f, i, 1, ax)), CF_INT64);
  cr_expect_eq(cf_tv_dtype(cf_sum(f, b, 1, ax)), CF_INT64);
  cr_expect_eq(cf_tv_dtype(cf_sum(f, h, 1, ax)), CF_HALF);
  cr_expect_eq(cf_tv_dtype(cf_max_reduce(f, i, 1, ax)), CF_INT8);
  cr_expect_eq(cf_tv_dtype(cf_min_reduce(f, b, 1, ax)), CF_BOOL);
  cf_fusion_destroy(f);
}

Test(ops, max_and_min_reductions) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_DOUBLE, 2, (int64_t[]){5, 6});
  cf_tv *mx = cf_max_reduce(f, a, 1, (int[]){1});
  cf_tv *mn = cf_min_reduce(f, a, 1, (int[]){-2});
  ot_expect_def(mx, "T1_l_double[iS2{5}, rS3{6}]\n   = max( T0_g_double[iS0{5}, iS1{6}] );\n");
  ot_expect_def(mn, "T2_l_double[rS4{5}, iS5{6}]\n   = min( T0_g_double[iS0{5}, iS1{6}] );\n");
  cr_expect_eq(ir_tv(mx)->def->op, OP_MAX_REDUCE);
  cr_expect_eq(ir_tv(mn)->def->op, OP_MIN_REDUCE);
  cf_fusion_destroy(f);
}

/* A reduction over broadcast axes only is a squeeze of them (nvFuser's trivial
 * reductions); with other axes it squeezes first, then reduces; keepdim puts both back;
 * an integer sum still widens to int64. */
Test(ops, reducing_a_broadcast_axis) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 3});
  cf_tv *s = cf_sum(f, a, 1, (int[]){0});
  ot_expect_def(s, "T1_l_float[iS2{3}]\n   = squeeze( T0_g_float[bS0{1}, iS1{3}], {true, false} );\n");
  cf_tv *b = tu_input(f, CF_FLOAT, 3, (int64_t[]){1, 3, 4});
  cf_tv *m = cf_reduce(f, CF_REDUCE_MAX, b, 2, (int[]){0, 2}, true);
  ot_expect_tv(f, m, "T5_l_float[bS10{1}, iS11{3}, bS12{1}]");
  ot_expect_def(ir_tv_handle(ir_tv(m)->def->in[0]), "T4_l_float[iS8{3}, rS9{4}]\n   = max( T3_l_float[iS6{3}, iS7{4}] );\n");
  cf_tv *i = tu_input(f, CF_INT32, 2, (int64_t[]){1, 3});
  ot_expect_tv(f, cf_sum(f, i, 1, (int[]){0}), "T8_l_int64_t[iS16{3}]");
  cf_fusion_destroy(f);
}

Test(ops, permute_has_root_in_input_order) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 3, (int64_t[]){2, 3, 4});
  cf_tv *p = cf_permute(f, a, 3, (int[]){2, 0, 1});
  ot_expect_def(p, "T1_l_float[iS5{4}, iS3{2}, iS4{3}]\n"
                   "   = permute( T0_g_float[iS0{2}, iS1{3}, iS2{4}], {2, 0, 1} );\n");
  TensorView *t = TV(ir_tv(p));
  cr_assert_eq(t->nroot, 3);
  cr_expect_neq(t->root, t->logical);
  cr_expect_eq(t->logical[0], t->root[2]);
  cr_expect_eq(t->logical[1], t->root[0]);
  cr_expect_eq(t->logical[2], t->root[1]);
  cr_expect_eq(t->loop[0], t->logical[0]);
  Expr *e = ir_tv(p)->def;
  cr_expect_eq(e->attr.permute.rank, 3);
  cr_expect_eq(e->attr.permute.perm[0], 2);
  cf_fusion_destroy(f);
}

Test(ops, permute_accepts_negative_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *p = cf_permute(f, a, 2, (int[]){-1, -2});
  cr_expect_eq(ir_tv(p)->def->attr.permute.perm[0], 1);
  cr_expect_eq(cf_id_extent(cf_tv_axis(p, 0)), 3);
  cf_fusion_destroy(f);
}

Test(ops, transpose_swaps_two_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_INT32, 3, (int64_t[]){2, 3, 4});
  cf_tv *t = cf_transpose(f, a, 0, -1);
  ot_expect_def(t, "T1_l_int[iS5{4}, iS4{3}, iS3{2}]\n"
                   "   = permute( T0_g_int[iS0{2}, iS1{3}, iS2{4}], {2, 1, 0} );\n");
  cr_expect_eq(cf_tv_dtype(t), CF_INT32);
  cf_fusion_destroy(f);
}

Test(ops, outputs_are_local_with_serial_axes) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 3});
  cf_tv *outs[] = {cf_set(f, a),
                   cf_exp(f, a),
                   cf_add(f, a, a),
                   cf_cast(f, a, CF_DOUBLE),
                   cf_sum(f, a, 1, (int[]){0}),
                   cf_transpose(f, a, 0, 1),
                   cf_add_scalar(f, a, 1),
                   cf_broadcast(f, a, 3, (bool[]){false, true, false})};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    cr_assert_not_null(outs[i], "op %zu: %s", i, cf_fusion_error(f));
    cr_expect_eq(cf_tv_memory_type(outs[i]), CF_MEM_LOCAL, "op %zu", i);
    cr_expect_eq(cf_tv_compute_at_pos(outs[i]), 0);
    for (int k = 0; k < cf_tv_naxes(outs[i]); k++)
      cr_expect_eq(cf_id_parallel_type(cf_tv_axis(outs[i], k)), CF_PT_SERIAL);
    /* Fresh axes: none shared with the input. */
    for (int k = 0; k < cf_tv_naxes(outs[i]); k++)
      for (int j = 0; j < 2; j++) cr_expect_neq(cf_tv_axis(outs[i], k), cf_tv_axis(a, j));
  }
  cf_fusion_destroy(f);
}

Test(ops, a_fusion_of_every_op_verifies) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, NULL);
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 8});
  cf_tv *x = a;
  for (int i = 0; i < NUNARY; i++)
    if (strcmp(unary_ops[i].name, "imag") != 0) x = unary_ops[i].fn(f, x); /* imag takes complex only */
  for (int i = 0; i < 7; i++) x = binary_ops[i].fn(f, x, b);
  cf_tv *w = cf_where(f, cf_ge(f, x, b), x, cf_add_scalar(f, b, 1));
  cf_tv *s = cf_sum(f, cf_cast(f, w, CF_DOUBLE), 1, (int[]){1});
  cf_tv *bc = cf_broadcast(f, s, 2, (bool[]){false, true});
  cf_tv *t = cf_transpose(f, cf_mul_scalar(f, bc, 2), 0, 1);
  cf_fusion_add_output(f, t);
  cf_fusion_add_output(f, cf_max_reduce(f, cf_min_reduce(f, x, 1, (int[]){0}), 1, (int[]){0}));
  cr_assert_eq(cf_fusion_status(f), CF_OK, "%s", cf_fusion_error(f));
  cr_expect_eq(cf_fusion_verify(f), CF_OK, "%s", cf_fusion_error(f));
  cf_fusion_destroy(f);
}

Test(ops, math_of_a_fusion_prints_in_nvfuser_notation) {
  cf_fusion *f = cf_fusion_create();
  cf_tv *a = tu_input(f, CF_FLOAT, 2, (int64_t[]){2, 4});
  cf_tv *b = tu_input(f, CF_FLOAT, 2, (int64_t[]){1, 4});
  cf_tv *c = cf_add(f, a, b);
  cf_tv *s = cf_sum(f, c, 1, (int[]){1});
  cf_fusion_add_output(f, cf_broadcast(f, s, 2, (bool[]){false, true}));
  cf_fusion_add_output(f, cf_mul_scalar(f, cf_transpose(f, c, 0, 1), 0.5));
  char *m = ot_math(f);
  cr_expect_str_eq(m, "Inputs:\n"
                      "  T0_g_float[iS0{2}, iS1{4}]\n"
                      "  T1_g_float[bS2{1}, iS3{4}]\n"
                      "Outputs:\n"
                      "  T4_g_float[iS8{2}, bS9{1}]\n"
                      "  T6_g_float[iS12{4}, iS13{2}]\n"
                      "\n"
                      "%kernel_math {\n"
                      "T2_l_float[iS4{2}, iS5{4}]\n"
                      "   = add( T0_g_float[iS0{2}, iS1{4}],\n"
                      "        T1_g_float[bS2{1}, iS3{4}] );\n"
                      "T3_l_float[iS6{2}, rS7{4}]\n"
                      "   = sum( T2_l_float[iS4{2}, iS5{4}] );\n"
                      "T4_g_float[iS8{2}, bS9{1}]\n"
                      "   = broadcast( T3_l_float[iS6{2}, rS7{4}], {false, true} );\n"
                      "T5_l_float[iS11{4}, iS10{2}]\n"
                      "   = permute( T2_l_float[iS4{2}, iS5{4}], {1, 0} );\n"
                      "T6_g_float[iS12{4}, iS13{2}]\n"
                      "   = mul( T5_l_float[iS11{4}, iS10{2}], 0.5 );\n"
                      "} // %kernel_math\n");
  free(m);
  cf_fusion_destroy(f);
}
