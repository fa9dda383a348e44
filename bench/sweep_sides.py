"""The two array libraries bench/sweep.py runs a case on, behind one interface.

- TorchSide: CUDA tensors (the sweep): the reference is torch eager as its users write it
  (sweep_kinds.torch_fn); the contenders are eager, torch.compile and a device copy of
  the same bytes, timed with CUDA-event medians (torch_common), their kernels counted with
  torch.profiler.
- NumpySide: host arrays (--check, the host backend): the reference is sweep_kinds' NumPy
  math in float64 rounded to the outputs' dtypes; cfuser's time is wall-clock; no
  contenders.

The interface: device, compile_mode, inputs(kind, dtype, shape), reference(kind, dtype,
inputs), sync(), as64 / dtype_name / max_abs / mismatches (what sweep.compare reads),
nbytes(arrays), time(fn, iters) in us, contenders(kind, dtype, inputs, iters, nbytes,
cfuser_call) -> the record's torch fields, and release(nbytes) after a case (or None).
Key decision: torch.compile is made once per kind and dtype with dynamic=True (the
recompile limits raised so that dtypes and the 0/1 size specializations of one function
never push it back to eager); --static compiles each shape afresh after a dynamo reset."""
import statistics
import sys
import time

import sweep_kinds as sk
import torch_common

BIG = 1 << 30  # bytes past which a case's memory goes back to the device after it
SLOW_US = 200_000  # a call slower than this is timed once (a serial kernel must not eat the budget)


def _short(e):
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


class TorchSide:
    def __init__(self, static):
        try:
            import torch
            import torch._dynamo
        except ImportError as e:
            sys.exit(f"the sweep needs torch with CUDA ({e}); --check runs without it")
        if not torch.cuda.is_available():
            sys.exit("torch sees no CUDA device")
        self.t = torch
        self.device = torch.cuda.get_device_name()
        self.compile_mode = "static" if static else "dynamic"
        self.compiled = {}
        for name, v in (("cache_size_limit", 256), ("accumulated_cache_size_limit", 8192), ("recompile_limit", 256),
                        ("accumulated_recompile_limit", 8192)):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, v)

    def inputs(self, kind, dtype, shape):
        self.t.manual_seed(0)
        dt = getattr(self.t, kind.in_dtype or dtype)
        return [self.t.randn(s, device="cuda", dtype=dt) for s in sk.input_shapes(kind, shape)]

    def reference(self, kind, dtype, ins):
        return sk.torch_fn(kind, dtype)(*ins)

    def sync(self):
        self.t.cuda.synchronize()

    def as64(self, x):
        return x.double()

    def dtype_name(self, x):
        return str(x.dtype).replace("torch.", "")

    def max_abs(self, x):
        """The largest finite |x| (an infinity would make every difference tolerable)."""
        x = x[self.t.isfinite(x)]
        return float(x.abs().max()) if x.numel() else 0.0

    def mismatches(self, g, w, rtol, atol):
        close = self.t.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        n = int((~close).sum())
        return (n, float((g - w).abs()[~close].max()), g.numel()) if n else None

    def nbytes(self, xs):
        return torch_common.nbytes(xs)

    def time(self, fn, iters):
        """The median CUDA-event time in us; one call's time when a call is slow."""
        once = torch_common.event_times_us(fn, 1, warmup=1)[0]
        return once if once > SLOW_US else torch_common.median_us(fn, iters)

    def _compiled(self, kind, dtype, eager):
        if self.compile_mode == "static":
            self.t._dynamo.reset()
            return self.t.compile(eager, dynamic=False)
        key = (kind.name, dtype)
        if key not in self.compiled:
            self.compiled[key] = self.t.compile(eager, dynamic=True)
        return self.compiled[key]

    def contenders(self, kind, dtype, ins, iters, nbytes, cfuser_call):
        """eager_us, compile_us (or *_error), copy_us / copy_bytes and each one's kernels."""
        eager = sk.torch_fn(kind, dtype)
        r, calls = {}, {"cfuser": cfuser_call}
        for key, f in (("eager", eager), ("compile", None)):
            try:
                f = f or self._compiled(kind, dtype, eager)
                f(*ins)
                r[key + "_us"] = self.time(lambda: f(*ins), iters)
                calls[key] = lambda f=f: f(*ins)
            except Exception as e:  # noqa: BLE001: the case goes on without this contender
                r[key + "_error"] = _short(e)
        n = max(1, nbytes // 2)
        buf = self.t.empty(n, dtype=self.t.uint8, device="cuda")
        r["copy_us"], r["copy_bytes"] = self.time(lambda: buf.clone(), iters), 2 * n
        for key, call in calls.items():  # last: the profiler must not sit under the timings
            try:
                r["launches_cfuser" if key == "cfuser" else "kernels_" + key] = torch_common.cuda_kernels(call)
            except Exception as e:  # noqa: BLE001
                r[f"kernels_{key}_error"] = _short(e)
        return r

    def release(self, nbytes):
        if nbytes > BIG:
            self.t.cuda.empty_cache()


class NumpySide:
    device = "host (NumPy)"
    compile_mode = "host"
    release = None

    def __init__(self):
        import numpy

        self.np = numpy

    def inputs(self, kind, dtype, shape):
        rng = self.np.random.default_rng(0)
        return [rng.standard_normal(s).astype(kind.in_dtype or dtype) for s in sk.input_shapes(kind, shape)]

    def reference(self, kind, dtype, ins):
        outs = sk.as_list(kind.numpy(*[x.astype(self.np.float64) for x in ins]))
        return [o.astype(d) for o, d in zip(outs, sk.out_dtypes(kind, dtype, len(outs)))]

    def sync(self):
        pass

    def as64(self, x):
        return x.astype(self.np.float64)

    def dtype_name(self, x):
        return str(x.dtype)

    def max_abs(self, x):
        x = x[self.np.isfinite(x)]
        return float(self.np.abs(x).max()) if x.size else 0.0

    def mismatches(self, g, w, rtol, atol):
        close = self.np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        n = int((~close).sum())
        return (n, float(self.np.abs(g - w)[~close].max()), g.size) if n else None

    def nbytes(self, xs):
        return sum(x.nbytes for x in xs)

    def time(self, fn, iters):
        fn()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)

    def contenders(self, kind, dtype, ins, iters, nbytes, cfuser_call):
        return {}
