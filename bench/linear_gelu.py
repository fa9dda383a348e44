"""gelu(x @ w^T + bias) over the shapes of an LLM's linear layers (issue 24's epilogue
target), cfuser's define and run beside torch eager and torch.compile in one process.

For each dtype (bfloat16, float16) and shape M x K -> N (x [M, K], w [N, K], bias [N]):
cfuser runs the definition a Python user writes (fd.ops.linear, then gelu in float, cast
back), unscheduled, on the torch CUDA tensors; torch runs
F.gelu(F.linear(x, w, bias)) eager and under torch.compile (default mode, one compile per
shape: static shapes, automatic dynamic shapes off, as a model's few fixed shapes get). cfuser's result is checked against torch in double
first (a wrong result is printed as WRONG and left out of the means). The contenders are
timed in alternated rounds (cfuser, eager, compile, then again), each round a CUDA-event
median of ITERS calls; each contender's figure is its best round, so a clock or power
drift during the run falls on all three alike (--queued: the calls of a round queued back to
back, events between them, so a time is the GPU's unless the host's cost of a call is
larger: torch_common.queued_median_us). --no-gelu measures x @ w^T + bias. The kernels of one call are counted with
torch.profiler. Prints one line a case and, at the end, the geometric means. --bound also
times cuBLAS's plain GEMM x @ w^T (no bias, no epilogue) in the same rounds and prints
compile_us / gemm_us: the most a fused kernel as fast as cuBLAS's GEMM, its epilogue wholly
hidden, could reach against torch.compile (which runs that GEMM, then one epilogue pass).

Usage: python3 bench/linear_gelu.py [iters] [--rounds R] [--queued] [--no-gelu] [--bound] [--shapes MxKxN,...]
                                    [--dtypes bf16,f16]
Default shapes: M of 16, 128, 1024 and 8192 tokens through 4096x4096, 4096->11008 and
11008->4096 weights, and the squares 2048, 4096 and 8192."""
import argparse
import math
import sys

import torch_common as tc

from cfuser import DataType, FusionDefinition

WEIGHTS = ((4096, 4096), (4096, 11008), (11008, 4096))
TOKENS = (16, 128, 1024, 8192)
SQUARES = (2048, 4096, 8192)
DTYPES = {"bf16": (DataType.BFloat16, "bfloat16", 2e-2), "f16": (DataType.Half, "float16", 4e-3)}  # torch's by name:
# torch is imported where it is used, so the arguments parse (and are tested) without it


def default_shapes():
    return [(m, k, n) for k, n in WEIGHTS for m in TOKENS] + [(s, s, s) for s in SQUARES]


def definition(cdt, gelu):
    with FusionDefinition() as fd:
        x, w, b = fd.define_tensor(2, dtype=cdt), fd.define_tensor(2, dtype=cdt), fd.define_tensor(1, dtype=cdt)
        y = fd.ops.linear(x, w, b)
        fd.add_output(fd.ops.cast(fd.ops.gelu(fd.ops.cast(y, DataType.Float)), cdt) if gelu else y)
    return fd


def gelu_fn(x, w, b):
    import torch

    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b))


def bias_fn(x, w, b):
    import torch

    return torch.nn.functional.linear(x, w, b)


def gemm_fn(x, w, b):
    import torch

    return torch.nn.functional.linear(x, w)


def wrong(out, ins, tol, gelu):
    """None when out equals [gelu](x @ w^T + b) in double to within tol (relative to |ref| + 1)."""
    import torch

    x, w, b = (t.double() for t in ins)
    ref = x @ w.t() + b
    ref = torch.nn.functional.gelu(ref) if gelu else ref
    err = ((out.double() - ref).abs() / (ref.abs() + 1)).max().item()
    return None if err < tol else f"max relative error {err:.3g}"


