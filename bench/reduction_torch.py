"""PyTorch's figures for bench/reduction.c's work: row sums and column sums of a
16384 x 16384 float matrix, eager and torch.compile, plus the device's copy bandwidth (a
clone: the matrix read and written), each the median of timed runs with CUDA events after
warm-ups. Prints lines in the same form as bench/reduction.c; GB/s counts the matrix read
once (4 * N * N bytes) for the sums and read plus written for the copy."""
import sys

import torch

N = 16384


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


def row_sum(a):
    return a.sum(1)


def col_sum(a):
    return a.sum(0)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    a = torch.rand(N, N, device="cuda")
    nbytes = 4 * N * N
    for name, fn in (("row_sum", row_sum), ("col_sum", col_sum)):
        compiled = torch.compile(fn)
        for label, f in (("torch eager", fn), ("torch.compile", compiled)):
            t = median_us(lambda: f(a), iters)
            print(f"{label} {name} N={N} time_us={t:.1f} GB/s={nbytes / t / 1e3:.0f}")
    t = median_us(lambda: a.clone(), iters)
    print(f"device copy N={N} time_us={t:.1f} GB/s={2 * nbytes / t / 1e3:.0f}")


if __name__ == "__main__":
    main()
