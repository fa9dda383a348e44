"""tests/conformance/torch_indexed.py: torch_matrix's families of the indexed ops and the scans.

torch_matrix.py (its docstring is the matrix's spec) calls the families here with itself
as `tm` (torch, the dtype maps, the device and backend, to_torch, torch_wide, call_torch):
the rows the NumPy side covers in test_indexed and test_scans, compared with torch's op
on the same device, values and result dtypes, into the same difference report.

- compare_scans: cumsum, cumprod, cummax and cummin (torch.cummax's and torch.cummin's
  values) along both axes of each dtype's special values shuffled into [5, 7]
  (test_conformance.scan_input, the NumPy side's operand), one fusion per dtype; cumsum
  and cumprod of integers and bool are int64 in both, of complex the complex dtype. cummax
  and cummin of complex are refused by both (cfuser's exact message asserted; torch taking
  one is a difference).
- compare_indexed: gather, take_along_axis (torch.take_along_dim), index_select (1-D and
  0-d indices), select (a 0-d index tensor; torch.select's int), scatter and
  embedding_fwd (torch.nn.functional.embedding, 1-D and 2-D inputs) of every dtype,
  the 8-bit floats and complex ones included, reading the same [5, 7] tensor of
  specials, with int64 and int32 indices, negative ones too: moves, so bit-exact (a NaN
  is any NaN); then embedding_fwd with max_norm 1.5 and norm_type 2 and 1 of every
  floating weight (within the dtype's rounding: the norm and the scale round in their
  own order), asserted refused for the others (complex weights, which torch takes, are
  notes).

Semantics that differ by design, and how each cell is treated:
- Negative indices: cfuser counts them from the end of the axis (index + extent); torch's
  gather, take_along_dim, index_select, scatter and embedding refuse them (on CUDA a
  device-side assert), so torch is given index + extent. Out-of-range indices are not
  used: cfuser's evaluator refuses them (as torch does) and its kernels clamp them.
- An index dtype torch refuses (take_along_dim takes int64 alone, and older torch's gather
  and scatter) is a note, and torch's value of the int64 index is compared instead.
- Duplicate scatter positions are not used (torch's CUDA scatter writes one of them, not a
  fixed one): the indices are unique along the scattered axis.
- cumsum and cumprod of floating dtypes depend on the accumulation dtype: cfuser
  accumulates in float (double for double), torch's CPU in double for float32 and in float
  for 16-bit floats, torch's CUDA in the dtype itself (a float16 cumsum rounds every
  partial sum to float16). A cell whose value differs between sequential folds in the
  dtype, float and double (those at least as wide as the dtype) is not compared with
  torch: cfuser must equal its evaluator there, torch's value must be one of those folds
  (else a difference), and the cells are one note per (op, dtype). torch's CUDA scan of
  the innermost axis is a tree (another association order than cfuser's index order), so
  torch's cumsum and cumprod along the last axis are taken of a copy with that axis moved
  first, which its kernel folds in index order; every other cell is compared exactly.
  Complex cumsum is the same rule (torch's CPU folds complex64 in complex128, its CUDA in
  complex64). A complex cumprod cell is compared within the dtype's rounding, normwise
  (torch's products are a*c - b*d, its CPU's in complex128 and maybe with fma), where
  NumPy's fold (test_conformance.scan_ref) is finite; past that C99's Annex G (cfuser)
  and torch's formulas part (torch gives NaN where Annex G recovers an infinity): those
  cells are not compared with torch, cfuser must equal its evaluator there, and they are
  one note per (axis, dtype) listing where torch differs.
- cummax and cummin between -0.0 and +0.0: torch keeps the later of equal values, cfuser
  the sign cf_max (cf_min) gives; compared without the sign of zero, as the NumPy side
  does (test_scans), the cells where only that sign differs listed in a note.
- embedding's max_norm: cfuser does not write the weight (a fusion never writes its
  inputs), torch renormalizes it in place: torch is given a copy, only the results are
  compared; norm_type inf, -inf and 0 are not compared (torch's CUDA renorm kernel computes
  sum(x^p)^(1/p) for them, without torch.norm's special cases). cfuser computes the norm
  in float for 16-bit weights, as torch's CUDA kernel does; torch's CPU rounds it to the
  weight's dtype, so with --cpu a float16 or bfloat16 row whose norm overflows there
  (65536 in float16: torch's row becomes zeros) is not compared (a note).
- Both max_norm lookups (norm_type 2 and 1) are one fusion of one weight and one index, as
  a model's two embeddings of one table are (issue 28: such a fusion once failed to
  schedule, and each lookup had a fusion of its own)."""
