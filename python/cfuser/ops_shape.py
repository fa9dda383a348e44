"""The shape, creation and random ops of fd.ops, in nvFuser's forms.

Shapes may be given as lists or tuples of ints, constant Scalars and sizes of tensors
(``t.size(1)``, ``t.shape()``, a Vector) and scalar inputs (``define_scalar(None,
dtype=DataType.Int)``, ``define_vector(n)``) or integer ops on them: a size of another
tensor becomes that tensor's axis extent in the IR (cf_expand_to), so
``broadcast_in_dim(t1, t0.shape(), [2])`` or ``full(t0.shape(), 1.0, DataType.Float)`` has
t0's sizes at run time; a size known only at run time makes the op dynamic (cf_reshape_dynamic,
cf_expand_dynamic, cf_slice_dynamic, cf_iota_dynamic), concretized by the C library per
call. A scalar input used as a size is passed to C in host memory.

Random ops without rng_seed and rng_offset draw from cfuser's generator (cfuser.manual_seed):
each execute passes a seed and a fresh offset per random op as inputs the definition adds
itself; with them, a draw depends only on (seed, offset, element), on every backend.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from . import _capi
from ._tensor import UNKNOWN, DimExpr, Extent, Scalar, Tensor, Vector, broadcast_shapes, product
from .types import DataType, InvalidArgumentError, UnsupportedError, as_dtype, is_floating

if TYPE_CHECKING:
    from .ops import Ops

ITER_BROADCAST, ITER_REDUCTION = 2, 1
# A shape entry: (constant size or -1, the extent Python tracks, the IterDomain giving it in C
# or None, the Scalar giving it at run time or None)
Entry = Tuple[int, Extent, Optional[_capi.IdHandle], Optional[Scalar]]


def logical_ids(t: Tensor) -> List[_capi.IdHandle]:
    """t's logical axes as IterDomains (its loop axes without reduction axes: a definition
    is not scheduled yet)."""
    lib = _capi.lib
    ids = [lib.cf_tv_axis(t.handle, i) for i in range(lib.cf_tv_naxes(t.handle))]
    return [i for i in ids if lib.cf_id_iter_type(i) != ITER_REDUCTION]


class ShapeOps:
    """The shape, creation and random ops of Ops (a mixin)."""

    # ---- shape arguments --------------------------------------------------------------------

    def _shape_entries(self: "Ops", shape: Any, what: str, allow_infer: bool = False) -> List[Entry]:
        if isinstance(shape, Tensor):
            raise InvalidArgumentError(f"{what}: shape is a Tensor; pass t.shape() for its sizes")
        items = list(shape.items) if isinstance(shape, Vector) else list(shape)
        if len(items) > 16:
            raise InvalidArgumentError(f"{what}: {len(items)} sizes, more than cfuser's 16 axes")
        out: List[Entry] = []
        for k, x in enumerate(items):
            if isinstance(x, Scalar):
                if x.fd is not self._fd:
                    raise InvalidArgumentError(f"{what}: size {k} belongs to another FusionDefinition")
                if x.value is not None:
                    x = int(x.value)
                elif x.source is not None:
                    t, d = x.source
                    out.append((-1, t.extents[d], logical_ids(t)[d], x))
                    continue
                else:
                    if x.dtype not in (DataType.Int, DataType.Int32, DataType.Int8, DataType.UInt32):
                        raise InvalidArgumentError(f"{what}: size {k} is {x!r}; a size must be an integer")
                    out.append((-1, x.run_value if x.run_value is not None else UNKNOWN, None, x))
                    continue
            if isinstance(x, bool) or not isinstance(x, int) and not hasattr(x, "__index__"):
                raise TypeError(f"{what}(): incompatible function arguments: size {x!r} at index {k}")
            v = int(x)
            if v < -1 or (v == -1 and not allow_infer):
                raise InvalidArgumentError(f"{what}: The value {v} at index {k} was neither symbolic(-1), "
                                           "zero_element(0), broadcast(1), or static(>1).")
            out.append((v, v, None, None))
        return out

    def _size_handle(self: "Ops", entry: Entry, keep: bool = False) -> Optional[_capi.TvHandle]:
        """The 0-d integer tensor of a size entry (a constant, a tensor's size, a scalar);
        None for -1 when keep (the dynamic ops' "keep the axis")."""
        v, _, _, sc = entry
        if sc is None and v == -1 and keep:
            return None
        if sc is None:
            h = _capi.lib.cf_const_int(self._fd._f, int(DataType.Int), v)
            if not h:
                raise self._fd._error("size")
            return h
        h = self._handle(sc, "size")
        self._fd._size_input(h)
        return h

    @staticmethod
    def _dynamic(entries: Sequence[Entry]) -> bool:
        """Some size is known only at run time (not a constant nor a tensor's size)."""
        return any(sc is not None and idh is None for _, _, idh, sc in entries)

    def _expand_entries(self: "Ops", t: Tensor, entries: Sequence[Entry], what: str) -> Tensor:
        """t with its broadcast axes expanded to the entries' sizes (-1 keeps an axis)."""
        if len(entries) != t.ndim:
            raise InvalidArgumentError(f"{what}: {len(entries)} sizes for {t.name} of {t.ndim} dimensions")
        lib = _capi.lib
        ids = logical_ids(t)
        if self._dynamic(entries):
            return self._expand_dynamic(t, entries, ids, what)
        sizes, targets, extents, change = [], [], list(t.extents), False
        for k, (v, ext, idh, _) in enumerate(entries):
            bcast = lib.cf_id_iter_type(ids[k]) == ITER_BROADCAST
            if not bcast:
                if type(ext) is int and ext >= 0 and type(t.extents[k]) is int and ext != t.extents[k]:
                    raise InvalidArgumentError(f"{what}: axis {k} of {t.name} has size {t.extents[k]} and is not a "
                                               f"broadcast axis; it cannot become {ext}")
                sizes.append(-1)
                targets.append(None)
                continue
            if idh is None and v in (-1, 1):
                sizes.append(-1)
                targets.append(None)
                continue
            sizes.append(v if idh is None else -1)
            targets.append(idh)
            extents[k] = ext
            change = True
        if not change:
            return t
        h = lib.cf_expand_to(self._fd._f, t.handle, len(sizes), (ctypes.c_int64 * max(len(sizes), 1))(*sizes),
                             _capi.handle_array(_capi.IdHandle, targets))
        return self._make(what, h, extents)

    def _expand_dynamic(self: "Ops", t: Tensor, entries: Sequence[Entry], ids: Sequence[_capi.IdHandle],
                        what: str) -> Tensor:
        """cf_expand_dynamic: the broadcast axes of t take the entries' sizes (run-time ones
        included); other axes keep theirs (C checks a given size against them per call)."""
        lib = _capi.lib
        handles, extents = [], list(t.extents)
        for k, e in enumerate(entries):
            handles.append(self._size_handle(e, keep=True))
            if lib.cf_id_iter_type(ids[k]) == ITER_BROADCAST and handles[-1] is not None:
                extents[k] = e[1]
        h = lib.cf_expand_dynamic(self._fd._f, t.handle, len(handles), _capi.handle_array(_capi.TvHandle, handles))
        return self._make(what, h, extents)

    # ---- broadcasting ------------------------------------------------------------------------

    def broadcast(self: "Ops", arg: Any, is_broadcast_dim: Sequence[bool]) -> Tensor:
        """Inserts size-1 axes where is_broadcast_dim is True (its length is the output's
        rank); the other positions take arg's axes in order."""
        fd = self._fd
        fd._check_open("broadcast")
        t = self._tensor(arg, "broadcast")
        flags = [bool(x) for x in is_broadcast_dim]
        arr = (ctypes.c_bool * max(len(flags), 1))(*flags)
        kept = list(t.extents)
        ext = tuple(1 if b or not kept else kept.pop(0) for b in flags)
        return self._make("broadcast", _capi.lib.cf_broadcast(fd._f, t.handle, len(flags), arr), ext)

    def broadcast_in_dim(self: "Ops", arg: Any, shape: Any, broadcast_dims: Sequence[int]) -> Tensor:
        """nvFuser's broadcast_in_dim: arg's axis i becomes output axis broadcast_dims[i] of
        an output of the given shape; size-1 (broadcast) axes expand to it. shape may also
        be just the output's rank (an int: no expansion)."""
        self._fd._check_open("broadcast_in_dim")
        t = self._tensor(arg, "broadcast_in_dim")
        entries = None if isinstance(shape, int) else self._shape_entries(shape, "broadcast_in_dim")
        rank = shape if isinstance(shape, int) else len(entries)
        dims = [int(d) for d in broadcast_dims]
        if len(dims) != t.ndim:
            raise InvalidArgumentError(f"broadcast_in_dim: broadcast_dims has {len(dims)} entries for {t.name} of "
                                       f"{t.ndim} dimensions")
        if any(not 0 <= d < rank for d in dims) or sorted(set(dims)) != dims:
            raise InvalidArgumentError(f"broadcast_in_dim: broadcast_dims {dims} must be increasing axes of the "
                                       f"{rank}-dimensional output")
        b = self.broadcast(t, [k not in dims for k in range(rank)]) if rank != t.ndim else t
        return b if entries is None else self._expand_entries(b, entries, "broadcast_in_dim")

    def expand(self: "Ops", arg: Any, shape: Any) -> Tensor:
        """nvFuser's expand: broadcast axes of arg take the given sizes (constants or
        sizes of other tensors); -1 keeps an axis."""
        self._fd._check_open("expand")
        t = self._tensor(arg, "expand")
        return self._expand_entries(t, self._shape_entries(shape, "expand", allow_infer=True), "expand")

    def expand_as(self: "Ops", arg: Any, other: Any) -> Tensor:
        """arg expanded to other's sizes where arg is broadcast (cf_expand_as)."""
        fd = self._fd
        fd._check_open("expand_as")
        t, o = self._tensor(arg, "expand_as"), self._tensor(other, "expand_as")
        from ._tensor import broadcast_shapes
        return self._make("expand_as", _capi.lib.cf_expand_as(fd._f, t.handle, o.handle),
                          broadcast_shapes((t.extents, o.extents)))

    # ---- moving axes ------------------------------------------------------------------------

    def permute(self: "Ops", arg: Any, dims: Sequence[int]) -> Tensor:
        """Output axis i is arg's axis dims[i]."""
        fd = self._fd
        fd._check_open("permute")
        t = self._tensor(arg, "permute")
        perm = self._axes(dims, t.ndim, "permute", t)
        arr = (ctypes.c_int * max(len(perm), 1))(*perm)
        ok = sorted(perm) == list(range(t.ndim))  # else the C op reports it
        return self._make("permute", _capi.lib.cf_permute(fd._f, t.handle, len(perm), arr),
                          tuple(t.extents[d] for d in perm) if ok else t.extents)

    def transpose(self: "Ops", arg: Any, dim0: int, dim1: int) -> Tensor:
        """arg with axes dim0 and dim1 swapped."""
        fd = self._fd
        fd._check_open("transpose")
        t = self._tensor(arg, "transpose")
        dim0, dim1 = self._axes([dim0, dim1], t.ndim, "transpose", t)
        ext = list(t.extents)
        ext[dim0], ext[dim1] = ext[dim1], ext[dim0]
        return self._make("transpose", _capi.lib.cf_transpose(fd._f, t.handle, dim0, dim1), ext)

    def squeeze(self: "Ops", arg: Any, dims: Union[int, Sequence[int]], squeeze_expanded: bool = False) -> Tensor:
        """arg without the axes dims, each a broadcast axis or of extent 1 (cf_squeeze)."""
        fd = self._fd
        fd._check_open("squeeze")
        t = self._tensor(arg, "squeeze")
        axes = self._axes(dims, t.ndim, "squeeze", t)
        arr = (ctypes.c_int * max(len(axes), 1))(*axes)
        return self._make("squeeze", _capi.lib.cf_squeeze(fd._f, t.handle, len(axes), arr),
                          tuple(e for i, e in enumerate(t.extents) if i not in axes))

    def reshape(self: "Ops", arg: Any, new_shape: Any) -> Tensor:
        """arg's elements in row-major order under new_shape (one -1 inferred; a size of
        another tensor counts as that -1). Runs as a view of a contiguous tensor where it
        can (define and run), a copy otherwise."""
        fd = self._fd
        fd._check_open("reshape")
        t = self._tensor(arg, "reshape")
        entries = self._shape_entries(new_shape, "reshape", allow_infer=True)
        infer = [k for k, (v, _, idh, _) in enumerate(entries) if v == -1 or idh is not None]
        if len(infer) > 1 or self._dynamic(entries):
            return self._reshape_dynamic(t, entries)
        sizes = [-1 if k in infer else v for k, (v, _, _, _) in enumerate(entries)]
        ext: List[Extent] = [e[1] for e in entries]
        if infer:
            k = infer[0]
            known = product([s for s in sizes if s != -1])
            total = product(t.extents)
            if type(total) is int and type(known) is int:
                ext[k] = total // known if known else 0
            elif entries[k][2] is None:
                ext[k] = DimExpr("div", [total, known])
        arr = (ctypes.c_int64 * max(len(sizes), 1))(*sizes)
        out = self._make("reshape", _capi.lib.cf_reshape(fd._f, t.handle, len(sizes), arr), ext)
        out.origin, out.view_of = "reshape", (t, tuple(sizes))
        return out

    def _reshape_dynamic(self: "Ops", t: Tensor, entries: Sequence[Entry]) -> Tensor:
        """cf_reshape_dynamic: sizes given at run time (scalar inputs, tensors' sizes; one -1)."""
        handles = [self._size_handle(e) for e in entries]
        ext: List[Extent] = [e[1] for e in entries]
        infer = [k for k, e in enumerate(entries) if e[0] == -1 and e[3] is None]
        if infer:
            ext[infer[0]] = DimExpr("div", [product(t.extents), product([x for k, x in enumerate(ext) if k != infer[0]])])
        h = _capi.lib.cf_reshape_dynamic(self._fd._f, t.handle, len(handles), _capi.handle_array(_capi.TvHandle, handles))
        out = self._make("reshape", h, ext)
        out.origin = "reshape"
        return out

    def stride_order(self: "Ops", arg: Any, stride_order: Sequence[int]) -> Tensor:
        """nvFuser's stride_order: a copy of arg whose memory, when it is an output, has
        that order of strides (entry i: the rank of axis i's stride, ndim-1 outermost)."""
        t = self._tensor(arg, "stride_order")
        order = check_stride_order(stride_order, t.ndim, "stride_order")
        out = self.set(t)
        out.stride_order = order
        return out

    def segment_set(self: "Ops", arg: Any) -> Tensor:
        """nvFuser's segment_set (a hint to cut segments there): a copy; cfuser's
        segmentation decides the cuts itself."""
        return self.set(self._tensor(arg, "segment_set"))

    # ---- resizing (cf_slice, cf_pad, cf_cat) ---------------------------------------------------

    def slice(self: "Ops", arg: Any, start_indices: Sequence[Any], end_indices: Sequence[Any],
              strides: Optional[Sequence[Any]] = None, manual_normalization: bool = False) -> Tensor:
        """nvFuser's slice: per axis arg[start:end:stride] (constants, the axis's own size as
        its end, or Scalars known only at run time: define_vector or scalar inputs, sizes of
        tensors; Python's rules for negative and out-of-range indices; strides default to
        1)."""
        fd = self._fd
        fd._check_open("slice")
        t = self._tensor(arg, "slice")
        n = t.ndim
        strides = [1] * n if strides is None else strides
        if not len(start_indices) == len(end_indices) == len(strides) == n:
            raise InvalidArgumentError(f"slice: {len(start_indices)} start, {len(end_indices)} end and "
                                       f"{len(strides)} stride indices for {t.name} of {n} dimensions")
        if any(self._runtime(x) and not self._own_size(x, e) for x, e in zip(end_indices, t.extents)) or \
                any(self._runtime(x) for x in list(start_indices) + list(strides)):
            return self._slice_dynamic(t, start_indices, end_indices, strides)
        starts = [int(self._constant(x, "slice", None)) for x in start_indices]
        stops = [self._slice_stop(x, e) for x, e in zip(end_indices, t.extents)]
        steps = [int(self._constant(x, "slice", None)) for x in strides]
        if any(s <= 0 for s in steps):
            raise InvalidArgumentError(f"slice: strides {steps} of {t.name} must be positive")
        ext: List[Extent] = []
        for e, a, b, s in zip(t.extents, starts, stops, steps):
            ext.append(len(range(*slice(a, b, s).indices(e))) if type(e) is int else DimExpr("slice", [e, a, b, s]))
        arrs = [(ctypes.c_int64 * max(n, 1))(*v) for v in (starts, stops, steps)]
        return self._make("slice", _capi.lib.cf_slice(fd._f, t.handle, n, *arrs), ext)

    def _runtime(self: "Ops", x: Any) -> bool:
        """x is a Scalar of this definition known only at run time."""
        return isinstance(x, Scalar) and x.value is None

    @staticmethod
    def _own_size(x: Any, extent: Extent) -> bool:
        return isinstance(x, Scalar) and x.value is None and x.extent is not None and x.extent == extent

    def _bound(self: "Ops", x: Any, what: str) -> Tuple[_capi.TvHandle, Extent]:
        """A run-time bound's 0-d tensor and its value as an extent."""
        s = self._operand(x, what)
        if not isinstance(s, Scalar):
            raise InvalidArgumentError(f"{what}: a bound is a Tensor, not a number or a Scalar")
        e = (-1 if s.value is None else int(s.value), s.extent if s.source is not None else
             s.run_value if s.run_value is not None else UNKNOWN if s.value is None else int(s.value), None, s)
        return self._size_handle(e), e[1]

    def _slice_dynamic(self: "Ops", t: Tensor, starts: Sequence[Any], stops: Sequence[Any],
                       steps: Sequence[Any]) -> Tensor:
        """cf_slice_dynamic: bounds given at run time (Python's rules, applied by C per call)."""
        b = [[self._bound(x, "slice") for x in xs] for xs in (starts, stops, steps)]
        ext = [DimExpr("slice", [e, b[0][k][1], b[1][k][1], b[2][k][1]]) for k, e in enumerate(t.extents)]
        arrs = [_capi.handle_array(_capi.TvHandle, [h for h, _ in xs]) for xs in b]
        return self._make("slice", _capi.lib.cf_slice_dynamic(self._fd._f, t.handle, t.ndim, *arrs), ext)

    def _slice_stop(self: "Ops", x: Any, extent: Extent) -> int:
        """A slice's stop: a constant, or the sliced axis's own size (``t.shape()`` as the
        ends: to the end, whatever the size at run time)."""
        if isinstance(x, Scalar) and x.value is None and x.extent is not None and x.extent == extent:
            return 2**63 - 1  # INT64_MAX: cf_slice stops at the end
        return int(self._constant(x, "slice", None))

    def pad(self: "Ops", arg: Any, pad_widths: Sequence[Any], value: Any = None) -> Tensor:
        """nvFuser's pad (torch.nn.functional.pad): (left, right) widths per axis from the
        last axis backwards; the new elements are value (0 when None, a constant)."""
        fd = self._fd
        fd._check_open("pad")
        t = self._tensor(arg, "pad")
        widths = [int(self._constant(x, "pad", None)) for x in pad_widths]
        v = float(self._constant(value, "pad", 0))
        ext = list(t.extents)
        for k in range(min(len(widths) // 2, t.ndim)):
            axis, add = t.ndim - 1 - k, widths[2 * k] + widths[2 * k + 1]
            e = ext[axis]
            ext[axis] = e + add if type(e) is int else DimExpr("add", [e, add])
        arr = (ctypes.c_int64 * max(len(widths), 1))(*widths)
        return self._make("pad", _capi.lib.cf_pad(fd._f, t.handle, len(widths), arr, v), ext)

    def cat(self: "Ops", tensors: Sequence[Any], dim: int = 0, manual_padding: bool = False) -> Tensor:
        """nvFuser's cat: the tensors joined along dim (torch.cat's dtype)."""
        fd = self._fd
        fd._check_open("cat")
        ts = [self._tensor(x, "cat") for x in tensors]
        if not ts:
            raise InvalidArgumentError("cat: no tensors")
        d = self._axes(dim, ts[0].ndim, "cat", ts[0])[0]
        ext = list(ts[0].extents)
        parts = [t.extents[d] for t in ts if t.ndim == ts[0].ndim]
        ext[d] = sum(parts) if all(type(e) is int for e in parts) else DimExpr("add", parts)
        hs = _capi.handle_array(_capi.TvHandle, [t.handle for t in ts])
        return self._make("cat", _capi.lib.cf_cat(fd._f, len(ts), hs, d), ext)

    # ---- making tensors ---------------------------------------------------------------------

    def full(self: "Ops", shape: Any, fill_value: Any, dtype: Union[DataType, str] = DataType.Float) -> Tensor:
        """A tensor of the given shape filled with fill_value (a number or a Scalar)."""
        self._fd._check_open("full")
        v = self._operand(fill_value, "full")
        if not isinstance(v, Scalar):
            raise InvalidArgumentError("full: fill_value must be a number or a Scalar, not a Tensor")
        return self._full(self._shape_entries(shape, "full"), v, as_dtype(dtype))

    def _full(self: "Ops", entries: Sequence[Entry], v: Scalar, dt: DataType) -> Tensor:
        fd, lib = self._fd, _capi.lib
        sizes = [1 if idh is not None or sc is not None else s for s, _, idh, sc in entries]
        arr = (ctypes.c_int64 * max(len(sizes), 1))(*sizes)
        if v.value is not None:
            h = lib.cf_full(fd._f, len(sizes), arr, float(v.value), int(dt)) if is_floating(dt) else \
                lib.cf_full_int(fd._f, len(sizes), arr, int(v.value), int(dt))
            t = self._make("full", h, sizes)
        else:  # a run-time value: the 0-d scalar broadcast to the shape
            t = self.cast(self.broadcast(self._make("full", self._handle(v, "full"), ()), [True] * len(sizes)), dt)
        return self._expand_entries(t, entries, "full")

    def full_like(self: "Ops", arg: Any, fill_value: Any) -> Tensor:
        """A tensor of arg's shape and dtype filled with fill_value (cf_full_like)."""
        fd = self._fd
        fd._check_open("full_like")
        t = self._tensor(arg, "full_like")
        v = self._operand(fill_value, "full_like")
        if isinstance(v, Scalar) and v.value is not None:
            return self._make("full_like", _capi.lib.cf_full_like(fd._f, t.handle, float(v.value)), t.extents)
        return self.full(t.shape(), v, t.dtype)

    def iota(self: "Ops", length: Any, start: Any = None, step: Any = None,
             dtype: Union[DataType, str] = DataType.Int) -> Tensor:
        """nvFuser's iota: the 1-D tensor start + i * step, i in [0, length) (torch.arange);
        start and step are constants, length a constant or a Scalar known at run time."""
        fd = self._fd
        fd._check_open("iota")
        if self._runtime(length):
            a, s = (float(self._constant(x, "iota", d)) for x, d in ((start, 0), (step, 1)))
            h, ext = self._bound(length, "iota")
            return self._make("iota", _capi.lib.cf_iota_dynamic(fd._f, h, a, s, int(as_dtype(dtype))), (ext,))
        n, a, s = (self._constant(x, "iota", d) for x, d in ((length, None), (start, 0), (step, 1)))
        h = _capi.lib.cf_iota(fd._f, int(n), float(a), float(s), int(as_dtype(dtype)))
        return self._make("iota", h, (int(n),))

    def _constant(self: "Ops", x: Any, what: str, default: Any) -> Any:
        if x is None:
            if default is None:
                raise InvalidArgumentError(f"{what}: a required value is None")
            return default
        s = self._operand(x, what)
        if not isinstance(s, Scalar) or s.value is None:
            raise UnsupportedError(f"{what}: {x!r} is known only at run time; cfuser needs a constant here")
        return s.value

    def triu(self: "Ops", arg: Any, diagonal: Any = 0) -> Tensor:
        """torch.triu: arg with the elements below diagonal `diagonal` of its last two axes
        set to 0."""
        fd = self._fd
        fd._check_open("triu")
        t = self._tensor(arg, "triu")
        d = self._constant(diagonal, "triu", 0)
        return self._make("triu", _capi.lib.cf_triu(fd._f, t.handle, int(d)), t.extents)

    # ---- random numbers -------------------------------------------------------------------

    def _random(self: "Ops", what: str, a: Any, b: Any, shape: Any, dtype: Any, rng_seed: Any, rng_offset: Any,
                like: Optional[Tensor] = None) -> Tensor:
        fd = self._fd
        fd._check_open(what)
        lo, hi = float(self._constant(a, what, None)), float(self._constant(b, what, None))
        if (rng_seed is None) != (rng_offset is None):
            raise InvalidArgumentError(f"{what}: give both rng_seed and rng_offset, or neither")
        if rng_seed is None:
            seed, offset = fd._rng_inputs(what)
        else:
            seed, offset = (self._handle(self._operand(x, what), what) for x in (rng_seed, rng_offset))
        lib = _capi.lib
        like_fn, fn = ("cf_normal_like", "cf_normal") if what in ("normal", "randn_like") else \
            ("cf_uniform_like", "cf_uniform")
        if like is not None:
            return self._make(what, getattr(lib, like_fn)(fd._f, like.handle, lo, hi, seed, offset), like.extents)
        dt = as_dtype(dtype)
        entries = self._shape_entries(shape, what)
        if all(idh is None and sc is None for _, _, idh, sc in entries):
            sizes = [s for s, _, _, _ in entries]
            arr = (ctypes.c_int64 * max(len(sizes), 1))(*sizes)
            return self._make(what, getattr(lib, fn)(fd._f, len(sizes), arr, lo, hi, seed, offset, int(dt)), sizes)
        carrier = self._full(entries, Scalar(fd, 0.0, DataType.Double), dt)
        r = self._make(what, getattr(lib, like_fn)(fd._f, carrier.handle, lo, hi, seed, offset), carrier.extents)
        if self._dynamic(entries):  # the draw reads its sizes from the carrier's expand: it must be computed
            r = self.add(r, carrier)  # + 0.0, exact
        return r

    def uniform(self: "Ops", minval: Any, maxval: Any, shape: Any, dtype: Any = DataType.Float,
                rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """Uniform numbers in [minval, maxval) of the given shape and (floating) dtype."""
        return self._random("uniform", minval, maxval, shape, dtype, rng_seed, rng_offset)

    def normal(self: "Ops", mean: Any, std: Any, shape: Any, dtype: Any = DataType.Float,
               rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """Normal numbers of the given mean and standard deviation."""
        return self._random("normal", mean, std, shape, dtype, rng_seed, rng_offset)

    def rand_like(self: "Ops", arg: Any, rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """Uniform numbers in [0, 1) of arg's shape and dtype."""
        return self._random("rand_like", 0.0, 1.0, None, None, rng_seed, rng_offset, self._tensor(arg, "rand_like"))

    def randn_like(self: "Ops", arg: Any, rng_seed: Any = None, rng_offset: Any = None) -> Tensor:
        """Standard normal numbers of arg's shape and dtype."""
        return self._random("randn_like", 0.0, 1.0, None, None, rng_seed, rng_offset, self._tensor(arg, "randn_like"))

    # ---- indexing and scan ops ------------------------------------------------------------------

    def _index_arg(self: "Ops", index: Any, what: str) -> Tuple[Union[Tensor, Scalar], _capi.TvHandle]:
        i = self._operand(index, what)
        return i, self._handle(i, what)

    def gather(self: "Ops", arg: Any, index: Any, dim: int) -> Tensor:
        """torch.gather(arg, dim, index): index (int32 or int64) of arg's rank, its extents
        off dim at most arg's; the result has index's shape. arg is read at computed
        positions: define and run keeps it in memory (a fusion or segment input)."""
        self._fd._check_open("gather")
        t, (i, ih) = self._tensor(arg, "gather"), self._index_arg(index, "gather")
        d = self._axes(dim, t.ndim, "gather", t)[0]
        ext = i.extents if isinstance(i, Tensor) else ()
        return self._make("gather", _capi.lib.cf_gather(self._fd._f, t.handle, d, ih), ext)

    def take_along_axis(self: "Ops", arg: Any, index: Any, dim: int) -> Tensor:
        """numpy's take_along_axis: index of arg's rank, its extents off dim equal to arg's
        (or broadcast); the result has index's extent along dim."""
        self._fd._check_open("take_along_axis")
        t, (i, ih) = self._tensor(arg, "take_along_axis"), self._index_arg(index, "take_along_axis")
        d = self._axes(dim, t.ndim, "take_along_axis", t)[0]
        ie = list(i.extents) if isinstance(i, Tensor) else []
        ext = [ie[k] if k < len(ie) and (k == d or e == 1) else e for k, e in enumerate(t.extents)]
        return self._make("take_along_axis", _capi.lib.cf_take_along_axis(self._fd._f, t.handle, ih, d), ext)

    def index_select(self: "Ops", arg: Any, index: Any, dim: int) -> Tensor:
        """torch.index_select: index 1-D (or 0-d: one position, the axis kept of extent 1)."""
        self._fd._check_open("index_select")
        t, (i, ih) = self._tensor(arg, "index_select"), self._index_arg(index, "index_select")
        d = self._axes(dim, t.ndim, "index_select", t)[0]
        ext = list(t.extents)
        ext[d] = i.extents[0] if isinstance(i, Tensor) and i.ndim == 1 else 1
        return self._make("index_select", _capi.lib.cf_index_select(self._fd._f, t.handle, d, ih), ext)

    def select(self: "Ops", arg: Any, index: Any, dim: int) -> Tensor:
        """torch.select: arg without axis dim, at position index (an integer Scalar or a
        number; negative counts from the end)."""
        self._fd._check_open("select")
        t, (_, ih) = self._tensor(arg, "select"), self._index_arg(index, "select")
        d = self._axes(dim, t.ndim, "select", t)[0]
        ext = [e for k, e in enumerate(t.extents) if k != d]
        return self._make("select", _capi.lib.cf_select(self._fd._f, t.handle, d, ih), ext)

    def scatter(self: "Ops", arg: Any, index: Any, src: Any, dim: int) -> Tensor:
        """torch.scatter (out of place): arg with out[...index[i][j]...] = src[i][j] along
        dim; src a tensor of arg's dtype (extents at least index's) or a number or Scalar
        (filled to index's shape). Duplicate positions: one of their values."""
        fd = self._fd
        fd._check_open("scatter")
        t, (i, ih) = self._tensor(arg, "scatter"), self._index_arg(index, "scatter")
        d = self._axes(dim, t.ndim, "scatter", t)[0]
        s = self._operand(src, "scatter")
        if not isinstance(s, Tensor):
            if not isinstance(i, Tensor):
                raise InvalidArgumentError("scatter: index must be a Tensor")
            s = self.full(i.shape(), s, t.dtype)
        return self._make("scatter", _capi.lib.cf_scatter(fd._f, t.handle, d, ih, s.handle), t.extents)

    def _scan(self: "Ops", what: str, arg: Any, dim: int) -> Tensor:
        self._fd._check_open(what)
        t = self._tensor(arg, what)
        d = self._axes(dim, t.ndim, what, t)[0]
        return self._make(what, getattr(_capi.lib, "cf_" + what)(self._fd._f, t.handle, d), t.extents)

    def cumsum(self: "Ops", arg: Any, dim: int) -> Tensor:
        """torch.cumsum: the inclusive prefix sum along dim; integers and bool give int64,
        floating dtypes keep theirs (accumulated in float, double for double)."""
        return self._scan("cumsum", arg, dim)

    def cumprod(self: "Ops", arg: Any, dim: int) -> Tensor:
        """torch.cumprod: the inclusive prefix product along dim; dtypes as cumsum's."""
        return self._scan("cumprod", arg, dim)

    def cummax(self: "Ops", arg: Any, dim: int) -> Tensor:
        """torch.cummax's values (nvFuser's cummax: no indices): the running maximum along
        dim, dtype kept; a NaN stays for the rest of the row."""
        return self._scan("cummax", arg, dim)

    def cummin(self: "Ops", arg: Any, dim: int) -> Tensor:
        """torch.cummin's values (nvFuser's cummin: no indices): the running minimum along
        dim, dtype kept; a NaN stays for the rest of the row."""
        return self._scan("cummin", arg, dim)

    def embedding_fwd(self: "Ops", input: Any, weight: Any, padding_idx: Any = None,  # noqa: A002
                      max_norm: Any = None, norm_type: Any = None, scale_grad_by_freq: Any = None,
                      sparse: Any = None) -> Tensor:
        """torch.nn.functional.embedding's forward (nvFuser's embedding_fwd): weight's rows
        at input's indices, [*input, D]. The optional arguments are None, numbers or
        Scalars (define_scalar inputs too); max_norm renormalizes the looked-up rows whose
        norm_type-norm (default 2) exceeds it, in the result only (the weight is not
        modified, unlike torch); padding_idx, scale_grad_by_freq and sparse only matter for
        the backward."""
        fd = self._fd
        fd._check_open("embedding_fwd")
        x, w = self._tensor(input, "embedding_fwd"), self._tensor(weight, "embedding_fwd")
        opt = [None if v is None else self._handle(self._operand(v, "embedding_fwd"), "embedding_fwd")
               for v in (padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)]
        h = _capi.lib.cf_embedding_fwd(fd._f, x.handle, w.handle, *opt)
        return self._make("embedding_fwd", h, tuple(x.extents) + tuple(w.extents[1:]))

    # ---- matmul --------------------------------------------------------------------------

    def matmul(self: "Ops", arg1: Any, arg2: Any) -> Tensor:
        """torch.matmul (cf_matmul): 1-D operands are vectors, batch axes broadcast; both
        operands of one floating dtype, accumulated in float (double for double), the
        result in the operands' dtype."""
        fd = self._fd
        fd._check_open("matmul")
        a, b = self._tensor(arg1, "matmul"), self._tensor(arg2, "matmul")
        ea, eb = tuple(a.extents), tuple(b.extents)
        batch = broadcast_shapes([ea[:-2], eb[:-2]]) if ea and eb else ()
        shape = batch + ea[-2:-1] + eb[-1:] if len(eb) >= 2 else batch + ea[-2:-1]
        return self._make("matmul", _capi.lib.cf_matmul(fd._f, a.handle, b.handle), shape)

    def linear(self: "Ops", arg1: Any, arg2: Any, bias: Any = None) -> Tensor:
        """torch.nn.functional.linear (cf_linear): arg1 @ arg2^T + bias, arg2 [N, K] or
        [K], bias None, 0-d or [N]; the bias is added to the float accumulator."""
        fd = self._fd
        fd._check_open("linear")
        x, w = self._tensor(arg1, "linear"), self._tensor(arg2, "linear")
        b = None if bias is None else self._tensor(bias, "linear")
        shape = tuple(x.extents)[:-1] + tuple(w.extents)[:-1]
        h = _capi.lib.cf_linear(fd._f, x.handle, w.handle, b.handle if b is not None else None)
        return self._make("linear", h, shape)


def check_stride_order(order: Sequence[int], rank: int, what: str) -> Tuple[int, ...]:
    out = tuple(int(o) for o in order)
    if len(out) != rank or sorted(out) != list(range(rank)):
        raise InvalidArgumentError(f"{what}: stride_order {list(order)} is not a permutation of 0..{rank - 1} "
                                   f"for a tensor of {rank} dimensions")
    return out
