"""tests/conformance/torch_matrix.py: the conformance matrix against torch itself, on the GPU.

The columns are the NumPy side's: every dtype of the library's table (capi.DTYPES), each
named in torch by TORCH_NAME. A dtype missing there fails with a message naming it before
anything needs torch (and test_conformance.py's test_torch_matrix_maps_every_dtype fails
on machines without torch), so a new column can no longer crash this script halfway.

For every dtype torch has arithmetic on, one fusion of every elementwise op of cfuser's op
table that takes it (unary ops on a, binary ones on (a, b), a and b every pair of the
dtype's special values, complex ones included) runs on CUDA through define and run, and
each output is compared with torch's op on CUDA tensors of the same values, its result
dtype included; every op cfuser refuses for the dtype is asserted refused (the exact
message for complex operands), and ops torch takes there are listed as notes; then the
sum/prod/max/min reductions (complex: sum and mean; prod, max and min asserted refused)
and casts between every pair of dtypes. The indexed ops (gather, take_along_axis,
index_select, select, scatter, embedding_fwd) and the scans (cumsum, cumprod, cummax,
cummin) are torch_indexed.py's families: its docstring lists what they compare and their
pins (negative indices given to torch as index + extent; cumsum and cumprod cells that
depend on the accumulation dtype). Differences are listed per (op, dtype) with
examples. Exit status: 0 when every compared cell agrees, 1 otherwise (or a dtype without
a torch name), 77 (skipped, with the reason) without numpy and pytest, torch or a GPU.

Cells where torch's value is undefined and cfuser defines one are not compared, and are
said: integer division and remainders by zero (cfuser: -1 and the dividend; torch's GPU:
what the hardware gives), INT_MIN / -1 (cfuser wraps), erfcinv of x within the dtype's
epsilon of 0 (torch computes erfinv(1 - x), and 1 - x rounds to 1: inf, where cfuser keeps
the value, e.g. erfcinv(1e-40) = 9.45), and casts of NaN or out-of-range floats (or complex
real parts) to integers (C++ leaves them undefined: torch gives the hardware's value,
cfuser saturates), and gcd with the dtype's INT_MIN as an operand (torch's |INT_MIN|
overflows: gcd(40, INT32_MIN) is -8 in torch, 8 in NumPy and cfuser). Ops torch refuses for
a real dtype that cfuser takes (gelu of integers:
cfuser computes it in float, as exp of integers) are notes; for a complex dtype they are
differences (cfuser takes complex only where torch does).

Pinned (PIN_KINDS), where cfuser's evaluator follows C99 Annex G (or plain C) and torch
does not: complex products and quotients (and means, a quotient by n) whose torch value is
not finite, as the NumPy side pins them (test_complex_annex_g, refs.ANNEX_G_OPS): torch's
CUDA arithmetic is the textbook formulas with its own special cases (x / (0+0j) is re/0 +
(im/0)j; the reciprocal of an infinity is 0; a mean multiplies the sum by the real 1/n, so
inf+1j over 4 is inf+0.25j, where a quotient by 4+0j is inf+nanj); complex sums and
differences where torch's a + alpha * b with alpha = 1+0j (sub: -1+0j) is not C's sum of
the parts (0 + (inf+0j) is inf+nanj there, as (1+0j) * (inf+0j) is inf+nanj; (-0-0j) +
(-0-0j) is 0-0j); exp, sqrt and rsqrt of a non-finite operand (Annex G's special values);
log, rsqrt, sqrt and |z| of an operand with a subnormal part (glibc's values; torch's |z|
underflows: log(5e-324-5e-324j) is -744.0935-0.7854j in cfuser, as ln|z| with |z| =
7e-324 is, -744.4401-0.7854j in torch). Those cells are listed where torch differs (cfuser, the evaluator's value, torch), not
compared with torch; there cfuser must equal its evaluator (the CUDA run found rsqrt(0j) =
nan+nanj where the evaluator gives inf+nanj); a dtype none of whose pinned products or sums
differs any more is a difference (drop the pin).

Usage: CFUSER_LIBRARY=build/libcfuser.so python3 tests/conformance/torch_matrix.py [--cpu]
[--only=FAMILY,...] (from the repository root; PYTHONPATH needs tests/conformance, which
the script adds). --cpu compares torch's CPU kernels with cfuser's host backend: a check of
the script on a machine without a GPU, not of the CUDA kernels. --only runs some of the
families (FAMILIES: elementwise, with the refusals, reductions, casts, scans, indexed).
The counts of cells compared per op of the scans and indexed families are printed first."""
import ctypes
import math
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and "CFUSER_LIBRARY" not in os.environ:
    sys.exit(__doc__[__doc__.index("Usage:"):])