import ctypes
import math

import numpy as np

import capi
import refs
import test_conformance as T
import values as V

P = capi.P
SHAPE = (5, 7)  # test_conformance.scan_input's shape, the operand of every family here


def _note(notes, line):
    """A note once (the two axes of a scan meet the same refusal)."""
    if line not in notes:
        notes.append(line)


def _counted(counts, op, n):
    counts[op] = counts.get(op, 0) + n


def _same(a, b, dt):
    return T._close(a, b, dt, True, False)


# ---- scans ---------------------------------------------------------------------------------------

# Accumulation dtypes at least as wide as each floating dtype torch folds in (see the docstring).
ACC_MODELS = {"float16": ("float16", "float32", "float64"), "bfloat16": ("bfloat16", "float32", "float64"),
              "float32": ("float32", "float64"), "float64": ("float64",),
              "complex64": ("complex64", "complex128"), "complex128": ("complex128",)}


def _fold(op, row, dt, acc_dt):
    """The scan of the wide values row, folded in index order from torch's start (0 or 1),
    each partial result rounded to acc_dt, each output to dt."""
    fold, start, _ = T.SCANS[op]
    acc, out = float(start) if op in ("cumsum", "cumprod") else None, []
    for v in row:
        acc = v if acc is None else V.store(fold(acc, v), acc_dt)
        out.append(V.store(acc, dt))
    return out


def _acc_models(op, x, dt, axis):
    """{acc dtype: the wide values of the scan, row-major} for every fold of ACC_MODELS[dt]."""
    w = np.array(V.widen(x, dt), dtype=object).reshape(x.shape)
    w = w if axis == 1 else w.T
    res = {}
    for acc in ACC_MODELS[dt]:
        r = np.array([_fold(op, list(row), dt, acc) for row in w], dtype=object)
        res[acc] = list((r if axis == 1 else r.T).reshape(-1))
    return res


def _torch_scan(tm, op, t, axis):
    """torch's scan of t along axis (cumsum and cumprod along the last axis: of a copy with
    that axis first, which torch's CUDA kernel folds in index order, not as a tree)."""
    torch = tm.torch
    if op in ("cummax", "cummin"):
        return getattr(torch, op)(t, axis).values
    if axis == t.dim() - 1:
        return getattr(torch, op)(t.movedim(axis, 0).contiguous(), 0).movedim(0, axis)
    return getattr(torch, op)(t, axis)


class Apart:
    """The scan cells compared apart from torch, per (kind, op, dtype): "accumulation" (a
    cumsum or cumprod cell whose folds in ACC_MODELS differ: not compared; cfuser must equal
    its evaluator, torch's value must be one of the folds), "annex g" (a complex cumprod
    cell whose NumPy fold is not finite: not compared; cfuser must equal its evaluator) and
    "zero sign" (a cummax or cummin cell where only the sign of a zero differs from
    torch's)."""

    def __init__(self):
        self.cells = {}

    def accumulation(self, what, dt, folds, have, ev, want, report):
        if not _same(have, ev, dt):
            report.append(f"{what}: cfuser {have!r}, its evaluator {ev!r} (a cell that depends on the accumulation)")
        if not any(_same(want, m, dt) for m in folds.values()):
            report.append(f"{what}: torch's {want!r} is none of the folds in {', '.join(folds)} "
                          f"({', '.join(repr(m) for m in folds.values())}): see ACC_MODELS in torch_indexed")
        self.cells.setdefault(("accumulation", what), []).append((have, want, _same(have, want, dt)))

    def annex_g(self, what, dt, have, ev, want, report):
        if not _same(have, ev, dt):
            report.append(f"{what}: cfuser {have!r}, its evaluator {ev!r} (a product past NumPy's finite values)")
        self.cells.setdefault(("annex g", what), []).append((have, want, _same(have, want, dt)))

    def zero_sign(self, what, have, want):
        self.cells.setdefault(("zero sign", what), []).append((have, want, False))

    def close(self, notes):
        for (kind, what), cells in self.cells.items():
            differ = [(h, w) for h, w, same in cells if not same]
            if kind == "zero sign":
                notes.append(f"{what}: {len(cells)} cells are a zero of the other sign than torch's (torch keeps the "
                             f"later of equal values; compared without the sign of zero) (cfuser, torch): {differ[:4]}")
            elif kind == "annex g":
                notes.append(f"{what}: {len(cells)} cells past NumPy's finite products (C99's Annex G; not compared, "
                             f"cfuser equals its evaluator), {len(differ)} differ from torch (cfuser, torch): "
                             f"{differ[:4]}")
            else:
                notes.append(f"{what}: {len(cells)} cells depend on the accumulation dtype (not compared; cfuser "
                             f"equals its evaluator), {len(differ)} differ from torch (cfuser, torch): {differ[:4]}")


