"""tests/conformance/test_conformance.py: the conformance matrix of cfuser's ops.

Generated from the library's op table (cf_op_count, cf_op_get): every elementwise op x
every dtype it takes x every backend here (the reference evaluator, define and run on the
host backend, and CUDA when a device is present) on each dtype's special values (NaN,
+-inf, -0.0, subnormals, integer extremes; binary ops on every pair), on 0-d and empty
tensors, against torch's semantics written down in refs.py with NumPy and Python's math
as the arithmetic. A row of the table without a reference, or whose accepted dtypes differ
from the reference's, fails: an op added to the table is in the matrix by construction.
The rows that are not elementwise (moves, casts, reductions, transforms) are each covered
by a named test below or in the C suites; the list STRUCTURAL says which. A storage type
(float4_e2m1fn, refs.STORAGE_ONLY) is a column too: every op's refusal of it is asserted
with its message, its moves and casts run."""
import itertools
import math
import re

import numpy as np
import pytest

import capi
import refs
import values as V

ROWS = capi.op_table()
DTYPES = list(capi.DTYPES)
ELEMENTWISE = [r for r in ROWS if r["kind"] in ("unary", "binary") and r["api"]]
BACKENDS = ["host"] + (["cuda"] if capi.cuda_available() else [])

# Rows that are not public elementwise ops, and the test covering each.
STRUCTURAL = {
    "Set": "test_casts_and_moves", "cast": "test_casts_and_moves", "broadcast": "test_casts_and_moves",
    "permute": "test_casts_and_moves", "expand": "test_casts_and_moves", "squeeze": "test_casts_and_moves",
    "full": "test_casts_and_moves", "reshape": "test_casts_and_moves", "where": "test_where",
    "sum": "test_reductions", "prod": "test_reductions", "max": "test_reductions", "min": "test_reductions",
    "welford": "test_var_mean_of_nothing_and_large_corrections", "welford_avg": "test_var_mean_of_nothing_and_large_corrections",
    "welford_m2": "test_var_mean_of_nothing_and_large_corrections", "welford_n": "test_var_mean_of_nothing_and_large_corrections",
    "iota": "test_iota_triu_addcmul", "rand": "tests/ir/test_random.c, tests/kernels/test_semantics_kernels.c",
    "rand64": "tests/ir/test_random.c", "randn": "tests/ir/test_random.c",
    "slice": "test_resize", "pad": "test_resize", "cat": "test_resize", "ceilDiv": "tests/ir/test_scalar.c (index arithmetic)", "Split": "tests/ir/test_transforms.c",
    "Merge": "tests/ir/test_transforms.c", "Swizzle": "tests/ir/test_transforms.c",
    "online_softmax": "tests/ir/test_reduce_ops.c, tests/scheduler/test_norm_sched.c (made by the scheduler only)",
    "gather": "test_indexed", "take_along_axis": "test_indexed", "scatter": "test_indexed",
    "cumsum": "test_indexed, test_scans", "cumprod": "test_scans", "cummax": "test_scans", "cummin": "test_scans",
}

# Approximate ops: a relative tolerance of a few units in the last place, and an absolute
# one for results that cancel to nearly nothing (gelu(-7) in float is 1 + erf(-4.95): 0).
TOL = {"float64": 1e-12, "float32": 4e-6, "float16": 2e-3, "bfloat16": 1.6e-2, "float8_e4m3fn": 1.3e-1,
       "float8_e5m2": 2.6e-1}
ATOL = {"float64": 1e-15, "float32": 1e-9, "float16": 1e-6, "bfloat16": 1e-6, "float8_e4m3fn": 2e-3,
        "float8_e5m2": 2e-5}


def _ref(row):
    return (refs.UNARY if row["kind"] == "unary" else refs.BINARY)[row["py_name"]]


def _opmath(dt):
    return "float32" if dt in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2") else dt


def _compute_dtype(result, dt):
    """The dtype an op computes in for operands of dtype dt (torch's opmath of the result)."""
    if result == "float" and not V.is_float(dt):
        return "float32"
    return _opmath(dt)


def _as_compute(v, ct):
    if V.is_float(ct):
        return V.store(float(v), ct)
    return int(v) if not isinstance(v, bool) else v


def expected(row, dt, *args):
    """The reference's wide result of row on the wide operands args of dtype dt."""
    if V.is_complex(dt):
        return V.store(refs.complex_ref(row["py_name"], dt, *args), refs.complex_result_dtype(row["py_name"], dt))
    accepts, result, exact, fn = _ref(row)
    ct = _compute_dtype(result, dt)
    xs = [_as_compute(a, ct) for a in args]
    kind_dt = dt if not V.is_float(ct) else ct
    r = fn(*xs, kind_dt)
    return r if r is refs.ANY else V.store(r, refs.result_dtype(result, dt))


def _close_complex(g, w, dt, exact):
    """Each part NaN where the reference's is, infinite parts equal, finite ones equal
    (exact ops, the sign of zero included) or within the part dtype's rounding of |w|,
    normwise (a complex product's error bound is normwise, not per part)."""
    part = V.COMPLEX[dt]
    pairs = ((g.real, w.real), (g.imag, w.imag))
    if not all(_close(gp, wp, part, True, False) for gp, wp in pairs if exact or not math.isfinite(wp)):
        return False
    fin = [(gp, wp) for gp, wp in pairs if math.isfinite(wp)]
    if exact or not fin:
        return True
    if not all(math.isfinite(gp) for gp, _ in fin):
        return False
    err, size = math.hypot(*[gp - wp for gp, wp in fin]), math.hypot(*[wp for _, wp in fin])
    return err <= TOL[part] * size or err <= ATOL[part]


def _close(g, w, dt, exact, zero_sign_free):
    if w is refs.ANY:
        return True
    if V.is_complex(dt):
        return _close_complex(complex(g), complex(w), dt, exact)
    if V.is_float(dt):
        if math.isnan(w):
            return math.isnan(g)
        if exact or math.isinf(w) or math.isinf(g):
            return g == w and (zero_sign_free or g != 0 or math.copysign(1, g) == math.copysign(1, w))
        return abs(g - w) <= TOL[dt] * abs(w) or abs(g - w) <= ATOL[dt]
    return g == w


def _check(row, dt, out_dt, got, want, inputs, where):
    exact = refs.COMPLEX[row["py_name"]][1] if V.is_complex(dt) else _ref(row)[2]
    annex_g = V.is_complex(dt) and row["py_name"] in refs.ANNEX_G_OPS  # test_complex_annex_g checks these cells
    bad = [i for i, (g, w) in enumerate(zip(got, want))
           if not (annex_g and refs.annex_g_cell(row["py_name"], w))
           and not _close(g, w, out_dt, exact, row["py_name"] in refs.ZERO_SIGN_FREE)]
    detail = "; ".join(f"{row['py_name']}({', '.join(repr(x[i]) for x in inputs)}) = {got[i]!r}, expected {want[i]!r}"
                       for i in bad[:8])
    assert not bad, f"{where} {dt} -> {out_dt}: {len(bad)} of {len(want)} wrong: {detail}"