# Why the NumPy side's modules did not load (the run is skipped): capi (numpy) is enough to
# check the dtype names; test_conformance (ops, operands, comparisons) also needs pytest.
MISSING = MISSING_T = None
try:
    import numpy as np

    import capi
    import refs
    import values as V
except ImportError as e:
    MISSING = f"{e.name} is not installed"
try:
    import test_conformance as T
    import torch_indexed  # the indexed ops' and scans' families (needs test_conformance)
except ImportError as e:
    MISSING_T = f"{e.name} is not installed"

# cfuser's dtype names (the keys of capi.DTYPES, the NumPy side's columns) -> torch's.
TORCH_NAME = {"float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16",
              "int8": "int8", "int32": "int32", "int64": "int64", "uint32": "uint32", "bool": "bool",
              "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
              "complex64": "complex64", "complex128": "complex128"}
# The dtypes torch gained late (the version that added each): an older torch skips the column, saying so.
LATE_IN_TORCH = {"uint32": "2.3", "float8_e4m3fn": "2.1", "float8_e5m2": "2.1"}
# torch has casts but no arithmetic on its 8-bit floats: only their casts are compared.
CASTS_ONLY = ("float8_e4m3fn", "float8_e5m2")
# Columns torch has neither casts nor arithmetic for (its float4_e2m1fn_x2 is bytes of two
# elements, with no conversions): checked against the evaluator and NumPy only
# (test_conformance.py), and torch's bytes through DLPack by python/tests/test_fp4.py.
NOT_COMPARED = {"float4_e2m1fn": "torch's float4_e2m1fn_x2 has no conversions or arithmetic: the float4_e2m1fn "
                                 "column is checked against the evaluator and NumPy only"}

torch = F = None  # imported by main: this module loads without torch (test_conformance calls torch_dtypes)
TORCH_DTYPE = {}  # cfuser's dtype -> torch's (None: this torch lacks a late one), filled by main
DEVICE, BACKEND = "cuda", None


def torch_dtypes(dtypes, lookup):
    """(torch's dtype of each of `dtypes`, errors, notes), `lookup` giving torch's dtype of
    a torch name or None: a dtype without a name, or whose name this torch lacks (unless
    it came late), is an error naming it."""
    found, errors, notes = {}, [], []
    for dt in dtypes:
        if dt in NOT_COMPARED:
            found[dt] = None
            notes.append(NOT_COMPARED[dt])
            continue
        name = TORCH_NAME.get(dt)
        found[dt] = lookup(name) if name else None
        if found[dt] is not None:
            continue
        if not name:
            errors.append(f"cfuser's dtype {dt} (a column of the conformance matrix) has no torch name: "
                          "add it to TORCH_NAME in tests/conformance/torch_matrix.py")
        elif dt in LATE_IN_TORCH:
            notes.append(f"this torch has no torch.{name} (added in torch {LATE_IN_TORCH[dt]}): "
                         f"the {dt} column is not compared")
        else:
            errors.append(f"cfuser's dtype {dt} is torch.{name}, which this torch lacks")
    return found, errors, notes


def _div(a, b):
    if a.is_floating_point() or a.is_complex():
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


