"""Port of nvFuser's frontend tests (tests/python/test_python_frontend.py, the legacy suite,
and tests/python/direct/test_python_frontend.py), part 4: arithmetic on Python operators,
where, slices, and the regression tests nvFuser keeps for its issues (test_issueNNNN),
whose fusions are printed definitions with strided, expanded and empty inputs. Each
builds the fusion as nvFuser's test does and compares with NumPy on the same values.

Inputs nvFuser makes with as_strided are NumPy views of the same strides (`strided`);
bfloat16 inputs and outputs need ml_dtypes on NumPy (`bf16`), and the test says so where it
is missing."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType
from nvf_port import close, exec_nvfuser, needs, randn


def strided(base: np.ndarray, shape, strides) -> np.ndarray:
    """torch's as_strided on a 1-D base, strides in elements."""
    return np.lib.stride_tricks.as_strided(base, shape, [s * base.itemsize for s in strides])


def bf16(dev, a: np.ndarray):
    """a rounded to bfloat16 (as an array of dev), or the test skipped where NumPy cannot."""
    if dev.name == "numpy":
        ml = pytest.importorskip("ml_dtypes", reason="bfloat16 on NumPy arrays needs ml_dtypes")
        return a.astype(ml.bfloat16)
    return dev.asarray(a).to(dev.xp.bfloat16)


def as_f32(x) -> np.ndarray:
    """An output read back as float32 (bfloat16 arrays of either library included)."""
    if hasattr(x, "float") and hasattr(x, "cpu"):
        return x.float().cpu().numpy()
    return np.asarray(x).astype(np.float32)


def run_raw(dev, fusion_func, inputs):
    """The fusion's outputs as the library returns them (bfloat16 kept)."""
    with cfuser.FusionDefinition() as fd:
        fusion_func(fd)
    return fd.execute([dev.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs])


def round_bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest even), as float32."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).reshape(a.shape)


def test_arithmetic_ops(dev):
    inputs = [randn(3, 4, 5)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        c0 = fd.define_scalar(1.0)
        t1, t2 = -t0, abs(t0)
        c1, c2 = -c0, abs(c0)
        t3 = -t1 * (c0 - t0 * t0) / t2 + c2**c1 - c0
        fd.add_output(t1)
        fd.add_output(t2)
        fd.add_output(t3)

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    x = inputs[0]
    close(out[0], -x)
    close(out[1], np.abs(x))
    close(out[2], x * (1.0 - x * x) / np.abs(x), rtol=1e-5, atol=1e-5)


def test_cast_scalar(dev):
    inputs = [np.ones((2, 4, 8), np.int32), np.ones((2, 4, 8), np.int32)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        c1 = fd.ops.cast(fd.define_scalar(3.0), DataType.Int32)
        fd.add_output(fd.ops.sum(fd.ops.mul(fd.ops.add(t0, t1), c1), [-1], False, DataType.Int32))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.full((2, 4), 48, np.int32))


def test_cpu_add(dev):
    # a 0-d tensor (a CPU scalar tensor in nvFuser's test) added to a 1-D one
    inputs = [np.array(2.0, np.float32), randn(3)]

    def fusion_func(fd):
        t0, s0 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(t0, s0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


@pytest.mark.parametrize("atype", ["float16", "float32", "bfloat16"])
@pytest.mark.parametrize("btype", ["float16", "float32", "bfloat16"])
def test_where(dev, atype, btype):
    pred = np.array([True, False, True, True, False])
    a, b = randn(5), randn(5, seed=1)
    names = {"float16": DataType.Half, "float32": DataType.Float, "bfloat16": DataType.BFloat16}

    def make(x, t):
        return bf16(dev, x) if t == "bfloat16" else dev.asarray(x.astype(t))

    args = [dev.asarray(pred), make(a, atype), make(b, btype)]

    def fusion_func(fd):
        p = fd.define_tensor(sizes=[5], strides=[1], dtype=DataType.Bool)
        ta = fd.define_tensor(sizes=[5], strides=[1], dtype=names[atype])
        tb = fd.define_tensor(sizes=[5], strides=[1], dtype=names[btype])
        fd.add_output(fd.ops.where(p, ta, tb))

    out = run_raw(dev, fusion_func, args)[0]
    # torch's promotion: equal types keep theirs; half with bfloat16 is float32
    want_t = atype if atype == btype else "float32"
    ra = round_bf16(a) if atype == "bfloat16" else a.astype(atype).astype(np.float32)
    rb = round_bf16(b) if btype == "bfloat16" else b.astype(btype).astype(np.float32)
    got = as_f32(out)
    assert str(out.dtype).endswith(want_t), (out.dtype, want_t)
    np.testing.assert_array_equal(got, np.where(pred, ra, rb))


def test_slice(dev):
    x = randn(2, 5, 10)
    offset = (0, 1, 2)

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float,
                              is_cpu=False, stride_order=[2, 1, 0])
        fd.add_output(fd.ops.slice(t0, start_indices=offset, end_indices=(2, 5, 10), strides=(1, 1, 1)))
        fd.add_output(fd.ops.slice(t0, list(offset), t0.shape()))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    for o in out:
        close(o, x[:, 1:, 2:])


def test_slice_runtime_bounds(dev):
    # nvFuser's test_slice also slices with define_vector bounds given at execute
    x = randn(2, 5, 10)
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Float)
        fd.add_output(fd.ops.slice(t0, fd.define_vector(3), fd.define_vector(3)))
    out, = fd.execute([dev.asarray(x), 0, 1, 2, 2, 5, 10])
    close(dev.to_numpy(out), x[:, 1:, 2:])
    out, = fd.execute([dev.asarray(x), 1, 0, 3, 2, 4, 10])  # other bounds: another concrete fusion
    close(dev.to_numpy(out), x[1:, :4, 3:])


