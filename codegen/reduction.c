/* codegen/reduction.c: the code of block reductions (lower/reduction.c), shared by both
 * code generators: a reduction's register accumulator, and its all-reduce across the
 * reduced thread dimensions of the block.
 *
 * Key decision: the combine is printed inline, with the reduction's combine op from the
 * op table and the dialect's shared-memory accesses and barrier, rather than calling a
 * runtime template. So CUDA and the host backend run the very same algorithm (C has no
 * templates), and the host's race detector checks every workspace access. Two forms:
 * - warp: only threadIdx.x is reduced and blockDim.x is a multiple of 32: xor shuffles
 *   reduce each warp (every lane ends with its warp's value), lane 0 of each warp writes
 *   it to the workspace, and after one barrier every thread folds its group's warp values;
 *   or only threadIdx.y under a power-of-two blockDim.x below 32 (a column reduction's
 *   block: a warp holds 32 / bx rows of each of its bx columns): the xor shuffles from 16
 *   down to bx fold a warp's rows of each column, its first row writes them, and every
 *   thread folds its column's warp values after one barrier (two barriers in all, where
 *   the tree takes two plus one per halving);
 * - tree: any combination of threadIdx.x/y/z: each thread writes its value at
 *   group * R + position (R threads per group, positions and groups linearized x, y, z),
 *   then halving steps with a barrier each fold the upper part into the lower one (the
 *   first step folds down to a power of two, so R need not be one); every thread reads
 *   the group's result.
 * A barrier ends both forms, so the workspace can be reused by the next reduction. A row
 * within a warp (lanes: blockDim.x a power of two up to 32, whole warps) needs neither:
 * xor shuffles alone give every lane its row's value (lanes_form).
 * A grid reduction (lower/reduction.c) follows with the last-block pattern: one thread of
 * the reduced thread dimensions per kept place stores the block's (all-reduced) partial
 * in the global work buffer, fences, and after a barrier thread 0 counts the block on the
 * group's semaphore; the block that counts last (told to its threads through a shared
 * flag) fences again, folds the group's partials with volatile loads (the threads of the
 * reduced dimensions share the blocks, then all-reduce them again), resets the semaphore
 * and runs the node's tail (the store: the shared walk prints it between cg_block_reduce
 * and cg_block_reduce_end). On the host, blocks run one after another, so the
 * pattern cannot wait on a block that never runs. A grid all-reduce (all_blocks) writes the
 * partials the same way, then a grid sync (every block resident: a cooperative launch; on
 * the host all blocks run as fibers at once), then every block folds the group's partials
 * itself.
 * A grouped reduction (acc.group = n, lower/group_reductions.c) runs the tree or warp form and
 * the grid step once for the n elements of its array, each statement of the per-value
 * algorithm looping over them (cf_j): element j's workspace slots lie at j * the block's
 * threads, its partials at the ungrouped slot * n + j, so each element is combined with
 * the same partners in the same order as alone, with the barriers, fences and semaphore
 * round of one reduction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

static const char *const dim_name[3] = {"x", "y", "z"};

/* blockDim.<d> as the forms print it (into buf): the launch's constant where it has one
 * (the CUDA compiler then unrolls the folds over warps and reads the workspace in vectors:
 * batch norm 512 x 65536 float with wide rows 77.4 -> 71.5 us on an H200, layer norm
 * bfloat16 16384 x 4096 72.7 -> 69.8), else (int)blockDim.<d>. */
static const char *bd_text(const Emitter *e, int d, char buf[32]) {
  if (e->block_size[d] > 0) snprintf(buf, 32, "%lld", (long long)e->block_size[d]);
  else snprintf(buf, 32, "(int)blockDim.%s", dim_name[d]);
  return buf;
}

/* The product of blockDim over the dimensions in use (x, y, z), printed into b: the
 * constants folded into one factor (left out when 1), "1" for none. */
