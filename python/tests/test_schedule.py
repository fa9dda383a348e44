"""Scheduling by hand through fd.sched, the subclass form of nvFuser (definition() and
schedule()), printing, launch parameters, and reductions left to the default schedule."""
import io

import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition, MemoryType, ParallelType
from cfuser.types import InvalidScheduleError


def test_manual_schedule_sets_the_launch():
    with FusionDefinition() as fd:
        a = fd.define_tensor([1000])
        b = fd.ops.exp(a)
        fd.add_output(b)
    fd.sched.split(b, 0, 128)
    fd.sched.propagate_transforms(b)
    fd.sched.parallelize(b, 0, ParallelType.grid_x)
    fd.sched.parallelize(b, 1, ParallelType.block_x)
    fd.sched.parallelize_all_like(b)
    fd.sched.inline_most()
    assert b.naxes == 2 and b.axis(0) == (8, ParallelType.grid_x) and b.axis(-1) == (128, ParallelType.block_x)
    assert repr(b) == "T1_g_float[iblockIdx.x2{8}, ithreadIdx.x3{128}] ca_pos( 2 )"
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    out, = fd.execute([x])
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    assert fd.last_launch_params() == {"grid": (8, 1, 1), "block": (128, 1, 1), "smem": 0}
    assert "blockIdx.x" in fd.kernel_text()


def test_cache_vectorize_and_shared_memory():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 64])
        b = fd.ops.relu(a)
        fd.add_output(b)
    ca = fd.sched.cache_after(a)
    cb = fd.sched.cache_before(b)
    assert (ca.name, cb.name) == ("T2", "T3")
    fd.sched.split(b, 1, 4)
    fd.sched.propagate_transforms(b)
    fd.sched.parallelize(b, 0, ParallelType.grid_x)
    fd.sched.parallelize(b, 1, ParallelType.block_x)
    fd.sched.parallelize_all_like(b, [ParallelType.grid_x, ParallelType.block_x])
    fd.sched.parallelize(ca, 2, ParallelType.vectorize)
    fd.sched.parallelize(b, 2, ParallelType.vectorize)
    fd.sched.inline_most()
    assert ca.axis(2) == (4, ParallelType.vectorize) and ca.memory_type == MemoryType.local
    x = np.random.default_rng(0).standard_normal((4, 64), dtype=np.float32)
    out, = fd.execute([x])
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    assert fd.last_launch_params()["block"] == (16, 1, 1)


def test_reorder_merge_and_inline_at():
    with FusionDefinition() as fd:
        a = fd.define_tensor([6, 4])
        b = fd.ops.neg(a)
        c = fd.ops.exp(b)
        fd.add_output(c)
    fd.sched.reorder(c, {0: 1})
    fd.sched.merge(c, 0)
    fd.sched.split(c, 0, 8, inner_split=False)
    fd.sched.propagate_transforms(c)
    fd.sched.inline_at(b, 1)
    assert b.compute_at_pos == 1 and c.naxes == 2 and c.axis(0)[0] == 8
    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 24
    np.testing.assert_allclose(fd.execute([x])[0], np.exp(-x), rtol=1e-6)


def test_print_math_and_transforms():
    with FusionDefinition() as fd:
        a = fd.define_tensor([2, 3])
        fd.add_output(fd.ops.sin(a))
    text = fd.math_text()
    assert text.startswith("Inputs:\n  T0_g_float[iS0{2}, iS1{3}]\nOutputs:\n  T1_g_float[iS2{2}, iS3{3}]\n")
    assert "= sin( T0_g_float[iS0{2}, iS1{3}] );" in text
    buf = io.StringIO()
    fd.print_math(file=buf)
    assert buf.getvalue() == text
    fd.sched.print_transforms(file=buf)
    assert "logical domain : (iS0{2}, iS1{3})" in buf.getvalue()
    with pytest.raises(cfuser.InvalidArgumentError, match="print_kernel: an unscheduled definition is scheduled "
                       "for the input shapes of each execute"):
        fd.print_kernel()  # define and run: the kernel depends on the call
    with pytest.raises(cfuser.InvalidArgumentError):
        fd.sched.inline_most()  # print_kernel froze the schedule
    fd.execute([np.zeros((2, 3), dtype=np.float32)])
    buf = io.StringIO()
    fd.print_kernel(file=buf)  # the pointwise scheduler's: 128 threads
    assert buf.getvalue().startswith('extern "C" __global__ void __launch_bounds__(128) cfuser_kernel(')


