"""The reference fusions defined and run from Python (cfuser.FusionDefinition) on PyTorch
CUDA tensors, next to torch eager and torch.compile on the same tensors, in one run; and
the Python overhead of a cached execute (target: under 20 us). The definitions are not
scheduled: execute runs them by define and run (cf_fusion_cache), each with the automatic
schedulers (softmax and layer_norm: the inner persistent scheduler, or reduction and
pointwise segments for long rows).

    python3 bench/python_fusions.py                      # the GPU run: torch CUDA tensors
    python3 bench/python_fusions.py --library numpy      # the host backend (no GPU needed)

Lines printed, one per fusion, size and contender (medians of --iters runs after warm-ups):
    <fusion> N=<elements> <contender> time_us=<t> GB/s=<bytes moved / t>
and then:
    overhead: execute_us=<t> c_run_us=<t> python_overhead_us=<t> python_side_us=<t> (target < 20 us)
Every contender's time on torch is the CUDA-event time of its GPU work (as in
bench/pointwise_torch.py): fd.execute on torch CUDA tensors launches asynchronously on
torch's current stream, as torch's ops do (on NumPy, wall-clock: the host backend runs
synchronously). The overhead is execute's wall-clock minus that of the C call execute
makes (cf_fusion_execute_async on torch's stream, cf_fusion_execute on NumPy) called directly
from ctypes with the same, already exported tensors, on a small size where the kernel is
short; python_side_us is execute's wall-clock with the C call stubbed out (its Python
work alone, a check that does not depend on the kernel's noise).
Every contender's result is checked against torch eager's (or
NumPy's) before it is timed; a contender that fails (torch.compile without a compiler, say)
prints its error and the run goes on.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

try:
    import cfuser
except ImportError as e:  # run from a checkout: use its python/ package
    if "libcfuser" in str(e):
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
    import cfuser

from cfuser import DataType, FusionDefinition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/, when imported from elsewhere
import torch_common  # noqa: E402

# ---- the reference fusions ---------------------------------------------------------------


def relu_mul_add(fd: FusionDefinition) -> None:
    """bench/pointwise.c's work: out = relu(a * b + a)."""
    a, b = fd.define_tensor(1), fd.define_tensor(1)
    fd.add_output(fd.ops.relu(a * b + a))


def bias_gelu(fd: FusionDefinition) -> None:
    """out = gelu(x + bias) with bias broadcast over rows: x [rows, 1024], bias [1024]."""
    x, bias = fd.define_tensor(2), fd.define_tensor(1)
    fd.add_output(fd.ops.gelu(x + fd.ops.broadcast(bias, [True, False])))


def softmax(fd: FusionDefinition) -> None:
    """out = softmax(x, -1), x [rows, 4096] (N=2**26: 16384 x 4096)."""
    x = fd.define_tensor(2)
    e = fd.ops.exp(x - fd.ops.max(x, -1, keepdim=True))
    fd.add_output(e / fd.ops.sum(e, -1, keepdim=True))


def layer_norm(fd: FusionDefinition) -> None:
    """out = layer_norm(x, weight, bias, eps=1e-5) over rows of 4096: x [rows, 4096]."""
    x, w, b = fd.define_tensor(2), fd.define_tensor(1), fd.define_tensor(1)
    var, mean = fd.ops.var_mean(x, 1, correction=0, keepdim=True)
    y = (x - mean) * fd.ops.rsqrt(var + 1e-5)
    fd.add_output(y * fd.ops.broadcast(w, [True, False]) + fd.ops.broadcast(b, [True, False]))


class Fusion:
    """A reference fusion: its definition, its inputs for n elements, and the same math in
    the array library's namespace (for eager, torch.compile and the check)."""

    def __init__(self, name: str, define: Callable[[FusionDefinition], None],
                 inputs: Callable[[Any, int], List[Any]], math: Callable[[Any, List[Any]], Any],
                 bytes_per_element: int, tol: float = 1e-5) -> None:
        self.name, self.define, self.inputs, self.math = name, define, inputs, math
        self.bytes_per_element, self.tol = bytes_per_element, tol


def _rand(lib: "ArrayLib", shape: Tuple[int, ...]) -> Any:
    return lib.rand(shape)


