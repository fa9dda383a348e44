"""PyTorch's figures for bench/reduction.c's work: row sums and column sums of a
16384 x 16384 float matrix, eager and torch.compile, plus the device's copy bandwidth (a
clone: the matrix read and written), each the median of timed runs with CUDA events after
warm-ups. Prints lines in the same form as bench/reduction.c; GB/s counts the matrix read
once (4 * N * N bytes) for the sums and read plus written for the copy."""
import torch

from torch_common import eager_and_compiled, iters_arg, median_us, timed_line

N = 16384


def row_sum(a):
    return a.sum(1)


def col_sum(a):
    return a.sum(0)


def main():
    iters = iters_arg()
    a = torch.rand(N, N, device="cuda")
    nbytes = 4 * N * N
    for name, fn in (("row_sum", row_sum), ("col_sum", col_sum)):
        for label, f in eager_and_compiled(fn):
            print(timed_line(label, f"{name} N={N}", median_us(lambda: f(a), iters), nbytes))
    print(timed_line("device copy", f"N={N}", median_us(lambda: a.clone(), iters), 2 * nbytes))


if __name__ == "__main__":
    main()