static void bd_product(const Emitter *e, StrBuf *b, const bool use[3]) {
  int64_t c = 1;
  int terms = 0;
  StrBuf sym = {0};
  for (int d = 0; d < 3; d++) {
    if (!use[d]) continue;
    if (e->block_size[d] > 0) c *= e->block_size[d];
    else sb_printf(&sym, "%s(int)blockDim.%s", terms++ ? " * " : "", dim_name[d]);
  }
  if (!terms) sb_printf(b, "%lld", (long long)c);
  else if (c == 1) sb_puts(b, sym.data);
  else sb_printf(b, "%lld * %s", (long long)c, sym.data);
  sb_free(&sym);
}

/* The same, malloc'd. */
static char *bd_mul(const Emitter *e, bool x, bool y, bool z) {
  StrBuf b = {0};
  bd_product(e, &b, (bool[3]){x, y, z});
  return sb_take(&b);
}

/* (int)threadIdx.<d> times blockDim's product over `use`, printed ("(int)threadIdx.z" where
 * that product is 1). */
static void scaled_coord(const Emitter *e, StrBuf *b, int d, const bool use[3]) {
  StrBuf f = {0};
  bd_product(e, &f, use);
  if (!strcmp(f.data, "1")) sb_printf(b, "(int)threadIdx.%s", dim_name[d]);
  else sb_printf(b, "(int)threadIdx.%s * %s", dim_name[d], f.data);
  sb_free(&f);
}

void cg_acc_decl(Emitter *e, const KNode *n) {
  char *v = cg_reduction_init(e, n->u.acc.op, n->u.acc.dtype, n->u.acc.dtype);
  cg_line(e, "%s %s = %s;", cg_ctype(n->u.acc.dtype), n->u.acc.var, v);
  free(v);
}

/* The workspace element at `index`, as the dialect prints it (malloc'd). */
static char *ws_at(Emitter *e, const KTensor *ws, const char *index, bool is_write) {
  StrBuf save = e->out;
  e->out = (StrBuf){0};
  e->d->element(e, ws, index, is_write);
  char *s = sb_take(&e->out);
  e->out = save;
  return s;
}

/* combine(a, b): the reduction's form (its combine op's, from the op table), malloc'd. */
static char *combine(Emitter *e, const KNode *n, const char *a, const char *b) {
  char *args[3] = {(char *)a, (char *)b, NULL};
  return cg_op_form(e, n->u.acc.op, args);
}


/* The values a reduction combines, as its statements print them: its register, or each
 * element cf_j of its grouped array (every statement then prefixed with the loop over
 * cf_j, workspace slots offset by element, partial slots scaled by the group). */
typedef struct Values {
  char *v;    /* the value: the register, or the array's element cf_j */
  char *each; /* "" or "for (int cf_j = 0; cf_j < n; ++cf_j) " */
  char *ws;   /* before a workspace index: "" or "cf_j * cf_rt + " */
  char *slot; /* after a partial's slot: "" or " * n + cf_j" */
} Values;

static Values values_of(Emitter *e, const KNode *n) {
  Values x;
  int g = n->u.acc.group;
  if (!g) {
    x.v = strdup(n->u.acc.var), x.each = strdup(""), x.ws = strdup(""), x.slot = strdup("");
    return x;
  }
  x.v = ws_at(e, n->u.acc.array, "cf_j", true);
  x.ws = strdup("cf_j * cf_rt + ");
  StrBuf each = {0}, slot = {0};
  sb_printf(&each, "for (int cf_j = 0; cf_j < %d; ++cf_j) ", g);
  sb_printf(&slot, " * %d + cf_j", g);
  x.each = sb_take(&each);
  x.slot = sb_take(&slot);
  return x;
}

static void values_free(Values *x) { free(x->v), free(x->each), free(x->ws), free(x->slot); }

