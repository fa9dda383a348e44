"""execute of an unscheduled definition runs by define and run (cf_fusion_cache): softmax,
layernorm, RMSnorm, var_mean and sums of several shapes equal NumPy on the host backend
(torch CUDA where a GPU is present); the cache (a repeated signature hits, a new shape
compiles); print_kernel and last_launch_params per segment; an op no scheduler but the
fallback takes, and the shapes issue 22 found refused; errors."""
import numpy as np
import pytest

import cfuser
from cfuser import FusionDefinition

SHAPES = [(1, 1), (3, 5), (7, 333), (2, 17000), (5, 1), (1, 1001)]


def _x(shape, seed=7):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def softmax_fd():
    with FusionDefinition() as fd:
        x = fd.define_tensor(2)
        e = fd.ops.exp(x - fd.ops.max(x, -1, keepdim=True))
        fd.add_output(e / fd.ops.sum(e, -1, keepdim=True))
    return fd


def softmax_np(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm_fd():
    with FusionDefinition() as fd:
        x, w, b = fd.define_tensor(2), fd.define_tensor(1), fd.define_tensor(1)
        var, mean = fd.ops.var_mean(x, 1, correction=0, keepdim=True)
        y = (x - mean) * fd.ops.rsqrt(var + 1e-5)
        fd.add_output(y * fd.ops.broadcast(w, [True, False]) + fd.ops.broadcast(b, [True, False]))
    return fd


def layernorm_np(x, w, b):
    return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax(shape):
    fd, x = softmax_fd(), _x(shape)
    out, = fd.execute([x])
    np.testing.assert_allclose(out, softmax_np(x), rtol=1e-5, atol=1e-7)
    assert fd.last_schedulers()[0] != "default"


@pytest.mark.parametrize("shape", SHAPES)
def test_layernorm(shape):
    fd, x = layernorm_fd(), _x(shape)
    w, b = _x(shape[1:], 1), _x(shape[1:], 2)
    out, = fd.execute([x, w, b])
    np.testing.assert_allclose(out, layernorm_np(x, w, b), rtol=1e-4, atol=1e-4)
    assert fd.last_schedulers()[0] != "default"  # by define and run, long rows too


@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(shape):
    with FusionDefinition() as fd:
        x, w = fd.define_tensor(2), fd.define_tensor(1)
        ms = fd.ops.mean(x * x, [1], keepdim=True)
        fd.add_output(x * fd.ops.rsqrt(ms + 1e-6) * fd.ops.broadcast(w, [True, False]))
    a, w = _x(shape), _x(shape[1:], 3)
    out, = fd.execute([a, w])
    want = a / np.sqrt((a * a).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,axes", [((5, 40), [1]), ((4, 7, 33), [0, 2]), ((3, 17000), [1]), ((64, 7), [0]),
                                        ((1, 1), [1])])
def test_var_mean(shape, axes):
    x = _x(shape)
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.define_tensor(len(shape)), axes, correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    v, m = fd.execute([x])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = x.var(tuple(axes), ddof=1)
    np.testing.assert_allclose(v, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m, x.mean(tuple(axes)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axes", [((1,), [0]), ((1001,), [0]), ((3, 5), [1]), ((3, 5), [0]), ((2, 17000), [1]),
                                        ((6, 7, 9), [0, 2]), ((6, 7, 9), [2]), ((1, 1, 1), [0, 1, 2])])
def test_sum(shape, axes):
    x = _x(shape)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(fd.define_tensor(len(shape)), axes))
    out, = fd.execute([x])
    np.testing.assert_allclose(out, x.sum(tuple(axes)), rtol=1e-4, atol=1e-4)


def test_the_cache_hits_and_a_new_shape_compiles():
    fd = softmax_fd()
    fd.execute([_x((7, 333))])
    assert fd.cache_info() == {"entries": 1, "kernels": 1, "hits": 0, "misses": 1, "schedulers": ["inner_persistent"]}
    out, = fd.execute([_x((7, 333), 2)])
    np.testing.assert_allclose(out, softmax_np(_x((7, 333), 2)), rtol=1e-5, atol=1e-7)
    assert fd.cache_info()["hits"] == 1 and fd.cache_info()["misses"] == 1
    fd.execute([_x((2, 17000))])  # a new shape: compiled anew
    info = fd.cache_info()
    assert (info["entries"], info["hits"], info["misses"]) == (2, 1, 2)
    assert info["kernels"] == 2 and info["schedulers"] == ["inner_persistent"]
    fd.execute([_x((7, 333))])
    assert fd.cache_info()["hits"] == 2


def test_print_kernel_and_launch_params_per_segment():
    with FusionDefinition() as fd:  # no scheduler takes it whole: a reduction, then a transpose
        x = fd.define_tensor(2)
        fd.add_output(fd.ops.permute(x / fd.ops.sum(x, -1, keepdim=True), [1, 0]))
    fd.execute([_x((2, 170))])
    n = len(fd.last_schedulers())
    text = fd.kernel_text()
    assert text.count('extern "C" __global__') == n and "// segment 0 of" in text
    for i in range(n):
        assert fd.last_launch_params(segment=i)["block"][0] > 1
        assert "cfuser_kernel" in fd.kernel_source(segment=i)
    assert fd.last_launch_params() == fd.last_launch_params(segment=n - 1)
    with pytest.raises(cfuser.InvalidArgumentError, match=f"last_launch_params: segment {n} out of range"):
        fd.last_launch_params(segment=n)
    sm = softmax_fd()
    sm.execute([_x((3, 64))])  # one kernel: printed alone
    assert sm.kernel_text().startswith('extern "C" __global__')