def _operands(row, dt, n=None):
    """The wide operands: specials (unary) or every pair of them (binary), cycled to n."""
    s = [V.store(v, dt) for v in V.SPECIALS[dt]]  # as the dtype holds them
    cols = [list(s)] if row["kind"] == "unary" else [list(c) for c in zip(*itertools.product(s, s))]
    if n:
        cols = [[c[i % len(c)] for i in range(n)] for c in cols]
    return cols


def _complex_refusal(name, dt, t=0):
    """The message of an op refusing the complex input T<t> (of a fusion of rank-1 inputs)."""
    cname = capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode()
    return f"{name}: T{t} has dtype {cname}, but {name} does not take complex tensors for T{t}_g_{cname}[iS{t}{{i{t}}}]"


def _storage_refusal(name, dt, t=0, axes=None):
    """The message of an op refusing the storage-type input T<t> (float4_e2m1fn: moves and
    casts only), of axes (default: one symbolic axis)."""
    cname = capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode()
    axes = axes or f"iS{t}{{i{t}}}"
    return (f"{name}: T{t} has dtype {cname}, a storage type; {name} does not take it (cast it to float first) for "
            f"T{t}_g_{cname}[{axes}]")


def _storage_refusal_re(name, dt, rank):
    """_storage_refusal of any tensor of `rank` symbolic axes, as a regular expression."""
    cname = re.escape(capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode())
    axes = ", ".join([r"iS\d+\{i\d+\}"] * rank)
    return (rf"{name}: (T\d+) has dtype {cname}, a storage type; {name} does not take it \(cast it to float first\) "
            rf"for \1_g_{cname}\[{axes}\]")


def _build(fus, row, dts, rank=1):
    outs = []
    for dt in dts:
        ins = [fus.input(dt, rank) for _ in range(1 if row["kind"] == "unary" else 2)]
        t = fus.op(row["name"], *ins)
        assert t, f"{row['name']} refused {dt}: {fus.error()}"
        fus.output(t)
        outs.append(t)
    return outs


def test_every_row_has_a_reference():
    missing = [r["name"] for r in ROWS if not (r in ELEMENTWISE and r["py_name"] in (refs.UNARY if r["kind"] == "unary"
                                                                                     else refs.BINARY))
               and r["name"] not in STRUCTURAL]
    assert missing == [], "ops of the table without a column in the conformance matrix"


def test_torch_matrix_maps_every_dtype():
    """torch_matrix.py (ctest conformance_torch, the GPU machine) compares every column of
    this matrix with torch: each dtype has torch's name (it stopped on a KeyError when
    complex64 became a column here); a dtype without one, or whose torch dtype this torch
    lacks, is an error naming it, and one torch added late is skipped with a note."""
    import torch_matrix  # loads without torch
    compared = [dt for dt in DTYPES if dt != "float4_e2m1fn"]
    assert torch_matrix.torch_dtypes(DTYPES, lambda name: name) == (
        {**{dt: dt for dt in compared}, "float4_e2m1fn": None}, [],
        ["torch's float4_e2m1fn_x2 has no conversions or arithmetic: the float4_e2m1fn column is checked against the "
         "evaluator and NumPy only"])
    assert torch_matrix.torch_dtypes(["complex32"], lambda name: name)[1:] == (
        ["cfuser's dtype complex32 (a column of the conformance matrix) has no torch name: add it to TORCH_NAME "
         "in tests/conformance/torch_matrix.py"], [])
    assert torch_matrix.torch_dtypes(["complex64", "uint32"], lambda name: None)[1:] == (
        ["cfuser's dtype complex64 is torch.complex64, which this torch lacks"],
        ["this torch has no torch.uint32 (added in torch 2.3): the uint32 column is not compared"])


def test_torch_matrix_pins_subnormal_complex_functions():
    """torch's log, rsqrt, sqrt and |z| of a complex operand with a subnormal part go through
    an |z| that underflows (log(5e-324-5e-324j): torch -744.4401-0.7854j, glibc and cfuser
    -744.0935-0.7854j): those cells are pinned (cfuser must equal its evaluator), not
    compared with torch; normal operands and other functions still are."""
    import torch_matrix
    for name in ("log", "rsqrt", "sqrt", "abs"):
        assert torch_matrix.pin_kind(name, "complex128", [5e-324 - 5e-324j], -744.44 - 0.78j) == "subnormal"
        assert torch_matrix.pin_kind(name, "complex128", [5e-324 + 1j], 0.5 + 0.5j) == "subnormal"
        assert torch_matrix.pin_kind(name, "complex64", [1e-40 - 1e-40j], 1 + 1j) == "subnormal"
        assert torch_matrix.pin_kind(name, "complex128", [1e-40 - 1e-40j], 1 + 1j) is None  # normal in double
        assert torch_matrix.pin_kind(name, "complex128", [2.2250738585072014e-308 + 0j], 1 + 1j) is None
    assert torch_matrix.pin_kind("exp", "complex128", [5e-324 - 5e-324j], 1 + 0j) is None
    assert torch_matrix.pin_kind("log", "float64", [5e-324], -744.44) is None


def test_torch_indexed_accumulation_folds():
    """torch_indexed.py (conformance_torch's scans) compares a floating cumsum or cumprod
    cell with torch only where the folds in the dtype, float and double agree: [2048, 1, 1]
    in float16 sums to 2050 in float (cfuser, torch's CPU) and stays 2048 in float16
    (torch's CUDA), along either axis; [2^24, 1, 1] in float32 to 2^24 + 2 in double alone."""
    import torch_indexed
    x = V.array([2048.0, 1.0, 1.0], "float16")
    want = {"float16": [2048.0] * 3, "float32": [2048.0, 2048.0, 2050.0], "float64": [2048.0, 2048.0, 2050.0]}
    assert torch_indexed._acc_models("cumsum", x.reshape(1, 3), "float16", 1) == want
    assert torch_indexed._acc_models("cumsum", x.reshape(3, 1), "float16", 0) == want
    x = V.array([2.0 ** 24, 1.0, 1.0], "float32").reshape(1, 3)
    assert torch_indexed._acc_models("cumsum", x, "float32", 1) == {"float32": [2.0 ** 24] * 3,
                                                                    "float64": [2.0 ** 24] * 2 + [2.0 ** 24 + 2]}
    assert torch_indexed._acc_models("cumprod", V.array([0.1, 3.0], "float64").reshape(1, 2), "float64", 1) == {
        "float64": [0.1, 0.1 * 3.0]}  # double folds in double alone: every float64 cell is compared


