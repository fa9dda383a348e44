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
FusionDefinition may run from several threads at once (each execute keeps its arguments to
itself; the runs of one backend take turns); define and schedule it from one thread.
nvFuser's spellings (define_tensor shapes and contiguity, Scalars, define_vector,
add_output with alias_input or stride_order) are in _define.py, nvFuser's introspection
(fusion_ir, last_cuda_code, segment, inputs/outputs/extents, debug_output) in
_introspect.py, and what one execute builds in _execute.py.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

from . import _capi, _dlpack, _execute
from ._define import DefineMixin
from ._introspect import IntrospectMixin
from ._runner import CacheRunner, ExecutorRunner
from ._tensor import Shape, Tensor
from ._torch_fast import TorchFastPath
from .ops import Ops
from .sched import Sched
from .types import (ARRAY_DTYPE_NAMES, CfuserError, DataType, InternalError, InvalidArgumentError,
                    NotDefinedError, PACKED_DTYPES, UnsupportedError, error_for)

_BACKENDS = {"host": _capi.BACKEND_HOST, "cuda": _capi.BACKEND_CUDA}
_compile_lock = threading.Lock()  # the kernel cache is not thread-safe
_cache: Optional[_capi.KernelCacheHandle] = None


def _kernel_cache() -> _capi.KernelCacheHandle:
    global _cache
    if _cache is None:
        _cache = _capi.lib.cf_kernel_cache_create()  # lives as long as the process
    return _cache


