"""The enumerations users name (DataType, ParallelType, MemoryType) and the exceptions that
carry cfuser's messages.

Each enum's values are the C enumerators' values (include/cfuser/types.h); the Python
names are nvFuser's (DataType.Float, ParallelType.grid_x). tests/test_types.py checks
every value against the library's own printed names, so the two tables cannot drift.
"""
from __future__ import annotations

import enum
from typing import Dict, Type, Union


class DataType(enum.IntEnum):
    """Element types, in the order of CF_DTYPE_TABLE. DataType.Int is int64, as in nvFuser.
    DataType.Null is nvFuser's "no dtype given" (e.g. ``sum(t, dims, keepdim,
    DataType.Null)`` keeps the input's), never a tensor's dtype."""

    Null = -1
    Float = 0
    Double = 1
    Half = 2
    BFloat16 = 3
    Int8 = 4
    Int32 = 5
    Int = 6
    UInt32 = 7
    Bool = 8
    # The states of a Welford reduction (fd.ops.welford), never an input's or output's.
    WelfordFloat = 9
    WelfordDouble = 10
    # torch's 8-bit floats (no infinity in e4m3fn: overflow gives NaN; e5m2 is IEEE-like),
    # storage types that compute in float as Half does.
    Float8_e4m3fn = 11
    Float8_e5m2 = 12
    # torch's complex64 and complex128: {real, imaginary} of float or double.
    ComplexFloat = 13
    ComplexDouble = 14
    # nvFuser's Float4_e2m1fn (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives): a storage
    # type, packed two to a byte in tensors (DLPack code 17, 4 bits; torch's
    # float4_e2m1fn_x2 counts the bytes), cast to and from the wider floats only.
    Float4_e2m1fn = 15
    # nvFuser's Float4_e2m1fn_x2: torch's float4_e2m1fn_x2, one byte of two Float4_e2m1fn
    # elements. Only define_tensor takes it, as nvFuser does: its shape counts bytes, and
    # the input is the Float4_e2m1fn tensor of twice as many elements along its fastest
    # axis. Like Null, a frontend value (negative), never a tensor's dtype in C.
    Float4_e2m1fn_x2 = -2


# The C library's printed name of each DataType (cf_dtype_name), and the NumPy-style name
# that the array libraries use (numpy, torch, cupy, jax all accept these strings).
C_DTYPE_NAMES: Dict[DataType, str] = {
    DataType.Float: "float", DataType.Double: "double", DataType.Half: "__half",
    DataType.BFloat16: "__bfloat", DataType.Int8: "int8_t", DataType.Int32: "int",
    DataType.Int: "int64_t", DataType.UInt32: "uint32_t", DataType.Bool: "bool",
    DataType.WelfordFloat: "welford_float", DataType.WelfordDouble: "welford_double",
    DataType.Float8_e4m3fn: "__e4m3", DataType.Float8_e5m2: "__e5m2",
    DataType.ComplexFloat: "complex_float", DataType.ComplexDouble: "complex_double",
    DataType.Float4_e2m1fn: "__e2m1",
}
ARRAY_DTYPE_NAMES: Dict[DataType, str] = {
    DataType.Float: "float32", DataType.Double: "float64", DataType.Half: "float16",
    DataType.BFloat16: "bfloat16", DataType.Int8: "int8", DataType.Int32: "int32",
    DataType.Int: "int64", DataType.UInt32: "uint32", DataType.Bool: "bool",
    DataType.Float8_e4m3fn: "float8_e4m3fn", DataType.Float8_e5m2: "float8_e5m2",
    DataType.ComplexFloat: "complex64", DataType.ComplexDouble: "complex128",
    DataType.Float4_e2m1fn: "float4_e2m1fn",
}
# The dtypes NumPy lacks and ml_dtypes (JAX's) provides, by the same names.
ML_DTYPES = (DataType.BFloat16, DataType.Float8_e4m3fn, DataType.Float8_e5m2)
# The packed dtypes (two elements per byte in tensors; the C library's ir_dtype_is_packed,
# checked by tests/test_types.py). Arrays hold them as bytes of two elements: torch's
# float4_e2m1fn_x2 (DLPack lanes 2), or uint8 where the library has no such dtype; their
# shapes count bytes, cfuser's count elements (_dlpack.py converts at the boundary).
PACKED_DTYPES = (DataType.Float4_e2m1fn,)
# The array libraries' dtype of one byte of two packed elements (torch >= 2.8).
PACKED_ARRAY_NAMES: Dict[DataType, str] = {DataType.Float4_e2m1fn: "float4_e2m1fn_x2"}