# torch's function of each op (by cfuser's Python name) where it is not torch.<name>.
TORCH_OP = {
    "div": _div, "truediv": lambda a, b: torch.true_divide(a, b), "mod": lambda a, b: torch.fmod(a, b),
    "gelu": lambda x: F.gelu(x), "silu": lambda x: F.silu(x), "relu": lambda x: torch.relu(x),
    "erfcinv": lambda x: torch.erfinv(1 - (x if x.is_floating_point() else x.float())),
}
TORCH_REDUCE = {"sum": lambda t: torch.sum(t, 1), "prod": lambda t: torch.prod(t, 1),
                "max": lambda t: torch.amax(t, 1), "min": lambda t: torch.amin(t, 1),
                "mean": lambda t: torch.mean(t, 1)}
TORCH_REFUSES = (RuntimeError, TypeError, NotImplementedError, AttributeError)  # AttributeError: an older torch


def call_torch(fn, *args):
    """(torch's result, None), or (None, why torch refused)."""
    if fn is None:
        return None, "torch has no such function"
    try:
        return fn(*args), None
    except TORCH_REFUSES as e:
        return None, str(e).splitlines()[0] if str(e) else type(e).__name__


def _torch_fn(row):
    return TORCH_OP.get(row["py_name"]) or getattr(torch, row["py_name"], None)


def to_torch(arr, dtype):
    if dtype in CASTS_ONLY:  # arrays of raw bits (values.py)
        return torch.from_numpy(arr).view(TORCH_DTYPE[dtype]).to(DEVICE)
    if dtype == "bfloat16":
        return torch.from_numpy(arr.astype(np.int16)).view(torch.bfloat16).to(DEVICE)
    if dtype == "uint32":
        return torch.from_numpy(arr.astype(np.int64)).to(DEVICE).to(TORCH_DTYPE[dtype])
    return torch.from_numpy(arr).to(DEVICE)


def to_wide(t, dtype):
    t = t.resolve_conj().resolve_neg().cpu()  # torch.conj is a view with the conjugate bit set
    if dtype in CASTS_ONLY:
        return V.widen(t.view(torch.uint8).numpy(), dtype)
    if dtype == "bfloat16":
        return [V.bf16_value(b) for b in t.view(torch.int16).numpy().astype(np.uint16).reshape(-1)]
    if dtype == "uint32":
        return [int(x) for x in t.to(torch.int64).numpy().reshape(-1)]
    return V.widen(t.numpy(), dtype)


def torch_wide(t, dtype, what, report):
    """torch's result t as wide values of cfuser's result dtype; a different dtype is reported."""
    if t.dtype != TORCH_DTYPE[dtype]:
        report.append(f"{what}: cfuser's result is {dtype}, torch's {t.dtype}")
    return to_wide(t.to(TORCH_DTYPE[dtype]), dtype)


# The dtype's machine epsilon: torch's erfcinv(x) is erfinv(1 - x) in the dtype, so below it
# 1 - x rounds to 1 (inf; for x < 0 too, where the true value is NaN).
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def undefined_in_torch(name, dtype, args):
    """Cells where torch's GPU value is the hardware's (or its formula's overflow: gcd with
    INT_MIN) and cfuser defines one."""
    if name == "erfcinv" and V.is_float(dtype) and args[0] != 0 and abs(args[0]) <= EPS[dtype]:
        return True
    if V.is_float(dtype) or V.is_complex(dtype) or len(args) != 2:
        return False
    a, b = args
    int_min = -(1 << (refs.INT_BITS[dtype] - 1))
    if name in ("div", "mod", "fmod", "remainder", "floor_divide") and b == 0:
        return True
    if name == "gcd" and int_min in (a, b):  # torch's |INT_MIN| overflows: a negative gcd
        return True
    return name in ("div", "floor_divide") and b == -1 and a == int_min


def _takes(row, dt):
    return row["dtypes"] >> capi.DTYPES[dt] & 1


