"""The normalization cliffs of issue 22, measured as a user meets them: each fusion defined
with the Python package, run by define and run on torch CUDA tensors next to torch eager
and torch.compile in the same process (CUDA-event medians after warm-ups), plus the
device's copy bandwidth. One line per case and implementation:
    <impl> <name> <shape> time_us=<t> GB/s=<g> kernels=<n> [x torch.compile]
GB/s counts every input read once and every output written once. cfuser's result is
checked against eager's first.
    python3 bench/norm_cliffs.py [iterations]          # on the GPU (torch with CUDA)
    python3 bench/norm_cliffs.py --check               # the host backend on NumPy, small shapes
Cases: softmax and log-softmax of vocabulary rows (32000, 50257, 128256; float32 and
bfloat16), RMS norm of Llama rows in bfloat16 (4096, 8192, with the weight), layer norm
as nvFuser's users write it (var_mean, casts, broadcast_in_dim; y, mean and invstd) in
bfloat16, batch-norm statistics and normalization of channels-last activations (64
channels; 100352 and 802816 rows), and the reference batch norm (512 x 65536 float)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cfuser import DataType  # noqa: E402

import sweep_kinds  # noqa: E402
import torch_common  # noqa: E402
from sweep_kinds import EPS, batchnorm_fd, layernorm_stats_fd, rmsnorm_fd, softmax_fd  # noqa: E402: sweep.py's


def cases(lib, check):
    """(name, shape, definition, the same math in lib, input maker)."""
    vocab = [(4, 1000), (3, 3001)] if check else [(4096, 32000), (4096, 50257), (2048, 128256)]
    llama = [(8, 256)] if check else [(16384, 4096), (16384, 8192)]
    acts = [(2000, 64)] if check else [(100352, 64), (802816, 64)]
    dts = [("f32", DataType.Float)] + ([] if check else [("bf16", DataType.BFloat16)])
    out = []
    for tag, dt in dts:
        for r, c in vocab:
            out.append((f"softmax_{tag}", (r, c), lambda dt=dt: softmax_fd(dt, False), lib.softmax, [(r, c)]))
            out.append((f"log_softmax_{tag}", (r, c), lambda dt=dt: softmax_fd(dt, True), lib.log_softmax, [(r, c)]))
        for r, c in acts:
            out.append((f"batchnorm_{tag}", (r, c), lambda dt=dt: batchnorm_fd(dt), lib.batchnorm, [(r, c), (c,), (c,)]))
    for tag, dt in dts[-1:]:
        for r, c in llama:
            out.append((f"rmsnorm_{tag}", (r, c), lambda dt=dt: rmsnorm_fd(dt), lib.rmsnorm, [(r, c), (c,)]))
            out.append((f"layernorm_stats_{tag}", (r, c), lambda dt=dt: layernorm_stats_fd(dt), lib.layernorm_stats,
                        [(r, c), (c,), (c,)]))
    if not check:
        out.append(("batchnorm_f32", (512, 65536), lambda: batchnorm_fd(DataType.Float), lib.batchnorm,
                    [(512, 65536), (65536,), (65536,)]))
    return [(n, s, d, m, sh, "bf16" in n) for n, s, d, m, sh in out]


class TorchMath:
    """The cases' math in torch (float compute, results in the input's dtype)."""

    def __init__(self, torch):
        self.t = torch

    def softmax(self, x):
        return self.t.softmax(x.float(), -1).to(x.dtype)

    def log_softmax(self, x):
        return self.t.log_softmax(x.float(), -1).to(x.dtype)

    def rmsnorm(self, x, w):
        return sweep_kinds.t_rmsnorm(x, w)

    def layernorm_stats(self, x, w, b):
        return sweep_kinds.t_layernorm_stats(x, w, b)

    def batchnorm(self, x, w, b):
        xf = x.float()
        var, mean = self.t.var_mean(xf, 0, correction=0, keepdim=True)
        return ((xf - mean) * self.t.rsqrt(var + EPS) * w.float() + b.float()).to(x.dtype)


class NumpyMath(TorchMath):
    def __init__(self):
        import numpy as np

        self.np = np

    def softmax(self, x):
        e = self.np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def log_softmax(self, x):
        d = x - x.max(-1, keepdims=True)
        return d - self.np.log(self.np.exp(d).sum(-1, keepdims=True))

    def rmsnorm(self, x, w):
        return x / self.np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w

    def layernorm_stats(self, x, w, b):
        mean, var = x.mean(1), x.var(1)
        invstd = 1 / self.np.sqrt(var + EPS)
        return (x - mean[:, None]) * invstd[:, None] * w + b, mean, invstd

    def batchnorm(self, x, w, b):
        return (x - x.mean(0)) / self.np.sqrt(x.var(0) + EPS) * w + b


def as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def check_host():
    import numpy as np

    rng = np.random.default_rng(0)
    for name, shape, define, math, shapes, _ in cases(NumpyMath(), True):
        ins = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        fd = define()
        got, want = fd.execute(ins), as_list(math(*ins))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)
        print(f"ok {name} {shape[0]}x{shape[1]} kernels={len(fd.last_schedulers())} {fd.last_schedulers()}")


def bench_gpu(iters):
    import torch

    math = TorchMath(torch)
    copy_src = torch.empty(1 << 28, device="cuda")
    copy_us = torch_common.median_us(lambda: copy_src.clone(), iters)
    print(torch_common.timed_line("device copy (clone)", f"{copy_src.numel()}", copy_us, 2 * copy_src.numel() * 4))
    for name, shape, define, fn, shapes, bf16 in cases(math, False):
        dtype = torch.bfloat16 if bf16 else torch.float32
        ins = [(torch.randn(*s, device="cuda") * (1 if len(s) > 1 else 0.5)).to(dtype) for s in shapes]
        fd = define()
        got, want = fd.execute(ins), as_list(fn(*ins))
        tol = 2e-2 if bf16 else 1e-4
        for g, w in zip(got, want):
            assert torch.allclose(g.float(), w.float(), rtol=tol, atol=tol), name
        moved = sum(t.numel() * t.element_size() for t in ins) + sum(t.numel() * t.element_size() for t in got)
        what = f"{name} {shape[0]}x{shape[1]}"
        us = torch_common.median_us(lambda: fd.execute(ins), iters)
        lines = [(torch_common.timed_line("cfuser", what, us, moved) + f" kernels={len(fd.last_schedulers())}", us)]
        for label, f in torch_common.eager_and_compiled(fn):
            lines.append((torch_common.timed_line(label, what, torch_common.median_us(lambda: f(*ins), iters), moved),
                          None))
        compiled_us = float(lines[-1][0].split("time_us=")[1].split()[0])
        print(lines[0][0] + f" {compiled_us / us:.2f}x torch.compile")
        for line, _ in lines[1:]:
            print(line)


if __name__ == "__main__":
    if "--check" in sys.argv:
        check_host()
    else:
        bench_gpu(torch_common.iters_arg([a for a in sys.argv if a != "--check"]))