class FusionDefinition(DefineMixin, IntrospectMixin):
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
        self._init_define()
        self._runners: Dict[int, Any] = {}  # per backend: ExecutorRunner or CacheRunner
        self._runner_lock = threading.Lock()  # making runners (compiles) from several threads
        self._torch_fast: Optional[TorchFastPath] = None  # set by the first torch CUDA run
        self._plain = False  # execute's arguments and results are the C fusion's one to one (frozen)
        self._last: Any = None  # the runner of the last execute
        self._debug_output: Optional[str] = None
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
        for r in list(self._runners.values()):
            r.destroy()
        lib.cf_fusion_destroy(self._f)
        self._f = None

    def _check_open(self, what: str) -> None:
        if not self._open:
            raise InvalidArgumentError(f"{what}: Attempting to add to a completed definition! (the definition is "
                                       "closed; ops are made inside `with FusionDefinition() as fd:` or its "
                                       "definition())")

    def _check_schedulable(self, what: str) -> None:
        if self._open:
            raise InvalidArgumentError(f"{what}: schedule after the definition's with block, not inside it")
        if self._frozen:
            raise InvalidArgumentError(f"{what}: the schedule is frozen by the first execute (or print_kernel)")
        self._user_scheduled = True

    def _own(self, t: Any, what: str) -> Tensor:
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{what}: expected a Tensor of this definition, got {type(t).__name__}")
        if t.fd is not self:
            raise InvalidArgumentError(f"{what}: {t.name} belongs to another FusionDefinition")
        return t

    def _tv(self, t: Any, what: str) -> _capi.TvHandle:
        return self._own(t, what).handle

    def _error(self, what: str) -> CfuserError:
        status = _capi.lib.cf_fusion_status(self._f)
        msg = _capi.lib.cf_fusion_error(self._f).decode()
        return error_for(status, msg) if status else InternalError(f"{what}: failed without a message")

    def _check(self, status: int) -> None:
        if status:
            raise error_for(status, _capi.lib.cf_fusion_error(self._f).decode())

    def _new_tensor(self, what: str, handle: Optional[_capi.TvHandle], extents: Shape, cls: type = Tensor) -> Tensor:
        if not handle:
            raise self._error(what)
        return cls(self, handle, extents)

    # ---- compiling --------------------------------------------------------------------------

    def _freeze_schedule(self) -> None:
        """Runs an overridden schedule(); a definition that then has no fd.sched call is
        unscheduled: define and run."""
        if self._frozen:
            return
        if not self._user_scheduled and type(self).schedule is not FusionDefinition.schedule:
            self.schedule()
        self._auto = not self._user_scheduled
        self._plain = all(slot[0] == "user" for slot in self._c_inputs) and \
            all(spec is None or not spec.view for spec in self._c_specs) and \
            [o[:2] for o in self._outputs] == [("c", i) for i in range(len(self._c_outputs))] and \
            all(o[2] is None for o in self._outputs) and not self._aliases
        self._frozen = True


    def _check_ready(self, what: str) -> None:
        if self._open:
            raise InvalidArgumentError(f"{what}: the definition is still open; call it after its with block")
        if not self._defined:
            raise NotDefinedError(f"{what}: nothing is defined yet (define the fusion in a with block, or override "
                                  "definition())")
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
            with self._runner_lock:
                r = self._runners.get(backend)
                if r is None:
                    self._freeze_schedule()
                    if self._auto:
                        r = CacheRunner(self._f, backend)
                    else:
                        r = ExecutorRunner(self._compile(backend), backend, "user")
                    self._runners[backend] = r
        return r

    def _compile(self, backend: int) -> _capi.ExecutorHandle:
        lib = _capi.lib
        with _compile_lock:
            opts = _capi.ExecutorOptions(backend, None, False, _kernel_cache().value)
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

    def execute(self, inputs: Sequence[Any], *, device: Any = None, capture_debug_output: bool = False,
                **options: Any) -> List[Any]:
        """Runs the fusion on a list of inputs, one per define_tensor (an array: NumPy,
        PyTorch, CuPy, JAX or any DLPack one), define_scalar (a number or a 0-d array) and
        define_vector (a list of ints) call, in order, and returns its outputs as arrays of
        the first tensor input's library, on its device (NumPy when there is none).

        PyTorch CUDA inputs run asynchronously on torch's current stream, like a torch op:
        the outputs are ready when that stream reaches them, and a fault of the kernel
        itself raises from a later execute on the same definition. Every other input runs
        synchronously (complete on return). capture_debug_output=True keeps what the
        library prints on standard error during the call (CFUSER_DUMP's dumps) for
        debug_output(). device ("cuda", "cuda:0", 0, a torch.device, or "cpu") says where a
        definition without tensor inputs runs (iota, full, rand: outputs of torch on CUDA,
        NumPy on the host; default the host); with tensor inputs their device decides.
        profile, print_repro and nvFuser's other options are accepted and ignored (cfuser
        runs on device 0)."""
        self._check_ready("execute")
        if hasattr(inputs, "__dlpack__") or not isinstance(inputs, (list, tuple)):
            raise InvalidArgumentError(f"execute: inputs must be a list of arrays, got a {type(inputs).__name__}")
        if len(inputs) != self._ninputs:
            inputs = self._regroup_vectors(inputs)
        if len(inputs) != self._ninputs:
            raise InvalidArgumentError(f"execute: expected {self._ninputs} inputs, got {len(inputs)}")
        if capture_debug_output:
            return self._captured(inputs)
        fast = self._torch_fast
        if fast is not None and inputs:
            in_arr = (ctypes.c_void_p * len(inputs))()
            out_arr = (ctypes.c_void_p * len(self._c_outputs))()
            with fast.runner.lock:
                outs, status = fast.run(inputs, in_arr, out_arr)
                if outs is not None:
                    self._last = fast.runner
                    if status:
                        return self._failed(status, inputs, fast.runner)
            if outs is not None:
                return outs
        return self._execute(inputs, device)

    def _regroup_vectors(self, inputs: Sequence[Any]) -> Sequence[Any]:
        """define_vector(n) inputs given flat (n numbers in its place, as nvFuser also
        takes them) grouped back into lists; inputs unchanged when they do not fit."""
        out, k = [], 0
        for kind, x in self._inputs:
            if k >= len(inputs):
                return inputs
            if kind == "vector" and not isinstance(inputs[k], (list, tuple)):
                n = len(x.items)
                out.append(list(inputs[k:k + n]))
                k += n
            else:
                out.append(inputs[k])
                k += 1
        return out if k == len(inputs) else inputs

    def _execute(self, inputs: Sequence[Any], device_hint: Any = None) -> List[Any]:
        if not self._c_outputs:  # every output is an input (nvFuser returns it): nothing to run
            return _execute.finish(self, _dlpack.GENERIC, inputs, [])
        args = _execute.c_arguments(self, inputs)
        like = _execute.first_tensor(args, self._c_scalars)
        hinted = like is None and device_hint is not None and self._backend is None
        if hinted:  # where a definition without tensor inputs runs: an empty array of that device
            like = _execute.device_like(device_hint)
        _execute.scalar_arrays(args, self._c_scalars, like, self._host_scalars)
        n, nout = len(args), len(self._c_outputs)
        in_arr, out_arr = (ctypes.c_void_p * max(n, 1))(), (ctypes.c_void_p * max(nout, 1))()
        keep: List[object] = []  # capsules and views: alive until the run is over
        device = _execute.export_inputs(self, args, in_arr, keep)
        if hinted and like is not None:
            device = _capi.KDLCUDA
        runner = self._runner(device)
        fw = _dlpack.framework_of(like) if like is not None else self._default_framework(runner.backend)
        stream = self._stream(fw, [args[i] for i in range(n) if i not in self._c_scalars], device) \
            if like is not None else None
        if stream is None:
            self._order_streams(args)
        results = _execute.allocate(self, fw, inputs, like)
        _execute.export_outputs(self, results, out_arr, keep)
        with runner.lock:
            if stream is None:
                status = runner.run(runner.handle, n, in_arr, nout, out_arr)
            else:
                status = runner.run_async(runner.handle, stream, n, in_arr, nout, out_arr)
            self._last = runner
            if status:
                return self._failed(status, inputs, runner)
        if stream is not None and self._torch_fast is None and self._plain:
            self._torch_fast = self._make_torch_fast()
        for i, r in enumerate(results):
            if r is None:  # cfuser allocated it: the library adopts it
                results[i] = _dlpack.adopt(fw, out_arr[i], f"execute: output {i}")
        return _execute.finish(self, fw, inputs, results)

    def _default_framework(self, backend: int) -> _dlpack.Framework:
        """The library of outputs when no input is a tensor: torch on the CUDA backend,
        else NumPy (where installed)."""
        name = "torch" if backend == _capi.BACKEND_CUDA else "numpy"
        try:
            _dlpack._module(name)
        except ImportError:
            return _dlpack.GENERIC
        return _dlpack.FRAMEWORKS[name]

    def _failed(self, status: int, inputs: Sequence[Any], runner: Any) -> List[Any]:
        """A failed run (the runner's lock held) raises cfuser's error with the runner's
        message (define and run has no fallback in Python: the C library's last resort runs
        every fusion the evaluator computes)."""
        msg = runner.error()
        return self._raise(error_for(status, msg.replace("make it with cf_tensor_strided",
                                                          "define it with contiguity=False")))

    @staticmethod
    def _raise(err: Exception) -> List[Any]:
        raise err

    def _make_torch_fast(self) -> Optional[TorchFastPath]:
        """The fast path of later torch CUDA runs, once one has run (None where an output
        dtype has no torch twin or an output size is an expression of the inputs)."""
        torch = sys.modules.get("torch")
        if any(spec is not None and spec.dtype in PACKED_DTYPES for spec in self._c_specs):
            return None  # inputs of bytes of two elements: the general path counts them in elements
        rules = []
        for t in self._c_outputs:
            tdtype = getattr(torch, ARRAY_DTYPE_NAMES[t.dtype], None)
            if tdtype is None or not all(type(e) in (int, tuple) for e in t.extents):
                return None  # sizes computed by an expression: only the general path knows them
            rules.append((tuple(t.extents), tdtype))
        return TorchFastPath(torch, rules, self._last) if torch is not None and self._backend in (None, _capi.BACKEND_CUDA) else None

    @staticmethod
    def _stream(fw: _dlpack.Framework, inputs: Sequence[Any], device: int) -> Optional[int]:
        """The stream to launch on asynchronously: the library's current one when every
        input is a CUDA array of that one library; None: run synchronously."""
        if fw.stream is None or device not in (_capi.KDLCUDA, _capi.KDLCUDAMANAGED) or not inputs:
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
