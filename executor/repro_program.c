/* executor/repro_program.c: the standalone program around a fusion's rebuilding calls
 * (executor/repro.c): the header comment (why it was written, how to build it, what is
 * approximate), build(), random inputs of the failing call's shapes and dtypes, the call
 * itself and its verdict; cf_fusion_write_repro, and exec_repro_failed, which writes one
 * into $CFUSER_REPRO_DIR where a compile or a define-and-run call fails. Key decision: the
 * file is named by a hash of its contents, so a failure repeated in a loop (a test, a
 * training step) leaves one file, not thousands. */
#include <stdlib.h>
#include <string.h>

#include "cfuser/tensor.h"
#include "cfuser/version.h"
#include "executor/disk_cache.h"
#include "executor/repro.h"

static const char *backend_enum(cf_backend b) {
  return b == CF_BACKEND_CUDA ? "CF_BACKEND_CUDA" : b == CF_BACKEND_HOST ? "CF_BACKEND_HOST" : "CF_BACKEND_AUTO";
}

/* One input's shape: the call's tensor when given, else the fusion's extents (8 where symbolic). */
static void input_shape(StrBuf *b, cf_fusion *f, int i, int ninputs, const DLTensor *const *inputs) {
  Val *tv = f->inputs.items[i];
  TensorView *t = TV(tv);
  const DLTensor *x = i < ninputs && inputs ? inputs[i] : NULL;
  int rank = x ? x->ndim : t->nlogical;
  sb_printf(b, "  in[%d] = cf_tensor_host(%s, %d, (int64_t[]){", i, exec_repro_dtype_enum(tv->dtype), rank);
  for (int k = 0; k < rank; k++) {
    Val *e = !x && k < t->nlogical ? ID(t->logical[k])->extent : NULL;
    long long n = x ? (long long)x->shape[k] : e && ir_scalar_is_const(e) ? (long long)SC(e)->i : 8;
    sb_printf(b, "%s%lld", k ? ", " : "", n);
  }
  sb_printf(b, "%s});\n  cf_tensor_fill_random(&in[%d]->dl_tensor, %d);\n", rank ? "" : "0", i, i + 1);
}

static void program_main(StrBuf *b, cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool dar,
                         cf_backend backend) {
  int nin = f->inputs.len, nout = f->outputs.len;
  sb_puts(b, "int main(int argc, char **argv) {\n  cf_fusion *f = build();\n"
             "  if (argc > 1 && !strcmp(argv[1], \"--print\")) {\n"
             "    cf_fusion_print_math(f, stdout);\n    cf_fusion_print_transforms(f, stdout);\n  }\n"
             "  if (cf_fusion_status(f) != CF_OK) {\n"
             "    printf(\"repro: %s: %s\\n\", cf_status_name(cf_fusion_status(f)), cf_fusion_error(f));\n"
             "    cf_fusion_destroy(f);\n    return 1;\n  }\n");
  sb_printf(b, "  DLManagedTensor *in[%d] = {0}, *out[%d] = {0};\n  const DLTensor *args[%d];\n", nin + 1, nout + 1,
            nin + 1);
  for (int i = 0; i < nin; i++) input_shape(b, f, i, ninputs, inputs);
  sb_printf(b, "  for (int i = 0; i < %d; i++) args[i] = &in[i]->dl_tensor;\n", nin);
  sb_printf(b, "  cf_executor_options opts = {.backend = %s};\n  cf_status s;\n  const char *msg;\n", backend_enum(backend));
  if (dar)
    sb_printf(b, "  cf_fusion_cache *c = cf_fusion_cache_create(f, &opts);\n"
                 "  s = cf_fusion_execute(c, %d, args, %d, out);\n  msg = cf_fusion_cache_error(c);\n", nin, nout);
  else
    sb_printf(b, "  cf_executor *e = cf_executor_create(&opts);\n  s = cf_executor_compile(e, f);\n"
                 "  if (s == CF_OK) s = cf_executor_run(e, %d, args, %d, out);\n  msg = cf_executor_error(e);\n",
              nin, nout);
  sb_puts(b, "  if (s != CF_OK)\n    printf(\"repro: %s: %s\\n\", cf_status_name(s), msg);\n  else\n"
             "    printf(\"repro: ok\\n\");\n");
  /* everything freed, so that the program is clean under a leak checker too */
  sb_printf(b, "  for (int i = 0; i < %d; i++) cf_tensor_free(in[i]);\n  for (int i = 0; i < %d; i++) cf_tensor_free(out[i]);\n",
            nin, nout);
  sb_puts(b, dar ? "  cf_fusion_cache_destroy(c);\n" : "  cf_executor_destroy(e);\n");
  sb_puts(b, "  cf_fusion_destroy(f);\n  return s != CF_OK;\n}\n");
}

