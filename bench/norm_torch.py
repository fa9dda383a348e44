"""PyTorch's figures for bench/norm.c's work: softmax and layer norm over the rows of a
16384 x 4096 float matrix, and softmax in bfloat16, eager and torch.compile, plus the
device's copy bandwidth (a clone), each the median of timed runs with CUDA events after
warm-ups. Prints lines in the same form as bench/norm.c; GB/s counts the matrix read and
written once (plus the layer norm's weight and bias)."""
import sys

import torch

ROWS, COLS = 16384, 4096


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


def softmax(x):
    return torch.softmax(x, dim=1)


def softmax_bf16(x):  # computed in float, as cfuser's fusion does
    return torch.softmax(x.float(), dim=1).to(torch.bfloat16)


def layernorm(x, w, b):
    return torch.nn.functional.layer_norm(x, (COLS,), w, b, 1e-5)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
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
        compiled = torch.compile(fn)
        for label, f in (("torch eager", fn), ("torch.compile", compiled)):
            t = median_us(lambda: f(*args), iters)
            print(f"{label} {name} {ROWS}x{COLS} time_us={t:.1f} GB/s={nbytes / t / 1e3:.0f}")
    t = median_us(lambda: x.clone(), iters)
    print(f"device copy {ROWS}x{COLS} time_us={t:.1f} GB/s={8 * elems / t / 1e3:.0f}")


if __name__ == "__main__":
    main()
