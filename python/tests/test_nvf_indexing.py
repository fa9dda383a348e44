"""Port of nvFuser's python frontend tests of its indexing, scan and gcd ops (gcd,
index_select, select, take_along_axis, gather, scatter, cumsum), with NumPy references
(nvf_port.py; the `dev` fixture runs them on torch CUDA where present)."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType
from nvf_port import close, exec_nvfuser, randn


def ints(*shape, lo=-1000, hi=1000, dtype=np.int64, seed=0):
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(dtype)


def test_gcd(dev):
    a, b = ints(1024, seed=1), ints(1024, seed=2)
    a[:4], b[:4] = [0, 0, -12, 7], [0, -5, 18, 0]

    def fusion_func(fd):
        fd.add_output(fd.ops.gcd(fd.from_pytorch(a), fd.from_pytorch(b)))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], np.gcd(a, b), rtol=0, atol=0)


def test_gcd_int32_in_a_fusion(dev):
    a, b = ints(5, 7, dtype=np.int32, seed=3), ints(5, 7, dtype=np.int32, seed=4)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.mul(fd.ops.gcd(fd.ops.add(t0, t1), t1), t0))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], (np.gcd(a + b, b) * a).astype(np.int32), rtol=0, atol=0)


def test_gcd_refuses_floats():
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(1, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="gcd takes integer tensors"):
            fd.ops.gcd(t0, t0)