def _scan_refusals(tm, dt, report):
    """cummax and cummin of complex dt refused with cfuser's message, and by torch."""
    x = T.scan_input(dt)
    name = capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode()
    for op in (op for op in T.SCANS if op not in T.COMPLEX_SCANS):
        fus = capi.Fusion()
        tx = fus.input_concrete(dt, x.shape)
        msg = f"{op}: T0 has dtype {name}, but {op} does not take complex tensors for T0_g_{name}[iS0{{5}}, iS1{{7}}]"
        if T._call(fus, op, P, P(tx), 1) or fus.error() != msg:
            report.append(f"{op} {dt}: expected cfuser's refusal '{msg}', got '{fus.error() or 'a tensor'}'")
        if tm.call_torch(lambda t: _torch_scan(tm, op, t, 1), tm.to_torch(x, dt))[0] is not None:
            report.append(f"{op} {dt}: torch takes it; cfuser refuses it as torch did")


def _compare_scan(tm, case, apart, counts, report, notes):
    """One scan (op, axis) of x (dt): cfuser's values g (the evaluator's e) against torch's."""
    (op, axis), (x, dt, out_dt), (g, e) = case
    what = f"{op} along {axis} of {dt}"
    want_t, why = tm.call_torch(lambda t: _torch_scan(tm, op, t, axis), tm.to_torch(x, dt))
    if want_t is None:
        _note(notes, f"{op} {dt}: torch refuses ({why}); cfuser takes it")
        return
    want = tm.torch_wide(want_t, out_dt, what, report)
    have, ev = V.widen(g, out_dt), V.widen(e, out_dt)
    cx_prod = V.is_complex(dt) and op == "cumprod"
    folds = _acc_models(op, x, dt, axis) if op in ("cumsum", "cumprod") and dt in ACC_MODELS and not cx_prod else {}
    np_fold = T.scan_ref(op, x, dt, axis)[0] if cx_prod else []
    bad = []
    for i, (h, w) in enumerate(zip(have, want)):
        if cx_prod and refs.annex_g_cell("mul", np_fold[i]):
            apart.annex_g(what, dt, h, ev[i], w, report)
            continue
        if cx_prod and not T._close(h, w, out_dt, False, False):
            bad.append((i, h, w))
            continue
        cell = {a: m[i] for a, m in folds.items()}
        if any(not _same(m, cell[dt], dt) for m in cell.values()):
            apart.accumulation(what, dt, cell, h, ev[i], w, report)
            continue
        if not T._close(h, w, out_dt, True, op in ("cummax", "cummin")):
            bad.append((i, h, w))
            continue
        if not _same(h, w, out_dt) and not cx_prod:
            apart.zero_sign(what, h, w)
        _counted(counts, op, 1)
    if bad:
        report.append(f"{what}: {len(bad)} of {len(want)} differ (index, cfuser, torch): {bad[:5]}")


def compare_scans(tm, dtypes, report, notes):
    """cumsum, cumprod, cummax and cummin of each dtype's specials along both axes, one
    fusion per dtype; cummax and cummin of complex asserted refused. Returns {op: cells
    compared}."""
    counts, apart = {}, Apart()
    for dt in dtypes:
        if V.is_complex(dt):
            _scan_refusals(tm, dt, report)
        x = T.scan_input(dt)
        fus = capi.Fusion()
        tx = fus.input_concrete(dt, x.shape)
        cases = [(op, axis) for op in T.SCANS for axis in (0, 1) if not V.is_complex(dt) or op in T.COMPLEX_SCANS]
        outs = [T._call(fus, op, P, P(tx), axis) for op, axis in cases]
        ran = tm.run_built(fus, outs, [x], f"scans of {dt}", report, True)
        for case, out_dt, g, e in zip(cases, *ran) if ran else []:
            _compare_scan(tm, (case, (x, dt, out_dt), (g, e)), apart, counts, report, notes)
    apart.close(notes)
    return counts


