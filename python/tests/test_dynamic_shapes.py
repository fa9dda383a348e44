"""Sizes known only at run time from Python (scalar inputs, define_vector, tensors' sizes)
on the host backend, against NumPy: reshape, slice, iota, full, broadcast_in_dim and random
shapes, several values through one definition; bad values raise with the C library's
message (compile counts per value: tests/executor/test_dynamic.c)."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition


def test_reshape_to_scalar_arithmetic():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        n = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.mul(fd.ops.reshape(t, [n * 2, -1]), 2.0))
    for k in (3, 1, 3, 2):
        (out,) = fd.execute([x, k])
        np.testing.assert_array_equal(out, (x * 2).reshape(2 * k, -1))
    with pytest.raises(cfuser.InvalidArgumentError,
                       match=r"reshape: T0 has 24 elements, not a multiple of 10 for T0_g_float\[iS0\{i0\}, iS1\{i1\}\]"):
        fd.execute([x, 5])
    (out,) = fd.execute([x, 6])
    assert out.shape == (12, 2)


def test_slice_with_scalar_bounds_and_a_size():
    x = np.arange(40, dtype=np.float32).reshape(4, 10)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)
        a = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.slice(t, [a, 0], [t.size(0), a + 5], [1, 2]))
    for k in (1, 3, -2):
        (out,) = fd.execute([x, k])
        np.testing.assert_array_equal(out, x[k:, 0:k + 5:2])


def test_iota_full_and_uniform_of_run_time_sizes():
    with FusionDefinition() as fd:
        n = fd.define_scalar(None, dtype=DataType.Int)
        v = fd.define_vector(2)
        fd.add_output(fd.ops.iota(n, 1, 2, DataType.Int))
        fd.add_output(fd.ops.full(v, 1.5, DataType.Float))
        fd.add_output(fd.ops.uniform(0.0, 1.0, v, DataType.Float, rng_seed=7, rng_offset=0))
    i, f, u = fd.execute([4, [2, 3]])
    np.testing.assert_array_equal(i, [1, 3, 5, 7])
    np.testing.assert_array_equal(f, np.full((2, 3), 1.5, np.float32))
    assert u.shape == (2, 3) and ((u >= 0) & (u < 1)).all()
    i, f, u2 = fd.execute([0, 2, 3])  # a define_vector given flat, as nvFuser takes it
    assert i.shape == (0,)
    np.testing.assert_array_equal(u, u2)


def test_a_negative_size_names_the_tensor_and_axis():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[1, -1], dtype=DataType.Float)
        n = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.broadcast_in_dim(t, [n, t.size(1)], [0, 1]))
    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(fd.execute([x, 2])[0], np.ones((2, 3), np.float32))
    with pytest.raises(cfuser.InvalidArgumentError, match=r"expand: size -4 of axis 0 is negative \(-1 keeps the axis\)"):
        fd.execute([x, -4])