@pytest.mark.parametrize("row", ELEMENTWISE, ids=lambda r: r["py_name"])
def test_accepted_dtypes(row):
    want = [dt for dt in DTYPES if refs.accepts(_ref(row)[0], dt, row["py_name"])]
    have = [dt for dt in DTYPES if row["dtypes"] >> capi.DTYPES[dt] & 1]
    assert have == want
    for dt in DTYPES:
        if dt in want:
            continue
        fus = capi.Fusion()
        ins = [fus.input(dt, 1) for _ in range(1 if row["kind"] == "unary" else 2)]
        assert not fus.op(row["name"], *ins)
        if V.is_complex(dt):  # torch refuses these too
            assert fus.error() == _complex_refusal(row["name"], dt), fus.error()
            continue
        if dt in refs.STORAGE_ONLY:  # as torch's and nvFuser's float4_e2m1fn: moves and casts only
            assert fus.error() == _storage_refusal(row["name"], dt), fus.error()
            continue
        assert f"{row['name']}: T0 has dtype" in fus.error() and "cast it first" in fus.error(), fus.error()


@pytest.mark.parametrize("row", ELEMENTWISE, ids=lambda r: r["py_name"])
def test_evaluator(row):
    for dt in DTYPES:
        if not row["dtypes"] >> capi.DTYPES[dt] & 1:
            continue
        fus = capi.Fusion()
        (t,) = _build(fus, row, [dt])
        out_dt = capi.out_dtype(t)
        want_dt = refs.complex_result_dtype(row["py_name"], dt) if V.is_complex(dt) else refs.result_dtype(_ref(row)[1], dt)
        assert out_dt == want_dt, f"{row['name']} of {dt}"
        cols = _operands(row, dt)
        s, got = capi.evaluate(fus, [V.array(c, dt) for c in cols], [out_dt])
        assert s == 0, got
        want = [expected(row, dt, *args) for args in zip(*cols)]
        _check(row, dt, out_dt, V.widen(got[0], out_dt), want, cols, "evaluator")


# The dtypes some elementwise op takes: the others are storage types (test_accepted_dtypes
# asserts each op's refusal of them, test_casts_and_moves their moves and casts).
KERNEL_DTYPES = [dt for dt in DTYPES if any(r["dtypes"] >> capi.DTYPES[dt] & 1 for r in ELEMENTWISE)]


def test_storage_dtypes_take_no_elementwise_op():
    assert [dt for dt in DTYPES if dt not in KERNEL_DTYPES] == list(refs.STORAGE_ONLY)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", KERNEL_DTYPES)
