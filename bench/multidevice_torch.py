"""bench/multidevice_torch.py: torch.distributed's side of bench/multidevice.c, run with
torchrun --nproc-per-node=N: the bus bandwidth of all_reduce, all_gather_into_tensor and
reduce_scatter_tensor over 1 MiB .. 1 GiB (nccl-tests' formulas, the median of 20 calls
after 5 warm-ups), and the sharded fusions of bench/multidevice.c written with torch
(local ops on the shard plus the collective cfuser's plan uses), the sequence-parallel
layer norm + tensor-parallel MLP among them (all_gather_into_tensor, local F.linear and
gelu on F/N, reduce_scatter_tensor, + b2). Prints the same `key value` tables, so
bench/multidevice.sh can put them side by side."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def median_us(fn, iters=20, warmup=5):
    times = []
    for i in range(warmup + iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    return times[len(times) // 2]


def bandwidth(rank, n):
    if rank == 0:
        print("collective bytes torch_busbw_GBps")
    for name in ("allreduce", "allgather", "reduce_scatter"):
        size = 1 << 20
        while size <= 1 << 30:
            fl = size // 4
            send = torch.ones(fl, device="cuda")
            if name == "allreduce":
                fn, total, factor = (lambda: dist.all_reduce(send)), size, 2.0 * (n - 1) / n
            elif name == "allgather":
                recv = torch.empty(fl * n, device="cuda")
                fn, total, factor = (lambda: dist.all_gather_into_tensor(recv, send)), size * n, (n - 1) / n
            else:
                recv = torch.empty(fl // n, device="cuda")
                fn, total, factor = (lambda: dist.reduce_scatter_tensor(recv, send)), size, (n - 1) / n
            us = median_us(fn)
            if rank == 0:
                print(f"{name} {total} {total / us / 1e3 * factor:.2f}")
            size *= 4


def fusions(rank, n):
    """The cases of bench/multidevice.c at scale 32: [64*32, 256*32] float, sharded rows
    (axis 0) or columns (axis 1)."""
    rows, cols = 64 * 32, 256 * 32
    if rank == 0:
        print("fusion devices rows cols torch_us")

    def shard(axis):
        shape = [rows, cols]
        shape[axis] //= n
        return torch.randn(shape, device="cuda")

    def sum_all(t):
        dist.all_reduce(t)
        return t

    def softmax_cols(x):
        m = sum_max(x.amax(1, keepdim=True))
        e = (x - m).exp()
        return e / sum_all(e.sum(1, keepdim=True))

    def sum_max(t):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t

    def ln(x, full):
        mean = x.sum(1, keepdim=True)
        if full:
            mean = sum_all(mean)
        mean = mean / cols
        xc = x - mean
        var = (xc * xc).sum(1, keepdim=True)
        if full:
            var = sum_all(var)
        return xc * torch.rsqrt(var / cols + 1e-5)

    cases = [
        ("pointwise_rows", 0, lambda x: torch.relu(x.exp() * x)),
        ("sum_sharded_rows", 0, lambda x: sum_all(x.sum(0))),
        ("sum_sharded_cols", 1, lambda x: sum_all(x.sum(1))),
        ("softmax_rows", 0, lambda x: torch.softmax(x, 1)),
        ("softmax_cols", 1, softmax_cols),
        ("layer_norm_rows", 0, lambda x: ln(x, False)),
        ("layer_norm_cols", 1, lambda x: ln(x, True)),
    ]
    for name, axis, fn in cases:
        x = shard(axis)
        us = median_us(lambda: fn(x))
        if rank == 0:
            print(f"{name} {n} {rows} {cols} {us:.1f}")
    sp_ln_tp_mlp(rank, n)


def sp_ln_tp_mlp(rank, n, S=2048, H=1024):
    """Megatron's sequence-parallel layer norm + tensor-parallel MLP, bench/multidevice.c's
    sp_ln_tp_mlp (tests/multidevice/mesh_mlp.h): x [S/n, H] (rows of this rank), gamma,
    beta, b2 [H] replicated, w1 [F/n, H] and b1 [F/n] (column parallel), w2 [H, F/n] (row
    parallel), F = 4 H, float32."""
    Fn = 4 * H // n
    x = torch.randn(S // n, H, device="cuda")
    gamma, beta, b2 = (torch.randn(H, device="cuda") for _ in range(3))
    w1, b1 = torch.randn(Fn, H, device="cuda"), torch.randn(Fn, device="cuda")
    w2 = torch.randn(H, Fn, device="cuda")
    gathered = torch.empty(S, H, device="cuda")
    out = torch.empty(S // n, H, device="cuda")

    def mlp():
        dist.all_gather_into_tensor(gathered, F.layer_norm(x, (H,), gamma, beta, 1e-5))
        z = F.linear(F.gelu(F.linear(gathered, w1, b1)), w2)
        dist.reduce_scatter_tensor(out, z)
        return out + b2

    us = median_us(mlp)
    if rank == 0:
        print(f"sp_ln_tp_mlp {n} {S} {H} {us:.1f}")


def main():
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl")
    bandwidth(rank, n)
    fusions(rank, n)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
