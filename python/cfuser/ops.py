"""fd.ops: every tensor op of the C API (include/cfuser/fusion.h), named as in nvFuser.

The unary and binary ops are made from the op tables of _capi (the C API's
CF_UNARY_OP_TABLE and CF_BINARY_OP_TABLE), so an op added there appears here. Names that
differ from the C ones, as in nvFuser: the elementwise max and min of two tensors are
maximum and minimum; max and min are the reductions (cf_max_reduce, cf_min_reduce).
A number or a Scalar is accepted beside a tensor in add, sub, mul and div (through
cf_add_scalar and cf_mul_scalar, which are exact for these: x - c is x + (-c), c - x is
-x + c, and x / c is x * (1 / c) only where 1 / c is exact, a power of two).
"""
from __future__ import annotations

import ctypes
import math
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, Union, cast

from . import _capi
from ._tensor import Extent, Scalar, Shape, Tensor, broadcast_shapes
from .types import DataType, InvalidArgumentError, UnsupportedError, as_dtype

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

Number = Union[int, float, bool]
Operand = Union[Tensor, Scalar, int, float, bool]

# Python name -> C name where they differ (the binary ops of the C table).
_BINARY_NAMES = {"max": "maximum", "min": "minimum"}


def _scalar_value(x: Any) -> Optional[float]:
    if isinstance(x, Scalar):
        return float(x.value)
    if isinstance(x, (int, float)):  # bool is an int
        return float(x)
    return None


def _axes(dims: Union[int, Sequence[int]], rank: int, what: str, t: Tensor) -> List[int]:
    dims = [dims] if isinstance(dims, int) else list(dims)
    out = []
    for d in dims:
        if not isinstance(d, int) or not -rank <= d < rank:
            raise InvalidArgumentError(f"{what}: dimension {d!r} out of range for {t.name} of {rank} dimensions")
        out.append(d % rank)
    return out