def test_misaligned_add(dev):
    # the first input starts one element in: no vectorized access may be used on it
    inputs = [np.ones(2**20 + 1, np.float32)[1:], np.ones(2**20, np.float32)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.define_scalar(3.0)
        fd.add_output(fd.ops.add(t0, t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.full(2**20, 2, np.float32))


def test_issue1129(dev):
    inputs = [strided(np.random.default_rng(0).integers(0, 10, 25), (5, 5), (5, 1)),
              strided(randn(129024), (2016, 64), (64, 1))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Int, is_cpu=False)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        t4 = fd.ops.reshape(t0, new_shape=fd.define_vector([fd.define_scalar(25, dtype=DataType.Int)],
                                                           dtype=DataType.Int))
        t5 = needs(lambda: fd.ops.index_select(t1, t4, dim=0))
        v9 = fd.define_vector([fd.define_scalar(s, dtype=DataType.Int) for s in (5, 5, 64)], dtype=DataType.Int)
        fd.add_output(fd.ops.reshape(t5, new_shape=v9))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[1][inputs[0].reshape(25)].reshape(5, 5, 64))


@pytest.mark.parametrize("final_mul", [False, True])
def test_issue1246(dev, final_mul):
    # a concatenation with an empty tensor whose strides are those of a non-empty one
    inputs = [strided(randn(8388608 // 64), (1, 32, 256, 16), (131072, 4096, 16, 1)),
              strided(np.zeros(1, np.float32), (1, 32, 256, 0), (131072, 4096, 16, 1))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, True, True],
                              dtype=DataType.Float, is_cpu=False)
        t1 = fd.define_tensor(shape=[1, -1, -1, -1], contiguity=[None, True, False, True],
                              dtype=DataType.Float, is_cpu=False)
        t3 = fd.ops.mul(t0, fd.define_scalar(2.0, dtype=DataType.Double))
        t4 = fd.ops.cat([t3, t1], dim=-1)
        fd.add_output(fd.ops.mul(t4, fd.define_scalar(1.0, dtype=DataType.Double)) if final_mul else t4)

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], 2.0 * inputs[0])


def test_issue1270(dev):
    # empty bfloat16 inputs with expanded axes, reduced over the empty and the non-empty axis
    z = np.zeros(1, np.float32)
    inputs = [bf16(dev, strided(z, (5, 0), (1, 0))), bf16(dev, strided(z, (5, 0), (0, 1)))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.BFloat16, is_cpu=False)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
        t2 = fd.ops.cast(t1, dtype=DataType.Float)
        t4 = fd.ops.full(fill_value=fd.define_scalar(1.0, dtype=DataType.Double), shape=[5, 0],
                         dtype=DataType.BFloat16)
        t5 = fd.ops.cast(t4, dtype=DataType.Float)
        t8 = fd.ops.mul(fd.ops.cast(t0, dtype=DataType.Float), t5)
        fd.add_output(fd.ops.sum(fd.ops.mul(t2, t5), dims=[1], keepdim=False, dtype=DataType.Null))
        fd.add_output(fd.ops.sum(t8, dims=[0], keepdim=False, dtype=DataType.Null))

    out = run_raw(dev, fusion_func, inputs)
    close(as_f32(out[0]), np.zeros(5, np.float32))
    close(as_f32(out[1]), np.zeros(0, np.float32))


def test_issue1273(dev):
    inputs = [strided(randn(4), (2, 2), (2, 1)), 1e-05]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
        s1 = fd.define_scalar(None, dtype=DataType.Double)
        t7 = fd.ops.reshape(t0, new_shape=[2, 1, 2])
        t8, t9 = fd.ops.var_mean(t7, dims=[2], correction=0, keepdim=False)
        t14 = fd.ops.broadcast_in_dim(t8, shape=[2, 1, 1], broadcast_dims=[0, 1])
        t19 = fd.ops.broadcast_in_dim(t9, shape=[2, 1, 1], broadcast_dims=[0, 1])
        t21 = fd.ops.rsqrt(fd.ops.add(t14, s1))
        t26 = fd.ops.broadcast_in_dim(t19, shape=[2, 1, 2], broadcast_dims=[0, 1, 2])
        t27 = fd.ops.sub(t7, t26)
        t32 = fd.ops.broadcast_in_dim(t21, shape=[2, 1, 2], broadcast_dims=[0, 1, 2])
        fd.add_output(fd.ops.reshape(fd.ops.mul(t27, t32), new_shape=[2, 2]))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    x = inputs[0].astype(np.float64).reshape(2, 1, 2)
    want = (x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + 1e-5)
    close(out[0], want.reshape(2, 2).astype(np.float32), rtol=1e-4, atol=1e-5)


