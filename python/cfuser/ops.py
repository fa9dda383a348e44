"""fd.ops: every tensor op of the C API (include/cfuser/fusion.h), with nvFuser's names and
argument forms.

The elementwise ops come from the library's op table (cfuser/optable.h, cf_op_get): every
unary and binary row with a C function is an op here under its Python name (``maximum``
for the C ``max``, ...), so an op added to the table appears in fd.ops. Each operand may be
a Tensor, a Scalar or a Python number (nvFuser's ``define_scalar``): numbers are scalars in
type promotion, as torch's wrapped numbers (a float32 tensor times 2.5 stays float32), and
operands of different ranks broadcast numpy-style. An op of Scalars only is a Scalar:
folded when every operand is a constant (by the C library's evaluator, so a folded value
is the one a kernel computes), else a 0-d tensor of the fusion (a scalar input's
arithmetic).

The shape ops are in ops_shape.py, the reductions in ops_reduce.py (mixins of Ops).
"""
from __future__ import annotations

import ctypes
import struct
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _capi
from ._tensor import Scalar, Tensor, broadcast_shapes
from .ops_reduce import ReduceOps
from .ops_shape import ShapeOps
from .types import (DataType, InternalError, InvalidArgumentError, UnsupportedError, as_dtype, dtype_of_number,
                    error_for, is_complex, is_floating)

if TYPE_CHECKING:
    from .fusion_definition import FusionDefinition

Number = Union[int, float, bool, complex]
Operand = Union[Tensor, Scalar, int, float, bool]

_INTEGER = (DataType.Int8, DataType.Int32, DataType.Int, DataType.UInt32, DataType.Bool)
# A 0-d element of each dtype as ctypes reads it (Half and BFloat16: their bits).
_READ = {DataType.Float: ctypes.c_float, DataType.Double: ctypes.c_double, DataType.Int8: ctypes.c_int8,
         DataType.Int32: ctypes.c_int32, DataType.Int: ctypes.c_int64, DataType.UInt32: ctypes.c_uint32,
         DataType.Bool: ctypes.c_bool, DataType.Half: ctypes.c_uint16, DataType.BFloat16: ctypes.c_uint16}


def _constant(f: Any, s: Scalar) -> Any:
    """The 0-d constant of a Scalar's value in fusion f (integers exactly, complex numbers with
    both parts)."""
    lib, dt = _capi.lib, s.dtype
    if dt in _INTEGER:
        return lib.cf_const_int(f, int(dt), int(s.value))
    if is_complex(dt):
        z = complex(s.value)
        return lib.cf_const_complex(f, int(dt), z.real, z.imag)
    return lib.cf_const(f, int(dt), float(s.value))


def _element(address: int, dt: DataType) -> Number:
    raw = _READ[dt].from_address(address).value
    if dt == DataType.Half:
        return struct.unpack("<e", struct.pack("<H", raw))[0]
    if dt == DataType.BFloat16:
        return struct.unpack("<f", struct.pack("<I", raw << 16))[0]
    return bool(raw) if dt == DataType.Bool else raw


