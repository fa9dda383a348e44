"""What the PyTorch halves of the benchmarks (bench/*_torch.py, python_fusions.py) share:
CUDA-event timing after warm-ups, the GB/s of a time, the printed line, the iteration
argument, the eager / torch.compile pair, the count of one call's CUDA kernels and the
geometric mean of the tables. torch is imported where it is used, so a
script that runs without torch (python_fusions.py on NumPy) can import this module."""
import math
import re
import sys

WARMUPS = 5
# A device-copy line: which copy, numel, time in us, GB/s.
COPY = re.compile(r"^device copy \((\S+)\) (\S+) time_us=([0-9.]+) GB/s=([0-9.]+)")


def event_times_us(fn, iters, warmup=WARMUPS):
    """The CUDA-event time in us of each of `iters` calls of fn after `warmup` calls."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times


def median_us(fn, iters, warmup=WARMUPS):
    """The median (the upper one for an even count) of event_times_us, as the C benches take it."""
    times = sorted(event_times_us(fn, iters, warmup))
    return times[len(times) // 2]


def queued_median_us(fn, iters, warmup=WARMUPS):
    """The median GPU time in us of `iters` calls of fn queued back to back after `warmup`
    calls, an event between each two and one synchronization at the end (triton's
    do_bench; bench_util.h's CFUSER_BENCH_QUEUED): a call's host cost shows only where it
    exceeds the GPU's work, which the per-call median (median_us) always adds."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    events[0].record()
    for i in range(iters):
        fn()
        events[i + 1].record()
    events[-1].synchronize()
    times = sorted(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(iters))
    return times[len(times) // 2]


def gbps(nbytes, us):
    return nbytes / us / 1e3


def timed_line(label, what, us, nbytes):
    """`<label> <what> time_us=<us> GB/s=<GB/s>`, the form every bench prints."""
    return f"{label} {what} time_us={us:.1f} GB/s={gbps(nbytes, us):.0f}"


def iters_arg(argv=None, default=50):
    argv = sys.argv if argv is None else argv
    return int(argv[1]) if len(argv) > 1 else default


def eager_and_compiled(fn):
    """(("torch eager", fn), ("torch.compile", torch.compile(fn)))."""
    import torch

    return (("torch eager", fn), ("torch.compile", torch.compile(fn)))


def cuda_kernels(fn):
    """The CUDA kernels one call of fn launches, counted with torch.profiler (memory copies
    and sets are not kernels and are not counted; kernels of a CUDA graph are). A call
    that shows none raises: the profiler could not see the device."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
    n = sum(1 for name in names if not name.startswith(("Memcpy", "Memset")))
    if not n:  # every call measured launches work: none seen means no CUPTI, not no kernel
        raise RuntimeError("the profiler saw no CUDA kernel (is CUPTI available?)")
    return n


def geomean(xs):
    """The geometric mean of positive numbers (nan for none)."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def time_one(label, what, f, args, reference, stat, rtol=1e-2, atol=1e-3):
    """Runs f(*args) (checked against reference(*args) unless label is "torch eager"), times
    it with stat and prints its timed_line (inputs read once, the output written once); on
    an exception prints `<label> <what> failed: <reason>` instead. True when it failed."""
    import torch

    try:
        out = f(*args)
        if label != "torch eager":
            torch.testing.assert_close(out, reference(*args), rtol=rtol, atol=atol)
        us = stat(lambda: f(*args))
        print(timed_line(label, what, us, nbytes(args) + nbytes((out,))), flush=True)
        return False
    except Exception as e:  # noqa: BLE001: one case's failure is its row, not the run's
        print(f"{label} {what} failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
        return True


def print_copy(stat, numel):
    """The device copy (a clone of numel floats: read and written), the reference line."""
    import torch

    x = torch.rand(numel, device="cuda")
    print(timed_line("device copy (clone)", f"{numel}", stat(lambda: x.clone()), 2 * nbytes((x,))))


def result_lines(paths):
    """Each line of the given benchmark outputs, without its newline, in order."""
    for path in paths:
        with open(path) as fh:
            for line in fh:
                yield line.rstrip("\n")