def test_issue1279(dev):
    inputs = [randn(2, 1, 2, dtype=np.float16)]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, 1, -1], contiguity=[True, None, True], dtype=DataType.Half, is_cpu=False)
        t5, t6 = fd.ops.var_mean(fd.ops.cast(t0, dtype=DataType.Float), dims=[1], correction=1, keepdim=False)
        fd.add_output(fd.ops.cast(t5, dtype=DataType.Half))
        fd.add_output(fd.ops.cast(t6, dtype=DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    # the variance of one element with correction 1 is 0/0: NaN, as torch gives
    close(out[0], np.full((2, 2), np.nan, np.float16))
    close(out[1], inputs[0][:, 0, :])


def test_issue1310(dev):
    x = randn(16, 128, 768)

    def fusion_func(fd):
        t3 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.BFloat16,
                              is_cpu=False)
        t14 = fd.ops.cast(t3, dtype=DataType.Float)  # the same cast twice, kept as two tensors
        t15 = fd.ops.cast(t3, dtype=DataType.Float)
        fd.add_output(fd.ops.sum(t15, dims=[0, 1], keepdim=False, dtype=DataType.Null))
        fd.add_output(fd.ops.sum(t14, dims=[0, 1], keepdim=False, dtype=DataType.Null))
        fd.add_output(fd.ops.sum(t14, dims=[2], keepdim=False, dtype=DataType.Null))

    out = run_raw(dev, fusion_func, [bf16(dev, x)])
    r = round_bf16(x).astype(np.float64)
    close(as_f32(out[0]), r.sum((0, 1)).astype(np.float32), rtol=1e-4, atol=1e-3)
    close(as_f32(out[1]), as_f32(out[0]))
    close(as_f32(out[2]), r.sum(2).astype(np.float32), rtol=1e-4, atol=1e-3)


def test_issue1393(dev):
    inputs = [strided(randn(5, dtype=np.float16), (3, 4, 5), (0, 0, 1)),
              strided(randn(3, dtype=np.float16, seed=1), (3, 4), (1, 0)),
              strided(randn(4, dtype=np.float16, seed=2), (3, 4), (0, 1))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[None, None, True], dtype=DataType.Half, is_cpu=False)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.Half, is_cpu=False)
        t2 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Half, is_cpu=False)
        t5 = fd.ops.mul(fd.ops.cast(t1, dtype=DataType.Float), fd.ops.cast(t2, dtype=DataType.Float))
        t6 = fd.ops.cast(t5, dtype=DataType.Half)
        v10 = fd.define_vector([fd.define_scalar(s, dtype=DataType.Int) for s in (3, 4, 1)], dtype=DataType.Int)
        t11 = fd.ops.reshape(t6, new_shape=v10)
        v15 = fd.define_vector([fd.define_scalar(s, dtype=DataType.Int) for s in (3, 4, 5)], dtype=DataType.Int)
        t16 = fd.ops.broadcast_in_dim(t11, shape=v15, broadcast_dims=[0, 1, 2])
        t19 = fd.ops.mul(fd.ops.cast(t16, dtype=DataType.Float), fd.ops.cast(t0, dtype=DataType.Float))
        fd.add_output(fd.ops.cast(t19, dtype=DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    f = [x.astype(np.float32) for x in inputs]
    t6 = (f[1] * f[2]).astype(np.float16).astype(np.float32)
    close(out[0], (t6[:, :, None] * f[0]).astype(np.float16))


def test_issue1691(dev):
    inputs = [strided(randn(12), (1, 3, 4), (12, 4, 1)), strided(randn(12, seed=1), (4, 3), (3, 1))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[1, -1, -1], contiguity=True, dtype=DataType.Float, is_cpu=False,
                              stride_order=[2, 1, 0])
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.Float, is_cpu=False, stride_order=[1, 0])
        t2 = fd.ops.sum(t1, dims=[1], keepdim=False, dtype=DataType.Null)
        t3 = fd.ops.sum(t0, dims=[1, 0], keepdim=False, dtype=DataType.Null)
        t6 = fd.ops.reshape(t2, new_shape=fd.define_vector([fd.define_scalar(4, dtype=DataType.Int)], dtype=DataType.Int))
        t9 = fd.ops.reshape(t3, new_shape=fd.define_vector([fd.define_scalar(4, dtype=DataType.Int)], dtype=DataType.Int))
        fd.add_output(fd.ops.sum(fd.ops.mul(t6, t9), dims=[0], keepdim=False, dtype=DataType.Null))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    want = (inputs[0].astype(np.float64).sum((0, 1)) * inputs[1].astype(np.float64).sum(1)).sum(0)
    close(out[0], np.float32(want), rtol=1e-5, atol=1e-5)


def test_issue1706(dev):
    # a generated backward of an RMS norm (bfloat16, rows of 4096; 512 rows on the host
    # backend, nvFuser's 4096 on CUDA): it must run, and its one output is a cast of an input
    n = 4096 if dev.name == "torch-cuda" else 512
    rng = np.random.default_rng(0)
    x5 = rng.standard_normal((10, 32)).astype(np.float32)
    inputs = [1e-6, 10, n, 4096, bf16(dev, rng.standard_normal((1, n, 4096)).astype(np.float32)),
              bf16(dev, x5), bf16(dev, rng.standard_normal((1, n, 4096)).astype(np.float32)),
              bf16(dev, rng.standard_normal((1, n, 1)).astype(np.float32) ** 2 + 1),
              bf16(dev, np.broadcast_to(rng.standard_normal((1, 1, 4096)).astype(np.float32), (1, n, 4096)))]

    def fusion_func(fd):
        s0 = fd.define_scalar(None, dtype=DataType.Double)
        for _ in range(3):
            fd.define_scalar(None, dtype=DataType.Int)
        t4 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
        t5 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)
        t6 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, True, True], dtype=DataType.BFloat16, is_cpu=False)
        t7 = fd.define_tensor(shape=[1, -1, 1], contiguity=[None, True, None], dtype=DataType.BFloat16, is_cpu=False)
        t8 = fd.define_tensor(shape=[1, -1, -1], contiguity=[None, None, True], dtype=DataType.BFloat16, is_cpu=False)
        f = DataType.Float
        t9, t10 = fd.ops.cast(t6, dtype=f), fd.ops.cast(t6, dtype=f)
        t12 = fd.ops.rsqrt(fd.ops.cast(t7, dtype=f))
        t18 = fd.ops.broadcast_in_dim(fd.ops.cast(t12, dtype=DataType.BFloat16), shape=[1, n, 4096],
                                      broadcast_dims=[0, 1, 2])
        t19, t20 = fd.ops.cast(t6, dtype=f), fd.ops.cast(t18, dtype=f)
        t22 = fd.ops.cast(fd.ops.mul(t19, t20), dtype=DataType.BFloat16)
        t23, t24, t25 = fd.ops.cast(t8, dtype=f), fd.ops.cast(t22, dtype=f), fd.ops.cast(t4, dtype=f)
        t28 = fd.ops.cast(fd.ops.mul(t25, t23), dtype=DataType.BFloat16)
        t29 = fd.ops.cast(fd.ops.mul(t25, t24), dtype=DataType.BFloat16)
        t31 = fd.ops.sum(fd.ops.cast(t29, dtype=f), dims=[0, 1], keepdim=False, dtype=DataType.Null)
        t33 = fd.ops.cast(fd.ops.cast(t31, dtype=DataType.BFloat16), dtype=f)
        fd.ops.cast(fd.ops.mul(t33, fd.ops.reciprocal(fd.define_scalar(2.0, dtype=DataType.Double))),
                    dtype=DataType.BFloat16)
        t38 = fd.ops.cast(t28, dtype=f)
        t42 = fd.ops.cast(fd.ops.mul(t38, t20), dtype=DataType.BFloat16)
        t41 = fd.ops.cast(fd.ops.mul(t38, t19), dtype=DataType.BFloat16)
        t45 = fd.ops.cast(fd.ops.sum(fd.ops.cast(t41, dtype=f), dims=[0, 2], keepdim=False, dtype=DataType.Null),
                          dtype=DataType.BFloat16)
        t51 = fd.ops.cast(fd.ops.broadcast_in_dim(t45, shape=[1, n, 1], broadcast_dims=[1]), dtype=f)
        t56 = fd.ops.mul(fd.ops.mul(fd.define_scalar(-0.5, dtype=DataType.Double), t51),
                         fd.ops.pow(t12, fd.define_scalar(3.0, dtype=DataType.Double)))
        t60 = fd.ops.cast(fd.ops.cast(fd.ops.cast(fd.ops.cast(t56, dtype=DataType.BFloat16), dtype=f),
                                      dtype=DataType.BFloat16), dtype=f)
        t63 = fd.ops.sum(fd.ops.mul(t60, fd.ops.reciprocal(s0)), dims=[0, 2], keepdim=False, dtype=DataType.Null)
        t72 = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(t63, shape=[1, n], broadcast_dims=[1]),
                                      shape=[1, n, 1], broadcast_dims=[0, 1])
        t79 = fd.ops.cast(fd.ops.cast(fd.ops.broadcast_in_dim(t72, shape=[1, n, 4096], broadcast_dims=[0, 1, 2]),
                                      dtype=DataType.BFloat16), dtype=f)
        t82 = fd.ops.cast(fd.ops.mul(t79, t9), dtype=DataType.BFloat16)
        t83 = fd.ops.cast(fd.ops.mul(t79, t10), dtype=DataType.BFloat16)
        t86 = fd.ops.add(fd.ops.cast(t42, dtype=f), fd.ops.cast(t83, dtype=f))
        t90 = fd.ops.add(fd.ops.cast(fd.ops.cast(t86, dtype=DataType.BFloat16), dtype=f), fd.ops.cast(t82, dtype=f))
        fd.ops.cast(fd.ops.cast(fd.ops.cast(t90, dtype=DataType.BFloat16), dtype=f), dtype=DataType.BFloat16)
        t99 = fd.ops.mul(fd.ops.cast(t5, dtype=f), fd.ops.reciprocal(fd.define_scalar(2.0, dtype=DataType.Double)))
        fd.add_output(fd.ops.cast(t99, dtype=DataType.BFloat16))

    out = run_raw(dev, fusion_func, inputs)
    close(as_f32(out[0]), round_bf16(round_bf16(x5) / 2))


