"""Ports of nvFuser's frontend tests of the element types cfuser gained for issue 26: the
8-bit floats (test_cast_fp8) and the complex types (test_complex_rsqrt, test_real_imag,
test_reduction_complex_number, test_complex_constants).

References are NumPy's (ml_dtypes' float8 types on NumPy arrays, whose rounding is
torch's: nearest even, e4m3fn overflows to NaN, e5m2 to infinity); on torch CUDA (the `dev`
fixture) the inputs are torch tensors of the same values. NumPy without ml_dtypes has no
float8: those tests skip saying so.
"""
from __future__ import annotations

import numpy as np
import pytest

import cfuser
from cfuser import DataType
from nvf_port import close, exec_nvfuser, randn

FP8 = {DataType.Float8_e4m3fn: "float8_e4m3fn", DataType.Float8_e5m2: "float8_e5m2"}
FLOATS = {np.float64: DataType.Double, np.float32: DataType.Float, np.float16: DataType.Half, "bfloat16": DataType.BFloat16}


def _ml():
    return pytest.importorskip("ml_dtypes", reason="float8 and bfloat16 on NumPy arrays need ml_dtypes")


def _np_dtype(t):
    return getattr(_ml(), t) if isinstance(t, str) else t


def _on(dev, a: np.ndarray):
    """a (a NumPy array of any dtype, ml_dtypes' included) as an array of dev."""
    if dev.name == "numpy":
        return a
    torch = dev.xp
    return dev.asarray(a.astype(np.float32)).to(getattr(torch, str(a.dtype)))


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint8)