class Softplusish(FusionDefinition):
    """nvFuser's subclass form: definition() runs on construction, schedule() at the
    first execute."""

    def definition(self):
        self.a = self.define_tensor([256])
        self.out = self.ops.log(self.ops.exp(self.a) + 1.0)
        self.add_output(self.out)

    def schedule(self):
        self.sched.split(self.out, 0, 64)
        self.sched.propagate_transforms(self.out)
        self.sched.parallelize(self.out, 1, ParallelType.block_x)
        self.sched.parallelize_all_like(self.out)
        self.sched.inline_most()


def test_definition_and_schedule_methods():
    fd = Softplusish()
    x = np.linspace(-3, 3, 256, dtype=np.float32)
    out, = fd.execute([x])
    np.testing.assert_allclose(out, np.log(np.exp(x) + 1), rtol=1e-5)
    assert fd.last_launch_params()["block"] == (64, 1, 1)
    assert "threadIdx.x" in fd.kernel_source()


def test_reductions_run_on_the_default_schedule():
    x = np.random.default_rng(2).standard_normal((5, 33), dtype=np.float32)
    with FusionDefinition() as fd:
        a = fd.define_tensor(2)
        fd.add_output(fd.ops.sum(fd.ops.exp(a), 1))
        fd.add_output(a - fd.ops.max(a, -1, keepdim=True))
    s, centered = fd.execute([x])
    np.testing.assert_allclose(s, np.exp(x).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(centered, x - x.max(-1, keepdims=True))


def test_permute_and_transpose():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    with FusionDefinition() as fd:
        a = fd.define_tensor(3, dtype=DataType.Int32)
        fd.add_output(fd.ops.permute(a, [2, 0, 1]))
        fd.add_output(fd.ops.transpose(a, 0, 2))
    p, t = fd.execute([x])
    np.testing.assert_array_equal(p, x.transpose(2, 0, 1))
    np.testing.assert_array_equal(t, x.transpose(2, 1, 0))


# tma_load on a tile that is not in shared memory is refused with cfuser's message.
def test_tma_load_of_a_local_tile_is_refused():
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8])
        y = fd.ops.set(x)
        fd.add_output(fd.ops.exp(y))
    with pytest.raises(InvalidScheduleError, match=r"tma_load: T1 is in Local memory; TMA fills shared-memory tiles"):
        fd.sched.tma_load(y)


# circular_buffer's prefetch distance (nvFuser's circularBuffer(stages, prefetch_distance)):
# out of 1 .. stages - 1 it is refused with cfuser's message.
def test_circular_buffer_prefetch_out_of_range_is_refused():
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8])
        y = fd.ops.set(x)
        fd.add_output(fd.ops.exp(y))
    with pytest.raises(InvalidScheduleError, match=r"asks to fill 4 iterations ahead with 4 stages; 1 to 3 "):
        fd.sched.circular_buffer(y, 4, prefetch=4)


def test_spill_to_shared_keeps_part_of_a_local_tensor_in_shared_memory():
    """Each thread's 8 floats of c: 4 in registers, 4 in shared memory (64 threads x 16
    bytes), filled by cp.async; the host backend places them alike."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([64, 8])
        c = fd.ops.set(x)
        o = fd.ops.add(c, c)
        fd.add_output(o)
    for t in (c, o):
        fd.sched.split(t, 1, 4)
        fd.sched.parallelize(t, 0, ParallelType.block_x)
    fd.sched.parallelize(c, 2, ParallelType.vectorize)
    fd.sched.inline_at(c, 1)
    fd.sched.spill_to_shared(c, 4)
    x_ = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    out, = fd.execute([x_])
    np.testing.assert_array_equal(out, 2 * x_)
    assert fd.last_launch_params()["smem"] == 1024
    assert "cf_spill_at<4, 4, 64>(T1, T1_s, " in fd.kernel_text()


def test_spill_to_shared_of_all_elements_is_refused():
    with FusionDefinition() as fd:
        x = fd.define_tensor([64, 8])
        c = fd.ops.set(x)
        fd.add_output(fd.ops.add(c, c))
    fd.sched.parallelize(c, 0, ParallelType.block_x)
    fd.sched.inline_at(c, 1)
    fd.sched.spill_to_shared(c, 8)
    with pytest.raises(InvalidScheduleError, match=r"T1 keeps 8 of its 8 elements in registers"):
        fd.execute([np.zeros((64, 8), np.float32)])
