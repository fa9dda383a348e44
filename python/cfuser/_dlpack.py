"""DLPack both ways, without copies: arrays of NumPy, PyTorch, CuPy and JAX (or anything with
__dlpack__ and __dlpack_device__) in, and outputs of the same library out.

Inputs: the array's own DLPack capsule is kept alive for the call and its
DLManagedTensor* handed to cfuser (a DLManagedTensor starts with its DLTensor).
Streams: when every input is a PyTorch CUDA tensor, cfuser launches asynchronously on
torch's current stream (cf_executor_run_async), as a torch op would: outputs come from
torch's caching allocator on that stream and are ready when the stream reaches them.
Otherwise cfuser launches on the legacy default stream and synchronizes after the kernel:
CUDA arrays of the protocol are asked for stream 1 (that stream), so the producer orders
its pending work before the kernel. PyTorch tensors go through torch's C exporter (the
protocol's Python-level stream handling costs microseconds per tensor). cfuser runs on
CUDA device 0.

Outputs: where the library can allocate (numpy.empty, torch.empty, cupy.empty), the output
is allocated by it, in its own (caching) allocator, and given to cfuser to fill; elsewhere
(JAX arrays are immutable) cfuser allocates and the library adopts the memory through
from_dlpack on a DLPackTensor.
"""
from __future__ import annotations

import ctypes
import importlib
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from . import _capi, _packed
from .types import ARRAY_DTYPE_NAMES, ML_DTYPES, PACKED_DTYPES, DataType, InvalidArgumentError, UnsupportedError


class DLPackTensor:
    """A tensor cfuser allocated, to hand to any library's from_dlpack (numpy.from_dlpack,
    torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack). It can be exported once;
    until then it owns the memory and frees it when collected."""

    def __init__(self, managed: int) -> None:
        self._managed: Optional[int] = managed
        m = _capi.DLManagedTensor.from_address(managed)
        self._device = (int(m.dl_tensor.device.device_type), int(m.dl_tensor.device.device_id))
        self.shape: Tuple[int, ...] = _packed.shape_of(managed)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self._device

    def __dlpack__(self, stream: Optional[int] = None, **_: Any) -> object:
        """The capsule; cfuser's work on the tensor is complete (runs synchronize), so any
        stream may use it at once."""
        if self._managed is None:
            raise InvalidArgumentError("DLPackTensor: exported already (a DLPack tensor is consumed once)")
        managed, self._managed = self._managed, None
        return _capi.new_capsule(managed)

    def __del__(self) -> None:
        if getattr(self, "_managed", None) is not None:
            _capi.lib.cf_tensor_free(self._managed)
            self._managed = None


def _module(name: str) -> Any:
    """An imported module (from sys.modules: this is on execute's path)."""
    return sys.modules.get(name) or importlib.import_module(name)


def _ml_dtypes() -> Any:
    try:
        return _module("ml_dtypes")
    except ImportError:
        return None


def _numpy_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    if dtype in PACKED_DTYPES:  # NumPy has no dtype of two elements per byte: its bytes
        return _module("numpy").empty(shape, dtype="uint8")
    if dtype in ML_DTYPES:  # NumPy's bfloat16 and float8 types are ml_dtypes' (JAX's)
        ml, name = _ml_dtypes(), ARRAY_DTYPE_NAMES[dtype]
        if ml is None:
            raise UnsupportedError(f"execute: a {name} output on NumPy arrays needs ml_dtypes (NumPy has no "
                                   f"{name} of its own): pip install ml_dtypes, or cast the output to "
                                   "DataType.Float in the definition")
        return _module("numpy").empty(shape, dtype=getattr(ml, name))
    return _module("numpy").empty(shape, dtype=ARRAY_DTYPE_NAMES[dtype])


def _numpy_copy(dst: Any, src: Any) -> None:
    _module("numpy").copyto(dst, src)


def _numpy_layout(shape: Tuple[int, ...], like: Any, perm: Sequence[int]) -> Any:
    """An empty array like `like` whose memory holds axes in the order perm (outermost
    first), viewed in logical order."""
    np = _module("numpy")
    phys = np.empty(tuple(shape[a] for a in perm), dtype=like.dtype)
    return phys.transpose([list(perm).index(a) for a in range(len(perm))])


def _torch_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    torch = _module("torch")
    name = _packed.pair_dtype(torch)[0] if dtype in PACKED_DTYPES else ARRAY_DTYPE_NAMES[dtype]
    tdtype = getattr(torch, name, None)
    return None if tdtype is None else torch.empty(shape, dtype=tdtype, device=like.device)


def _torch_copy(dst: Any, src: Any) -> None:
    dst.copy_(src)


