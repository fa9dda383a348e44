"""Long rows of the normalizations, the shapes that choose between shared memory and
multipass (scheduler/norm_sched.c's rules 2 and 3): softmax, layer norm and RMS norm in
float32 and bfloat16 over rows of 8191 to 262147 (primes, vocabulary sizes, powers of 2),
each defined with the Python package and run by define and run on torch CUDA tensors,
checked against torch, then timed (CUDA-event medians) next to torch eager. One line per
case:
    <tag> <kind> <dtype> <rows>x<cols> us=<t> GB/s=<g> eager_GB/s=<g> block=<threads>
        smem=<bytes> k=<kernels> ok|WRONG
smem tells the plan apart (a row in shared memory takes more than the all-reduce's
workspace). To compare two builds, run it once per library (CFUSER_LIBRARY) with its
own tag, alternating them (a GPU's first and later processes differ by up to 10%):
    CFUSER_LIBRARY=build/libcfuser.so python3 bench/norm_rows.py TAG [iterations]
    ... TAG --compile-only    # fill the kernel cache (CFUSER_CACHE_DIR) without timing"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import sweep_kinds as sk  # noqa: E402
import torch_common as tc  # noqa: E402
from cfuser import DataType  # noqa: E402

F = torch.nn.functional
DTYPES = {"f32": (DataType.Float, torch.float32), "bf16": (DataType.BFloat16, torch.bfloat16)}
SHAPES = [(4096, 8191), (4096, 16384), (4096, 32000), (2048, 65536), (256, 262147), (1024, 20011), (1024, 32000), (1024, 32003), (1024, 50257),
          (512, 65537), (512, 100003), (512, 128256), (512, 131071)]


def t_layernorm(x, w, b):
    return F.layer_norm(x.float(), (x.shape[1],), w.float(), b.float(), sk.EPS).to(x.dtype)


def t_rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + sk.EPS) * w.float()).to(x.dtype)


KINDS = {  # name: (definition of a cfuser dtype, torch's math, inputs)
    "softmax": (lambda dt: sk.softmax_fd(dt, False), lambda x: torch.softmax(x.float(), -1).to(x.dtype), 1),
    "layernorm": (sk.layernorm_fd, t_layernorm, 3),
    "rmsnorm": (sk.rmsnorm_fd, t_rmsnorm, 2),
}


def run_case(tag, kind, dname, shape, iters, compile_only):
    define, math, nin = KINDS[kind]
    cdt, tdt = DTYPES[dname]
    r, c = shape
    torch.manual_seed(0)
    ins = [torch.randn(r, c, device="cuda").to(tdt)] + [torch.randn(c, device="cuda").to(tdt) for _ in range(nin - 1)]
    fd = define(cdt)
    got = fd.execute(ins)
    if compile_only:
        return
    tol = 1e-4 if dname == "f32" else 2e-2
    ok = torch.allclose(got[0].float(), math(*ins).float(), rtol=tol, atol=tol)
    launch = fd.last_launch_params()
    moved = tc.nbytes(ins) + tc.nbytes(got[:1])
    us = tc.median_us(lambda: fd.execute(ins), iters)
    eager_us = tc.median_us(lambda: math(*ins), iters)
    print(f"{tag} {kind} {dname} {r}x{c} us={us:.1f} GB/s={tc.gbps(moved, us):.0f} "
          f"eager_GB/s={tc.gbps(moved, eager_us):.0f} block={launch['block'][0]} smem={launch['smem']} "
          f"k={len(fd.last_schedulers())} {'ok' if ok else 'WRONG'}", flush=True)


def main(argv):
    args = [a for a in argv[1:] if a != "--compile-only"]
    if not args:
        print(__doc__)
        return 2
    tag, iters = args[0], int(args[1]) if len(args) > 1 else 30
    for kind in KINDS:
        for dname in DTYPES:
            for shape in SHAPES:
                try:
                    run_case(tag, kind, dname, shape, iters, "--compile-only" in argv)
                except Exception as e:  # a failing case is reported, the rest still run
                    print(f"FAIL {tag} {kind} {dname} {shape[0]}x{shape[1]}: {e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