class Ops(ShapeOps, ReduceOps):
    """The tensor ops of one FusionDefinition (fd.ops)."""

    def __init__(self, fd: "FusionDefinition") -> None:
        self._fd = fd

    # ---- operands ---------------------------------------------------------------------------

    def _make(self, what: str, handle: Optional[_capi.TvHandle], extents: Sequence[Any]) -> Tensor:
        return self._fd._new_tensor(what, handle, tuple(extents))

    def _operand(self, x: Any, what: str) -> Union[Tensor, Scalar]:
        """A Tensor or Scalar of this definition; a Python number becomes a constant."""
        fd = self._fd
        if isinstance(x, (Tensor, Scalar)):
            if x.fd is not fd:
                raise InvalidArgumentError(f"{what}: {x.name if isinstance(x, Tensor) else repr(x)} belongs to another "
                                           "FusionDefinition")
            return x
        if isinstance(x, (bool, int, float, complex)) or type(x).__name__ in ("float64", "float32", "int64", "int32",
                                                                               "bool_", "complex64", "complex128"):
            value = x.item() if hasattr(x, "item") else x
            return Scalar(fd, value, dtype_of_number(value))
        raise InvalidArgumentError(f"{what}: expected a Tensor, a Scalar or a number, got {type(x).__name__}")

    def _tensor(self, x: Any, what: str) -> Tensor:
        t = self._operand(x, what) if not isinstance(x, Tensor) else x
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{what}: expected a Tensor of this definition, got {x!r}")
        return self._fd._own(t, what)

    def _handle(self, x: Union[Tensor, Scalar], what: str) -> _capi.TvHandle:
        """The C tensor of an operand: a Scalar's 0-d constant is made on first use."""
        if isinstance(x, Tensor):
            return x.handle
        if x.handle is None:
            lib, f = _capi.lib, self._fd._f
            dt = x.dtype
            if x.value is None and x.source is None:
                raise UnsupportedError(f"{what}: {x!r} cannot be an operand: it has no value")
            if x.value is None:  # a tensor's size: a 0-d int64 tensor holding it (cf_tv_size)
                t, d = x.source
                h = lib.cf_tv_size(f, t.handle, d)
            else:
                h = _constant(f, x)
            if not h:
                raise self._fd._error(what)
            x.handle = h
        return x.handle

    # ---- elementwise ------------------------------------------------------------------------

    def _elementwise(self, what: str, cname: str, operands: Sequence[Any]) -> Union[Tensor, Scalar]:
        fd = self._fd
        fd._check_open(what)
        ops = [self._operand(x, what) for x in operands]
        tensors = [o for o in ops if isinstance(o, Tensor)]
        if not tensors:
            return self._scalar_op(what, cname, ops)
        h = self._with_constant(cname, ops)
        if h is None:
            h = getattr(_capi.lib, cname)(fd._f, *[self._handle(o, what) for o in ops])
        return self._make(what, h, broadcast_shapes([t.extents for t in tensors]))

    _SCALAR_FORMS = {"cf_add": ("cf_add_scalar", 1.0), "cf_sub": ("cf_add_scalar", -1.0),
                     "cf_mul": ("cf_mul_scalar", 1.0)}

    def _with_constant(self, cname: str, ops: Sequence[Union[Tensor, Scalar]]) -> Optional[_capi.TvHandle]:
        """A floating tensor plus, minus or times a constant number: the C op with the
        constant in the expression (cf_add_scalar, cf_mul_scalar), as a wrapped number keeps
        the tensor's dtype. Not a 0-d constant tensor: the segmenter gives a 0-d full
        feeding a reduction's epilogue a kernel of its own."""
        form = self._SCALAR_FORMS.get(cname)
        if form is None or len(ops) != 2 or not isinstance(ops[0], Tensor) or not isinstance(ops[1], Scalar):
            return None
        t, c = ops
        if c.value is None or not is_floating(t.dtype) or is_floating(c.dtype) and c.dtype != DataType.Double \
                or is_complex(c.dtype):
            return None
        return getattr(_capi.lib, form[0])(self._fd._f, t.handle, form[1] * float(c.value))

    def _scalar_op(self, what: str, cname: str, ops: Sequence[Scalar],
                   extra: Sequence[Any] = ()) -> Scalar:
        """An op of Scalars: folded when all are constants, else a 0-d op of the fusion."""
        fd = self._fd
        if all(s.value is not None for s in ops):
            return self._fold(what, lambda f, hs: getattr(_capi.lib, cname)(f, *hs, *extra), ops)
        h = getattr(_capi.lib, cname)(fd._f, *[self._handle(s, what) for s in ops], *extra)
        if not h:
            raise fd._error(what)
        return Scalar(fd, None, DataType(_capi.lib.cf_tv_dtype(h)), handle=h)

    def _fold(self, what: str, build: Callable[[Any, List[Any]], Any], ops: Sequence[Scalar]) -> Scalar:
        """The value of build(f, constants) computed now by the C library's evaluator."""
        lib = _capi.lib
        f = lib.cf_fusion_create()
        if not f:
            raise MemoryError(f"{what}: out of memory")
        try:
            hs = [_constant(f, s) for s in ops]
            out = build(f, hs) if all(hs) else None
            status = lib.cf_fusion_add_output(f, out) if out else lib.cf_fusion_status(f)
            result = (ctypes.c_void_p * 1)()
            if not status:
                status = lib.cf_fusion_evaluate(f, 0, None, result)
            if status:
                raise error_for(status, lib.cf_fusion_error(f).decode())
            dt = DataType(lib.cf_tv_dtype(out))
            m = _capi.DLManagedTensor.from_address(result[0])
            value = _element((m.dl_tensor.data or 0) + m.dl_tensor.byte_offset, dt) if dt in _READ else \
                complex(lib.cf_tensor_get(result[0], 0), lib.cf_tensor_get_imag(result[0], 0)) if is_complex(dt) \
                else lib.cf_tensor_get(result[0], 0)  # the 8-bit floats, decoded by the library
            lib.cf_tensor_free(result[0])
            return Scalar(self._fd, value, dt)
        finally:
            lib.cf_fusion_destroy(f)

    def where(self, pred: Operand, a: Operand, b: Operand) -> Union[Tensor, Scalar]:
        """pred ? a : b elementwise (pred Bool); a and b may be Scalars or numbers."""
        return self._elementwise("where", "cf_where", [pred, a, b])

    def cast(self, arg: Operand, dtype: Union[DataType, str]) -> Union[Tensor, Scalar]:
        """arg converted to dtype (nvFuser's cast; floating to integer saturates, NaN gives 0)."""
        fd = self._fd
        fd._check_open("cast")
        dt = as_dtype(dtype)
        x = self._operand(arg, "cast")
        if isinstance(x, Scalar):
            return self._scalar_op("cast", "cf_cast", [x], (int(dt),))
        return self._make("cast", _capi.lib.cf_cast(fd._f, x.handle, int(dt)), x.extents)

    def clamp(self, arg: Operand, min: Any = None, max: Any = None) -> Union[Tensor, Scalar]:  # noqa: A002
        """min(max(arg, min), max), as torch.clamp (NaN stays NaN); a bound may be None,
        a number or a Scalar."""
        fd = self._fd
        fd._check_open("clamp")
        x = self._operand(arg, "clamp")
        lo, hi = (None if v is None else self._operand(v, "clamp") for v in (min, max))
        if isinstance(x, Tensor) and isinstance(lo, Scalar) and isinstance(hi, Scalar) and \
                lo.value is not None and hi.value is not None and lo.value <= hi.value:
            return self._make("clamp", _capi.lib.cf_clamp(fd._f, x.handle, float(lo.value), float(hi.value)), x.extents)
        out: Any = x
        if min is not None:
            out = self.where(self.lt(out, min), min, out)
        if max is not None:
            out = self.where(self.gt(out, max), max, out)
        return self.set(out) if out is arg else out

    def threshold(self, arg: Operand, threshold: Any, value: Any) -> Union[Tensor, Scalar]:
        """torch.nn.functional.threshold: value where arg <= threshold, else arg."""
        return self.where(self.le(arg, threshold), value, arg)

    def lerp(self, start: Operand, end: Operand, weight: Operand) -> Union[Tensor, Scalar]:
        """start + weight * (end - start)."""
        return self.add(start, self.mul(weight, self.sub(end, start)))

    def add_alpha(self, a: Operand, b: Operand, alpha: Any) -> Union[Tensor, Scalar]:
        """a + alpha * b (torch.add with alpha)."""
        return self.add(a, self.mul(b, alpha))

    def sub_alpha(self, a: Operand, b: Operand, alpha: Any) -> Union[Tensor, Scalar]:
        """a - alpha * b (torch.sub with alpha)."""
        return self.sub(a, self.mul(b, alpha))

    def addcmul(self, arg: Operand, t1: Operand, t2: Operand, value: Any = 1.0) -> Union[Tensor, Scalar]:
        """torch.addcmul: arg + value * t1 * t2 (cf_addcmul when value is a constant)."""
        fd = self._fd
        fd._check_open("addcmul")
        ops = [self._operand(x, "addcmul") for x in (arg, t1, t2)]
        v = self._operand(value, "addcmul")
        if isinstance(v, Scalar) and v.value is not None and all(isinstance(o, Tensor) for o in ops):
            hs = [self._handle(o, "addcmul") for o in ops]
            return self._make("addcmul", _capi.lib.cf_addcmul(fd._f, *hs, float(v.value)),
                              broadcast_shapes([o.extents for o in ops if isinstance(o, Tensor)]))
        return self.add(arg, self.mul(self.mul(value, t1), t2))

    def logical_right_shift(self, a: Operand, b: Operand) -> Union[Tensor, Scalar]:
        """nvFuser's logical_right_shift of integers: the bits shifted right with zeros
        filled in (an amount of the width or more gives 0)."""
        x = self._operand(a, "logical_right_shift")
        n = self._operand(b, "logical_right_shift")
        width = 8 * _capi.lib.cf_dtype_size(int(x.dtype if isinstance(x, (Tensor, Scalar)) else DataType.Int))
        arith = self.bitwise_right_shift(x, n)
        ones = self.cast(-1, x.dtype)  # all bits set, of x's dtype
        keep = self.bitwise_not(self.bitwise_left_shift(ones, self.sub(width, n)))  # the low width - n bits
        shifted = self.bitwise_and(arith, keep)
        return self.where(self.ge(n, width), self.cast(0, x.dtype), shifted)

    # ---- sizes ------------------------------------------------------------------------------

    def size(self, arg: Tensor, dim: int) -> Scalar:
        """The size of arg's axis dim as a Scalar (a constant where the definition knows it)."""
        t = self._tensor(arg, "size")
        d = self._axes(dim, t.ndim, "size", t)[0]
        e = t.extents[d]
        return Scalar(self._fd, e if type(e) is int else None, DataType.Int, extent=e, source=(t, d))

    def shape(self, arg: Tensor) -> Any:
        """arg.shape(): its sizes as a Vector."""
        return self._tensor(arg, "shape").shape()

    def at(self, vector: Any, index: int) -> Scalar:
        """Entry index of a Vector."""
        return vector[index]

    @staticmethod
    def _axes(dims: Union[int, Sequence[int]], rank: int, what: str, t: Tensor) -> List[int]:
        dims = [dims] if isinstance(dims, int) else list(dims)
        out = []
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, int) or not -max(rank, 1) <= d < max(rank, 1):
                raise InvalidArgumentError(f"{what}: dimension {d!r} out of range for {t.name} of {rank} dimensions")
            out.append(d % max(rank, 1))
        return out


