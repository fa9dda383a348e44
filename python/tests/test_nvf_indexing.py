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


def _lookup_of_a_sum(dev, op, index, dim):
    """nvFuser's tests of index_select, take_along_axis and gather: the looked-up tensor is
    computed (t0 + t1), so define and run cuts before the lookup."""
    inputs = [randn(8, 16), randn(8, 16, seed=1), index]

    def fusion_func(fd):
        t0, t1, t2 = (fd.from_pytorch(x) for x in inputs)
        fd.add_output(getattr(fd.ops, op)(fd.ops.add(t0, t1), t2, dim))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    return out[0], inputs[0] + inputs[1]


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select(dev, dim):
    index = ints(6, lo=0, hi=8, seed=2)
    got, x = _lookup_of_a_sum(dev, "index_select", index, dim)
    close(got, np.take(x, index, axis=dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_scalar_indices(dev, dim):
    inputs = [randn(8, 16), np.array(2, np.int64)]

    def fusion_func(fd):
        fd.add_output(fd.ops.index_select(fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1]), dim))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.take(inputs[0], inputs[1].reshape(1), axis=dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_select(dev, dim):
    inputs = [randn(8, 16), 2]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        s1 = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.select(t0, s1, dim))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.take(inputs[0], 2, axis=dim))


def test_select_constant_negative_index(dev):
    x = randn(3, 5, 7)

    def fusion_func(fd):
        fd.add_output(fd.ops.mul(fd.ops.select(fd.from_pytorch(x), -1, 1), 2.0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x[:, -1, :] * 2)


@pytest.mark.parametrize("dim", [0, 1])
def test_take_along_axis(dev, dim):
    index = ints(8, 16, lo=0, hi=8, seed=3)
    got, x = _lookup_of_a_sum(dev, "take_along_axis", index, dim)
    close(got, np.take_along_axis(x, index, axis=dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_gather(dev, dim):
    index = ints(4, 4, lo=0, hi=8, seed=4)
    got, x = _lookup_of_a_sum(dev, "gather", index, dim)
    want = x[index, np.arange(4)[None, :]] if dim == 0 else x[np.arange(4)[:, None], index]
    close(got, want)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_computed_index_and_consumer(dev, index_dtype):
    # a pointwise producer of the index and a consumer of the result, negative indices
    x, i = randn(5, 9), ints(5, 3, lo=-9, hi=9, dtype=index_dtype, seed=5)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(i)
        idx = fd.ops.sub(fd.ops.add(t1, 2), 2)
        fd.add_output(fd.ops.relu(fd.ops.gather(t0, idx, 1)))

    out, _ = exec_nvfuser(dev, fusion_func, [x, i])
    close(out[0], np.maximum(np.take_along_axis(x, i.astype(np.int64) % 9, 1), 0))


def _scatter_inputs(bsz=128, hidden=1024, size=64):
    x = randn(bsz, hidden)
    ind = np.argsort(-x, axis=0, kind="stable")[:size]  # torch.topk's indices: unique per column
    return x, ind.astype(np.int64), randn(size, hidden, seed=1)


def _scatter_ref(x, ind, src):
    out = x.copy()
    np.put_along_axis(out, ind, src[: ind.shape[0], : ind.shape[1]], axis=0)
    return out


def test_scatter_output_intermediate(dev):
    x, ind, src = _scatter_inputs()

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        t2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sigmoid(fd.ops.scatter(t0, t1, t2, 0)))

    out, _ = exec_nvfuser(dev, fusion_func, [x, ind, src])
    close(out[0], 1 / (1 + np.exp(-_scatter_ref(x, ind, src))))


def test_scatter_scalar_src(dev):
    x, ind, _ = _scatter_inputs()

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int)
        s2 = fd.define_scalar(None, dtype=DataType.Double)
        fd.add_output(fd.ops.scatter(t0, t1, s2, 0))

    out, _ = exec_nvfuser(dev, fusion_func, [x, ind, 1.5])
    close(out[0], _scatter_ref(x, ind, np.full(ind.shape, 1.5, np.float32)))


def test_scatter_duplicate_gives_one_of_the_candidates(dev):
    x = np.zeros((4, 3), np.float32)
    ind = np.array([[1, 0, 2], [1, 3, 2]], np.int64)  # (0, 0) and (1, 0) both name row 1
    src = np.array([[10, 20, 30], [40, 50, 60]], np.float32)

    def fusion_func(fd):
        t0, t1, t2 = (fd.from_pytorch(a) for a in (x, ind, src))
        fd.add_output(fd.ops.scatter(t0, t1, t2, 0))

    out, _ = exec_nvfuser(dev, fusion_func, [x, ind, src])
    got = out[0]
    assert got[1, 0] in (10, 40) and got[2, 2] in (30, 60)
    got[1, 0] = got[2, 2] = 0
    close(got, np.array([[0, 20, 0], [0, 0, 0], [0, 0, 0], [0, 50, 0]], np.float32), rtol=0, atol=0)


@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum(dev, dim):
    x = randn(8, 16)

    def fusion_func(fd):
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), dim))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.cumsum(x, axis=dim, dtype=np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("np_dtype", [np.int32, np.int64, np.bool_])
def test_cumsum_integers_give_int64(dev, np_dtype):
    x = ints(5, 7, lo=0 if np_dtype is np.bool_ else -(1 << 20), hi=2 if np_dtype is np.bool_ else 1 << 20,
             dtype=np_dtype, seed=6)

    def fusion_func(fd):
        fd.add_output(fd.ops.cumsum(fd.from_pytorch(x), -1))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    assert out[0].dtype == np.int64
    close(out[0], np.cumsum(x.astype(np.int64), axis=-1), rtol=0, atol=0)


def test_index_errors():
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(2, dtype=DataType.Float)
        t1 = fd.define_tensor(1, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="an index must be int32 or int64"):
            fd.ops.index_select(t0, t1, 0)
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(2, dtype=DataType.Float)
        with pytest.raises(cfuser.InvalidArgumentError, match="out of range"):
            fd.ops.cumsum(t0, 2)
