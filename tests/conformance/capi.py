"""tests/conformance/capi.py: the few C calls the conformance matrix makes, through ctypes
and plain DLPack structs (independent of the cfuser Python package, so the matrix checks
the library itself): building a one-op fusion, evaluating it with the reference evaluator,
running it through define and run on a backend, and NumPy arrays in and out.

bfloat16 has no NumPy dtype: its arrays hold the raw uint16 bits (see values.py);
float4_e2m1fn arrays hold one code a byte, packed two to a byte (element 2k in the low
nibble) into the tensors C reads and unpacked from those it writes."""
import ctypes
import os

import numpy as np

P = ctypes.c_void_p
LIB = ctypes.CDLL(os.environ["CFUSER_LIBRARY"])


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", P), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", P), ("deleter", P)]


class OpInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("py_name", ctypes.c_char_p), ("kind", ctypes.c_char_p),
                ("rule", ctypes.c_char_p), ("dtypes", ctypes.c_uint32), ("api", ctypes.c_bool)]


class ExecutorOptions(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int), ("arch", ctypes.c_char_p), ("skip_tmem_validation", ctypes.c_bool),
                ("cache", P), ("index_type", ctypes.c_int)]


def _proto(name, restype, *argtypes):
    fn = getattr(LIB, name)
    fn.restype, fn.argtypes = restype, list(argtypes)


_proto("cf_op_count", ctypes.c_int)
_proto("cf_op_get", ctypes.c_int, ctypes.c_int, ctypes.POINTER(OpInfo))
_proto("cf_op_result_dtype", ctypes.c_int, ctypes.c_int, ctypes.c_int)
_proto("cf_dtype_name", ctypes.c_char_p, ctypes.c_int)
_proto("cf_fusion_create", P)
_proto("cf_fusion_destroy", None, P)
_proto("cf_fusion_status", ctypes.c_int, P)
_proto("cf_fusion_error", ctypes.c_char_p, P)
_proto("cf_fusion_add_input", ctypes.c_int, P, P)
_proto("cf_fusion_add_output", ctypes.c_int, P, P)
_proto("cf_tensor_symbolic", P, P, ctypes.c_int, ctypes.c_int)
_proto("cf_tensor_concrete", P, P, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64))
_proto("cf_tv_dtype", ctypes.c_int, P)
_proto("cf_fusion_output", P, P, ctypes.c_int)
_proto("cf_fusion_evaluate", ctypes.c_int, P, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(DLTensor)),
       ctypes.POINTER(ctypes.POINTER(DLManagedTensor)))
_proto("cf_tensor_free", None, ctypes.POINTER(DLManagedTensor))
_proto("cf_fusion_cache_create", P, P, ctypes.POINTER(ExecutorOptions))
_proto("cf_fusion_cache_destroy", None, P)
_proto("cf_fusion_cache_error", ctypes.c_char_p, P)
_proto("cf_fusion_execute", ctypes.c_int, P, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(DLTensor)), ctypes.c_int,
       ctypes.POINTER(ctypes.POINTER(DLManagedTensor)))
_proto("cf_cuda_available", ctypes.c_bool, ctypes.POINTER(ctypes.c_char_p))
_proto("cf_tensor_device", ctypes.POINTER(DLManagedTensor), ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64))
_proto("cf_tensor_host", ctypes.POINTER(DLManagedTensor), ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64))
_proto("cf_tensor_copy", ctypes.c_int, ctypes.POINTER(DLTensor), ctypes.POINTER(DLTensor))

_proto("cf_executor_create", P, ctypes.POINTER(ExecutorOptions))
_proto("cf_executor_destroy", None, P)
_proto("cf_executor_error", ctypes.c_char_p, P)
_proto("cf_executor_compile", ctypes.c_int, P, P)
_proto("cf_executor_run", ctypes.c_int, P, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(DLTensor)), ctypes.c_int,
       ctypes.POINTER(ctypes.POINTER(DLManagedTensor)))
_proto("cf_inline_most", ctypes.c_int, P)

BACKEND_CUDA, BACKEND_HOST = 1, 2


def op_table():
    """Every row of the library's op table, as dicts."""
    rows = []
    for i in range(LIB.cf_op_count()):
        info = OpInfo()
        assert LIB.cf_op_get(i, ctypes.byref(info)) == 0
        rows.append({"index": i, "name": info.name.decode(), "py_name": info.py_name.decode(),
                     "kind": info.kind.decode(), "rule": info.rule.decode(), "dtypes": info.dtypes, "api": info.api})
    return rows


