"""bench/sweep.py, issue 22's sweep harness, without a GPU: its shape families, its check
of results (a wrong one is a WRONG line, a raising one a FAIL line, and the sweep goes on),
its budget and resume, and the table and plot it makes of the raw lines. The whole host
check (every kind) is the ctest bench_sweep_check."""
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "bench")
sys.path.insert(0, BENCH)
import sweep  # noqa: E402
import sweep_kinds as sk  # noqa: E402
import sweep_sides  # noqa: E402
import sweep_table  # noqa: E402

CAP = 1 << 28
M20 = 1 << 20


def test_every_family_has_40_deterministic_shapes_within_the_cap():
    for family, gen in sk.FAMILIES.items():
        shapes = gen(CAP)
        assert len(shapes) >= 40, family
        assert shapes == gen(CAP), family
        assert len(set(shapes)) == len(shapes), family
        assert all(math.prod(s) <= CAP for s in shapes), family
    assert {k.family for k in sk.KINDS.values()} == set(sk.FAMILIES)


def test_the_shapes_cover_the_issue_s_extremes():
    matrix = sk.matrix_shapes(CAP)
    for s in [(1, M20), (M20, 1), (M20, 64), (M20, 100), (8, M20), (100, 1000000), (1, 1), (131071, 1),
              (1021, 1021), (2048, 128256)]:
        assert s in matrix, s
    lengths = {c for _, c in sk.rows_shapes(CAP)}
    assert set(sk.VOCAB + sk.HIDDEN + sk.PRIMES[1:]) <= lengths
    assert (M20, 64) in sk.channels_last_shapes(CAP) and (802816, 64) in sk.channels_last_shapes(CAP)
    assert (256, 64, 3136) in sk.channels_first_shapes(CAP)
    assert max(math.prod(s) for s in sk.matrix_shapes(1 << 20)) == 1 << 20  # --max-elems caps


def test_spread_takes_evenly():
    assert sk.spread([(i,) for i in range(10)], 3) == [(0,), (3,), (6,)]
    assert sk.spread([(1,), (2,)], 5) == [(1,), (2,)]


def test_the_plan_skips_float32_casts_and_numpy_s_bfloat16(capsys):
    args = sweep.parse(["--check", "--kinds", "cast_up,row_sum", "--max-cases", "1"])
    cases = sweep.plan(args, True)
    out = capsys.readouterr().out.splitlines()
    assert out == ["bfloat16 skipped: NumPy has no bfloat16",
                   "skip cast_up float32: a cast of float32 to float32 moves nothing new (the casts run in "
                   "bfloat16 and float16)"]
    assert [(k.name, d, s) for k, d, s in cases] == [("row_sum", "float32", (1, 1)), ("row_sum", "float16", (33, 7)),
                                                   ("cast_up", "float16", (33, 7))]


def test_the_plan_takes_the_named_shapes_alone_and_names_an_unknown_one():
    args = sweep.parse(["--out", "o", "--kinds", "rmsnorm,row_sum", "--dtypes", "bfloat16",
                        "--shapes", "8193x8191,1021x1021,8193x8191"])
    cases = sweep.plan(args, False)
    assert [(k.name, d, s) for k, d, s in cases] == [("row_sum", "bfloat16", (1021, 1021)),
                                                   ("rmsnorm", "bfloat16", (8193, 8191))]
    args = sweep.parse(["--out", "o", "--kinds", "rmsnorm", "--shapes", "8193x8191,9x9"])
    with pytest.raises(ValueError, match=r"^no case of these kinds has the shape\(s\) 9x9 \(--list-shapes lists them\)$"):
        sweep.plan(args, False)


def test_compare_names_the_output_and_the_difference():
    import numpy as np

    side = sweep_sides.NumpySide()
    want = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert sweep.compare(side, [want.copy()], want) is None
    assert sweep.compare(side, [want + np.float32(1e-5)], want) is None  # within float32's 1e-4
    assert sweep.compare(side, [want + np.array([0, 0, 1], np.float32)], want) == \
        "output 0: 1 of 3 elements off, max |diff| 1 (rtol 0.0001, atol 0.0003)"
    assert sweep.compare(side, [want.astype(np.float16)], want) == \
        "output 0: float16 (3,), the reference's float32 (3,)"
    assert sweep.compare(side, [want, want], want) == "2 outputs, the reference has 1"


