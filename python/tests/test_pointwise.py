"""Pointwise fusions from Python on every array library available, compared with that
library's own computation of the same math."""
import numpy as np
import pytest

import cfuser
from cfuser import DataType, FusionDefinition

RTOL, ATOL = 1e-5, 1e-6

# name -> reference in the array library's own namespace (xp), input in a safe domain
UNARY = {
    "neg": lambda xp, lib, a: -a,
    "abs": lambda xp, lib, a: xp.abs(a),
    "exp": lambda xp, lib, a: xp.exp(a),
    "log": lambda xp, lib, a: xp.log(a),
    "sqrt": lambda xp, lib, a: xp.sqrt(a),
    "rsqrt": lambda xp, lib, a: 1 / xp.sqrt(a),
    "reciprocal": lambda xp, lib, a: 1 / a,
    "relu": lambda xp, lib, a: xp.where(a > 0, a, 0 * a),
    "sigmoid": lambda xp, lib, a: 1 / (1 + xp.exp(-a)),
    "tanh": lambda xp, lib, a: xp.tanh(a),
    "gelu": lambda xp, lib, a: 0.5 * a * (1 + lib.erf(a / np.sqrt(2.0))),
    "sin": lambda xp, lib, a: xp.sin(a),
    "cos": lambda xp, lib, a: xp.cos(a),
    "set": lambda xp, lib, a: a,
}
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}  # fed positive values only

BINARY = {
    "add": lambda xp, a, b: a + b,
    "sub": lambda xp, a, b: a - b,
    "mul": lambda xp, a, b: a * b,
    "div": lambda xp, a, b: a / b,
    "maximum": lambda xp, a, b: xp.maximum(a, b),
    "minimum": lambda xp, a, b: xp.minimum(a, b),
    "pow": lambda xp, a, b: xp.abs(a) ** b,
    "eq": lambda xp, a, b: a == b,
    "ne": lambda xp, a, b: a != b,
    "lt": lambda xp, a, b: a < b,
    "le": lambda xp, a, b: a <= b,
    "gt": lambda xp, a, b: a > b,
    "ge": lambda xp, a, b: a >= b,
}


def close(lib, got, want):
    got_np, want_np = lib.to_numpy(got), lib.to_numpy(want)
    assert got_np.shape == want_np.shape
    assert got_np.dtype.kind == want_np.dtype.kind, (got_np.dtype, want_np.dtype)
    np.testing.assert_allclose(got_np, want_np, rtol=RTOL, atol=ATOL)


def test_relu_of_mul_add_matches_library(lib, rng):
    x, y = (lib.asarray(rng.standard_normal((33, 70), dtype=np.float32)) for _ in range(2))
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(2, dtype="float32")
        fd.add_output(fd.ops.relu(a * b + a))
    out, = fd.execute([x, y])
    assert type(out) is type(x)
    close(lib, out, lib.xp.where(x * y + x > 0, x * y + x, 0 * x))


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_op_matches_library(lib, rng, op):
    base = rng.standard_normal(257, dtype=np.float32)
    if op in POSITIVE:
        base = np.abs(base) + np.float32(0.5)
    x = lib.asarray(base)
    with FusionDefinition() as fd:
        a = fd.define_tensor(1)
        fd.add_output(getattr(fd.ops, op)(a))
    out, = fd.execute([x])
    close(lib, out, UNARY[op](lib.xp, lib, x))


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_matches_library(lib, rng, op):
    a_np = rng.standard_normal((4, 65), dtype=np.float32)
    b_np = rng.standard_normal((4, 65), dtype=np.float32)
    b_np[0, :8] = a_np[0, :8]  # some equal pairs for the comparisons
    if op == "pow":
        a_np = np.abs(a_np)
    x, y = lib.asarray(a_np), lib.asarray(b_np)
    with FusionDefinition() as fd:
        a, b = fd.define_tensor(2), fd.define_tensor(2)
        fd.add_output(getattr(fd.ops, op)(a, b))
    out, = fd.execute([x, y])
    close(lib, out, BINARY[op](lib.xp, x, y) if op != "pow" else x ** y)


def test_scalars_on_either_side(lib, rng):
    x = lib.asarray(rng.standard_normal(100, dtype=np.float32))
    with FusionDefinition() as fd:
        a = fd.define_tensor(1)
        s = fd.define_scalar(2.5)
        fd.add_output(a + s)
        fd.add_output(3.0 - a)
        fd.add_output(a * 4)
        fd.add_output(fd.ops.div(a, 8.0))
        fd.add_output(a - s)
    outs = fd.execute([x])
    for got, want in zip(outs, (x + 2.5, 3.0 - x, x * 4, x / 8.0, x - 2.5)):
        close(lib, got, want)


def test_where_cast_and_broadcast(lib, rng):
    a_np = rng.standard_normal((6, 10), dtype=np.float32)
    row_np = rng.standard_normal(10, dtype=np.float32)
    x, row = lib.asarray(a_np), lib.asarray(row_np)
    with FusionDefinition() as fd:
        a = fd.define_tensor([6, 10])
        r = fd.define_tensor(1)
        rb = fd.ops.broadcast(r, [True, False])
        fd.add_output(fd.ops.where(fd.ops.gt(a, rb), a, rb))
        fd.add_output(fd.ops.cast(a, DataType.Double))
    picked, as_double = fd.execute([x, row])
    close(lib, picked, lib.xp.where(x > row[None, :], x, row[None, :] + 0 * x))
    assert lib.to_numpy(as_double).dtype == np.float64
    np.testing.assert_array_equal(lib.to_numpy(as_double), a_np.astype(np.float64))