def test_issue1872(dev):
    # two slices of a full, no inputs at all
    def fusion_func(fd):
        v2 = fd.define_vector([fd.define_scalar(5, dtype=DataType.Int)], dtype=DataType.Int)
        t3 = fd.ops.full(shape=v2, fill_value=fd.define_scalar(1.0, dtype=DataType.Double), dtype=DataType.Float)
        fd.add_output(fd.ops.cast(fd.ops.slice(t3, start_indices=[0], end_indices=[2], strides=[1]), dtype=DataType.Half))
        fd.add_output(fd.ops.cast(fd.ops.slice(t3, start_indices=[2], end_indices=[5], strides=[1]), dtype=DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, [])
    close(out[0], np.ones(2, np.float16))
    close(out[1], np.ones(3, np.float16))


def test_issue1953(dev):
    # rotary embedding's backward: permute, reshape, two slices, sums, pads (batch 128 on
    # CUDA as nvFuser's, 4 on the host backend)
    b = 128 if dev.name == "torch-cuda" else 4
    rng = np.random.default_rng(0)
    cos, sin = rng.standard_normal(6144).astype(np.float32), rng.standard_normal(6144).astype(np.float32)
    g1 = rng.standard_normal(b * 73728).astype(np.float32)
    g2 = rng.standard_normal(b * 73728).astype(np.float32)
    t10, t11 = strided(cos, (b, 256, 6, 24), (0, 24, 0, 1)), strided(sin, (b, 256, 6, 24), (0, 24, 0, 1))
    t12 = np.lib.stride_tricks.as_strided(round_bf16(g1), (b, 6, 256, 48), [4 * s for s in (73728, 48, 288, 1)])
    t13 = np.lib.stride_tricks.as_strided(round_bf16(g2), (b, 6, 256, 48), [4 * s for s in (73728, 48, 288, 1)])
    args = [b, 256, 6, 24, 2, b, 256, 6, 24, 2, dev.asarray(t10), dev.asarray(t11)]
    for g in (g1, g2):  # the bfloat16 inputs with nvFuser's strides
        flat = bf16(dev, g)
        if dev.name == "numpy":
            args.append(np.lib.stride_tricks.as_strided(flat, (b, 6, 256, 48), [2 * s for s in (73728, 48, 288, 1)]))
        else:
            args.append(flat.as_strided((b, 6, 256, 48), (73728, 48, 288, 1)))

    def rope_grad(fd, t, t10, t11):
        t22 = fd.ops.reshape(fd.ops.permute(fd.ops.cast(t, dtype=DataType.Float), dims=[0, 2, 1, 3]),
                             new_shape=[b, 256, 6, 24, 2])
        t23 = fd.ops.slice(t22, start_indices=[0] * 5, end_indices=[b, 256, 6, 24, 1], strides=[1] * 5)
        t24 = fd.ops.slice(t22, start_indices=[0, 0, 0, 0, 1], end_indices=[b, 256, 6, 24, 2], strides=[1] * 5)
        t25 = fd.ops.sum(t24, dims=[4], keepdim=False, dtype=DataType.Null)
        t26 = fd.ops.sum(t23, dims=[4], keepdim=False, dtype=DataType.Null)
        t32 = fd.ops.cast(fd.ops.add(fd.ops.mul(t25, t10), fd.ops.mul(fd.ops.neg(t26), t11)), dtype=DataType.BFloat16)
        t35 = fd.ops.cast(fd.ops.add(fd.ops.mul(t25, t11), fd.ops.mul(t26, t10)), dtype=DataType.BFloat16)
        t42 = fd.ops.broadcast_in_dim(t32, shape=[b, 256, 6, 24, 1], broadcast_dims=[0, 1, 2, 3])
        t49 = fd.ops.broadcast_in_dim(t35, shape=[b, 256, 6, 24, 1], broadcast_dims=[0, 1, 2, 3])
        t51 = fd.ops.pad(t42, [1, 0] + [0] * 8, fd.define_scalar(0.0, dtype=DataType.Double))
        t53 = fd.ops.pad(t49, [0, 1] + [0] * 8, fd.define_scalar(0.0, dtype=DataType.Double))
        return fd.ops.cast(fd.ops.add(fd.ops.cast(t51, dtype=DataType.Float), fd.ops.cast(t53, dtype=DataType.Float)),
                           dtype=DataType.BFloat16)

    def fusion_func(fd):
        for _ in range(10):
            fd.define_scalar(None, dtype=DataType.Int)
        t10 = fd.define_tensor(shape=[-1] * 4, contiguity=[None, True, None, True], dtype=DataType.Float,
                               stride_order=[3, 2, 1, 0])
        t11 = fd.define_tensor(shape=[-1] * 4, contiguity=[None, True, None, True], dtype=DataType.Float,
                               stride_order=[3, 2, 1, 0])
        t12 = fd.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=DataType.BFloat16, stride_order=[3, 1, 2, 0])
        t13 = fd.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=DataType.BFloat16, stride_order=[3, 1, 2, 0])
        fd.add_output(rope_grad(fd, t13, t10, t11))
        fd.add_output(rope_grad(fd, t12, t10, t11))

    out = run_raw(dev, fusion_func, args)

    def ref(t):
        x = t.transpose(0, 2, 1, 3).reshape(b, 256, 6, 24, 2).astype(np.float64)
        a, c = x[..., 1], x[..., 0]
        t32 = round_bf16((a * t10 - c * t11).astype(np.float32))  # padded on the left: the odd elements
        t35 = round_bf16((a * t11 + c * t10).astype(np.float32))  # padded on the right: the even ones
        return np.stack([t35, t32], axis=-1)

    close(as_f32(out[0]), ref(t13), rtol=1e-2, atol=1e-2)
    close(as_f32(out[1]), ref(t12), rtol=1e-2, atol=1e-2)


