/* ir/mesh.c: device meshes (multidevice.h) and the mesh a TensorView is placed on.
 *
 * A mesh is a small value (ndims, shape, row-major device ids); a tensor keeps its own
 * copy in the fusion's arena, so the user's mesh may change or die after the call. The
 * DID parallel types index mesh axes from the innermost, as nvFuser's do: DIDx the last
 * axis, DIDy the one before (ir_mesh_axis_of). The sharding a tensor's loop domain
 * expresses is read by analysis/sharding.c; this file only stores and prints. */
#include <string.h>

#include "ir/ir.h"

static bool mesh_valid(const cf_device_mesh *m) {
  if (!m || m->ndims < 1 || m->ndims > 2) return false;
  int n = 1;
  for (int i = 0; i < m->ndims; i++) {
    if (m->shape[i] < 1 || m->shape[i] > CF_MESH_MAX_DEVICES) return false;
    n *= m->shape[i];
  }
  if (n > CF_MESH_MAX_DEVICES) return false;
  for (int i = 0; i < n; i++) {
    if (m->devices[i] < 0) return false;
    for (int j = 0; j < i; j++)
      if (m->devices[j] == m->devices[i]) return false;
  }
  return true;
}

cf_status cf_device_mesh_init(cf_device_mesh *m, int ndims, const int *shape, const int *devices) {
  if (!m || !shape || ndims < 1 || ndims > 2) return CF_ERR_INVALID_ARGUMENT;
  cf_device_mesh t;
  memset(&t, 0, sizeof t);
  t.ndims = ndims;
  int64_t n = 1;
  for (int i = 0; i < ndims; i++) {
    if (shape[i] < 1) return CF_ERR_INVALID_ARGUMENT;
    t.shape[i] = shape[i];
    n *= shape[i];
  }
  if (n > CF_MESH_MAX_DEVICES) return CF_ERR_INVALID_ARGUMENT;
  for (int i = 0; i < n; i++) t.devices[i] = devices ? devices[i] : i;
  if (!mesh_valid(&t)) return CF_ERR_INVALID_ARGUMENT;
  *m = t;
  return CF_OK;
}

cf_status cf_device_mesh_linear(cf_device_mesh *m, int n) { return cf_device_mesh_init(m, 1, &n, NULL); }

int cf_device_mesh_size(const cf_device_mesh *m) {
  if (!m) return 0;
  return m->ndims == 2 ? m->shape[0] * m->shape[1] : m->shape[0];
}

int cf_device_mesh_index(const cf_device_mesh *m, int device) {
  int n = cf_device_mesh_size(m);
  for (int i = 0; i < n; i++)
    if (m->devices[i] == device) return i;
  return -1;
}

bool cf_device_mesh_equal(const cf_device_mesh *a, const cf_device_mesh *b) {
  if (!a || !b) return a == b;
  if (a->ndims != b->ndims) return false;
  for (int i = 0; i < a->ndims; i++)
    if (a->shape[i] != b->shape[i]) return false;
  int n = cf_device_mesh_size(a);
  for (int i = 0; i < n; i++)
    if (a->devices[i] != b->devices[i]) return false;
  return true;
}

static void mesh_print(StrBuf *b, const cf_device_mesh *m) {
  sb_puts(b, "DeviceMesh");
  int inner = m->shape[m->ndims - 1], n = cf_device_mesh_size(m);
  if (m->ndims == 2) sb_puts(b, "{");
  for (int i = 0; i < n; i++) {
    if (i % inner == 0) sb_puts(b, "{");
    sb_printf(b, "%d%s", m->devices[i], (i + 1) % inner ? " " : "}");
  }
  if (m->ndims == 2) sb_puts(b, "}");
}

void cf_device_mesh_str(const cf_device_mesh *m, char *buf, size_t len) {
  if (!buf || !len) return;
  StrBuf b = {0};
  if (mesh_valid(m)) mesh_print(&b, m);
  else sb_puts(&b, "DeviceMesh(invalid)");
  snprintf(buf, len, "%s", b.data ? b.data : "");
  sb_free(&b);
}

void ir_print_mesh(StrBuf *b, const cf_device_mesh *m) {
  sb_puts(b, " (");
  mesh_print(b, m);
  sb_puts(b, ")");
}

int ir_mesh_axis_of(const cf_device_mesh *m, cf_parallel_type p) {
  if (!m || !ir_ptype_is_device(p)) return -1;
  int axis = m->ndims - 1 - ir_ptype_launch_dim(p);
  return axis >= 0 ? axis : -1;
}

cf_status cf_tv_set_device_mesh(cf_fusion *f, cf_tv *tv, const cf_device_mesh *m) {
  if (ir_check_tv(f, "set_device_mesh", tv)) return f ? f->status : CF_ERR_INVALID_ARGUMENT;
  if (!mesh_valid(m))
    return ir_error_tv(f, CF_ERR_INVALID_ARGUMENT, ir_tv(tv),
                       "set_device_mesh: the mesh is NULL or invalid (1 or 2 axes, at most %d distinct ids >= 0)",
                       CF_MESH_MAX_DEVICES);
  cf_device_mesh *copy = ARENA_NEW(f->arena, cf_device_mesh);
  if (!copy) return ir_error(f, CF_ERR_OUT_OF_MEMORY, "set_device_mesh: out of memory");
  *copy = *m;
  TV(ir_tv(tv))->mesh = copy;
  return CF_OK;
}

const cf_device_mesh *cf_tv_device_mesh(const cf_tv *tv) { return tv ? TV(ir_tv(tv))->mesh : NULL; }