def _records(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh]


def test_a_wrong_case_and_a_failing_one_are_counted_and_the_sweep_goes_on(tmp_path, capsys, monkeypatch):
    row_sum = sk.KINDS["row_sum"]
    monkeypatch.setitem(sk.KINDS, "row_sum", row_sum._replace(numpy=lambda x: x.sum(1) + 1))

    def boom(dtype):
        raise RuntimeError("boom")

    monkeypatch.setitem(sk.KINDS, "col_sum", sk.KINDS["col_sum"]._replace(define=boom))
    argv = ["--check", "--kinds", "row_sum,col_sum", "--dtypes", "float32", "--max-cases", "1", "--out", str(tmp_path)]
    assert sweep.main(argv) == 1
    out = capsys.readouterr().out
    assert "WRONG row_sum float32 1x1: output 0: 1 of 1 elements off, max |diff| 1 (rtol 0.0001, atol" in out
    assert "FAIL col_sum float32 1x1: cfuser: RuntimeError: boom" in out
    assert "sweep: 1 WRONG, 1 FAIL" in out
    assert "- WRONG: 1\n  - row_sum float32 1x1: output 0: 1 of 1 elements off" in out
    assert "- FAIL: 1\n  - col_sum float32 1x1: cfuser: RuntimeError: boom" in out
    raw = _records(tmp_path / "check.jsonl")  # each case: its unfinished mark, then its record
    assert [(r["kind"], r["status"]) for r in raw] == [("row_sum", "FAIL"), ("row_sum", "WRONG"), ("col_sum", "FAIL"),
                                                       ("col_sum", "FAIL")]
    recs = sweep_table.read_records(str(tmp_path), [str(tmp_path / "check.jsonl")])
    assert [(r["kind"], r["status"], r.get("schedulers"), r["message"][:14]) for r in recs] == [
        ("row_sum", "WRONG", ["reduction"], "output 0: 1 of"), ("col_sum", "FAIL", None, "cfuser: Runtim")]


def test_the_budget_stops_cleanly_and_resume_skips_what_is_done(tmp_path, capsys):
    base = ["--kinds", "row_sum", "--dtypes", "float32", "--max-cases", "1", "--out", str(tmp_path)]
    side = sweep_sides.NumpySide()
    args = sweep.parse(base + ["--budget-s", "0.001"])
    assert sweep.sweep(side, sweep.plan(args, True), args, str(tmp_path / "sweep-1.jsonl"), set()) == (0, 0)
    assert "budget: stopped after 0 case(s)" in capsys.readouterr().out
    args = sweep.parse(base)
    assert sweep.sweep(side, sweep.plan(args, True), args, str(tmp_path / "sweep-2.jsonl"), set()) == (0, 0)
    done = {sweep.case_key(r) for r in sweep_table.read_records(str(tmp_path))}
    assert done == {("row_sum", "float32", "1x1", "host")}
    capsys.readouterr()
    sweep.sweep(side, sweep.plan(args, True), args, str(tmp_path / "sweep-3.jsonl"), done)
    assert f"resume: 1 case(s) already in {tmp_path}" in capsys.readouterr().out
    assert not (tmp_path / "sweep-3.jsonl").exists()


def test_a_case_the_run_dies_in_is_a_fail_and_not_run_again(tmp_path, monkeypatch):
    def die(*a):
        raise SystemExit("killed")

    monkeypatch.setattr(sweep, "run_case", die)
    args = sweep.parse(["--kinds", "row_sum", "--dtypes", "float32", "--max-cases", "1", "--out", str(tmp_path)])
    try:
        sweep.sweep(sweep_sides.NumpySide(), sweep.plan(args, True), args, str(tmp_path / "sweep-1.jsonl"), set())
    except SystemExit:
        pass
    [r] = sweep_table.read_records(str(tmp_path))
    assert (r["kind"], r["status"], r["message"]) == ("row_sum", "FAIL", sweep.UNFINISHED)
    assert sweep.case_key(r) == ("row_sum", "float32", "1x1", "host")


