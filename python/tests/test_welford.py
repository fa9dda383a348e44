"""Welford from Python: var_mean as torch.var_mean (NumPy's var with ddof), the states'
fields, a layernorm through var_mean, a scheduled block reduction of states, and the
errors a tensor of states gives."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition, ParallelType


def _x(shape, seed=5):
    return (np.random.default_rng(seed).standard_normal(shape) * 3 + 1).astype(np.float32)


@pytest.mark.parametrize("correction,keepdim", [(1, False), (0, True)])
def test_var_mean_matches_numpy(correction, keepdim):
    x = _x((4, 7, 33))
    with FusionDefinition() as fd:
        a = fd.define_tensor(3)
        var, mean = fd.ops.var_mean(a, [0, 2], correction=correction, keepdim=keepdim)
        fd.add_output(var)
        fd.add_output(mean)
    v, m = fd.execute([x])
    np.testing.assert_allclose(v, x.var((0, 2), ddof=correction, keepdims=keepdim), rtol=1e-5)
    np.testing.assert_allclose(m, x.mean((0, 2), keepdims=keepdim), rtol=1e-5, atol=1e-6)


def test_fields_of_welford_states():
    x = _x((5, 40))
    with FusionDefinition() as fd:
        a = fd.define_tensor(2)
        w = fd.ops.welford(a, 1)
        assert w.dtype == DataType.WelfordFloat
        fd.add_output(fd.ops.welford_avg(w))
        fd.add_output(fd.ops.welford_m2(w))
        fd.add_output(fd.ops.welford_n(w))
    avg, m2, n = fd.execute([x])
    np.testing.assert_allclose(avg, x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m2, ((x - x.mean(1, keepdims=True)) ** 2).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(n, np.full(5, 40, dtype=np.int64))


def test_layernorm_through_a_scheduled_block_welford():
    x = _x((6, 128))
    with FusionDefinition() as fd:
        a = fd.define_tensor(2)
        var, mean = fd.ops.var_mean(a, 1, correction=0, keepdim=True)
        y = (a - mean) * fd.ops.rsqrt(var + 1e-5)
        fd.add_output(y)
    fd.sched.parallelize(y, 0, ParallelType.grid_x)
    fd.sched.parallelize(y, 1, ParallelType.block_x)
    fd.sched.parallelize_all_like(y)
    fd.sched.inline_most()
    out, = fd.execute([x])
    want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    assert "__shfl_xor_sync" in fd.kernel_source()


@pytest.mark.parametrize("misuse,message", [
    (lambda fd, a, w: fd.ops.exp(w), "exp: T1 holds Welford states"),
    (lambda fd, a, w: fd.ops.welford_avg(a), "welford_avg: T0 has dtype float, not Welford states"),
    (lambda fd, a, w: fd.add_output(w), "add_output: T1 holds Welford states; output cf_welford_avg"),
    (lambda fd, a, w: fd.ops.var_mean(a, 1, correction=-1), "var_mean: correction is -1"),
    (lambda fd, a, w: fd.ops.welford(fd.ops.cast(a, DataType.Int32), 1), "welford: T2 has dtype int"),
])
def test_states_refuse_other_ops_and_outputs(misuse, message):
    with pytest.raises(cfuser.InvalidArgumentError, match=message.replace("(", r"\(")):
        with FusionDefinition() as fd:
            a = fd.define_tensor(2)
            misuse(fd, a, fd.ops.welford(a, 1))