# The kinds of pinned complex cells: what the notes call them, and whether a dtype where no
# such cell differs from torch any more is a difference (drop the pin): exp, sqrt and rsqrt
# of non-finite operands are pinned only where torch differs from Annex G, log, rsqrt, sqrt
# and |z| of subnormal parts only where torch's |z| underflows.
PIN_KINDS = {
    "quotient": ("products, quotients and means whose torch value is not finite (C99 Annex G in cfuser's "
                 "evaluator, textbook formulas in torch)", True),
    "sum": ("sums and differences where torch's a + alpha * b (alpha = 1+0j, sub: -1+0j) is not C's (a "
            "non-finite or zero part in b)", True),
    "function": ("exp, sqrt and rsqrt of a non-finite operand (C99 Annex G in cfuser's evaluator)", False),
    "subnormal": ("log, rsqrt, sqrt and |z| of an operand with a subnormal part (glibc's, exact there, in "
                  "cfuser's evaluator; torch's |z| underflows: log(5e-324-5e-324j) is -744.0935-0.7854j, torch "
                  "-744.4401-0.7854j)", False),
}
SUBNORMAL_PINNED = ("log", "rsqrt", "sqrt", "abs")


def subnormal_part(z, dt):
    """Whether a part of the complex value z is subnormal in dt's part type."""
    tiny = np.finfo(refs.COMPLEX_PART[dt]).tiny
    return any(0 < abs(p) < tiny for p in (complex(z).real, complex(z).imag))


def torch_alpha_sum(name, a, b, dt):
    """torch's complex add and sub as dt stores them: a + alpha * b with alpha = 1+0j (sub:
    -1+0j), the product by the textbook formula (0 * inf is NaN: (1+0j) * (1+infj) is
    nan+infj; (1+0j) * (-0-0j) is 0-0j)."""
    a, b, al = complex(a), complex(b), 1.0 if name == "add" else -1.0
    return V.store(complex(a.real + (al * b.real - 0.0 * b.imag), a.imag + (al * b.imag + 0.0 * b.real)), dt)


def c_sum(name, a, b, dt):
    """C's (and NumPy's) complex a + b or a - b, part by part, as dt stores it."""
    a, b = complex(a), complex(b)
    r = complex(a.real + b.real, a.imag + b.imag) if name == "add" else complex(a.real - b.real, a.imag - b.imag)
    return V.store(r, dt)


def pin_kind(name, dt, cell, want):
    """The PIN_KINDS kind of a complex cell (name's operands `cell`, torch's value `want`),
    or None: compared with torch."""
    if not V.is_complex(dt):
        return None
    if refs.annex_g_cell(name, want):
        return "quotient"
    if name in ("add", "sub"):
        alpha, c = torch_alpha_sum(name, *cell, dt), c_sum(name, *cell, dt)
        return "sum" if not T._close(alpha, c, dt, True, False) else None
    special = not all(math.isfinite(complex(x).real) and math.isfinite(complex(x).imag) for x in cell)
    if special and name in ("exp", "sqrt", "rsqrt"):
        return "function"
    return "subnormal" if name in SUBNORMAL_PINNED and any(subnormal_part(x, dt) for x in cell) else None


class Pins:
    """The pinned cells of each complex dtype and kind that differ from torch: {(dt, kind):
    {what: (cfuser, evaluator, torch)}} (a unary op sees each operand 25 times); and the
    pinned cells where cfuser differs from its evaluator (differences)."""

    def __init__(self):
        self.cells, self.wrong = {}, []

    def add(self, dt, kind, what, have, ev, want, exact):
        """exact: whether cfuser must equal the evaluator exactly (complex64 kernels compute
        in float, the evaluator's quotients, exp and sqrt in double)."""
        cells = self.cells.setdefault((dt, kind), {})
        if not T._close(complex(have), complex(ev), dt, exact, False):
            self.wrong.append(f"{what} {dt}: cfuser {have!r}, its evaluator {ev!r} (a pinned cell)")
        if not T._close(complex(have), complex(want), dt, True, False):
            cells[what] = (have, ev, want)

    def close(self, report, notes):
        report += list(dict.fromkeys(self.wrong))
        for (dt, kind), cells in self.cells.items():
            what, must_differ = PIN_KINDS[kind]
            if not cells:
                if must_differ:
                    report.append(f"{dt}: no {what.split(' (')[0]} differs from torch now: drop the pin "
                                  f"(PIN_KINDS['{kind}'] in torch_matrix)")
                continue
            ex = "; ".join(f"{w} = {h!r} (evaluator {e!r}), torch {t!r}" for w, (h, e, t) in list(cells.items())[:8])
            notes.append(f"pinned: {dt}: {len(cells)} {what} differ from torch: {ex}")