# The element types of tensors (DataType without Null and the Welford states).
ELEMENT_DTYPES = tuple(d for d in DataType if d >= 0 and d not in (DataType.WelfordFloat, DataType.WelfordDouble))
_ALIASES = {"int64": DataType.Int, "long": DataType.Int, "int": DataType.Int32, "float": DataType.Float,
            "double": DataType.Double, "half": DataType.Half, "bool_": DataType.Bool, "bool": DataType.Bool,
            "cfloat": DataType.ComplexFloat, "cdouble": DataType.ComplexDouble}


def as_dtype(dtype: object, pairs: bool = False) -> DataType:
    """A DataType from itself, a name ("Float", "float32", "torch.float32"), a NumPy dtype
    or a torch.dtype. DataType.Float4_e2m1fn_x2 only where pairs is True (define_tensor)."""
    if isinstance(dtype, DataType):
        if dtype is DataType.Float4_e2m1fn_x2 and not pairs:
            raise InvalidArgumentError("DataType.Float4_e2m1fn_x2 is one byte of two Float4_e2m1fn elements (torch's "
                                       "float4_e2m1fn_x2): define_tensor takes it, its shape counting bytes; "
                                       "elsewhere use DataType.Float4_e2m1fn")
        return dtype
    if not isinstance(dtype, str) and dtype is not None:
        dtype = str(getattr(dtype, "name", None) or dtype)  # numpy.dtype('float32'), torch.float32
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        for dt, array_name in ARRAY_DTYPE_NAMES.items():
            if name in (dt.name, array_name):
                return dt
        if name in _ALIASES:
            return _ALIASES[name]
        for dt, pair_name in PACKED_ARRAY_NAMES.items():  # torch.float4_e2m1fn_x2: bytes of that dtype
            if name == pair_name:
                return dt
    raise InvalidArgumentError(f"unknown dtype {dtype!r}; use cfuser.DataType or a name such as 'float32'")


def dtype_of_number(value: object) -> DataType:
    """nvFuser's dtype of a Python number given to define_scalar: Bool, Int (int64), Double
    or ComplexDouble."""
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    if isinstance(value, float):
        return DataType.Double
    if isinstance(value, complex):
        return DataType.ComplexDouble
    raise InvalidArgumentError(f"{value!r} is not a number (bool, int, float or complex)")


def is_floating(dt: DataType) -> bool:
    return dt in (DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16, DataType.Float8_e4m3fn,
                  DataType.Float8_e5m2)


def is_complex(dt: DataType) -> bool:
    return dt in (DataType.ComplexFloat, DataType.ComplexDouble)


def is_integral(dt: DataType) -> bool:
    return dt in (DataType.Int8, DataType.Int32, DataType.Int, DataType.UInt32, DataType.Bool)


class ParallelType(enum.IntEnum):
    """How a loop axis is executed, in the order of CF_PARALLEL_TYPE_TABLE."""

    serial = 0
    block_x = 1  # threadIdx.x
    block_y = 2
    block_z = 3
    grid_x = 4  # blockIdx.x
    grid_y = 5
    grid_z = 6
    device_x = 7  # deviceIdx.x
    device_y = 8
    device_z = 9
    mesh_x = 7  # nvFuser's names of the DID types (aliases)
    mesh_y = 8
    vectorize = 10
    unroll = 11
    unswitch = 12  # the loop's nest runs once without predicates when the whole tile is in bounds
    mma = 13  # an axis of a tensor-core instruction's tile (cf_mma_tile)


