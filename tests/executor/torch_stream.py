"""A cfuser kernel on a PyTorch stream between two PyTorch ops, with no synchronization in
between: x = a * 2 (PyTorch), y = x * b + c (cfuser, cf_executor_run_async on the stream,
reading x and writing a PyTorch tensor through DLPack), z = y + 1 (PyTorch); z must be
exactly (a * 2) * b + c + 1. On a side stream, with 16M elements so that a missing order
shows. Exits 77 (skipped), saying why, without torch or a GPU.
Usage: python3 torch_stream.py <path to libcfuser.so>"""
import ctypes
import sys

try:
    import torch
    import torch.utils.dlpack
except ImportError as e:
    print(f"skipped: PyTorch is not installed ({e})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: PyTorch sees no CUDA device")
    sys.exit(77)

N = 1 << 24
CF_FLOAT, CF_PT_TIDX, CF_PT_BIDX, CF_BACKEND_CUDA = 0, 1, 4, 1


class Options(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int), ("arch", ctypes.c_char_p), ("skip", ctypes.c_bool),
                ("cache", ctypes.c_void_p)]


def load(path):
    lib = ctypes.CDLL(path)
    P = ctypes.c_void_p
    for name, res, args in (
        ("cf_fusion_create", P, []), ("cf_tensor_concrete", P, [P, ctypes.c_int, ctypes.c_int, P]),
        ("cf_fusion_add_input", ctypes.c_int, [P, P]), ("cf_fusion_add_output", ctypes.c_int, [P, P]),
        ("cf_mul", P, [P, P, P]), ("cf_add", P, [P, P, P]),
        ("cf_split", ctypes.c_int, [P, P, ctypes.c_int, ctypes.c_int64]),
        ("cf_parallelize", ctypes.c_int, [P, P, ctypes.c_int, ctypes.c_int]), ("cf_inline_most", ctypes.c_int, [P]),
        ("cf_propagate_transforms", ctypes.c_int, [P, P]),
        ("cf_parallelize_all_like", ctypes.c_int, [P, P, ctypes.c_int, P]),
        ("cf_fusion_error", ctypes.c_char_p, [P]),
        ("cf_executor_create", P, [P]), ("cf_executor_compile", ctypes.c_int, [P, P]),
        ("cf_executor_error", ctypes.c_char_p, [P]),
        ("cf_executor_run_async", ctypes.c_int, [P, P, ctypes.c_int, P, ctypes.c_int, P]),
        ("cf_executor_destroy", None, [P]), ("cf_fusion_destroy", None, [P]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def dl_pointer(t):
    """The DLManagedTensor* (whose first member is the DLTensor) of a PyTorch tensor."""
    capsule = torch.utils.dlpack.to_dlpack(t)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return capsule, get(capsule, b"dltensor")


def main():
    lib = load(sys.argv[1])
    f = lib.cf_fusion_create()
    size = (ctypes.c_int64 * 1)(N)
    ins = [lib.cf_tensor_concrete(f, CF_FLOAT, 1, ctypes.addressof(size)) for _ in range(3)]
    for t in ins:
        lib.cf_fusion_add_input(f, t)
    out = lib.cf_add(f, lib.cf_mul(f, ins[0], ins[1]), ins[2])
    lib.cf_fusion_add_output(f, out)
    lib.cf_split(f, out, 0, 128)
    lib.cf_propagate_transforms(f, out)
    lib.cf_parallelize(f, out, 0, CF_PT_BIDX)
    lib.cf_parallelize(f, out, 1, CF_PT_TIDX)
    lib.cf_parallelize_all_like(f, out, 0, None)
    lib.cf_inline_most(f)
    if lib.cf_inline_most(f):
        sys.exit("schedule: " + lib.cf_fusion_error(f).decode())
    opts = Options(CF_BACKEND_CUDA, None, False, None)
    e = lib.cf_executor_create(ctypes.byref(opts))
    if lib.cf_executor_compile(e, f):
        sys.exit("compile: " + lib.cf_executor_error(e).decode())
    a, b, c = (torch.randint(0, 8, (N,), device="cuda").float() for _ in range(3))
    y = torch.empty(N, device="cuda")
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = a * 2
        keep = [dl_pointer(t) for t in (x, b, c, y)]
        in_ptrs = (ctypes.c_void_p * 3)(*(p for _, p in keep[:3]))
        out_ptrs = (ctypes.c_void_p * 1)(keep[3][1])
        s = lib.cf_executor_run_async(e, ctypes.c_void_p(stream.cuda_stream), 3, in_ptrs, 1, out_ptrs)
        if s:
            sys.exit("run: " + lib.cf_executor_error(e).decode())
        z = y + 1
    stream.synchronize()
    want = (a * 2) * b + c + 1
    bad = int((z != want).sum())
    lib.cf_executor_destroy(e)
    lib.cf_fusion_destroy(f)
    if bad:
        sys.exit(f"FAIL: {bad} of {N} elements differ")
    print(f"ok: {N} elements right on a PyTorch stream between two PyTorch ops")


if __name__ == "__main__":
    main()
