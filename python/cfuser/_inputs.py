"""Fusion inputs as nvFuser declares them, mapped onto the C library's three tensor kinds.

nvFuser's ``define_tensor(shape, contiguity, dtype, stride_order)`` says per axis: a size
(-1 symbolic, 0 empty, 1 broadcast, n fixed) and a contiguity (True, False, or None: a
broadcast axis, or an expanded one of stride 0 when its size is not 1), and the order of
strides. The C library makes contiguous tensors of constant sizes, contiguous tensors of
symbolic sizes, or tensors of arbitrary strides (include/cfuser/fusion.h). An InputSpec is
the mapping between the two:

- broadcast axes (size 1) are not axes of the C input: execute hands C a view of the
  array without them (a DLTensor of the same memory, InputSpec.view) and the definition
  puts them back with ``cf_broadcast``, so they are broadcast axes in the IR as in nvFuser;
- the other axes are the C input's: constant sizes when all are constant (> 0) and the
  tensor is contiguous in row-major order, else symbolic; arbitrary strides when any
  contiguity is False, an axis is expanded (stride 0, an axis of the C input with stride 0),
  or the stride order is not row-major;
- fixed sizes the C input does not hold (a mix with -1, or a 0) are checked by execute
  against the array, with nvFuser's message.

The module also has nvFuser's ``compute_contiguity`` and ``compute_tensor_descriptor``
(what from_pytorch and ``define_tensor(sizes=, strides=)`` derive from an array), and the
view execute builds.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence, Tuple

from . import _capi
from .types import DataType, InvalidArgumentError

MAX_RANK = 16  # CF_MAX_RANK: checked before any list of that length is made


def check_size(size: Any, index: int, what: str = "define_tensor") -> int:
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"{what}(): incompatible function arguments: size {size!r} at index {index} is not an int")
    if size < -1:
        raise InvalidArgumentError(f"{what}: The value {size} at index {index} was neither symbolic(-1), "
                                   "zero_element(0), broadcast(1), or static(>1).")
    if size >= 2**63:
        raise TypeError(f"{what}(): incompatible function arguments: size {size} at index {index} exceeds int64")
    return size


def check_rank(rank: int, what: str) -> None:
    if rank < 0 or rank > MAX_RANK:
        raise InvalidArgumentError(f"{what}: rank {rank} is outside 0..{MAX_RANK} (cfuser's CF_MAX_RANK)")


def normalize_stride_order(order: Optional[Sequence[int]], rank: int) -> Optional[Tuple[int, ...]]:
    """nvFuser's stride_order: entry i is the rank of axis i's stride, rank-1 the
    outermost; negative entries count from the end. None or [] when absent."""
    if not order:
        return None
    if len(order) != rank:
        raise InvalidArgumentError(f"define_tensor: stride_order has {len(order)} entries for rank {rank}")
    out = []
    for o in order:
        if not -rank <= int(o) < rank:
            raise InvalidArgumentError(f"define_tensor: stride_order argument is out of range, expects values in "
                                       f"[{-rank}, {rank}), but got: {o}")
        out.append(int(o) % rank)
    if len(set(out)) != rank:
        raise InvalidArgumentError(f"define_tensor: duplicated stride_order entries in {list(order)}")
    return tuple(out)


def compute_contiguity(sizes: Sequence[int], strides: Sequence[int]) -> List[Optional[bool]]:
    """nvFuser's compute_contiguity, in logical order: None for a broadcast axis (size 1
    or stride 0), else whether the axis's stride is the next non-broadcast axis's stride
    times its size (1 for the innermost)."""
    if len(sizes) != len(strides):
        raise InvalidArgumentError("compute_contiguity: Sizes and strides must have the same number of dimensions")
    dims = [i for i in range(len(sizes)) if strides[i] != 0 and sizes[i] != 1]
    out: List[Optional[bool]] = [None] * len(sizes)
    for k, i in enumerate(dims):
        nxt = dims[k + 1] if k + 1 < len(dims) else None
        out[i] = strides[i] == (1 if nxt is None else strides[nxt] * sizes[nxt])
    return out


def compute_tensor_descriptor(sizes: Sequence[int], strides: Sequence[int]) -> Tuple[List[Optional[bool]], List[int]]:
    """nvFuser's compute_tensor_descriptor: (contiguity in allocation order, stride_order).
    Axes sort by decreasing stride (stably); stride-0 axes keep their logical positions."""
    if len(sizes) != len(strides):
        raise InvalidArgumentError("compute_tensor_descriptor: Sizes and strides must have the same number of "
                                   "dimensions")
    for i, s in enumerate(strides):
        if s < 0:
            raise InvalidArgumentError(f"negative stride on tensor is not supported: strides[{i}]={s}")
    rank = len(sizes)
    order = sorted((i for i in range(rank) if strides[i] != 0), key=lambda i: -strides[i])
    for i in (i for i in range(rank) if strides[i] == 0):
        order.insert(i, i)
    bcast = [strides[i] == 0 or sizes[i] == 1 for i in order]
    contiguity: List[Optional[bool]] = [None] * rank
    stride_order = [0] * rank
    for p, i in enumerate(order):
        stride_order[i] = rank - 1 - p
        if bcast[p]:
            continue
        nxt = next((order[q] for q in range(p + 1, rank) if not bcast[q]), None)
        contiguity[p] = strides[i] == (1 if nxt is None else strides[nxt] * sizes[nxt])
    return contiguity, stride_order


class InputSpec:
    """One tensor input: its user-visible axes and how the C input holds them."""

    __slots__ = ("index", "rank", "dtype", "sizes", "kept", "kind", "view", "fixed")

    def __init__(self, index: int, sizes: Sequence[int], contiguity: Sequence[Optional[bool]], dtype: DataType,
                 stride_order: Optional[Tuple[int, ...]]) -> None:
        self.index, self.rank, self.dtype, self.sizes = index, len(sizes), dtype, tuple(sizes)
        # contiguity is given in allocation order when there is a stride order (nvFuser's rule)
        logical = list(contiguity) if stride_order is None else \
            [contiguity[self.rank - 1 - stride_order[i]] for i in range(self.rank)]
        self.kept = tuple(i for i in range(self.rank) if sizes[i] != 1)  # broadcast axes are dropped
        expanded = any(logical[i] is None for i in self.kept)
        row_major = stride_order is None or list(stride_order) == list(range(self.rank - 1, -1, -1))
        strided = expanded or not row_major or any(logical[i] is False for i in self.kept)
        consts = [sizes[i] for i in self.kept]
        if strided:
            self.kind = "strided"
        elif all(s > 0 for s in consts):
            self.kind = "concrete"
        else:
            self.kind = "symbolic"
        # fixed sizes execute checks itself: those the C input does not hold as constants
        self.fixed = tuple((i, sizes[i]) for i in self.kept if sizes[i] >= 0 and self.kind != "concrete")
        self.view = len(self.kept) != self.rank

    def c_sizes(self) -> List[int]:
        return [self.sizes[i] for i in self.kept]


class View:
    """A DLTensor over another one's memory with some axes left out (and the strides of
    an empty tensor made row-major), alive as long as this object."""

    __slots__ = ("tensor", "shape", "strides", "keep")

    def __init__(self, src: int, kept: Sequence[int], empty: bool, keep: object) -> None:
        t = _capi.DLTensor.from_address(src)
        n = len(kept)
        self.shape = (ctypes.c_int64 * max(n, 1))(*[t.shape[i] for i in kept])
        if empty or not t.strides:  # no strides: row-major; an empty tensor's strides mean nothing
            row, acc = [0] * n, 1
            for k in range(n - 1, -1, -1):  # the C executor's own rule for contiguous strides
                row[k] = acc
                acc *= self.shape[k]
            self.strides = (ctypes.c_int64 * max(n, 1))(*row)
        else:
            self.strides = (ctypes.c_int64 * max(n, 1))(*[t.strides[i] for i in kept])
        self.tensor = _capi.DLTensor(t.data, t.device, n, t.dtype, self.shape, self.strides, t.byte_offset)
        self.keep = keep  # the capsule whose memory this views

    @property
    def address(self) -> int:
        return ctypes.addressof(self.tensor)


def check_array(spec: InputSpec, shape: Tuple[int, ...]) -> bool:
    """Checks the shape of an execute argument (in elements) against a tensor input's
    declared rank and fixed sizes (broadcast axes must have size 1); returns whether it is
    empty."""
    if len(shape) != spec.rank:
        raise InvalidArgumentError(f"execute: input {spec.index} has {len(shape)} dimensions but the definition "
                                   f"declares {spec.rank} (shape {list(spec.sizes)})")
    for i, s in enumerate(spec.sizes):
        if s == 1 and shape[i] != 1:
            raise InvalidArgumentError(f"execute: input {spec.index} has size {shape[i]} in dimension {i}, which the "
                                       "definition declares a broadcast axis (size 1)")
    for i, s in spec.fixed:
        if shape[i] != s:
            raise InvalidArgumentError(f"execute: input {spec.index} has size {shape[i]} in dimension "
                                       f"{i}, expected {s}")
    return 0 in shape