def test_two_axis_orders_run_op_by_op():
    with FusionDefinition() as fd:
        x = fd.define_tensor(2)
        fd.add_output(x + fd.ops.transpose(x, 0, 1))
    a = _x((5, 5))
    out, = fd.execute([a])
    np.testing.assert_allclose(out, a + a.T)
    assert fd.last_schedulers() == ["transpose", "pointwise"]


def test_a_sum_keeping_a_broadcast_axis_runs_by_define_and_run():
    with FusionDefinition() as fd:  # once refused by every scheduler (the fallback's test)
        x = fd.define_tensor(2)
        fd.add_output(fd.ops.sum(fd.ops.broadcast(x, [False, True, False]), [2]))
    a = _x((3, 5))
    out, = fd.execute([a])
    np.testing.assert_allclose(out, a.sum(1, keepdims=True), rtol=1e-5)
    assert fd.last_schedulers() == ["reduction"]
    out, = fd.execute([_x((2, 4))])
    np.testing.assert_allclose(out, _x((2, 4)).sum(1, keepdims=True), rtol=1e-5)
    assert fd.last_schedulers() == ["reduction"]
    assert "cfuser_kernel" in fd.kernel_text()
    assert fd.cache_info()["entries"] == 2


def test_issue_22_shapes_that_were_refused():
    with FusionDefinition() as fd:  # a middle-axis var_mean of [8, 1, 6]
        var, mean = fd.ops.var_mean(fd.define_tensor(3), [1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    a = _x((8, 1, 6))
    v, m = fd.execute([a])
    np.testing.assert_allclose(m, a.mean(1), rtol=1e-6)
    assert np.isnan(v).all()  # one element per group, correction 1: torch gives nan too
    with FusionDefinition() as fd:  # a reshaped input, then var_mean
        var, mean = fd.ops.var_mean(fd.ops.reshape(fd.define_tensor(2), [4, -1]), [1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    for shape in [(8, 6), (4, 1), (2, 10), (12, 3)]:
        a = _x(shape)
        v, m = fd.execute([a])
        np.testing.assert_allclose(m, a.reshape(4, -1).mean(1), rtol=1e-5, atol=1e-6)
        if a.size > 4:
            np.testing.assert_allclose(v, a.reshape(4, -1).var(1, ddof=1), rtol=1e-4, atol=1e-6)


def test_hand_scheduled_definitions_keep_their_executor():
    with FusionDefinition() as fd:
        x = fd.define_tensor(1)
        fd.add_output(fd.ops.exp(x))
    fd.sched.schedule_pointwise()
    a = _x((100,))
    np.testing.assert_allclose(fd.execute([a])[0], np.exp(a), rtol=1e-6)
    assert fd.last_schedulers() == ["user"]


def test_errors_raise_with_cfusers_message():
    fd = softmax_fd()
    with pytest.raises(cfuser.InvalidArgumentError, match=r"execute: input 0 \(T0\) has dtype double, expected float"):
        fd.execute([np.zeros((2, 3))])
    with pytest.raises(cfuser.InvalidArgumentError, match=r"execute: input 0 \(T0\) has 1 dimensions, expected 2"):
        fd.execute([np.zeros(3, dtype=np.float32)])
    with pytest.raises(cfuser.InvalidArgumentError, match="last_launch_params: nothing was executed yet"):
        softmax_fd().last_launch_params()
    out, = fd.execute([_x((2, 3))])  # the definition still runs
    np.testing.assert_allclose(out, softmax_np(_x((2, 3))), rtol=1e-5)
    with FusionDefinition() as both:
        x = both.define_tensor(2)
        s = both.ops.sum(x, [1])
        both.add_output(s + both.ops.sum(x, [0]))  # extents that disagree at the add
    with pytest.raises(cfuser.CfuserError, match="execute: add: axis 0 has extent"):
        both.execute([_x((2, 3))])


def _torch_cuda():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.mark.parametrize("shape", [(3, 5), (7, 333), (2, 17000), (1, 1), (64, 4096)])
def test_torch_cuda_softmax_and_layernorm(shape):
    torch = _torch_cuda()
    x = torch.randn(shape, device="cuda")
    w, b = torch.randn(shape[1], device="cuda"), torch.randn(shape[1], device="cuda")
    sm, ln = softmax_fd(), layernorm_fd()
    for _ in range(3):  # the general path, then the fast path (cache hits)
        torch.testing.assert_close(sm.execute([x])[0], torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
        want = torch.nn.functional.layer_norm(x, (shape[1],), w, b, eps=1e-5)
        torch.testing.assert_close(ln.execute([x, w, b])[0], want, rtol=1e-4, atol=1e-4)
    assert sm.cache_info()["hits"] == 2 and ln.cache_info()["hits"] == 2
    assert sm._torch_fast is not None and sm._torch_fast.runner is sm._last


def test_torch_cuda_var_mean_and_fallback():
    torch = _torch_cuda()
    x = torch.randn(4, 7, 33, device="cuda")
    with FusionDefinition() as fd:
        var, mean = fd.ops.var_mean(fd.define_tensor(3), [0, 2], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    for _ in range(2):
        v, m = fd.execute([x])
        want_v, want_m = torch.var_mean(x, (0, 2), correction=1)
        torch.testing.assert_close(v, want_v, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(m, want_m, rtol=1e-4, atol=1e-5)
