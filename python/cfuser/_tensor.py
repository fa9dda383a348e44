"""Tensor, Scalar and Vector: the values a FusionDefinition hands out, as nvFuser's
frontend names them.

A Tensor wraps one cf_tv* (a TvHandle) of one definition. Beside the handle it keeps its
extents as the definition knows them, per axis: a constant, ``(input index, axis)`` (the
size of an execute argument's axis), or a DimExpr (a product or quotient of those, e.g.
the inferred size of ``reshape(t, [-1])``). execute allocates outputs in the caller's
array library from them; the rules are the C ops' own (ir/ops.c: an iterated side wins
over a broadcast one, a constant over a symbolic one, lower ranks broadcast numpy-style).

A Scalar is one value: a constant known when the fusion is defined (``define_scalar(2.5)``,
a Python number in an op, or ops on constants, folded by the C library's own evaluator),
a scalar input (``define_scalar(dtype=...)``: a 0-d tensor in C, given to execute as a
number), a tensor's size (``t.size(0)``, an extent), or an op on scalar inputs (a 0-d
tensor in C). A Vector is a list of Scalars: a shape (``define_vector([2, 3])``,
``t.shape()``).

Key decision: Tensor and Scalar overload Python's operators as nvFuser does, == and <
included (they build ``eq`` and ``lt`` ops), so the package itself never compares them
with == or looks them up with ``in``: identity only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Tuple, Union

from . import _capi
from .types import DataType, MemoryType, ParallelType

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition


class DimExpr:
    """An extent computed from others at run time: ``mul`` (a product), ``div`` (an exact
    quotient, e.g. reshape's inferred -1), ``add`` (a sum: pad and cat) or ``slice`` (the
    length of Python's slice (start, stop, step) of the first argument)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: Sequence["Extent"]) -> None:
        self.op, self.args = op, tuple(args)

    def value(self, inputs: Sequence[Any]) -> int:
        if self.op == "unknown":
            raise TypeError("an extent computed from scalars at run time")
        vals = [extent_value(a, inputs) for a in self.args]
        if self.op == "mul":
            out = 1
            for v in vals:
                out *= v
            return out
        if self.op == "add":
            return sum(vals)
        if self.op == "slice":
            return len(range(*slice(vals[1], vals[2], vals[3]).indices(vals[0])))
        return vals[0] // vals[1] if vals[1] else 0

    def __repr__(self) -> str:
        if self.op == "unknown":
            return "?"
        if self.op == "slice":
            return f"len({self.args[0]!r}[{self.args[1]}:{self.args[2]}:{self.args[3]}])"
        sep = {"mul": " * ", "div": " / ", "add": " + "}[self.op]
        return f"({sep.join(map(repr, self.args))})"


class RunValue:
    """An extent given at run time: the value of a scalar input, execute argument u (or
    item j of the define_vector argument u)."""

    __slots__ = ("u", "j")

    def __init__(self, u: int, j: Optional[int] = None) -> None:
        self.u, self.j = u, j

    def value(self, inputs: Sequence[Any]) -> int:
        v = inputs[self.u] if self.j is None else inputs[self.u][self.j]
        return int(v.item() if hasattr(v, "item") else v)

    def __repr__(self) -> str:
        return f"input{self.u}" + (f"[{self.j}]" if self.j is not None else "")


UNKNOWN = DimExpr("unknown", ())  # computed from scalar inputs: cfuser allocates such outputs itself

Extent = Union[int, Tuple[int, int], DimExpr, RunValue]  # a constant, (input index, axis), an expression
Shape = Tuple[Extent, ...]


def extent_value(e: Extent, inputs: Sequence[Any]) -> int:
    """An extent's size for a call's inputs (arrays with .shape)."""
    if type(e) is int:
        return e
    if type(e) is tuple:
        return int(inputs[e[0]].shape[e[1]])
    return e.value(inputs)  # type: ignore[union-attr]  (DimExpr, RunValue)


def extent_const(e: Extent) -> Optional[int]:
    return e if type(e) is int else None


def product(extents: Sequence[Extent]) -> Extent:
    """The product of extents, folded where they are constants."""
    const, rest = 1, []
    for e in extents:
        if type(e) is int:
            const *= e
        else:
            rest.append(e)
    if not rest or const == 0:
        return const
    if const == 1 and len(rest) == 1:
        return rest[0]
    return DimExpr("mul", rest + ([const] if const != 1 else []))


def broadcast_shapes(shapes: Sequence[Shape]) -> Shape:
    """The output extents of an elementwise op: per axis, a constant of an iterated (not
    size 1) operand, else a symbolic one, else 1. Lower ranks broadcast numpy-style
    (leading size-1 axes), as the C ops do."""
    rank = max((len(s) for s in shapes), default=0)
    shapes = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for axis in zip(*shapes):
        iterated = [e for e in axis if not (type(e) is int and e == 1)]
        constants = [e for e in iterated if type(e) is int]
        out.append(constants[0] if constants else iterated[0] if iterated else 1)
    return tuple(out)


_BINARY_DUNDERS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow", "mod": "mod", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
_COMPARE_DUNDERS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


class _Operators:
    """Python's operators as nvFuser's frontend binds them (``/`` is ``div``: truncating
    for integers; ``fd.ops.truediv`` is true division). Mixed into Tensor and Scalar."""

    __slots__ = ()
    fd: "FusionDefinition"

    def __neg__(self) -> Any:
        return self.fd.ops.neg(self)

    def __abs__(self) -> Any:
        return self.fd.ops.abs(self)

    def __invert__(self) -> Any:
        return self.fd.ops.bitwise_not(self)

    __hash__ = object.__hash__


def _dunder(op: str, reflected: bool) -> Any:
    def fn(self: Any, other: Any) -> Any:
        return getattr(self.fd.ops, op)(other, self) if reflected else getattr(self.fd.ops, op)(self, other)

    return fn


for _py, _op in _BINARY_DUNDERS.items():
    setattr(_Operators, f"__{_py}__", _dunder(_op, False))
    setattr(_Operators, f"__r{_py}__", _dunder(_op, True))
for _py, _op in _COMPARE_DUNDERS.items():
    setattr(_Operators, f"__{_py}__", _dunder(_op, False))


class Scalar(_Operators):
    """nvFuser's Scalar: a constant, a scalar input, a tensor's size, or an op on them.
    ``value`` is the number when it is known at definition time (else None)."""

    __slots__ = ("fd", "value", "dtype", "handle", "extent", "source", "input_index", "run_value")

    def __init__(self, fd: "FusionDefinition", value: Any, dtype: DataType, handle: Optional[_capi.TvHandle] = None,
                 extent: Optional[Extent] = None, source: Optional[Tuple["Tensor", int]] = None,
                 input_index: Optional[int] = None) -> None:
        self.fd, self.value, self.dtype, self.handle = fd, value, dtype, handle
        # a size: its extent, and the tensor and axis it is the size of
        self.extent, self.source, self.input_index = extent, source, input_index
        self.run_value: Optional[RunValue] = None  # a scalar input: its value as an extent

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    def __repr__(self) -> str:
        if self.value is not None:
            return f"Scalar({self.value!r}, {self.dtype.name})"
        if self.input_index is not None:
            return f"Scalar(input {self.input_index}, {self.dtype.name})"
        return f"Scalar({'size ' + repr(self.extent) if self.extent is not None else 'computed'}, {self.dtype.name})"

    def __index__(self) -> int:
        if self.value is None or self.dtype not in (DataType.Int, DataType.Int32, DataType.Int8, DataType.UInt32):
            raise TypeError(f"{self!r} is not an integer constant")
        return int(self.value)


class Vector:
    """A list of Scalars: a shape (``fd.define_vector``, ``Tensor.shape()``)."""

    __slots__ = ("fd", "items")

    def __init__(self, fd: "FusionDefinition", items: Sequence[Scalar]) -> None:
        self.fd, self.items = fd, list(items)

    def __len__(self) -> int:
        return len(self.items)

    def size(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Scalar:
        return self.items[i]

    def __iter__(self) -> Iterator[Scalar]:
        return iter(self.items)

    def __repr__(self) -> str:
        return f"Vector({self.items!r})"


class Tensor(_Operators):
    """A TensorView of one FusionDefinition. Valid as long as its definition; Python's
    arithmetic, comparison and bitwise operators call fd.ops."""

    __slots__ = ("fd", "handle", "extents", "stride_order", "origin", "view_of")

    def __init__(self, fd: "FusionDefinition", handle: _capi.TvHandle, extents: Shape) -> None:
        self.fd, self.handle, self.extents = fd, handle, tuple(extents)
        self.stride_order: Optional[Tuple[int, ...]] = None  # set by fd.ops.stride_order
        self.origin: Optional[str] = None  # "reshape" for a reshape's result (a view in C)
        # a reshape's operand and sizes (one -1 at most): an output that is a reshape of an
        # input comes back as a view of the input's array, as nvFuser's alias analysis does
        self.view_of: Optional[Tuple["Tensor", Tuple[int, ...]]] = None

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
        return len(self.extents)

    def shape(self) -> Vector:
        """nvFuser's Tensor.shape(): the sizes as a Vector of Scalars (constants where the
        definition knows them, else symbolic sizes read at run time)."""
        return Vector(self.fd, [self.size(d) for d in range(self.ndim)])

    def size(self, dim: int) -> Scalar:
        """nvFuser's Tensor.size(dim) (fd.ops.size): the size of axis dim as a Scalar."""
        return self.fd.ops.size(self, dim)

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


def as_tensors(xs: Sequence[Any]) -> List[Tensor]:
    return [x for x in xs if isinstance(x, Tensor)]
