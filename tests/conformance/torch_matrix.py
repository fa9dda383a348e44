"""tests/conformance/torch_matrix.py: the conformance matrix against torch itself, on the GPU.

For every dtype, one fusion of every elementwise op of cfuser's op table that takes it (the
matrix's test_kernels fusion: unary ops on a, binary ones on (a, b), a and b every pair of
the dtype's special values) runs on CUDA through define and run, and each output is
compared with torch's op on CUDA tensors of the same values; then casts between every pair
of dtypes and the sum/prod/max/min reductions. Differences are listed per (op, dtype) with
examples. Cells where torch's value is undefined and cfuser defines one are not compared,
and are said: integer division and remainders by zero (cfuser: -1 and the dividend; torch's
GPU: what the hardware gives), INT_MIN / -1 (cfuser wraps), and erfcinv of x within the dtype's
epsilon of 0 (torch computes erfinv(1 - x), and 1 - x rounds to 1: inf, where cfuser keeps the value,
e.g. erfcinv(1e-40) = 9.45), and casts of NaN or out-of-range floats to integers (C++
leaves them undefined: torch gives the hardware's value, cfuser saturates). Ops torch refuses for a dtype that cfuser takes (gelu of
integers: cfuser computes it in float, as exp of integers) are listed as notes. Exit
status: 0 when every compared cell agrees, 1 otherwise, 77 (skipped, with the reason)
without torch or a GPU.

Usage: CFUSER_LIBRARY=build/libcfuser.so python3 tests/conformance/torch_matrix.py
(from the repository root; PYTHONPATH needs tests/conformance, which the script adds)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device for torch")
    sys.exit(77)

import numpy as np  # noqa: E402

import capi  # noqa: E402
import refs  # noqa: E402
import test_conformance as T  # noqa: E402
import values as V  # noqa: E402

if not capi.cuda_available():
    print("skipped: cfuser sees no CUDA device")
    sys.exit(77)

TORCH_DTYPE = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
               "bfloat16": torch.bfloat16, "int8": torch.int8, "int32": torch.int32, "int64": torch.int64,
               "uint32": getattr(torch, "uint32", None), "bool": torch.bool,
               "float8_e4m3fn": getattr(torch, "float8_e4m3fn", None), "float8_e5m2": getattr(torch, "float8_e5m2", None)}
# torch has casts but no arithmetic on its 8-bit floats: only their casts are compared.
CASTS_ONLY = ("float8_e4m3fn", "float8_e5m2")


def _trunc_div(a, b):
    return torch.div(a, b, rounding_mode="trunc") if not a.dtype.is_floating_point else torch.div(a, b)


# torch's function of each op (by cfuser's Python name) where it is not torch.<name>.
TORCH_OP = {
    "div": _trunc_div, "truediv": torch.true_divide, "mod": torch.fmod, "gelu": F.gelu, "silu": F.silu,
    "relu": torch.relu, "erfcinv": lambda x: torch.erfinv(1 - (x if x.is_floating_point() else x.float())),
}


def to_torch(arr, dtype):
    if dtype in CASTS_ONLY:  # arrays of raw bits (values.py)
        return torch.from_numpy(arr).view(TORCH_DTYPE[dtype]).cuda()
    if dtype == "bfloat16":
        return torch.from_numpy(arr.astype(np.int16)).view(torch.bfloat16).cuda()
    if dtype == "uint32":
        return torch.from_numpy(arr.astype(np.int64)).cuda().to(TORCH_DTYPE[dtype])
    return torch.from_numpy(arr).cuda()


def to_wide(t, dtype):
    t = t.cpu()
    if dtype in CASTS_ONLY:
        return V.widen(t.view(torch.uint8).numpy(), dtype)
    if dtype == "bfloat16":
        return [V.bf16_value(b) for b in t.view(torch.int16).numpy().astype(np.uint16).reshape(-1)]
    if dtype == "uint32":
        return [int(x) for x in t.to(torch.int64).numpy().reshape(-1)]
    return V.widen(t.numpy(), dtype)


# The dtype's machine epsilon: torch's erfcinv(x) is erfinv(1 - x) in the dtype, so below it
# 1 - x rounds to 1 (inf; for x < 0 too, where the true value is NaN).
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def undefined_in_torch(name, dtype, args):
    """Cells where torch's GPU value is the hardware's (or its formula's overflow) and cfuser
    defines one."""
    if name == "erfcinv" and V.is_float(dtype) and args[0] != 0 and abs(args[0]) <= EPS[dtype]:
        return True
    if V.is_float(dtype) or len(args) != 2:
        return False
    a, b = args
    if name in ("div", "mod", "fmod", "remainder", "floor_divide") and b == 0:
        return True
    return name in ("div", "floor_divide") and b == -1 and a == -(1 << (refs.INT_BITS[dtype] - 1))


def compare_elementwise(dt, report, notes):
    rows = [r for r in T.ELEMENTWISE if r["dtypes"] >> capi.DTYPES[dt] & 1]
    cols = T._operands({"kind": "binary"}, dt)
    fus = capi.Fusion()
    a, b = fus.input(dt, 1), fus.input(dt, 1)
    outs = [fus.op(r["name"], a) if r["kind"] == "unary" else fus.op(r["name"], a, b) for r in rows]
    for t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for t in outs]
    arrays = [V.array(c, dt) for c in cols]
    s, got = capi.execute(fus, arrays, out_dts, capi.BACKEND_CUDA)
    if s:
        report.append(f"{dt}: cfuser failed: {got}")
        return
    ta, tb = to_torch(arrays[0], dt), to_torch(arrays[1], dt)
    for row, out_dt, g in zip(rows, out_dts, got):
        name = row["py_name"]
        fn = TORCH_OP.get(name) or getattr(torch, name, None)
        try:
            want_t = fn(ta) if row["kind"] == "unary" else fn(ta, tb)
        except (RuntimeError, TypeError) as e:
            notes.append(f"{name} {dt}: torch refuses ({str(e).splitlines()[0]}); cfuser takes it")
            continue
        want = to_wide(want_t.to(TORCH_DTYPE[out_dt]) if TORCH_DTYPE[out_dt] else want_t, out_dt)
        have = V.widen(g, out_dt)
        args = cols[:1] if row["kind"] == "unary" else cols
        exact = refs.UNARY.get(name, refs.BINARY.get(name, (None, None, True)))[2]
        bad = [i for i in range(len(want)) if not undefined_in_torch(name, dt, [c[i] for c in args])
               and not T._close(have[i], want[i], out_dt, exact, name in refs.ZERO_SIGN_FREE)]
        if bad:
            ex = "; ".join(f"{name}({', '.join(repr(c[i]) for c in args)}) = {have[i]!r}, torch {want[i]!r}"
                           for i in bad[:5])
            report.append(f"{name} {dt}: {len(bad)} of {len(want)} differ: {ex}")


def representable(v, to):
    """Whether the floating value v converts to integer dtype `to` without NaN or overflow."""
    if math.isnan(v) or math.isinf(v):
        return False
    bits = refs.INT_BITS[to]
    lo, hi = (0, 2 ** bits - 1) if to in ("uint32", "bool") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return lo <= math.trunc(v) <= hi


def compare_casts(report, notes):
    for src in T.DTYPES:
        if src in CASTS_ONLY and TORCH_DTYPE[src] is None:  # a torch before its float8 types
            continue
        vals = [V.store(v, src) for v in V.SPECIALS[src]]
        fus = capi.Fusion()
        a = fus.input(src, 1)
        tos = [to for to in T.DTYPES if TORCH_DTYPE[to] is not None]
        outs = [T._call(fus, "cast", capi.P, capi.P(a), T.ctypes.c_int(capi.DTYPES[to])) for to in tos]
        for t in outs:
            fus.output(t)
        arr = V.array(vals, src)
        s, got = capi.execute(fus, [arr], tos, capi.BACKEND_CUDA)
        if s:
            report.append(f"cast from {src}: cfuser failed: {got}")
            continue
        for to, g in zip(tos, got):
            want = to_wide(to_torch(arr, src).to(TORCH_DTYPE[to]), to)
            bad = [(v, x, w) for v, x, w in zip(vals, V.widen(g, to), want) if not T._close(x, w, to, True, False)]
            hw = [b for b in bad if V.is_float(src) and not V.is_float(to) and to != "bool" and not representable(b[0], to)]
            if hw:  # torch's float -> int of NaN or out of range is the hardware's (C++ leaves it undefined)
                notes.append(f"cast {src} -> {to}: {len(hw)} NaN or out-of-range values, cfuser saturates (NaN -> 0), "
                             f"torch gives the hardware's (value, cfuser, torch): {hw[:5]}")
            bad = [b for b in bad if b not in hw]
            if bad:
                report.append(f"cast {src} -> {to}: {len(bad)} differ (value, cfuser, torch): {bad[:5]}")


def main():
    report, notes = [], []
    for dt in T.DTYPES:
        if TORCH_DTYPE[dt] is not None and dt not in CASTS_ONLY:
            compare_elementwise(dt, report, notes)
    compare_casts(report, notes)
    print("not compared (torch's GPU value is the hardware's): integer division and remainders by zero, "
          "INT_MIN / -1; erfcinv within the dtype's epsilon of 0 (torch's 1 - x rounds to 1); NaN or out-of-range "
          "float -> int casts")
    for line in notes:
        print("note:", line)
    for line in report:
        print(line)
    print(f"{len(report)} differences" if report else "every compared cell agrees with torch")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
