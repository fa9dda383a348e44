"""Issue 22's sweep: every fusion kind (bench/sweep_kinds.py) x its shapes x float32,
bfloat16 and float16, each defined with the Python package and run by define and run on
torch CUDA tensors next to torch eager and torch.compile in the same process.

    python3 bench/sweep.py --out OUT [--iters N] [--kinds a,b] [--dtypes float32,...]
                           [--max-cases N] [--budget-s S] [--resume] [--static] [--max-elems N]
    python3 bench/sweep.py --table OUT      # merge every run kept in OUT: Markdown + plot
    python3 bench/sweep.py --check [--out OUT]   # the host backend on NumPy, tiny shapes
    python3 bench/sweep.py --list-shapes    # each family's shapes

Per case: inputs made (standard normal, seeded), cfuser's first execute checked against
torch eager (rtol by dtype, atol the same times the largest |reference|: a mismatch is a
WRONG case, counted, never hidden); then CUDA-event medians after warm-ups of cfuser,
eager, torch.compile (compiled once per kind and dtype with dynamic=True and reused across
shapes; --static compiles each shape afresh) and a device copy (a clone of the same bytes);
GB/s counts the inputs read once and the outputs written once. Kernels: cfuser's from its
fusion cache (the segments of the last call that launch; a reshape view launches none),
torch's by counting one call's CUDA kernels with torch.profiler (copies and sets not
counted). Flags: `fallback` where a segment ran the registry's last resort (one parallel
kernel per op), `serial` where a kernel ran one thread in all over more than one element.
A case that raises prints a FAIL line and the sweep goes on. One progress line per case
goes to stderr; each case is one JSON line appended to OUT/sweep-<time>-<pid>.jsonl as it
finishes (the table reads every OUT/sweep-*.jsonl), so a run stopped by --budget-s
(checked before each case) or killed keeps every finished case, and --resume skips the
cases OUT already holds (a case the run died in is a FAIL, "did not finish", and is not
run again). A contender whose one call takes over 0.2 s is timed once, not iters times.

--check runs the same harness on the host backend (NumPy arrays, a float64 NumPy
reference, wall-clock times, no torch): a few tiny shapes per kind in float32 and float16
(NumPy has no bfloat16), written to OUT/check.jsonl (started afresh; the table of a
sweep leaves it out), then the table and the plot of it. It is the ctest
`bench_sweep_check`. Exit status 1 when a case is WRONG or FAILs."""
import argparse
import json
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python"))
sys.path.insert(0, HERE)

import sweep_kinds as sk  # noqa: E402
import sweep_sides  # noqa: E402
import sweep_table  # noqa: E402
import torch_common  # noqa: E402

# The relative tolerance of an output by its dtype (a few units in its last place: the
# reference rounds its float result once, as cfuser does, but may sum in another order).
RTOL = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 4e-3}
CHECK_DTYPES = ("float32", "float16")
NO_BF16 = "bfloat16 skipped: NumPy has no bfloat16"
# A case's record written before it runs; its real record replaces it. Left alone, it says
# the run died inside the case, and --resume does not run that case again.
UNFINISHED = "did not finish: the run stopped inside this case (killed, timed out or crashed)"


def case_key(r):
    return (r["kind"], r["dtype"], shape_name(r["shape"]), r.get("compile_mode", ""))


def plan(args, check):
    """The cases to run, [(kind, dtype, shape)], in order: kind by kind, dtype by dtype."""
    kinds = sk.select(args.kinds.split(",") if args.kinds else None)
    dtypes = args.dtypes.split(",") if args.dtypes else list(sk.DTYPES)
    bad = [d for d in dtypes if d not in sk.DTYPES]
    if bad:
        raise ValueError(f"unknown dtype(s) {', '.join(bad)}; the dtypes are {', '.join(sk.DTYPES)}")
    if check and "bfloat16" in dtypes:
        print(NO_BF16)
        dtypes = [d for d in dtypes if d in CHECK_DTYPES]
    cases = []
    for kind in kinds:
        for dtype in dtypes:
            why = sk.skip_reason(kind, dtype)
            if why:
                print(f"skip {kind.name} {dtype}: {why}")
                continue
            shapes = sk.shapes(kind.family, args.max_elems, check)
            if check and dtype != "float32":
                shapes = shapes[-1:]  # each case compiles a host kernel: one shape is enough
            if args.shapes:  # the named shapes alone, of this kind's family
                shapes = [s for s in shapes if shape_name(s) in args.shapes]
            cases += [(kind, dtype, s) for s in sk.spread(shapes, args.max_cases)]
    unmatched = sorted(set(args.shapes or ()) - {shape_name(s) for _, _, s in cases})
    if unmatched:
        raise ValueError(f"no case of these kinds has the shape(s) {', '.join(unmatched)} (--list-shapes lists them)")
    return cases


def shape_name(shape):
    """A shape as the tables and --shapes write it: 8193x8191."""
    return "x".join(str(e) for e in shape)


