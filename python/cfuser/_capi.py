"""Every C call of the binding: finding libcfuser.so, the ctypes prototypes of the public C
API (include/cfuser/*.h), and the few CPython calls the DLPack capsules need.

No other module of the package touches ctypes function objects, so a change of the C API
(a define-and-run call, streams) is a change here only.

The library is found by this rule, first match wins:

1. ``CFUSER_LIBRARY``: the path of the library file itself;
2. ``libcfuser.so`` next to this package (where the wheel puts it);
3. the build directory: ``$CFUSER_BUILD_DIR``, else ``build/`` of the checkout this
   package lives in (``python/cfuser/../../build``);
4. the system's loader (``libcfuser.so.0`` installed by ``cmake --install``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import POINTER, c_bool, c_char_p, c_double, c_int, c_int8, c_int64, c_size_t, c_void_p
from typing import List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB_NAME = "libcfuser.so"


class LibraryNotFoundError(ImportError):
    """libcfuser.so was not found by the documented rule; the message lists every place tried."""


class LibraryMismatchError(ImportError):
    """The loaded libcfuser lays out a struct otherwise than this package (another version)."""


def _build_dirs() -> List[str]:
    dirs = []
    if os.environ.get("CFUSER_BUILD_DIR"):
        dirs.append(os.environ["CFUSER_BUILD_DIR"])
    dirs.append(os.path.join(_HERE, os.pardir, os.pardir, "build"))
    return dirs


def library_candidates() -> List[str]:
    """The paths tried, in order (the system loader's own search comes last)."""
    env = os.environ.get("CFUSER_LIBRARY")
    if env:
        return [env]  # an explicit choice is never second-guessed
    return [os.path.join(_HERE, _LIB_NAME)] + [os.path.join(d, _LIB_NAME) for d in _build_dirs()]


def _load() -> Tuple[ctypes.CDLL, str]:
    tried = []
    for path in library_candidates():
        path = os.path.normpath(path)
        if os.path.isfile(path):
            return ctypes.CDLL(path), path
        tried.append(path)
    if not os.environ.get("CFUSER_LIBRARY"):
        system = ctypes.util.find_library("cfuser")
        if system:
            return ctypes.CDLL(system), system
        tried.append("the system loader (libcfuser.so.0)")
    raise LibraryNotFoundError(
        "cfuser: libcfuser.so not found; tried " + ", ".join(tried) +
        ". Build it (./cfuser build) or set CFUSER_LIBRARY to its path.")


lib, library_path = _load()


def library_version() -> str:
    """The loaded libcfuser's version (``cf_version``, include/cfuser/version.h)."""
    lib.cf_version.restype = c_char_p
    lib.cf_version.argtypes = []
    return lib.cf_version().decode()

# ---- DLPack ------------------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


KDLCPU, KDLCUDA, KDLCUDAHOST, KDLCUDAMANAGED = 1, 2, 3, 13


class LaunchParams(ctypes.Structure):
    _fields_ = [("grid", c_int64 * 3), ("block", c_int64 * 3), ("smem", c_int64)]


class ExecutorOptions(ctypes.Structure):
    _fields_ = [("backend", c_int), ("arch", c_char_p), ("skip_tmem_validation", c_bool),
                ("cache", c_void_p), ("index_type", c_int)]  # cf_index_type: 0 auto, 1 32-bit, 2 64-bit


BACKEND_AUTO, BACKEND_CUDA, BACKEND_HOST = 0, 1, 2

# ---- typed handles ---------------------------------------------------------------------------


class Handle(c_void_p):
    """A C object's pointer of one kind. ctypes hands it back as this type (never as an int,
    so nothing mistakes it for a number to range-check), and a prototype declaring a kind
    accepts only that kind or None (NULL): a tensor where a fusion is expected raises
    TypeError at the call instead of reaching C. ``key`` is the address, for dicts."""

    @classmethod
    def from_param(cls, obj):
        if obj is None or type(obj) is cls:
            return obj
        raise TypeError(f"expected a {cls.__name__} (or None), got {type(obj).__name__}")

    @property
    def key(self) -> int:
        return self.value or 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({hex(self.value) if self.value else 'NULL'})"


class FusionHandle(Handle):
    """cf_fusion*"""


class TvHandle(Handle):
    """cf_tv*: a TensorView of some fusion"""


class IdHandle(Handle):
    """cf_id*: an IterDomain (an axis)"""


class ExecutorHandle(Handle):
    """cf_executor*"""


class KernelCacheHandle(Handle):
    """cf_kernel_cache*"""


class FusionCacheHandle(Handle):
    """cf_fusion_cache*"""


# ---- prototypes ----------------------------------------------------------------------------

_P = c_void_p  # untyped pointers only: FILE*, DLTensor**, DLManagedTensor*, streams
_F, _T, _I = FusionHandle, TvHandle, IdHandle
_E, _KC, _FC = ExecutorHandle, KernelCacheHandle, FusionCacheHandle


BOUND = set()  # the C functions declared here (tests/test_api_coverage.py reads it)


def _proto(name: str, restype, *argtypes) -> None:
    BOUND.add(name)
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


UNARY_OPS = ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "relu", "sigmoid", "tanh",
             "gelu", "sin", "cos", "tan", "erf", "floor", "ceil",
             "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "erfc", "expm1",
             "exp2", "log1p", "log2", "log10", "lgamma", "erfinv", "erfcinv", "digamma", "silu",
             "round", "trunc", "frac", "sign", "isfinite", "isinf", "isnan", "isneginf", "isposinf",
             "isreal", "signbit", "logical_not", "bitwise_not", "real", "imag", "conj")
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "pow", "eq", "ne", "lt", "le", "gt", "ge",
              "truediv", "mod", "fmod", "remainder", "floor_divide", "atan2", "nextafter",
              "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
              "bitwise_left_shift", "bitwise_right_shift", "gcd")


