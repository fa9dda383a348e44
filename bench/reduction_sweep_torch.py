"""PyTorch's figures for bench/reduction_sweep.c's cases, and the sweep's table.

    python3 bench/reduction_sweep_torch.py CFUSER_OUT [iterations] [--mean] [--dynamic]
    python3 bench/reduction_sweep_torch.py --table CFUSER_OUT... TORCH_OUT...   # no torch needed

The first form runs, for every case line of bench_reduction_sweep's output
(`cfuser <kind> <dtype> <rows>x<cols> ...`, so both halves always run the same cases),
torch eager (x.sum(dim), x.amax(dim)) and torch.compile of it (compiled afresh per shape
with dynamic=False, as a user with one fixed shape gets it; --dynamic compiles once per
kind and dtype, faster, for a quick look), each the median (or, with --mean, the mean) of
CUDA-event times after warm-ups, checked against eager; last the device's copy bandwidth
(a clone). Lines:
    torch eager <kind> <dtype> <shape> time_us=<t> GB/s=<g>
    torch.compile <kind> <dtype> <shape> time_us=<t> GB/s=<g>
    device copy (clone) <numel> time_us=<t> GB/s=<g>
The second form reads both programs' outputs and prints one Markdown table: GB/s of cfuser
(with its plan and kernel count), torch eager and torch.compile, cfuser over torch.compile
and over the copy bandwidth, then the geometric mean over torch.compile per kind and
overall, and the cases below 0.9x."""
import argparse
import math
import re
import sys

import torch_common

CASE = re.compile(r"^cfuser (row_sum|col_sum|row_max|col_max) (float32|bfloat16|float16) (\d+)x(\d+) (.*)$")
TORCH = re.compile(r"^(torch eager|torch\.compile) (\S+) (\S+) (\S+) (.*)$")
TIMED = re.compile(r"^time_us=([0-9.]+) GB/s=([0-9.]+)(?: kernels=(\d+) plan=(\S+))?")
PW = 1 << 28


def read_cases(path):
    """[(kind, dtype, rows, cols)] in the order bench_reduction_sweep ran them."""
    cases = []
    with open(path) as fh:
        for line in fh:
            m = CASE.match(line.rstrip("\n"))
            if m:
                cases.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return cases


def function(kind):
    dim = 1 if kind.startswith("row") else 0
    if kind.endswith("sum"):
        return lambda x: x.sum(dim)
    return lambda x: x.amax(dim)


def run(cases, iters, mean, dynamic):
    import torch

    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    stat = (lambda fn: sum(torch_common.event_times_us(fn, iters)) / iters) if mean else (
        lambda fn: torch_common.median_us(fn, iters))
    failures, compiled, x, last = 0, {}, None, None
    for kind, dtype, rows, cols in cases:
        if (dtype, rows, cols) != last:
            del x
            torch.cuda.empty_cache()
            x = (torch.rand(rows, cols, device="cuda") * 2 - 1).to(getattr(torch, dtype))
            last = (dtype, rows, cols)
        eager = function(kind)
        if dynamic:
            comp = compiled.setdefault((kind, dtype), torch.compile(function(kind), dynamic=True))
        else:
            torch._dynamo.reset()
            comp = torch.compile(function(kind), dynamic=False)
        what = f"{kind} {dtype} {rows}x{cols}"
        for label, f in (("torch eager", eager), ("torch.compile", comp)):
            failures += torch_common.time_one(label, what, f, (x,), eager, stat, atol=1e-2)
    del x
    torch.cuda.empty_cache()
    torch_common.print_copy(stat, PW)
    return 1 if failures else 0


# ---- the table --------------------------------------------------------------------------------


def read_results(paths):
    """{(kind, dtype, shape): {column: (gbps, kernels, plan, us) or message}} and the copies."""
    rows, copies = {}, {}
    for line in torch_common.result_lines(paths):
        m = torch_common.COPY.match(line)
        if m:
            copies[m.group(1)] = float(m.group(4))
            continue
        m = CASE.match(line)
        if m:
            key, label, rest = (m.group(1), m.group(2), f"{m.group(3)}x{m.group(4)}"), "cfuser", m.group(5)
        else:
            m = TORCH.match(line)
            if not m:
                continue
            key, label, rest = (m.group(2), m.group(3), m.group(4)), m.group(1), m.group(5)
        t = TIMED.match(rest)
        rows.setdefault(key, {})[label] = (float(t.group(2)), t.group(3), t.group(4), float(t.group(1))) if t else rest
    return rows, copies


def gb(v):
    return f"{v[0]:.0f}" if isinstance(v, tuple) else ("" if v is None else v.replace("|", "/")[:60])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(paths):
    rows, copies = read_results(paths)
    copy = copies.get("cuMemcpyDtoD") or copies.get("clone") or copies.get("host")
    print("| kind | dtype | shape | cfuser GB/s | plan | kernels | torch eager GB/s | torch.compile GB/s |"
          " vs compile | % of copy |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    ratios, slow = {}, []
    for (kind, dtype, shape), cols in rows.items():
        c, e, t = cols.get("cfuser"), cols.get("torch eager"), cols.get("torch.compile")
        # the same bytes move: the ratio of the times
        ratio = t[3] / c[3] if isinstance(c, tuple) and isinstance(t, tuple) and c[3] > 0 else None
        if ratio:
            ratios.setdefault(kind, []).append(ratio)
            if ratio < 0.9:
                slow.append(f"{kind} {dtype} {shape}: {ratio:.2f}x ({c[2]})")
        pct = f"{100 * c[0] / copy:.0f}%" if isinstance(c, tuple) and copy else ""
        plan = c[2] if isinstance(c, tuple) else ""
        kernels = c[1] if isinstance(c, tuple) else ""
        print(f"| {kind} | {dtype} | {shape} | {gb(c)} | {plan} | {kernels} | {gb(e)} | {gb(t)} | "
              f"{'' if ratio is None else f'{ratio:.2f}x'} | {pct} |")
    for which, v in copies.items():
        print(f"| device copy ({which}) | | | {v:.0f} | | | | | | |")
    print()
    every = [r for rs in ratios.values() for r in rs]
    for kind, rs in ratios.items():
        print(f"- geometric mean over torch.compile, {kind}: {geomean(rs):.2f}x ({len(rs)} cases)")
    print("- geometric mean over torch.compile, all: " +
          (f"{geomean(every):.2f}x ({len(every)} cases)" if every else "no case has both timings"))
    print(f"- below 0.9x torch.compile: {len(slow)}" + "".join(f"\n  - {s}" for s in slow))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="?", help="bench_reduction_sweep's output: the cases to run")
    p.add_argument("iters", nargs="?", type=int, default=20)
    p.add_argument("--mean", action="store_true", help="the mean of the timed runs, not the median")
    p.add_argument("--dynamic", action="store_true", help="one dynamic-shape compile per kind and dtype")
    p.add_argument("--table", nargs="+", metavar="OUTPUT", help="print the table of these outputs and exit")
    a = p.parse_args(argv)
    if a.table:
        return table(a.table)
    if not a.cases:
        p.error("give bench_reduction_sweep's output (the cases) or --table")
    return run(read_cases(a.cases), a.iters, a.mean, a.dynamic)


if __name__ == "__main__":
    sys.exit(main())