/* The workspace element at the value's offset plus `index` (malloc'd). */
static char *ws_value(Emitter *e, const KNode *n, const Values *x, const char *index, bool is_write) {
  StrBuf at = {0};
  sb_printf(&at, "%s%s", x->ws, index);
  char *s = ws_at(e, n->u.acc.ws, at.data, is_write);
  sb_free(&at);
  return s;
}

/* Linear index over the dimensions d with want[d] == reduced, x fastest (printed). */
static void linear(const Emitter *e, StrBuf *b, const bool *reduced, bool want) {
  bool before[3] = {false, false, false}, any = false;
  for (int d = 0; d < 3; d++) {
    if (reduced[d] != want) continue;
    if (any) sb_puts(b, " + ");
    scaled_coord(e, b, d, before);
    before[d] = any = true;
  }
  if (!any) sb_puts(b, "0");
}

/* The value (x's: the register, or the grouped array's element cf_j, x->each looping over
 * it) folded with the lanes at xor distances from `first` down to `last`. */
static void xor_shuffles(Emitter *e, const KNode *n, const Values *x, int first, int last) {
  const char *v = x->v;
  char *sh = combine(e, n, v, "__shfl_xor_sync(0xffffffffu, cf_v, cf_o)");
  if (last == 1) cg_line(e, "%sfor (int cf_o = %d; cf_o > 0; cf_o >>= 1) {", x->each, first);
  else cg_line(e, "%sfor (int cf_o = %d; cf_o >= %d; cf_o >>= 1) {", x->each, first, last);
  cg_line(e, "  %s cf_v = %s;", cg_ctype(n->u.acc.dtype), v);
  cg_line(e, "  %s = %s;", v, sh);
  cg_line(e, "}");
  free(sh);
}

/* Warp-local: xor shuffles from lanes / 2 down to 1 fold each group of `lanes` lanes (a
 * row within a warp); every lane ends with its row's value. No workspace, no barrier. */
static void lanes_form(Emitter *e, const KNode *n) {
  Values x = values_of(e, n);
  xor_shuffles(e, n, &x, n->u.acc.lanes / 2, 1);
  values_free(&x);
}

/* Grouped (acc.group = n): the shuffles, the leaders' writes and the folds each loop over
 * the n elements, element j's warp values at j * the block's threads in the workspace, so
 * the n reductions share the one barrier (and the one that ends the form). */
static void warp_form(Emitter *e, const KNode *n) {
  Values x = values_of(e, n);
  xor_shuffles(e, n, &x, 16, n->u.acc.warp_stride);
  if (n->u.acc.group) {
    char *all = bd_mul(e, true, true, true);
    cg_line(e, "const int cf_rt = %s;", all);
    free(all);
  }
  bool by_x = n->u.acc.reduce[0]; /* else threadIdx.y */
  char *nw = bd_mul(e, true, !by_x, false), at[96], lead[96];
  StrBuf z = {0}; /* threadIdx.z's place among the groups */
  scaled_coord(e, &z, 2, (bool[3]){!by_x, by_x, false});
  cg_line(e, "const int cf_nw = %s / 32;", nw);
  if (by_x) { /* threadIdx.x: groups (y, z), blockDim.x / 32 warps each */
    cg_line(e, "const int cf_rb = ((int)threadIdx.y + %s) * cf_nw;", z.data);
    snprintf(at, sizeof at, "cf_rb + (int)threadIdx.x / 32");
    snprintf(lead, sizeof lead, "(int)threadIdx.x %% 32 == 0");
  } else { /* threadIdx.y: groups (x, z), each warp holding 32 / blockDim.x of its rows */
    cg_line(e, "const int cf_rb = ((int)threadIdx.x + %s) * cf_nw;", z.data);
    char bx[32];
    snprintf(at, sizeof at, "cf_rb + (int)threadIdx.y / (32 / %s)", bd_text(e, 0, bx));
    snprintf(lead, sizeof lead, "(int)threadIdx.y %% (32 / %s) == 0", bx);
  }
  free(nw);
  sb_free(&z);
  char *w = ws_value(e, n, &x, at, true);
  const char *leader = lead;
  cg_line(e, "if (%s) %s%s = %s;", leader, x.each, w, x.v);
  free(w);
  e->d->sync(e);
  char *first = ws_value(e, n, &x, "cf_rb", false), *other = ws_value(e, n, &x, "cf_rb + cf_w", false);
  char *fold = combine(e, n, x.v, other);
  if (n->u.acc.group) {
    cg_line(e, "%s{", x.each);
    e->indent++;
  }
  cg_line(e, "%s = %s;", x.v, first);
  cg_line(e, "for (int cf_w = 1; cf_w < cf_nw; ++cf_w) %s = %s;", x.v, fold);
  if (n->u.acc.group) {
    e->indent--;
    cg_line(e, "}");
  }
  free(first), free(other), free(fold);
  values_free(&x);
}