class OpInfo(ctypes.Structure):
    """cf_op_info (cfuser/optable.h): one row of the library's op table."""

    _fields_ = [("name", c_char_p), ("py_name", c_char_p), ("kind", c_char_p), ("rule", c_char_p),
                ("dtypes", ctypes.c_uint32), ("api", c_bool)]


def _check_layouts() -> None:
    """The structs this module lays out must be the loaded library's (cf_struct_size):
    a package and a library of different versions fail here, with both sizes, instead of
    the library reading a field past the end of a struct."""
    if not hasattr(lib, "cf_struct_size"):
        raise LibraryMismatchError(f"cfuser: {library_path} has no cf_struct_size: it is older than this package")
    lib.cf_struct_size.restype, lib.cf_struct_size.argtypes = c_size_t, [c_char_p]
    for name, struct in (("cf_executor_options", ExecutorOptions), ("cf_launch_params", LaunchParams),
                         ("cf_op_info", OpInfo), ("DLTensor", DLTensor), ("DLManagedTensor", DLManagedTensor)):
        theirs, ours = lib.cf_struct_size(name.encode()), ctypes.sizeof(struct)
        if theirs != ours:
            raise LibraryMismatchError(f"cfuser: {library_path} lays out {name} in {theirs} bytes, this package in "
                                       f"{ours}: the package and the library are of different versions")


_check_layouts()

for _name in ("cf_status_name", "cf_dtype_name", "cf_parallel_type_name", "cf_memory_type_name"):
    _proto(_name, c_char_p, c_int)
_proto("cf_dtype_size", c_size_t, c_int)
_proto("cf_dtype_storage_bytes", c_size_t, c_int, c_size_t)
_proto("cf_op_count", c_int)
_proto("cf_op_get", c_int, c_int, POINTER(OpInfo))
_proto("cf_op_result_dtype", c_int, c_int, c_int)
_proto("cf_fusion_create", _F)
_proto("cf_fusion_destroy", None, _F)
_proto("cf_fusion_status", c_int, _F)
_proto("cf_fusion_error", c_char_p, _F)
for _name in ("cf_fusion_add_input", "cf_fusion_add_output"):
    _proto(_name, c_int, _F, _T)
_proto("cf_fusion_num_outputs", c_int, _F)
_proto("cf_fusion_num_inputs", c_int, _F)
_proto("cf_fusion_input", _T, _F, c_int)
_proto("cf_fusion_output", _T, _F, c_int)
_proto("cf_tensor_concrete", _T, _F, c_int, c_int, POINTER(c_int64))
_proto("cf_tensor_symbolic", _T, _F, c_int, c_int)
_proto("cf_tensor_strided", _T, _F, c_int, c_int)
for _name in ("set",) + UNARY_OPS:
    _proto("cf_" + _name, _T, _F, _T)
for _name in BINARY_OPS:
    _proto("cf_" + _name, _T, _F, _T, _T)