def _torch_layout(shape: Tuple[int, ...], like: Any, perm: Sequence[int]) -> Any:
    phys = like.new_empty(tuple(shape[a] for a in perm))
    return phys.permute([list(perm).index(a) for a in range(len(perm))])


def _cupy_copy(dst: Any, src: Any) -> None:
    _module("cupy").copyto(dst, src)


def _cupy_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    cupy = _module("cupy")
    if dtype in ML_DTYPES:
        return None
    with like.device:
        return cupy.empty(shape, dtype="uint8" if dtype in PACKED_DTYPES else ARRAY_DTYPE_NAMES[dtype])


def _jax_adopt(t: DLPackTensor) -> Any:
    dl = _module("jax.dlpack")
    try:
        return dl.from_dlpack(t)
    except (TypeError, AttributeError):  # older JAX takes the capsule itself
        return dl.from_dlpack(t.__dlpack__())


def _generic_export(obj: Any) -> Tuple[object, int, int]:
    """The DLPack protocol: (capsule, device type, device id). CUDA arrays are asked for
    stream 1 (the legacy default stream, which cfuser's launches use)."""
    device_type, device_id = (int(v) for v in obj.__dlpack_device__())
    if device_type in (_capi.KDLCUDA, _capi.KDLCUDAMANAGED):
        try:
            return obj.__dlpack__(stream=1), device_type, device_id
        except TypeError:
            return obj.__dlpack__(), device_type, device_id
    return obj.__dlpack__(), device_type, device_id


def _torch_export(x: Any) -> Tuple[object, int, int]:
    """torch's own C exporter (no Python-level stream handling: execute orders streams once
    per call in _torch_before_run)."""
    to_dlpack = getattr(_module("torch.utils.dlpack"), "to_dlpack", None)
    if to_dlpack is None:  # a torch without it: the protocol
        return _generic_export(x)
    if x.requires_grad:  # cfuser records no gradients: refused whatever torch's DLPack allows
        raise RuntimeError("it requires grad, and cfuser records no gradients; pass x.detach()")
    if x.is_cuda:
        return to_dlpack(x), _capi.KDLCUDA, x.get_device()
    if x.device.type == "cpu":
        return to_dlpack(x), _capi.KDLCPU, 0
    return _generic_export(x)


def _torch_before_run(first: Any) -> None:
    """For a synchronous run on the legacy default stream: make that stream wait for the
    current one when they differ (outputs are complete on return)."""
    if first.is_cuda:
        torch = _module("torch")
        current = torch.cuda.current_stream()
        if current.cuda_stream != 0:
            torch.cuda.default_stream().wait_stream(current)


def _torch_stream(x: Any) -> Optional[int]:
    """The raw handle of torch's current stream on x's CUDA device (0: the legacy default
    stream), or None for a CPU tensor. torch's C accessor costs well under a microsecond;
    torch.cuda.current_stream() builds a Python object."""
    if not x.is_cuda:
        return None
    torch = _module("torch")
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(x.get_device()))
    return int(torch.cuda.current_stream(x.device).cuda_stream)


class Framework:
    """How one array library exports an array, allocates an output and adopts a
    cfuser-allocated one."""

    def __init__(self, name: str, empty: Optional[Callable[..., Any]], adopt: Callable[[DLPackTensor], Any],
                 export: Optional[Callable[[Any], Tuple[object, int, int]]] = None,
                 before_run: Optional[Callable[[Any], None]] = None,
                 stream: Optional[Callable[[Any], Optional[int]]] = None,
                 copy: Optional[Callable[[Any, Any], None]] = None,
                 layout: Optional[Callable[[Tuple[int, ...], Any, Sequence[int]], Any]] = None,
                 pairs: Optional[Callable[[], Tuple[int, int, int]]] = None) -> None:
        self.name, self.empty, self.adopt = name, empty, adopt
        # The DLPack type of the library's bytes of two packed elements (_packed.py); None:
        # it adopts packed tensors in DLPack's own form (elements).
        self.pairs = pairs
        self.copy = copy      # copy(dst, src) into an existing array (in-place updates: alias_input)
        self.layout = layout  # layout(shape, like, perm): an empty array of that memory order
        self.export = export or _generic_export
        self.before_run = before_run
        # The library's current CUDA stream for an array (None: run synchronously on the
        # legacy default stream). Where it exists, execute launches asynchronously on it,
        # ordered with the library's own work as the library's ops are.
        self.stream = stream


def _uint8() -> Tuple[int, int, int]:
    return _packed.UINT8