def run_case(dt, shape, a):
    import torch

    cdt, tname, tol = DTYPES[dt]
    tdt = getattr(torch, tname)
    m, k, n = shape
    g = torch.Generator(device="cuda").manual_seed(m + 7 * k + 13 * n)
    ins = [torch.randn(*s, device="cuda", generator=g).to(tdt) for s in ((m, k), (n, k), (n,))]
    fd = definition(cdt, a.gelu)
    out = fd.execute(ins)[0]
    bad = wrong(out, ins, tol, a.gelu)
    fn = gelu_fn if a.gelu else bias_fn
    compiled = torch.compile(fn, dynamic=False)
    calls = {"cfuser": lambda: fd.execute(ins), "eager": lambda: fn(*ins), "compile": lambda: compiled(*ins)}
    if a.bound:
        calls["gemm"] = lambda: gemm_fn(*ins)
    timer = tc.queued_median_us if a.queued else tc.median_us
    best = {name: math.inf for name in calls}
    for _ in range(a.rounds):
        for name, call in calls.items():
            best[name] = min(best[name], timer(call, a.iters))
    kernels = {name: tc.cuda_kernels(call) for name, call in calls.items()}
    del ins, out
    torch.cuda.empty_cache()
    return best, kernels, bad, fd.last_schedulers()


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("iters", type=int, nargs="?", default=20, help="timed calls a round (median)")
    p.add_argument("--rounds", type=int, default=3, help="alternated rounds; each contender's best round counts")
    p.add_argument("--queued", action="store_true", help="the calls of a round queued back to back")
    p.add_argument("--no-gelu", dest="gelu", action="store_false", help="x @ w^T + bias alone")
    p.add_argument("--bound", action="store_true", help="also cuBLAS's plain GEMM, and compile / GEMM")
    p.add_argument("--shapes", help="MxKxN,... (x [M, K], w [N, K]) instead of the default LLM shapes")
    p.add_argument("--dtypes", default="bf16,f16", help="of bf16 and f16, comma separated")
    a = p.parse_args(argv)
    try:
        a.shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")] if a.shapes else default_shapes()
        if any(len(s) != 3 or min(s) < 1 for s in a.shapes):
            raise ValueError
    except ValueError:
        p.error("--shapes: expected MxKxN items of positive sizes, e.g. 8192x4096x11008")
    a.dtypes = a.dtypes.split(",")
    if any(d not in DTYPES for d in a.dtypes):
        p.error(f"--dtypes: expected some of {', '.join(DTYPES)}")
    return a


def main(argv=None):
    a = parse(argv)
    import torch
    import torch._dynamo

    if not torch.cuda.is_available():
        sys.exit("linear_gelu.py needs torch with a CUDA device")
    torch._dynamo.config.automatic_dynamic_shapes = False  # every shape its own static graph
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1024)
    what = "gelu(x @ w^T + bias)" if a.gelu else "x @ w^T + bias"
    timing = "queued" if a.queued else "each call timed alone"
    print(f"{what} on {torch.cuda.get_device_name()}, {a.rounds} alternated rounds of {a.iters} calls ({timing}), best round")
    print("dtype shape(MxK->N) cfuser_us eager_us compile_us vs_eager vs_compile TFLOPS kernels(c/e/t) schedulers"
          + (" gemm_us bound(compile/gemm)" if a.bound else ""))
    ratios = {"eager": [], "compile": []}
    for dt in a.dtypes:
        for shape in a.shapes:
            best, kern, bad, scheds = run_case(dt, shape, a)
            m, k, n = shape
            tflops = 2.0 * m * k * n / best["cfuser"] / 1e6
            ve, vc = best["eager"] / best["cfuser"], best["compile"] / best["cfuser"]
            if not bad:
                ratios["eager"].append(ve), ratios["compile"].append(vc)
            print(f"{dt} {m}x{k}->{n} {best['cfuser']:.1f} {best['eager']:.1f} {best['compile']:.1f} {ve:.2f}x {vc:.2f}x "
                  f"{tflops:.1f} {kern['cfuser']}/{kern['eager']}/{kern['compile']} {','.join(scheds)}"
                  + (f" {best['gemm']:.1f} {best['compile'] / best['gemm']:.2f}x" if a.bound else "")
                  + (f" WRONG ({bad})" if bad else ""), flush=True)
    for name, rs in ratios.items():
        print(f"geometric mean over torch {name}: {tc.geomean(rs):.3f}x ({len(rs)} cases); lowest {min(rs, default=0):.2f}x")


if __name__ == "__main__":
    main()