_proto("cf_add_scalar", _T, _F, _T, c_double)
_proto("cf_mul_scalar", _T, _F, _T, c_double)
_proto("cf_clamp", _T, _F, _T, c_double, c_double)
_proto("cf_where", _T, _F, _T, _T, _T)
_proto("cf_cast", _T, _F, _T, c_int)
_proto("cf_broadcast", _T, _F, _T, c_int, POINTER(c_bool))
for _name in ("cf_sum", "cf_max_reduce", "cf_min_reduce", "cf_prod", "cf_mean"):
    _proto(_name, _T, _F, _T, c_int, POINTER(c_int))
_proto("cf_reduce", _T, _F, c_int, _T, c_int, POINTER(c_int), c_bool)
_proto("cf_welford", _T, _F, _T, c_int, POINTER(c_int))
for _name in ("cf_welford_avg", "cf_welford_m2", "cf_welford_n"):
    _proto(_name, _T, _F, _T)
_proto("cf_var_mean", c_int, _F, _T, c_int, POINTER(c_int), c_int64, c_bool, POINTER(_T), POINTER(_T))
_proto("cf_iota", _T, _F, c_int64, c_double, c_double, c_int)
_proto("cf_triu", _T, _F, _T, c_int64)
_proto("cf_addcmul", _T, _F, _T, _T, _T, c_double)
_proto("cf_matmul", _T, _F, _T, _T)
_proto("cf_linear", _T, _F, _T, _T, _T)
for _name in ("cf_uniform", "cf_normal"):
    _proto(_name, _T, _F, c_int, POINTER(c_int64), c_double, c_double, _T, _T, c_int)
for _name in ("cf_uniform_like", "cf_normal_like"):
    _proto(_name, _T, _F, _T, c_double, c_double, _T, _T)
_proto("cf_transpose", _T, _F, _T, c_int, c_int)
_proto("cf_permute", _T, _F, _T, c_int, POINTER(c_int))
_proto("cf_squeeze", _T, _F, _T, c_int, POINTER(c_int))
_proto("cf_expand", _T, _F, _T, c_int, POINTER(c_int64))
_proto("cf_expand_as", _T, _F, _T, _T)
_proto("cf_full", _T, _F, c_int, POINTER(c_int64), c_double, c_int)
_proto("cf_full_int", _T, _F, c_int, POINTER(c_int64), c_int64, c_int)
_proto("cf_full_like", _T, _F, _T, c_double)
_proto("cf_scalar_input", _T, _F, c_int)
_proto("cf_const", _T, _F, c_int, c_double)
_proto("cf_const_int", _T, _F, c_int, c_int64)
_proto("cf_const_complex", _T, _F, c_int, c_double, c_double)
_proto("cf_reshape", _T, _F, _T, c_int, POINTER(c_int64))
_proto("cf_slice", _T, _F, _T, c_int, POINTER(c_int64), POINTER(c_int64), POINTER(c_int64))
_proto("cf_pad", _T, _F, _T, c_int, POINTER(c_int64), c_double)
_proto("cf_cat", _T, _F, c_int, POINTER(_T), c_int)
_proto("cf_tv_size", _T, _F, _T, c_int)
_proto("cf_reshape_dynamic", _T, _F, _T, c_int, POINTER(_T))
_proto("cf_expand_dynamic", _T, _F, _T, c_int, POINTER(_T))
_proto("cf_full_dynamic", _T, _F, c_int, POINTER(_T), c_double, c_int)
_proto("cf_slice_dynamic", _T, _F, _T, c_int, POINTER(_T), POINTER(_T), POINTER(_T))
_proto("cf_iota_dynamic", _T, _F, _T, c_double, c_double, c_int)
_proto("cf_take_along_axis", _T, _F, _T, _T, c_int)
for _name in ("cf_gather", "cf_index_select", "cf_select"):
    _proto(_name, _T, _F, _T, c_int, _T)
_proto("cf_scatter", _T, _F, _T, c_int, _T, _T)
for _name in ("cf_cumsum", "cf_cumprod", "cf_cummax", "cf_cummin"):
    _proto(_name, _T, _F, _T, c_int)
_proto("cf_embedding_fwd", _T, _F, _T, _T, _T, _T, _T, _T, _T)
_proto("cf_tv_name", c_char_p, _T)
for _name in ("cf_tv_dtype", "cf_tv_logical_rank", "cf_tv_naxes", "cf_tv_memory_type",
              "cf_tv_compute_at_pos"):
    _proto(_name, c_int, _T)
