"""PyTorch's figures for bench/norm.c's work: softmax and layer norm over the rows of a
16384 x 4096 float matrix, and softmax in bfloat16, eager and torch.compile, plus the
device's copy bandwidth (a clone), each the median of timed runs with CUDA events after
warm-ups. Prints lines in the same form as bench/norm.c; GB/s counts the matrix read and
written once (plus the layer norm's weight and bias)."""
import torch

from torch_common import eager_and_compiled, iters_arg, median_us, timed_line

ROWS, COLS = 16384, 4096


def softmax(x):
    return torch.softmax(x, dim=1)


def softmax_bf16(x):  # computed in float, as cfuser's fusion does
    return torch.softmax(x.float(), dim=1).to(torch.bfloat16)


def layernorm(x, w, b):
    return torch.nn.functional.layer_norm(x, (COLS,), w, b, 1e-5)


def main():
    iters = iters_arg()
    x = torch.rand(ROWS, COLS, device="cuda")
    xb = x.to(torch.bfloat16)
    w, b = torch.rand(COLS, device="cuda"), torch.rand(COLS, device="cuda")
    elems = ROWS * COLS
    cases = (
        ("softmax_f32", softmax, (x,), 8 * elems),
        ("layernorm_f32", layernorm, (x, w, b), 8 * elems + 8 * COLS),
        ("softmax_bf16", softmax_bf16, (xb,), 4 * elems),
    )
    for name, fn, args, nbytes in cases:
        for label, f in eager_and_compiled(fn):
            print(timed_line(label, f"{name} {ROWS}x{COLS}", median_us(lambda: f(*args), iters), nbytes))
    print(timed_line("device copy", f"{ROWS}x{COLS}", median_us(lambda: x.clone(), iters), 8 * elems))


if __name__ == "__main__":
    main()
