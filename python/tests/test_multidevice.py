"""cfuser.multidevice on the host mesh: nvFuser's multidevice frontend (a mesh, the DID
parallel types in fd.sched, sharded inputs and outputs) with NumPy shards, each device's
result against NumPy on the unsharded arrays."""
import numpy as np
import pytest

from cfuser import FusionDefinition, ParallelType
from cfuser.multidevice import DeviceMesh, MultiDeviceExecutor, nccl_available, shard_tensor
from cfuser.types import InvalidArgumentError, InvalidScheduleError


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