def _rec(kind, dtype, shape, c, e, t, kernels, status="ok", **kw):
    r = {"kind": kind, "dtype": dtype, "shape": shape, "status": status, "bytes": 4000000, "cfuser_us": c,
         "eager_us": e, "compile_us": t, "copy_us": 1.0, "copy_bytes": 4000000, "kernels_cfuser": kernels[0],
         "kernels_eager": kernels[1], "kernels_compile": kernels[2], "schedulers": ["reduction"], "flags": [],
         "device": "GPU", "compile_mode": "dynamic"}
    r.update(kw)
    return r


def test_the_table_merges_runs_and_lists_what_the_issue_asks(tmp_path, capsys):
    first = [_rec("row_sum", "float32", [4, 250], 2.0, 4.0, 4.0, (1, 1, 1)),
             _rec("softmax", "bfloat16", [4, 250], 4.0, 2.0, 2.0, (3, 2, 1),
                  schedulers=["pointwise", "reduction", "reduction"], flags=["fallback"], launches_cfuser=3)]
    second = [_rec("row_sum", "float32", [4, 250], 1.0, 4.0, 4.0, (1, 1, 1), launches_cfuser=2),  # replaces the first
              _rec("col_sum", "float16", [250, 4], 1.0, 1.0, 1.0, (1, 1, 1), status="WRONG", message="output 0: off"),
              {"kind": "var_mean", "dtype": "float32", "shape": [1, 1], "status": "FAIL", "message": "cfuser: X: y",
               "compile_mode": "dynamic", "device": "GPU"}]
    for name, recs in (("sweep-a.jsonl", first), ("sweep-b.jsonl", second)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "check.jsonl").write_text(json.dumps(_rec("swiglu", "float32", [1, 1], 1, 1, 1, (1, 1, 1))) + "\n")
    assert sweep_table.report(str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert out.startswith("sweep of 4 cases on GPU (torch.compile: dynamic)\n")
    assert "| row_sum | float32 | 4x250 | 4000 | 1000 | 1000 | 4.00x | 1/1/1 (2 launched) | 4000 | reduction |  |" in out
    assert ("| softmax | bfloat16 | 4x250 | 1000 | 2000 | 2000 | 0.50x | 3/2/1 | 4000 | pointwise+reduction x2 | "
            "fallback |") in out
    assert "| col_sum | float16 | 250x4 | 4000 | 4000 | 4000 |  | 1/1/1 | 4000 | reduction | WRONG |" in out
    assert "| var_mean | float32 | 1x1 |  |  |  |  | -/-/- |  |  | FAIL: cfuser: X: y |" in out
    assert "swiglu" not in out  # the check's file is not a sweep's
    assert "- geometric mean over torch.compile, all: 1.41x (2 cases)" in out
    assert "| row_sum | 4.00x |  |  |" in out and "| softmax |  | 0.50x |  |" in out
    assert "- below 0.9x torch.compile: 1\n  - softmax bfloat16 4x250: 0.50x (pointwise+reduction x2)" in out
    assert "- more kernels than torch.compile: 1\n  - softmax bfloat16 4x250: 3 against 1" in out
    assert "- fallback or serial kernels: 1\n  - softmax bfloat16 4x250: fallback" in out
    assert "- WRONG: 1\n  - col_sum float16 250x4: output 0: off (reduction)" in out
    assert "- FAIL: 1\n  - var_mean float32 1x1: cfuser: X: y ()" in out
    plot = out.rsplit("plot: ", 1)[1].strip()
    if plot.endswith(".svg"):
        root = ET.parse(plot).getroot()
        titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
        assert "cfuser: 4000 GB/s at 4000000 B" in titles and "torch.compile: 1000 GB/s at 4000000 B" in titles
        assert "device copy: 4000 GB/s at 4000000 B" in titles
    else:
        assert plot.endswith(".png") and os.path.getsize(plot) > 0


def test_the_gpu_sweep_without_torch_or_cuda_says_so(tmp_path):
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the sweep would run")
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path), "--kinds", "row_sum"])
    assert "the sweep needs torch with CUDA" in str(info.value) or "torch sees no CUDA device" in str(info.value)
