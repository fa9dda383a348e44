"""cfuser.multidevice on the host mesh: nvFuser's multidevice frontend (a mesh, the DID
parallel types in fd.sched, sharded inputs and outputs) with NumPy shards, each device's
result against NumPy on the unsharded arrays."""
import math
import re

import numpy as np
import pytest

from cfuser import FusionDefinition, ParallelType
from cfuser.multidevice import DeviceMesh, MultiDeviceExecutor, nccl_available, shard_tensor
from cfuser.types import InvalidArgumentError, InvalidScheduleError
from mesh_mlp import sp_ln_tp_mlp


def test_mesh_notation():
    assert repr(DeviceMesh(range(4))) == "DeviceMesh{0 1 2 3}"
    assert repr(DeviceMesh([[0, 1], [2, 3]])) == "DeviceMesh{{0 1}{2 3}}"
    assert DeviceMesh(np.arange(2)).size == 2
    with pytest.raises(InvalidArgumentError, match="is not a mesh"):
        DeviceMesh([0, 0])


# nvFuser's test_multidevice.py::test_pointwise on the host mesh.
@pytest.mark.parametrize("n", [2, 4])
def test_pointwise(n, rng):
    with FusionDefinition() as fd:
        inp = fd.define_tensor([n, 4])
        t1 = fd.ops.relu(inp)
        fd.add_output(fd.ops.add(t1, t1))
    mesh = DeviceMesh(range(n))
    fd.sched.set_device_mesh(inp, mesh)
    fd.sched.parallelize(inp, 0, ParallelType.mesh_x)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    ex = MultiDeviceExecutor(fd)
    outs = ex.run_host_mesh([[shard_tensor(fd, x, inp, d)] for d in range(n)])
    for d in range(n):
        np.testing.assert_allclose(outs[d][0], (np.maximum(x, 0) * 2)[d:d + 1], rtol=1e-6)
    assert ex.num_communications == 0


# A sum over the sharded axis: a local sum and an allreduce; every device gets the total.
def test_sum_over_sharded_axis_in_schedule(rng):
    class Fd(FusionDefinition):
        def definition(self):
            self.x = self.define_tensor([8, 6])
            self.add_output(self.ops.sum(self.x, [0]))

        def schedule(self):
            self.sched.set_device_mesh(self.x, DeviceMesh(range(2)))
            self.sched.split(self.x, 0, 2, inner_split=False)
            self.sched.parallelize(self.x, 0, ParallelType.mesh_x)

    fd = Fd()
    x = rng.standard_normal((8, 6)).astype(np.float32)
    ex = MultiDeviceExecutor(fd)
    outs = ex.run_host_mesh([[shard_tensor(fd, x, fd.x, d)] for d in range(2)])
    for d in range(2):
        np.testing.assert_allclose(outs[d][0], x.sum(0), rtol=1e-5)
    assert ex.num_communications == 1 and ex.num_segments == 1


def test_errors_carry_cfusers_message():
    with FusionDefinition() as fd:
        x = fd.define_tensor([6, 4])
        fd.add_output(fd.ops.exp(x))
    fd.sched.set_device_mesh(x, DeviceMesh(range(4)))
    fd.sched.parallelize(x, 0, ParallelType.mesh_x)
    with pytest.raises(InvalidScheduleError, match="must have the mesh axis.s extent 4"):
        MultiDeviceExecutor(fd).run_host_mesh([[np.zeros((1, 4), np.float32)]] * 4)


def test_nccl_availability_is_said():
    why = nccl_available()
    assert why is None or why.startswith("NCCL unavailable")


def _mlp_reference(x, gamma, beta, w1, b1, w2, b2):
    """The unsharded math of test_sequence_parallel_layer_norm_tensor_parallel_mlp, in
    float64: layer norm (biased variance, eps 1e-5), linear, exact gelu, linear, + b2."""
    x, gamma, beta, w1, b1, w2, b2 = (a.astype(np.float64) for a in (x, gamma, beta, w1, b1, w2, b2))
    xc = x - x.mean(1, keepdims=True)
    y = xc / np.sqrt((xc * xc).mean(1, keepdims=True) + 1e-5) * gamma + beta
    h = y @ w1.T + b1
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    return h @ w2.T + b2