FUSIONS: Dict[str, Fusion] = {
    "relu_mul_add": Fusion("relu_mul_add", relu_mul_add,
                           lambda lib, n: [_rand(lib, (n,)), _rand(lib, (n,))],
                           lambda xp, t: xp.relu(t[0] * t[1] + t[0]), 12),
    "bias_gelu": Fusion("bias_gelu", bias_gelu,
                        lambda lib, n: [_rand(lib, (max(n // 1024, 1), 1024)), _rand(lib, (1024,))],
                        lambda xp, t: xp.gelu(t[0] + t[1]), 8),
    "softmax": Fusion("softmax", softmax, lambda lib, n: [_rand(lib, (max(n // 4096, 1), 4096))],
                      lambda xp, t: xp.softmax(t[0], -1), 8),
    "layer_norm": Fusion("layer_norm", layer_norm,
                         lambda lib, n: [_rand(lib, (max(n // 4096, 1), 4096)), _rand(lib, (4096,)), _rand(lib, (4096,))],
                         lambda xp, t: xp.layer_norm(t[0], (t[0].shape[-1],), t[1], t[2], eps=1e-5), 8, 1e-4),
}

# ---- array libraries -----------------------------------------------------------------------


class ArrayLib:
    """torch on CUDA (the real run) or numpy on the host backend (a check that runs here)."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "torch":
            try:
                import torch
            except ImportError as e:
                raise SystemExit(f"bench: torch is not installed ({e}); use --library numpy for the host backend")
            if not torch.cuda.is_available():
                raise SystemExit("bench: torch sees no CUDA device (use --library numpy for the host backend)")
            self.torch = torch
            self.gen = torch.Generator(device="cuda").manual_seed(0)
        else:
            import numpy

            self.np = numpy
            self.gen = numpy.random.default_rng(0)

    def rand(self, shape: Tuple[int, ...]) -> Any:
        if self.name == "torch":
            return self.torch.rand(shape, device="cuda", generator=self.gen) * 2 - 1
        return (self.gen.random(shape, dtype=self.np.float32) * 2 - 1).astype(self.np.float32)

    @property
    def xp(self) -> Any:
        """relu and gelu (erf form, as cfuser's) in this library."""
        if self.name == "torch":
            return self.torch.nn.functional  # a module: what torch.compile traces best
        import math

        np = self.np
        erf = np.vectorize(math.erf, otypes=[np.float32])
        def softmax(x: Any, axis: int) -> Any:
            e = np.exp(x - x.max(axis, keepdims=True))
            return e / e.sum(axis, keepdims=True)

        def layer_norm(x: Any, shape: Any, w: Any, b: Any, eps: float) -> Any:
            y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + np.float32(eps))
            return (y * w + b).astype(np.float32)

        return argparse.Namespace(relu=lambda x: np.maximum(x, 0),
                                  gelu=lambda x: (0.5 * x * (1 + erf(x / np.float32(math.sqrt(2))))).astype(np.float32),
                                  softmax=softmax, layer_norm=layer_norm)

    def sync(self) -> None:
        if self.name == "torch":
            self.torch.cuda.synchronize()

    def close(self, got: Any, want: Any, tol: float = 1e-5) -> Optional[str]:
        """None when got matches want (float32 tolerances), else what differs."""
        if self.name == "torch":
            ok = self.torch.allclose(got, want, rtol=tol, atol=tol)
            return None if ok else f"max |diff| {(got - want).abs().max().item():.3g}"
        ok = self.np.allclose(got, want, rtol=tol, atol=tol)
        return None if ok else f"max |diff| {float(abs(got - want).max()):.3g}"

# ---- timing --------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]  # as torch_common.median_us takes it


def wall_us(fn: Callable[[], Any], iters: int, lib: ArrayLib, warmup: int = 5) -> float:
    """Median wall-clock of fn in us: the CPU cost of a call (launches on torch are asynchronous)."""
    for _ in range(warmup):
        fn()
    lib.sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return median(times)


def event_us(fn: Callable[[], Any], iters: int, lib: ArrayLib, warmup: int = 5) -> float:
    """Median CUDA-event time of fn's GPU work in us (torch); wall-clock on the host."""
    if lib.name != "torch":
        return wall_us(fn, iters, lib, warmup)
    return torch_common.median_us(fn, iters, warmup)


def contenders(fusion: Fusion, lib: ArrayLib, fd: FusionDefinition, compiled: Optional[Any]) -> Dict[str, Any]:
    xp = lib.xp
    out = {"cfuser": (lambda ins: fd.execute(ins)[0], event_us),
           "torch eager" if lib.name == "torch" else "numpy": (lambda ins: fusion.math(xp, ins), event_us)}
    if compiled is not None:
        out["torch.compile"] = (compiled, event_us)
    return out


def run_fusion(fusion: Fusion, lib: ArrayLib, sizes: Sequence[int], iters: int, use_compile: bool) -> int:
    """Prints one line per size and contender; returns the number of failed contenders."""
    with FusionDefinition() as fd:
        fusion.define(fd)
    compiled = None
    if use_compile and lib.name == "torch":
        xp = lib.xp
        compiled = lib.torch.compile(lambda ins: fusion.math(xp, ins))
    failures = 0
    for n in sizes:
        ins = fusion.inputs(lib, n)
        numel = int(ins[0].numel()) if lib.name == "torch" else int(ins[0].size)
        want = fusion.math(lib.xp, ins)
        for name, (fn, timer) in contenders(fusion, lib, fd, compiled).items():
            try:
                diff = lib.close(fn(ins), want, fusion.tol)
                if diff:
                    raise RuntimeError(f"wrong result: {diff}")
                t = timer(lambda: fn(ins), iters, lib)
            except Exception as e:  # one contender failing must not end the run
                print(f"{fusion.name} N={numel} {name} failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                failures += name == "cfuser"
                continue
            print(f"{fusion.name} N={numel} {name} time_us={t:.1f} "
                  f"GB/s={fusion.bytes_per_element * numel / t / 1e3:.0f}", flush=True)
        del ins, want
        if lib.name == "torch":
            lib.torch.cuda.empty_cache()
    return failures


class _StubRun:
    """Stands for the C call of a definition's runner (cf_fusion_execute(_async), or
    cf_executor_run(_async) for one scheduled by hand): returns CF_OK at once, so that
    execute's own Python work (exports, output allocation, the pointer arrays) can be timed
    alone."""

    NAMES = ("run", "run_async")

    def __init__(self, runner: Any) -> None:
        self.runner, self.saved = runner, {}

    def __enter__(self) -> None:
        for name in self.NAMES:
            self.saved[name] = getattr(self.runner, name)
            setattr(self.runner, name, lambda *args: 0)

    def __exit__(self, *exc: object) -> None:
        for name in self.NAMES:
            setattr(self.runner, name, self.saved[name])


def overhead(lib: ArrayLib, iters: int, n: int = 1024) -> Tuple[float, float, float]:
    """(execute's wall-clock, the wall-clock of the C call it makes (cf_fusion_execute(_async):
    a cached define-and-run call), execute's with that call stubbed out) in us, medians."""
    from cfuser import _capi, _dlpack

    with FusionDefinition() as fd:
        relu_mul_add(fd)
    ins = FUSIONS["relu_mul_add"].inputs(lib, n)
    out = fd.execute(ins)[0]
    t_execute = wall_us(lambda: fd.execute(ins), iters, lib, warmup=50)
    keep = [_dlpack.export(x, "input", i) for i, x in enumerate(ins + [out])]
    in_ptrs = _dlpack.pointer_array([k[1] for k in keep[:2]])
    out_ptrs = _dlpack.pointer_array([keep[2][1]])
    runner = fd._last
    handle = runner.handle
    stream = fd._stream(_dlpack.framework_of(ins[0]), ins, _capi.KDLCUDA) if lib.name == "torch" else None
    run, run_async = runner.run, runner.run_async

    def c_run() -> None:  # the C call execute makes, with the same arguments
        status = run(handle, 2, in_ptrs, 1, out_ptrs) if stream is None else \
            run_async(handle, stream, 2, in_ptrs, 1, out_ptrs)
        if status:
            raise RuntimeError(runner.error())

    t_c = wall_us(c_run, iters, lib, warmup=50)
    with _StubRun(runner):
        t_python = wall_us(lambda: fd.execute(ins), iters, lib, warmup=50)
    return t_execute, t_c, t_python


def parse_sizes(text: str) -> List[int]:
    """"2**20,4096" -> [1048576, 4096]."""
    sizes = []
    for item in text.split(","):
        base, _, exp = item.strip().partition("**")
        sizes.append(int(base) ** int(exp) if exp else int(base))
    if any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text}")
    return sizes


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--library", choices=("torch", "numpy"), default="torch")
    p.add_argument("--sizes", type=parse_sizes, default=[1 << 20, 1 << 24, 1 << 26, 1 << 28],
                   help="comma-separated element counts, e.g. 2**20,2**24,4096")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--overhead-iters", type=int, default=2000)
    p.add_argument("--fusions", default=",".join(FUSIONS))
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = p.parse_args(argv)
    lib = ArrayLib(args.library)
    device = lib.torch.cuda.get_device_name() if args.library == "torch" else "host backend"
    print(f"cfuser {cfuser.__version__} ({cfuser.library_path}); arrays: {args.library} on {device}", flush=True)
    failures = 0
    for name in args.fusions.split(","):
        failures += run_fusion(FUSIONS[name], lib, args.sizes, args.iters, not args.no_compile)
    t_exec, t_c, t_python = overhead(lib, args.overhead_iters)
    print(f"overhead: execute_us={t_exec:.2f} c_run_us={t_c:.2f} python_overhead_us={t_exec - t_c:.2f} "
          f"python_side_us={t_python:.2f} (target < 20 us)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
