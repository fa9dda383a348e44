"""PyTorch's figures for bench/pointwise.c's work: out = relu(a * b + a) over N floats,
eager and torch.compile, plus the device's copy bandwidth (a clone: N floats read and
written), each the median of timed runs with CUDA events after warm-ups.
Prints lines in the same form as bench/pointwise.c."""
import sys

import torch


def median_us(fn, iters):
    for _ in range(5):
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
    times.sort()
    return times[len(times) // 2]


def op(a, b):
    return torch.relu(a * b + a)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    compiled = torch.compile(op)
    for n in (1 << 20, 1 << 24, 1 << 26, 1 << 28):
        a = torch.rand(n, device="cuda")
        b = torch.rand(n, device="cuda")
        for name, fn, nbytes in (
            ("torch eager", lambda: op(a, b), 12 * n),
            ("torch.compile", lambda: compiled(a, b), 12 * n),
            ("device copy", lambda: a.clone(), 8 * n),
        ):
            t = median_us(fn, iters)
            print(f"{name} pointwise N={n} time_us={t:.1f} GB/s={nbytes / t / 1e3:.0f}")
        del a, b
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