def compare(side, got, want):
    """None when every output has the reference's shape and dtype and matches it within its
    dtype's tolerance (rtol; atol the same times the largest |reference|), else why."""
    got, want = list(got), sk.as_list(want)
    if len(got) != len(want):
        return f"{len(got)} outputs, the reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape) or side.dtype_name(g) != side.dtype_name(w):
            return (f"output {i}: {side.dtype_name(g)} {tuple(g.shape)}, the reference's "
                    f"{side.dtype_name(w)} {tuple(w.shape)}")
        rtol = RTOL[side.dtype_name(g)]
        g64, w64 = side.as64(g), side.as64(w)
        atol = rtol * max(side.max_abs(w64), 1e-30)
        bad = side.mismatches(g64, w64, rtol, atol)
        if bad:
            return f"output {i}: {bad[0]} of {bad[2]} elements off, max |diff| {bad[1]:.3g} (rtol {rtol:g}, atol {atol:.3g})"
    return None


def cfuser_facts(fd, numel):
    """(schedulers, kernels, flags) of fd's last execute."""
    names = fd.last_schedulers()
    launching = [i for i, n in enumerate(names) if n != "view"]
    flags = ["fallback"] if "fallback" in names else []
    for i in launching:
        p = fd.last_launch_params(i)
        if math.prod(p["grid"]) * math.prod(p["block"]) == 1 and numel > 1:
            flags.append("serial")
            break
    return names, len(launching), flags


def run_case(side, fds, kind, dtype, shape, iters):
    """One case's record (a dict); a step that raises makes it a FAIL, its message naming
    the step (inputs, cfuser, reference, timing) and the exception."""
    r = {"kind": kind.name, "dtype": dtype, "shape": list(shape), "device": side.device,
         "compile_mode": side.compile_mode, "iters": iters, "status": "ok"}
    step = ["inputs"]
    try:
        _measure(side, fds, kind, dtype, shape, iters, r, step)
    except Exception as e:  # noqa: BLE001: a case's failure is its line, not the sweep's
        why = f"{step[0]}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
        if r["status"] == "WRONG":  # a wrong result stays the case's news
            r["message"] += f"; then {why}"
        else:
            r.update(status="FAIL", message=why)
    return r


def _measure(side, fds, kind, dtype, shape, iters, r, step):
    ins = side.inputs(kind, dtype, shape)
    step[0] = "cfuser"
    fd = fds.get((kind.name, dtype)) or fds.setdefault((kind.name, dtype), kind.define(dtype))
    got = fd.execute(ins)
    side.sync()
    r["schedulers"], r["kernels_cfuser"], r["flags"] = cfuser_facts(fd, math.prod(shape))
    r["bytes"] = side.nbytes(ins) + side.nbytes(got)
    step[0] = "reference"
    why = compare(side, got, side.reference(kind, dtype, ins))
    if why:
        r.update(status="WRONG", message=why)
    del got
    step[0] = "timing"
    r["cfuser_us"] = side.time(lambda: fd.execute(ins), iters)
    r.update(side.contenders(kind, dtype, ins, iters, r["bytes"], lambda: fd.execute(ins)))


def line(r):
    """The case's stdout line."""
    what = f"{r['kind']} {r['dtype']} {'x'.join(map(str, r['shape']))}"
    if r["status"] == "FAIL":
        return f"FAIL {what}: {r['message']}"
    head = f"WRONG {what}: {r['message']}" if r["status"] == "WRONG" else ""
    if not r.get("cfuser_us"):
        return head
    parts = [f"cfuser {what} time_us={r['cfuser_us']:.1f} GB/s={torch_common.gbps(r['bytes'], r['cfuser_us']):.0f} "
             f"kernels={r['kernels_cfuser']} sched={'+'.join(r['schedulers'])}" +
             "".join(f" {f}" for f in r["flags"])]
    for label, key in (("eager", "eager"), ("compile", "compile")):
        us = r.get(f"{key}_us")
        if us:
            parts.append(f"{label} GB/s={torch_common.gbps(r['bytes'], us):.0f} kernels={r.get('kernels_' + key)}")
        elif r.get(f"{key}_error"):
            parts.append(f"{label} failed: {r[key + '_error']}")
    if r.get("compile_us"):
        parts.append(f"{r['compile_us'] / r['cfuser_us']:.2f}x compile")
    out = " | ".join(parts)
    return f"{head}\n{out}" if head else out


