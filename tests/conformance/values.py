"""tests/conformance/values.py: the special values of each dtype and exact conversions.

Values are held wide: Python floats (float64) for floating dtypes, Python ints for integer
dtypes and bool. `store` rounds a wide value into a dtype exactly as cfuser's evaluator
does (round to nearest even; floating to integer truncates and saturates, NaN gives 0;
integers wrap), so references computed wide and stored once are what the evaluator,
host kernels and CUDA kernels must give. bfloat16 arrays hold raw uint16 bits, the 8-bit
floats raw uint8 bits (torch's rounding: to float32 first, then nearest even; e4m3fn
overflows past 464 to NaN, e5m2 from 61440 to infinity), float4_e2m1fn arrays one code a
byte (capi.py packs them two to a byte at the C boundary; CUDA's cuda_fp4.h rounding: to
float32 first, then nearest even, saturating to +-6, infinities too, NaN to +6). Complex values are Python
complex numbers, each part stored as the part's dtype (complex64: float32 parts); a
complex value stored in a real dtype keeps its real part (bool: either part nonzero), a
real one stored in a complex dtype gets imaginary 0 (cfuser's casts, torch's and NumPy's)."""
import math
import struct

import numpy as np

FLOATS = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")
FP8 = {"float8_e4m3fn": (3, 4, 448.0), "float8_e5m2": (2, 5, 57344.0)}  # fraction bits, exponent bits, largest
# float4_e2m1fn by code: 0..7 the magnitudes, 8..15 their negatives (8 is -0.0)
FP4_CODES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0] + [-v for v in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)]
COMPLEX = {"complex64": "float32", "complex128": "float64"}  # the dtype of each part
INTS = {"int8": (8, True), "int32": (32, True), "int64": (64, True), "uint32": (32, False)}

_COMMON = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0, 0.1, -0.3, 100.0, 0.9, -0.9,
           math.inf, -math.inf, math.nan]
SPECIALS = {
    "float32": _COMMON + [1e-40, -1e-40, 1e30, -1e30, 3.4028234663852886e38, -3.4028234663852886e38, 2.0 ** 31,
                          -(2.0 ** 31), 2.0 ** 63, 16777217.0],
    "float64": _COMMON + [5e-324, -5e-324, 1e300, -1e300, 1.7976931348623157e308, 2.0 ** 63, -(2.0 ** 63),
                          2.0 ** 62 + 1, 1e-310],
    "float16": _COMMON + [5.960464477539063e-08, -5.960464477539063e-08, 65504.0, -65504.0, 1000.0, 2049.0],
    "bfloat16": _COMMON + [9.183549615799121e-41, 1e30, -1e30, 3.3895313892515355e38, 257.0],
    "float8_e4m3fn": _COMMON + [448.0, -448.0, 2.0 ** -9, -(2.0 ** -9), 2.0 ** -6, 240.0, 0.015625],
    "float8_e5m2": _COMMON + [57344.0, -57344.0, 2.0 ** -16, -(2.0 ** -16), 2.0 ** -14, 1000.0, 49152.0],
    # every magnitude, ties (0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 5 -> 4) and saturation (7, 100, 1e30, inf -> 6)
    "float4_e2m1fn": _COMMON + [6.0, -6.0, 4.0, -4.0, 0.25, -0.25, 0.75, 5.0, -5.0, 1e30],
    "int8": [0, 1, -1, 2, -2, 3, 7, -7, 8, 100, -100, 127, -128, 126, -127],
    "int32": [0, 1, -1, 2, -2, 3, 7, -7, 31, 32, 40, 100000, 2 ** 31 - 1, -(2 ** 31), -(2 ** 31) + 1],
    "int64": [0, 1, -1, 2, -2, 3, 7, -7, 20, 63, 64, 2 ** 62 + 1, 2 ** 63 - 1, -(2 ** 63), -(2 ** 63) + 1],
    "uint32": [0, 1, 2, 3, 7, 31, 32, 40, 2 ** 31, 2 ** 32 - 1, 2 ** 32 - 2],
    "bool": [False, True],
}


def _complex_specials(part):
    """0, -0, 1, -1, 0.5j, inf, -inf and NaN in either part, large and small magnitudes."""
    inf, nan = math.inf, math.nan
    big, tiny = {"float32": (1e30, 1e-40), "float64": (1e300, 5e-324)}[part]
    return [complex(0.0, 0.0), complex(-0.0, -0.0), complex(0.0, -0.0), complex(1.0, 0.0), complex(-1.0, 0.0),
            complex(0.0, 0.5), complex(-0.0, -0.5), complex(1.0, 1.0), complex(-2.5, 0.5), complex(3.0, -7.0),
            complex(0.1, -0.3), complex(inf, 0.0), complex(-inf, 0.0), complex(inf, 1.0), complex(1.0, inf),
            complex(0.0, -inf), complex(-inf, -inf), complex(nan, 0.0), complex(0.0, nan), complex(nan, nan),
            complex(1.0, nan), complex(big, -big), complex(-big, 2.0), complex(tiny, -tiny), complex(tiny, 1.0)]


for _c, _p in COMPLEX.items():
    SPECIALS[_c] = _complex_specials(_p)


def is_float(dtype):
    return dtype in FLOATS


def is_complex(dtype):
    return dtype in COMPLEX