def run_built(fus, outs, arrays, what, report, evaluate):
    """The tensors `outs` of fus made its outputs and run on `arrays` by define and run on
    BACKEND (and the evaluator when `evaluate`): (their dtypes, cfuser's arrays, the
    evaluator's or None), or None after reporting a refused op (a None in outs) or a failure."""
    if not all(outs):
        report.append(f"{what}: cfuser refused: {fus.error()}")
        return None
    for t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for t in outs]
    s, got = capi.execute(fus, arrays, out_dts, BACKEND)
    s_ev, ev = capi.evaluate(fus, arrays, out_dts) if evaluate else (0, None)
    if s or s_ev:
        report.append(f"{what}: cfuser failed: {got if s else ev}")
        return None
    return out_dts, got, ev


def compare_elementwise(dt, arrays, pins, report, notes):
    """Every op that takes dt against torch's, on every pair of dt's specials."""
    rows = [r for r in T.ELEMENTWISE if _takes(r, dt)]
    cols = [V.widen(a, dt) for a in arrays]
    fus = capi.Fusion()
    a, b = fus.input(dt, 1), fus.input(dt, 1)
    outs = [fus.op(r["name"], a) if r["kind"] == "unary" else fus.op(r["name"], a, b) for r in rows]
    ran = run_built(fus, outs, arrays, f"{dt} (ops its table says it takes)", report, V.is_complex(dt))
    if not ran:
        return
    out_dts, got, ev = ran
    ta, tb = to_torch(arrays[0], dt), to_torch(arrays[1], dt)
    for row, out_dt, g, e in zip(rows, out_dts, got, ev or got):
        name, unary = row["py_name"], row["kind"] == "unary"
        want_t, why = call_torch(_torch_fn(row), *([ta] if unary else [ta, tb]))
        if want_t is None:
            (report if V.is_complex(dt) else notes).append(f"{name} {dt}: torch refuses ({why}); cfuser takes it")
            continue
        want = torch_wide(want_t, out_dt, f"{name} {dt}", report)
        have, args = V.widen(g, out_dt), cols[:1] if unary else cols
        exact = (refs.COMPLEX[name][1] if V.is_complex(dt)
                 else refs.UNARY.get(name, refs.BINARY.get(name, (None, None, True)))[2])
        bad, ev_w = [], V.widen(e, out_dt) if V.is_complex(dt) else None
        for i in range(len(want)):
            cell = [c[i] for c in args]
            if undefined_in_torch(name, dt, cell):
                continue
            kind = pin_kind(name, dt, cell, want[i])
            if kind:
                pins.add(dt, kind, f"{name}({', '.join(map(repr, cell))})", have[i], ev_w[i], want[i], exact)
            elif not T._close(have[i], want[i], out_dt, exact, name in refs.ZERO_SIGN_FREE):
                bad.append(i)
        if bad:
            ex = "; ".join(f"{name}({', '.join(repr(c[i]) for c in args)}) = {have[i]!r}, torch {want[i]!r}"
                           for i in bad[:5])
            report.append(f"{name} {dt}: {len(bad)} of {len(want)} differ: {ex}")


