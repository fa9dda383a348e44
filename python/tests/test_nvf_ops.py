"""Port of nvFuser's python frontend tests, part 2: creation, resize and random ops,
outputs (aliases, stride orders, repeated outputs), introspection, and the definition's
errors. NumPy is the reference (nvf_port.py)."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition
from nvf_port import close, define, exec_nvfuser, needs, randn, run


@pytest.mark.parametrize("start,step,dtype", [(0, 1, DataType.Int), (5, 2, DataType.Int), (1.5, 0.5, DataType.Float),
                                              (-3, 3, DataType.Int32), (0.0, 0.25, DataType.Double)])
def test_iota(dev, start, step, dtype):
    def fusion_func(fd):
        fd.add_output(fd.ops.iota(7, start, step, dtype))

    out, _ = exec_nvfuser(dev, fusion_func, [])
    np_dtype = {DataType.Int: np.int64, DataType.Int32: np.int32, DataType.Float: np.float32,
                DataType.Double: np.float64}[dtype]
    close(out[0], (start + np.arange(7) * step).astype(np_dtype))


@pytest.mark.parametrize("diagonal", [-1, 0, 1, 3])
def test_triu(dev, diagonal):
    x = randn(4, 5)

    def fusion_func(fd):
        fd.add_output(fd.ops.triu(fd.from_pytorch(x), diagonal))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.triu(x, diagonal))


def test_pad(dev):
    x = randn(2, 3)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.pad(t0, [1, 1, 1, 1]))
        fd.add_output(fd.ops.pad(t0, [0, 0, 2, 3], fd.define_scalar(2.5)))
        fd.add_output(fd.ops.pad(t0, [2, 0]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.pad(x, ((1, 1), (1, 1))))
    close(out[1], np.pad(x, ((2, 3), (0, 0)), constant_values=2.5))
    close(out[2], np.pad(x, ((0, 0), (2, 0))))


def test_pad_dynamic(dev):
    for shape in [(2, 3), (4, 7)]:
        x = randn(*shape)

        def fusion_func(fd):
            fd.add_output(fd.ops.pad(fd.define_tensor(2), [1, 2, 0, 1], 1.0))

        out, _ = exec_nvfuser(dev, fusion_func, [x])
        close(out[0], np.pad(x, ((0, 1), (1, 2)), constant_values=1.0))


def test_pad_cache(dev):
    fd = define(lambda fd: fd.add_output(fd.ops.pad(fd.define_tensor(1), [2, 2])))
    for n in (3, 5, 3):
        x = randn(n)
        close(run(dev, fd, [x])[0], np.pad(x, 2))


def test_cat(dev):
    inputs = [randn(2, 4), randn(3, 4, seed=1), randn(2, 4, seed=2)]

    def fusion_func(fd):
        t0, t1, t2 = (fd.from_pytorch(x) for x in inputs)
        fd.add_output(fd.ops.cat([t0, t1], 0))
        fd.add_output(fd.ops.cat([t0, t2], 1))
        fd.add_output(fd.ops.cat([t0, t1, t2], -2))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.concatenate(inputs[:2], 0))
    close(out[1], np.concatenate([inputs[0], inputs[2]], 1))
    close(out[2], np.concatenate(inputs, 0))


def test_cat_symbolic(dev):
    inputs = [randn(2, 4), randn(5, 4, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.define_tensor(2), fd.define_tensor(2)
        fd.add_output(fd.ops.cat([t0, t1], 0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.concatenate(inputs, 0))


def test_cat_promotes(dev):
    inputs = [randn(2), np.arange(3, dtype=np.int64)]

    def fusion_func(fd):
        fd.add_output(fd.ops.cat([fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])], 0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    close(out[0], np.concatenate([inputs[0], inputs[1].astype(np.float32)]))


def test_pad_prior_cat(dev):
    inputs = [randn(2, 3), randn(2, 3, seed=1)]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(inputs[0]), fd.from_pytorch(inputs[1])
        p0 = fd.ops.pad(t0, [0, 0, 1, 1])
        p1 = fd.ops.pad(t1, [0, 0, 1, 1])
        fd.add_output(fd.ops.cat([p0, p1], 0))

    out, _ = exec_nvfuser(dev, fusion_func, inputs)
    p = [np.pad(x, ((1, 1), (0, 0))) for x in inputs]
    close(out[0], np.concatenate(p, 0))


def test_slice_api(dev):
    x = randn(6, 8)
    cases = [([0, 0], [6, 8], None), ([1, 2], [5, 7], None), ([0, 1], [6, 8], [2, 3]), ([-4, -6], [-1, 8], [1, 2]),
             ([2, 0], [100, 3], None)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)  # symbolic sizes: negative indices normalized at run time
        for a, b, s in cases:
            fd.add_output(fd.ops.slice(t0, a, b, s))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    for got, (a, b, s) in zip(out, cases):
        s = s or [1, 1]
        close(got, x[a[0]:b[0]:s[0], a[1]:b[1]:s[1]])


def test_slice_dynamic(dev):
    fd = define(lambda fd: fd.add_output(fd.ops.slice(fd.define_tensor(1), [1], [4], [2])))
    for n in (6, 9):
        x = randn(n)
        close(run(dev, fd, [x])[0], x[1:4:2])


@pytest.mark.parametrize("start,stop,step", [(-4, -1, 1), (-10, 6, 1), (2, 100, 1), (4, 2, 1), (-5, -1, 2),
                                             (-3, None, 1), (0, -2, 3)])
def test_slice_negative_bounds_symbolic(dev, start, stop, step):
    # torch's (and NumPy's) x[start:stop:step] on an extent known only at run time: negative
    # bounds count from the end and out-of-range ones clamp when the size is known, one
    # definition for every size (nvFuser's slice normalizes them in its IR alike)
    def fusion_func(fd):
        t0 = fd.define_tensor(1)
        end = t0.shape()[0] if stop is None else stop
        fd.add_output(fd.ops.slice(t0, [start], [end], [step]))

    fd = define(fusion_func)
    if start < 0:
        assert f"starts {{( max(0, ( i0 - {-start} )) )}}" in fd.fusion_ir()
    for n in (6, 9):
        x = randn(n)
        close(run(dev, fd, [x])[0], x[start:stop:step])


def test_slice_error_checks():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor([4, 6])
        with pytest.raises(cfuser.InvalidArgumentError, match="slice: 1 start, 2 end and 2 stride indices"):
            fd.ops.slice(t0, [0], [1, 2], [1, 1])
        with pytest.raises(cfuser.InvalidArgumentError, match="strides .* must be positive"):
            fd.ops.slice(t0, [0, 0], [1, 2], [0, 1])


def test_nanogpt_mha_dpa(dev):
    # attention scores: q @ k^T as a broadcast multiply and a sum, a causal mask, softmax
    q, k = randn(2, 4, 8), randn(2, 4, 8, seed=1)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(q), fd.from_pytorch(k)
        s = fd.ops.sum(fd.ops.mul(fd.ops.broadcast(t0, [False, False, True, False]),
                                  fd.ops.broadcast(t1, [False, True, False, False])), [3])
        s = fd.ops.mul(s, 1.0 / np.sqrt(8.0))
        mask = fd.ops.triu(fd.ops.full([4, 4], 1.0, DataType.Float), 1)
        s = fd.ops.where(fd.ops.gt(fd.ops.broadcast(mask, [True, False, False]), 0.0), float("-inf"), s)
        e = fd.ops.exp(fd.ops.sub(s, fd.ops.max(s, [2], True)))
        fd.add_output(fd.ops.div(e, fd.ops.sum(e, [2], True)))

    out, _ = exec_nvfuser(dev, fusion_func, [q, k])
    s = np.einsum("bik,bjk->bij", q.astype(np.float64), k) / np.sqrt(8.0)
    s = np.where(np.triu(np.ones((4, 4)), 1) > 0, -np.inf, s)
    e = np.exp(s - s.max(2, keepdims=True))
    close(out[0], (e / e.sum(2, keepdims=True)).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_normal(dev):
    def fusion_func(fd):
        fd.add_output(fd.ops.normal(2.0, 0.5, [1000, 64], DataType.Float, fd.define_scalar(7), fd.define_scalar(3)))

    out, fd = exec_nvfuser(dev, fusion_func, [])
    assert out[0].shape == (1000, 64) and out[0].dtype == np.float32
    assert abs(out[0].mean() - 2.0) < 0.01 and abs(out[0].std() - 0.5) < 0.01
    np.testing.assert_array_equal(run(dev, fd, [])[0], out[0])  # the same seed and offset: the same numbers


def test_uniform(dev):
    def fusion_func(fd):
        fd.add_output(fd.ops.uniform(-1.0, 3.0, [1000, 64], DataType.Double, fd.define_scalar(7), fd.define_scalar(3)))

    out, _ = exec_nvfuser(dev, fusion_func, [])
    assert out[0].dtype == np.float64 and out[0].min() >= -1.0 and out[0].max() < 3.0
    assert abs(out[0].mean() - 1.0) < 0.02


def test_uniform_range(dev):
    for lo, hi in [(0.0, 1.0), (-5.0, -4.0), (100.0, 100.5)]:
        out, _ = exec_nvfuser(dev, lambda fd: fd.add_output(fd.ops.uniform(lo, hi, [4096], DataType.Float)), [])
        assert out[0].min() >= lo and out[0].max() < hi


def test_random_distinct_values(dev):
    fd = define(lambda fd: fd.add_output(fd.ops.rand_like(fd.define_tensor(2))))
    x = np.zeros((64, 64), np.float32)
    a, b = run(dev, fd, [x])[0], run(dev, fd, [x])[0]
    assert len(np.unique(a)) > 4000 and not np.array_equal(a, b)  # fresh offsets per execute


def test_deterministic_random(dev):
    fd = define(lambda fd: fd.add_output(fd.ops.randn_like(fd.define_tensor(1))))
    x = np.zeros(256, np.float32)
    cfuser.manual_seed(11)
    a = run(dev, fd, [x])[0]
    cfuser.manual_seed(11)
    np.testing.assert_array_equal(run(dev, fd, [x])[0], a)


def test_alias_output_to_input(dev):
    x = randn(4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.add(t0, 1.0)
        fd.add_output(t1, alias_input=t0)
        fd.add_output(fd.ops.mul(t1, 2.0))

    fd = define(fusion_func)
    arr = dev.asarray(x.copy())
    out = fd.execute([arr])
    assert len(out) == 1
    close(dev.to_numpy(out[0]), (x + 1) * 2)
    close(dev.to_numpy(arr), x + 1)  # updated in place


def test_returning_aliased_outputs(dev):
    x = randn(3)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        t1 = fd.ops.neg(t0)
        fd.add_output(t1)
        fd.add_output(t1)
        fd.add_output(t0)

    out, fd = exec_nvfuser(dev, fusion_func, [x])
    assert len(out) == 3
    close(out[0], -x)
    close(out[1], -x)
    close(out[2], x)


def test_output_stride_order(dev):
    x = randn(2, 3, 4)
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        def fusion_func(fd):
            fd.add_output(fd.ops.add(fd.from_pytorch(x), 1.0), stride_order=order)

        fd = define(fusion_func)
        out = fd.execute([dev.asarray(x)])[0]
        close(dev.to_numpy(out), x + 1)
        strides = out.stride() if callable(getattr(out, "stride", None)) else [s // 4 for s in out.strides]
        ranks = sorted(range(3), key=lambda a: strides[a])  # innermost first
        assert [order[a] for a in ranks] == [0, 1, 2]


def test_output_stride_order_with_reduction(dev):
    x = randn(2, 3, 4)

    def fusion_func(fd):
        fd.add_output(fd.ops.stride_order(fd.ops.sum(fd.from_pytorch(x), [2]), [0, 1]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x.sum(2), rtol=1e-5)


def test_stride_order_with_explicit_broadcast(dev):
    x = np.ascontiguousarray(randn(3, 2).T)[None]  # (1, 2, 3) with strides (6, 1, 2)... of a transposed array
    x = np.transpose(randn(1, 3, 2), (0, 2, 1))

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t0, t0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x + x)


def test_expanded_bcast_tensor(dev):
    x = np.broadcast_to(randn(1, 4), (3, 4))

    def fusion_func(fd):
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[None, True])  # axis 0 expanded (stride 0)
        fd.add_output(fd.ops.add(t0, 1.0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x + 1)


def test_segment_set(dev):
    x = randn(3, 4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.exp(fd.ops.segment_set(fd.ops.neg(t0))))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.exp(-x))


def test_expand_to_zero(dev):
    x = randn(1, 3)

    def fusion_func(fd):
        fd.add_output(fd.ops.expand(fd.from_pytorch(x), [0, 3]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.zeros((0, 3), np.float32))


def test_empty_reshape(dev):
    x = np.zeros((0, 6), np.float32)

    def fusion_func(fd):
        fd.add_output(fd.ops.reshape(fd.from_pytorch(x), [0, 2, 3]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.zeros((0, 2, 3), np.float32))


def test_dynamic_reshape(dev):
    fd = define(lambda fd: fd.add_output(fd.ops.reshape(fd.define_tensor(2), [-1])))
    for shape in [(2, 3), (4, 5)]:
        x = randn(*shape)
        close(run(dev, fd, [x])[0], x.reshape(-1))


def test_reshape_dynamic(dev):
    def fusion_func(fd):
        t0 = fd.define_tensor(3)
        fd.add_output(fd.ops.reshape(t0, [t0.size(0), -1]))

    fd = define(fusion_func)
    for shape in [(2, 3, 4), (5, 1, 2)]:
        x = randn(*shape)
        close(run(dev, fd, [x])[0], x.reshape(shape[0], -1))


def test_reshape_squeeze_concretization(dev):
    x = randn(2, 1, 3)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.squeeze(fd.ops.reshape(t0, [2, 3, 1]), [2]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x.reshape(2, 3))


def test_sum_sliced_reshape_to_broadcast(dev):
    x = randn(4, 6)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        s = fd.ops.slice(t0, [0, 0], [1, 6])
        fd.add_output(fd.ops.sum(fd.ops.reshape(s, [6]), [0]))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], x[0].sum(), rtol=1e-5)


def test_remove_empty_issue_2545(dev):
    x, e = randn(2), np.zeros(0, np.float32)

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(x), fd.from_pytorch(e)
        fd.add_output(fd.ops.cat([t0, t1], 0))

    out, _ = exec_nvfuser(dev, fusion_func, [x, e])
    close(out[0], x)


def test_pad_expanded_empty(dev):
    x = np.zeros((0, 3), np.float32)

    def fusion_func(fd):
        fd.add_output(fd.ops.pad(fd.from_pytorch(x), [1, 1], -1.0))

    out, _ = exec_nvfuser(dev, fusion_func, [x])
    close(out[0], np.zeros((0, 5), np.float32))


def test_mismatched_input_types():
    fd = define(lambda fd: fd.add_output(fd.ops.neg(fd.define_tensor(1, dtype=DataType.Float))))
    with pytest.raises(cfuser.InvalidArgumentError, match="has dtype double, expected float"):
        fd.execute([np.ones(3)])


def test_no_definition():
    fd = FusionDefinition()
    with pytest.raises(NotImplementedError):
        fd.execute([])


def test_func_definition(dev):
    class MyFusion(FusionDefinition):
        def definition(self):
            t0 = self.define_tensor(2)
            self.add_output(self.ops.relu(t0))

    x = randn(3, 4)
    close(run(dev, MyFusion(), [x])[0], np.maximum(x, 0))


def test_def_op_in_schedule():
    class Bad(FusionDefinition):
        def definition(self):
            self.add_output(self.ops.neg(self.define_tensor(1)))

        def schedule(self):
            self.ops.exp(self.define_tensor(1))

    with pytest.raises(cfuser.InvalidArgumentError, match="Attempting to add to a completed definition"):
        Bad().execute([np.ones(2, np.float32)])


def test_fusion_definition_error_cache():
    with pytest.raises(cfuser.InvalidArgumentError):
        with FusionDefinition() as fd:
            fd.ops.add(fd.define_tensor(2), fd.define_tensor(2)).ndim  # fine
            fd.ops.sum(fd.define_tensor(1), [3])  # an error inside the definition
    fd2 = define(lambda fd: fd.add_output(fd.ops.neg(fd.define_tensor(1))))  # the next one is unaffected
    np.testing.assert_array_equal(fd2.execute([np.ones(2, np.float32)])[0], [-1, -1])


def test_fusion_information():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(2)
        t1 = fd.define_tensor(1)
        t2 = fd.ops.add(t0, t1)
        fd.add_output(t2)
    assert [t.name for t in fd.inputs()] == [t0.name, t1.name]
    assert [t.name for t in fd.outputs()] == [t2.name]
    assert len(fd.extents()) >= 2


def test_cuda_code_and_scheduled_fusion_ir_strings():
    x = randn(3, 4)
    fd = define(lambda fd: fd.add_output(fd.ops.exp(fd.from_pytorch(x))))
    fd.execute([x])
    assert "exp" in fd.fusion_ir()
    assert "cfuser_kernel" in fd.last_cuda_code()
    assert isinstance(fd.last_scheduled_fusion_ir(), str) and fd.last_scheduled_fusion_ir()


def test_segment_introspection():
    x = randn(3, 4)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(fd.ops.permute(fd.ops.exp(t0), [1, 0]), [1]))

    fd = define(fusion_func)
    segments = fd.segment([x])
    assert len(segments) >= 1 and all(s.scheduler for s in segments)


def test_debug_output():
    x = randn(3)
    fd = define(lambda fd: fd.add_output(fd.ops.neg(fd.from_pytorch(x))))
    out = fd.execute([x], capture_debug_output=True)
    close(out[0], -x)
    assert isinstance(fd.debug_output(), str)


def test_selected_device():
    x = randn(3)
    fd = define(lambda fd: fd.add_output(fd.ops.neg(fd.from_pytorch(x))))
    close(fd.execute([x], device=0)[0], -x)  # device 0 is cfuser's only device


def test_from_pytorch_cpu_tensor_runs_on_the_host():
    # nvFuser refuses CPU tensors that are not scalars; cfuser runs them on the host backend
    x = randn(3)
    fd = define(lambda fd: fd.add_output(fd.ops.neg(fd.from_pytorch(x))))
    close(fd.execute([x])[0], -x)


def test_is_cpu_scalar_tensor():
    x, s = randn(3), np.array(2.0, np.float32)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        t1 = fd.define_tensor([], dtype=DataType.Float, is_cpu=True)
        fd.add_output(fd.ops.mul(t0, t1))

    fd = define(fusion_func)
    close(fd.execute([x, s])[0], x * 2)


def test_compute_contiguity():
    assert cfuser.compute_contiguity([2, 3], [3, 1]) == [True, True]
    assert cfuser.compute_contiguity([2, 3], [6, 2]) == [True, False]
    assert cfuser.compute_contiguity([2, 1, 3], [3, 3, 1])[1] is None


def test_compute_tensor_descriptor():
    contiguity, order = cfuser.compute_tensor_descriptor([2, 3, 4], [1, 8, 2])
    assert list(order) == [0, 2, 1]
    assert contiguity == [True, True, True]