# ---- indexed ops ---------------------------------------------------------------------------------

def _index_inputs():
    """The index tensors (name -> array), negative indices included, in range of SHAPE;
    scatter's unique along the scattered axis."""
    rng = np.random.default_rng(7)
    r, c = SHAPE
    return {
        "g0": rng.integers(-r, r, (3, c)).astype(np.int64), "g1": rng.integers(-c, c, (r, 4)).astype(np.int32),
        "t0": rng.integers(-r, r, (4, c)).astype(np.int64), "t1": rng.integers(-c, c, (r, 3)).astype(np.int32),
        "s0": np.array([4, -1, 0, 2, -5, 2], np.int64), "s1": np.array([6, -7, 3, -1, 0], np.int32),
        "z": np.array(-4, np.int64), "sel0": np.array(-2, np.int64), "sel1": np.array(3, np.int32),
        "sc0": np.array([[4, 0, -1, 2, 1, 3, -5], [1, 3, 0, 4, 2, 0, 3]], np.int64),
        "sc1": np.array([[0, 6, -4], [1, -1, 2], [-7, 3, 5], [2, 4, -2], [6, 0, 1]], np.int32),
        "e2": rng.integers(-r, r, (2, 3)).astype(np.int64), "e1": np.array([3, -1, 0, 1, 4, -5, 2], np.int32),
    }


# Each indexed case: (name, cfuser's op and its arguments by input name (ints: dims), torch's
# function of (x, the named inputs as torch tensors, indices non-negative), the index inputs it
# reads (given as int64 where torch refuses int32)).
def _cases(tm):
    torch, F = tm.torch, tm.F
    return [
        ("gather", ("gather", "x", 0, "g0"), lambda x, i: torch.gather(x, 0, i["g0"]), ("g0",)),
        ("gather", ("gather", "x", 1, "g1"), lambda x, i: torch.gather(x, 1, i["g1"]), ("g1",)),
        ("take_along_axis", ("take_along_axis", "x", "t0", 0),
         lambda x, i: torch.take_along_dim(x, i["t0"], 0), ("t0",)),
        ("take_along_axis", ("take_along_axis", "x", "t1", 1),
         lambda x, i: torch.take_along_dim(x, i["t1"], 1), ("t1",)),
        ("index_select", ("index_select", "x", 0, "s0"), lambda x, i: torch.index_select(x, 0, i["s0"]), ("s0",)),
        ("index_select", ("index_select", "x", 1, "s1"), lambda x, i: torch.index_select(x, 1, i["s1"]), ("s1",)),
        ("index_select", ("index_select", "x", 1, "z"), lambda x, i: torch.index_select(x, 1, i["z"]), ("z",)),
        ("select", ("select", "x", 0, "sel0"), lambda x, i: torch.select(x, 0, int(i["sel0"])), ()),
        ("select", ("select", "x", 1, "sel1"), lambda x, i: torch.select(x, 1, int(i["sel1"])), ()),
        ("scatter", ("scatter", "x", 0, "sc0", "src0"),
         lambda x, i: torch.scatter(x, 0, i["sc0"], i["src0"]), ("sc0",)),
        ("scatter", ("scatter", "x", 1, "sc1", "src1"),
         lambda x, i: torch.scatter(x, 1, i["sc1"], i["src1"]), ("sc1",)),
        ("embedding_fwd", ("embedding_fwd", "e2", "x", None, None, None, None, None),
         lambda x, i: F.embedding(i["e2"], x), ("e2",)),
        ("embedding_fwd", ("embedding_fwd", "e1", "x", None, None, None, None, None),
         lambda x, i: F.embedding(i["e1"], x), ("e1",)),
    ]


def _build_indexed(dt, cases, x, idx):
    """One fusion of every case over x (dt) and the index inputs: (fusion, inputs, outputs)."""
    fus = capi.Fusion()
    arrays = {"x": x, **idx, "src0": x[::-1].copy()[:2], "src1": x[:, ::-1].copy()[:, :3]}
    handles = {}
    for name, a in arrays.items():
        d = dt if name in ("x", "src0", "src1") else "int64" if a.dtype == np.int64 else "int32"
        handles[name] = fus.input_concrete(d, a.shape)
    outs = []
    for _, (op, *args), _, _ in cases:
        cargs = [P(handles[a]) if isinstance(a, str) else None if a is None else a for a in args]
        outs.append(T._call(fus, op, P, *cargs))
    return fus, arrays, outs