# cf_dtype values by cfuser's printed name, and the NumPy dtype holding each (bfloat16: bits).
DTYPE_NAMES = {"float": "float32", "double": "float64", "__half": "float16", "__bfloat": "bfloat16",
               "int8_t": "int8", "int": "int32", "int64_t": "int64", "uint32_t": "uint32", "bool": "bool",
               "__e4m3": "float8_e4m3fn", "__e5m2": "float8_e5m2",
               "complex_float": "complex64", "complex_double": "complex128", "__e2m1": "float4_e2m1fn"}
DTYPES = {}
for _t in range(32):
    _n = LIB.cf_dtype_name(_t).decode()
    if _n in DTYPE_NAMES:
        DTYPES[DTYPE_NAMES[_n]] = _t
STORAGE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.uint16,
           "int8": np.int8, "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "bool": np.bool_,
           "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8, "complex64": np.complex64, "complex128": np.complex128,
           "float4_e2m1fn": np.uint8}
DL_CODE = {"float32": (2, 32), "float64": (2, 64), "float16": (2, 16), "bfloat16": (4, 16), "int8": (0, 8),
           "int32": (0, 32), "int64": (0, 64), "uint32": (1, 32), "bool": (6, 8), "float8_e4m3fn": (10, 8),
           "float8_e5m2": (12, 8), "complex64": (5, 64), "complex128": (5, 128), "float4_e2m1fn": (17, 4)}
PACKED = ("float4_e2m1fn",)  # two elements a byte in tensors


def pack(codes):
    """Codes (one a byte, an even count) as bytes of two, element 2k in the low nibble."""
    c = np.asarray(codes, np.uint8).reshape(-1)
    return (c[0::2] & 0xF) | (c[1::2] & 0xF) << 4


def unpack(raw, n):
    """The n codes of packed bytes raw."""
    b = np.frombuffer(raw, dtype=np.uint8)
    return np.stack([b & 0xF, b >> 4], axis=-1).reshape(-1)[:n]
DTYPE_OF = {v: k for k, v in DTYPES.items()}


class Fusion:
    """A fusion being built; ops are C calls by name. Frees itself (and its cache)."""

    def __init__(self):
        self.f = P(LIB.cf_fusion_create())  # a pointer object: calls without argtypes pass it whole (PIE interpreters)
        self.inputs = []

    def __del__(self):
        LIB.cf_fusion_destroy(self.f)

    def input(self, dtype, rank):
        if rank == 0:
            t = LIB.cf_tensor_concrete(self.f, DTYPES[dtype], 0, None)
        else:
            t = LIB.cf_tensor_symbolic(self.f, DTYPES[dtype], rank)
        LIB.cf_fusion_add_input(self.f, t)
        self.inputs.append(dtype)
        return t

    def input_concrete(self, dtype, sizes):
        t = LIB.cf_tensor_concrete(self.f, DTYPES[dtype], len(sizes), (ctypes.c_int64 * max(len(sizes), 1))(*sizes))
        LIB.cf_fusion_add_input(self.f, t)
        self.inputs.append(dtype)
        return t

    def op(self, name, *args):
        """cf_<name>(f, *args) for tensor handles (and C ints); None when the call refused."""
        fn = getattr(LIB, "cf_" + name)
        fn.restype = P
        return fn(self.f, *[P(a) if isinstance(a, int) else a for a in args])

    def error(self):
        return LIB.cf_fusion_error(self.f).decode()

    def ok(self):
        return LIB.cf_fusion_status(self.f) == 0

    def output(self, t):
        assert LIB.cf_fusion_add_output(self.f, t) == 0, self.error()


class Inputs:
    """DLTensors over NumPy arrays (kept alive), as the array of pointers the C calls take."""

    def __init__(self, arrays, dtypes):
        self.arrays = [np.array(a, order="C", copy=True) for a in arrays]  # 0-d stays 0-d
        self.shapes = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape) for a in self.arrays]
        self.tensors, self.data = [], [pack(a) if d in PACKED else a for a, d in zip(self.arrays, dtypes)]
        for a, data, d, s in zip(self.arrays, self.data, dtypes, self.shapes):
            code, bits = DL_CODE[d]
            self.tensors.append(DLTensor(data.ctypes.data if a.size else None, DLDevice(1, 0), a.ndim,
                                         DLDataType(code, bits, 1), s, None, 0))
        self.ptrs = (ctypes.POINTER(DLTensor) * max(len(arrays), 1))(*[ctypes.pointer(t) for t in self.tensors])