@pytest.mark.parametrize("src", list(FLOATS), ids=lambda t: getattr(t, "__name__", t))
@pytest.mark.parametrize("fp8", list(FP8), ids=lambda d: d.name)
def test_cast_fp8(dev, src, fp8):
    # nvFuser's test_cast_fp8: a [5, 5] randn tensor of each floating type cast to each
    # 8-bit float, and back; the result is torch's (here ml_dtypes') bit for bit
    ml = _ml()
    x = (randn(5, 5) * 8).astype(_np_dtype(src))
    want = x.astype(getattr(ml, FP8[fp8]))

    def to_fp8(fd):
        fd.add_output(fd.ops.cast(fd.define_tensor([5, 5], dtype=FLOATS[src]), fp8))

    out, _ = exec_nvfuser(dev, to_fp8, [_on(dev, x)])
    assert out[0].dtype == want.dtype
    np.testing.assert_array_equal(_bits(out[0]), _bits(want))

    def from_fp8(fd):
        fd.add_output(fd.ops.cast(fd.define_tensor([5, 5], dtype=fp8), FLOATS[src]))

    back, _ = exec_nvfuser(dev, from_fp8, [_on(dev, want)])
    np.testing.assert_array_equal(back[0].astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("fp8", list(FP8), ids=lambda d: d.name)
def test_cast_fp8_special_values(dev, fp8):
    # overflow (e4m3fn: NaN past 464, e5m2: inf from 61440), ties, subnormals, NaN, inf, -0
    ml = _ml()
    x = np.array([448, 464, 465, 480, 57344, 61439, 61440, 1e6, np.inf, -np.inf, np.nan, -0.0, 2.0 ** -10,
                  1.5 * 2.0 ** -10, 2.0 ** -17, 1.0625, 1.1875, 1.125, 1.375, -2.5, 0.1], np.float32)
    want = x.astype(getattr(ml, FP8[fp8]))

    def fusion_func(fd):
        t0 = fd.define_tensor([x.size], dtype=DataType.Float)
        t1 = fd.ops.cast(t0, fp8)
        fd.add_output(t1)
        fd.add_output(fd.ops.cast(t1, DataType.Float))

    out, _ = exec_nvfuser(dev, fusion_func, [_on(dev, x)])
    nan = np.isnan(want.astype(np.float32))  # NaN codes: torch's 0x7F (ml_dtypes' e5m2 NaN is 0x7E)
    np.testing.assert_array_equal(np.isnan(out[0].astype(np.float32)), nan)
    np.testing.assert_array_equal(_bits(out[0])[~nan], _bits(want)[~nan])
    assert (_bits(out[0])[nan] & 0x7F == 0x7F).all()
    np.testing.assert_array_equal(out[1], want.astype(np.float32))


def test_fp8_arithmetic_computes_in_float(dev):
    # arithmetic on 8-bit floats converts to float, computes and rounds once (nvFuser's
    # promotion: fp8 counts as half does); e4m3fn with e5m2 gives float
    ml = _ml()
    a = (randn(4, 8) * 4).astype(ml.float8_e4m3fn)
    b = (randn(4, 8, seed=1) * 4).astype(ml.float8_e5m2)

    def fusion_func(fd):
        t0 = fd.define_tensor([4, 8], dtype=DataType.Float8_e4m3fn)
        t1 = fd.define_tensor([4, 8], dtype=DataType.Float8_e5m2)
        fd.add_output(fd.ops.add(t0, t0))
        fd.add_output(fd.ops.mul(t0, t1))
        fd.add_output(fd.ops.sum(t0, [1]))

    out, _ = exec_nvfuser(dev, fusion_func, [_on(dev, a), _on(dev, b)])
    af, bf = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_array_equal(_bits(out[0]), _bits((af + af).astype(ml.float8_e4m3fn)))
    close(out[1], af * bf)
    np.testing.assert_array_equal(_bits(out[2]), _bits(af.sum(1).astype(ml.float8_e4m3fn)))


def test_fp8_dtype_names():
    assert cfuser.types.as_dtype("float8_e4m3fn") is DataType.Float8_e4m3fn
    assert cfuser.types.as_dtype("torch.float8_e5m2") is DataType.Float8_e5m2
    assert cfuser.types.is_floating(DataType.Float8_e5m2)


# ---- complex64 and complex128 (DataType.ComplexFloat / ComplexDouble) ----------------------

COMPLEX = {np.complex64: DataType.ComplexFloat, np.complex128: DataType.ComplexDouble}


def _crandn(n, dtype, seed=0):
    return (randn(n, dtype=np.float64, seed=seed) + 1j * randn(n, dtype=np.float64, seed=seed + 7)).astype(dtype)


def test_complex_rsqrt(dev):
    inputs = [_crandn(4, np.complex64), _crandn(4, np.complex128, seed=1)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        t1 = fd.from_pytorch(inputs[1])
        fd.add_output(fd.ops.rsqrt(t0))
        fd.add_output(fd.ops.rsqrt(t1))

    (rfloat, rdouble), _ = exec_nvfuser(dev, fusion_func, inputs)
    close(rfloat, 1 / np.sqrt(inputs[0]))
    close(rdouble, 1 / np.sqrt(inputs[1]), rtol=1e-12, atol=1e-14)


def test_complex_sqrt_branch_cut_is_numpys(dev):
    # the negative real axis: the sign of a zero imaginary part picks the side, as NumPy's
    x = np.array([-4 + 0j, complex(-4, -0.0), 0j, 3 + 4j, -1e-30 + 1e-30j], dtype=np.complex128)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(fd.ops.sqrt(t0))
        fd.add_output(fd.ops.rsqrt(fd.ops.cast(t0, DataType.ComplexFloat)))

    (s, r), _ = exec_nvfuser(dev, fusion_func, [x])
    close(s, np.sqrt(x), rtol=1e-15, atol=0)
    assert np.signbit(s.imag[1]) and not np.signbit(s.imag[0])
    with np.errstate(all="ignore"):  # 1 / sqrt(0) is inf in both
        want = 1 / np.sqrt(x.astype(np.complex64))
    close(r[[0, 1, 3]], want[[0, 1, 3]])


def test_real_imag(dev):
    for dtype in (np.complex128, np.complex64):
        inputs = [_crandn(5, dtype)]

        def fusion_func(fd):
            t0 = fd.from_pytorch(inputs[0])
            fd.add_output(fd.ops.real(t0))
            fd.add_output(fd.ops.imag(t0))

        (re, im), fd = exec_nvfuser(dev, fusion_func, inputs)
        close(re, np.real(inputs[0]), rtol=0, atol=0)
        close(im, np.imag(inputs[0]), rtol=0, atol=0)


def test_reduction_complex_number(dev):
    for dtype, dt in COMPLEX.items():
        inputs = [(randn(2, 32, dtype=np.float64) + 1j * randn(2, 32, dtype=np.float64, seed=3)).astype(dtype)]

        def fusion_func(fd):
            t0 = fd.from_pytorch(inputs[0])
            fd.add_output(fd.ops.sum(t0, [-1], False, dt))

        (out,), _ = exec_nvfuser(dev, fusion_func, inputs)
        assert out.dtype == dtype
        close(out, np.sum(inputs[0], axis=-1), rtol=1e-5 if dtype == np.complex64 else 1e-12)


def test_complex_constants(dev):
    inputs = [np.arange(2).astype(np.complex64)]

    def fusion_func(fd):
        t0 = fd.from_pytorch(inputs[0])
        c0 = fd.define_scalar(complex(3.0, 0.5))
        fd.add_output(fd.ops.mul(t0, c0))

    (out,), fd = exec_nvfuser(dev, fusion_func, inputs)
    assert out.dtype == np.complex64  # a complex scalar does not promote a complex64 tensor
    close(out, inputs[0] * (3.0 + 0.5j))


def test_complex_scalar_promotes_a_float_tensor_to_complex64(dev):
    x = randn(3)

    def fusion_func(fd):
        t0 = fd.from_pytorch(x)
        fd.add_output(t0 * complex(1.0, -2.0))
        fd.add_output(fd.ops.abs(fd.ops.cast(t0, DataType.ComplexDouble) + 1j))

    (z, a), _ = exec_nvfuser(dev, fusion_func, [x])
    assert z.dtype == np.complex64 and a.dtype == np.float64
    close(z, x * np.complex64(1 - 2j))
    close(a, np.abs(x.astype(np.complex128) + 1j), rtol=1e-12)


def test_complex_arithmetic_and_comparisons(dev):
    a, b = _crandn(6, np.complex64), _crandn(6, np.complex64, seed=2)
    b[1] = a[1]

    def fusion_func(fd):
        t0, t1 = fd.from_pytorch(a), fd.from_pytorch(b)
        for op in ("add", "sub", "mul", "div", "eq", "ne"):
            fd.add_output(getattr(fd.ops, op)(t0, t1))
        for op in ("neg", "exp", "log", "reciprocal", "abs"):
            fd.add_output(getattr(fd.ops, op)(t0))
        fd.add_output(fd.ops.where(fd.ops.eq(t0, t1), t0, t1))

    outs, _ = exec_nvfuser(dev, fusion_func, [a, b])
    want = [a + b, a - b, a * b, a / b, a == b, a != b, -a, np.exp(a), np.log(a), 1 / a, np.abs(a),
            np.where(a == b, a, b)]
    for o, w in zip(outs, want):
        close(o, w)


def test_ops_that_do_not_take_complex_refuse_it():
    with cfuser.FusionDefinition() as fd:
        t0 = fd.define_tensor([4], dtype=DataType.ComplexFloat)
        with pytest.raises(cfuser.InvalidArgumentError, match="max: T0 has dtype complex_float, but max does "
                                                              "not take complex tensors"):
            fd.ops.maximum(t0, t0)  # the C op is max