C_PARALLEL_TYPE_NAMES: Dict[ParallelType, str] = {
    ParallelType.serial: "S", ParallelType.block_x: "threadIdx.x", ParallelType.block_y: "threadIdx.y",
    ParallelType.block_z: "threadIdx.z", ParallelType.grid_x: "blockIdx.x",
    ParallelType.grid_y: "blockIdx.y", ParallelType.grid_z: "blockIdx.z",
    ParallelType.device_x: "deviceIdx.x", ParallelType.device_y: "deviceIdx.y",
    ParallelType.device_z: "deviceIdx.z", ParallelType.vectorize: "V", ParallelType.unroll: "UR",
    ParallelType.unswitch: "US", ParallelType.mma: "MMA",
}


class MemoryType(enum.IntEnum):
    """Where a tensor lives, in the order of CF_MEMORY_TYPE_TABLE."""

    local = 0
    shared = 1
    global_ = 2
    tensor = 3  # Blackwell tensor memory (TMEM)


C_MEMORY_TYPE_NAMES: Dict[MemoryType, str] = {
    MemoryType.local: "Local", MemoryType.shared: "Shared", MemoryType.global_: "Global",
    MemoryType.tensor: "Tensor",
}


class CfuserError(RuntimeError):
    """A cfuser call failed. str(e) is cfuser's message; e.status is the C status name
    (e.g. "ERR_INVALID_ARGUMENT")."""

    status = "ERR"

    def __init__(self, message: str, status: str = "") -> None:
        super().__init__(message)
        if status:
            self.status = status


class InvalidArgumentError(CfuserError, ValueError):
    """A bad value: a wrong dtype, shape or device, a tensor of another definition."""

    status = "ERR_INVALID_ARGUMENT"


class NotDefinedError(InvalidArgumentError, NotImplementedError):
    """A FusionDefinition executed before anything was defined (nvFuser raises
    NotImplementedError there: its definition() is not overridden)."""


class InvalidScheduleError(CfuserError):
    """A schedule that cannot be lowered or breaks a rule."""

    status = "ERR_INVALID_SCHEDULE"


class UnsupportedError(CfuserError, NotImplementedError):
    """Valid, but not implemented by cfuser."""

    status = "ERR_UNSUPPORTED"


class CompileError(CfuserError):
    """NVRTC or the host C compiler rejected the generated code."""

    status = "ERR_COMPILE"


class CudaError(CfuserError):
    """A CUDA driver call failed."""

    status = "ERR_CUDA"


class NoDeviceError(CfuserError):
    """The call needs a CUDA device and there is none."""

    status = "ERR_NO_DEVICE"


class OutOfMemoryError(CfuserError, MemoryError):
    """A host or device allocation failed."""

    status = "ERR_OUT_OF_MEMORY"


class KernelRuntimeError(CfuserError):
    """A kernel stopped on a run-time check (host backend)."""

    status = "ERR_RUNTIME"


class InternalError(CfuserError):
    """A bug in cfuser: please report it."""

    status = "ERR_INTERNAL"


# Indexed by the C status value (cf_status); 0 is CF_OK.
STATUS_ERRORS: Dict[int, Type[CfuserError]] = {
    1: InvalidArgumentError, 2: InvalidScheduleError, 3: UnsupportedError, 4: CompileError,
    5: CudaError, 6: NoDeviceError, 7: OutOfMemoryError, 8: KernelRuntimeError, 9: InternalError,
}


def error_for(status: int, message: str) -> CfuserError:
    """The exception of a non-OK C status carrying message."""
    cls = STATUS_ERRORS.get(status, CfuserError)
    return cls(message or f"cfuser: status {status} without a message")