# The axis (of SHAPE) each index input counts along: torch is given index + extent for a negative one.
INDEX_AXIS = {"g0": 0, "t0": 0, "s0": 0, "sc0": 0, "e2": 0, "e1": 0, "sel0": 0,
              "g1": 1, "t1": 1, "s1": 1, "sc1": 1, "z": 1, "sel1": 1}


def _torch_inputs(tm, dt, arrays):
    """The named inputs as torch tensors on the device, indices made non-negative."""
    t = {}
    for name, a in arrays.items():
        if name in INDEX_AXIS:
            t[name] = tm.torch.from_numpy(np.where(a < 0, a + SHAPE[INDEX_AXIS[name]], a)).to(tm.DEVICE)
        else:
            t[name] = tm.to_torch(a, dt)
    return t


def _torch_value(tm, fn, xt, ti, reads, what, notes):
    """torch's value of fn, retried with int64 indices where torch refuses an int32 one (a note)."""
    r, why = tm.call_torch(fn, xt, ti)
    if r is not None or not any(ti[n].dtype == tm.torch.int32 for n in reads):
        return r, why
    wide = dict(ti, **{n: ti[n].long() for n in reads})
    r64, _ = tm.call_torch(fn, xt, wide)
    if r64 is not None:
        _note(notes, f"{what}: torch refuses an int32 index ({why}); compared with torch's value of the int64 one")
    return r64, why


def _compare_moves(tm, dt, cases, got, xs, counts, report, notes):
    """Every case's result against torch's, bit-exact."""
    ti = _torch_inputs(tm, dt, xs)
    xt = ti["x"]
    for (name, (op, *args), fn, reads), g in zip(cases, got):
        call = f"{name}({', '.join(str(a) for a in args if a is not None)})"
        what = f"{call} {dt}"
        want_t, why = _torch_value(tm, fn, xt, ti, reads, call, notes)
        if want_t is None:
            notes.append(f"{what}: torch refuses ({why}); cfuser takes it")
            continue
        if tuple(want_t.shape) != g.shape:
            report.append(f"{what}: cfuser's shape {g.shape}, torch's {tuple(want_t.shape)}")
            continue
        want, have = tm.torch_wide(want_t, dt, what, report), V.widen(g, dt)
        bad = [(i, h, w) for i, (h, w) in enumerate(zip(have, want)) if not _same(h, w, dt)]
        if bad:
            report.append(f"{what}: {len(bad)} of {len(want)} differ (index, cfuser, torch): {bad[:5]}")
        _counted(counts, name, len(want) - len(bad))


NORM_TYPES = (None, 1.0)  # embedding_fwd's norm_type for max_norm (None: not given, 2)


def _renorm_fusion(dt, shapes):
    """embedding_fwd(index, weight, max_norm=1.5, norm_type=p) for each p of NORM_TYPES, in
    one fusion of one weight and one index: (fusion, results; None where refused)."""
    fus = capi.Fusion()
    ti, tw = fus.input_concrete("int32", shapes[0]), fus.input_concrete(dt, shapes[1])
    f64 = ctypes.c_int(capi.DTYPES["float64"])
    mn = T._call(fus, "const", P, f64, ctypes.c_double(1.5))
    outs = []
    for p in NORM_TYPES:
        pt = T._call(fus, "const", P, f64, ctypes.c_double(p)) if p is not None else None
        outs.append(T._call(fus, "embedding_fwd", P, P(ti), P(tw), None, P(mn), P(pt) if pt else None, None, None))
    return fus, outs


def _cpu_norm_overflows(tm, dt, x, e1, p):
    """The output rows of the renorm whose norm (p: 1 or 2) is finite in float but not in dt,
    on torch's CPU: there torch computes the norm as a tensor of the weight's dtype (65536
    is inf in float16: the row becomes zeros), its CUDA kernel in float, as cfuser does."""
    if tm.DEVICE != "cpu" or dt not in ("float16", "bfloat16"):
        return set()
    w = V.widen(x, dt)
    rows = set()
    for k, r in enumerate(int(i) % SHAPE[0] for i in e1):
        row = w[r * SHAPE[1]:(r + 1) * SHAPE[1]]
        norm = sum(abs(v) ** p for v in row) ** (1 / p)
        if math.isfinite(V.store(norm, "float32")) and not math.isfinite(V.store(norm, dt)):
            rows.add(k)
    return rows


