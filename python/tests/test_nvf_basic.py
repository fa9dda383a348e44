"""Port of nvFuser's tests/python/test_python_frontend.py (the legacy frontend's suite),
part 1: arithmetic, casts, broadcasting, expand, shapes, scalars, reductions. Each test
builds the fusion as the nvFuser test does and compares with NumPy (nvf_port.py)."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType
from nvf_port import close, exec_nvfuser, randn


def test_basic(dev):
    inputs = [np.ones((2, 4, 8), np.float32), np.ones((2, 4, 8), np.float32)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        c0 = fd.define_scalar(3.0)
        fd.add_output(fd.ops.sum(fd.ops.mul(fd.ops.add(t0, t1), c0), [-1], False, DataType.Float))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.full((2, 4), 48, np.float32))


def test_basic_fp16(dev):
    inputs = [np.ones((2, 4, 8), np.float16), np.ones((2, 4, 8), np.float16)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        t3 = fd.ops.mul(fd.ops.add(t0, t1), fd.define_scalar(3.0))
        fd.add_output(fd.ops.cast(fd.ops.sum(t3, [-1], False, DataType.Float), DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.full((2, 4), 48, np.float16))


def test_cast_double_to_half(dev):
    inputs = [randn(2, 4, dtype=np.float64), randn(2, 4, dtype=np.float64, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        t2 = fd.ops.add(fd.ops.cast(t0, DataType.Half), fd.ops.cast(t1, DataType.Half))
        fd.add_output(fd.ops.cast(fd.ops.relu(t2), DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    a, b = inputs[0].astype(np.float16), inputs[1].astype(np.float16)
    close(out[0], np.maximum((a.astype(np.float32) + b).astype(np.float16), 0), rtol=1e-3)


def test_promote_to_double(dev):
    inputs = [randn(2, 4, dtype=np.float16), randn(2, 4, dtype=np.float64)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.relu(fd.ops.add(t0, t1)))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.maximum(inputs[0].astype(np.float64) + inputs[1], 0))


def test_implicit_broadcast_input(dev):
    inputs = [randn(3), randn(2, 3, 4)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(t0, [2, 3, 4], [1]), t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0][None, :, None] + inputs[1])


def test_explicit_broadcast_input(dev):
    inputs = [randn(1, 1, 4), randn(2, 3, 4)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(fd.ops.broadcast_in_dim(t0, inputs[1].shape, [0, 1, 2]), t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


def test_expand(dev):
    inputs = [randn(1, 1, 4), randn(2, 3, 4)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(fd.ops.expand(t0, inputs[1].shape), t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


def test_broadcast_mixing(dev):
    inputs = [randn(3, 1), randn(3)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(t0, fd.ops.broadcast_in_dim(t1, [3, 3], [0])))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + np.broadcast_to(inputs[1][:, None], (3, 3)))


def test_ops_broadcast(dev):
    inputs = [randn(3), randn(2, 3, 4)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.add(fd.ops.broadcast(t0, [True, False, True]), t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0][None, :, None] + inputs[1])


def _layer_norm_ref(x, w, b, eps=1e-5):
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    var = x64.var(-1, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + eps) * w + b).astype(np.float32)


def test_prim_layer_norm_fwd(dev):
    inputs = [randn(4, 8, 64), randn(64, seed=1), randn(64, seed=2)]

    def fusion_func(fd):
        x, w, b = (fd.define_tensor(shape=[-1] * n, contiguity=[True] * n, dtype=DataType.Float) for n in (3, 1, 1))
        n = fd.define_scalar(64.0)
        mean = fd.ops.div(fd.ops.sum(x, [2], True), n)
        diff = fd.ops.sub(x, mean)
        var = fd.ops.div(fd.ops.sum(fd.ops.mul(diff, diff), [2], True), n)
        y = fd.ops.mul(diff, fd.ops.rsqrt(fd.ops.add(var, fd.define_scalar(1e-5))))
        w3 = fd.ops.broadcast_in_dim(w, x.shape(), [2])
        b3 = fd.ops.broadcast_in_dim(b, x.shape(), [2])
        fd.add_output(fd.ops.add(fd.ops.mul(y, w3), b3))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], _layer_norm_ref(*inputs), rtol=1e-4, atol=1e-4)


def test_prim_rms_norm_fwd(dev):
    inputs = [randn(4, 8, 64), randn(64, seed=1)]

    def fusion_func(fd):
        x, w = fd.define_tensor(3), fd.define_tensor(1)
        ms = fd.ops.div(fd.ops.sum(fd.ops.mul(x, x), [2], True), fd.define_scalar(64.0))
        y = fd.ops.mul(x, fd.ops.rsqrt(fd.ops.add(ms, fd.define_scalar(1e-5))))
        fd.add_output(fd.ops.mul(y, fd.ops.broadcast_in_dim(w, x.shape(), [2])))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    x = inputs[0].astype(np.float64)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * inputs[1]
    close(out[0], want.astype(np.float32), rtol=1e-4, atol=1e-4)


def test_tensor_ndim():
    # nvFuser's test has rank 12; the host backend's kernels take at most rank 8 (CUDA: 16)
    shape = [2 for _ in range(8)]
    new_shape = shape[:5] + [8]
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(shape)
        t1 = fd.ops.reshape(t0, new_shape)
        fd.add_output(t1)
    assert (t0.ndim, t1.ndim) == (8, 6)
    out, = fd.execute([np.ones(shape, np.float32)])
    assert out.shape == tuple(new_shape)


def test_execute_with_tuple_and_list(dev):
    shape = [2, 3, 4]
    new_shape = [6, 4]
    x = randn(*shape)

    def fusion_func(fd):
        t0 = fd.define_tensor(3)
        n = fd.define_vector(2)
        fd.add_output(fd.ops.reshape(t0, n))

    fd = cfuser.FusionDefinition()
    with fd:
        fusion_func(fd)
    for sizes in (new_shape, tuple(new_shape)):
        out, = fd.execute([dev.asarray(x), sizes])
        close(dev.to_numpy(out), x.reshape(new_shape))


def test_tensor_shape(dev):
    inputs = [randn(1, 4, 1), randn(2, 1, 3)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        shape = fd.ops.shape(t0 + t1 if False else fd.ops.add(
            fd.ops.broadcast_in_dim(t0, [2, 4, 3], [0, 1, 2]), fd.ops.broadcast_in_dim(t1, [2, 4, 3], [0, 1, 2])))
        t2 = fd.ops.full(shape, 1.5, DataType.Float)
        fd.add_output(t2)

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.full((2, 4, 3), 1.5, np.float32))


def test_tensor_shape_nobcast(dev):
    inputs = [randn(2, 3), randn(2, 3, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        add = fd.ops.add(t0, t1)
        fd.add_output(fd.ops.broadcast_in_dim(add, t1.shape(), [0, 1]))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


def test_tensor_size_both_args_bcast(dev):
    inputs = [randn(1, 3), randn(1, 3, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        t0_b = fd.ops.broadcast_in_dim(t0, [t0.size(0), t1.size(1)], [0, 1])
        t1_b = fd.ops.broadcast_in_dim(t1, [t0.size(0), t1.size(1)], [0, 1])
        fd.add_output(fd.ops.add(t0_b, t1_b))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


def test_broadcast_in_dim_with_dynamic_shapes(dev):
    for s0, s1 in [((1024, 2, 4), (1024,)), ((20, 8, 3), (20,))]:
        inputs = [randn(*s0), randn(*s1)]

        def fusion_func(fd):
            t0, t1 = fd.define_tensor(3), fd.define_tensor(1)
            t1_b = fd.ops.broadcast_in_dim(t1, t0.shape(), [0])
            fd.add_output(fd.ops.add(t0, t1_b))

        out, _ = exec_nvfuser(dev, fusion_func, inputs)
        close(out[0], inputs[0] + inputs[1][:, None, None])


def test_tensor_shape_with_output_bcast(dev):
    inputs = [randn(2, 3, 4)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        t1 = fd.ops.sum(t0, [2])
        fd.add_output(fd.ops.broadcast_in_dim(t1, t0.shape(), [0, 1]))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.broadcast_to(inputs[0].sum(2, keepdims=True), (2, 3, 4)), rtol=1e-5)


def test_tensor_shape_expand_bcast(dev):
    inputs = [randn(2, 1, 4), randn(2, 3, 4)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        t0_b = fd.ops.broadcast_in_dim(t0, t1.shape(), [0, 1, 2])
        fd.add_output(fd.ops.add(t0_b, t1))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])


def test_squeeze(dev):
    inputs = [randn(3, 1, 4, 1, 5)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        fd.add_output(fd.ops.squeeze(t0, [1, 3]))
        fd.add_output(fd.ops.squeeze(t0, [-2, -4]))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0].reshape(3, 4, 5))
    close(out[1], inputs[0].reshape(3, 4, 5))


def test_zero_size_dim(dev):
    inputs = [np.ones((0, 3), np.float32)]

    def fusion_func(fd):
        t0 = fd.define_tensor([0, 3], [True, True])
        fd.add_output(fd.ops.relu(t0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.zeros((0, 3), np.float32))


def test_static_tensor_sizes(dev):
    inputs = [randn(4, 5, 1), randn(1, 5, 6)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0], static_sizes=True)
        t1 = fd.from_pytorch(inputs[1], static_sizes=True)
        fd.add_output(fd.ops.mul(t0, t1))

    out, fd = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] * inputs[1])
    with pytest.raises(cfuser.InvalidArgumentError, match="has size 6 in dimension 0, expected 4"):
        fd.execute([randn(6, 5, 1), inputs[1]])


def test_dtype():
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor(2, dtype=DataType.Half)
        c0 = fd.define_scalar(2.0, DataType.Float)
        t1 = fd.ops.cast(t0, DataType.Double)
        assert (t0.dtype, c0.dtype, t1.dtype) == (DataType.Half, DataType.Float, DataType.Double)
        assert fd.define_scalar(2).dtype == DataType.Int and fd.define_scalar(True).dtype == DataType.Bool
        assert fd.define_scalar(2.0).dtype == DataType.Double


def test_input_scalar(dev):
    inputs = [randn(3, 4), 0.1]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        s0 = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(t0, s0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] * np.float32(0.1))


def test_scalar_only_inputs():
    # nvFuser: a fusion of scalar inputs only returns a 0-d tensor
    with cfuser.FusionDefinition() as fd:
        s0 = fd.define_scalar(dtype=DataType.Double)
        s1 = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(fd.ops.add(s0, s1), 2.0))
    out, = fd.execute([2.0, 3.0])
    assert out.shape == () and float(out) == 10.0


def test_integer_division(dev):
    a = np.array([-7, -3, 0, 3, 7, 9], np.int64)
    b = np.array([2, 2, 3, -2, -3, 4], np.int64)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.div(t0, t1))
        fd.add_output(fd.ops.truediv(t0, t1))
        fd.add_output(fd.ops.fmod(t0, t1))
        fd.add_output(fd.ops.remainder(t0, t1))
        fd.add_output(fd.ops.floor_divide(t0, t1))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], np.trunc(a / b).astype(np.int64))  # nvFuser's div of integers truncates (C's)
    close(out[1], (a / b).astype(np.float32))  # torch's true division of integers: float32
    close(out[2], np.fmod(a, b))
    close(out[3], np.remainder(a, b))
    close(out[4], np.floor_divide(a, b))


@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min)])
def test_reductions_with_dtype(dev, op, ref):
    x = randn(3, 4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(getattr(fd.ops, op)(t0, DataType.Double))  # every axis, in double
        fd.add_output(getattr(fd.ops, op)(t0, [1], True, DataType.Float))
        fd.add_output(getattr(fd.ops, op)(t0, [0], False, DataType.Null))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], ref(x.astype(np.float64)), rtol=1e-6)
    close(out[1], ref(x, axis=1, keepdims=True), rtol=1e-5)
    close(out[2], ref(x, axis=0), rtol=1e-5)


def test_prod(dev):
    x = randn(4, 5)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.prod(t0, DataType.Float))
        fd.add_output(fd.ops.prod(t0, 1, False, DataType.Float))
        fd.add_output(fd.ops.prod(t0, 1, True, DataType.Float))
        fd.add_output(fd.ops.prod(t0, [-1], False, DataType.Float))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.prod(x), rtol=1e-4)
    close(out[1], np.prod(x, 1), rtol=1e-5)
    close(out[2], np.prod(x, 1, keepdims=True), rtol=1e-5)
    close(out[3], np.prod(x, -1), rtol=1e-5)


def test_all_dim_var_mean(dev):
    x = randn(2, 3, 4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        var, mean = fd.ops.var_mean(t0, [0, 1, 2], 0)
        fd.add_output(var)
        fd.add_output(mean)

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x.astype(np.float64).var().astype(np.float32), rtol=1e-5)
    close(out[1], x.astype(np.float64).mean().astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("correction", [0, 1, 2, 4])
def test_var_mean_correction(dev, correction):
    x = randn(4, 16)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        var, mean = fd.ops.var_mean(t0, [-1], correction)
        fd.add_output(var)
        fd.add_output(mean)

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    x64 = x.astype(np.float64)
    close(out[0], x64.var(-1, ddof=correction).astype(np.float32), rtol=1e-5)
    close(out[1], x64.mean(-1).astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("correction", [0, 1])
def test_var_correction(dev, correction):
    x = randn(4, 16)

    def fusion_func(fd):
        fd.add_output(fd.ops.var(fd.from_pytorch(x), [-1], correction))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x.astype(np.float64).var(-1, ddof=correction).astype(np.float32), rtol=1e-5)


def test_welford(dev):
    x = randn(8, 32)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        mean, var_sum, n = fd.ops.welford(t0, [-1])
        fd.add_output(mean)
        fd.add_output(var_sum)
        fd.add_output(n)

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    x64 = x.astype(np.float64)
    close(out[0], x64.mean(-1).astype(np.float32), rtol=1e-5, atol=1e-6)
    close(out[1], (x64.var(-1) * 32).astype(np.float32), rtol=1e-5)
    close(out[2], np.full(8, 32, np.int64))


def test_expanded_reduction(dev):
    x = np.broadcast_to(randn(1, 4), (3, 4))

    def fusion_func(fd):
        t0 = fd.define_tensor([-1, -1], contiguity=[None, True], stride_order=[1, 0]) if False else \
            fd.define_tensor(sizes=x.shape, strides=[0, 1])
        fd.add_output(fd.ops.sum(t0, [0]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x.sum(0), rtol=1e-5)


def test_segmentation_reduction_pointwise_epilogue(dev):
    inputs = [randn(2, 32, 16), randn(2, 16, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        t2 = fd.ops.sum(t0, [1])
        t3 = fd.ops.add(t2, t1)
        fd.add_output(fd.ops.cast(t3, DataType.Half))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], (inputs[0].sum(1) + inputs[1]).astype(np.float16), rtol=2e-3, atol=2e-3)


def test_addcmul(dev):
    inputs = [randn(4), randn(4, seed=1), randn(4, seed=2)]

    def fusion_func(fd):
        t0, t1, t2 = (fd.from_pytorch(x) for x in inputs)
        fd.add_output(fd.ops.addcmul(t0, t1, t2, fd.define_scalar(0.1)))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + np.float32(0.1) * inputs[1] * inputs[2])


def test_where_op(dev):
    c = np.array([True, False, True, False])
    a, b = randn(4), randn(4, seed=1)

    def fusion_func(fd):
        t0, t1, t2 = fd.from_pytorch(c), fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.where(t0, t1, t2))
        fd.add_output(fd.ops.where(t0, t1, 0.5))
        fd.add_output(fd.ops.where(t0, 2, t2))

    out, _ = exec_nvfuser(dev, fusion_func, [c, a, b])
    close(out[0], np.where(c, a, b))
    close(out[1], np.where(c, a, np.float32(0.5)))
    close(out[2], np.where(c, np.float32(2), b))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int32, np.bool_])
def test_where_dtypes(dev, dtype):
    c = np.array([True, False, True])
    a = (np.arange(3) + 1).astype(dtype)
    b = (np.arange(3) * 0).astype(dtype)

    def fusion_func(fd):
        t0, t1, t2 = fd.from_pytorch(c), fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.where(t0, t1, t2))

    out, _ = exec_nvfuser(dev, fusion_func, [c, a, b])
    close(out[0], np.where(c, a, b))


def test_signbit(dev):
    x = np.array([-1.0, -0.0, 0.0, 2.0, -np.inf, np.nan], np.float32)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.where(fd.ops.signbit(t0), -np.inf, np.inf))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.where(np.signbit(x), -np.inf, np.inf).astype(np.float32))


def test_nextafter(dev):
    a = np.array([0.0, 1.0, -1.0, 1e-30], np.float32)
    b = np.array([1.0, 0.0, -2.0, np.inf], np.float32)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.nextafter(t0, t1))
        fd.add_output(fd.ops.nextafter(fd.ops.cast(t0, DataType.Double), fd.ops.cast(t1, DataType.Double)))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], np.nextafter(a, b), rtol=0, atol=0)
    close(out[1], np.nextafter(a.astype(np.float64), b.astype(np.float64)), rtol=0, atol=0)


def test_right_shift_arithmetic(dev):
    x = np.array([-8, 8, -1, 1 << 20], np.int32)

    def fusion_func(fd):
        fd.add_output(fd.ops.bitwise_right_shift(fd.from_pytorch(x), 2))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x >> 2)


def test_right_shift_logical(dev):
    x = np.array([-8, 8, -1, 1 << 20], np.int64)

    def fusion_func(fd):
        fd.add_output(fd.ops.logical_right_shift(fd.from_pytorch(x), 3))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], (x.view(np.uint64) >> np.uint64(3)).view(np.int64))


@pytest.mark.parametrize("dtype,width", [(np.int32, 32), (np.int64, 64)])
def test_right_shift_logical_sizeof_dtype(dev, dtype, width):
    x = np.array([-8, 8, -1], dtype)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.logical_right_shift(t0, width))
        fd.add_output(fd.ops.logical_right_shift(t0, width - 1))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    u = x.view(np.uint32 if width == 32 else np.uint64)
    close(out[0], np.zeros(3, dtype))
    close(out[1], (u >> (width - 1)).astype(dtype))


def test_constant_nans(dev):
    x = randn(4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t0, fd.define_scalar(float("nan"), DataType.Float)))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    assert np.isnan(out[0]).all()


def test_arithmetic_ops_on_literals_and_scalars(dev):
    x = randn(3, 4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        s = fd.define_scalar(2.0)
        fd.add_output(t0 + 1)
        fd.add_output(1 - t0)
        fd.add_output(t0 * s)
        fd.add_output(s / (t0 * t0 + 1))
        fd.add_output(-t0)
        fd.add_output(abs(t0))
        fd.add_output(t0 ** 2)
        fd.add_output(fd.ops.truediv(t0, 4))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    for got, want in zip(out, [x + 1, 1 - x, x * 2, np.float32(2) / (x * x + 1), -x, np.abs(x), x ** 2, x / 4]):
        close(got, want.astype(np.float32), rtol=1e-5)


def test_ops_on_0d_tensors(dev):
    a, b = np.array(1.5, np.float32), np.array(-2.0, np.float32)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        fd.add_output(fd.ops.add(t0, t1))
        fd.add_output(fd.ops.exp(t0))
        fd.add_output(fd.ops.sum(t0))
        fd.add_output(fd.ops.where(fd.ops.gt(t0, t1), t0, t1))
        fd.add_output(fd.ops.cast(t1, DataType.Int))

    out, _ = exec_nvfuser(dev, fusion_func, [a, b])
    close(out[0], a + b)
    close(out[1], np.exp(a))
    close(out[2], a)
    close(out[3], np.maximum(a, b))
    close(out[4], np.array(-2, np.int64))


def test_operands_of_different_ranks_broadcast(dev):
    inputs = [randn(2, 3, 4), randn(4, seed=1), randn(3, 1, seed=2)]

    def fusion_func(fd):
        t0, t1, t2 = (fd.from_pytorch(x) for x in inputs)
        fd.add_output(t0 + t1)
        fd.add_output(t0 * t2)

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], inputs[0] + inputs[1])
    close(out[1], inputs[0] * inputs[2])


def test_bfloat16_output_to_numpy():
    # NumPy's bfloat16 is ml_dtypes'; without it cfuser says so (no SystemError from DLPack)
    x = np.array([1.0, 2.5, -3.0], np.float32)
    with cfuser.FusionDefinition() as fd:
        fd.add_output(fd.ops.cast(fd.from_pytorch(x), DataType.BFloat16))
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        with pytest.raises(cfuser.UnsupportedError, match="a bfloat16 output on NumPy arrays needs ml_dtypes"):
            fd.execute([x])
        return
    out, = fd.execute([x])
    np.testing.assert_array_equal(np.asarray(out, np.float32), x)
