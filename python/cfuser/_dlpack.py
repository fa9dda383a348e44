"""DLPack both ways, without copies: arrays of NumPy, PyTorch, CuPy and JAX (or anything with
__dlpack__ and __dlpack_device__) in, and outputs of the same library out.

Inputs: the array's own __dlpack__ capsule is kept alive for the call and its
DLManagedTensor* handed to cf_executor_run (a DLManagedTensor starts with its DLTensor).
CUDA arrays are asked for stream 1 (the legacy default stream, which cfuser's launches
use), so the producer orders its pending work before the kernel.

Outputs: where the library can allocate (numpy.empty, torch.empty, cupy.empty), the output
is allocated by it, in its own (caching) allocator, and given to cfuser to fill; elsewhere
(JAX arrays are immutable) cfuser allocates and the library adopts the memory through
from_dlpack on a DLPackTensor.
"""
from __future__ import annotations

import ctypes
import importlib
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from . import _capi
from .types import ARRAY_DTYPE_NAMES, DataType, InvalidArgumentError


class DLPackTensor:
    """A tensor cfuser allocated, to hand to any library's from_dlpack (numpy.from_dlpack,
    torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack). It can be exported once;
    until then it owns the memory and frees it when collected."""

    def __init__(self, managed: int) -> None:
        self._managed: Optional[int] = managed
        m = _capi.DLManagedTensor.from_address(managed)
        self._device = (int(m.dl_tensor.device.device_type), int(m.dl_tensor.device.device_id))
        self.shape: Tuple[int, ...] = tuple(m.dl_tensor.shape[i] for i in range(m.dl_tensor.ndim))

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
    return importlib.import_module(name)


def _numpy_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    if dtype == DataType.BFloat16:
        return None  # NumPy has no bfloat16
    return _module("numpy").empty(shape, dtype=ARRAY_DTYPE_NAMES[dtype])


def _torch_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    torch = _module("torch")
    tdtype = getattr(torch, ARRAY_DTYPE_NAMES[dtype], None)
    return None if tdtype is None else torch.empty(shape, dtype=tdtype, device=like.device)


def _cupy_empty(shape: Tuple[int, ...], dtype: DataType, like: Any) -> Any:
    cupy = _module("cupy")
    if dtype == DataType.BFloat16:
        return None
    with like.device:
        return cupy.empty(shape, dtype=ARRAY_DTYPE_NAMES[dtype])


def _jax_adopt(t: DLPackTensor) -> Any:
    dl = _module("jax.dlpack")
    try:
        return dl.from_dlpack(t)
    except (TypeError, AttributeError):  # older JAX takes the capsule itself
        return dl.from_dlpack(t.__dlpack__())


class Framework:
    """How one array library allocates an output and adopts a cfuser-allocated one."""

    def __init__(self, name: str, empty: Optional[Callable[..., Any]],
                 adopt: Callable[[DLPackTensor], Any]) -> None:
        self.name, self.empty, self.adopt = name, empty, adopt


FRAMEWORKS: Dict[str, Framework] = {
    "numpy": Framework("numpy", _numpy_empty, lambda t: _module("numpy").from_dlpack(t)),
    "torch": Framework("torch", _torch_empty, lambda t: _module("torch").from_dlpack(t)),
    "cupy": Framework("cupy", _cupy_empty, lambda t: _module("cupy").from_dlpack(t)),
    "jax": Framework("jax", None, _jax_adopt),
    "jaxlib": Framework("jax", None, _jax_adopt),
}
# Anything else with __dlpack__: outputs are DLPackTensors, for the caller's from_dlpack.
GENERIC = Framework("dlpack", None, lambda t: t)


def framework_of(obj: Any) -> Framework:
    """The array library obj belongs to (by its type's top-level module)."""
    return FRAMEWORKS.get(type(obj).__module__.split(".", 1)[0], GENERIC)


def export(obj: Any, what: str) -> Tuple[object, int, int]:
    """(capsule, DLManagedTensor*, DLPack device type) of an array, without a copy."""
    try:
        device_type = int(obj.__dlpack_device__()[0])
    except AttributeError:
        raise InvalidArgumentError(
            f"{what} is a {type(obj).__name__}, not a DLPack tensor (it has no __dlpack_device__)") from None
    try:
        if device_type in (_capi.KDLCUDA, _capi.KDLCUDAMANAGED):
            try:
                capsule = obj.__dlpack__(stream=1)
            except TypeError:
                capsule = obj.__dlpack__()
        else:
            capsule = obj.__dlpack__()
    except (AttributeError, TypeError, BufferError, RuntimeError, ValueError) as e:
        if type(obj).__module__ == "numpy" and getattr(obj, "dtype", None) == "bool":
            return _numpy_bool(obj)
        raise InvalidArgumentError(f"{what}: its __dlpack__ failed: {e}") from None
    ptr = _capi.capsule_pointer(capsule)
    if not ptr:
        raise InvalidArgumentError(f"{what}: __dlpack__ did not return an unconsumed \"dltensor\" capsule")
    return capsule, ptr, device_type


def _numpy_bool(arr: Any) -> Tuple[object, int, int]:
    """NumPy before 1.25 exports no bool through DLPack: the same DLTensor made by hand
    from its array interface (kept alive by the returned object)."""
    nd = arr.ndim
    shape = (ctypes.c_int64 * max(nd, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*(s // arr.itemsize for s in arr.strides))
    t = _capi.DLTensor(arr.ctypes.data, _capi.DLDevice(_capi.KDLCPU, 0), nd, _capi.DLDataType(6, 8, 1),
                       shape, strides, 0)
    return (t, shape, strides, arr), ctypes.addressof(t), _capi.KDLCPU


def pointer_array(ptrs: Sequence[Optional[int]]) -> "ctypes.Array[ctypes.c_void_p]":
    """A C array of pointers (None is NULL)."""
    return (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
