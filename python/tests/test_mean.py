"""fd.ops.mean over symbolic extents (define_tensor(shape=[-1, -1])) from Python on the
host backend, against NumPy: the sum is divided by the product of the reduced sizes of
each call, so one definition serves every shape."""
import numpy as np
import pytest

from cfuser import FusionDefinition


@pytest.mark.parametrize("dims", [[1], [0], [0, 1]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_of_a_symbolic_2d_tensor_matches_numpy(dims, keepdim):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.mean(t, dims, keepdim=keepdim))
    for shape in [(3, 5), (7, 129), (1, 4)]:
        x = np.random.rand(*shape).astype(np.float32)
        (out,) = fd.execute([x])
        np.testing.assert_allclose(out, x.mean(tuple(dims), keepdims=keepdim), rtol=1e-5, atol=1e-6)


def test_symbolic_mean_subtracted_from_its_rows():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1])
        fd.add_output(fd.ops.sub(t, fd.ops.mean(t, [1], keepdim=True)))
    x = np.random.rand(6, 33).astype(np.float32)
    (out,) = fd.execute([x])
    np.testing.assert_allclose(out, x - x.mean(1, keepdims=True), rtol=1e-5, atol=1e-6)
