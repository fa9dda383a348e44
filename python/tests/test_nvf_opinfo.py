"""Port of nvFuser's OpInfo samples (tests/python/opinfo: opinfos.py's elementwise unary and
binary ops, with their special values and dtypes) for the ops cfuser shares: each op on
float32 and float64 samples (with 0-d and empty samples), against NumPy in float64 (a
float32 result within float32 rounding of the float64 value)."""
import math

import numpy as np
import pytest

from cfuser import FusionDefinition
from nvf_port import close, run

def _v(f):
    return np.vectorize(f, otypes=[np.float64])


UNARY = {
    "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh,
    "erf": _v(math.erf), "erfc": _v(math.erfc), "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1,
    "floor": np.floor, "frac": lambda x: x - np.trunc(x), "lgamma": _v(lambda v: math.lgamma(v) if v > 0 or v != int(v)
                                                                       else math.inf),
    "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "neg": np.negative,
    "reciprocal": np.reciprocal, "relu": lambda x: np.maximum(x, 0), "round": np.round,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sign": lambda x: np.where(np.isnan(x), 0.0, np.sign(x)),  # torch: 0 at NaN
    "silu": lambda x: x / (1 + np.exp(-x)), "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan,
    "tanh": np.tanh, "trunc": np.trunc,
    "gelu": lambda x: 0.5 * x * (1 + _v(math.erf)(x / math.sqrt(2))),
}
PREDICATES = {"isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "isneginf": np.isneginf,
              "isposinf": np.isposinf, "isreal": lambda x: np.ones(x.shape, bool), "signbit": np.signbit}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "truediv": np.divide,
          "atan2": np.arctan2, "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
          "fmod": np.fmod, "remainder": lambda a, b: a - np.floor(a / b) * b, "nextafter": np.nextafter}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal}
# the domains of the samples: (low, high) of the uniform values
DOMAIN = {"acos": (-1, 1), "asin": (-1, 1), "atanh": (-0.99, 0.99), "acosh": (1, 5), "log": (0.01, 5),
          "log10": (0.01, 5), "log2": (0.01, 5), "log1p": (-0.9, 5), "sqrt": (0, 5), "rsqrt": (0.01, 5),
          "lgamma": (0.1, 6), "reciprocal": (0.1, 3), "pow": (0.1, 3), "fmod": (0.5, 3), "remainder": (0.5, 3),
          "div": (0.5, 3), "truediv": (0.5, 3)}
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan])
SAMPLES = [(5, 7), (), (0, 3)]
DTYPES = [np.float32, np.float64]


def sample(op, shape, dtype, seed=0):
    lo, hi = DOMAIN.get(op, (-3, 3))
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def check(got, want, dtype):
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    close(got, want.astype(got.dtype) if got.dtype != np.bool_ else want, rtol=rtol, atol=rtol)




@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_opinfo(dev, op, dtype):
    xs = [sample(op, shape, dtype) for shape in SAMPLES]
    with FusionDefinition() as fd:
        for x in xs:
            fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x)))
    for got, x in zip(run(dev, fd, xs), xs):
        check(got, UNARY[op](x.astype(np.float64)), dtype)


@pytest.mark.parametrize("op", sorted(set(UNARY) - {"lgamma", "acosh", "gelu", "silu"}))
def test_unary_special_values(dev, op):
    x = SPECIAL.copy()
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x)))
    got, = run(dev, fd, [x])
    with np.errstate(all="ignore"):
        want = UNARY[op](x)
    check(got, want, np.float64)


@pytest.mark.parametrize("op", sorted(PREDICATES))
def test_predicate_opinfo(dev, op):
    x = np.concatenate([SPECIAL, sample(op, (6,), np.float64)]).astype(np.float32)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(x)))
    got, = run(dev, fd, [x])
    close(got, PREDICATES[op](x))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_opinfo(dev, op, dtype):
    pairs = [(sample(op, shape, dtype), sample(op, shape, dtype, seed=1)) for shape in SAMPLES]
    with FusionDefinition() as fd:
        for a, b in pairs:
            fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(a), fd.from_pytorch(b)))
    for got, (a, b) in zip(run(dev, fd, [x for p in pairs for x in p]), pairs):
        if op == "nextafter":
            close(got, np.nextafter(a, b), rtol=0, atol=0)
        else:
            check(got, BINARY[op](a.astype(np.float64), b.astype(np.float64)), dtype)


@pytest.mark.parametrize("op", sorted(COMPARE))
def test_compare_opinfo(dev, op):
    a = np.array([1.0, 2.0, np.nan, -np.inf, 0.0, 3.0], np.float32)
    b = np.array([1.0, 1.0, np.nan, -np.inf, -0.0, np.nan], np.float32)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(a), fd.from_pytorch(b)))
    got, = run(dev, fd, [a, b])
    close(got, COMPARE[op](a, b))


@pytest.mark.parametrize("op,ref", [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                                    ("bitwise_xor", np.bitwise_xor), ("logical_and", np.logical_and),
                                    ("logical_or", np.logical_or)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_bitwise_opinfo(dev, op, ref, dtype):
    a = np.array([0, 1, 5, -3, 12, 7]).astype(dtype)
    b = np.array([3, 1, 0, 6, -12, 2]).astype(dtype)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(a), fd.from_pytorch(b)))
    got, = run(dev, fd, [a, b])
    close(got, ref(a, b))


@pytest.mark.parametrize("op,ref", [("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_shift_opinfo(dev, op, ref, dtype):
    a = np.array([1, -8, 100, 7], dtype)
    b = np.array([0, 1, 3, 5], dtype)
    with FusionDefinition() as fd:
        fd.add_output(getattr(fd.ops, op)(fd.from_pytorch(a), fd.from_pytorch(b)))
    got, = run(dev, fd, [a, b])
    close(got, ref(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_bitwise_not_opinfo(dev, dtype):
    a = np.array([0, 1, 5, -3]).astype(dtype)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.bitwise_not(fd.from_pytorch(a)))
        fd.add_output(fd.ops.logical_not(fd.from_pytorch(a) if False else fd.ops.ne(fd.inputs()[0], 0)))
    got = run(dev, fd, [a])
    close(got[0], np.invert(a))
    close(got[1], a == 0)
