"""tests/conformance/refs.py: torch's semantics of each elementwise op, written down
independently of cfuser's op table, with NumPy and Python's math as the arithmetic.

Each op is (accepts, result, exact, fn): the dtypes it takes ("all", "no_bool", "float",
"int_bool", "int"), its result dtype ("same"; "float": integers and bool give float32;
"bool"), whether results must be bit-exact (else within a tolerance of a few units in the
last place), and fn on wide values (Python floats for floating compute dtypes, ints for
integers and bool) giving the wide result. Where torch differs from NumPy the comment
says so; where torch's CPU raises and its GPU gives the hardware's value (integer division
by zero), the value is cfuser's defined one (docs/architecture.md, "Semantics")."""
import math
import statistics

import numpy as np

# A reference value meaning "any value is right" (an ill-conditioned point, said where used).
ANY = object()

INT_BITS = {"int8": 8, "int32": 32, "int64": 64, "uint32": 32, "bool": 1}


def _np1(f):
    def g(x, dt):
        with np.errstate(all="ignore"):
            return float(f(np.float64(x)))
    return g


def _erf(x, dt):
    return math.erf(x) if not math.isnan(x) else x


def _erfc(x, dt):
    return math.erfc(x) if not math.isnan(x) else x


def _erfinv(x, dt):
    if math.isnan(x) or abs(x) > 1:
        return math.nan
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    if abs(x) < 1e-8:  # the series: (x + 1) / 2 would lose x
        return math.sqrt(math.pi) / 2 * (x + math.pi / 12 * x ** 3)
    return statistics.NormalDist().inv_cdf((x + 1) / 2) / math.sqrt(2)


def _erfcinv(x, dt):
    if math.isnan(x) or x < 0 or x > 2:
        return math.nan
    if x == 0:
        return math.inf
    if x == 2:
        return -math.inf
    if x < 2.2250738585072014e-308:
        return ANY  # a subnormal double is erfc of a whole interval of y: any of them
    if x < 1e-290:  # x / 2 underflows: bisect erfc, which is decreasing
        lo, hi = 0.0, 30.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erfc(mid) > x else (lo, mid)
        return lo
    return -statistics.NormalDist().inv_cdf(x / 2) / math.sqrt(2)


def _lgamma(x, dt):
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


def _digamma(x, dt):
    """By the recurrence to x >= 30 and eight terms of the asymptotic series (a different
    cut than cfuser's), with torch's values at the poles."""
    if math.isnan(x) or x == math.inf:
        return x
    if x == -math.inf:
        return math.nan
    if x == 0:
        return math.inf if math.copysign(1, x) < 0 else -math.inf
    r = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.nan
        r = -math.pi / math.tan(math.pi * (x - round(x)))  # tan(pi x): period 1, x near an integer kept exact
        x = 1 - x
    while x < 30:
        r -= 1 / x
        x += 1
    z = 1 / (x * x)
    b = [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12, -3617 / 8160]
    s = sum(c * z ** (k + 1) for k, c in enumerate(b))
    return r + math.log(x) - 0.5 / x - s


def _sign(x, dt):  # torch: (0 < x) - (x < 0); NumPy gives NaN for NaN
    return type(x)((0 < x) - (x < 0))


def _round(x, dt):
    return float(np.rint(x)) if isinstance(x, float) else x


def _trunc(x, dt):
    return float(np.trunc(x)) if isinstance(x, float) else x


def _floor(x, dt):
    return float(np.floor(x)) if isinstance(x, float) else x


def _ceil(x, dt):
    return float(np.ceil(x)) if isinstance(x, float) else x


def _sigmoid(x, dt):
    with np.errstate(all="ignore"):
        return float(1 / (1 + np.exp(np.float64(-x))))


def _silu(x, dt):
    return x * _sigmoid(x, dt)


def _gelu(x, dt):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2), dt)) if not math.isnan(x) else x


def _relu(x, dt):  # keeps NaN (torch's clamp_min)
    return (0.0 if isinstance(x, float) else 0) if x <= 0 else x