static void tree_form(Emitter *e, const KNode *n) {
  const bool *red = n->u.acc.reduce;
  Values x = values_of(e, n);
  StrBuf rn = {0}, ri = {0}, gi = {0};
  bd_product(e, &rn, red);
  linear(e, &ri, red, true);
  linear(e, &gi, red, false);
  cg_line(e, "const int cf_rn = %s;", rn.data);
  cg_line(e, "const int cf_ri = %s;", ri.data);
  cg_line(e, "const int cf_rb = (%s) * cf_rn;", gi.data);
  sb_free(&rn), sb_free(&ri), sb_free(&gi);
  if (n->u.acc.group) {
    char *all = bd_mul(e, true, true, true);
    cg_line(e, "const int cf_rt = %s;", all);
    free(all);
  }
  char *mine_w = ws_value(e, n, &x, "cf_rb + cf_ri", true), *mine = ws_value(e, n, &x, "cf_rb + cf_ri", false);
  char *up = ws_value(e, n, &x, "cf_rb + cf_ri + cf_s", false), *first = ws_value(e, n, &x, "cf_rb", false);
  char *fold = combine(e, n, mine, up);
  cg_line(e, "%s%s = %s;", x.each, mine_w, x.v);
  e->d->sync(e);
  cg_line(e, "int cf_s = 1;");
  cg_line(e, "while (2 * cf_s < cf_rn) cf_s *= 2;");
  cg_line(e, "for (; cf_s > 0; cf_s >>= 1) {");
  e->indent++;
  cg_line(e, "if (cf_ri < cf_s && cf_ri + cf_s < cf_rn) %s%s = %s;", x.each, mine_w, fold);
  e->d->sync(e);
  e->indent--;
  cg_line(e, "}");
  cg_line(e, "%s%s = %s;", x.each, x.v, first);
  free(mine_w), free(mine), free(up), free(first), free(fold);
  values_free(&x);
}

/* Linear index over the block dimensions with grid[d] == want, x fastest (printed). */
static void block_linear(StrBuf *b, const bool *grid, bool want) {
  StrBuf stride = {0};
  bool any = false;
  for (int d = 0; d < 3; d++) {
    if (grid[d] != want) continue;
    sb_printf(b, "%s(int)blockIdx.%s%s%s", any ? " + " : "", dim_name[d], any ? " * " : "", any ? stride.data : "");
    sb_printf(&stride, "%s(int)gridDim.%s", any ? " * " : "", dim_name[d]);
    any = true;
  }
  if (!any) sb_puts(b, "0");
  sb_free(&stride);
}

/* The group's partials (one per block, at `slot`) folded by every thread of the last
 * block: the threads of the reduced dimensions (cf_grn of them, this one cf_gri) each
 * fold every cf_grn-th block, then a block all-reduce over those dimensions gives every
 * thread the result (one pass over the partials instead of one per thread). */