# Megatron's sequence-parallel layer norm + tensor-parallel MLP (mesh_mlp.py; in C,
# tests/multidevice/mesh_mlp.h). The plan: the layer norm, an allgather, one segment (both
# linears and gelu on F/n), a reduce-scatter of the partial sums onto the rows, + b2.
@pytest.mark.parametrize("n", [2, 4])
def test_sequence_parallel_layer_norm_tensor_parallel_mlp(n, rng):
    S, H, F = 8, 16, 32
    fd, (x, gamma, beta, w1, b1, w2, b2) = sp_ln_tp_mlp(n, S, H, F)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((S, H), (H,), (H,), (F, H), (F,), (H, F), (H,))]
    ex = MultiDeviceExecutor(fd)
    outs = ex.run_host_mesh([[shard_tensor(fd, a, t, d) for a, t in zip(inputs, (x, gamma, beta, w1, b1, w2, b2))]
                             for d in range(n)])
    want = _mlp_reference(*inputs)
    rows = S // n
    for d in range(n):
        np.testing.assert_allclose(outs[d][0], want[d * rows:(d + 1) * rows], rtol=1e-4, atol=1e-4)
    assert ex.num_communications == 2 and ex.num_segments == 3


def _gpus_for_torchrun():
    """The GPUs torchrun can spread over here (>= 2), or why this machine cannot."""
    import importlib.util
    import shutil
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not installed (the GPU run compares with torch.distributed)"
    import torch
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        return None, "fewer than two CUDA GPUs here (a sharded run needs a GPU per rank)"
    if shutil.which("torchrun") is None:
        return None, "torchrun is not on PATH"
    if nccl_available() is not None:
        return None, nccl_available()
    return min(torch.cuda.device_count(), 4), None


# torchrun_multidevice.py on this machine's GPUs: MultiDeviceExecutor.run on torch CUDA
# shards, each case equal to torch.distributed's computation on every rank.
def test_sharded_fusions_on_gpus_equal_torch_distributed():
    import os
    import subprocess
    import sys
    n, why = _gpus_for_torchrun()
    if n is None:
        pytest.skip(why)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, MASTER_PORT=os.environ.get("CFUSER_TEST_MASTER_PORT", "29631"))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={n}",
                           os.path.join(here, "torchrun_multidevice.py")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    oks = re.findall(r"rank \d+: \w+ ok ", proc.stdout)  # the ranks' lines may interleave
    assert len(oks) == 5 * n, proc.stdout


def _torch_with_gpus(count):
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not installed (these tensors are torch CUDA tensors)"
    import torch
    if not torch.cuda.is_available() or torch.cuda.device_count() < count:
        return None, f"fewer than {count} CUDA GPUs here"
    return torch, None


# A run goes to the device of its tensors (torchrun's rank 1 runs on cuda:1): a fusion on
# torch tensors of the second GPU returns its outputs there; tensors on two GPUs are refused.
def test_define_and_run_on_the_second_gpu():
    torch, why = _torch_with_gpus(2)
    if torch is None:
        pytest.skip(why)
    with FusionDefinition() as fd:
        x = fd.define_tensor([333, 1025])
        y = fd.define_tensor([1025])
        fd.add_output(fd.ops.relu(fd.ops.add(fd.ops.sum(x, [0]), y)))
    a, b = torch.randn(333, 1025, device="cuda:1"), torch.randn(1025, device="cuda:1")
    for _ in range(3):  # the first call compiles; the later ones take torch's fast path
        out, = fd.execute([a, b])
        assert out.device == a.device
        torch.testing.assert_close(out, torch.relu(a.sum(0) + b), rtol=1e-4, atol=1e-4)
    with pytest.raises(InvalidArgumentError, match="must all be on one device"):
        fd.execute([a, b.to("cuda:0")])
