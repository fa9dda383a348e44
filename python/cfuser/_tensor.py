"""Tensor and Scalar: the values a FusionDefinition hands out.

A Tensor wraps one cf_tv* of one definition. Beside the handle it keeps its shape as the
definition knows it: per axis either a constant or (input index, axis), the input whose
size it takes at run time. execute uses that to allocate outputs in the caller's array
library; the rules are the C ops' own (ir/ops.c: an iterated side wins over a broadcast
one, a constant over a symbolic one).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, Tuple, Union

from . import _capi
from .types import DataType, MemoryType, ParallelType

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

Extent = Union[int, Tuple[int, int]]  # a constant, or (input index, axis)
Shape = Tuple[Extent, ...]


def broadcast_shapes(shapes: Sequence[Shape]) -> Shape:
    """The output shape of an elementwise op: per axis, a constant of an iterated (not size
    1) operand, else a symbolic one, else 1. Lower ranks broadcast numpy-style (leading
    size-1 axes), as the C ops do."""
    rank = max(len(s) for s in shapes)
    shapes = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for axis in zip(*shapes):
        iterated = [e for e in axis if e != 1]
        constants = [e for e in iterated if isinstance(e, int)]
        out.append(constants[0] if constants else iterated[0] if iterated else 1)
    return tuple(out)


class Scalar:
    """A constant made by FusionDefinition.define_scalar; ops take it where a tensor's
    partner may be a number (add, sub, mul, div)."""

    def __init__(self, value: float, dtype: DataType) -> None:
        self.value, self.dtype = value, dtype

    def __repr__(self) -> str:
        return f"Scalar({self.value!r}, {self.dtype.name})"


class Tensor:
    """A TensorView of one FusionDefinition. Valid as long as its definition; arithmetic
    operators (+ - * / unary -) call fd.ops."""

    __slots__ = ("fd", "handle", "shape")

    def __init__(self, fd: "FusionDefinition", handle: int, shape: Shape) -> None:
        self.fd, self.handle, self.shape = fd, handle, shape

    @property
    def name(self) -> str:
        """nvFuser's name, e.g. "T2"."""
        return _capi.lib.cf_tv_name(self.handle).decode()

    @property
    def dtype(self) -> DataType:
        return DataType(_capi.lib.cf_tv_dtype(self.handle))

    @property
    def ndim(self) -> int:
        """The number of logical axes (without reduction axes)."""
        return len(self.shape)

    @property
    def naxes(self) -> int:
        """The number of loop axes (what scheduling transforms)."""
        return int(_capi.lib.cf_tv_naxes(self.handle))

    def axis(self, i: int) -> Tuple[int, ParallelType]:
        """(constant extent or -1 when symbolic, parallel type) of loop axis i."""
        ax = _capi.lib.cf_tv_axis(self.handle, i)
        if not ax:
            raise IndexError(f"{self.name}: loop axis {i} out of range for {self.naxes} axes")
        return int(_capi.lib.cf_id_extent(ax)), ParallelType(_capi.lib.cf_id_parallel_type(ax))

    @property
    def memory_type(self) -> MemoryType:
        return MemoryType(_capi.lib.cf_tv_memory_type(self.handle))

    @property
    def compute_at_pos(self) -> int:
        return int(_capi.lib.cf_tv_compute_at_pos(self.handle))

    def __repr__(self) -> str:
        return self.fd.tensor_text(self).rstrip("\n")

    def __add__(self, other: Any) -> "Tensor":
        return self.fd.ops.add(self, other)

    def __radd__(self, other: Any) -> "Tensor":
        return self.fd.ops.add(other, self)

    def __sub__(self, other: Any) -> "Tensor":
        return self.fd.ops.sub(self, other)

    def __rsub__(self, other: Any) -> "Tensor":
        return self.fd.ops.sub(other, self)

    def __mul__(self, other: Any) -> "Tensor":
        return self.fd.ops.mul(self, other)

    def __rmul__(self, other: Any) -> "Tensor":
        return self.fd.ops.mul(other, self)

    def __truediv__(self, other: Any) -> "Tensor":
        return self.fd.ops.div(self, other)

    def __neg__(self) -> "Tensor":
        return self.fd.ops.neg(self)