UNARY = {
    "neg": ("no_bool", "same", True, lambda x, dt: -x),
    "abs": ("all", "same", True, lambda x, dt: abs(x)),
    # torch.real and torch.conj of a real tensor are the tensor; torch.imag refuses one (the
    # complex columns: python/tests/test_nvf_dtypes.py against NumPy)
    "real": ("all", "same", True, lambda x, dt: x),
    "conj": ("all", "same", True, lambda x, dt: x),
    "imag": ("complex", "same", True, lambda x, dt: 0.0),
    "relu": ("all", "same", True, _relu),
    "floor": ("all", "same", True, _floor),
    "ceil": ("all", "same", True, _ceil),
    "round": ("all", "same", True, _round),
    "trunc": ("all", "same", True, _trunc),
    "sign": ("all", "same", True, _sign),
    "frac": ("float", "same", True, lambda x, dt: x - float(np.trunc(x))),
    "reciprocal": ("all", "float", True, lambda x, dt: _np1(lambda v: 1 / v)(x, dt)),
    "sqrt": ("all", "float", True, _np1(np.sqrt)),
    "rsqrt": ("all", "float", False, _np1(lambda v: 1 / np.sqrt(v))),
    "exp": ("all", "float", False, _np1(np.exp)),
    "exp2": ("all", "float", False, _np1(np.exp2)),
    "expm1": ("all", "float", False, _np1(np.expm1)),
    "log": ("all", "float", False, _np1(np.log)),
    "log2": ("all", "float", False, _np1(np.log2)),
    "log10": ("all", "float", False, _np1(np.log10)),
    "log1p": ("all", "float", False, _np1(np.log1p)),
    "sin": ("all", "float", False, _np1(np.sin)),
    "cos": ("all", "float", False, _np1(np.cos)),
    "tan": ("all", "float", False, _np1(np.tan)),
    "asin": ("all", "float", False, _np1(np.arcsin)),
    "acos": ("all", "float", False, _np1(np.arccos)),
    "atan": ("all", "float", False, _np1(np.arctan)),
    "sinh": ("all", "float", False, _np1(np.sinh)),
    "cosh": ("all", "float", False, _np1(np.cosh)),
    "tanh": ("all", "float", False, _np1(np.tanh)),
    "asinh": ("all", "float", False, _np1(np.arcsinh)),
    "acosh": ("all", "float", False, _np1(np.arccosh)),
    "atanh": ("all", "float", False, _np1(np.arctanh)),
    "erf": ("all", "float", False, _erf),
    "erfc": ("all", "float", False, _erfc),
    "erfinv": ("all", "float", False, _erfinv),
    "erfcinv": ("all", "float", False, _erfcinv),
    "lgamma": ("all", "float", False, _lgamma),
    "digamma": ("all", "float", False, _digamma),
    "sigmoid": ("all", "float", False, _sigmoid),
    "silu": ("all", "float", False, _silu),
    "gelu": ("all", "float", False, _gelu),
    "isfinite": ("all", "bool", True, lambda x, dt: math.isfinite(x) if isinstance(x, float) else True),
    "isinf": ("all", "bool", True, lambda x, dt: math.isinf(x) if isinstance(x, float) else False),
    "isnan": ("all", "bool", True, lambda x, dt: math.isnan(x) if isinstance(x, float) else False),
    "isneginf": ("all", "bool", True, lambda x, dt: x == -math.inf),
    "isposinf": ("all", "bool", True, lambda x, dt: x == math.inf),
    "isreal": ("all", "bool", True, lambda x, dt: True),
    "signbit": ("all", "bool", True, lambda x, dt: math.copysign(1, x) < 0 if isinstance(x, float) else x < 0),
    "logical_not": ("all", "bool", True, lambda x, dt: not x),
    "bitwise_not": ("int_bool", "same", True, lambda x, dt: (not x) if dt == "bool" else ~x),
}


# ---- binary ------------------------------------------------------------------------------------

def _int_div(a, b):  # truncating; by zero -1; INT_MIN / -1 wraps (stored later)
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a, b):
    return a if b == 0 else a - b * _int_div(a, b)


def _floordiv(a, b, dt):  # Python's // (torch's algorithm: fmod first); by zero a / b, ints -1
    if b == 0:
        return _div(a, b, dt) if isinstance(a, float) else -1
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b) or math.isinf(a)):
        return math.nan
    return a // b


def _remainder(a, b, dt):  # the divisor's sign, from fmod (torch's formula; NumPy's differs on -0.0)
    if isinstance(a, float):
        with np.errstate(all="ignore"):
            m = float(np.fmod(np.float64(a), np.float64(b)))
        return m + b if m != 0 and (b < 0) != (m < 0) else m
    return a if b == 0 else a % b


