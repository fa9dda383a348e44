"""The reductions of fd.ops in nvFuser's forms: ``sum(t)`` (every axis), ``sum(t, dim,
keepdim=False, dtype=DataType.Null)``, ``sum(t, dims, keepdim, dtype)``, and alike for max,
min and prod; mean; var, var_mean and welford.

A dtype other than DataType.Null casts the input first, as nvFuser does
(``prod(t, DataType.Float)`` is the product of every element in float: a DataType in the
dims position is that dtype, never an axis). Integer and bool sums and products give int64
(the op table's reduction columns) unless a dtype is given: the result is then in that
dtype, as nvFuser's (accumulated in the wider type, then cast); max and min of an empty
axis are an error.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from . import _capi
from ._tensor import Tensor, product
from .types import DataType, InvalidArgumentError, as_dtype

if TYPE_CHECKING:
    from .ops import Ops

Dims = Union[None, int, Sequence[int], DataType]


class WelfordStates(Tensor):
    """The Welford states of fd.ops.welford: schedule and read them as one tensor
    (welford_avg, welford_m2, welford_n), or unpack them as nvFuser's
    ``mean, var_sum, n = fd.ops.welford(t, dims)``."""

    __slots__ = ()

    def __iter__(self) -> Any:
        ops = self.fd.ops
        return iter((ops.welford_avg(self), ops.welford_m2(self), ops.welford_n(self)))


class ReduceOps:
    """The reductions of Ops (a mixin)."""

    def _reduce_args(self: "Ops", what: str, arg: Any, dims: Dims, keepdim: Any,
                     dtype: Any) -> Tuple[Tensor, List[int], bool, Optional[DataType]]:
        """(input cast to dtype, axes, keepdim) of nvFuser's three forms."""
        self._fd._check_open(what)
        t = self._tensor(arg, what)
        if isinstance(dims, DataType):  # sum(t, DataType.Float): every axis in that dtype
            dims, dtype = None, dims
        if isinstance(keepdim, DataType):  # sum(t, dims, DataType.Float)
            keepdim, dtype = False, keepdim
        axes = list(range(t.ndim)) if dims is None else self._axes(dims, t.ndim, what, t)
        if len(set(axes)) != len(axes):
            raise InvalidArgumentError(f"{what}: dimension given twice in {dims!r} for {t.name}")
        dt = None if dtype is None or as_dtype(dtype) == DataType.Null else as_dtype(dtype)
        if dt is not None and dt != t.dtype:
            t = self.cast(t, dt)
        return t, axes, bool(keepdim), dt

    def _reduce(self: "Ops", what: str, cname: str, arg: Any, dims: Dims, keepdim: Any, dtype: Any) -> Tensor:
        t, axes, keep, dt = self._reduce_args(what, arg, dims, keepdim, dtype)
        if t.ndim == 0:  # nothing to reduce: the value itself (torch.sum of a 0-d tensor)
            return self.set(t)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        kept = tuple(e for i, e in enumerate(t.extents) if i not in axes)
        out = self._make(what, getattr(_capi.lib, cname)(self._fd._f, t.handle, len(axes), arr), kept)
        if dt is not None and out.dtype != dt:  # sum(int32 t, dtype=Int32) is int32, accumulated wider
            out = self.cast(out, dt)
        return self.broadcast(out, [i in axes for i in range(t.ndim)]) if keep else out

    def sum(self, arg: Any, dims: Dims = None, keepdim: Any = False, dtype: Any = None, *,
            dim: Optional[int] = None) -> Tensor:
        """The sum over dims (an int, a list, or all axes when omitted; negative counts
        from the end); keepdim keeps them as size-1 axes; dtype casts the input first."""
        return self._reduce("sum", "cf_sum", arg, dim if dims is None else dims, keepdim, dtype)

    def max(self, arg: Any, dims: Dims = None, keepdim: Any = False, dtype: Any = None, *,
            dim: Optional[int] = None) -> Tensor:
        """The maximum over dims (a reduction; maximum is the elementwise one); NaN wins."""
        return self._reduce("max", "cf_max_reduce", arg, dim if dims is None else dims, keepdim, dtype)

    def min(self, arg: Any, dims: Dims = None, keepdim: Any = False, dtype: Any = None, *,
            dim: Optional[int] = None) -> Tensor:
        """The minimum over dims (a reduction; minimum is the elementwise one); NaN wins."""
        return self._reduce("min", "cf_min_reduce", arg, dim if dims is None else dims, keepdim, dtype)

    def prod(self, arg: Any, dims: Dims = None, keepdim: Any = False, dtype: Any = None, *,
             dim: Optional[int] = None) -> Tensor:
        """The product over dims."""
        return self._reduce("prod", "cf_prod", arg, dim if dims is None else dims, keepdim, dtype)

    def mean(self, arg: Any, dims: Dims = None, keepdim: Any = False, dtype: Any = None, *,
             dim: Optional[int] = None) -> Tensor:
        """The mean over dims (the mean of nothing is NaN)."""
        return self._reduce("mean", "cf_mean", arg, dim if dims is None else dims, keepdim, dtype)

    _REDUCE_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "mean": 4}

    def reduce(self: "Ops", op: str, t: Any, dims: Dims = None, keepdim: bool = False) -> Tensor:
        """The reduction op ("sum", "prod", "max", "min" or "mean") over dims."""
        if op not in ReduceOps._REDUCE_OPS:
            raise ValueError(f"reduce: unknown op {op!r}; use one of {sorted(ReduceOps._REDUCE_OPS)}")
        return getattr(self, op)(t, dims, keepdim)

    def welford(self: "Ops", arg: Any, dims: Dims = None) -> WelfordStates:
        """The Welford states (running mean, M2, count) of arg over dims, one pass: read
        them with welford_avg, welford_m2 and welford_n, or unpack them (nvFuser's
        ``avg, var_sum, n = fd.ops.welford(t, dims)``)."""
        t, axes, _, _ = self._reduce_args("welford", arg, dims, False, None)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        kept = tuple(e for i, e in enumerate(t.extents) if i not in axes)
        h = _capi.lib.cf_welford(self._fd._f, t.handle, len(axes), arr)
        return self._fd._new_tensor("welford", h, kept, WelfordStates)  # type: ignore[return-value]

    def _welford_field(self: "Ops", what: str, states: Any) -> Tensor:
        self._fd._check_open(what)
        t = self._tensor(states, what)
        return self._make(what, getattr(_capi.lib, "cf_" + what)(self._fd._f, t.handle), t.extents)

    def welford_avg(self: "Ops", states: Any) -> Tensor:
        """The mean of each group of Welford states."""
        return self._welford_field("welford_avg", states)

    def welford_m2(self: "Ops", states: Any) -> Tensor:
        """The sum of squared deviations from the mean (M2) of each group."""
        return self._welford_field("welford_m2", states)

    def welford_n(self: "Ops", states: Any) -> Tensor:
        """The count of each group (int64)."""
        return self._welford_field("welford_n", states)

    def var_mean(self: "Ops", arg: Any, dims: Dims = None, correction: int = 1,
                 keepdim: bool = False) -> Tuple[Tensor, Tensor]:
        """(variance, mean) over dims as torch.var_mean, through one Welford reduction:
        variance = M2 / max(0, count - correction) (inf past the row length, as torch)."""
        return self._var_mean("var_mean", arg, dims, correction, keepdim, True)  # type: ignore[return-value]

    def var(self: "Ops", arg: Any, dims: Dims = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """The variance over dims as torch.var (correction 1: unbiased)."""
        return self._var_mean("var", arg, dims, correction, keepdim, False)[0]

    def _var_mean(self: "Ops", what: str, arg: Any, dims: Dims, correction: int, keepdim: bool,
                  want_mean: bool) -> Tuple[Tensor, ...]:
        t, axes, keep, _ = self._reduce_args(what, arg, dims, keepdim, None)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        var, mean = _capi.TvHandle(), _capi.TvHandle()
        if _capi.lib.cf_var_mean(self._fd._f, t.handle, len(axes), arr, int(correction), keep, ctypes.byref(var),
                                 ctypes.byref(mean) if want_mean else None):
            raise self._fd._error(what)
        ext = tuple(1 if i in axes else e for i, e in enumerate(t.extents)) if keep else \
            tuple(e for i, e in enumerate(t.extents) if i not in axes)
        out = [self._make(what, var, ext)]
        if want_mean:
            out.append(self._make(what, mean, ext))
        return tuple(out)

    def numel(self: "Ops", arg: Any) -> Any:
        """The number of elements of arg, as a constant or symbolic extent product."""
        return product(self._tensor(arg, "numel").extents)