def test_issue2755(dev):
    x = randn(10)

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1])
        t2 = fd.ops.neg(fd.ops.slice(t0, start_indices=[0], end_indices=[5]))
        fd.add_output(fd.ops.neg(fd.ops.slice(t2, start_indices=[0], end_indices=[2])))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x[:2])


def test_issue3292(dev):
    x = randn(5, 5, 576)

    def fusion_func(fd):
        t2 = fd.define_tensor(shape=[5, 5, 576], contiguity=[True, True, True], dtype=DataType.Float,
                              stride_order=[2, 1, 0])
        t31 = fd.ops.permute(fd.ops.reshape(t2, new_shape=[5, 5, 1, 9, 64]), dims=[0, 2, 3, 1, 4])
        t50 = fd.ops.slice(t31, start_indices=[0] * 5, end_indices=[5, 1, 7, 5, 64], strides=[1] * 5,
                           manual_normalization=0)
        t108 = fd.ops.reshape(t50, new_shape=[5, 7, 5, 64])

        def rotate(t):
            lo = fd.ops.slice(t, start_indices=[0] * 4, end_indices=[5, 7, 5, 32], strides=[1] * 4)
            hi = fd.ops.slice(t, start_indices=[0, 0, 0, 32], end_indices=[5, 7, 5, 64], strides=[1] * 4)
            return fd.ops.cat([fd.ops.neg(hi), lo], dim=-1, manual_padding=0)

        t154 = rotate(t108)
        t169 = fd.ops.add(fd.ops.mul(t108, t108), fd.ops.mul(t154, t154))
        t203 = rotate(t108)
        fd.ops.mul(t203, t203)
        t222 = fd.ops.slice(t108, start_indices=[0] * 4, end_indices=[5, 7, 5, 0], strides=[1] * 4)
        fd.add_output(fd.ops.cat([t169, t222], dim=-1, manual_padding=0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    t108 = x.reshape(5, 5, 1, 9, 64).transpose(0, 2, 3, 1, 4)[:, :, :7].reshape(5, 7, 5, 64)
    rot = np.concatenate([-t108[..., 32:], t108[..., :32]], -1)
    close(out[0], t108 * t108 + rot * rot)


def test_fix_2549(dev):
    a, b = np.ones((4, 1)), np.ones((4, 4))

    def fusion_func(fd):
        t0 = fd.define_tensor(sizes=a.shape, strides=[1, 1], dtype=DataType.Double, is_cpu=False)
        t1 = fd.define_tensor(sizes=b.shape, strides=[4, 1], dtype=DataType.Double, is_cpu=False)
        fd.add_output(fd.ops.div(t1, fd.ops.broadcast_in_dim(t0, shape=[4, 4], broadcast_dims=[0, 1])))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], b / a)