FRAMEWORKS: Dict[str, Framework] = {
    "numpy": Framework("numpy", _numpy_empty, lambda t: _module("numpy").from_dlpack(t), copy=_numpy_copy,
                       layout=_numpy_layout, pairs=_uint8),
    "torch": Framework("torch", _torch_empty, lambda t: _module("torch").from_dlpack(t), _torch_export,
                       _torch_before_run, _torch_stream, _torch_copy, _torch_layout,
                       pairs=lambda: _packed.pair_dtype(_module("torch"))[1]),
    "cupy": Framework("cupy", _cupy_empty, lambda t: _module("cupy").from_dlpack(t), copy=_cupy_copy,
                      layout=_numpy_layout, pairs=_uint8),
    "jax": Framework("jax", None, _jax_adopt),
    "jaxlib": Framework("jax", None, _jax_adopt),
}
# Anything else with __dlpack__: outputs are DLPackTensors, for the caller's from_dlpack.
GENERIC = Framework("dlpack", None, lambda t: t)


_BY_TYPE: Dict[type, Framework] = {}  # framework_of's answers, by the array's type


def adopt(fw: Framework, managed: int, what: str) -> Any:
    """A tensor cfuser allocated, adopted by fw's library (a packed one as its bytes)."""
    t = DLPackTensor(managed)  # owns it from here: freed if the rewrite refuses
    if fw.pairs is not None:
        _packed.to_pairs(managed, fw.pairs(), what)
        t.shape = _packed.shape_of(managed)
    return fw.adopt(t)


def framework_of(obj: Any) -> Framework:
    """The array library obj belongs to (by its type's top-level module)."""
    fw = _BY_TYPE.get(type(obj))
    if fw is None:
        fw = FRAMEWORKS.get(type(obj).__module__.split(".", 1)[0], GENERIC)
        if len(_BY_TYPE) < 64:  # a bounded memo: array types are few
            _BY_TYPE[type(obj)] = fw
    return fw


def export(obj: Any, kind: str, index: int) -> Tuple[object, int, int]:
    """(keep-alive object, DLManagedTensor*, DLPack device type) of an array, without a
    copy; errors name it as "execute: <kind> <index>"."""
    fw = _BY_TYPE.get(type(obj)) or framework_of(obj)
    try:
        capsule, device_type, device_id = fw.export(obj)
    except (AttributeError, TypeError, BufferError, RuntimeError, ValueError) as e:
        what = f"execute: {kind} {index}"
        if fw.name == "numpy" and _NUMPY_DL.get(str(getattr(obj, "dtype", ""))):
            return _numpy_manual(obj)  # a dtype or flag NumPy's DLPack refuses (bool, bfloat16, read-only)
        if not hasattr(obj, "__dlpack_device__"):
            raise InvalidArgumentError(
                f"{what} is a {type(obj).__name__}, not a DLPack tensor (it has no __dlpack_device__)") from None
        raise InvalidArgumentError(f"{what}: exporting it through DLPack failed: {e}") from None
    ptr = _capi.capsule_pointer(capsule)
    if not ptr:
        raise InvalidArgumentError(f"execute: {kind} {index}: its DLPack export is not an unconsumed \"dltensor\" "
                                   "capsule")
    return capsule, ptr, device_type


# (DLPack type code, bits) of the NumPy dtypes cfuser takes (bfloat16 and float8: ml_dtypes').
_NUMPY_DL = {"bool": (6, 8), "int8": (0, 8), "int32": (0, 32), "int64": (0, 64), "uint32": (1, 32),
             "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
             "float8_e4m3fn": (10, 8), "float8_e5m2": (12, 8), "complex64": (5, 64), "complex128": (5, 128)}


def _numpy_manual(arr: Any) -> Tuple[object, int, int]:
    """The DLTensor of a NumPy array made by hand from its array interface, where NumPy's
    DLPack export refuses it (bool before NumPy 1.25, ml_dtypes' bfloat16 and float8, read-only views
    such as broadcast_to's); kept alive by the returned object."""
    nd = arr.ndim
    code, bits = _NUMPY_DL[str(arr.dtype)]
    if any(st % arr.itemsize for st in arr.strides):
        raise InvalidArgumentError(f"execute: an array of strides {arr.strides} bytes, not whole elements")
    shape = (ctypes.c_int64 * max(nd, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*(st // arr.itemsize for st in arr.strides))
    t = _capi.DLTensor(arr.__array_interface__["data"][0], _capi.DLDevice(_capi.KDLCPU, 0), nd,
                       _capi.DLDataType(code, bits, 1), shape, strides, 0)
    return (t, shape, strides, arr), ctypes.addressof(t), _capi.KDLCPU


def pointer_array(ptrs: Sequence[Optional[int]]) -> "ctypes.Array[ctypes.c_void_p]":
    """A C array of pointers (None is NULL)."""
    return (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