def _op_rows() -> Dict[str, Tuple[str, str]]:
    """Python name -> (C function, kind) of every elementwise row with a bound C function."""
    out = {}
    for row in _capi.op_table():
        kind, name = row.kind.decode(), row.name.decode()
        if row.api and kind in ("unary", "binary") and "cf_" + name in _capi.BOUND:
            out[row.py_name.decode()] = ("cf_" + name, kind)
    return out


OP_ROWS = _op_rows()


def _unary(py: str, cname: str) -> Callable[..., Any]:
    def op(self: Ops, arg: Operand) -> Union[Tensor, Scalar]:
        return self._elementwise(py, cname, [arg])

    op.__name__ = py
    op.__doc__ = f"Elementwise {py} (cf_{cname[3:]}); a Scalar gives a Scalar."
    return op


def _binary(py: str, cname: str) -> Callable[..., Any]:
    def op(self: Ops, a: Operand, b: Operand) -> Union[Tensor, Scalar]:
        return self._elementwise(py, cname, [a, b])

    op.__name__ = py
    op.__doc__ = f"Elementwise {py} (cf_{cname[3:]}): Tensors, Scalars or numbers, broadcast numpy-style."
    return op


setattr(Ops, "set", _unary("set", "cf_set"))
for _py, (_c, _kind) in OP_ROWS.items():
    setattr(Ops, _py, (_unary if _kind == "unary" else _binary)(_py, _c))
