"""Megatron's sequence-parallel layer norm + tensor-parallel MLP as a sharded
FusionDefinition (tests/multidevice/mesh_mlp.h in C), shared by test_multidevice.py (the
host mesh) and torchrun_multidevice.py (GPUs): x sharded on its rows, w1 and b1 on F
(column parallel), w2 on F (row parallel); the gathered layer norm output and the second
linear's output placed as nvFuser's tests do. The plan: the layer norm, an allgather, one
segment (both linears and gelu on F/n), a reduce-scatter of the partial sums onto the
rows, + b2. Not a test module (no test_ prefix)."""
from cfuser import FusionDefinition, ParallelType
from cfuser.multidevice import DeviceMesh


def sp_ln_tp_mlp(n, S, H, F):
    """(fd, inputs) on a mesh of n devices; inputs are the fusion's input tensors in order:
    x [S, H], gamma, beta [H], w1 [F, H], b1 [F], w2 [H, F], b2 [H]."""
    with FusionDefinition() as fd:
        x, gamma, beta = fd.define_tensor([S, H]), fd.define_tensor([H]), fd.define_tensor([H])
        w1, b1 = fd.define_tensor([F, H]), fd.define_tensor([F])
        w2, b2 = fd.define_tensor([H, F]), fd.define_tensor([H])
        xc = fd.ops.sub(x, fd.ops.mean(x, [1], keepdim=True))
        var = fd.ops.mean(fd.ops.mul(xc, xc), [1], keepdim=True)
        y = fd.ops.add(fd.ops.mul(fd.ops.mul(xc, fd.ops.rsqrt(fd.ops.add(var, 1e-5))), gamma), beta)
        gathered = fd.ops.set(y)
        z = fd.ops.linear(fd.ops.gelu(fd.ops.linear(gathered, w1, b1)), w2)
        fd.add_output(fd.ops.add(z, b2))
    mesh = DeviceMesh(range(n))
    for t in (x, gamma, beta, w1, b1, w2, b2, gathered, z):
        fd.sched.set_device_mesh(t, mesh)
    for t, axis in ((x, 0), (w1, 0), (b1, 0), (w2, 1), (z, 0)):
        fd.sched.split(t, axis, n, inner_split=False)
        fd.sched.parallelize(t, axis, ParallelType.mesh_x)
    return fd, (x, gamma, beta, w1, b1, w2, b2)
