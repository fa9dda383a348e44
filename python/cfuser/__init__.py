"""cfuser's Python frontend: fusions defined like nvFuser's FusionDefinition, run on NumPy,
PyTorch, CuPy and JAX arrays through DLPack, over the C library with ctypes.

See python/README.md for a tutorial and for how libcfuser.so is found."""
from ._capi import LibraryNotFoundError, cuda_available, library_path, library_version
from ._dlpack import DLPackTensor
from ._execute import manual_seed
from ._inputs import compute_contiguity, compute_tensor_descriptor
from ._tensor import Scalar, Tensor, Vector
from .fusion_definition import FusionDefinition
from .ops import Ops
from .sched import Sched
from .types import (CfuserError, CompileError, CudaError, DataType, InternalError, InvalidArgumentError,
                    InvalidScheduleError, KernelRuntimeError, MemoryType, NoDeviceError, NotDefinedError,
                    OutOfMemoryError, ParallelType, UnsupportedError)

__all__ = [
    "FusionDefinition", "Tensor", "Scalar", "Vector", "Ops", "Sched", "DLPackTensor", "DataType", "ParallelType",
    "MemoryType", "CfuserError", "InvalidArgumentError", "InvalidScheduleError", "UnsupportedError",
    "CompileError", "CudaError", "NoDeviceError", "OutOfMemoryError", "KernelRuntimeError", "InternalError",
    "LibraryNotFoundError", "cuda_available", "library_path", "library_version", "NotDefinedError",
    "compute_contiguity", "compute_tensor_descriptor", "manual_seed",
]
__version__ = "0.1.0"
