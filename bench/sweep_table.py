"""The report of bench/sweep.py: every run kept in an OUT directory (its JSON lines, one a
case; the latest line of a case wins, so a rerun replaces it) merged into one Markdown
table, a summary and a plot.

Table: kind, dtype, shape, GB/s of cfuser, torch eager and torch.compile, cfuser over
torch.compile (the ratio of times: the same bytes move), kernels cfuser / eager / compile
(and the cfuser kernels the profiler saw launched, where that differs from its cache's count),
the copy's GB/s for the same bytes, cfuser's schedulers and the case's flags (WRONG, FAIL,
fallback, serial). Summary: the geometric mean over torch.compile overall, per kind, per
dtype and per kind x dtype (cases both ran correctly), then every case below 0.9x, with
more kernels than torch.compile, on the fallback or serial, WRONG, or FAILed.
Plot: achieved GB/s against the bytes moved, one panel per kind, cfuser, torch.compile and
the device copy of the same bytes: OUT/sweep.png with matplotlib when it imports, else
OUT/sweep.svg, written here (no dependency).
Key decision: a WRONG case has no ratio in the means (a fast wrong kernel is no speed-up);
it is listed instead."""
import glob
import json
import math
import os
from xml.sax.saxutils import escape

import sweep_kinds as sk
import torch_common

SLOW = 0.9


def read_records(out_dir, paths=None):
    """The latest record of each case in out_dir's sweep-*.jsonl (in name order: by time),
    or in the given paths."""
    latest = {}
    for path in paths or sorted(glob.glob(os.path.join(out_dir, "sweep-*.jsonl"))):
        with open(path) as fh:
            for text in fh:
                if text.strip():
                    r = json.loads(text)
                    latest[(r["kind"], r["dtype"], tuple(r["shape"]), r.get("compile_mode", ""))] = r
    order = {k: i for i, k in enumerate(sk.KINDS)}
    dorder = {d: i for i, d in enumerate(sk.DTYPES)}
    return sorted(latest.values(), key=lambda r: (order.get(r["kind"], 99), dorder.get(r["dtype"], 9),
                                                  math.prod(r["shape"]), r["shape"]))


def shape_of(r):
    return "x".join(map(str, r["shape"]))


def gbps(r, key):
    us = r.get(key + "_us")
    nbytes = r.get("copy_bytes") if key == "copy" else r.get("bytes")
    return torch_common.gbps(nbytes, us) if us and nbytes else None


def ratio(r):
    """cfuser over torch.compile (compile's time over cfuser's), for a correct case."""
    c, t = r.get("cfuser_us"), r.get("compile_us")
    return t / c if r["status"] == "ok" and c and t else None


def runs(names):
    """Schedulers, a run of one written once with its count: pointwise+reduction x2."""
    out = []
    for n in names or []:
        if out and out[-1][0] == n:
            out[-1][1] += 1
        else:
            out.append([n, 1])
    return "+".join(n if k == 1 else f"{n} x{k}" for n, k in out)


def flags(r):
    f = list(r.get("flags", []))
    if r["status"] != "ok":
        f.insert(0, r["status"] + (f": {r.get('message', '')}" if r["status"] == "FAIL" else ""))
    for key in ("eager", "compile"):
        if r.get(key + "_error"):
            f.append(f"{key} failed: {r[key + '_error']}")
    return "; ".join(f).replace("|", "/")[:160]


def _num(v, fmt="{:.0f}"):
    return "" if v is None else fmt.format(v)


def table_lines(records):
    yield ("| kind | dtype | shape | cfuser GB/s | eager GB/s | compile GB/s | vs compile | kernels c/e/t |"
           " copy GB/s | schedulers | flags |")
    yield "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |"
    for r in records:
        k = "/".join(_num(r.get(f"kernels_{x}"), "{}") or "-" for x in ("cfuser", "eager", "compile"))
        if r.get("launches_cfuser") not in (None, r.get("kernels_cfuser")):
            k += f" ({r['launches_cfuser']} launched)"  # the profiler saw another count than the cache's
        yield (f"| {r['kind']} | {r['dtype']} | {shape_of(r)} | {_num(gbps(r, 'cfuser'))} | {_num(gbps(r, 'eager'))} | "
               f"{_num(gbps(r, 'compile'))} | {_num(ratio(r), '{:.2f}x')} | {k} | {_num(gbps(r, 'copy'))} | "
               f"{runs(r.get('schedulers'))} | {flags(r)} |")


def _mean_line(label, rs):
    return f"- {label}: {torch_common.geomean(rs):.2f}x ({len(rs)} cases)" if rs else f"- {label}: no case"


def kind_dtype_lines(records, rated):
    """The geometric mean over torch.compile of each kind in each dtype, as a table."""
    present = {r["dtype"] for r in records}
    dtypes = [d for d in sk.DTYPES if d in present] + sorted(present - set(sk.DTYPES))
    yield ""
    yield "| kind | " + " | ".join(dtypes) + " |"
    yield "| --- |" + " ---: |" * len(dtypes)
    for kind in dict.fromkeys(r["kind"] for r in records):
        cells = [[x for r, x in rated if r["kind"] == kind and r["dtype"] == d] for d in dtypes]
        yield f"| {kind} | " + " | ".join(f"{torch_common.geomean(c):.2f}x" if c else "" for c in cells) + " |"