def _renorm_refused(dt, fus, outs, whats, wants, report, notes):
    """A weight that is not floating: cfuser refuses max_norm (the message asserted); where
    torch takes a norm_type, a note."""
    name = capi.LIB.cf_dtype_name(capi.DTYPES[dt]).decode()
    want = (f"embedding_fwd: max_norm needs a floating-point weight; T1 has dtype {name} for "
            f"T1_g_{name}[iS1{{5}}, iS2{{7}}]")
    if any(outs) or fus.error() != want:
        report.append(f"embedding_fwd(e1, x, max_norm=1.5) {dt}: expected cfuser's refusal '{want}', got "
                      f"'{fus.error() or 'a tensor'}'")
    for what, (want_t, _) in zip(whats, wants):
        if want_t is not None:
            notes.append(f"{what}: torch takes it; cfuser refuses it (max_norm needs a floating weight)")


def _renorm_compared(tm, dt, x, e1, p, what, want, have, counts, report, notes):
    """One norm_type's result `have` against torch's (want, why), within the dtype's rounding."""
    want_t, why = want
    if want_t is None:
        notes.append(f"{what}: torch refuses ({why}); cfuser takes it")
        return
    skip = _cpu_norm_overflows(tm, dt, x, e1, p or 2.0)
    if skip:
        notes.append(f"{what}: rows {sorted(skip)} not compared on torch's CPU (its norm in {dt} overflows)")
    want_w, have_w = tm.torch_wide(want_t, dt, what, report), V.widen(have, dt)
    cells = [i for i in range(len(want_w)) if i // SHAPE[1] not in skip]
    bad = [(i, have_w[i], want_w[i]) for i in cells if not T._close(have_w[i], want_w[i], dt, False, False)]
    if bad:
        report.append(f"{what}: {len(bad)} of {len(cells)} differ (index, cfuser, torch): {bad[:5]}")
    _counted(counts, "embedding_fwd max_norm", len(cells) - len(bad))


def _renorm(tm, dt, x, e1, counts, report, notes):
    """embedding_fwd with max_norm 1.5 and norm_type 2 (not given) and 1 of weight x, one
    fusion for both: a floating weight against torch, others refused."""
    tw, ti = tm.to_torch(x, dt), _torch_inputs(tm, dt, {"e1": e1})
    fus, outs = _renorm_fusion(dt, (e1.shape, x.shape))
    whats = [f"embedding_fwd(e1, x, max_norm=1.5, norm_type={p or 2.0}) {dt}" for p in NORM_TYPES]
    wants = [_torch_value(tm, lambda w, i, p=p: tm.F.embedding(i["e1"], w.clone(), max_norm=1.5, norm_type=p or 2.0),
                          tw, ti, ("e1",), what, notes) for p, what in zip(NORM_TYPES, whats)]
    if not V.is_float(dt):
        _renorm_refused(dt, fus, outs, whats, wants, report, notes)
        return
    ran = tm.run_built(fus, outs, [e1, x], f"embedding_fwd(e1, x, max_norm=1.5, norm_type=2 and 1) {dt}", report,
                       False)
    for p, what, want, have in zip(NORM_TYPES, whats, wants, ran[1] if ran else []):
        _renorm_compared(tm, dt, x, e1, p, what, want, have, counts, report, notes)


def compare_indexed(tm, dtypes, report, notes):
    """gather, take_along_axis, index_select, select, scatter and embedding_fwd of every
    dtype's specials against torch (one fusion per dtype), then embedding_fwd's max_norm.
    Returns {op: cells compared}."""
    counts, idx = {}, _index_inputs()
    cases = _cases(tm)
    for dt in dtypes:
        x = T.scan_input(dt)
        fus, xs, outs = _build_indexed(dt, cases, x, idx)
        ran = tm.run_built(fus, outs, list(xs.values()), f"indexed ops of {dt}", report, False)
        if ran:
            _compare_moves(tm, dt, cases, ran[1], xs, counts, report, notes)
        _renorm(tm, dt, x, idx["e1"], counts, report, notes)
    return counts