static void grid_fold(Emitter *e, const KNode *n, const char *slot) {
  Values x = values_of(e, n);
  const char *v = x.v;
  char *init = cg_reduction_init(e, n->u.acc.op, n->u.acc.dtype, n->u.acc.dtype);
  StrBuf at = {0};
  sb_printf(&at, "(%s)%s", slot, x.slot);
  char *other = ws_at(e, n->u.acc.work, n->u.acc.group ? at.data : slot, false);
  sb_free(&at);
  StrBuf vol = {0};
  if (ir_dtype_is_welford(n->u.acc.dtype)) /* C++ copies no volatile struct: field by field */
    sb_printf(&vol, "cf_welford_volatile(&%s)", other);
  else if (ir_dtype_is_complex(n->u.acc.dtype)) /* nor a volatile complex (complex.h) */
    sb_printf(&vol, "cf_complex_volatile(&%s)", other);
  else
    sb_printf(&vol, "*(volatile %s *)&%s", cg_ctype(n->u.acc.dtype), other);
  char *fold = combine(e, n, v, vol.data);
  cg_line(e, "%s%s = %s;", x.each, v, init);
  cg_line(e, "for (int cf_b = cf_gri; cf_b < cf_gn; cf_b += cf_grn) %s%s = %s;", x.each, v, fold);
  free(init), free(other), free(fold);
  sb_free(&vol);
  values_free(&x);
  if (n->u.acc.lanes) {
    lanes_form(e, n);
    return;
  }
  if (!n->u.acc.ws) return;
  cg_line(e, "{ // the block's folds combined");
  e->indent++;
  if (n->u.acc.warp) warp_form(e, n);
  else tree_form(e, n);
  e->d->sync(e);
  e->indent--;
  cg_line(e, "}");
}

/* The grid step: the block's value (all-reduced over its reduced thread dimensions, so
 * one thread of them, cf_gri == 0, stores it) to the work buffer at (group, block, the
 * thread's place among the kept dimensions); the group's last block folds them. */