def read(m, dtype):
    """A copy of a host DLManagedTensor's contiguous elements as a NumPy array."""
    t = m.contents.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    n = int(np.prod(shape)) if shape else 1
    st = STORAGE[dtype]
    if dtype in PACKED:
        raw = ctypes.string_at(t.data + t.byte_offset, (n + 1) // 2) if n else b""
        return unpack(raw, n).reshape(shape).copy()
    raw = ctypes.string_at(t.data + t.byte_offset, n * np.dtype(st).itemsize) if n else b""
    return np.frombuffer(raw, dtype=st).reshape(shape).copy()


def _free_all(ms):
    for m in ms:
        LIB.cf_tensor_free(m)


def evaluate(fus, arrays, out_dtypes):
    """(status, [arrays] or the error message) of the reference evaluator."""
    ins = Inputs(arrays, fus.inputs)
    outs = (ctypes.POINTER(DLManagedTensor) * len(out_dtypes))()
    if LIB.cf_fusion_evaluate(fus.f, len(arrays), ins.ptrs, outs):
        return 1, fus.error()
    res = [read(outs[i], d) for i, d in enumerate(out_dtypes)]
    _free_all(outs)
    return 0, res


def out_dtype(t):
    return DTYPE_OF[LIB.cf_tv_dtype(t)]


def _device_copy(t, dtype, keep):
    """A device copy of host DLTensor t (kept in `keep` to be freed)."""
    m = LIB.cf_tensor_device(DTYPES[dtype], t.ndim, t.shape)
    keep.append(m)
    assert LIB.cf_tensor_copy(ctypes.byref(m.contents.dl_tensor), ctypes.byref(t)) == 0
    return ctypes.pointer(m.contents.dl_tensor)


def _host_copy(m, dtype):
    t = m.contents.dl_tensor
    h = LIB.cf_tensor_host(DTYPES[dtype], t.ndim, t.shape)
    assert LIB.cf_tensor_copy(ctypes.byref(h.contents.dl_tensor), ctypes.byref(t)) == 0
    return h


def _run(fus, arrays, out_dtypes, backend, call):
    """(status, [arrays] or message) of call(pointers to the inputs, outputs): the inputs
    copied to the device and the outputs back for CUDA."""
    keep = []
    try:
        ins = Inputs(arrays, fus.inputs)
        ptrs = ins.ptrs
        if backend == BACKEND_CUDA:
            devs = [_device_copy(t, d, keep) for t, d in zip(ins.tensors, fus.inputs)]
            ptrs = (ctypes.POINTER(DLTensor) * max(len(devs), 1))(*devs)
        outs = (ctypes.POINTER(DLManagedTensor) * len(out_dtypes))()
        msg = call(ptrs, outs)
        if msg is not None:
            return 1, msg
        res = []
        for i, d in enumerate(out_dtypes):
            if backend == BACKEND_CUDA:
                h = _host_copy(outs[i], d)
                res.append(read(h, d))
                LIB.cf_tensor_free(h)
            else:
                res.append(read(outs[i], d))
        _free_all(outs)
        return 0, res
    finally:
        _free_all(keep)


def execute(fus, arrays, out_dtypes, backend=BACKEND_HOST):
    """(status, [arrays] or the error message) of define and run (cf_fusion_execute)."""
    opts = ExecutorOptions(backend, None, False, None)
    cache = LIB.cf_fusion_cache_create(fus.f, ctypes.byref(opts))

    def call(ptrs, outs):
        if LIB.cf_fusion_execute(cache, len(arrays), ptrs, len(out_dtypes), outs):
            return LIB.cf_fusion_cache_error(cache).decode()
        return None
    try:
        return _run(fus, arrays, out_dtypes, backend, call)
    finally:
        LIB.cf_fusion_cache_destroy(cache)


def run_unscheduled(fus, arrays, out_dtypes, backend=BACKEND_HOST):
    """(status, [arrays] or the message) of the fusion inlined (cf_inline_most) and run by an
    executor: the hand-scheduling path, without an automatic scheduler."""
    LIB.cf_inline_most(fus.f)
    opts = ExecutorOptions(backend, None, False, None)
    e = LIB.cf_executor_create(ctypes.byref(opts))

    def call(ptrs, outs):
        if LIB.cf_executor_run(e, len(arrays), ptrs, len(out_dtypes), outs):
            return LIB.cf_executor_error(e).decode()
        return None
    try:
        if LIB.cf_executor_compile(e, fus.f):
            return 1, LIB.cf_executor_error(e).decode()
        return _run(fus, arrays, out_dtypes, backend, call)
    finally:
        LIB.cf_executor_destroy(e)


def cuda_available():
    return bool(LIB.cf_cuda_available(None))
