"""What the PyTorch halves of the benchmarks (bench/*_torch.py, python_fusions.py) share:
CUDA-event timing after warm-ups, the GB/s of a time, the printed line, the iteration
argument and the eager / torch.compile pair. torch is imported where it is used, so a
script that runs without torch (python_fusions.py on NumPy) can import this module."""
import sys

WARMUPS = 5


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