def test_issue4888(dev):
    # attention's masked softmax with two in-place updates (a mask or-ed into an input, a
    # product cast into another): 4096 rows on CUDA as nvFuser's, 64 on the host backend
    n = 4096 if dev.name == "torch-cuda" else 64
    rng = np.random.default_rng(0)
    x0 = round_bf16(rng.standard_normal((n, n + 1)).astype(np.float32))
    m1, m2 = rng.random((n, n + 1)) < 0.5, rng.random((n, n + 1)) < 0.5
    x3 = round_bf16(rng.standard_normal((1, 32, n, n)).astype(np.float32))
    args = [bf16(dev, x0), dev.asarray(m1.copy()), dev.asarray(m2), bf16(dev, x3)]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[n, n + 1], contiguity=[True, True], dtype=DataType.BFloat16, stride_order=[1, 0])
        t1 = fd.define_tensor(shape=[n, n + 1], contiguity=[True, True], dtype=DataType.Bool, stride_order=[1, 0])
        t2 = fd.define_tensor(shape=[n, n + 1], contiguity=[True, True], dtype=DataType.Bool, stride_order=[1, 0])
        t3 = fd.define_tensor(shape=[1, 32, n, n], contiguity=[None, True, True, True], dtype=DataType.BFloat16,
                              stride_order=[3, 2, 1, 0])
        t6 = fd.ops.set(fd.ops.bitwise_or(t1, t2))
        fd.add_output(t6, t1)
        t8 = fd.ops.mul(fd.ops.cast(t0, dtype=DataType.Float), fd.ops.cast(t6, dtype=DataType.Float))
        t10 = fd.ops.set(fd.ops.cast(t8, dtype=DataType.BFloat16))
        fd.add_output(t10, t0)
        t15 = fd.ops.broadcast_in_dim(t10, shape=[1, n, n + 1], broadcast_dims=[1, 2])
        t21 = fd.ops.broadcast_in_dim(t15, shape=[1, 1, n, n + 1], broadcast_dims=[0, 2, 3])
        t27 = fd.ops.broadcast_in_dim(t21, shape=[1, 1, n, n + 1], broadcast_dims=[0, 1, 2, 3])
        t43 = fd.ops.slice(t27, start_indices=[0] * 4, end_indices=[1, 1, n, n], strides=[1] * 4,
                           manual_normalization=0)
        t49 = fd.ops.broadcast_in_dim(t43, shape=[1, 32, n, n], broadcast_dims=[0, 1, 2, 3])
        t54 = fd.ops.add(fd.ops.mul(fd.ops.cast(t3, dtype=DataType.Float),
                                    fd.define_scalar(0.0883883, dtype=DataType.Double)),
                         fd.ops.cast(t49, dtype=DataType.Float))
        t55 = fd.ops.max(t54, dims=[3], keepdim=False, dtype=DataType.Null)
        t67 = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(t55, shape=[1, 32, n, 1], broadcast_dims=[0, 1, 2]),
                                      shape=[1, 32, n, n], broadcast_dims=[0, 1, 2, 3])
        t69 = fd.ops.exp(fd.ops.sub(t54, t67))
        t70 = fd.ops.sum(t69, dims=[3], keepdim=False, dtype=DataType.Null)
        t82 = fd.ops.broadcast_in_dim(fd.ops.broadcast_in_dim(t70, shape=[1, 32, n, 1], broadcast_dims=[0, 1, 2]),
                                      shape=[1, 32, n, n], broadcast_dims=[0, 1, 2, 3])
        t84 = fd.ops.mul(t69, fd.ops.reciprocal(t82))
        fd.add_output(t49)
        fd.add_output(t84)
        fd.add_output(fd.ops.cast(t84, dtype=DataType.BFloat16))

    out = run_raw(dev, fusion_func, args)
    mask = m1 | m2
    t10 = round_bf16(x0 * mask)
    np.testing.assert_array_equal(as_f32(args[1]).astype(bool), mask)  # updated in place
    np.testing.assert_array_equal(as_f32(args[0]), t10)
    t49 = np.broadcast_to(t10[None, None, :, :n], (1, 32, n, n))
    s = x3.astype(np.float64) * 0.0883883 + t49
    e = np.exp(s - s.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    assert len(out) == 3
    close(as_f32(out[0]), t49)
    close(as_f32(out[1]), sm.astype(np.float32), rtol=1e-4, atol=1e-6)
    close(as_f32(out[2]), round_bf16(as_f32(out[1])))


def test_bcast_squeeze_replace_aliased_output(dev):
    x0 = randn(1, 1, 576)
    args = [bf16(dev, x0), bf16(dev, randn(1, 576, seed=1))]

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[1, 1, 576], contiguity=[None, None, True], dtype=DataType.BFloat16,
                              stride_order=[2, 1, 0])
        t1 = fd.define_tensor(shape=[1, 576], contiguity=[None, True], dtype=DataType.BFloat16, stride_order=[1, 0])
        t5 = fd.ops.reshape(t0, new_shape=[1, 576])
        fd.add_output(fd.ops.set(t5), t1)
        fd.add_output(t5)

    out = run_raw(dev, fusion_func, args)
    assert len(out) == 1
    close(as_f32(out[0]), round_bf16(x0[:, 0]))
    close(as_f32(args[1]), round_bf16(x0[:, 0]))


