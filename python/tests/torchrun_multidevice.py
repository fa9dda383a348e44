"""python/tests/torchrun_multidevice.py: cfuser.multidevice on real GPUs, beside
torch.distributed in the same processes. Run under torchrun (one process per GPU):

    CFUSER_LIBRARY=build/libcfuser.so PYTHONPATH=python \\
        torchrun --nproc-per-node=N python/tests/torchrun_multidevice.py

Each rank joins torch's NCCL process group (its store on MASTER_PORT) and cfuser's own
communicator (MASTER_PORT + 1), builds each case with FusionDefinition and the DID parallel
types, runs MultiDeviceExecutor.run on its torch CUDA shards and compares the output shard
with the same computation written with torch and torch.distributed (local ops on the shard
and the collective the plan needs): a pointwise op on sharded rows, a sum over sharded
rows (an allreduce), a softmax of sharded rows, a layer norm of sharded columns (two
allreduces) and Megatron's sequence-parallel layer norm + tensor-parallel MLP (allgather,
linear, gelu, linear, reduce-scatter, + b2) at S=2048, H=1024, F=4096. It prints
`rank R: NAME ok max_err E cfuser_us C torch_us T` per case, and exits 1 on any mismatch
(after every case ran). python/tests/test_multidevice.py runs it where a machine has two
or more GPUs and says why it skips elsewhere."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from cfuser import FusionDefinition, ParallelType
from cfuser.multidevice import DeviceMesh, MultiDeviceExecutor
from mesh_mlp import sp_ln_tp_mlp


def median_us(fn, iters=20, warmup=3):
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


def full(*shape):
    """A tensor every rank makes alike (the generator is seeded per case)."""
    return torch.randn(*shape, device="cuda")


def shard(t, axis, rank, n):
    return t.chunk(n, axis)[rank].contiguous()


def sharded_input(fd, t, axis, mesh):
    fd.sched.set_device_mesh(t, mesh)
    fd.sched.split(t, axis, mesh.size, inner_split=False)
    fd.sched.parallelize(t, axis, ParallelType.mesh_x)


def all_sum(t, op=dist.ReduceOp.SUM):
    dist.all_reduce(t, op=op)
    return t


def case_pointwise(mesh, rank, n, rows=4096, cols=8192):
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        fd.add_output(fd.ops.relu(fd.ops.mul(fd.ops.exp(x), x)))
    sharded_input(fd, x, 0, mesh)
    xs = shard(full(rows, cols), 0, rank, n)
    return fd, [xs], lambda: torch.relu(xs.exp() * xs)


def case_sum_sharded_rows(mesh, rank, n, rows=4096, cols=8192):
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        fd.add_output(fd.ops.sum(x, [0]))
    sharded_input(fd, x, 0, mesh)
    xs = shard(full(rows, cols), 0, rank, n)
    return fd, [xs], lambda: all_sum(xs.sum(0))


def case_softmax_rows(mesh, rank, n, rows=4096, cols=8192):
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        m = fd.ops.broadcast_in_dim(fd.ops.max(x, [1]), [rows, 1], [0])
        e = fd.ops.exp(fd.ops.sub(x, m))
        fd.add_output(fd.ops.div(e, fd.ops.broadcast_in_dim(fd.ops.sum(e, [1]), [rows, 1], [0])))
    sharded_input(fd, x, 0, mesh)
    xs = shard(full(rows, cols), 0, rank, n)
    return fd, [xs], lambda: torch.softmax(xs, 1)


def case_layer_norm_cols(mesh, rank, n, rows=4096, cols=8192):
    with FusionDefinition() as fd:
        x = fd.define_tensor([rows, cols])
        xc = fd.ops.sub(x, fd.ops.mean(x, [1], keepdim=True))
        var = fd.ops.mean(fd.ops.mul(xc, xc), [1], keepdim=True)
        fd.add_output(fd.ops.mul(xc, fd.ops.rsqrt(fd.ops.add(var, 1e-5))))
    sharded_input(fd, x, 1, mesh)
    xs = shard(full(rows, cols), 1, rank, n)

    def ref():
        xc = xs - all_sum(xs.sum(1, keepdim=True)) / cols
        return xc * torch.rsqrt(all_sum((xc * xc).sum(1, keepdim=True)) / cols + 1e-5)
    return fd, [xs], ref


def case_sp_ln_tp_mlp(mesh, rank, n, S=2048, H=1024):
    """mesh_mlp.py's MLP (tests/multidevice/mesh_mlp.h in C) at a model's size: x on its
    rows, w1 and b1 on F, w2 on F, the output on its rows."""
    Fd = 4 * H
    fd, _ = sp_ln_tp_mlp(mesh.size, S, H, Fd)
    xf, g, b, w1f, b1f, w2f, b2f = full(S, H), full(H), full(H), full(Fd, H), full(Fd), full(H, Fd), full(H)
    ins = [shard(xf, 0, rank, n), g, b, shard(w1f, 0, rank, n), shard(b1f, 0, rank, n), shard(w2f, 1, rank, n), b2f]
    gath, out = torch.empty(S, H, device="cuda"), torch.empty(S // n, H, device="cuda")

    def ref():
        dist.all_gather_into_tensor(gath, F.layer_norm(ins[0], (H,), g, b, 1e-5))
        dist.reduce_scatter_tensor(out, F.linear(F.gelu(F.linear(gath, ins[3], ins[4])), ins[5]))
        return out + b2f
    return fd, ins, ref


CASES = [case_pointwise, case_sum_sharded_rows, case_softmax_rows, case_layer_norm_cols, case_sp_ln_tp_mlp]


def run_case(make, mesh, rank, n):
    torch.manual_seed(1234)
    fd, ins, ref = make(mesh, rank, n)
    ex = MultiDeviceExecutor(fd)
    got, want = ex.run(ins)[0], ref()
    torch.cuda.synchronize()
    scale = max(want.abs().max().item(), 1.0)
    err = (got.float() - want.float()).abs().max().item()
    ok = got.shape == want.shape and err <= 1e-4 * scale + 1e-5 * ins[0].shape[-1] ** 0.5 * scale
    cf_us, torch_us = median_us(lambda: ex.run(ins)), median_us(ref)
    name = make.__name__[len("case_"):]
    print(f"rank {rank}: {name} {'ok' if ok else 'MISMATCH'} max_err {err:.3g} (of {scale:.3g}) "
          f"cfuser_us {cf_us:.1f} torch_us {torch_us:.1f}", flush=True)
    return ok


def main():
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.backends.cuda.matmul.allow_tf32 = False   # float32 matmuls in float32, as cfuser's
    dist.init_process_group("nccl")
    mesh = DeviceMesh(range(n))
    bad = [make.__name__ for make in CASES if not run_case(make, mesh, rank, n)]
    dist.barrier()
    dist.destroy_process_group()
    if bad:
        print(f"rank {rank}: mismatched: {' '.join(bad)}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