def compare_refusals(dt, arrays, report, notes):
    """Every elementwise op cfuser's table refuses for dt is refused when built (complex:
    the exact message); those torch takes are one note."""
    ta, tb = to_torch(arrays[0], dt), to_torch(arrays[1], dt)
    torch_takes = []
    for row in (r for r in T.ELEMENTWISE if not _takes(r, dt)):
        fus = capi.Fusion()
        ins = [fus.input(dt, 1) for _ in range(1 if row["kind"] == "unary" else 2)]
        if fus.op(row["name"], *ins):
            report.append(f"{row['py_name']} {dt}: the op table refuses it, but cfuser built it")
            continue
        msg = fus.error()
        ok = (msg == T._complex_refusal(row["name"], dt) if V.is_complex(dt)
              else f"{row['name']}: T0 has dtype" in msg and "cast it first" in msg)
        if not ok:
            report.append(f"{row['py_name']} {dt}: refused with an unexpected message: {msg}")
        if call_torch(_torch_fn(row), *([ta] if row["kind"] == "unary" else [ta, tb]))[0] is not None:
            torch_takes.append(row["py_name"])
    if torch_takes:
        notes.append(f"{dt}: torch takes {', '.join(torch_takes)}; cfuser refuses them")


def _build_reductions(fus, dt, report, refused):
    """The reductions of one [n, 4] input of dt over axis 1: [(op, tensor)]; complex prod,
    max and min must be refused (added to `refused`)."""
    a = fus.input(dt, 2)
    built = []
    for op in list(T.REDUCE_OPS) + (["mean"] if V.is_complex(dt) else []):
        axes = (ctypes.c_int * 1)(1)
        if op == "mean":
            t = T._call(fus, "mean", capi.P, capi.P(a), 1, axes)
        else:
            t = T._call(fus, "reduce", capi.P, ctypes.c_int(T.REDUCE_OPS[op]), capi.P(a), 1, axes, False)
        if V.is_complex(dt) and op in ("prod", "max", "min"):
            if t or "does not take complex tensors" not in fus.error():
                report.append(f"{op} {dt}: expected cfuser's refusal, got {fus.error() if not t else 'a tensor'}")
            refused.append((op, dt))
            capi.LIB.cf_fusion_clear_error(fus.f)
        elif not t:
            report.append(f"{op} {dt}: cfuser refused it: {fus.error()}")
            capi.LIB.cf_fusion_clear_error(fus.f)
        else:
            built.append((op, t))
    return built


def _reduction_cells(op, dt, rows, values, out_dt, pins):
    """The rows whose reduction differs from torch's, of values = (cfuser's, the evaluator's,
    torch's): order-sensitive rows skipped, the complex means torch makes non-finite pinned."""
    bad = []
    exact = op in ("max", "min") or not (V.is_float(dt) or V.is_complex(dt))
    for r, h, e, w in zip(rows, *values):
        if (V.is_float(dt) or V.is_complex(dt)) and T._order_sensitive(op, r, dt):
            continue
        if op == "mean" and refs.annex_g_cell("div", complex(w)):
            pins.add(dt, "quotient", f"mean{tuple(r)}", h, e, w, False)
        elif not T._close(h, w, out_dt, exact, op in ("max", "min")):
            bad.append((r, h, w))
    return bad


