/* codegen/host_split.c: the host runtime split in two translation units, so that a kernel
 * compile does not compile the runtime again.
 *
 * The runtime (codegen/runtime/host_*.h) marks its out-of-line functions CFH_FN. A kernel's
 * source (cg_host_kernel_runtime) holds the runtime's parts with every CFH_FN function
 * body replaced by `;`, behind CG_HOST_KERNEL_TU_LINE: its types, macros, inline helpers
 * and the declarations of those functions. The runtime's own translation unit
 * (cg_host_runtime_unit) holds the parts whole, behind `#define CFH_RUNTIME_TU 1`; the
 * executor compiles it once per compiler command into an object that every kernel links
 * (executor/host.c), where it defines the CFH_FN functions with hidden visibility. Both
 * texts are made once per process. The bodies are found by a small lexer over the C text:
 * comments, string and character literals and preprocessor lines are skipped, and a body
 * is the braces that follow the CFH_FN token at file scope before any `;`. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

/* The index past a comment, literal or preprocessor line starting at s[i] (i itself when
 * none starts there). at_line_start: s[i] is the first non-blank of its line. */
static size_t skip_inert(const char *s, size_t i, bool at_line_start) {
  if (s[i] == '/' && s[i + 1] == '*') {
    const char *end = strstr(s + i + 2, "*/");
    return end ? (size_t)(end - s) + 2 : strlen(s);
  }
  if (s[i] == '/' && s[i + 1] == '/') {
    while (s[i] && s[i] != '\n') i++;
    return i;
  }
  if (s[i] == '"' || s[i] == '\'') {
    char q = s[i++];
    while (s[i] && s[i] != q) i += s[i] == '\\' && s[i + 1] ? 2 : 1;
    return s[i] ? i + 1 : i;
  }
  if (s[i] == '#' && at_line_start) { /* a directive, with its continuation lines */
    while (s[i] && !(s[i] == '\n' && s[i - 1] != '\\')) i++;
    return i;
  }
  return i;
}

static bool ident_char(char c) { return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Whether the token CFH_FN starts at s[i]. */
static bool at_cfh_fn(const char *s, size_t i) {
  return strncmp(s + i, "CFH_FN", 6) == 0 && !ident_char(s[i + 6]) && (i == 0 || !ident_char(s[i - 1]));
}

/* text with each CFH_FN function's body replaced by `;` (malloc'd; NULL without memory). */
static char *strip_bodies(const char *s) {
  size_t n = strlen(s), o = 0;
  char *out = malloc(n + 1);
  if (!out) return NULL;
  int depth = 0;
  bool in_fn = false, line_start = true; /* past a file-scope CFH_FN, before its `;` or body */
  for (size_t i = 0; i < n;) {
    size_t j = skip_inert(s, i, line_start);
    if (j != i) {
      memcpy(out + o, s + i, j - i), o += j - i, i = j;
      continue;
    }
    char c = s[i];
    if (depth == 0 && at_cfh_fn(s, i)) in_fn = true;
    if (c == ';' && depth == 0) in_fn = false;
    if (c == '{' && depth == 0 && in_fn) { /* the body: skip to its matching brace */
      int d = 0;
      do {
        size_t k = skip_inert(s, i, false);
        if (k != i) {
          i = k;
          continue;
        }
        d += s[i] == '{' ? 1 : s[i] == '}' ? -1 : 0;
        i++;
      } while (i < n && d > 0);
      out[o++] = ';';
      in_fn = false;
      continue;
    }
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (c == '\n') line_start = true;
    else if (c != ' ' && c != '\t') line_start = false;
    out[o++] = c;
    i++;
  }
  out[o] = 0;
  return out;
}

/* The parts concatenated behind `head`, each stripped when `strip` (malloc'd, or NULL). */
static char *join_parts(const char *head, bool strip) {
  StrBuf b = {0};
  sb_puts(&b, head);
  for (size_t i = 0; cg_host_runtime_parts[i]; i++) {
    const char *t = cg_embedded_file(cg_host_runtime_parts[i]);
    char *part = t && strip ? strip_bodies(t) : NULL;
    if (!t || (strip && !part)) {
      sb_free(&b);
      return NULL;
    }
    sb_puts(&b, strip ? part : t);
    sb_puts(&b, "\n");
    free(part);
  }
  return sb_take(&b);
}

static char *g_kernel_runtime, *g_runtime_unit;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void make_texts(void) {
  g_kernel_runtime = join_parts(CG_HOST_KERNEL_TU_LINE, true);
  g_runtime_unit = join_parts("#define CFH_RUNTIME_TU 1\n", false);
}

const char *cg_host_kernel_runtime(void) {
  pthread_once(&g_once, make_texts);
  return g_kernel_runtime;
}

const char *cg_host_runtime_unit(void) {
  pthread_once(&g_once, make_texts);
  return g_runtime_unit;
}

char *cg_host_strip_bodies(const char *text) { return text ? strip_bodies(text) : NULL; }