def summary_lines(records):
    rated = [(r, ratio(r)) for r in records if ratio(r)]
    yield _mean_line("geometric mean over torch.compile, all", [x for _, x in rated])
    for what in ("kind", "dtype") if rated else ():
        for v in dict.fromkeys(r[what] for r in records):
            yield _mean_line(f"{what} {v}", [x for r, x in rated if r[what] == v])
    if rated:
        yield from kind_dtype_lines(records, rated)
    yield ""
    lists = [
        (f"below {SLOW}x torch.compile", [(r, f"{x:.2f}x") for r, x in rated if x < SLOW]),
        ("more kernels than torch.compile",
         [(r, f"{r['kernels_cfuser']} against {r['kernels_compile']}") for r in records
          if r.get("kernels_compile") is not None and r.get("kernels_cfuser", 0) > r["kernels_compile"]]),
        ("fallback or serial kernels", [(r, " ".join(r["flags"])) for r in records if r.get("flags")]),
        ("WRONG", [(r, r.get("message", "")) for r in records if r["status"] == "WRONG"]),
        ("FAIL", [(r, r.get("message", "")) for r in records if r["status"] == "FAIL"]),
    ]
    for title, items in lists:
        yield f"- {title}: {len(items)}"
        for r, why in items:
            yield f"  - {r['kind']} {r['dtype']} {shape_of(r)}: {why} ({runs(r.get('schedulers'))})"


# ---- the plot ----------------------------------------------------------------------------------

SERIES = (("cfuser", "#4e79a7"), ("compile", "#f28e2b"), ("copy", "#8c8c8c"))
LABELS = {"cfuser": "cfuser", "compile": "torch.compile", "copy": "device copy"}


def points(records):
    """{kind: {series: [(bytes, GB/s)]}} of the cases with timings."""
    out = {}
    for r in records:
        for s, _ in SERIES:
            g = gbps(r, s)
            if g and r.get("bytes"):
                out.setdefault(r["kind"], {}).setdefault(s, []).append((r["bytes"], g))
    return out


def plot_png(pts, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 4
    rows = max(1, math.ceil(len(pts) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, (kind, series) in zip(axes.flat, pts.items()):
        for s, color in SERIES:
            xy = sorted(series.get(s, []))
            if xy:
                ax.plot([p[0] for p in xy], [p[1] for p in xy], "o", ms=3, color=color, label=LABELS[s])
        ax.set_xscale("log")
        ax.set_title(kind, fontsize=9)
        ax.set_xlabel("bytes moved", fontsize=7)
        ax.set_ylabel("GB/s", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(pts):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def svg_panel(kind, series, x0, y0, w, h):
    xs = [p[0] for s in series.values() for p in s]
    top = max([p[1] for s in series.values() for p in s] + [1]) * 1.1
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    hi = hi if hi > lo else lo + 1
    px = lambda b: x0 + 40 + (math.log10(b) - lo) / (hi - lo) * (w - 50)  # noqa: E731
    py = lambda g: y0 + h - 20 - g / top * (h - 40)  # noqa: E731
    out = [f'<text x="{x0 + 40}" y="{y0 + 12}">{escape(kind)}</text>',
           f'<rect x="{x0 + 40}" y="{y0 + 20}" width="{w - 50}" height="{h - 40}" fill="none" stroke="#999"/>',
           f'<text x="{x0 + 36}" y="{py(top / 1.1) + 4:.1f}" text-anchor="end">{top / 1.1:.0f}</text>',
           f'<text x="{x0 + 36}" y="{py(0) + 4:.1f}" text-anchor="end">0</text>',
           f'<text x="{x0 + 40}" y="{y0 + h - 6}">1e{lo:.0f} B</text>',
           f'<text x="{x0 + w - 10}" y="{y0 + h - 6}" text-anchor="end">1e{hi:.0f} B</text>']
    for s, color in SERIES:
        for b, g in series.get(s, []):
            out.append(f'<circle cx="{px(b):.1f}" cy="{py(g):.1f}" r="2.5" fill="{color}">'
                       f'<title>{LABELS[s]}: {g:.0f} GB/s at {b} B</title></circle>')
    return out


def plot_svg(pts, path):
    cols, w, h = 4, 300, 200
    rows = max(1, math.ceil(len(pts) / cols))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * w}" height="{rows * h + 30}" '
           'font-family="monospace" font-size="10">', "<title>achieved GB/s against bytes moved</title>"]
    for i, (s, color) in enumerate(SERIES):
        out.append(f'<circle cx="{20 + 140 * i}" cy="12" r="4" fill="{color}"/>'
                   f'<text x="{28 + 140 * i}" y="16">{LABELS[s]}</text>')
    for i, (kind, series) in enumerate(pts.items()):
        out += svg_panel(kind, series, (i % cols) * w, 30 + (i // cols) * h, w, h)
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def plot(records, out_dir):
    """Writes the plot; returns its path (None when no case has a timing)."""
    pts = points(records)
    if not pts:
        return None
    try:
        path = os.path.join(out_dir, "sweep.png")
        plot_png(pts, path)
    except ImportError:
        path = os.path.join(out_dir, "sweep.svg")
        plot_svg(pts, path)
    return path


def report(out_dir, paths=None):
    """Prints the table and summary of out_dir's runs (or of the given files) and writes
    the plot in out_dir; 0, or 1 when there is no record."""
    records = read_records(out_dir, paths)
    if not records:
        print(f"no sweep records in {out_dir}")
        return 1
    devices = sorted({r.get("device", "?") for r in records})
    modes = sorted({r.get("compile_mode", "?") for r in records})
    print(f"sweep of {len(records)} cases on {', '.join(devices)} (torch.compile: {', '.join(modes)})\n")
    for text in table_lines(records):
        print(text)
    print()
    for text in summary_lines(records):
        print(text)
    path = plot(records, out_dir)
    print(f"\nplot: {path}" if path else "\nplot: no timings to plot")
    return 0