def compare_reductions(dtypes, pins, report, notes):
    """sum, prod, max and min (complex: sum and mean) over the last axis of rows of each
    dtype's specials, as the NumPy side's test_reductions builds them."""
    fus = capi.Fusion()
    arrays, outs, refused = [], [], []
    for dt in dtypes:
        s = [V.store(v, dt) for v in V.SPECIALS[dt]]
        rows = [[s[(3 * i + j) % len(s)] for j in range(4)] for i in range(len(s))]
        arrays.append(V.array([x for r in rows for x in r], dt).reshape(len(rows), 4))
        outs += [(dt, op, rows, len(arrays) - 1, t) for op, t in _build_reductions(fus, dt, report, refused)]
    for *_, t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for *_, t in outs]
    s, got = capi.execute(fus, arrays, out_dts, BACKEND)
    s_ev, ev = capi.evaluate(fus, arrays, out_dts)
    if s or s_ev:
        report.append(f"reductions: cfuser failed: {got if s else ev}")
        return
    for (dt, op, rows, k, _), out_dt, g, e in zip(outs, out_dts, got, ev):
        want_t, why = call_torch(TORCH_REDUCE[op], to_torch(arrays[k], dt))
        if want_t is None:
            notes.append(f"{op} {dt}: torch refuses ({why}); cfuser takes it")
            continue
        want = torch_wide(want_t, out_dt, f"{op} {dt}", report)
        bad = _reduction_cells(op, dt, rows, (V.widen(g, out_dt), V.widen(e, out_dt), want), out_dt, pins)
        if bad:
            report.append(f"{op} {dt}: {len(bad)} of {len(rows)} rows differ (row, cfuser, torch): {bad[:4]}")
    takes = [f"{op} {dt}" for op, dt in refused
             if call_torch(TORCH_REDUCE[op], to_torch(arrays[dtypes.index(dt)], dt))[0] is not None]
    if takes:
        notes.append(f"torch takes {', '.join(takes)}; cfuser refuses them")


def representable(v, to):
    """Whether the floating value v (a complex one: its real part) converts to integer
    dtype `to` without NaN or overflow."""
    v = v.real if isinstance(v, complex) else v
    if math.isnan(v) or math.isinf(v):
        return False
    bits = refs.INT_BITS[to]
    lo, hi = (0, 2 ** bits - 1) if to in ("uint32", "bool") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return lo <= math.trunc(v) <= hi


def _hardware_cast(src, to, v):
    """A cast torch leaves to the hardware: NaN or out of range, floating or complex to integer."""
    inexact = V.is_float(src) or V.is_complex(src)
    return inexact and to in refs.INT_BITS and to != "bool" and not representable(v, to)


def compare_casts(dtypes, report, notes):
    for src in dtypes:
        vals = [V.store(v, src) for v in V.SPECIALS[src]]
        fus = capi.Fusion()
        a = fus.input(src, 1)
        outs = [T._call(fus, "cast", capi.P, capi.P(a), ctypes.c_int(capi.DTYPES[to])) for to in dtypes]
        for t in outs:
            fus.output(t)
        arr = V.array(vals, src)
        s, got = capi.execute(fus, [arr], dtypes, BACKEND)
        if s:
            report.append(f"cast from {src}: cfuser failed: {got}")
            continue
        t_src = to_torch(arr, src)
        for to, g in zip(dtypes, got):
            cast, why = call_torch(lambda x: x.to(TORCH_DTYPE[to]), t_src)
            if cast is None:
                notes.append(f"cast {src} -> {to}: torch refuses ({why}); cfuser takes it")
                continue
            want = to_wide(cast, to)
            bad = [(v, x, w) for v, x, w in zip(vals, V.widen(g, to), want) if not T._close(x, w, to, True, False)]
            hw = [b for b in bad if _hardware_cast(src, to, b[0])]
            if hw:  # torch's float -> int of NaN or out of range is the hardware's (C++ leaves it undefined)
                notes.append(f"cast {src} -> {to}: {len(hw)} NaN or out-of-range values, cfuser saturates (NaN -> 0), "
                             f"torch gives the hardware's (value, cfuser, torch): {hw[:5]}")
            bad = [b for b in bad if b not in hw]
            if bad:
                report.append(f"cast {src} -> {to}: {len(bad)} differ (value, cfuser, torch): {bad[:5]}")


