"""Shape ops and scalar inputs from Python on the host backend, against NumPy."""
import numpy as np
import pytest

from cfuser import DataType, FusionDefinition


def test_squeeze_expand_full_and_a_scalar_input():
    x = np.random.rand(4, 1, 8).astype(np.float32)
    with FusionDefinition() as fd:
        t = fd.define_tensor([4, 1, 8])
        eps = fd.define_scalar(DataType.Float)
        s = fd.ops.add(fd.ops.squeeze(t, [1]), eps)
        e = fd.ops.expand(fd.ops.broadcast(s, [False, True, False]), [-1, 3, -1])
        fd.add_output(fd.ops.mul(e, fd.ops.full([4, 3, 8], 2.5, DataType.Float)))
    (out,) = fd.execute([x, 0.5])
    want = np.broadcast_to((x[:, 0, :] + np.float32(0.5))[:, None, :], (4, 3, 8)) * np.float32(2.5)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    (out,) = fd.execute([x, np.array(1.5, dtype=np.float32)])
    want = np.broadcast_to((x[:, 0, :] + np.float32(1.5))[:, None, :], (4, 3, 8)) * np.float32(2.5)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_full_like_and_expand_as():
    x = np.random.rand(5, 6).astype(np.float32)
    b = np.random.rand(1, 6).astype(np.float32)
    with FusionDefinition() as fd:
        tx = fd.define_tensor([5, 6])
        tb = fd.define_tensor([1, 6])
        fd.add_output(fd.ops.add(fd.ops.mul(fd.ops.full_like(tx, 3), tx), fd.ops.expand_as(tb, tx)))
    (out,) = fd.execute([x, b])
    np.testing.assert_allclose(out, 3 * x + b, rtol=1e-6)


def test_squeeze_error_names_the_tensor_and_axis():
    with pytest.raises(Exception, match=r"squeeze: axis 0 \(iS0\{4\}\) of T0 is neither a broadcast axis nor of extent 1"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([4, 8])
            fd.ops.squeeze(t, [0])
