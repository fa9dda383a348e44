"""Packed dtypes (float4_e2m1fn: two elements per byte) at the DLPack boundary.

cfuser's tensors count elements: a packed tensor of shape [M, 2K] is M*K bytes, element
2k in the low nibble of byte k, and the C library takes it in DLPack's own form (code 17,
bits 4, lanes 1, shape and strides in elements). The array libraries count bytes: torch's
float4_e2m1fn_x2 is one byte of two elements, so the same tensor is a torch tensor of
shape [M, K] that DLPack exports as code 17, bits 4, lanes 2; NumPy, CuPy and a torch
without that dtype hold the bytes as uint8 [M, K], the definition's dtype saying what they
hold. This module converts between the two at execute's boundary, without copies:

- inputs: a tensor of such bytes becomes a view counting elements (PackedView: the extent
  of the bytes' contiguous axis doubled, the other strides doubled: each byte holds two
  neighbours along that axis, the last one or, in a transposed view, another);
- outputs: the library allocates bytes (byte_shape, pair_dtype) handed to C as elements
  the same way; one cfuser allocated is rewritten to bytes in place (to_pairs) before the
  library adopts it (a library without a dtype for the bytes, JAX, gets DLPack's form).

Key decision: the conversion is here, not in the C library: C's rule stays DLPack's (the
standard's form, lanes 1), and torch's lanes-2 form is torch's, met where torch is met.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence, Tuple

from . import _capi
from .types import PACKED_ARRAY_NAMES, PACKED_DTYPES, DataType, InvalidArgumentError, UnsupportedError

KDL_UINT, KDL_FLOAT4_E2M1FN = 1, 17
UINT8 = (KDL_UINT, 8, 1)  # (code, bits, lanes) of bytes
PAIRS = (KDL_FLOAT4_E2M1FN, 4, 2)  # torch's float4_e2m1fn_x2
ELEMENTS = (KDL_FLOAT4_E2M1FN, 4, 1)  # DLPack's packed float4_e2m1fn


def pair_axis(shape: Sequence[int], strides: Optional[Sequence[int]]) -> int:
    """The axis whose neighbours share a byte: the bytes' contiguous one (stride 1, the last
    such where several are, a transposed view's first), the last where none is or no
    strides are known (as_elements refuses a tensor with none)."""
    n = len(shape)
    if strides is None or n == 0 or strides[n - 1] == 1:
        return n - 1
    ones = [a for a in range(n) if strides[a] == 1 and shape[a] > 1]
    return ones[-1] if ones else n - 1


def element_layout(shape: Sequence[int], strides: Optional[Sequence[int]]) -> Tuple[List[int],
                                                                                    Optional[List[int]]]:
    """The shape and strides in elements of a tensor of bytes of two elements (shape and
    strides in bytes): the pair axis (pair_axis: the contiguous one) twice as long, every
    other stride doubled. An empty tensor's strides mean nothing: row-major ones."""
    shape = [int(s) for s in shape]
    k = pair_axis(shape, strides)
    if shape:
        shape[k] *= 2
    if strides is None:
        return shape, None
    if 0 in shape:
        row, acc = [0] * len(shape), 1
        for a in range(len(shape) - 1, -1, -1):
            row[a], acc = acc, acc * shape[a]
        return shape, row
    return shape, [1 if a == k else int(st) * 2 for a, st in enumerate(strides)]