_proto("cf_tv_axis", _I, _T, c_int)
_proto("cf_fusion_num_tvs", c_int, _F)
_proto("cf_fusion_tv", _T, _F, c_int)
_proto("cf_id_extent", c_int64, _I)
_proto("cf_id_parallel_type", c_int, _I)
_proto("cf_id_iter_type", c_int, _I)
for _name in ("cf_fusion_print_math", "cf_fusion_print_transforms", "cf_fusion_print_kernel"):
    _proto(_name, c_int, _F, _P)
_proto("cf_tv_print", c_int, _F, _T, _P)
# schedule.h
_proto("cf_split", c_int, _F, _T, c_int, c_int64)
_proto("cf_split_outer", c_int, _F, _T, c_int, c_int64)
_proto("cf_merge", c_int, _F, _T, c_int)
_proto("cf_reorder", c_int, _F, _T, c_int, POINTER(c_int))
_proto("cf_reorder_all", c_int, _F, _T, c_int, POINTER(c_int))
_proto("cf_swizzle_xor", c_int, _F, _T, c_int, c_int)
_proto("cf_parallelize", c_int, _F, _T, c_int, c_int)
_proto("cf_set_memory_type", c_int, _F, _T, c_int)
_proto("cf_spill_to_shared", c_int, _F, _T, c_int64)
_proto("cf_set_allocation_domain", c_int, _F, _T, c_int, POINTER(_I), POINTER(c_int8))
_proto("cf_set_allocation_to_loop", c_int, _F, _T, c_bool)
_proto("cf_set_tmem_dim_sep_pos", c_int, _F, _T, c_int)
_proto("cf_fusion_group_tmem", c_int, _F, c_int, POINTER(_T))
_proto("cf_mma_tile", c_int, _F, _T, c_int, c_int)
_proto("cf_circular_buffer", c_int, _F, _T, c_int)
_proto("cf_circular_buffer_prefetch", c_int, _F, _T, c_int, c_int)
_proto("cf_tma_load", c_int, _F, _T)
_proto("cf_warp_specialize", c_int, _F, _T, c_int)
_proto("cf_cache_after", _T, _F, _T)
_proto("cf_cache_before", _T, _F, _T)
_proto("cf_rfactor", _T, _F, _T, c_int, POINTER(c_int))
_proto("cf_schedule_pointwise", c_int, _F)
_proto("cf_inline_at", c_int, _F, _T, c_int)
_proto("cf_inline_at_best_effort", c_int, _F, _T, c_int)
_proto("cf_inline_most", c_int, _F)
_proto("cf_inline_all_at", c_int, _F, _T, c_int)
_proto("cf_compute_at", c_int, _F, _T, _T, c_int)
_proto("cf_propagate_transforms", c_int, _F, _T)
_proto("cf_propagate_transforms_checked", c_int, _F, _T)
_proto("cf_propagate_transforms_to", c_int, _F, _T, c_int, c_int, POINTER(_T))
_proto("cf_parallelize_all_like", c_int, _F, _T, c_int, POINTER(c_int))
_proto("cf_fusion_clear_error", None, _F)
# tensor.h and executor.h
_proto("cf_tensor_free", None, _P)
_proto("cf_tensor_host", _P, c_int, c_int, POINTER(c_int64))
_proto("cf_tensor_get", c_double, _P, c_int64)
_proto("cf_tensor_get_imag", c_double, _P, c_int64)
_proto("cf_fusion_evaluate", c_int, _F, c_int, POINTER(c_void_p), POINTER(c_void_p))
_proto("cf_expand_to", _T, _F, _T, c_int, POINTER(c_int64), POINTER(_I))
_proto("cf_executor_create", _E, POINTER(ExecutorOptions))
_proto("cf_executor_destroy", None, _E)
_proto("cf_executor_error", c_char_p, _E)
_proto("cf_executor_compile", c_int, _E, _F)
_proto("cf_executor_run", c_int, _E, c_int, POINTER(c_void_p), c_int, POINTER(c_void_p))
_proto("cf_executor_run_async", c_int, _E, c_void_p, c_int, POINTER(c_void_p), c_int, POINTER(c_void_p))
_proto("cf_executor_last_launch_params", LaunchParams, _E)
_proto("cf_executor_source", c_char_p, _E)
_proto("cf_executor_backend", c_int, _E)
_proto("cf_kernel_cache_create", _KC)
_proto("cf_kernel_cache_hits", c_int64, _KC)
_proto("cf_kernel_cache_misses", c_int64, _KC)
_proto("cf_cuda_available", c_bool, POINTER(c_char_p))
# execute.h: define and run
_proto("cf_fusion_cache_create", _FC, _F, POINTER(ExecutorOptions))
_proto("cf_fusion_cache_destroy", None, _FC)
_proto("cf_fusion_cache_error", c_char_p, _FC)
_proto("cf_fusion_execute", c_int, _FC, c_int, POINTER(c_void_p), c_int, POINTER(c_void_p))
_proto("cf_fusion_execute_async", c_int, _FC, c_void_p, c_int, POINTER(c_void_p), c_int, POINTER(c_void_p))
_proto("cf_fusion_cache_synchronize", c_int, _FC)
for _name in ("cf_fusion_cache_num_entries", "cf_fusion_cache_num_kernels", "cf_fusion_cache_last_segments"):
    _proto(_name, c_int, _FC)