def test_broadcast_in_dim_matches_broadcast(rng):
    col = rng.standard_normal(5, dtype=np.float32)
    m = rng.standard_normal((5, 3), dtype=np.float32)
    with FusionDefinition() as fd:
        c, a = fd.define_tensor(1), fd.define_tensor(2)
        fd.add_output(fd.ops.broadcast_in_dim(c, 2, [0]) * a)
    out, = fd.execute([col, m])
    np.testing.assert_allclose(out, col[:, None] * m, rtol=RTOL)


def test_strided_input_is_read_in_place(rng):
    big = rng.standard_normal((8, 12), dtype=np.float32)
    view = big[::2, 1::3]  # strides (24, 3) elements: no copy is made to pass it
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], contiguity=[False, False])
        fd.add_output(a * 2)
    out, = fd.execute([view])
    np.testing.assert_array_equal(out, view * 2)


def test_half_and_int_dtypes(rng):
    h = rng.standard_normal(64).astype(np.float16)
    i = rng.integers(-8, 8, 64).astype(np.int64)
    with FusionDefinition() as fd:
        a = fd.define_tensor(1, dtype=DataType.Half)
        b = fd.define_tensor(1, dtype=DataType.Int)
        fd.add_output(fd.ops.add(a, a))
        fd.add_output(fd.ops.mul(b, b))
    ha, ib = fd.execute([h, i])
    assert ha.dtype == np.float16 and ib.dtype == np.int64
    np.testing.assert_array_equal(ha, h + h)
    np.testing.assert_array_equal(ib, i * i)


def test_cached_execute_reuses_the_kernel(rng):
    def define(by_hand):
        with FusionDefinition() as fd:
            a = fd.define_tensor(1)
            fd.add_output(fd.ops.exp(a) * 3)
        if by_hand:
            fd.sched.schedule_pointwise()
        return fd

    fd = define(False)  # define and run: one kernel per input signature
    for n in (10, 1000, 3, 10, 1000):
        y = rng.standard_normal(n, dtype=np.float32)
        out, = fd.execute([y])
        np.testing.assert_allclose(out, np.exp(y) * 3, rtol=RTOL)
    info = fd.cache_info()
    assert (info["entries"], info["kernels"], info["hits"], info["misses"]) == (3, 3, 2, 3)
    assert info["schedulers"] == ["pointwise"]

    fd1, fd2 = define(True), define(True)  # by hand: symbolic sizes, one kernel for every size
    x = rng.standard_normal(10, dtype=np.float32)
    fd1.execute([x])
    compiled = dict(fd1._runners)
    for n in (10, 1000, 3):
        y = rng.standard_normal(n, dtype=np.float32)
        out, = fd1.execute([y])
        np.testing.assert_allclose(out, np.exp(y) * 3, rtol=RTOL)
    assert fd1._runners == compiled and fd1.last_schedulers() == ["user"]
    hits = cfuser.fusion_definition._capi.lib.cf_kernel_cache_hits(cfuser.fusion_definition._kernel_cache())
    fd2.execute([x])  # the same fusion in another definition: a cache hit
    assert cfuser.fusion_definition._capi.lib.cf_kernel_cache_hits(cfuser.fusion_definition._kernel_cache()) == hits + 1


def test_wrong_dtype_and_shape_on_every_library(lib):
    with FusionDefinition() as fd:
        a, b = fd.define_tensor([3, 4]), fd.define_tensor([3, 4])
        fd.add_output(a * b)
    x = lib.asarray(np.ones((3, 4), dtype=np.float32))
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd.execute([x, lib.asarray(np.ones((3, 4), dtype=np.float64))])
    assert str(info.value) == "execute: input 1 (T1) has dtype double, expected float"
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd.execute([x, lib.asarray(np.ones((3, 5), dtype=np.float32))])
    assert str(info.value) == "execute: input 1 (T1) has size 5 in dimension 1, expected 4"
    out, = fd.execute([x, x])  # and the definition still runs
    close(lib, out, x * x)


def test_define_tensor_like(lib, rng):
    x = lib.asarray(rng.standard_normal((4, 6), dtype=np.float32))
    with FusionDefinition() as fd:
        a = fd.from_pytorch(x)  # nvFuser's name; define_tensor_like is the same
        fd.add_output(a * 2)
    with FusionDefinition() as fd_static:
        b = fd_static.define_tensor_like(x, static_sizes=True)
        fd_static.add_output(b + b)
    assert (a.dtype, a.extents, b.extents) == (DataType.Float, ((0, 0), (0, 1)), (4, 6))
    close(lib, fd.execute([x])[0], x * 2)
    close(lib, fd_static.execute([x])[0], x + x)


def test_define_tensor_like_a_strided_array(rng):
    x = rng.standard_normal((4, 6), dtype=np.float32)[:, ::2]
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.define_tensor_like(x)))
    with FusionDefinition() as fd_static:  # its sizes fixed, its strides any (nvFuser's static_sizes)
        t = fd_static.define_tensor_like(x, static_sizes=True)
        fd_static.add_output(fd_static.ops.neg(t))
    assert t.extents == (4, 3)
    out, = fd.execute([x])
    np.testing.assert_array_equal(out, -x)
    out, = fd_static.execute([x])
    np.testing.assert_array_equal(out, -x)
    with pytest.raises(cfuser.InvalidArgumentError) as info:
        fd_static.execute([rng.standard_normal((4, 8), dtype=np.float32)[:, ::2]])
    assert str(info.value) == "execute: input 0 has size 4 in dimension 1, expected 3"
