"""FusionDefinition: a fusion defined in Python, as in nvFuser's python frontend, compiled
on its first execute and run on DLPack arrays (NumPy, PyTorch, CuPy, JAX) without copies.

    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.relu(a * b + a))
    out, = fd.execute([x, y])

Life cycle: ops are made inside the with block (or in an overridden definition()); the
schedule may be set by fd.sched between the end of the block and the first execute (or in
an overridden schedule()); the first execute freezes the schedule. A definition scheduled
by hand compiles at its first execute on a backend and reuses that kernel. One the user
did not schedule runs by define and run (cf_fusion_cache, include/cfuser/execute.h): each
new input signature (dtypes, sizes, strides) is scheduled by the automatic schedulers
(reduction, normalization, transpose, pointwise), cut into segments where none takes it
whole, compiled and kept (the last resort, in C: a parallel kernel per op, so every
fusion the evaluator computes runs). The backend follows the inputs' device (host memory: the host backend; CUDA
memory: the CUDA backend) unless one is named. Hand-scheduled kernels are shared between
definitions with the same fusion through one process-wide kernel cache. A
FusionDefinition is not thread-safe; use one per thread.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from . import _capi, _dlpack
from ._runner import CacheRunner, ExecutorRunner
from ._tensor import Scalar, Shape, Tensor
from ._torch_fast import TorchFastPath
from .ops import Ops
from .sched import Sched
from .types import (ARRAY_DTYPE_NAMES, CfuserError, DataType, as_dtype, InternalError, InvalidArgumentError,
                    UnsupportedError, error_for)

_BACKENDS = {"host": _capi.BACKEND_HOST, "cuda": _capi.BACKEND_CUDA}
_compile_lock = threading.Lock()  # the kernel cache is not thread-safe
_cache: Optional[int] = None


def _kernel_cache() -> int:
    global _cache
    if _cache is None:
        _cache = _capi.lib.cf_kernel_cache_create()  # lives as long as the process
    return _cache


def _numpy_name(dt: DataType) -> str:
    return {DataType.Float: "float32", DataType.Double: "float64", DataType.Half: "float16",
            DataType.BFloat16: "bfloat16", DataType.Int: "int64", DataType.Int32: "int32", DataType.Int8: "int8", DataType.UInt32: "uint32",
            DataType.Bool: "bool"}.get(dt, "float32")


def _is_contiguous(array: Any) -> bool:
    """Row-major contiguity, as NumPy, PyTorch, CuPy and JAX say it."""
    if hasattr(array, "is_contiguous"):
        return bool(array.is_contiguous())
    flags = getattr(array, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    return True  # JAX arrays and others without strides are dense


class FusionDefinition:
    """A fusion: define it in a with block (or override definition()), then execute it."""

    def __init__(self, backend: Optional[str] = None) -> None:
        """backend: "host", "cuda", or None to follow the device of the inputs."""
        if backend is not None and backend not in _BACKENDS:
            raise InvalidArgumentError(f"FusionDefinition: unknown backend {backend!r}; use 'host', 'cuda' or None")
        self._backend = _BACKENDS.get(backend) if backend else None
        self._f = _capi.lib.cf_fusion_create()
        if not self._f:
            raise MemoryError("FusionDefinition: out of memory")
        self._open = self._defined = self._user_scheduled = self._frozen = False
        self._auto = False  # frozen unscheduled: define and run
        self._ninputs = 0
        self._scalar_inputs: Dict[int, DataType] = {}  # input index -> dtype (define_scalar inputs)
        self._outputs: List[Tensor] = []
        self._runners: Dict[int, Any] = {}  # per backend: ExecutorRunner or CacheRunner
        self._torch_fast: Optional[TorchFastPath] = None  # set by the first torch CUDA run
        self._last: Any = None  # the runner of the last execute
        self._ptr_arrays: Optional[Tuple[Any, Any]] = None
        self.ops = Ops(self)
        self.sched = Sched(self)
        if type(self).definition is not FusionDefinition.definition:
            with self:
                self.definition()

    # ---- hooks for subclasses, as in nvFuser ---------------------------------------------

    def definition(self) -> None:
        """Override to define the fusion; it runs when the object is made."""

    def schedule(self) -> None:
        """Override to schedule by hand with self.sched; it runs at the first execute."""

    # ---- the definition -------------------------------------------------------------------

    def __enter__(self) -> "FusionDefinition":
        if self._defined or self._open:
            raise InvalidArgumentError("FusionDefinition: defined already (a definition's with block runs once)")
        self._open = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._open, self._defined = False, True

    def __del__(self) -> None:
        lib = getattr(_capi, "lib", None)
        if lib is None or not getattr(self, "_f", None):
            return
        for r in self._runners.values():
            r.destroy()
        lib.cf_fusion_destroy(self._f)
        self._f = None

    def _check_open(self, what: str) -> None:
        if not self._open:
            raise InvalidArgumentError(f"{what}: the definition is closed; ops are made inside "
                                       "`with FusionDefinition() as fd:` (or its definition())")

    def _check_schedulable(self, what: str) -> None:
        if self._open:
            raise InvalidArgumentError(f"{what}: schedule after the definition's with block, not inside it")
        if self._frozen:
            raise InvalidArgumentError(f"{what}: the schedule is frozen by the first execute (or print_kernel)")
        self._user_scheduled = True

    def _tv(self, t: Any, what: str) -> int:
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{what}: expected a Tensor of this definition, got {type(t).__name__}")
        if t.fd is not self:
            raise InvalidArgumentError(f"{what}: {t.name} belongs to another FusionDefinition")
        return t.handle

    def _error(self, what: str) -> CfuserError:
        status = _capi.lib.cf_fusion_status(self._f)
        msg = _capi.lib.cf_fusion_error(self._f).decode()
        return error_for(status, msg) if status else InternalError(f"{what}: failed without a message")

    def _check(self, status: int) -> None:
        if status:
            raise error_for(status, _capi.lib.cf_fusion_error(self._f).decode())

    def _new_tensor(self, what: str, handle: Optional[int], shape: Shape) -> Tensor:
        if not handle:
            raise self._error(what)
        return Tensor(self, handle, shape)

    def define_tensor(self, shape: Union[int, Sequence[int]] = 1,
                      contiguity: Union[None, bool, Sequence[Optional[bool]]] = None,
                      dtype: Union[DataType, str] = DataType.Float) -> Tensor:
        """A fusion input. shape: a rank (sizes read from the inputs at run time), a list
        of -1 (the same), or a list of constant sizes (a size of 1 is a broadcast axis).
        contiguity: None or True for contiguous; any False for arbitrary strides (symbolic
        sizes only)."""
        self._check_open("define_tensor")
        dt = as_dtype(dtype)
        if isinstance(shape, int) and shape < 0:
            raise InvalidArgumentError(f"define_tensor: rank {shape} is negative")
        sizes = [-1] * shape if isinstance(shape, int) else [int(s) for s in shape]
        for d, size in enumerate(sizes):
            if size < -1:
                raise InvalidArgumentError(f"define_tensor: size {size} in dimension {d} is neither -1 (symbolic) "
                                           "nor a size")
        flags = [contiguity] * len(sizes) if contiguity is None or isinstance(contiguity, bool) else list(contiguity)
        if len(flags) != len(sizes):
            raise InvalidArgumentError(f"define_tensor: {len(flags)} contiguity flags for {len(sizes)} dimensions")
        strided = any(c is False for c in flags)
        lib, idx = _capi.lib, self._ninputs
        if all(s == -1 for s in sizes):
            make = lib.cf_tensor_strided if strided else lib.cf_tensor_symbolic
            h = make(self._f, int(dt), len(sizes))
            spec: Shape = tuple((idx, a) for a in range(len(sizes)))
        elif all(s >= 0 for s in sizes) and not strided:
            h = lib.cf_tensor_concrete(self._f, int(dt), len(sizes), (ctypes.c_int64 * max(len(sizes), 1))(*sizes))
            spec = tuple(sizes)
        else:
            raise UnsupportedError(
                f"define_tensor: shape {sizes} with contiguity {flags}: the C API makes a tensor of all-constant "
                "contiguous sizes or all-symbolic (-1) sizes, contiguous or strided; not a mix")
        t = self._new_tensor("define_tensor", h, spec)
        self._check(lib.cf_fusion_add_input(self._f, h))
        self._ninputs += 1
        return t

    def define_tensor_like(self, array: Any, static_sizes: bool = False) -> Tensor:
        """A fusion input matching an array's dtype and rank (nvFuser's from_pytorch):
        symbolic sizes, or its own with static_sizes; strided unless it is contiguous."""
        try:
            shape = tuple(int(s) for s in array.shape)
            dtype = as_dtype(str(array.dtype))
        except AttributeError:
            raise InvalidArgumentError(f"define_tensor_like: a {type(array).__name__} has no shape and dtype") from None
        contiguous = _is_contiguous(array)
        if static_sizes and not contiguous:
            raise UnsupportedError("define_tensor_like: static sizes need a contiguous array")
        return self.define_tensor(list(shape) if static_sizes else len(shape), contiguous, dtype)

    from_pytorch = define_tensor_like

    def define_scalar(self, value: Union[int, float, bool, None, DataType, str] = None,
                      dtype: Optional[Union[DataType, str]] = None) -> Union[Scalar, Tensor]:
        """With a value: a constant for add, sub, mul and div. Without one
        (fd.define_scalar(DataType.Float) or define_scalar(dtype=...)): a scalar fusion
        input (cf_scalar_input), a 0-d tensor that binary ops broadcast; execute takes its
        value, in input order, as a Python number or a 0-d array."""
        self._check_open("define_scalar")
        if isinstance(value, (DataType, str)) and dtype is None:
            value, dtype = None, value
        if value is None:
            dt = as_dtype(dtype if dtype is not None else DataType.Double)
            h = _capi.lib.cf_scalar_input(self._f, int(dt))
            t = self._new_tensor("define_scalar", h, ())
            self._scalar_inputs[self._ninputs] = dt
            self._ninputs += 1
            return t
        if dtype is None:
            dt = DataType.Bool if isinstance(value, bool) else DataType.Int if isinstance(value, int) else DataType.Double
        else:
            dt = as_dtype(dtype)
        return Scalar(value, dt)

    def add_output(self, t: Tensor) -> None:
        """Marks t as an output; execute returns outputs in the order they were added."""
        self._check_open("add_output")
        self._check(_capi.lib.cf_fusion_add_output(self._f, self._tv(t, "add_output")))
        self._outputs.append(t)

    # ---- compiling --------------------------------------------------------------------------

    def _freeze_schedule(self) -> None:
        """Runs an overridden schedule(); a definition that then has no fd.sched call is
        unscheduled: define and run."""
        if self._frozen:
            return
        if not self._user_scheduled and type(self).schedule is not FusionDefinition.schedule:
            self.schedule()
        self._auto = not self._user_scheduled
        self._frozen = True

    def _scalar_arrays(self, inputs: Sequence[Any]) -> List[Any]:
        """Scalar inputs given as Python numbers become 0-d arrays of their dtype, in the
        library and on the device of the first tensor input (NumPy when there is none)."""
        out = list(inputs)
        like = next((x for i, x in enumerate(inputs) if i not in self._scalar_inputs), None)
        for i, dt in self._scalar_inputs.items():
            if hasattr(out[i], "__dlpack__"):
                continue
            if not isinstance(out[i], (int, float, bool)):
                raise InvalidArgumentError(f"execute: input {i} is a scalar input; give a number or a 0-d array, "
                                           f"not a {type(out[i]).__name__}")
            name = _numpy_name(dt)
            if like is not None and type(like).__module__.startswith("torch"):
                import torch
                out[i] = torch.tensor(out[i], dtype=getattr(torch, name), device=like.device)
            else:
                import numpy
                out[i] = numpy.array(out[i], dtype=name)
        return out

    def _check_ready(self, what: str) -> None:
        if self._open:
            raise InvalidArgumentError(f"{what}: the definition is still open; call it after its with block")
        if not self._defined:
            raise InvalidArgumentError(f"{what}: nothing is defined yet")
        if not self._outputs:
            raise InvalidArgumentError(f"{what}: the definition has no outputs; call fd.add_output(tensor)")

    def _runner(self, device_type: int) -> Any:
        backend = self._backend
        if backend is None:
            if device_type in (_capi.KDLCPU, _capi.KDLCUDAHOST):
                backend = _capi.BACKEND_HOST
            elif device_type in (_capi.KDLCUDA, _capi.KDLCUDAMANAGED):
                backend = _capi.BACKEND_CUDA
            else:
                raise InvalidArgumentError(f"execute: input 0 is on DLPack device type {device_type}; cfuser runs "
                                           "on host memory (kDLCPU) or CUDA memory (kDLCUDA)")
        r = self._runners.get(backend)
        if r is None:
            self._freeze_schedule()
            if self._auto:
                r = CacheRunner(self._f, backend)
            else:
                r = ExecutorRunner(self._compile(backend), backend, "user")
            self._runners[backend] = r
        return r

    def _compile(self, backend: int) -> int:
        lib = _capi.lib
        with _compile_lock:
            opts = _capi.ExecutorOptions(backend, None, False, _kernel_cache())
            e = lib.cf_executor_create(ctypes.byref(opts))
            if not e:
                raise MemoryError("execute: out of memory creating an executor")
            status = lib.cf_executor_compile(e, self._f)
            if status:
                err = error_for(status, lib.cf_executor_error(e).decode())
                lib.cf_executor_destroy(e)
                raise err
        return e

    # ---- running ------------------------------------------------------------------------------

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        """Runs the fusion on a list of DLPack arrays (one per define_tensor, in order) and
        returns its outputs as arrays of the first input's library, on its device.

        PyTorch CUDA inputs run asynchronously on torch's current stream, like a torch op:
        the outputs are ready when that stream reaches them, and a fault of the kernel
        itself raises from a later execute on the same definition. Every other input runs
        synchronously (complete on return)."""
        self._check_ready("execute")
        if hasattr(inputs, "__dlpack__") or not isinstance(inputs, (list, tuple)):
            raise InvalidArgumentError(f"execute: inputs must be a list of arrays, got a {type(inputs).__name__}")
        n = len(inputs)
        if n != self._ninputs:
            raise InvalidArgumentError(f"execute: expected {self._ninputs} inputs, got {n}")
        if self._scalar_inputs:
            inputs = self._scalar_arrays(inputs)
        in_arr, out_arr = self._arrays()
        fast = self._torch_fast
        if fast is not None and n:
            outs, status = fast.run(inputs, in_arr, out_arr)
            if outs is not None:
                self._last = fast.runner
                if status:
                    return self._failed(status, inputs)
                return outs
        keep: List[object] = []  # the capsules: alive until the run is over
        device = _capi.KDLCPU
        for i, x in enumerate(inputs):
            capsule, in_arr[i], dev = _dlpack.export(x, "input", i)
            device = dev if i == 0 else device
            keep.append(capsule)
        runner = self._runner(device)
        fw = _dlpack.framework_of(inputs[0]) if n else _dlpack.GENERIC
        stream = self._stream(fw, inputs, device)
        if stream is None:
            self._order_streams(inputs)
        results: List[Any] = [self._allocate(fw, t, inputs) for t in self._outputs]
        for i, r in enumerate(results):
            if r is None:
                out_arr[i] = None
            else:
                capsule, out_arr[i], _ = _dlpack.export(r, "output", i)
                keep.append(capsule)
        if stream is None:
            status = runner.run(runner.handle, n, in_arr, len(results), out_arr)
        else:
            status = runner.run_async(runner.handle, stream, n, in_arr, len(results), out_arr)
        self._last = runner
        if status:
            return self._failed(status, inputs)
        if stream is not None and self._torch_fast is None:
            self._torch_fast = self._make_torch_fast()
        for i, r in enumerate(results):
            if r is None:  # cfuser allocated it: the library adopts it
                results[i] = fw.adopt(_dlpack.DLPackTensor(out_arr[i]))
        return results

    def _failed(self, status: int, inputs: Sequence[Any]) -> List[Any]:
        """A failed run raises cfuser's error (define and run has no fallback of its own in
        Python: the C library's last resort runs every fusion the evaluator computes)."""
        raise self._run_error(status)

    def _run_error(self, status: int) -> Exception:
        msg = self._last.error()
        return error_for(status, msg.replace("make it with cf_tensor_strided", "define it with contiguity=False"))

    def _make_torch_fast(self) -> Optional[TorchFastPath]:
        """The fast path of later torch CUDA runs, once one has run (None where an output
        dtype has no torch twin)."""
        torch = sys.modules.get("torch")
        rules = []
        for t in self._outputs:
            tdtype = getattr(torch, ARRAY_DTYPE_NAMES[t.dtype], None)
            if tdtype is None:
                return None
            rules.append((tuple(t.shape), tdtype))
        return TorchFastPath(torch, rules, self._last) if torch is not None and self._backend in (None, _capi.BACKEND_CUDA) else None

    @staticmethod
    def _stream(fw: _dlpack.Framework, inputs: Sequence[Any], device: int) -> Optional[int]:
        """The stream to launch on asynchronously: the library's current one when every
        input is a CUDA array of that one library; None: run synchronously."""
        if fw.stream is None or device not in (_capi.KDLCUDA, _capi.KDLCUDAMANAGED):
            return None
        if any(_dlpack.framework_of(x) is not fw for x in inputs):
            return None
        return fw.stream(inputs[0])

    @staticmethod
    def _order_streams(inputs: Sequence[Any]) -> None:
        """Before a synchronous run: each library orders its pending work (once per library)."""
        ordered = set()
        for x in inputs:
            xfw = _dlpack.framework_of(x)
            if xfw.before_run is not None and xfw.name not in ordered:
                ordered.add(xfw.name)
                xfw.before_run(x)

    def _arrays(self) -> Tuple[Any, Any]:
        """The C pointer arrays of execute, made once (a FusionDefinition is one thread's)."""
        if self._ptr_arrays is None:
            self._ptr_arrays = (_dlpack.pointer_array([None] * self._ninputs),
                                _dlpack.pointer_array([None] * len(self._outputs)))
        return self._ptr_arrays

    @staticmethod
    def _allocate(fw: _dlpack.Framework, t: Tensor, inputs: Sequence[Any]) -> Any:
        """An output array of fw shaped as t, or None for cfuser to allocate (also when the
        inputs' shapes do not fit: then cfuser's checks report it)."""
        if fw.empty is None:
            return None
        try:
            shape = tuple(e if isinstance(e, int) else int(inputs[e[0]].shape[e[1]]) for e in t.shape)
        except (IndexError, AttributeError, TypeError):
            return None
        return fw.empty(shape, t.dtype, inputs[0])

    def _last_executors(self, what: str) -> List[int]:
        if self._last is None:
            raise InvalidArgumentError(f"{what}: nothing was executed yet")
        return self._last.executors()

    def _segment(self, what: str, segment: Optional[int]) -> int:
        executors = self._last_executors(what)
        i = len(executors) - 1 if segment is None else segment
        if not 0 <= i < len(executors):
            raise InvalidArgumentError(f"{what}: segment {segment} out of range: the last execute ran "
                                       f"{len(executors)} kernel(s)")
        return executors[i]

    def last_launch_params(self, segment: Optional[int] = None) -> Dict[str, Any]:
        """{"grid": (x, y, z), "block": (x, y, z), "smem": bytes} of the last execute's
        kernel (of segment i when define and run cut the fusion; by default the last)."""
        p = _capi.lib.cf_executor_last_launch_params(self._segment("last_launch_params", segment))
        return {"grid": tuple(p.grid), "block": tuple(p.block), "smem": int(p.smem)}

    def kernel_source(self, segment: Optional[int] = None) -> str:
        """The whole generated source (CUDA C++ or host C) of the last execute's kernel; of
        every segment's, one after the other, when the fusion ran in segments (or of
        segment i)."""
        if segment is not None:
            return (_capi.lib.cf_executor_source(self._segment("kernel_source", segment)) or b"").decode()
        return "\n".join((_capi.lib.cf_executor_source(e) or b"").decode()
                         for e in self._last_executors("kernel_source"))

    def last_schedulers(self) -> List[str]:
        """The scheduler of each kernel of the last execute, in the order they ran
        ("reduction", "inner_persistent", "pointwise", ..., "fallback" for an op no
        other scheduler takes; "user" for a definition scheduled by hand)."""
        if self._last is None:
            raise InvalidArgumentError("last_schedulers: nothing was executed yet")
        return self._last.schedulers()

    def cache_info(self) -> Dict[str, Any]:
        """The define-and-run cache of the last execute's backend: {"entries": input
        signatures compiled, "kernels": kernels compiled for them, "hits": calls that
        found their signature, "misses": calls that compiled, "schedulers": of the last
        call's segments}."""
        if self._last is None or not self._last.cached:
            raise InvalidArgumentError("cache_info: the last execute did not run by define and run (the "
                                       "definition is scheduled by hand, or has not run)")
        return self._last.info()

    # ---- pictures and reproducers (cfuser/_show.py) ------------------------------------------------

    def show(self, what: str = "dataflow", format: str = "svg") -> Any:
        """A picture of the dataflow (or, what="segments", of the last execute's define-and-run
        segments) that Jupyter renders; .text is the SVG (or DOT, format="dot")."""
        from ._show import show
        return show(self, what, format)

    def repro(self, inputs: Optional[Sequence[Any]] = None, path: Optional[str] = None) -> str:
        """A standalone C reproducer of this definition (and of inputs' shapes and dtypes), for a
        bug report; written to path when given. See include/cfuser/repro.h."""
        from ._show import repro
        return repro(self, inputs, path)

    # ---- printing ------------------------------------------------------------------------------

    def _print(self, fn: Any, *args: Any) -> str:
        status, text = _capi.print_to_string(fn, self._f, *args)
        self._check(status)
        return text

    def math_text(self) -> str:
        """The math in nvFuser's notation: inputs, outputs, one line per expression."""
        return self._print(_capi.lib.cf_fusion_print_math)

    def kernel_text(self) -> str:
        """The CUDA kernel execute runs (freezes the schedule, as execute does). For a
        definition run by define and run: the kernels of the last execute, each segment's
        after a comment line naming it when there are several."""
        self._check_ready("print_kernel")
        self._freeze_schedule()
        r = self._last
        if r is not None and r.cached:
            n = len(r.executors())
            texts = []
            for i in range(n):
                text = r.kernel_text(i)
                if text is None:
                    raise InternalError(f"print_kernel: {r.error()}")
                texts.append(text if n == 1 else f"// segment {i} of {n}: {r.schedulers()[i]}\n{text}")
            return "\n".join(texts)
        if self._auto:
            raise InvalidArgumentError("print_kernel: an unscheduled definition is scheduled for the input shapes "
                                       "of each execute (define and run); call execute first, or schedule it by "
                                       "hand with fd.sched")
        return self._print(_capi.lib.cf_fusion_print_kernel)

    def tensor_text(self, t: Tensor) -> str:
        """One tensor in nvFuser's notation, e.g. T2_l_float[iS4{i0}]."""
        return self._print(_capi.lib.cf_tv_print, self._tv(t, "tensor_text"))

    def print_math(self, file: Optional[TextIO] = None) -> None:
        """Prints math_text() (to standard output by default)."""
        print(self.math_text(), end="", file=file or sys.stdout)

    def print_kernel(self, file: Optional[TextIO] = None) -> None:
        """Prints kernel_text() (to standard output by default)."""
        print(self.kernel_text(), end="", file=file or sys.stdout)