def _round_to_format(x, mbits, ebits, largest=None):
    """x rounded to nearest even in a binary format of mbits fraction bits and ebits
    exponent bits (no double rounding), as a Python float; past `largest` (given: the 8-bit
    floats) the result is NaN for a format without infinity (e4m3fn), else infinity."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    bias = (1 << (ebits - 1)) - 1
    a = abs(x)
    e = max(math.frexp(a)[1] - 1, 1 - bias)  # the exponent of a's binade, subnormals at the bottom
    q = a / 2.0 ** (e - mbits)  # exact: a scaling by a power of two
    r = math.floor(q)
    rem = q - r
    if rem > 0.5 or (rem == 0.5 and r % 2 == 1):
        r += 1
    v = r * 2.0 ** (e - mbits)
    if largest is not None:
        return math.copysign(v, x) if v <= largest else math.nan if ebits == 4 else math.copysign(math.inf, x)
    if v >= 2.0 ** (bias + 1):
        v = math.inf
    return math.copysign(v, x)


def _fp8(x, dtype):
    """x as torch stores it in an 8-bit float: rounded to float32 first."""
    mbits, ebits, largest = FP8[dtype]
    with np.errstate(over="ignore"):
        x = float(np.float32(x))
    if math.isinf(x) and ebits == 4:
        return math.nan
    return _round_to_format(x, mbits, ebits, largest)


def _fp8_codes(dtype):
    """{value: code} of every number of an 8-bit float, and the list of values by code."""
    mbits, ebits, _ = FP8[dtype]
    bias = (1 << (ebits - 1)) - 1
    vals = []
    for c in range(256):
        e, m = (c >> mbits) & ((1 << ebits) - 1), c & ((1 << mbits) - 1)
        if (ebits == 4 and c & 0x7F == 0x7F) or (ebits == 5 and e == 31 and m):
            v = math.nan
        elif ebits == 5 and e == 31:
            v = math.inf
        else:
            v = (1 + m / (1 << mbits)) * 2.0 ** (e - bias) if e else m * 2.0 ** (1 - bias - mbits)
        vals.append(-v if c & 0x80 else v)
    return vals


def _fp4(x):
    """x as CUDA's cuda_fp4.h stores it in float4_e2m1fn (through float32 first)."""
    with np.errstate(over="ignore"):
        x = float(np.float32(x))
    if math.isnan(x):
        return 6.0
    a = abs(x)
    if a >= 6.0:
        return math.copysign(6.0, x)
    k = max(c for c in range(8) if FP4_CODES[c] <= a)  # the code at or below a; a < 6: k < 7
    lo, hi = FP4_CODES[k], FP4_CODES[k + 1]
    mid = (lo + hi) / 2
    v = lo if a < mid or (a == mid and k % 2 == 0) else hi
    return math.copysign(v, x)


def wrap(v, dtype):
    """An integer wrapped into dtype (two's complement), or bool."""
    if dtype == "bool":
        return bool(v)
    bits, signed = INTS[dtype]
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def to_int(x, dtype):
    """A float converted to an integer dtype as cfuser does: truncate, saturate, NaN -> 0."""
    if dtype == "bool":
        return x != 0
    if math.isnan(x):
        return 0
    bits, signed = INTS[dtype]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return int(x)


def store(v, dtype):
    """The wide value v (Python float, int, bool or complex) as dtype holds it, widened again."""
    if is_complex(dtype):
        part = COMPLEX[dtype]
        return complex(store(complex(v).real, part), store(complex(v).imag, part))
    if isinstance(v, complex):  # a real dtype keeps the real part; bool: either part nonzero
        return (v.real != 0 or v.imag != 0) if dtype == "bool" else store(v.real, dtype)
    if is_float(dtype):
        x = float(v)
        if dtype == "float64":
            return x
        if dtype == "float32":
            with np.errstate(over="ignore"):
                return float(np.float32(x))
        if dtype in FP8:
            return _fp8(x, dtype)
        if dtype == "float4_e2m1fn":
            return _fp4(x)
        return _round_to_format(x, 10, 5) if dtype == "float16" else _round_to_format(x, 7, 8)
    if isinstance(v, float):
        return to_int(v, dtype)
    return wrap(int(v), dtype)


def bf16_bits(x):
    """The bits of a bfloat16 value (x already representable)."""
    if math.isnan(x):
        return 0x7FC0
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", int(bits) << 16))[0]


def array(values, dtype):
    """A NumPy array holding wide values stored in dtype (bfloat16 as bits)."""
    stored = [store(v, dtype) for v in values]
    if dtype == "bfloat16":
        return np.array([bf16_bits(x) for x in stored], dtype=np.uint16)
    if dtype in FP8:
        codes = _fp8_codes(dtype)
        return np.array([0x7F if math.isnan(x) else codes.index(x) if x or not math.copysign(1, x) < 0 else 0x80
                         for x in stored], dtype=np.uint8)
    if dtype == "float4_e2m1fn":  # one code a byte (no NaN in the format)
        return np.array([FP4_CODES.index(x) if x or not math.copysign(1, x) < 0 else 8 for x in stored], np.uint8)
    np_dtype = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
                "int32": np.int32, "int64": np.int64, "uint32": np.uint32, "bool": np.bool_,
                "complex64": np.complex64, "complex128": np.complex128}[dtype]
    return np.array(stored, dtype=np_dtype)


def widen(arr, dtype):
    """The wide values of an array of dtype."""
    if dtype == "bfloat16":
        return [bf16_value(b) for b in arr.reshape(-1)]
    if dtype in FP8:
        codes = _fp8_codes(dtype)
        return [codes[int(b)] for b in arr.reshape(-1)]
    if dtype == "float4_e2m1fn":
        return [FP4_CODES[int(b)] for b in arr.reshape(-1)]
    if is_complex(dtype):
        return [complex(x) for x in arr.reshape(-1)]
    if is_float(dtype):
        return [float(x) for x in arr.reshape(-1)]
    if dtype == "bool":
        return [bool(x) for x in arr.reshape(-1)]
    return [int(x) for x in arr.reshape(-1)]
