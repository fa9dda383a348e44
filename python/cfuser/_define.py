"""The definition calls of FusionDefinition in nvFuser's spellings: define_tensor (shape
and contiguity, or sizes and strides), from_pytorch / define_tensor_like, define_scalar,
define_vector and add_output (with alias_input or stride_order); and the inputs random ops
add for the generator.

Inputs are recorded twice: as the user passes them to execute (``_inputs``: one entry per
define_tensor, define_scalar or define_vector call) and as the C fusion's inputs
(``_c_inputs``: a slot per C input, in C order, naming where its value comes from). The
two differ by define_vector inputs (one C scalar per size) and the generator's seed and
offsets. Outputs likewise: ``_outputs`` as added, ``_c_outputs`` the distinct tensors the
C fusion writes.
"""
from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _capi, _packed
from ._inputs import InputSpec, check_rank, check_size, compute_tensor_descriptor, normalize_stride_order
from ._tensor import RunValue, Scalar, Tensor, Vector
from .ops_shape import check_stride_order
from .types import DataType, InvalidArgumentError, UnsupportedError, as_dtype, dtype_of_number, is_complex, is_floating


def _is_contiguous(array: Any) -> bool:
    """Row-major contiguity, as NumPy, PyTorch, CuPy and JAX say it."""
    if hasattr(array, "is_contiguous"):
        return bool(array.is_contiguous())
    flags = getattr(array, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    return True  # JAX arrays and others without strides are dense


def _strides(array: Any) -> Optional[List[int]]:
    """An array's strides in elements, or None for row-major (JAX)."""
    if hasattr(array, "stride") and callable(array.stride):
        return [int(s) for s in array.stride()]
    st = getattr(array, "strides", None)
    if st is None:
        return None
    size = int(getattr(array, "itemsize", 0) or array.dtype.itemsize)
    return [int(s) // size for s in st]



def pairs_as_elements(sizes: List[int], stride_order: Optional[Sequence[int]]) -> List[int]:
    """The shape in Float4_e2m1fn elements of a Float4_e2m1fn_x2 shape in bytes (nvFuser's
    translation): the fastest axis (stride order 0, else the last) twice as long; a size
    read at run time stays one (the call's bytes are counted as elements at execute)."""
    if not sizes:
        raise InvalidArgumentError("define_tensor: a 0-d Float4_e2m1fn_x2 tensor (one byte, two elements); a "
                                   "packed tensor needs an axis to hold its pairs")
    fastest = len(sizes) - 1
    if stride_order is not None and 0 in list(stride_order):
        fastest = list(stride_order).index(0)
    out = list(sizes)
    if out[fastest] >= 0:
        out[fastest] *= 2
    return out

class DefineMixin:
    """define_tensor, define_scalar, define_vector, from_pytorch and add_output."""

    _f: _capi.FusionHandle

    def _init_define(self) -> None:
        self._inputs: List[Tuple[str, Any]] = []   # per execute argument: ("tensor", Tensor) ("scalar", Scalar) ("vector", Vector)
        self._c_inputs: List[Tuple[Any, ...]] = []  # per C input: ("user", u) ("vector", u, j, n) ("seed",) ("offset", k)
        self._c_specs: List[Optional[InputSpec]] = []  # per C input: a tensor input's spec
        self._c_scalars: Dict[int, DataType] = {}   # C input index -> dtype, for scalar inputs
        self._c_keys: List[int] = []                # per C input: its handle's key
        self._host_scalars: set = set()             # C input indices of scalars used as sizes: passed in host memory
        self._outputs: List[Tuple[Any, ...]] = []   # ("c", c index, stride order) ("input", u) ("hidden", c index) ("view", u, sizes, tensor)
        self._c_outputs: List[Tensor] = []
        self._aliases: Dict[int, int] = {}          # C output index -> the input (u) it is written back into
        self._rng_seed: Optional[_capi.TvHandle] = None

    @property
    def _ninputs(self) -> int:
        return len(self._inputs)

    def _c_input(self, what: str, handle: Optional[_capi.TvHandle], slot: Tuple[Any, ...],
                 spec: Optional[InputSpec] = None, dtype: Optional[DataType] = None) -> _capi.TvHandle:
        if not handle:
            raise self._error(what)  # type: ignore[attr-defined]
        self._check(_capi.lib.cf_fusion_add_input(self._f, handle))  # type: ignore[attr-defined]
        if dtype is not None:
            self._c_scalars[len(self._c_inputs)] = dtype
        self._c_inputs.append(slot)
        self._c_specs.append(spec)
        self._c_keys.append(handle.key)
        return handle

    def _size_input(self, handle: _capi.TvHandle) -> None:
        """A scalar input's handle used as a size: C reads it from host memory per call."""
        if handle.key in self._c_keys:
            self._host_scalars.add(self._c_keys.index(handle.key))

    # ---- tensors ------------------------------------------------------------------------------

    def define_tensor(self, shape: Union[int, Sequence[int], None] = None,
                      contiguity: Union[None, bool, Sequence[Optional[bool]]] = None,
                      dtype: Union[DataType, str] = DataType.Float, is_cpu: bool = False,
                      stride_order: Optional[Sequence[int]] = None, *, sizes: Optional[Sequence[int]] = None,
                      strides: Optional[Sequence[int]] = None, static_sizes: bool = False) -> Tensor:
        """A tensor input, as nvFuser's define_tensor.

        shape: per axis -1 (a size read at run time), 0, 1 (a broadcast axis) or a fixed
        size; or just the rank (all -1). contiguity: per axis True, False (any stride) or
        None (a broadcast axis, or an expanded one of stride 0), or one bool for every
        axis that is not a broadcast; omitted: contiguous (cfuser's default; nvFuser's is
        False). stride_order: entry i is the rank of axis i's stride (ndim-1 outermost);
        contiguity is then given in that order. Or sizes and strides of an example array
        (nvFuser's other form), static_sizes keeping its sizes fixed. is_cpu is accepted
        and ignored: cfuser runs host and CUDA memory alike."""
        self._check_open("define_tensor")  # type: ignore[attr-defined]
        if sizes is not None or strides is not None:
            return self._define_from_strides(sizes or [], strides or [], dtype, static_sizes)
        if shape is None:
            raise InvalidArgumentError("define_tensor: give shape (or sizes and strides)")
        if isinstance(shape, int) and not isinstance(shape, bool):
            check_rank(shape, "define_tensor")
            shape = [-1] * shape
        shape = list(shape)
        check_rank(len(shape), "define_tensor")
        szs = [check_size(s, i) for i, s in enumerate(shape)]
        dt = as_dtype(dtype, pairs=True)
        if dt is DataType.Float4_e2m1fn_x2:  # bytes of two elements: twice the fastest axis, in elements
            szs, dt = pairs_as_elements(szs, stride_order), DataType.Float4_e2m1fn
        if contiguity is None or isinstance(contiguity, bool):
            flags: List[Optional[bool]] = [None if s == 1 else (True if contiguity is None else contiguity)
                                           for s in szs]
            order = normalize_stride_order(stride_order, len(szs))
            if order is not None:  # in allocation order
                flags = [flags[a] for a in sorted(range(len(szs)), key=lambda a: -order[a])]
        else:
            flags = list(contiguity)
            if len(flags) != len(szs):
                raise InvalidArgumentError(f"define_tensor: Length of contiguity argument ({len(flags)}) must match "
                                           f"that of shape argument ({len(szs)})")
            order = normalize_stride_order(stride_order, len(szs))
        return self._tensor_input(szs, flags, dt, order)

    def _define_from_strides(self, sizes: Sequence[int], strides: Sequence[int], dtype: Any,
                             static_sizes: bool) -> Tensor:
        if len(sizes) != len(strides):
            raise InvalidArgumentError(f"define_tensor: The number of sizes ({len(sizes)}) does not match the number "
                                       f"of strides ({len(strides)}).")
        check_rank(len(sizes), "define_tensor")
        if as_dtype(dtype, pairs=True) is DataType.Float4_e2m1fn_x2:  # sizes and strides in bytes of two
            sizes, elem_strides = _packed.element_layout(sizes, strides)
            strides, dtype = elem_strides or [], DataType.Float4_e2m1fn
        contiguity, order = compute_tensor_descriptor(list(sizes), list(strides))
        shape = [int(s) if static_sizes or s == 1 else -1 for s in sizes]
        return self._tensor_input(shape, contiguity, as_dtype(dtype), normalize_stride_order(order, len(sizes)))

    def _tensor_input(self, sizes: List[int], contiguity: List[Optional[bool]], dt: DataType,
                      order: Optional[Tuple[int, ...]]) -> Tensor:
        if dt == DataType.Null or dt in (DataType.WelfordFloat, DataType.WelfordDouble):
            raise InvalidArgumentError(f"define_tensor: {dt.name} is not an element type")
        spec = InputSpec(len(self._inputs), sizes, contiguity, dt, order)
        lib, f, c = _capi.lib, self._f, spec.c_sizes()
        if spec.kind == "concrete":
            h = lib.cf_tensor_concrete(f, int(dt), len(c), (ctypes.c_int64 * max(len(c), 1))(*c))
        else:
            h = (lib.cf_tensor_strided if spec.kind == "strided" else lib.cf_tensor_symbolic)(f, int(dt), len(c))
        self._c_input("define_tensor", h, ("user", spec.index), spec)
        extents = tuple(1 if s == 1 else (s if s >= 0 else (spec.index, i)) for i, s in enumerate(sizes))
        t = self._new_tensor("define_tensor", h, tuple(e for i, e in enumerate(extents) if i in spec.kept))  # type: ignore[attr-defined]
        if spec.view:  # the broadcast axes back, where the user declared them
            t = self.ops.broadcast(t, [s == 1 for s in sizes])  # type: ignore[attr-defined]
        t.extents = extents
        self._inputs.append(("tensor", t))
        return t

    def from_pytorch(self, tensor: Any, static_sizes: bool = False) -> Tensor:
        """A tensor input matching an array's dtype, rank, broadcast (size-1) axes,
        contiguity and stride order (nvFuser's from_pytorch; any DLPack array here, on the
        host or a GPU): sizes read at run time, or fixed to the array's with static_sizes."""
        try:
            shape = [int(s) for s in tensor.shape]
            dt = as_dtype(tensor.dtype)
        except AttributeError:
            raise InvalidArgumentError(f"from_pytorch: a {type(tensor).__name__} has no shape and dtype") from None
        strides = _strides(tensor)
        if shape and _packed.holds_pairs(tensor, dt):  # torch's float4_e2m1fn_x2: bytes of two elements
            shape, strides = _packed.element_layout(shape, strides)
        if strides is None or _is_contiguous(tensor):
            sizes = [s if static_sizes or s == 1 else -1 for s in shape]
            return self.define_tensor(sizes, None, dt)
        return self._define_from_strides(shape, strides, dt, static_sizes)

    define_tensor_like = from_pytorch

    # ---- scalars and vectors ----------------------------------------------------------------

    def define_scalar(self, value: Any = None, dtype: Optional[Union[DataType, str]] = None) -> Scalar:
        """With a value: a constant (its dtype Bool, Int or Double by the Python type, or
        dtype). Without one (``define_scalar()``, ``define_scalar(DataType.Float)``,
        ``define_scalar(None, dtype=...)``): a scalar input, given to execute as a number
        (or a 0-d array) in input order; default dtype Double, as in nvFuser."""
        self._check_open("define_scalar")  # type: ignore[attr-defined]
        if isinstance(value, (DataType, str)) and dtype is None:
            value, dtype = None, value
        if value is None:
            dt = as_dtype(dtype) if dtype is not None else DataType.Double
            return self._scalar_input(dt, ("user", len(self._inputs)))
        dt = dtype_of_number(value) if dtype is None else as_dtype(dtype)
        if isinstance(value, complex) and not is_complex(dt):
            raise InvalidArgumentError(f"define_scalar: the complex number {value!r} is not a value of {dt.name}")
        if dt in (DataType.Null, DataType.WelfordFloat, DataType.WelfordDouble):
            raise InvalidArgumentError(f"define_scalar: {dt.name} is not a scalar dtype")
        v = complex(value) if is_complex(dt) else bool(value) if dt == DataType.Bool else \
            int(value) if not is_floating(dt) else float(value)
        return Scalar(self, v, dt)  # type: ignore[arg-type]

    define_constant = define_scalar

    def _scalar_input(self, dt: DataType, slot: Tuple[Any, ...], record: bool = True) -> Scalar:
        if dt in (DataType.Null, DataType.WelfordFloat, DataType.WelfordDouble):
            raise InvalidArgumentError(f"define_scalar: {dt.name} is not a scalar dtype")
        h = self._c_input("define_scalar", _capi.lib.cf_scalar_input(self._f, int(dt)), slot, dtype=dt)
        s = Scalar(self, None, dt, handle=h, input_index=len(self._inputs))  # type: ignore[arg-type]
        s.run_value = RunValue(slot[1], slot[2] if slot[0] == "vector" else None)
        if record:
            self._inputs.append(("scalar", s))
        return s

    def define_vector(self, values: Union[int, Sequence[Any]], dtype: Union[DataType, str] = DataType.Int) -> Vector:
        """A list of sizes: constants or Scalars (``define_vector([2, s])``), or with an
        int n, n scalar inputs given to execute as one list of n ints."""
        self._check_open("define_vector")  # type: ignore[attr-defined]
        if isinstance(values, int) and not isinstance(values, bool):
            check_rank(values, "define_vector")
            u = len(self._inputs)
            items = [self._scalar_input(DataType.Int, ("vector", u, j, values), record=False) for j in range(values)]
            vec = Vector(self, items)
            self._inputs.append(("vector", vec))
            return vec
        items = []
        for i, v in enumerate(values):
            if isinstance(v, Scalar):
                items.append(v)
            else:
                items.append(Scalar(self, check_size(v, i, "define_vector"), as_dtype(dtype)))  # type: ignore[arg-type]
        return Vector(self, items)  # type: ignore[arg-type]

    def _rng_inputs(self, what: str) -> Tuple[_capi.TvHandle, _capi.TvHandle]:
        """The seed and a fresh offset input of a random op without rng_seed/rng_offset."""
        lib = _capi.lib
        if self._rng_seed is None:
            self._rng_seed = self._c_input(what, lib.cf_scalar_input(self._f, int(DataType.Int)), ("seed",),
                                           dtype=DataType.Int)
        k = sum(1 for s in self._c_inputs if s[0] == "offset")
        off = self._c_input(what, lib.cf_scalar_input(self._f, int(DataType.Int)), ("offset", k), dtype=DataType.Int)
        return self._rng_seed, off

    # ---- outputs ----------------------------------------------------------------------------

    def add_output(self, output: Union[Tensor, Scalar], alias_input: Optional[Tensor] = None,
                   stride_order: Optional[Sequence[int]] = None) -> None:
        """Marks output as an output; execute returns outputs in the order they were added
        (a tensor added twice comes back twice). alias_input=t (an input): the result is
        written into that input's array and not returned (nvFuser's in-place update; a
        later add_output of the same tensor returns the input). stride_order: the memory
        order of the returned array (as fd.ops.stride_order). The second positional
        argument may be a stride order, as nvFuser's add_output(t, [1, 0])."""
        self._check_open("add_output")  # type: ignore[attr-defined]
        if alias_input is not None and not isinstance(alias_input, Tensor):
            stride_order, alias_input = alias_input, None
        if isinstance(output, Scalar):
            output = self.ops._make("add_output", self.ops._handle(output, "add_output"), ())  # type: ignore[attr-defined]
        t = self._own(output, "add_output")  # type: ignore[attr-defined]
        if alias_input is None and not stride_order and self._view_output(t):
            return
        if t.origin == "reshape":  # a reshape is a view inside define and run: the output is a copy of it
            t = self.ops.set(t)  # type: ignore[attr-defined]
        order = None
        if stride_order is not None and len(stride_order):
            order = check_stride_order(stride_order, t.ndim, "add_output")
        elif t.stride_order is not None:
            order = t.stride_order
        u = self._input_of(t)
        if alias_input is not None:
            a = self._input_of(self._own(alias_input, "add_output"))  # type: ignore[attr-defined]
            if a is None:
                raise InvalidArgumentError(f"add_output: alias_input {alias_input.name} is not an input of this "
                                           "definition")
            if u is None:
                c = self._c_output_index(t)
                self._aliases[c] = a
                self._outputs.append(("hidden", c))
            return
        if u is not None:
            self._outputs.append(("input", u))
            return
        self._outputs.append(("c", self._c_output_index(t), order))

    def _view_output(self, t: Tensor) -> bool:
        """A reshape (or reshapes) of an input as an output: recorded as a view of the
        input's array (no copy, nvFuser's aliasing of a reshaped input), True; else False."""
        if t.origin != "reshape" or t.view_of is None:
            return False
        src, sizes = t.view_of
        while src.origin == "reshape" and src.view_of is not None:
            src = src.view_of[0]
        u = self._input_of(src)
        if u is None:
            return False
        self._outputs.append(("view", u, sizes, t))
        return True

    def _input_of(self, t: Tensor) -> Optional[int]:
        for u, (kind, x) in enumerate(self._inputs):
            if kind == "tensor" and x is t:
                return u
        return None

    def _c_output_index(self, t: Tensor) -> int:
        for i, o in enumerate(self._c_outputs):
            if o.handle.key == t.handle.key:
                return i
        self._check(_capi.lib.cf_fusion_add_output(self._f, t.handle))  # type: ignore[attr-defined]
        self._c_outputs.append(t)
        return len(self._c_outputs) - 1
