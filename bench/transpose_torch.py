"""PyTorch's figures for bench/transpose.c's work: the transpose of an 8192 x 8192 float
matrix, eager (x.t().contiguous()) and torch.compile, plus the device's copy bandwidth (a
clone), each the median of timed runs with CUDA events after warm-ups. Prints lines in
the same form as bench/transpose.c; GB/s counts the matrix read once and written once
(2 * 4 * N * N bytes) for all three."""
import sys

import torch

N = 8192


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


def transpose(x):
    return x.t().contiguous()


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    x = torch.rand(N, N, device="cuda")
    nbytes = 2 * 4 * N * N
    compiled = torch.compile(transpose)
    assert torch.equal(compiled(x), x.t())
    for label, f in (("torch eager", transpose), ("torch.compile", compiled)):
        t = median_us(lambda: f(x), iters)
        print(f"{label} transpose N={N} time_us={t:.1f} GB/s={nbytes / t / 1e3:.0f}")
    t = median_us(lambda: x.clone(), iters)
    print(f"device copy N={N} time_us={t:.1f} GB/s={nbytes / t / 1e3:.0f}")


if __name__ == "__main__":
    main()