static void grid_form(Emitter *e, const KNode *n) {
  const bool *g = n->u.acc.grid;
  StrBuf gn = {0}, gp = {0}, gg = {0}, rn = {0}, ri = {0}, ki = {0};
  for (int d = 0, any = 0; d < 3; d++)
    if (g[d]) sb_printf(&gn, "%s(int)gridDim.%s", any++ ? " * " : "", dim_name[d]);
  bool reduced = n->u.acc.reduce[0] || n->u.acc.reduce[1] || n->u.acc.reduce[2];
  bd_product(e, &rn, n->u.acc.reduce);
  block_linear(&gp, g, true);
  block_linear(&gg, g, false);
  linear(e, &ri, n->u.acc.reduce, true);
  linear(e, &ki, n->u.acc.reduce, false);
  StrBuf groups = {0};
  for (int d = 0, any = 0; d < 3; d++)
    if (!g[d]) sb_printf(&groups, "%s(int)gridDim.%s", any++ ? " * " : "", dim_name[d]);
  char *iter = cg_expr(e, n->u.acc.iter);
  cg_line(e, "const int cf_gn = %s;", gn.data);
  cg_line(e, "const int cf_gg = (int)(%s) * (%s) + (%s); // group of this iteration", iter, groups.len ? groups.data : "1",
          gg.data);
  cg_line(e, "const int cf_gb = cf_gg * cf_gn;");
  free(iter);
  sb_free(&groups);
  StrBuf t = {0};
  linear(e, &t, (bool[3]){true, true, true}, true);
  char *all = bd_mul(e, true, true, true);
  cg_line(e, "const int cf_t = %s;", t.data);
  cg_line(e, "const int cf_grn = %s; // threads of the reduced dimensions", rn.data);
  cg_line(e, "const int cf_gri = %s; // this thread's place among them", ri.data);
  cg_line(e, "const int cf_gki = %s; // and among the kept ones", reduced ? ki.data : "cf_t");
  cg_line(e, "const int cf_gnk = %s / cf_grn;", all);
  free(all);
  sb_free(&t);
  Values x = values_of(e, n);
  StrBuf idx = {0};
  if (n->u.acc.group) sb_printf(&idx, "((cf_gb + (%s)) * cf_gnk + cf_gki)%s", gp.data, x.slot);
  else sb_printf(&idx, "(cf_gb + (%s)) * cf_gnk + cf_gki", gp.data);
  char *mine = ws_at(e, n->u.acc.work, idx.data, true);
  sb_free(&gn), sb_free(&gp), sb_free(&gg), sb_free(&rn), sb_free(&ri), sb_free(&ki), sb_free(&idx);
  cg_line(e, "if (cf_gri == 0) %s%s = %s;", x.each, mine, x.v);
  free(mine);
  values_free(&x);
  if (n->u.acc.all_blocks) {
    cg_grid_sync(e); /* fences, then every block's partials are in place */
    grid_fold(e, n, "(cf_gb + cf_b) * cf_gnk + cf_gki");
    return;
  }
  cg_line(e, "__threadfence();");
  e->d->sync(e);
  char *sem = ws_at(e, n->u.acc.sem, "cf_gg", true), *flag_w = ws_at(e, n->u.acc.flag, "0", true);
  char *flag = ws_at(e, n->u.acc.flag, "0", false);
  cg_line(e, "if (cf_t == 0) %s = atomicAdd(&%s, 1u) == (unsigned)(cf_gn - 1);", flag_w, sem);
  e->d->sync(e);
  cg_line(e, "if (%s) { // the group's last block", flag);
  e->indent++;
  cg_line(e, "__threadfence();");
  grid_fold(e, n, "(cf_gb + cf_b) * cf_gnk + cf_gki");
  cg_line(e, "if (cf_t == 0) %s = 0u; // ready for the next launch", sem);
  free(sem), free(flag_w), free(flag);
  /* the node's tail (the store) follows, printed by the walk; cg_block_reduce_end closes */
}

void cg_block_reduce(Emitter *e, const KNode *n) {
  StrBuf dims = {0};
  for (int d = 0; d < 3; d++)
    if (n->u.acc.reduce[d]) sb_printf(&dims, "%sthreadIdx.%s", dims.len ? ", " : "", dim_name[d]);
  for (int d = 0; d < 3; d++)
    if (n->u.acc.grid[d]) sb_printf(&dims, "%sblockIdx.%s", dims.len ? ", " : "", dim_name[d]);
  StrBuf what = {0};
  if (n->u.acc.group) sb_printf(&what, "%s[0..%d]", n->u.acc.var, n->u.acc.group);
  else sb_puts(&what, n->u.acc.var);
  cg_line(e, "{ // %s of %s (%s) over %s",
          n->u.acc.all_blocks ? "grid all-reduce" : n->u.acc.ws || n->u.acc.lanes ? "block all-reduce" : "grid reduction",
          what.data, ir_op_name(n->u.acc.op), dims.data);
  sb_free(&what);
  sb_free(&dims);
  e->indent++;
  if (n->u.acc.lanes)
    lanes_form(e, n);
  else if (n->u.acc.ws && n->u.acc.warp)
    warp_form(e, n);
  else if (n->u.acc.ws)
    tree_form(e, n);
  if (n->u.acc.ws) e->d->sync(e);
  if (n->u.acc.work) grid_form(e, n);
}

void cg_block_reduce_end(Emitter *e, const KNode *n) {
  if (n->u.acc.work && !n->u.acc.all_blocks) { /* a grid all-reduce opened no last-block branch */
    e->indent--;
    cg_line(e, "}"); /* the group's last block */
    e->d->sync(e);
  }
  e->indent--;
  cg_line(e, "}");
}