def _fmod(a, b, dt):
    if isinstance(a, float):
        with np.errstate(all="ignore"):
            return float(np.fmod(np.float64(a), np.float64(b)))
    return _int_mod(a, b)


def _div(a, b, dt):
    if isinstance(a, float):
        with np.errstate(all="ignore"):
            return float(np.float64(a) / np.float64(b))
    return _int_div(a, b)


def _pow_neg_inf(b):
    """C99's pow(-inf, b) (Annex F), which torch follows; some NumPy versions give NaN for
    b > 0 not an odd integer, where C gives +inf."""
    if math.isnan(b):
        return math.nan
    odd = math.isfinite(b) and b == math.floor(b) and int(b) % 2 == 1
    if b == 0:
        return 1.0
    if b > 0:
        return -math.inf if odd else math.inf
    return -0.0 if odd else 0.0


def _pow(a, b, dt):
    if isinstance(a, float) and a == -math.inf:
        return _pow_neg_inf(float(b))
    if isinstance(a, float):
        with np.errstate(all="ignore"):
            return float(np.power(np.float64(a), np.float64(b)))
    if dt == "bool":
        return bool(a) or not b
    if b < 0:  # torch's powi
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return pow(a, b, 1 << 64)


def _nan_max(a, b, dt):
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return max(a, b)


def _nan_min(a, b, dt):
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return min(a, b)


def _shl(a, b, dt):  # torch: an amount < 0 or >= the width gives 0
    return 0 if b < 0 or b >= INT_BITS[dt] else a << b


def _shr(a, b, dt):  # torch: the sign for signed types (0 for unsigned) past the width
    width = INT_BITS[dt]
    if b < 0 or b >= width:
        return -1 if a < 0 else 0
    return a >> b


def _nextafter(a, b, dt):
    if dt == "float32":
        return float(np.nextafter(np.float32(a), np.float32(b)))
    return float(np.nextafter(np.float64(a), np.float64(b)))


def _cmp(op):
    return lambda a, b, dt: op(a, b)


BINARY = {
    "add": ("all", "same", True, lambda a, b, dt: (a or b) if dt == "bool" else a + b),
    "sub": ("no_bool", "same", True, lambda a, b, dt: a - b),  # torch refuses bool - bool
    "mul": ("all", "same", True, lambda a, b, dt: (a and b) if dt == "bool" else a * b),
    "div": ("all", "same", True, _div),
    "truediv": ("all", "float", True, lambda a, b, dt: _div(float(a), float(b), dt)),
    "mod": ("all", "same", True, _fmod),
    "fmod": ("all", "same", True, _fmod),
    "remainder": ("all", "same", True, _remainder),
    # floating: a composite (fmod, a subtraction, a division) rounded in the compute dtype by
    # the kernels (as torch does) and in double by the evaluator: within a few ulp
    "floor_divide": ("all", "same", False, _floordiv),
    "pow": ("all", "same", False, _pow),
    "maximum": ("all", "same", True, _nan_max),
    "minimum": ("all", "same", True, _nan_min),
    "atan2": ("all", "float", False, lambda a, b, dt: math.atan2(a, b) if not (math.isnan(a) or math.isnan(b))
              else math.nan),
    "nextafter": ("full_float", "same", True, _nextafter),
    "eq": ("all", "bool", True, _cmp(lambda a, b: a == b)),
    "ne": ("all", "bool", True, _cmp(lambda a, b: a != b)),
    "lt": ("all", "bool", True, _cmp(lambda a, b: a < b)),
    "le": ("all", "bool", True, _cmp(lambda a, b: a <= b)),
    "gt": ("all", "bool", True, _cmp(lambda a, b: a > b)),
    "ge": ("all", "bool", True, _cmp(lambda a, b: a >= b)),
    "logical_and": ("all", "bool", True, _cmp(lambda a, b: bool(a) and bool(b))),
    "logical_or": ("all", "bool", True, _cmp(lambda a, b: bool(a) or bool(b))),
    "bitwise_and": ("int_bool", "same", True, lambda a, b, dt: a & b),
    "bitwise_or": ("int_bool", "same", True, lambda a, b, dt: a | b),
    "bitwise_xor": ("int_bool", "same", True, lambda a, b, dt: a ^ b),
    "bitwise_left_shift": ("int", "same", True, _shl),
    "bitwise_right_shift": ("int", "same", True, _shr),
    "gcd": ("int", "same", True, lambda a, b, dt: math.gcd(a, b)),  # |INT_MIN| wraps to INT_MIN
}