class Ops:
    """The tensor ops of one FusionDefinition (fd.ops)."""

    # Made from the C op tables below the class; declared here for type checkers.
    set: Callable[[Tensor], Tensor]
    neg: Callable[[Tensor], Tensor]
    abs: Callable[[Tensor], Tensor]
    exp: Callable[[Tensor], Tensor]
    log: Callable[[Tensor], Tensor]
    sqrt: Callable[[Tensor], Tensor]
    rsqrt: Callable[[Tensor], Tensor]
    reciprocal: Callable[[Tensor], Tensor]
    relu: Callable[[Tensor], Tensor]
    sigmoid: Callable[[Tensor], Tensor]
    tanh: Callable[[Tensor], Tensor]
    gelu: Callable[[Tensor], Tensor]
    sin: Callable[[Tensor], Tensor]
    cos: Callable[[Tensor], Tensor]
    tan: Callable[[Tensor], Tensor]
    erf: Callable[[Tensor], Tensor]
    floor: Callable[[Tensor], Tensor]
    ceil: Callable[[Tensor], Tensor]
    maximum: Callable[[Tensor, Tensor], Tensor]
    minimum: Callable[[Tensor, Tensor], Tensor]
    pow: Callable[[Tensor, Tensor], Tensor]
    eq: Callable[[Tensor, Tensor], Tensor]
    ne: Callable[[Tensor, Tensor], Tensor]
    lt: Callable[[Tensor, Tensor], Tensor]
    le: Callable[[Tensor, Tensor], Tensor]
    gt: Callable[[Tensor, Tensor], Tensor]
    ge: Callable[[Tensor, Tensor], Tensor]

    def __init__(self, fd: "FusionDefinition") -> None:
        self._fd = fd

    def _make(self, what: str, handle: Optional[int], shape: Shape) -> Tensor:
        return self._fd._new_tensor(what, handle, shape)

    def _binary(self, what: str, a: Operand, b: Operand) -> Tensor:
        fd = self._fd
        fd._check_open(what)
        ta, tb = fd._tv(a, what), fd._tv(b, what)  # both Tensors of fd from here on
        shape = broadcast_shapes((cast(Tensor, a).shape, cast(Tensor, b).shape))
        return self._make(what, getattr(_capi.lib, "cf_" + what)(fd._f, ta, tb), shape)

    def _with_scalar(self, what: str, a: Operand, b: Operand) -> Optional[Tensor]:
        """add/sub/mul/div where one side is a number; None when both are tensors."""
        va, vb = _scalar_value(a), _scalar_value(b)
        if va is None and vb is None:
            return None
        fd = self._fd
        fd._check_open(what)
        if va is not None and vb is not None:
            raise InvalidArgumentError(f"{what}: both operands are scalars; at least one must be a Tensor")
        operand, v, left = (b, va, True) if va is not None else (a, vb, False)
        h = fd._tv(operand, what)
        t = cast(Tensor, operand)
        lib, f = _capi.lib, fd._f
        assert v is not None
        if what == "add":
            return self._make(what, lib.cf_add_scalar(f, h, v), t.shape)
        if what == "mul":
            return self._make(what, lib.cf_mul_scalar(f, h, v), t.shape)
        if what == "sub":
            if left:  # c - x == -x + c exactly
                return self._make(what, lib.cf_add_scalar(f, self.neg(t).handle, v), t.shape)
            return self._make(what, lib.cf_add_scalar(f, h, -v), t.shape)
        if not left and v != 0 and math.isfinite(v) and abs(math.frexp(v)[0]) == 0.5:
            return self._make(what, lib.cf_mul_scalar(f, h, 1.0 / v), t.shape)
        raise UnsupportedError(
            f"div: dividing {'the scalar ' + repr(v) + ' by ' + t.name if left else t.name + ' by the scalar ' + repr(v)}"
            " is not in the C API (it has add_scalar and mul_scalar only); divide by a power of two or by a tensor")

    def add(self, a: Operand, b: Operand) -> Tensor:
        """a + b; either may be a number or Scalar."""
        return self._with_scalar("add", a, b) or self._binary("add", a, b)

    def sub(self, a: Operand, b: Operand) -> Tensor:
        """a - b; either may be a number or Scalar."""
        return self._with_scalar("sub", a, b) or self._binary("sub", a, b)

    def mul(self, a: Operand, b: Operand) -> Tensor:
        """a * b; either may be a number or Scalar."""
        return self._with_scalar("mul", a, b) or self._binary("mul", a, b)

    def div(self, a: Operand, b: Operand) -> Tensor:
        """a / b; b may be a power-of-two number (an exact reciprocal)."""
        return self._with_scalar("div", a, b) or self._binary("div", a, b)

    def where(self, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
        """cond ? a : b elementwise; cond must be Bool."""
        fd = self._fd
        fd._check_open("where")
        hc, ha, hb = fd._tv(cond, "where"), fd._tv(a, "where"), fd._tv(b, "where")
        return self._make("where", _capi.lib.cf_where(fd._f, hc, ha, hb),
                          broadcast_shapes((cond.shape, a.shape, b.shape)))

    def clamp(self, t: Tensor, lo: float, hi: float) -> Tensor:
        """min(max(t, lo), hi); lo <= hi. A NaN element becomes lo (as maximum/minimum)."""
        fd = self._fd
        fd._check_open("clamp")
        h = fd._tv(t, "clamp")
        return self._make("clamp", _capi.lib.cf_clamp(fd._f, h, float(lo), float(hi)), t.shape)

    def cast(self, t: Tensor, dtype: Union[DataType, str]) -> Tensor:
        """t converted to dtype."""
        fd = self._fd
        fd._check_open("cast")
        h = fd._tv(t, "cast")
        return self._make("cast", _capi.lib.cf_cast(fd._f, h, int(as_dtype(dtype))), t.shape)

    def broadcast(self, t: Tensor, is_broadcast_dim: Sequence[bool]) -> Tensor:
        """Inserts size-1 axes where is_broadcast_dim is True (its length is the output's
        rank); the other positions take t's axes in order."""
        fd = self._fd
        fd._check_open("broadcast")
        h = fd._tv(t, "broadcast")
        flags = [bool(x) for x in is_broadcast_dim]
        arr = (ctypes.c_bool * max(len(flags), 1))(*flags)
        kept: List[Extent] = list(t.shape)
        shape: Shape = tuple(1 if b or not kept else kept.pop(0) for b in flags)
        return self._make("broadcast", _capi.lib.cf_broadcast(fd._f, h, len(flags), arr), shape)

    def broadcast_in_dim(self, t: Tensor, output_rank: int, broadcast_dims: Sequence[int]) -> Tensor:
        """nvFuser's form: t's axis i becomes output axis broadcast_dims[i]; the output has
        output_rank axes (an int here: sizes come from t)."""
        dims = set(_axes(broadcast_dims, output_rank, "broadcast_in_dim", t))
        return self.broadcast(t, [i not in dims for i in range(output_rank)])

    def _reduce(self, what: str, cname: str, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool) -> Tensor:
        fd = self._fd
        fd._check_open(what)
        h = fd._tv(t, what)
        axes = _axes(dims, t.ndim, what, t)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        shape = tuple(e for i, e in enumerate(t.shape) if i not in axes)
        out = self._make(what, getattr(_capi.lib, cname)(fd._f, h, len(axes), arr), shape)
        return self.broadcast(out, [i in axes for i in range(t.ndim)]) if keepdim else out

    def sum(self, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The sum over dims (negative counts from the end)."""
        return self._reduce("sum", "cf_sum", t, dims, keepdim)

    def max(self, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The maximum over dims (a reduction; maximum is the elementwise one)."""
        return self._reduce("max", "cf_max_reduce", t, dims, keepdim)

    def min(self, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The minimum over dims (a reduction; minimum is the elementwise one)."""
        return self._reduce("min", "cf_min_reduce", t, dims, keepdim)

    def prod(self, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The product over dims."""
        return self._reduce("prod", "cf_prod", t, dims, keepdim)

    def mean(self, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The mean over dims."""
        return self._reduce("mean", "cf_mean", t, dims, keepdim)

    def welford(self, t: Tensor, dims: Union[int, Sequence[int]]) -> Tensor:
        """The Welford states (running mean, M2, count) of t over dims, one pass: schedule
        it like any reduction and read it with welford_avg, welford_m2 and welford_n."""
        return self._reduce("welford", "cf_welford", t, dims, False)

    def _welford_field(self, what: str, states: Tensor) -> Tensor:
        fd = self._fd
        fd._check_open(what)
        h = fd._tv(states, what)
        return self._make(what, getattr(_capi.lib, "cf_" + what)(fd._f, h), states.shape)

    def welford_avg(self, states: Tensor) -> Tensor:
        """The mean of each group of Welford states."""
        return self._welford_field("welford_avg", states)

    def welford_m2(self, states: Tensor) -> Tensor:
        """The sum of squared deviations from the mean (M2) of each group."""
        return self._welford_field("welford_m2", states)

    def welford_n(self, states: Tensor) -> Tensor:
        """The count of each group (int64)."""
        return self._welford_field("welford_n", states)

    def var_mean(self, t: Tensor, dims: Union[int, Sequence[int]], correction: int = 1,
                 keepdim: bool = False) -> Tuple[Tensor, Tensor]:
        """(variance, mean) over dims as torch.var_mean, through one Welford reduction:
        variance = M2 / (count - correction)."""
        fd = self._fd
        fd._check_open("var_mean")
        h = fd._tv(t, "var_mean")
        axes = _axes(dims, t.ndim, "var_mean", t)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        var, mean = ctypes.c_void_p(), ctypes.c_void_p()
        if _capi.lib.cf_var_mean(fd._f, h, len(axes), arr, int(correction), bool(keepdim), ctypes.byref(var),
                                 ctypes.byref(mean)):
            raise fd._error("var_mean")
        shape = tuple(1 if i in axes else e for i, e in enumerate(t.shape)) if keepdim else \
            tuple(e for i, e in enumerate(t.shape) if i not in axes)
        return self._make("var_mean", var.value, shape), self._make("var_mean", mean.value, shape)

    _REDUCE_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "mean": 4}

    def reduce(self, op: str, t: Tensor, dims: Union[int, Sequence[int]], keepdim: bool = False) -> Tensor:
        """The reduction op ("sum", "prod", "max", "min" or "mean") over dims."""
        if op not in self._REDUCE_OPS:
            raise ValueError(f"reduce: unknown op {op!r}; use one of {sorted(self._REDUCE_OPS)}")
        return getattr(self, op)(t, dims, keepdim)

    def permute(self, t: Tensor, dims: Sequence[int]) -> Tensor:
        """Output axis i is t's axis dims[i]."""
        fd = self._fd
        fd._check_open("permute")
        h = fd._tv(t, "permute")
        perm = _axes(dims, t.ndim, "permute", t)
        arr = (ctypes.c_int * max(len(perm), 1))(*perm)
        ok = sorted(perm) == list(range(t.ndim))  # else the C op reports it
        shape = tuple(t.shape[d] for d in perm) if ok else t.shape
        return self._make("permute", _capi.lib.cf_permute(fd._f, h, len(perm), arr), shape)

    def transpose(self, t: Tensor, dim0: int, dim1: int) -> Tensor:
        """t with axes dim0 and dim1 swapped."""
        fd = self._fd
        fd._check_open("transpose")
        h = fd._tv(t, "transpose")
        dim0, dim1 = _axes([dim0, dim1], t.ndim, "transpose", t)
        shape = list(t.shape)
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
        return self._make("transpose", _capi.lib.cf_transpose(fd._f, h, dim0, dim1), tuple(shape))

    # ---- shape ops ----------------------------------------------------------------------

    def squeeze(self, t: Tensor, dims: Union[int, Sequence[int]]) -> Tensor:
        """t without the axes dims, each a broadcast axis or of extent 1 (cf_squeeze)."""
        fd = self._fd
        fd._check_open("squeeze")
        h = fd._tv(t, "squeeze")
        axes = _axes(dims, t.ndim, "squeeze", t)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        shape = tuple(e for i, e in enumerate(t.shape) if i not in axes)
        return self._make("squeeze", _capi.lib.cf_squeeze(fd._f, h, len(axes), arr), shape)

    def expand(self, t: Tensor, sizes: Sequence[int]) -> Tensor:
        """nvFuser's expand: broadcast axes of t take the given sizes; -1 keeps an axis."""
        fd = self._fd
        fd._check_open("expand")
        h = fd._tv(t, "expand")
        sz = [int(s) for s in sizes]
        arr = (ctypes.c_int64 * max(len(sz), 1))(*sz)
        shape = tuple(e if s == -1 else s for e, s in zip(t.shape, sz)) if len(sz) == t.ndim else t.shape
        return self._make("expand", _capi.lib.cf_expand(fd._f, h, len(sz), arr), shape)

    def expand_as(self, t: Tensor, other: Tensor) -> Tensor:
        """t expanded to other's sizes where t is broadcast (cf_expand_as)."""
        fd = self._fd
        fd._check_open("expand_as")
        h, ho = fd._tv(t, "expand_as"), fd._tv(other, "expand_as")
        shape = broadcast_shapes((t.shape, other.shape))
        return self._make("expand_as", _capi.lib.cf_expand_as(fd._f, h, ho), shape)

    def full(self, shape: Sequence[int], fill_value: Number, dtype: Union[DataType, str]) -> Tensor:
        """A tensor of constant sizes filled with fill_value (cf_full)."""
        fd = self._fd
        fd._check_open("full")
        sz = [int(s) for s in shape]
        arr = (ctypes.c_int64 * max(len(sz), 1))(*sz)
        h = _capi.lib.cf_full(fd._f, len(sz), arr, float(fill_value), int(as_dtype(dtype)))
        return self._make("full", h, tuple(sz))

    def full_like(self, t: Tensor, fill_value: Number) -> Tensor:
        """A tensor of t's shape and dtype filled with fill_value (cf_full_like)."""
        fd = self._fd
        fd._check_open("full_like")
        h = fd._tv(t, "full_like")
        return self._make("full_like", _capi.lib.cf_full_like(fd._f, h, float(fill_value)), t.shape)

    def reshape(self, t: Tensor, new_shape: Sequence[int]) -> Tensor:
        """t's elements in row-major order under new_shape (one -1 inferred). cf_reshape:
        run only as a view by define-and-run (cf_fusion_execute); a kernel refuses it."""
        fd = self._fd
        fd._check_open("reshape")
        h = fd._tv(t, "reshape")
        sz = [int(s) for s in new_shape]
        arr = (ctypes.c_int64 * max(len(sz), 1))(*sz)
        return self._make("reshape", _capi.lib.cf_reshape(fd._f, h, len(sz), arr), tuple(sz))


def _unary(cname: str, name: str) -> Callable[[Ops, Tensor], Tensor]:
    def op(self: Ops, t: Tensor) -> Tensor:
        fd = self._fd
        fd._check_open(name)
        h = fd._tv(t, name)
        return self._make(name, getattr(_capi.lib, cname)(fd._f, h), t.shape)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (cf_{cname[3:]})."
    return op


def _binary(cname: str, name: str) -> Callable[[Ops, Tensor, Tensor], Tensor]:
    def op(self: Ops, a: Tensor, b: Tensor) -> Tensor:
        return self._binary(cname[3:], a, b)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of two tensors of equal rank (cf_{cname[3:]})."
    return op


for _c in ("set",) + _capi.UNARY_OPS:
    setattr(Ops, _c, _unary("cf_" + _c, _c))
for _c in _capi.BINARY_OPS:
    _name = _BINARY_NAMES.get(_c, _c)
    if _name not in Ops.__dict__:  # add, sub, mul, div are above: they take numbers too
        setattr(Ops, _name, _binary("cf_" + _c, _name))