def array_strides(x: Any) -> Optional[List[int]]:
    """x's strides in its elements (torch's stride(), NumPy's bytes over its itemsize), or
    None where it has none to tell."""
    st = getattr(x, "stride", None)
    if callable(st):
        return [int(v) for v in st()]
    st, item = getattr(x, "strides", None), getattr(getattr(x, "dtype", None), "itemsize", None)
    if st is None or not item:
        return None
    return [int(v) // int(item) for v in st]


def holds_pairs(x: Any, dtype: Optional[DataType]) -> bool:
    """Whether array x holds bytes of two elements of dtype: torch's float4_e2m1fn_x2, or
    uint8 bytes given for a packed dtype."""
    name = str(getattr(x, "dtype", "")).rsplit(".", 1)[-1]
    return name in PACKED_ARRAY_NAMES.values() or (dtype in PACKED_DTYPES and name == "uint8")


def element_shape(x: Any, dtype: Optional[DataType], pairs: Optional[bool] = None) -> Tuple[int, ...]:
    """x's shape in elements of dtype (its own where it does not hold pairs; pairs:
    holds_pairs(x, dtype) when the caller has it already)."""
    shape = [int(s) for s in x.shape]
    if pairs is None:
        pairs = holds_pairs(x, dtype)
    return tuple(element_layout(shape, array_strides(x))[0]) if shape and pairs else tuple(shape)


class Sized:
    """A shape alone: an array of bytes of two elements as its shape in elements."""

    __slots__ = ("shape",)

    def __init__(self, shape: Tuple[int, ...]) -> None:
        self.shape = shape


def in_elements(inputs: Sequence[Any], dtypes: Sequence[Optional[DataType]]) -> List[Any]:
    """execute's arguments with each array of bytes of two elements (of its input's dtype)
    replaced by its shape in elements, for the output shapes computed from them."""
    return [Sized(element_shape(x, dt)) if dt is not None and holds_pairs(x, dt) else x
            for x, dt in zip(inputs, dtypes)]


def byte_shape(shape: Sequence[int], what: str) -> Tuple[int, ...]:
    """The shape in bytes of a packed tensor of shape (in elements); its innermost extent
    must be even (a byte is two elements of one row)."""
    if not shape:
        raise UnsupportedError(f"{what} is a 0-d tensor of a packed dtype (two elements per byte): arrays hold "
                               "such a dtype in bytes of two elements; give it an even innermost dimension")
    if shape[-1] % 2:
        raise InvalidArgumentError(f"{what} has a packed dtype, two elements per byte, and innermost extent "
                                   f"{shape[-1]}; it must be even")
    return tuple(shape[:-1]) + (shape[-1] // 2,)


def pair_dtype(torch: Any = None) -> Tuple[str, Tuple[int, int, int]]:
    """(dtype name, DLPack type) the bytes of a packed tensor have in a library: torch's
    float4_e2m1fn_x2 where torch (the module given) has it, else uint8."""
    name = PACKED_ARRAY_NAMES[DataType.Float4_e2m1fn]
    if torch is not None and hasattr(torch, name):
        return name, PAIRS
    return "uint8", UINT8


class PackedView:
    """A DLTensor in elements (DLPack's form) over a DLTensor of bytes of two elements,
    alive as long as this object (keep: what keeps the bytes alive)."""

    __slots__ = ("tensor", "shape", "strides", "keep")

    def __init__(self, t: Any, keep: object) -> None:
        n = int(t.ndim)
        st = [t.strides[i] for i in range(n)] if t.strides else None
        shape, strides = element_layout([t.shape[i] for i in range(n)], st)
        self.shape = (ctypes.c_int64 * n)(*shape)
        self.strides = (ctypes.c_int64 * n)(*strides) if strides is not None else None
        self.tensor = _capi.DLTensor(t.data, t.device, n, _capi.DLDataType(*ELEMENTS), self.shape,
                                     self.strides, t.byte_offset)
        self.keep = keep

    @property
    def address(self) -> int:
        return ctypes.addressof(self.tensor)


def _type_of(t: Any) -> Tuple[int, int, int]:
    return int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)


def as_elements(ptr: int, dtype: Optional[DataType], what: str, keep: object) -> Optional[PackedView]:
    """The element view C needs of the DLTensor at ptr (the export of an argument `what`,
    declared dtype), or None where it counts elements already. Refused, naming it: a
    float4_e2m1fn of other lanes, a 0-d tensor of bytes, bytes whose innermost axis is not
    contiguous (a byte would hold elements of two positions apart)."""
    t = _capi.DLTensor.from_address(ptr)
    code, bits, lanes = _type_of(t)
    if code == KDL_FLOAT4_E2M1FN and bits == 4 and lanes not in (1, 2):
        raise InvalidArgumentError(f"{what} has DLPack dtype float4_e2m1fn (code 17) with {lanes} lanes; cfuser "
                                   "takes lanes 1 (elements, two per byte: DLPack's form) or 2 (one byte of two "
                                   "elements: torch's float4_e2m1fn_x2)")
    bytes_of = "float4_e2m1fn_x2" if (code, bits, lanes) == PAIRS else "uint8"
    if (code, bits, lanes) != PAIRS and not (dtype in PACKED_DTYPES and (code, bits, lanes) == UINT8):
        return None
    if t.ndim == 0:
        raise InvalidArgumentError(f"{what} is a 0-d {bytes_of} tensor (one byte, two elements); a packed "
                                   "tensor needs an innermost dimension to hold its pairs")
    n = int(t.ndim)
    if t.strides:
        shape, strides = [t.shape[i] for i in range(n)], [t.strides[i] for i in range(n)]
        k = pair_axis(shape, strides)
        if shape[k] > 1 and strides[k] != 1:
            raise InvalidArgumentError(f"{what} ({bytes_of}, two elements per byte) has no dimension of stride 1 "
                                       f"(strides {tuple(strides)}); each byte holds two neighbours along its "
                                       "contiguous dimension: pass a copy with one")
    return PackedView(t, keep)


def shape_of(managed: int) -> Tuple[int, ...]:
    t = _capi.DLManagedTensor.from_address(managed).dl_tensor
    return tuple(int(t.shape[i]) for i in range(t.ndim))


def to_pairs(managed: int, pair: Tuple[int, int, int], what: str) -> None:
    """Rewrites a cfuser-allocated packed tensor (DLPack's form) as bytes of two elements of
    DLPack type pair, in place (its header is cfuser's), for a library that adopts it."""
    t = _capi.DLManagedTensor.from_address(managed).dl_tensor
    if _type_of(t) != ELEMENTS:
        return
    n = int(t.ndim)
    shape = byte_shape([t.shape[i] for i in range(n)], what)
    if t.strides:
        for i in range(n - 1):
            t.strides[i] //= 2
        t.strides[n - 1] = 1
    t.shape[n - 1] = shape[-1]
    t.dtype = _capi.DLDataType(*pair)