/* The whole program into b. */
static cf_status program(StrBuf *b, cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool dar,
                         cf_backend backend, cf_status status, const char *message) {
  ReproWalk w;
  cf_status s = exec_repro_walk(f, &w);
  if (s) return s;
  sb_printf(b, "/* A reproducer written by cfuser %s (cf_fusion_write_repro).\n", cf_version());
  if (status) {
    sb_printf(b, " * The call failed with %s: ", cf_status_name(status));
    for (const char *p = message ? message : ""; *p; p++) sb_printf(b, p[0] == '*' && p[1] == '/' ? "* " : "%c", *p);
    sb_puts(b, "\n");
  }
  sb_printf(b, " * It rebuilds the fusion (%s), makes random inputs of the call's shapes and dtypes, and runs\n"
               " * it %s; it prints \"repro: <STATUS>: <message>\" and exits 1 when that fails, else\n"
               " * \"repro: ok\" (with --print: the math and transforms first).\n"
               " * Build: cc -std=c11 repro.c $(pkg-config --cflags --libs cfuser) -o repro && ./repro\n",
            w.scheduled ? "scheduled by hand" : "unscheduled", dar ? "through define and run" : "as the executor did");
  if (w.approximate) sb_printf(b, " * Not rebuilt exactly:\n%s", w.notes.data ? w.notes.data : " *   - symbolic extents\n");
  sb_puts(b, " */\n#include <cfuser.h>\n#include <stdio.h>\n#include <string.h>\n\nstatic cf_fusion *build(void) {\n"
             "  cf_fusion *f = cf_fusion_create();\n");
  sb_puts(b, w.c.data ? w.c.data : "");
  sb_puts(b, "  return f;\n}\n\n");
  program_main(b, f, ninputs, inputs, dar, backend);
  sb_free(&w.c);
  sb_free(&w.notes);
  return CF_OK;
}

cf_status cf_fusion_write_repro(cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool define_and_run,
                                cf_backend backend, FILE *out) {
  if (!f) return CF_ERR_INVALID_ARGUMENT;
  if (!out) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "write_repro: out is NULL");
  if (ninputs < 0 || (ninputs && !inputs))
    return ir_error(f, CF_ERR_INVALID_ARGUMENT, "write_repro: %d inputs given without an array", ninputs);
  for (int i = 0; i < ninputs; i++)
    if (!inputs[i]) return ir_error(f, CF_ERR_INVALID_ARGUMENT, "write_repro: input %d is NULL", i);
  StrBuf b = {0};
  cf_status s = program(&b, f, ninputs, inputs, define_and_run, backend, CF_OK, NULL);
  if (s == CF_OK && b.data && fputs(b.data, out) == EOF) s = ir_error(f, CF_ERR_IO, "write_repro: cannot write");
  sb_free(&b);
  return s;
}

void exec_repro_failed(cf_fusion *f, int ninputs, const DLTensor *const *inputs, bool define_and_run,
                       cf_backend backend, cf_status status, const char *message) {
  const char *dir = getenv("CFUSER_REPRO_DIR");
  if (!dir || !*dir || !f || status == CF_OK) return;
  /* A dynamic op has no rebuilding call here yet: its concrete fusion's cache (fusion_dynamic.c)
   * writes the reproducer of a failure past concretization, of the static ops it ran. */
  if (!f->status && ir_fusion_is_dynamic(f)) return;
  for (int i = 0; i < ninputs; i++)
    if (!inputs || !inputs[i]) ninputs = 0; /* a bad argument list: the fusion's own shapes */
  StrBuf b = {0};
  if (program(&b, f, ninputs, inputs, define_and_run, backend, status, message) != CF_OK || !b.data) {
    sb_free(&b);
    return;
  }
  char hex[2 * EXEC_SHA256_BYTES + 1], *path = NULL;
  exec_sha256_hex(b.data, strlen(b.data), hex);
  hex[16] = 0;
  FILE *out = asprintf(&path, "%s/repro-%s.c", dir, hex) >= 0 ? fopen(path, "w") : NULL;
  bool wrote = out && fputs(b.data, out) != EOF;
  if (out && fclose(out) != 0) wrote = false;
  if (wrote) fprintf(stderr, "cfuser: a reproducer of this failure: %s\n", path);
  free(path);
  sb_free(&b);
}
