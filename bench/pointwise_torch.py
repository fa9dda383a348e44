"""PyTorch's figures for bench/pointwise.c's work: out = relu(a * b + a) over N floats,
eager and torch.compile, plus the device's copy bandwidth (a clone: N floats read and
written), each the median of timed runs with CUDA events after warm-ups.
Prints lines in the same form as bench/pointwise.c."""
import torch

from torch_common import iters_arg, median_us, timed_line


def op(a, b):
    return torch.relu(a * b + a)


def main():
    iters = iters_arg()
    compiled = torch.compile(op)
    for n in (1 << 20, 1 << 24, 1 << 26, 1 << 28):
        a = torch.rand(n, device="cuda")
        b = torch.rand(n, device="cuda")
        for name, fn, nbytes in (
            ("torch eager", lambda: op(a, b), 12 * n),
            ("torch.compile", lambda: compiled(a, b), 12 * n),
            ("device copy", lambda: a.clone(), 8 * n),
        ):
            print(timed_line(name, f"pointwise N={n}", median_us(fn, iters), nbytes))
        del a, b
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
