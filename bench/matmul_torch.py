"""PyTorch's figures for bench/matmul.c's work: torch.matmul (cuBLAS) of the same square,
LLM and batched shapes in bfloat16 and float16 (float accumulation), and gelu(x @ w^T +
bias) and x @ w^T + bias eager and under torch.compile (issue 24's 1.1x target); float32 square matmuls and
the tensor-parallel MLP's first linear + gelu (2048 x 1024 @ 1024 x 2048) on cuBLAS's
float path (TF32 off, torch's default, set explicitly). Each the median of timed
runs with CUDA events after warm-ups, printed in bench/matmul.c's form:
  torch <label> <name> <shape> time_us=<t> TFLOPS=<2*B*M*N*K / t>
CFUSER_BENCH_ONLY=linear_gelu (or linear_bias) runs that case alone, as bench/matmul.c does."""
import os

import torch

from torch_common import iters_arg, median_us

SQUARE = (2048, 4096, 8192)
LLM_M = (16, 128, 1024, 8192)
LLM_W = ((4096, 4096), (4096, 11008), (11008, 4096))


def line(label, name, shape, us, flops):
    return f"torch {label} {name} {shape} time_us={us:.1f} TFLOPS={flops / us / 1e6:.2f}"


def matmul_case(name, dt, a_shape, b_shape, iters):
    a = torch.randn(*a_shape, device="cuda", dtype=dt)
    b = torch.randn(*b_shape, device="cuda", dtype=dt)
    batch = a_shape[0] if len(a_shape) == 3 else 1
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    shape = "x".join(map(str, a_shape)) + "@" + "x".join(map(str, b_shape))
    us = median_us(lambda: torch.matmul(a, b), iters)
    print(line("cublas", name, shape, us, 2.0 * batch * m * n * k))


def linear_gelu(x, w, bias):
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, bias))


def linear_bias(x, w, bias):
    return torch.nn.functional.linear(x, w, bias)


def linear_gelu_case(name, dt, m, k, n, iters, compiled, fn=linear_gelu):
    x = torch.randn(m, k, device="cuda", dtype=dt)
    w = torch.randn(n, k, device="cuda", dtype=dt)
    bias = torch.randn(n, device="cuda", dtype=dt)
    runs = (("eager", fn),) + ((("compile", torch.compile(fn)),) if compiled else ())
    for label, f in runs:
        us = median_us(lambda: f(x, w, bias), iters)
        print(line(label, name, f"{m}x{k}@{k}x{n}", us, 2.0 * m * n * k))


def main():
    iters = iters_arg(default=20)
    shapes = os.environ.get("CFUSER_BENCH_SHAPES")
    if shapes:  # bench/matmul.c's sweep of chosen shapes, bfloat16 [M, K] @ [K, N]
        for item in shapes.split(","):
            m, k, n = (int(v) for v in item.split("x"))
            matmul_case("shape", torch.bfloat16, (m, k), (k, n), iters)
        return
    only = os.environ.get("CFUSER_BENCH_ONLY")  # as bench/matmul.c: the linear cases alone
    if only in ("linear_gelu", "linear_bias"):
        fn = linear_gelu if only == "linear_gelu" else linear_bias
        linear_gelu_case(only, torch.bfloat16, 8192, 8192, 8192, iters, compiled=True, fn=fn)
        return
    for dt, name in ((torch.bfloat16, "square_bf16"), (torch.float16, "square_f16")):
        for s in SQUARE:
            matmul_case(name, dt, (s, s), (s, s), iters)
    for k, n in LLM_W:
        for m in LLM_M:
            matmul_case("llm", torch.bfloat16, (m, k), (k, n), iters)
    matmul_case("batched", torch.bfloat16, (8, 1024, 1024), (1024, 1024), iters)
    linear_gelu_case("linear_gelu", torch.bfloat16, 8192, 8192, 8192, iters, compiled=True)
    linear_gelu_case("linear_bias", torch.bfloat16, 8192, 8192, 8192, iters, compiled=True, fn=linear_bias)
    torch.backends.cuda.matmul.allow_tf32 = False
    for s in (2048, 4096):
        matmul_case("square_f32", torch.float32, (s, s), (s, s), iters)
    linear_gelu_case("linear_gelu_f32", torch.float32, 2048, 1024, 2048, iters, compiled=False)


if __name__ == "__main__":
    main()
