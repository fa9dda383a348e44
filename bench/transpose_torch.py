"""PyTorch's figures for bench/transpose.c's work: the transpose of an 8192 x 8192 float
matrix, eager (x.t().contiguous()) and torch.compile, plus the device's copy bandwidth (a
clone), each the median of timed runs with CUDA events after warm-ups. Prints lines in
the same form as bench/transpose.c; GB/s counts the matrix read once and written once
(2 * 4 * N * N bytes) for all three."""
import torch

from torch_common import iters_arg, median_us, timed_line

N = 8192


def transpose(x):
    return x.t().contiguous()


def main():
    iters = iters_arg()
    x = torch.rand(N, N, device="cuda")
    nbytes = 2 * 4 * N * N
    compiled = torch.compile(transpose)
    assert torch.equal(compiled(x), x.t())
    for label, f in (("torch eager", transpose), ("torch.compile", compiled)):
        print(timed_line(label, f"transpose N={N}", median_us(lambda: f(x), iters), nbytes))
    print(timed_line("device copy", f"N={N}", median_us(lambda: x.clone(), iters), nbytes))


if __name__ == "__main__":
    main()