# Ops whose sign of zero is unspecified (torch's maximum(-0.0, 0.0) is either zero).
ZERO_SIGN_FREE = {"maximum", "minimum"}


FLOATS = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


# ---- complex -----------------------------------------------------------------------------------
# The ops torch (and NumPy) define on complex tensors, cfuser's set of them: name -> (result
# "same", "part" (the real dtype of a part) or "bool"; exact; fn on NumPy scalars of the
# dtype). NumPy computes complex64 in float, so a product or quotient of two complex values
# rounds several times (differently in C99's arithmetic, the evaluator's, computed in double):
# those, abs (hypot) and the transcendental ops are compared within the dtype's rounding,
# normwise; add, sub, neg, conj, real, imag, eq and ne round once or not at all: exact.
def _np_div(a, b):
    return a / b


COMPLEX = {
    "neg": ("same", True, lambda z: -z),
    "abs": ("part", False, np.abs),
    "real": ("part", True, np.real),
    "imag": ("part", True, np.imag),
    "conj": ("same", True, np.conj),
    "exp": ("same", False, np.exp),
    "log": ("same", False, np.log),
    "sqrt": ("same", False, np.sqrt),
    "rsqrt": ("same", False, lambda z: 1 / np.sqrt(z)),  # torch.rsqrt and cfuser: 1 / sqrt(z)
    "reciprocal": ("same", False, lambda z: 1 / z),
    "add": ("same", True, lambda a, b: a + b),
    "sub": ("same", True, lambda a, b: a - b),
    "mul": ("same", False, lambda a, b: a * b),
    "div": ("same", False, _np_div),
    "truediv": ("same", False, _np_div),
    "eq": ("bool", True, lambda a, b: a == b),
    "ne": ("bool", True, lambda a, b: a != b),
}
COMPLEX_PART = {"complex64": "float32", "complex128": "float64"}


def complex_ref(name, dtype, *args):
    """The reference's result of a complex op on Python complex operands of dtype, as a
    Python complex, float or bool (not yet stored in the result dtype)."""
    np_t = np.complex64 if dtype == "complex64" else np.complex128
    with np.errstate(all="ignore"):
        r = COMPLEX[name][2](*[np_t(a) for a in args])
    return bool(r) if COMPLEX[name][0] == "bool" else complex(r) if COMPLEX[name][0] == "same" else float(r)


# Products and quotients whose NumPy value is not finite: NumPy's formulas give NaN (or a
# complex infinity of another sign) where C99's Annex G, which cfuser's evaluator and kernels
# follow (and torch's CPU through the C++ library), recovers the infinity or the zero:
# (1+0j) * (-inf-infj) is -inf-infj in C99, nan+nanj in NumPy; 1 / (-inf-infj) is -0+0j,
# nan+nanj; 1 / (-0-0j) is -inf+nanj, inf+nanj; NumPy's 0 / (a subnormal) is nan+nanj.
# The matrix compares these cells against NumPy in test_complex_annex_g (an expected
# failure listing each difference) and everywhere else checks the backends against the evaluator.
ANNEX_G_OPS = ("mul", "div", "truediv", "reciprocal", "rsqrt")


def annex_g_cell(name, want):
    return name in ANNEX_G_OPS and not (math.isfinite(want.real) and math.isfinite(want.imag))


def complex_result_dtype(name, dtype):
    return {"same": dtype, "part": COMPLEX_PART[dtype], "bool": "bool"}[COMPLEX[name][0]]


# Storage types (torch's and nvFuser's float4_e2m1fn): moves and casts only, no elementwise op.
STORAGE_ONLY = ("float4_e2m1fn",)


def accepts(kind, dtype, name=None):
    """Whether an op of reference kind `kind` (named `name`) takes dtype: complex dtypes
    only for the ops of COMPLEX, storage types for none."""
    if dtype in STORAGE_ONLY:
        return False
    if dtype in COMPLEX_PART:
        return name in COMPLEX
    return {"all": True, "no_bool": dtype != "bool", "float": dtype in FLOATS,
            "full_float": dtype in ("float32", "float64"), "int_bool": dtype in INT_BITS,
            "int": dtype in INT_BITS and dtype != "bool", "complex": False}[kind]


def result_dtype(result, dtype):
    if result == "bool":
        return "bool"
    if result == "float" and dtype not in FLOATS:
        return "float32"
    return dtype