@pytest.mark.parametrize("spelling", ["add_output", "stride_order"])
def test_broadcast_and_stride_order(dev, spelling):
    # the legacy suite gives the order to add_output, the direct one to fd.ops.stride_order
    x = randn(2, 3, 4)

    def fusion_func(fd):
        t1 = fd.ops.broadcast(fd.from_pytorch(x), is_broadcast_dim=[False, True, False, False])
        if spelling == "add_output":
            fd.add_output(t1, stride_order=[0, 1, 2, 3])
        else:
            fd.add_output(fd.ops.stride_order(t1, stride_order=[0, 1, 2, 3]))

    out = run_raw(dev, fusion_func, [x])[0]
    close(dev.to_numpy(out), x[:, None])
    strides = out.stride() if hasattr(out, "stride") and callable(out.stride) else \
        tuple(s // out.itemsize for s in out.strides)
    assert tuple(strides) == (1, 2, 2, 6)


def test_broadcast_in_dim_no_redundant_set():
    # broadcast_in_dim that broadcasts nothing is the same fusion as expand
    def body(fd, spell):
        t0 = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        t2 = fd.ops.broadcast_in_dim(t0, t1.shape(), [0, 1]) if spell else fd.ops.expand(t0, t1.shape())
        fd.add_output(fd.ops.add(t2, t1))

    with cfuser.FusionDefinition() as fd_bid:
        body(fd_bid, True)
    with cfuser.FusionDefinition() as fd_exp:
        body(fd_exp, False)
    assert fd_bid.math_text() == fd_exp.math_text()


def test_expanded_to_size_one(dev):
    x = np.random.default_rng(0).integers(0, 10, (1, 1))

    def fusion_func(fd):
        fd.add_output(fd.define_tensor(shape=[1, -1], contiguity=[None, None], dtype=DataType.Int))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x)