def append(path, record):
    with open(path, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


def sweep(side, cases, args, out_path, done):
    """Runs the cases (skipping those in done) within the budget; returns (wrong, failed)."""
    start, fds, counts, last = time.monotonic(), {}, {"WRONG": 0, "FAIL": 0}, None
    todo = [c for c in cases if (c[0].name, c[1], shape_name(c[2]), side.compile_mode) not in done]
    if len(todo) < len(cases):
        print(f"resume: {len(cases) - len(todo)} case(s) already in {args.out}")
    case_s = 0.0
    for i, (kind, dtype, shape) in enumerate(todo):
        elapsed = time.monotonic() - start
        reserve = 30.0 if (kind.name, dtype) != last else 2 * case_s  # a new kind compiles
        if args.budget_s and elapsed + reserve > args.budget_s:
            print(f"budget: stopped after {i} case(s), {elapsed:.0f} s; {len(todo) - i} left (run again with --resume)")
            break
        t0 = time.monotonic()
        append(out_path, {"kind": kind.name, "dtype": dtype, "shape": list(shape), "device": side.device,
                          "compile_mode": side.compile_mode, "status": "FAIL", "message": UNFINISHED})
        r = run_case(side, fds, kind, dtype, shape, args.iters)
        case_s, last = time.monotonic() - t0, (kind.name, dtype)
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        print(line(r), flush=True)
        append(out_path, r)  # replaces the unfinished record: the latest of a case wins
        ratio = f" {r['compile_us'] / r['cfuser_us']:.2f}x" if r.get("compile_us") and r.get("cfuser_us") else ""
        print(f"[{i + 1}/{len(todo)} {time.monotonic() - start:.0f}s] {kind.name} {dtype} "
              f"{'x'.join(map(str, shape))}: {r['status']}{ratio}", file=sys.stderr, flush=True)
        if side.release:
            side.release(r.get("bytes", 0))
    return counts["WRONG"], counts["FAIL"]


def list_shapes(args, families=None):
    """Prints each family's shapes (of the given families only, when named)."""
    for family, gen in sk.FAMILIES.items():
        if families is not None and family not in families:
            continue
        shapes = gen(args.max_elems)
        kinds = ",".join(k.name for k in sk.KINDS.values() if k.family == family)
        print(f"shapes {family} ({len(shapes)}; {kinds}): " + " ".join(shape_name(s) for s in shapes))


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="the directory the raw JSON lines are appended to (a run's own file)")
    p.add_argument("--iters", type=int, default=10, help="timed runs per contender (median), after warm-ups")
    p.add_argument("--kinds", help=f"comma-separated, of: {','.join(sk.KINDS)} (default all)")
    p.add_argument("--dtypes", help="comma-separated, of: float32,bfloat16,float16 (default all)")
    p.add_argument("--max-cases", type=int, help="at most N shapes per kind and dtype, spread over its list")
    p.add_argument("--shapes", type=lambda v: [x for x in v.split(",") if x],
                   help="comma-separated shapes as --list-shapes prints them (8193x8191,...): those alone")
    p.add_argument("--max-elems", type=int, default=1 << 28, help="the largest case's elements (default 2^28)")
    p.add_argument("--budget-s", type=float, help="stop cleanly before this many seconds have passed")
    p.add_argument("--resume", action="store_true", help="skip the cases already in --out")
    p.add_argument("--static", action="store_true", help="torch.compile each shape afresh (dynamic=False)")
    p.add_argument("--check", action="store_true", help="the host backend on NumPy, tiny shapes (no GPU)")
    p.add_argument("--table", metavar="OUT", help="print the Markdown table of every run in OUT, write the plot")
    p.add_argument("--list-shapes", action="store_true", help="print each family's shapes and exit")
    a = p.parse_args(argv)
    if a.iters < 1 or (a.max_cases is not None and a.max_cases < 1):
        p.error("--iters and --max-cases must be at least 1")
    if not (a.table or a.check or a.list_shapes or a.out):
        p.error("give --out DIR (or --table DIR, --check, --list-shapes)")
    return a


def main(argv=None):
    args = parse(argv)
    if args.list_shapes:
        list_shapes(args)
        return 0
    if args.table:
        return sweep_table.report(args.table)
    if args.check:
        side, args.iters = sweep_sides.NumpySide(), min(args.iters, 2)
        args.out = args.out or tempfile.mkdtemp(prefix="sweep_check_")
    else:
        side = sweep_sides.TorchSide(args.static)
    try:
        cases = plan(args, args.check)
    except ValueError as e:  # an unknown dtype or shape: said in one line
        print(f"sweep: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    done = {case_key(r) for r in sweep_table.read_records(args.out)} if args.resume else set()
    name = "check.jsonl" if args.check else f"sweep-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"
    out_path = os.path.join(args.out, name)
    if args.check:
        open(out_path, "w").close()  # the check's own file, started afresh: a check is not a sweep
    if not args.check:
        list_shapes(args, {kind.family for kind, _, _ in cases})
    print(f"sweep: {len(cases)} case(s) on {side.device} ({side.compile_mode}); raw lines: {out_path}")
    wrong, failed = sweep(side, cases, args, out_path, done)
    print(f"sweep: {wrong} WRONG, {failed} FAIL")
    if args.check:
        print()
        sweep_table.report(args.out, [out_path])
    return 1 if wrong or failed else 0


if __name__ == "__main__":
    sys.exit(main())