for _name in ("cf_fusion_cache_hits", "cf_fusion_cache_misses"):
    _proto(_name, c_int64, _FC)
_proto("cf_fusion_cache_last_scheduler", c_char_p, _FC, c_int)
_proto("cf_fusion_cache_last_executor", _E, _FC, c_int)
_proto("cf_fusion_cache_print_kernel", c_int, _FC, c_int, _P)
# pictures and reproducers (cfuser/_show.py): (handle, format, FILE*); (f, n, inputs, dar, backend, FILE*)
_proto("cf_fusion_draw_dataflow", c_int, _F, c_int, _P)
_proto("cf_fusion_cache_draw_segments", c_int, _FC, c_int, _P)
_proto("cf_fusion_write_repro", c_int, _F, c_int, _P, c_bool, c_int, _P)


def op_table() -> List[OpInfo]:
    """Every row of the library's op table (cf_op_get), in its order."""
    rows = []
    for i in range(lib.cf_op_count()):
        row = OpInfo()
        if lib.cf_op_get(i, ctypes.byref(row)) == 0:
            rows.append(row)
    return rows


def handle_array(cls, handles):
    """A C array of typed handles (cf_tv *const *, cf_id *const *)."""
    return (cls * max(len(handles), 1))(*handles)

# ---- printing through a FILE* ---------------------------------------------------------------

_libc = ctypes.CDLL(None)
_libc.open_memstream.restype = c_void_p
_libc.open_memstream.argtypes = [POINTER(c_void_p), POINTER(c_size_t)]
_libc.fclose.argtypes = [c_void_p]
_libc.free.argtypes = [c_void_p]


def print_to_string(fn, *args) -> Tuple[int, str]:
    """Calls fn(*args, FILE*) on an in-memory stream; returns (status, what it printed)."""
    buf, size = c_void_p(), c_size_t()
    stream = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        raise MemoryError("cfuser: open_memstream failed")
    status = fn(*(args + (stream,)))
    _libc.fclose(stream)
    text = ctypes.string_at(buf, size.value).decode("utf-8", "replace") if buf else ""
    _libc.free(buf)
    return status, text


# ---- DLPack capsules (CPython's API) -----------------------------------------------------------

_capsule_get = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, _DESTRUCTOR)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid_raw = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
# The capsule keeps the name's char*: it must live as long as the process.
_DLTENSOR_NAME = ctypes.create_string_buffer(b"dltensor")


# The same call for execute's fast path (a capsule it just made: cannot fail).
capsule_get_fast = _capsule_get


def capsule_pointer(capsule: object) -> Optional[int]:
    """The DLManagedTensor* of an unconsumed "dltensor" capsule, or None."""
    try:
        return _capsule_get(capsule, b"dltensor")  # one call: this is on execute's path
    except ValueError:  # not a capsule, or one of another name (consumed)
        return None


@_DESTRUCTOR
def _free_unconsumed(capsule: int) -> None:
    # A consumer renames the capsule "used_dltensor" and owns the tensor; otherwise it is ours.
    if _capsule_is_valid_raw(capsule, b"dltensor"):
        lib.cf_tensor_free(_capsule_get_raw(capsule, b"dltensor"))


def new_capsule(managed: int) -> object:
    """A "dltensor" capsule owning the DLManagedTensor at address managed."""
    return _capsule_new(managed, ctypes.cast(_DLTENSOR_NAME, c_char_p), _free_unconsumed)


def cuda_available() -> Tuple[bool, str]:
    """(True, "") when cfuser finds a CUDA driver and device, else (False, why not)."""
    reason = c_char_p()
    ok = lib.cf_cuda_available(ctypes.byref(reason))
    return bool(ok), (reason.value or b"").decode()