def test_dynamic_full(dev):
    t1 = randn(5, 10)

    def fusion_func(fd):
        c4, c5 = fd.define_scalar(None, dtype=DataType.Int), fd.define_scalar(None, dtype=DataType.Int)
        c6 = fd.define_scalar(None, dtype=DataType.Float)
        tv1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(fd.ops.full((c4, c5), c6, DataType.Float), tv1))

    with cfuser.FusionDefinition() as fd:
        fusion_func(fd)
    out, = fd.execute([5, 10, 2.5, dev.asarray(t1)])
    close(dev.to_numpy(out), t1 + np.float32(2.5))


def test_full_with_cpu_inputs(dev):
    x = np.array(2.0, np.float32)

    def fusion_func(fd):
        tv0 = fd.from_pytorch(x)
        tv1 = fd.ops.full(shape=[2, 2], fill_value=fd.define_scalar(3.0), dtype=DataType.Float)
        fd.add_output(fd.ops.mul(tv0, tv1))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.full((2, 2), 6.0, np.float32))


def test_issue1277(dev):
    # partial rotary embedding (the first 4 of 16 head dims) of q and of a transposed k
    rng = np.random.default_rng(0)
    trig = [strided(rng.standard_normal(20).astype(np.float32), (5, 4, 5, 4), (0, 0, 4, 1)) for _ in range(4)]
    q, k = randn(5, 4, 5, 16), randn(5, 4, 16, 5, seed=1)

    def rope(fd, x, cos, sin):
        pad = fd.define_scalar(0.0, dtype=DataType.Double)
        rot = fd.ops.slice(x, start_indices=[0] * 4, end_indices=[5, 4, 5, 4], strides=[1] * 4)
        rest = fd.ops.pad(fd.ops.slice(x, start_indices=[0, 0, 0, 4], end_indices=[5, 4, 5, 16], strides=[1] * 4),
                          [4, 0, 0, 0, 0, 0, 0, 0], pad)
        one = fd.define_scalar(1.0, dtype=DataType.Double)
        s = fd.ops.mul(fd.ops.mul(one, rot), sin)
        c = fd.ops.mul(fd.ops.mul(one, rot), cos)
        lo = fd.ops.slice(s, start_indices=[0] * 4, end_indices=[5, 4, 5, 2], strides=[1] * 4)
        hi = fd.ops.slice(s, start_indices=[0, 0, 0, 2], end_indices=[5, 4, 5, 4], strides=[1] * 4)
        t27 = fd.ops.add(fd.ops.add(c, fd.ops.pad(fd.ops.neg(lo), [2, 0, 0, 0, 0, 0, 0, 0], pad)),
                         fd.ops.pad(hi, [0, 2, 0, 0, 0, 0, 0, 0], pad))
        return fd.ops.add(rest, fd.ops.pad(t27, [0, 12, 0, 0, 0, 0, 0, 0], pad))

    def fusion_func(fd):
        s0, s1 = fd.define_scalar(None, dtype=DataType.Double), fd.define_scalar(None, dtype=DataType.Double)
        t2, t3, t4, t5 = (fd.define_tensor(shape=[-1] * 4, contiguity=[None, None, True, True], dtype=DataType.Float)
                          for _ in range(4))
        t6 = fd.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=DataType.Float)
        t7 = fd.define_tensor(shape=[-1] * 4, contiguity=[True] * 4, dtype=DataType.Float)
        t30 = rope(fd, fd.ops.mul(t6, s0), t2, t3)
        fd.add_output(rope(fd, fd.ops.permute(fd.ops.mul(t7, s1), dims=[0, 1, 3, 2]), t4, t5))
        fd.add_output(t30)

    out, _ = exec_nvfuser(dev, fusion_func, [0.5, 0.5, *trig, q, k])

    def ref(x, cos, sin):
        r = x[..., :4]
        s, c = r * sin, r * cos
        return np.concatenate([c + np.concatenate([s[..., 2:], -s[..., :2]], -1), x[..., 4:]], -1)

    close(out[0], ref(k.transpose(0, 1, 3, 2) * 0.5, trig[2], trig[3]), rtol=1e-5, atol=1e-6)
    close(out[1], ref(q * 0.5, trig[0], trig[1]), rtol=1e-5, atol=1e-6)