def _load_torch(cpu):
    """torch and its dtypes, or why the run is skipped (77) or fails (1): (status, lines)."""
    global torch, F, DEVICE, BACKEND
    try:
        import torch as torch_module
        import torch.nn.functional as functional
    except ImportError:
        return 77, ["skipped: torch is not installed (every dtype of the matrix has a torch name)"]
    torch, F = torch_module, functional
    DEVICE, BACKEND = ("cpu", capi.BACKEND_HOST) if cpu else ("cuda", capi.BACKEND_CUDA)
    if not cpu and not torch.cuda.is_available():
        return 77, ["skipped: no CUDA device for torch"]
    if not cpu and not capi.cuda_available():
        return 77, ["skipped: cfuser sees no CUDA device"]
    found, errors, notes = torch_dtypes(list(capi.DTYPES), lambda name: getattr(torch, name, None))
    TORCH_DTYPE.update(found)
    return (1, errors) if errors else (0, notes)


FAMILIES = ("elementwise", "reductions", "casts", "scans", "indexed")


def _families(argv):
    """The families to run: all, or those of --only=a,b (an unknown one: the message)."""
    only = [a.split("=", 1)[1] for a in argv if a.startswith("--only=")]
    if not only:
        return FAMILIES
    asked = [f for a in only for f in a.split(",")]
    unknown = [f for f in asked if f not in FAMILIES]
    return f"unknown families {unknown}: --only takes {', '.join(FAMILIES)}" if unknown else tuple(asked)


def main(argv):
    if MISSING:
        print(f"skipped: {MISSING} (the NumPy side's modules need numpy)")
        return 77
    errors = torch_dtypes(list(capi.DTYPES), lambda name: name)[1]  # before torch: a missing name fails anywhere
    if errors:
        print("\n".join(errors))
        return 1
    if MISSING_T:
        print(f"skipped: {MISSING_T} (test_conformance, whose ops and comparisons this runs, needs pytest; "
              "every dtype of the matrix has a torch name)")
        return 77
    status, notes = _load_torch("--cpu" in argv)
    if status:
        print("\n".join(notes))
        return status
    families = _families(argv)
    if isinstance(families, str):
        print(families)
        return 1
    warnings.filterwarnings("ignore", message="Casting complex values to real discards the imaginary part")
    report, pins = [], Pins()
    named = [dt for dt in T.DTYPES if TORCH_DTYPE[dt] is not None]
    arith = [dt for dt in named if dt not in CASTS_ONLY]
    for dt in arith if "elementwise" in families else []:
        arrays = [V.array(c, dt) for c in T._operands({"kind": "binary"}, dt)]
        compare_elementwise(dt, arrays, pins, report, notes)
        compare_refusals(dt, arrays, report, notes)
    if "reductions" in families:
        compare_reductions(arith, pins, report, notes)
    if "casts" in families:
        compare_casts(named, report, notes)
    pins.close(report, notes)
    counts = {}
    for fam in ("scans", "indexed"):  # every named dtype: torch's refusals (the 8-bit floats' scans) are notes
        if fam in families:
            counts.update(getattr(torch_indexed, "compare_" + fam)(sys.modules[__name__], named, report, notes))
    if counts:
        print("cells compared with torch: " + ", ".join(f"{op} {n}" for op, n in counts.items()))
    print("not compared (torch's GPU value is the hardware's, or its formula's overflow): integer division and "
          "remainders by zero, INT_MIN / -1; gcd with the dtype's INT_MIN as an operand (torch's |INT_MIN| "
          "overflows: a negative gcd); erfcinv within the dtype's epsilon of 0 (torch's 1 - x rounds to 1); NaN or "
          "out-of-range float -> int casts; complex products, quotients and means whose torch value is not finite, "
          "complex sums and differences where torch's a + alpha * b is not a + b (a non-finite or zero part in "
          "b), exp, sqrt and rsqrt of non-finite complex operands, log, rsqrt, sqrt and |z| of complex operands "
          "with a subnormal part (pinned: cfuser must equal its evaluator "
          "there; the notes list the cells where torch differs); the indexed ops' and scans' cells apart: "
          "torch_indexed's docstring")
    for line in notes:
        print("note:", line)
    for line in report:
        print(line)
    print(f"{len(report)} differences" if report else "every compared cell agrees with torch")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