def test_kernels(dt, backend):
    """Per dtype, one fusion holding every elementwise op that takes it (unary ops on a,
    binary ones on (a, b), a and b every pair of the dtype's specials), run through
    define and run: one compile per dtype and backend."""
    rows = [r for r in ELEMENTWISE if r["dtypes"] >> capi.DTYPES[dt] & 1]
    pair = {"kind": "binary"}
    cols = _operands(pair, dt)
    fus = capi.Fusion()
    a, b = fus.input(dt, 1), fus.input(dt, 1)
    outs = []
    for row in rows:
        t = fus.op(row["name"], a) if row["kind"] == "unary" else fus.op(row["name"], a, b)
        assert t, f"{row['name']} refused {dt}: {fus.error()}"
        fus.output(t)
        outs.append(t)
    out_dts = [capi.out_dtype(t) for t in outs]
    s, got = capi.execute(fus, [V.array(c, dt) for c in cols], out_dts,
                          capi.BACKEND_CUDA if backend == "cuda" else capi.BACKEND_HOST)
    assert s == 0, got
    failures = []
    for row, out_dt, g in zip(rows, out_dts, got):
        args = cols[:1] if row["kind"] == "unary" else cols
        want = [expected(row, dt, *x) for x in zip(*args)]
        try:
            _check(row, dt, out_dt, V.widen(g, out_dt), want, args, backend)
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dt", list(V.COMPLEX))
def test_complex_annex_g(dt):
    """The products and quotients of complex specials whose NumPy value is not finite (see
    refs.ANNEX_G_OPS): every backend gives exactly the evaluator's value (C99 Annex G's), and
    those values differ from NumPy's in the cells pinned here as an expected failure (one
    that fails when they agree)."""
    rows = [r for r in ELEMENTWISE if r["py_name"] in refs.ANNEX_G_OPS]
    cols = _operands({"kind": "binary"}, dt)
    fus = capi.Fusion()
    a, b = fus.input(dt, 1), fus.input(dt, 1)
    outs = [fus.op(r["name"], a) if r["kind"] == "unary" else fus.op(r["name"], a, b) for r in rows]
    assert all(outs), fus.error()
    for t in outs:
        fus.output(t)
    arrays = [V.array(c, dt) for c in cols]
    runs = [("evaluator", capi.evaluate(fus, arrays, [dt] * len(rows)))]
    runs += [(bk, capi.execute(fus, arrays, [dt] * len(rows), capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    assert all(s == 0 for _, (s, _) in runs), runs
    diffs, wrong = [], []
    for n, row in enumerate(rows):
        args = cols[:1] if row["kind"] == "unary" else cols
        ev = V.widen(runs[0][1][1][n], dt)
        for where, (_, got) in runs[1:]:
            exact = refs.COMPLEX[row["py_name"]][1]  # complex64 kernels compute in float, the evaluator in double
            g = V.widen(got[n], dt)
            wrong += [(where, row["py_name"], cols[0][i], cols[1][i], g[i], ev[i]) for i in range(len(ev))
                      if not _close(g[i], ev[i], dt, exact, False)]
        for i, x in enumerate(zip(*args)):
            w = expected(row, dt, *x)
            if refs.annex_g_cell(row["py_name"], w) and not _close(ev[i], w, dt, True, False):
                diffs.append(f"{row['py_name']}{x} = {ev[i]!r}, NumPy {w!r}")
    diffs = list(dict.fromkeys(diffs))  # a unary op sees each operand 25 times
    # Nothing may differ from the evaluator: it multiplies and divides complex64 in float
    # complex, as the kernels do ((1e30-1e30j)**2 was 0-infj in the evaluator's double and
    # nan-infj in the kernels).
    assert not wrong, wrong[:4]
    assert diffs, "every cell agrees with NumPy now: drop refs.ANNEX_G_OPS's exclusion"
    pytest.xfail(f"{len(diffs)} cells follow C99 Annex G, not NumPy: " + "; ".join(diffs[:12]))


@pytest.mark.parametrize("rank", [0, 1], ids=["0-d", "empty"])
@pytest.mark.parametrize("dt", ["float32", "int32", "bool"])
def test_zero_dim_and_empty(dt, rank):
    """0-d operands give a 0-d result, empty ones an empty result, for every op taking dt:
    on the evaluator and on every backend through an executor (the fusion inlined, no
    automatic scheduler), one fusion holding every op."""
    rows = [r for r in ELEMENTWISE if r["dtypes"] >> capi.DTYPES[dt] & 1]
    fus = capi.Fusion()
    a, b = fus.input(dt, rank), fus.input(dt, rank)
    outs = [fus.op(r["name"], a) if r["kind"] == "unary" else fus.op(r["name"], a, b) for r in rows]
    assert all(outs), fus.error()
    for t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for t in outs]
    vals = [V.store(V.SPECIALS[dt][-1], dt), V.store(V.SPECIALS[dt][1], dt)]
    arrays = [V.array([v], dt).reshape(()) if rank == 0 else V.array([], dt) for v in vals]
    runs = [("evaluator", capi.evaluate(fus, arrays, out_dts))]
    for backend in BACKENDS:
        runs.append((backend, capi.run_unscheduled(fus, arrays, out_dts,
                                                   capi.BACKEND_CUDA if backend == "cuda" else capi.BACKEND_HOST)))
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for row, out_dt, g in zip(rows, out_dts, got):
            assert g.shape == (() if rank == 0 else (0,)), f"{where}: {row['name']} gave shape {g.shape}"
            args = vals[:1] if row["kind"] == "unary" else vals
            want = [expected(row, dt, *args)] if rank == 0 else []
            _check(row, dt, out_dt, V.widen(g, out_dt), want, [[v] for v in args], where)


# ---- the rows that are not elementwise -------------------------------------------------------

def _call(fus, name, restype, *args):
    fn = getattr(capi.LIB, "cf_" + name)
    fn.restype = restype
    return fn(fus.f, *args)


def test_casts_and_moves():
    """cast from every dtype to every dtype (floating to integer truncates, saturates and
    sends NaN to 0, identically on every backend), and the ops that move elements (set,
    broadcast, expand, permute) keep every value exactly: one fusion, every backend."""
    fus = capi.Fusion()
    n = max(len(v) for v in V.SPECIALS.values())
    vals, outs, arrays = {}, [], []
    for src in DTYPES:
        vals[src] = [V.store(V.SPECIALS[src][i % len(V.SPECIALS[src])], src) for i in range(n)]
        arrays.append(V.array(vals[src], src))
        a = fus.input(src, 1)
        outs += [(src, to, _call(fus, "cast", capi.P, capi.P(a), ctypes.c_int(capi.DTYPES[to]))) for to in DTYPES]
        moved = _call(fus, "set", capi.P, capi.P(a))
        b = _call(fus, "broadcast", capi.P, capi.P(moved), 2, (ctypes.c_bool * 2)(True, False))
        e = _call(fus, "expand", capi.P, capi.P(b), 2, (ctypes.c_int64 * 2)(4, -1))  # even: fp4 rows hold pairs
        outs.append((src, None, _call(fus, "permute", capi.P, capi.P(e), 2, (ctypes.c_int * 2)(1, 0))))
    assert all(t for _, _, t in outs), fus.error()
    for _, _, t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for _, _, t in outs]
    assert out_dts == [to or src for src, to, _ in outs]
    runs = [("evaluator", capi.evaluate(fus, arrays, out_dts))]
    runs += [(bk, capi.execute(fus, arrays, out_dts, capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for (src, to, _), g in zip(outs, got):
            if to is None:  # the moves: [n, 4], each value four times
                want = [v for v in vals[src] for _ in range(4)]
                assert g.shape == (n, 4) and all(_close(x, w, src, True, False)
                                                 for x, w in zip(V.widen(g, src), want)), f"{where}: moves of {src}"
                continue
            want = [V.store(v, to) for v in vals[src]]
            bad = [(v, x, w) for v, x, w in zip(vals[src], V.widen(g, to), want) if not _close(x, w, to, True, False)]
            assert not bad, f"{where}: cast {src} -> {to}: (value, got, expected) {bad[:6]}"


def _reduce_ref(op, row, dt):
    """torch's reduction of one row (wide values), in the result dtype."""
    if V.is_complex(dt):  # sum and mean: each part summed exactly, rounded once
        parts = [[x.real for x in row], [x.imag for x in row]]
        r = [math.fsum(p) if all(math.isfinite(x) for x in p) else sum(p) for p in parts]
        if op == "mean":  # NumPy's (and cfuser's): the sum divided by n as a complex number (inf+xj -> inf+nanj)
            with np.errstate(all="ignore"):
                return V.store(complex(np.complex128(complex(*r)) / np.complex128(len(row))), dt)
        return V.store(complex(*r), dt)
    floating = V.is_float(dt)
    if op in ("max", "min"):
        if floating and any(math.isnan(x) for x in row):
            return math.nan
        return (max if op == "max" else min)(row)
    out = "int64" if not floating else dt
    if op == "sum":
        r = math.fsum(row) if floating and not any(math.isinf(x) or math.isnan(x) for x in row) else sum(row)
    else:
        r = 1.0 if floating else 1
        for x in row:
            r *= x
    return V.store(r, out)


REDUCE_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3}
SMALLEST_NORMAL = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38, "float16": 6.103515625e-05,
                   "bfloat16": 1.1754943508222875e-38, "float8_e4m3fn": 2.0 ** -6, "float8_e5m2": 2.0 ** -14}
FINITE_MAX = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38, "float16": 65504.0,
              "bfloat16": 3.3895313892515355e38, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def _order_sensitive(op, row, dt):
    """A sum or product of floating values whose partial results can overflow in some
    order: its value depends on the order of the fold (torch's too), so kernels, which fold
    in their own order, are not compared on it."""
    if V.is_complex(dt):  # complex sums accumulate in their own type: large parts absorb small ones in any order
        return any(abs(p) > 1e20 for x in row for p in (x.real, x.imag) if math.isfinite(p))
    big = [abs(x) for x in row if math.isfinite(x) and x != 0]
    if op == "sum":
        return any(x > FINITE_MAX[dt] / len(row) for x in big)
    p_big, p_small = math.prod(x for x in big if x > 1), math.prod(x for x in big if x < 1)
    return op == "prod" and (p_big > FINITE_MAX[dt] or p_small < SMALLEST_NORMAL[dt])


def test_reductions():
    """sum, prod, max and min over the last axis of rows of special values, every dtype:
    NaN propagates through max and min, inf - inf is NaN, sums of integers are int64
    (exact, wrapping), 16-bit types accumulate wide; an empty axis gives 0 (sum) and 1
    (prod), and max and min of an empty axis are an error with a message."""
    fus = capi.Fusion()
    arrays, outs = [], []
    for dt in DTYPES:
        s = [V.store(v, dt) for v in V.SPECIALS[dt]]
        rows = [[s[(3 * i + j) % len(s)] for j in range(4)] for i in range(len(s))]
        arrays.append(V.array([x for r in rows for x in r], dt).reshape(len(rows), 4))
        a = fus.input(dt, 2)
        for op, code in REDUCE_OPS.items():
            t = _call(fus, "reduce", capi.P, ctypes.c_int(code), capi.P(a), 1, (ctypes.c_int * 1)(1), False)
            if dt in refs.STORAGE_ONLY:  # a storage type: moves and casts only (torch's and nvFuser's)
                what = {"max": "max_reduce", "min": "min_reduce"}.get(op, op)
                assert not t and re.fullmatch(_storage_refusal_re(what, dt, 2), fus.error()), fus.error()
                capi.LIB.cf_fusion_clear_error(fus.f)
                continue
            if V.is_complex(dt) and op != "sum":  # torch refuses these too
                cname = capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode()
                what = {"max": "max_reduce", "min": "min_reduce"}.get(op, op)
                assert not t and re.fullmatch(rf"{what}: (T\d+) has dtype {cname}, but {what} does not take complex "
                                              rf"tensors for \1_g_{cname}\[iS\d+\{{i\d+\}}, iS\d+\{{i\d+\}}\]",
                                              fus.error()), fus.error()
                capi.LIB.cf_fusion_clear_error(fus.f)
                continue
            assert t, fus.error()
            outs.append((dt, op, rows, t))
        if V.is_complex(dt):
            outs.append((dt, "mean", rows, _call(fus, "mean", capi.P, capi.P(a), 1, (ctypes.c_int * 1)(1))))
    for *_, t in outs:
        fus.output(t)
    out_dts = [capi.out_dtype(t) for *_, t in outs]
    runs = [("evaluator", capi.evaluate(fus, arrays, out_dts))]
    runs += [(bk, capi.execute(fus, arrays, out_dts, capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for (dt, op, rows, _), out_dt, g in zip(outs, out_dts, got):
            want = [_reduce_ref(op, r, dt) for r in rows]
            exact = op in ("max", "min") or not (V.is_float(dt) or V.is_complex(dt)) or where == "evaluator"
            bad = [(r, x, w) for r, x, w in zip(rows, V.widen(g, out_dt), want) if not _close(x, w, out_dt, exact, op in ("max", "min"))
                   and not (op == "mean" and refs.annex_g_cell("div", complex(w)))  # see test_complex_annex_g
                   and not ((where != "evaluator" and V.is_float(dt) or V.is_complex(dt)) and _order_sensitive(op, r, dt))]
            assert not bad, f"{where}: {op} of {dt}: (row, got, expected) {bad[:4]}"


@pytest.mark.parametrize("op", list(REDUCE_OPS))
def test_reductions_of_nothing(op):
    """An empty axis: sum 0, prod 1; max and min an error naming the axis (torch raises)."""
    fus = capi.Fusion()
    a = fus.input("float32", 2)
    t = _call(fus, "reduce", capi.P, ctypes.c_int(REDUCE_OPS[op]), capi.P(a), 1, (ctypes.c_int * 1)(1), False)
    fus.output(t)
    x = np.zeros((3, 0), np.float32)
    msg = f"{op}: axis 1 of T0 has extent 0; the {op} of an empty axis is undefined (torch refuses it too)"
    runs = [("evaluator", capi.evaluate(fus, [x], ["float32"]))]
    runs += [(bk, capi.run_unscheduled(fus, [x], ["float32"], capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        if op in ("max", "min"):
            assert s != 0 and got.endswith(msg), f"{where}: {got}"
        else:
            assert s == 0, f"{where}: {got}"
            assert list(got[0]) == [0.0 if op == "sum" else 1.0] * 3, f"{where}: {got[0]}"


def test_var_mean_of_nothing_and_large_corrections():
    """var_mean as torch.var_mean: the divisor is max(0, n - correction), so a correction
    past the row's length gives inf (not a negative variance), and an empty axis gives
    nan, nan (the mean of nothing is nan)."""
    fus = capi.Fusion()
    a = fus.input("float32", 2)
    pairs = []
    for corr in (0, 1, 5):
        var, mean = capi.P(), capi.P()
        assert capi.LIB.cf_var_mean(fus.f, capi.P(a), 1, (ctypes.c_int * 1)(1), ctypes.c_int64(corr), False,
                                    ctypes.byref(var), ctypes.byref(mean)) == 0, fus.error()
        fus.output(var.value)
        fus.output(mean.value)
        pairs.append(corr)
    for shape in ((2, 3), (2, 0), (2, 1)):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * 1.5
        runs = [("evaluator", capi.evaluate(fus, [x], ["float32"] * 6))]
        runs += [(bk, capi.run_unscheduled(fus, [x], ["float32"] * 6,
                                           capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST)) for bk in BACKENDS]
        for where, (s, got) in runs:
            assert s == 0, f"{where}: {got}"
            for k, corr in enumerate(pairs):
                var, mean = got[2 * k], got[2 * k + 1]
                n = shape[1]
                for r in range(shape[0]):
                    row = [float(v) for v in x[r]]
                    m = sum(row) / n if n else math.nan
                    m2 = sum((v - m) ** 2 for v in row) if n else 0.0
                    d = max(0, n - corr)
                    want_var = m2 / d if d else (math.nan if m2 == 0 else math.inf)
                    assert _close(float(mean[r]), m, "float32", False, False), f"{where} {shape} mean {mean[r]} {m}"
                    assert _close(float(var[r]), want_var, "float32", False, False), \
                        f"{where} {shape} correction {corr}: var {var[r]}, expected {want_var}"


def test_where():
    """where(cond, a, b) on every dtype, the condition from a bool input (float4_e2m1fn:
    refused, naming the op and the tensor)."""
    fus = capi.Fusion()
    c = fus.input("bool", 1)
    arrays = [np.array([True, False] * 16, np.bool_)]
    outs = []
    for dt in DTYPES:
        s = [V.store(v, dt) for v in V.SPECIALS[dt]]
        a_vals = [s[i % len(s)] for i in range(32)]
        b_vals = [s[(i + 1) % len(s)] for i in range(32)]
        arrays += [V.array(a_vals, dt), V.array(b_vals, dt)]
        a, b = fus.input(dt, 1), fus.input(dt, 1)
        t = _call(fus, "where", capi.P, capi.P(c), capi.P(a), capi.P(b))
        if dt in refs.STORAGE_ONLY:  # a select, not a move: torch has no where of float4_e2m1fn_x2 either
            assert not t and re.fullmatch(_storage_refusal_re("where", dt, 1), fus.error()), fus.error()
            capi.LIB.cf_fusion_clear_error(fus.f)
            continue
        fus.output(t)
        outs.append((dt, [x if i % 2 == 0 else y for i, (x, y) in enumerate(zip(a_vals, b_vals))]))
    out_dts = [dt for dt, _ in outs]
    runs = [("evaluator", capi.evaluate(fus, arrays, out_dts))]
    runs += [(bk, capi.execute(fus, arrays, out_dts, capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for (dt, want), g in zip(outs, got):
            assert all(_close(x, w, dt, True, False) for x, w in zip(V.widen(g, dt), want)), f"{where}: where of {dt}"


def _iota_triu_addcmul(which):
    """One fusion of the op `which` (0 iota float, 1 iota int64, 2-4 triu, 5 addcmul), its
    inputs and NumPy's result."""
    fus = capi.Fusion()
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((2, 4, 5)).astype(np.float32) for _ in range(3 if which == 5 else 1 if which >= 2 else 0)]
    ins = [fus.input("float32", 3) for _ in xs]
    if which == 0:
        t = _call(fus, "iota", capi.P, ctypes.c_int64(7), ctypes.c_double(0.5), ctypes.c_double(0.1),
                  ctypes.c_int(capi.DTYPES["float32"]))
        want = np.array([np.float32(0.5 + n * 0.1) for n in range(7)], np.float32)
    elif which == 1:
        t = _call(fus, "iota", capi.P, ctypes.c_int64(5), ctypes.c_double(2 ** 62), ctypes.c_double(-3),
                  ctypes.c_int(capi.DTYPES["int64"]))
        want = np.array([2 ** 62 - 3 * n for n in range(5)], np.int64)
    elif which < 5:
        diag = (0, -1, 2)[which - 2]
        t = _call(fus, "triu", capi.P, capi.P(ins[0]), ctypes.c_int64(diag))
        want = np.triu(xs[0], diag)
    else:
        t = _call(fus, "addcmul", capi.P, capi.P(ins[0]), capi.P(ins[1]), capi.P(ins[2]), ctypes.c_double(0.5))
        want = (xs[0].astype(np.float64) + 0.5 * xs[1].astype(np.float64) * xs[2]).astype(np.float32)
    assert t, fus.error()
    fus.output(t)
    return fus, xs, want


@pytest.mark.parametrize("which", range(6), ids=["iota", "iota_int64", "triu", "triu_below", "triu_above", "addcmul"])
def test_iota_triu_addcmul(which):
    """iota (torch.arange: floating elements computed in double and rounded once, integers
    exactly), triu over the last two axes of a batch, and addcmul, against NumPy: on the
    evaluator, define and run, and the fusion inlined by hand."""
    fus, xs, want = _iota_triu_addcmul(which)
    out_dt = capi.out_dtype(capi.LIB.cf_fusion_output(fus.f, 0))
    runs = [("evaluator", capi.evaluate(fus, xs, [out_dt]))]
    for bk in BACKENDS:
        backend = capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST
        runs.append((bk, capi.execute(fus, xs, [out_dt], backend)))
        runs.append((bk + " inlined", capi.run_unscheduled(fus, xs, [out_dt], backend)))
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        assert got[0].shape == want.shape, where
        if which == 5:
            assert np.allclose(got[0], want, rtol=1e-6, atol=1e-6), f"{where}: {got[0]}"
        else:
            assert np.array_equal(got[0], want), f"{where}: {got[0]}"

BIG = 2 ** 63 - 1


def _resize_cases(fus, x, y):
    """(output, NumPy function of (x, y)) for slices, pads and cats of inputs [3, 8], [3, 4]."""
    i64 = ctypes.c_int64
    return [
        (_call(fus, "slice", capi.P, capi.P(x), 2, (i64 * 2)(0, 1), (i64 * 2)(BIG, 7), (i64 * 2)(1, 2)),
         lambda a, b: a[:, 1:7:2]),
        (_call(fus, "slice", capi.P, capi.P(x), 2, (i64 * 2)(-2, -5), (i64 * 2)(BIG, -1), None),
         lambda a, b: a[-2:, -5:-1]),
        (_call(fus, "slice", capi.P, capi.P(x), 2, (i64 * 2)(1, 6), (i64 * 2)(2, 2), None), lambda a, b: a[1:2, 6:2]),
        (_call(fus, "pad", capi.P, capi.P(y), 2, (i64 * 2)(2, 1), ctypes.c_double(-1.5)),
         lambda a, b: np.pad(b, ((0, 0), (2, 1)), constant_values=-1.5)),
        (_call(fus, "pad", capi.P, capi.P(y), 4, (i64 * 4)(0, 0, 1, 2), ctypes.c_double(0)),
         lambda a, b: np.pad(b, ((1, 2), (0, 0)))),
        (_call(fus, "cat", capi.P, 2, (capi.P * 2)(x, y), -1), lambda a, b: np.concatenate([a, b], -1)),
        (_call(fus, "cat", capi.P, 3, (capi.P * 3)(y, x, y), 1), lambda a, b: np.concatenate([b, a, b], 1)),
    ]


@pytest.mark.parametrize("inlined", [False, True], ids=["define_and_run", "inlined"])
def test_resize(inlined):
    """slice (Python's bounds, steps, negative and empty ranges), pad and cat of inputs,
    against NumPy: the evaluator, define and run, and the fusion inlined by hand (where a
    cat of three, a chain of two cats, reads the first cat's result computed in the same
    kernel: refused with the reason)."""
    fus = capi.Fusion()
    x, y = fus.input_concrete("float32", (3, 8)), fus.input_concrete("float32", (3, 4))
    cases = _resize_cases(fus, x, y)[:-1 if inlined else None]
    assert all(t for t, _ in cases), fus.error()
    for t, _ in cases:
        fus.output(t)
    xs = [np.arange(24, dtype=np.float32).reshape(3, 8), -np.arange(12, dtype=np.float32).reshape(3, 4)]
    runs = [("evaluator", capi.evaluate(fus, xs, ["float32"] * len(cases)))]
    for bk in BACKENDS:
        backend = capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST
        run = capi.run_unscheduled if inlined else capi.execute
        runs.append((bk, run(fus, xs, ["float32"] * len(cases), backend)))
    if inlined:
        f3 = capi.Fusion()
        a, b = f3.input_concrete("float32", (3, 8)), f3.input_concrete("float32", (3, 4))
        f3.output(_resize_cases(f3, a, b)[-1][0])
        s, msg = capi.run_unscheduled(f3, xs, ["float32"])
        assert s != 0 and msg == ("compile: T9 = cat(T8...) reads T8 at other positions; a resize's operand must be a "
                                  "fusion input or a segment input (define and run cuts the fusion before it), not "
                                  "computed in the same kernel"), msg
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for n, ((_, fn), g) in enumerate(zip(cases, got)):
            assert np.array_equal(g, fn(*xs)), f"{where}: case {n}: {g}"


def test_resize_packed():
    """The float4_e2m1fn column of the resize ops (moves: codes kept exactly): slices of
    even width, one starting at an odd element (its pairs straddle the input's bytes), a
    pad by -1.5 and a cat along the innermost axis, against NumPy on the codes: the
    evaluator and define and run on every backend; and a full of the dtype."""
    dt, i64 = "float4_e2m1fn", ctypes.c_int64
    fus = capi.Fusion()
    x, y = fus.input_concrete(dt, (3, 8)), fus.input_concrete(dt, (3, 4))
    cases = [
        (_call(fus, "slice", capi.P, capi.P(x), 2, (i64 * 2)(1, 1), (i64 * 2)(3, 5), None), lambda a, b: a[1:3, 1:5]),
        (_call(fus, "slice", capi.P, capi.P(x), 2, (i64 * 2)(0, 2), (i64 * 2)(BIG, 8), (i64 * 2)(2, 1)),
         lambda a, b: a[::2, 2:]),
        (_call(fus, "pad", capi.P, capi.P(y), 2, (i64 * 2)(2, 0), ctypes.c_double(-1.5)),
         lambda a, b: np.pad(b, ((0, 0), (2, 0)), constant_values=V.array([-1.5], dt)[0])),
        (_call(fus, "cat", capi.P, 2, (capi.P * 2)(y, x), -1), lambda a, b: np.concatenate([b, a], -1)),
    ]
    assert all(t for t, _ in cases), fus.error()
    for t, _ in cases:
        fus.output(t)
    vals = V.SPECIALS[dt]
    xs = [V.array([vals[i % len(vals)] for i in range(24)], dt).reshape(3, 8),
          V.array([vals[(7 * i + 3) % len(vals)] for i in range(12)], dt).reshape(3, 4)]
    runs = [("evaluator", capi.evaluate(fus, xs, [dt] * len(cases)))]
    runs += [(bk, capi.execute(fus, xs, [dt] * len(cases), capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for n, ((_, fn), g) in enumerate(zip(cases, got)):
            assert np.array_equal(g, fn(*xs)), f"{where}: case {n}: {g} != {fn(*xs)}"
    full = capi.Fusion()  # a constant made in the dtype: 5 rounds to 4 (a tie, to even)
    full.output(_call(full, "full", capi.P, 2, (i64 * 2)(3, 4), ctypes.c_double(5.0), ctypes.c_int(capi.DTYPES[dt])))
    runs = [("evaluator", capi.evaluate(full, [], [dt]))]
    runs += [(bk, capi.execute(full, [], [dt], capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0 and V.widen(got[0], dt) == [4.0] * 12, f"{where}: {got}"


def test_rope():
    """Rotary embedding as generated definitions write it: x * cos + cat(-x2, x1) * sin with
    x1, x2 the halves of x's last axis (slice, neg, cat, mul, add), against NumPy. A hand
    schedule that inlines everything is refused (cat reads the computed -x2 at other
    positions); define and run cuts the fusion where it must."""
    b, h, s_, d = 2, 3, 5, 8
    fus = capi.Fusion()
    x, cs, sn = fus.input("float32", 4), fus.input("float32", 2), fus.input("float32", 2)
    i64 = ctypes.c_int64
    x1 = _call(fus, "slice", capi.P, capi.P(x), 4, (i64 * 4)(0, 0, 0, 0), (i64 * 4)(BIG, BIG, BIG, d // 2), None)
    x2 = _call(fus, "slice", capi.P, capi.P(x), 4, (i64 * 4)(0, 0, 0, d // 2), (i64 * 4)(BIG, BIG, BIG, BIG), None)
    rot = _call(fus, "cat", capi.P, 2, (capi.P * 2)(_call(fus, "neg", capi.P, capi.P(x2)), x1), -1)
    out = _call(fus, "add", capi.P, capi.P(_call(fus, "mul", capi.P, capi.P(x), capi.P(cs))),
                capi.P(_call(fus, "mul", capi.P, capi.P(rot), capi.P(sn))))
    assert out, fus.error()
    fus.output(out)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(shape).astype(np.float32) for shape in ((b, h, s_, d), (s_, d), (s_, d))]
    want = xs[0] * xs[1] + np.concatenate([-xs[0][..., d // 2:], xs[0][..., :d // 2]], -1) * xs[2]
    runs = [("evaluator", capi.evaluate(fus, xs, ["float32"]))]
    runs += [(bk, capi.execute(fus, xs, ["float32"], capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        assert np.allclose(got[0], want, rtol=1e-6, atol=1e-6), where
    s, msg = capi.run_unscheduled(fus, xs, ["float32"])
    assert s != 0 and "local memory has a symbolic size" in msg, msg


import ctypes  # noqa: E402  (used by the structural tests above)


# The scans (IR_SCAN_TABLE): each the running value of a reduction, by the Python fold its
# combine is here; whether integers and bool widen to int64 (torch.cumsum, torch.cumprod) or
# keep their dtype (torch.cummax and torch.cummin's values). Complex folds: the sum per part,
# the product NumPy's in the dtype (refs.COMPLEX's mul).
SCANS = {
    "cumsum": (lambda a, b: a + b, 0, True),
    "cumprod": (lambda a, b: a * b, 1, True),
    "cummax": (lambda a, b: a if math.isnan(a) else b if math.isnan(b) else max(a, b), -math.inf, False),
    "cummin": (lambda a, b: a if math.isnan(a) else b if math.isnan(b) else min(a, b), math.inf, False),
}
COMPLEX_SCANS = ("cumsum", "cumprod")  # torch refuses cummax and cummin of complex tensors too


def scan_out_dtype(op, dtype):
    return "int64" if SCANS[op][2] and not (V.is_float(dtype) or V.is_complex(dtype)) else dtype


def _scan_acc_dtype(dtype):
    if V.is_complex(dtype):
        return dtype
    return ("float64" if dtype == "float64" else "float32") if V.is_float(dtype) else "int64"


def scan_ref(op, x, dtype, axis):
    """torch's scan of the wide values of x (2-D, dtype) along axis: folded in index order
    from the identity, each partial result rounded to the accumulation dtype (float, double
    for double, the complex dtype itself; int64 or the dtype's own integers, wrapping), then
    stored in the output's dtype. Wide values, row-major."""
    fold, start, widen = SCANS[op]
    if V.is_complex(dtype) and op == "cumprod":
        fold = lambda a, b: refs.complex_ref("mul", dtype, a, b)  # noqa: E731  (NumPy's product in the dtype)
    inexact = V.is_float(dtype) or V.is_complex(dtype)
    acc_dt, out_dt = _scan_acc_dtype(dtype), scan_out_dtype(op, dtype)
    w = np.array(V.widen(x, dtype), dtype=object).reshape(x.shape)
    w = w if axis == 1 else w.T
    rows = []
    for row in w:
        acc = start if inexact or start in (0, 1) else None
        out = []
        for v in row:
            v = int(v) if not inexact else v
            acc = v if acc is None else V.store(fold(acc, v), acc_dt)
            out.append(V.store(acc, out_dt))
        rows.append(out)
    res = np.array(rows, dtype=object)
    return list((res if axis == 1 else res.T).reshape(-1)), out_dt


def scan_input(dtype):
    """The dtype's special values (NaN, +-inf, -0.0, subnormals, integer extremes) shuffled
    into a [5, 7] tensor, every value at least once."""
    vals = V.SPECIALS[dtype]
    rng = np.random.default_rng(11)
    order = np.concatenate([rng.permutation(len(vals)) for _ in range(35 // len(vals) + 1)])[:35]
    return V.array([vals[k] for k in order], dtype).reshape(5, 7)


def _scan_cell_ok(op, dt, g, w):
    """cummax/cummin exact but the sign of zero where they meet +-0.0; cumsum exact; a
    complex cumprod within the dtype's rounding of NumPy's product, normwise, where NumPy's
    is finite (C99's Annex G differs from NumPy past that: those cells are checked against
    the evaluator, bit for bit); every other scan exact."""
    if V.is_complex(dt) and op == "cumprod":
        return refs.annex_g_cell("mul", w) or _close(g, w, dt, False, False)
    return _close(g, w, dt, True, op in ("cummax", "cummin"))


@pytest.mark.parametrize("dtype", [dt for dt in DTYPES if dt not in refs.STORAGE_ONLY])
def test_scans(dtype):
    """cumsum, cumprod, cummax and cummin of every dtype's special values along both axes,
    in one fusion, against torch's semantics: the evaluator and define and run on every
    backend, exact (NaN stays NaN to the end of its row; cumsum and cumprod give int64 for
    integers and bool, wrapping; the sign of zero too, but where max and min meet +-0.0).
    Complex dtypes: cumsum and cumprod (test_scans_refuse_complex: the others), folded in
    the complex dtype; every backend equals the evaluator bit for bit there as well."""
    x = scan_input(dtype)
    fus = capi.Fusion()
    tx = fus.input_concrete(dtype, x.shape)
    cases = [(op, axis) for op in SCANS for axis in (0, 1) if not V.is_complex(dtype) or op in COMPLEX_SCANS]
    for op, axis in cases:
        t = _call(fus, op, capi.P, capi.P(tx), axis)
        assert t, fus.error()
        fus.output(t)
    want = [scan_ref(op, x, dtype, axis) for op, axis in cases]
    dts = [d for _, d in want]
    runs = [("evaluator", capi.evaluate(fus, [x], dts))]
    runs += [(bk, capi.execute(fus, [x], dts, capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for (op, axis), g, e, (w, dt) in zip(cases, got, runs[0][1][1], want):
            have = V.widen(g, dt)
            bad = [(i, h, v) for i, (h, v) in enumerate(zip(have, w)) if not _scan_cell_ok(op, dt, h, v)]
            assert not bad, f"{where}: {op} along {axis} of {dtype}: (index, got, want) {bad[:6]}"
            if V.is_complex(dtype):  # bit for bit, NaN parts as NaN
                assert np.array_equal(g.view(np.float32 if dtype == "complex64" else np.float64),
                                      e.view(np.float32 if dtype == "complex64" else np.float64), equal_nan=True), \
                    f"{where}: {op} along {axis} of {dtype} differs from the evaluator: {g} != {e}"


@pytest.mark.parametrize("op", list(SCANS))
@pytest.mark.parametrize("dtype", list(refs.STORAGE_ONLY))
def test_scans_refuse_storage_types(op, dtype):
    """Every scan of a float4_e2m1fn tensor is refused, naming the op and the tensor (a
    storage type: moves and casts only, as torch's and nvFuser's)."""
    fus = capi.Fusion()
    tx = fus.input_concrete(dtype, (5, 8))
    assert not _call(fus, op, capi.P, capi.P(tx), 1)
    assert fus.error() == _storage_refusal(op, dtype, 0, "iS0{5}, iS1{8}"), fus.error()


@pytest.mark.parametrize("op", [op for op in SCANS if op not in COMPLEX_SCANS])
@pytest.mark.parametrize("dtype", list(V.COMPLEX))
def test_scans_refuse_complex(op, dtype):
    """cummax and cummin of a complex tensor are refused, naming the op and the tensor, as
    torch refuses them ("cummax_cpu" not implemented for 'ComplexFloat')."""
    fus = capi.Fusion()
    tx = fus.input_concrete(dtype, (5, 6))
    assert not _call(fus, op, capi.P, capi.P(tx), 1)
    name = {"complex64": "complex_float", "complex128": "complex_double"}[dtype]
    assert fus.error() == f"{op}: T0 has dtype {name}, but {op} does not take complex tensors for T0_g_{name}[iS0{{5}}, iS1{{6}}]", fus.error()


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexed(dtype):
    """gather, take_along_axis, scatter (moves: bit-exact) and cumsum of every dtype on
    [5, 6] with int64 and int32 indices (negative ones too), against NumPy: the evaluator
    and define and run on every backend (float4_e2m1fn: the moves, its cumsum refused)."""
    rng = np.random.default_rng(7)
    vals = rng.integers(0, 3, size=30).astype(np.float64) if dtype == "bool" else rng.integers(-20, 20, size=30) / 2
    if not V.is_float(dtype):
        vals = np.abs(vals).astype(np.int64) if dtype in ("uint32", "bool") else np.trunc(vals).astype(np.int64)
    x = V.array([v.item() for v in vals], dtype).reshape(5, 6)
    gi = rng.integers(-5, 5, size=(3, 6)).astype(np.int64)
    ti = rng.integers(-6, 6, size=(5, 4)).astype(np.int32)
    si = np.array([[4, 0, -1, 2, 1, 3], [1, 3, 0, 4, 2, 0]], np.int64)  # unique per column
    src = x[::-1].copy()[:2]
    fus = capi.Fusion()
    tx = fus.input_concrete(dtype, (5, 6))
    tg, tt = fus.input_concrete("int64", (3, 6)), fus.input_concrete("int32", (5, 4))
    ts, tsrc = fus.input_concrete("int64", (2, 6)), fus.input_concrete(dtype, (2, 6))
    outs = [_call(fus, "gather", capi.P, capi.P(tx), 0, capi.P(tg)),
            _call(fus, "take_along_axis", capi.P, capi.P(tx), capi.P(tt), 1),
            _call(fus, "scatter", capi.P, capi.P(tx), 0, capi.P(ts), capi.P(tsrc))]
    storage = dtype in refs.STORAGE_ONLY  # its moves only: cumsum refused
    if storage:
        assert not _call(fus, "cumsum", capi.P, capi.P(tx), 1)
        assert fus.error() == _storage_refusal("cumsum", dtype, 0, "iS0{5}, iS1{6}"), fus.error()
        capi.LIB.cf_fusion_clear_error(fus.f)
    else:
        outs += [_call(fus, "cumsum", capi.P, capi.P(tx), 1), _call(fus, "cumsum", capi.P, capi.P(tx), 0)]
    assert all(outs), fus.error()
    for t in outs:
        fus.output(t)
    scat = x.copy()
    for r in range(2):
        for c in range(6):
            scat[si[r, c] % 5, c] = src[r, c]
    want = [np.take_along_axis(x, gi % 5, 0), np.take_along_axis(x, ti.astype(np.int64) % 6, 1), scat]
    dts = [dtype] * 3
    if not storage:
        d1 = scan_out_dtype("cumsum", dtype)
        c1, c0 = (V.array(scan_ref("cumsum", x, dtype, a)[0], d1).reshape(x.shape) for a in (1, 0))
        want, dts = want + [c1, c0], dts + [d1, d1]
    xs = [x, gi, ti, si, src]
    runs = [("evaluator", capi.evaluate(fus, xs, dts))]
    runs += [(bk, capi.execute(fus, xs, dts, capi.BACKEND_CUDA if bk == "cuda" else capi.BACKEND_HOST))
             for bk in BACKENDS]
    for where, (s, got) in runs:
        assert s == 0, f"{where}: {got}"
        for n, (g, w) in enumerate(zip(got, want)):
            assert np.array_equal(g, w), f"{where}: output {n}: {g} != {w}"
